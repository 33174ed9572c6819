"""`python -m nomad_eval`: compose the config, run the chosen tier, exit with its verdict."""

from __future__ import annotations

import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig

from nomad_eval.cli.entry import run_tier
from nomad_eval.cli.resolvers import register_resolvers
from nomad_eval.cli.suggest import check_argv

register_resolvers()


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
def main(cfg: DictConfig) -> int:
    return run_tier(cfg)


def _conf_dirs() -> list[Path]:
    here = Path(__file__).resolve().parent
    return [here.parent / "conf", here / "conf", Path.cwd() / "conf"]


if __name__ == "__main__":
    # A misspelt key is answered with the nearest real one before Hydra's bare "not in struct".
    if (problem := check_argv(sys.argv[1:], _conf_dirs())) is not None:
        print(f"error: {problem}", file=sys.stderr)
        sys.exit(2)
    try:
        main()
    except KeyboardInterrupt:
        print("interrupted; finished results are kept, re-run the same command to continue", file=sys.stderr)
        sys.exit(130)
