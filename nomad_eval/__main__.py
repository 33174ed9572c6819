"""`python -m nomad_eval`: compose the config, run the chosen tier, exit with its verdict."""

from __future__ import annotations

import sys

import hydra
from omegaconf import DictConfig

from nomad_eval.cli.entry import run_tier
from nomad_eval.cli.resolvers import register_resolvers

register_resolvers()


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
def main(cfg: DictConfig) -> int:
    return run_tier(cfg)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        print("interrupted; finished results are kept, re-run the same command to continue", file=sys.stderr)
        sys.exit(130)
