"""`python -m nomad_eval` / `nomad-eval`: compose the config, run the chosen tier, exit with its verdict."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, NoReturn

from nomad_eval.base.paths import CONF, PROJECT_ENV, project_dir
from nomad_eval.cli.check_only import check_only, exit_now, run_check_only
from nomad_eval.cli.suggest import check_argv, group_key_problem
from nomad_eval.cli.where import make_project_importable, outside_project, run_folder_elsewhere


def _hydra_main() -> None:
    """Hydra, its resolvers and the tiers load here, after `--help` had its chance to answer without them.

    Exit codes (docs/gate.md#exit-codes): Hydra exits 1 for a command line it cannot compose and for an error it
    caught, where 1 would read as "worse"; both are the setup's (2). Only a tier's verdict exits 1."""
    import functools

    import hydra

    from nomad_eval.cli.entry import run_tier
    from nomad_eval.cli.resolvers import register_resolvers
    from nomad_eval.harness.rundir import multirun

    register_resolvers()
    started: list[bool] = []  # whether Hydra composed the config and handed it to a job

    @functools.wraps(run_tier)  # Hydra names the job after the wrapped function's module, as before
    def task(cfg: Any) -> int:
        started.append(True)
        try:
            return run_tier(cfg)
        except Exception:  # noqa: BLE001 -- a crash measured nothing: said in full, then exit 2
            if multirun():
                raise  # a sweep records its jobs' own failures (cli/entry.py) and gates at its end
            _crashed()

    try:
        # An absolute config path: the shipped configs are found the same way from a checkout, a wheel or a script.
        hydra.main(version_base="1.3", config_path=str(CONF), config_name="config")(task)()
    except SystemExit as exc:
        if exc.code == 1 and not started:  # Hydra refused the command line, with its message: the setup's
            sys.exit(2)
        raise


def _crashed() -> NoReturn:
    """An error nothing foresaw: the traceback in full, then exit 2, since the run gave no verdict."""
    import traceback

    traceback.print_exc()
    print("error: the run stopped on the error above before any verdict (exit 2); if the input and the setup are "
          "right, it is a bug in nomad-eval: please report it with this output", file=sys.stderr)
    sys.exit(2)


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
        try:
            code = run_check_only(sys.argv[1:]) if check_only(sys.argv[1:]) else None
        except Exception:  # noqa: BLE001 -- as in a run: a crash is no verdict
            _crashed()
        if code is not None:
            exit_now(code)
        sys.argv += run_folder_elsewhere(sys.argv[1:], Path.cwd())  # a read-only project can still check
        _hydra_main()
    except KeyboardInterrupt:
        print("interrupted; finished results are kept, re-run the same command to continue", file=sys.stderr)
        # Every with-block has closed on the way here (store, caches, run folder): what is left is the
        # interpreter's teardown of the model stack's native threads, seconds the user pressed Ctrl-C not to wait.
        exit_now(130)


if __name__ == "__main__":
    cli()
