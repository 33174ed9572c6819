"""Damaged caches and stores are moved aside and rebuilt; a store that cannot be opened for another reason is
reported and left exactly as it was."""

from __future__ import annotations

import gc
import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from omegaconf import DictConfig

from nomad_eval.backends.cache import EmbeddingCache
from nomad_eval.backends.chat import ChatResult
from nomad_eval.backends.response_cache import ResponseCache
from nomad_eval.base.errors import NomadError
from nomad_eval.base.shipped import build
from nomad_eval.base.sqlite_store import open_rebuildable
from nomad_eval.cli.entry import run_tier
from tests.conftest import MINI

SCHEMA = "CREATE TABLE IF NOT EXISTS t (k TEXT PRIMARY KEY, v BLOB)"


def _filled(path: Path, rows: int = 400) -> None:
    db = sqlite3.connect(path)
    db.execute(SCHEMA)
    db.executemany("INSERT INTO t VALUES (?, ?)", [(str(i), os.urandom(1500)) for i in range(rows)])
    db.commit()
    db.close()


def _aside(path: Path) -> list[Path]:
    """The moved-aside copies of `path` (not of its -wal and -shm, which move with it)."""
    return sorted(p for p in path.parent.iterdir() if p.name.startswith(f"{path.name}.corrupt-")
                  and not p.name.endswith(("-wal", "-shm")))


