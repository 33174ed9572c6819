"""Runs one composed config: picks the tier, turns errors into messages and exit codes."""

from __future__ import annotations

import json
import sys
import traceback

from hydra.errors import InstantiationException
from hydra.utils import get_method
from omegaconf import DictConfig, OmegaConf
from rich.markup import escape

from nomad_eval.base.console import err_console
from nomad_eval.base.errors import NomadError
from nomad_eval.cli.config_check import check_config
from nomad_eval.harness.rundir import overrides, run_dir, sweep_id
from nomad_eval.report.io import write_atomic
from nomad_eval.report.schema import Report


def _multirun() -> bool:
    from hydra.core.hydra_config import HydraConfig

    return HydraConfig.initialized() and str(HydraConfig.get().mode) == "RunMode.MULTIRUN"


def _record_failure(cfg: DictConfig, message: str) -> None:
    """A failed job still leaves a report, so a sweep's summary shows it instead of hiding it."""
    if cfg.tier.name in ("compare", "promote", "corpus"):
        return
    try:
        out = run_dir(cfg)
        config = OmegaConf.to_container(cfg, resolve=False)
    except Exception:  # the failure may be in the config itself; then there is nothing safe to write
        return
    report = Report(tier=str(cfg.tier.name), status="failed", error=message, overrides=overrides(),
                    sweep_id=sweep_id(), config=config)  # type: ignore[arg-type]
    write_atomic(out / "report.json", report.model_dump_json(indent=2))


def _resumable(cfg: DictConfig) -> bool:
    """With resume=true, a job already finished for this exact config keeps its results and is not re-run."""
    if not cfg.get("resume") or cfg.tier.name in ("compare", "promote", "corpus", "dataset", "calibrate"):
        return False
    try:
        out = run_dir(cfg)
        old = json.loads((out / "report.json").read_text())
    except (OSError, ValueError):
        return False
    if old.get("status") != "ok" or old.get("config") != OmegaConf.to_container(cfg, resolve=True):
        return False
    old["sweep_id"] = sweep_id()  # it now belongs to this sweep, so the merge takes it
    write_atomic(out / "report.json", json.dumps(old, indent=2))
    err_console.print(f"resume: kept the finished results in {out}")
    return True


def run_tier(cfg: DictConfig) -> int:
    multirun = _multirun()
    if _resumable(cfg):
        return 0
    try:
        try:
            check_config(cfg)
            code = int(get_method(cfg.tier._target_)(cfg))
        except InstantiationException as exc:
            # Hydra wraps a backend constructor's own clear error (a store or server it cannot reach): unwrap it.
            if isinstance(exc.__cause__, NomadError):
                raise exc.__cause__ from None
            raise
    except NomadError as exc:
        err_console.print(f"[red]error:[/] {escape(str(exc))}", soft_wrap=True)
        _record_failure(cfg, str(exc))
        code = exc.exit_code
    except Exception as exc:
        if not multirun:
            raise
        # One bad config must not hide the other jobs of a sweep: record it and go on.
        err_console.print(traceback.format_exc())
        _record_failure(cfg, f"{type(exc).__name__}: {exc}")
        code = 1
    if code and not multirun:
        sys.exit(code)
    return code
