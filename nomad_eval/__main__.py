"""`python -m nomad_eval` / `nomad-eval`: compose the config, run the chosen tier, exit with its verdict."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from nomad_eval.base.paths import CONF, PROJECT_ENV, project_dir
from nomad_eval.cli.check_only import check_only, exit_now, run_check_only
from nomad_eval.cli.suggest import check_argv, group_key_problem
from nomad_eval.cli.where import make_project_importable, outside_project, run_folder_elsewhere


def _hydra_main() -> None:
    """Hydra, its resolvers and the tiers load here, after `--help` had its chance to answer without them."""
    import hydra

    from nomad_eval.cli.entry import run_tier
    from nomad_eval.cli.resolvers import register_resolvers

    register_resolvers()
    # An absolute config path: the shipped configs are found the same way from a checkout, a wheel or a script.
    hydra.main(version_base="1.3", config_path=str(CONF), config_name="config")(run_tier)()


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
    make_project_importable(project_dir())  # the user's own pipeline code, beside conf/
    if sys.argv[1:] in (["--help"], ["-h"]):
        from nomad_eval.cli.help import help_text

        if (page := help_text()) is not None:
            print(page)
            return
    # A misspelt key is answered with the nearest real one before Hydra's bare "not in struct".
    problem = check_argv(sys.argv[1:], _conf_dirs()) or group_key_problem(sys.argv[1:], _conf_dirs())
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        sys.exit(2)
    # Before Hydra makes a run folder and a tier its store: a command outside a project writes nothing.
    if (problem := outside_project(sys.argv[1:], project_dir())) is not None:
        print(f"error: {problem}", file=sys.stderr)
        sys.exit(2)
    try:
        if check_only(sys.argv[1:]) and (code := run_check_only(sys.argv[1:])) is not None:
            exit_now(code)
        sys.argv += run_folder_elsewhere(sys.argv[1:], Path.cwd())  # a read-only project can still check
        _hydra_main()
    except KeyboardInterrupt:
        print("interrupted; finished results are kept, re-run the same command to continue", file=sys.stderr)
        sys.exit(130)


if __name__ == "__main__":
    cli()
