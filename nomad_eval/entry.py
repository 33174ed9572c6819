"""Runs one composed config: picks the tier, turns errors into messages and exit codes."""

from __future__ import annotations

import sys

from hydra.utils import get_method
from omegaconf import DictConfig

from rich.markup import escape

from nomad_eval.console import err_console
from nomad_eval.errors import NomadError


def _multirun() -> bool:
    try:
        from hydra.core.hydra_config import HydraConfig
        from hydra.types import RunMode

        return HydraConfig.get().mode == RunMode.MULTIRUN
    except ValueError:  # no Hydra context: called from a test or a script
        return False


def run_tier(cfg: DictConfig) -> int:
    try:
        code = int(get_method(cfg.tier._target_)(cfg))
    except NomadError as exc:
        err_console.print(f"[red]error:[/] {escape(str(exc))}", soft_wrap=True)
        code = exc.exit_code
    # A multirun job must return so the sweep goes on and its end callback still runs.
    if code and not _multirun():
        sys.exit(code)
    return code
