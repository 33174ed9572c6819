"""`python -m nomad_eval` / `nomad-eval`: compose the config, run the chosen tier, exit with its verdict."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig

from nomad_eval.base.paths import CONF, PROJECT_ENV, project_dir
from nomad_eval.cli.entry import run_tier
from nomad_eval.cli.resolvers import register_resolvers
from nomad_eval.cli.suggest import check_argv

register_resolvers()


# An absolute config path: the shipped configs are found the same way from a checkout, a wheel or a console script.
@hydra.main(version_base="1.3", config_path=str(CONF), config_name="config")
def main(cfg: DictConfig) -> int:
    return run_tier(cfg)


def _conf_dirs() -> list[Path]:
    here = Path(__file__).resolve().parent
    return [here.parent / "conf", here / "conf", Path.cwd() / "conf"]


def cli() -> None:
    """The console script `nomad-eval`, and `python -m nomad_eval`."""
    if len(sys.argv) > 1 and sys.argv[1] == "init":  # ours, not a Hydra override: handled before Hydra parses argv
        from nomad_eval.cli.init import init_main

        sys.exit(init_main(sys.argv[2:]))
    if os.environ.get(PROJECT_ENV):
        # Every relative path (outputs/, multirun/, .nomad_eval/, command-line paths) is then the project's.
        os.chdir(project_dir())
    # A misspelt key is answered with the nearest real one before Hydra's bare "not in struct".
    if (problem := check_argv(sys.argv[1:], _conf_dirs())) is not None:
        print(f"error: {problem}", file=sys.stderr)
        sys.exit(2)
    try:
        main()
    except KeyboardInterrupt:
        print("interrupted; finished results are kept, re-run the same command to continue", file=sys.stderr)
        sys.exit(130)


if __name__ == "__main__":
    cli()
