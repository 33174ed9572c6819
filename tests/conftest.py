"""Shared fixtures: configs composed the way the entrypoint composes them, and private data dirs."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from nomad_eval.base.paths import REPO
from nomad_eval.cli.resolvers import register_resolvers

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
register_resolvers()

FIXTURES = Path(__file__).parent / "fixtures"
MINI = [f"data.corpus_dir={FIXTURES / 'corpus'}", f"data.goldens_dir={FIXTURES / 'goldens'}", "suite=mini"]


def pytest_configure(config: pytest.Config) -> None:
    """On every core (./dev test), each worker runs on cores of its own. The models size their threads by the cores
    a process may use (base/cpus.py); two workers that each take every core make llama.cpp's and torch's waiting
    threads spin against each other's work."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is None or not hasattr(os, "sched_setaffinity"):
        return
    cores = sorted(os.sched_getaffinity(0))
    i, n = int(workerinput["workerid"].removeprefix("gw")), int(workerinput["workercount"])
    if n > 1 and len(cores) > 1:
        with contextlib.suppress(OSError):  # a sandbox that refuses it: the worker keeps every core
            os.sched_setaffinity(0, cores[i % len(cores)::n])


@pytest.fixture(scope="session")
def shared_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One embedding cache for the session, so MiniLM embeds each distinct text once."""
    return tmp_path_factory.mktemp("shared-data")


def _cache_state(cache: Path) -> tuple[int, int, int]:
    """Size and time of the cache file and the size of its write-ahead log: what changes when rows are written."""
    wal = cache.with_name(cache.name + "-wal")
    main = cache.stat() if cache.exists() else None
    return (main.st_size if main else -1, main.st_mtime_ns if main else -1, wal.stat().st_size if wal.exists() else 0)


@pytest.fixture
def data_dir(tmp_path: Path, shared_data_dir: Path):  # type: ignore[no-untyped-def]
    """A private store directory that starts with the session's warm embedding cache and, when the test embedded
    something new, hands its cache back to the session. Only tests that ask for a data dir pay for either."""
    d = tmp_path / "data"
    d.mkdir()
    cache = d / "embeddings.sqlite"
    if (shared_data_dir / "embeddings.sqlite").exists():
        shutil.copy(shared_data_dir / "embeddings.sqlite", cache)
    before = _cache_state(cache)
    yield d
    if cache.exists() and _cache_state(cache) != before:
        # A run's cache connection may still be open (closed at garbage collection), its rows in the -wal file:
        # fold them into the main file first, or the copy shares an empty cache.
        import gc
        import sqlite3

        gc.collect()
        db = sqlite3.connect(cache)
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.close()
        shutil.copy(cache, shared_data_dir / "embeddings.sqlite")


def compose_cfg(*overrides: str) -> DictConfig:
    """The shipped config with these overrides, composed as the entrypoint composes it."""
    with initialize_config_dir(config_dir=str(REPO / "nomad_eval" / "conf"), version_base="1.3"):
        return compose("config", overrides=list(overrides))


@pytest.fixture
def make_cfg(tmp_path: Path, data_dir: Path) -> Callable[..., DictConfig]:
    def _make(*overrides: str) -> DictConfig:
        return compose_cfg(f"paths.data_dir={data_dir}", f"paths.run_dir={tmp_path / 'run'}", "quiet=true",
                           *overrides)

    return _make


def run_in_process(*overrides: str) -> int:
    """A job run in this process, where the loaded models stay loaded: its exit code, the one the CLI exits with.
    For runs whose folder or console is what a test reads; the command line itself is tested through run_cli."""
    from nomad_eval.cli.entry import run_tier

    try:
        return run_tier(compose_cfg(*overrides))
    except SystemExit as exc:  # a failing run exits, as it does on the command line
        return exc.code if isinstance(exc.code, int) else 1


def run_cli(*args: str, cwd: Path = REPO, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "nomad_eval", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """How many inputs each fuzz test tried (tests/fuzz_support.py), shown whether or not output is captured."""
    from tests.fuzz_support import TRIED

    if TRIED:
        terminalreporter.write_sep("-", "fuzz inputs tried")
        for name, count in sorted(TRIED.items()):
            terminalreporter.write_line(f"{name}: {count}")


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Under pytest-xdist (./dev test runs on every core) a worker hands its fuzz counts to the controller."""
    from tests.fuzz_support import TRIED

    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["fuzz_tried"] = dict(TRIED)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """The controller adds up the workers' fuzz counts for the summary above."""
    from tests.fuzz_support import TRIED

    for name, count in getattr(node, "workeroutput", {}).get("fuzz_tried", {}).items():
        TRIED[name] = TRIED.get(name, 0) + count
