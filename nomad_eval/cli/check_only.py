"""A corpus check or lint reads the corpus and the goldens and writes nothing, so it runs without Hydra's job
machinery: no run folder and .hydra copies made (and then removed), no job log, no sweep callbacks, and one
composition of the config instead of `hydra.main`'s two (its first only asks whether the config wants a sweep).
The config is composed with Hydra's Compose API and handed to `entry.run_tier`, as a Hydra job would be: the same
config checks, the same tier, the same messages and exit codes."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from typing import NoReturn

from nomad_eval.base.paths import CONF

ACTIONS = ("check", "lint")  # the corpus tier's actions that write nothing
# Hydra settings that only say where a run folder would go: a check makes none, so they change nothing.
_FOLDER_ONLY = ("hydra.run.dir", "hydra.output_subdir")


def check_only(argv: list[str]) -> bool:
    """Whether the command line may be a read-only corpus action: overrides only (no flag such as -m or --cfg),
    one of them `action=check` or `action=lint`, and no Hydra setting beyond where the run folder would go."""
    if not all("=" in a and not a.startswith("-") for a in argv):
        return False
    keys = [a.split("=", 1)[0].lstrip("+~") for a in argv]
    return (any(a in {f"action={x}" for x in ACTIONS} for a in argv)
            and all(k in _FOLDER_ONLY or not k.startswith("hydra") for k in keys))


def run_check_only(argv: list[str]) -> int | None:
    """The command's exit code, or None when its config is not a read-only corpus action after all, or does not
    compose here: `hydra.main` then runs it, and reports a composition error its own way."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf, open_dict

    from nomad_eval.cli.callbacks import RedactSecrets
    from nomad_eval.cli.entry import run_tier
    from nomad_eval.cli.resolvers import register_resolvers

    register_resolvers()
    try:
        with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
            cfg = compose("config", overrides=argv, return_hydra_config=True)
    except Exception:  # noqa: BLE001 -- hydra.main composes it again and names the problem
        return None
    # Several suites are run each in a folder of the run's own (cli/suites.py): hydra.main's to make.
    if cfg.tier.get("name") != "corpus" or cfg.get("action") not in ACTIONS or OmegaConf.is_list(cfg.get("suite")):
        return None
    RedactSecrets().on_run_start(cfg)  # a credential typed on the command line is warned about, as in any run
    with open_dict(cfg):
        del cfg["hydra"]  # the job's own config, as Hydra hands it to a task
    try:
        return run_tier(cfg)
    except SystemExit as exc:  # run_tier's exit code for a check that failed
        if isinstance(exc.code, int):
            return exc.code
        raise


def exit_now(code: int) -> NoReturn:
    """End a check's process without the interpreter's teardown. A check or lint has written no file, so the log
    handlers and the console streams are all there is to flush; freeing one by one every object that Hydra, its
    grammar, the config nodes and pydantic's validators made is a wait of its own at the end of every check."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more can be said on it
            stream.flush()
    os._exit(code)
