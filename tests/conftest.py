"""Shared fixtures: configs composed the way the entrypoint composes them, and private data dirs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

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


@pytest.fixture(scope="session")
def shared_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One embedding cache for the session, so MiniLM embeds each distinct text once."""
    return tmp_path_factory.mktemp("shared-data")


@pytest.fixture
def data_dir(tmp_path: Path, shared_data_dir: Path) -> Path:
    """A private store directory that starts with the session's warm embedding cache."""
    d = tmp_path / "data"
    d.mkdir()
    cache = shared_data_dir / "embeddings.sqlite"
    if cache.exists():
        shutil.copy(cache, d / "embeddings.sqlite")
    return d


@pytest.fixture
def make_cfg(tmp_path: Path, data_dir: Path) -> Callable[..., DictConfig]:
    def _make(*overrides: str) -> DictConfig:
        with initialize_config_dir(config_dir=str(REPO / "nomad_eval" / "conf"), version_base="1.3"):
            return compose(
                "config",
                overrides=[f"paths.data_dir={data_dir}", f"paths.run_dir={tmp_path / 'run'}", "quiet=true",
                           *overrides],
            )

    return _make


@pytest.fixture(autouse=True)
def _share_cache_back(data_dir: Path, shared_data_dir: Path):  # type: ignore[no-untyped-def]
    yield
    cache = data_dir / "embeddings.sqlite"
    if cache.exists():
        # A run's cache connection may still be open (closed at garbage collection), its rows in the -wal file:
        # fold them into the main file first, or the copy shares an empty cache.
        import gc
        import sqlite3

        gc.collect()
        db = sqlite3.connect(cache)
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.close()
        shutil.copy(cache, shared_data_dir / "embeddings.sqlite")


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