@pytest.mark.slow
def test_truncated_embedding_cache_is_moved_aside_and_the_run_repeats_its_metrics(
        make_cfg: Callable[..., DictConfig], data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = make_cfg(*MINI)
    assert run_tier(first) == 0
    before = json.loads((Path(first.paths.run_dir) / "report.json").read_text())["metrics"]
    cache = data_dir / "embeddings.sqlite"
    gc.collect()  # closes the first run's connection, as the end of its process would
    assert not Path(f"{cache}-wal").exists()  # so the whole cache is in the file being truncated
    size = cache.stat().st_size
    with cache.open("r+b") as fh:
        fh.truncate(size // 2)
    capsys.readouterr()
    again = make_cfg(*MINI)
    assert run_tier(again) == 0  # exit 0: a damaged cache costs re-embedding, never the run
    err = capsys.readouterr().err
    warning = [line for line in err.splitlines() if "embedding cache" in line]
    assert len(warning) == 1 and "is damaged" in warning[0] and "moved it to" in warning[0]
    assert json.loads((Path(again.paths.run_dir) / "report.json").read_text())["metrics"] == before
    [aside] = _aside(cache)
    assert aside.stat().st_size == size // 2  # kept as it was, not deleted
    with sqlite3.connect(cache) as db:
        assert db.execute("PRAGMA quick_check").fetchone() == ("ok",) and db.execute(
            "SELECT count(*) FROM vectors").fetchone()[0] > 0  # the new one was refilled


def test_damage_that_shows_only_on_reading_is_found_at_open(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    _filled(path)
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*) FROM t WHERE k = '1'").fetchone() == (1,)  # a healthy file
    data = bytearray(path.read_bytes())
    page = 4096
    data[3 * page: 6 * page] = os.urandom(3 * page)  # scribble over pages in the middle
    path.write_bytes(bytes(data))
    db = sqlite3.connect(path)
    assert db.execute("SELECT count(*) FROM sqlite_master").fetchone() == (2,)  # opening does not notice ...
    with pytest.raises(sqlite3.DatabaseError):
        db.execute("SELECT count(*), sum(length(v)) FROM t").fetchone()  # ... reading does
    db.close()
    fresh = open_rebuildable(path, SCHEMA, "test cache")
    assert fresh.execute("SELECT count(*) FROM t").fetchone() == (0,)
    fresh.close()
    assert len(_aside(path)) == 1 and _aside(path)[0].read_bytes() == bytes(data)


def test_a_file_that_is_not_a_database_is_moved_aside_with_its_log(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "responses.sqlite"
    path.write_bytes(b"not sqlite at all " * 100)
    (tmp_path / "responses.sqlite-wal").write_bytes(b"stale log")
    cache = ResponseCache(path)
    cache.put("k", ChatResult("answer", 3, 1))
    assert cache.get("k") == ChatResult("answer", 3, 1)
    cache.close()
    [aside] = _aside(path)
    assert aside.read_bytes() == b"not sqlite at all " * 100
    assert Path(f"{aside}-wal").read_bytes() == b"stale log"  # never replayed into the new file
    assert capsys.readouterr().err.count("warning:") == 1


def test_a_cache_that_cannot_be_opened_for_another_reason_is_an_error_and_left_alone(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the data dir should be")
    with pytest.raises(NomadError, match="is not a directory"):
        EmbeddingCache(blocker / "embeddings.sqlite")
    assert blocker.read_text() == "a file where the data dir should be"
    folder = tmp_path / "cache"
    folder.mkdir()
    path = folder / "embeddings.sqlite"
    path.mkdir()  # SQLite cannot open it (CANTOPEN): nothing about a file's contents, so nothing to repair
    with pytest.raises(NomadError, match="cannot open the embedding cache at .*: unable to open database file"):
        EmbeddingCache(path)
    assert path.is_dir() and _aside(path) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads and writes regardless of permission bits")
def test_a_cache_without_permission_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "embeddings.sqlite"
    EmbeddingCache(path).put_many({"k": np.zeros(3, dtype=np.float32)})
    path.chmod(0o400)
    try:
        with pytest.raises(NomadError, match="permission denied"):
            EmbeddingCache(path)
    finally:
        path.chmod(0o600)
    assert _aside(path) == []


def _deny_writes_in(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A read-only folder as the OS reports it to this process; the tests run as root, which chmod cannot stop."""
    real = os.access

    def access(path: str | os.PathLike[str], mode: int, **kw: object) -> bool:
        return not (Path(path) == folder and mode & os.W_OK) and real(path, mode, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "access", access)


def test_a_folder_without_write_permission_is_an_error_not_damage(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "embeddings.sqlite"
    path.write_bytes(b"looks damaged, but the folder is read-only: nothing may be moved")
    shard = _shard(tmp_path)
    (shard / "edge_config.json").write_text("{broken")  # what a damaged shard looks like to the engine
    _deny_writes_in(tmp_path, monkeypatch)
    with pytest.raises(NomadError, match=f"permission denied: cannot write in {tmp_path}"):
        EmbeddingCache(path)
    _deny_writes_in(shard.parent, monkeypatch)
    with pytest.raises(NomadError, match="permission denied") as exc:
        build("store", "edge", path=str(tmp_path / "edge"), dim=4)
    assert "left as it is" in str(exc.value)
    assert _aside(path) == [] and not list(shard.parent.glob("dim-4.corrupt-*"))
    assert (shard / "edge_config.json").read_text() == "{broken"


def _shard(tmp_path: Path) -> Path:
    store = build("store", "edge", path=str(tmp_path / "edge"), dim=4)
    store.close()
    return tmp_path / "edge" / "dim-4"


def test_a_store_from_a_newer_engine_is_reported_not_rebuilt(tmp_path: Path) -> None:
    shard = _shard(tmp_path)
    version = next(shard.glob("segments/*/version.info"))
    version.write_text("99.0.0")
    with pytest.raises(NomadError, match="newer than application version") as exc:
        build("store", "edge", path=str(tmp_path / "edge"), dim=4)
    assert "left as it is" in str(exc.value)
    assert version.read_text() == "99.0.0" and not list(shard.parent.glob("dim-4.corrupt-*"))


def test_a_store_whose_folder_cannot_be_made_is_reported_not_moved(tmp_path: Path) -> None:
    (tmp_path / "edge").write_text("a file")
    with pytest.raises(NomadError, match="cannot open the embedded store"):
        build("store", "edge", path=str(tmp_path / "edge"), dim=4)
    assert (tmp_path / "edge").read_text() == "a file"
