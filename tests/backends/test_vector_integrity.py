"""Damage inside a cached vector (issue 32, medium case 4): a sound SQLite page holding a wrong value is found by
the value's checksum, named, recomputed, and the run's numbers are a clean run's."""

from __future__ import annotations

import gc
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from omegaconf import DictConfig

from nomad_eval.backends.cache import EmbeddingCache
from nomad_eval.cli.entry import run_tier
from tests.conftest import MINI


def _vector_table(db: sqlite3.Connection) -> str:
    """The cache's table of vectors, whatever its name (the one with a `vec` column)."""
    for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
        if "vec" in [r[1] for r in db.execute(f"PRAGMA table_info({name})")]:
            return str(name)
    raise AssertionError("no table of vectors in the cache")


def _flip_signs(blob: bytes, seed: int) -> bytes:
    bits = np.frombuffer(blob, dtype=np.uint32).copy()
    at = np.random.default_rng(seed).choice(len(bits), 40, replace=False)
    bits[at] ^= np.uint32(1 << 31)  # the sign bit of 40 floats: same magnitude, so no length or range check sees it
    return bits.tobytes()


DAMAGE: dict[str, Callable[[bytes, int], Any]] = {
    "sign bits": _flip_signs,
    "zeroed": lambda blob, _: bytes(len(blob)),
    "wrong length": lambda blob, _: blob[: len(blob) // 2],
    "unreadable": lambda _blob, _: "not a vector",
}


def damage_half(cache: Path, how: Callable[[bytes, int], Any]) -> int:
    """Rewrites every other row's vector in place, the checksum (if any) left as it was; returns the rows hit."""
    with sqlite3.connect(cache) as db:
        table = _vector_table(db)
        rows = db.execute(f"SELECT rowid, vec FROM {table} ORDER BY rowid").fetchall()[::2]
        db.executemany(f"UPDATE {table} SET vec = ? WHERE rowid = ?", [(how(v, r), r) for r, v in rows])
    db.close()
    return len(rows)


def _outcome(cfg: DictConfig) -> tuple[dict[str, Any], list[list[str]], list[float]]:
    """The run's metrics, each case's ranked chunks, and all their scores in order."""
    run = Path(cfg.paths.run_dir)
    cases = [json.loads(line) for line in (run / "cases.jsonl").read_text().splitlines()]
    ranked = [[r["chunk_id"] for r in c["retrieved"]] for c in cases]
    scores = [r[k] for c in cases for r in c["retrieved"] for k in ("score", "final_score")]
    return json.loads((run / "report.json").read_text())["metrics"], ranked, scores


def _same(run: tuple[dict[str, Any], list[list[str]], list[float]],
          clean: tuple[dict[str, Any], list[list[str]], list[float]]) -> None:
    assert run[0] == clean[0] and run[1] == clean[1]  # every metric, every ranked list
    # A text embedded again in a batch of other texts is padded to another length, which moves its vector in the
    # last float bits: scores agree to 1e-5 (a flipped sign bit moves them by far more).
    assert run[2] == pytest.approx(clean[2], abs=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(DAMAGE))
def test_damaged_cached_vectors_are_named_recomputed_and_the_numbers_are_a_clean_runs(
        kind: str, make_cfg: Callable[..., DictConfig], data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    clean = make_cfg(*MINI)
    assert run_tier(clean) == 0
    before = _outcome(clean)
    gc.collect()  # closes the first run's cache connection, as the end of its process would
    hit = damage_half(data_dir / "embeddings.sqlite", DAMAGE[kind])
    assert hit >= 4  # the mini suite's questions and chunks: half of them damaged
    capsys.readouterr()
    again = make_cfg(*MINI)
    assert run_tier(again) == 0
    err = capsys.readouterr().err
    _same(_outcome(again), before)
    assert "embedding cache" in err and "damaged vector(s)" in err and "recomputing them" in err


def test_a_damaged_row_is_left_out_and_named_and_a_sound_one_is_returned(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    rng = np.random.default_rng(3)
    vecs = {f"k{i}": rng.standard_normal(64).astype(np.float32) for i in range(6)}
    cache.put_many(vecs)
    cache.close()
    for kind, how in DAMAGE.items():
        damage_half(tmp_path / "c.sqlite", how)
        cache = EmbeddingCache(tmp_path / "c.sqlite")
        got = cache.get_many(list(vecs), dim=64)
        assert sorted(got) == ["k1", "k3", "k5"], kind  # rows 1, 3, 5 (rowids 2, 4, 6) untouched
        assert all(np.array_equal(got[k], vecs[k]) for k in got)
        assert "3 damaged vector(s)" in capsys.readouterr().err, kind
        cache.put_many(vecs)  # recomputed values written again pass their check
        assert sorted(cache.get_many(list(vecs), dim=64)) == sorted(vecs)
        assert capsys.readouterr().err == ""
        cache.close()


def test_a_vector_of_another_length_than_the_embedders_is_refilled(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    cache.put_many({"k": np.ones(4, dtype=np.float32)})
    assert cache.get_many(["k"], dim=64) == {}  # sound bytes, but not this embedder's length
    assert list(cache.get_many(["k"], dim=4)) == ["k"]
    cache.close()


# Medium case 5: a store vector file cut to nothing opens fine and fails on every search. --------------------------

def _vector_files(data_dir: Path) -> list[Path]:
    return sorted((data_dir / "qdrant-edge" / "dim-384").glob("segments/*/vector_storage/vectors/chunk_*.mmap"))


@pytest.mark.slow
@pytest.mark.parametrize("status_first", [True, False])
def test_a_truncated_store_vector_file_is_named_by_status_and_the_next_run_rebuilds_it(
        status_first: bool, make_cfg: Callable[..., DictConfig], data_dir: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    clean = make_cfg(*MINI)
    assert run_tier(clean) == 0
    before = _outcome(clean)
    [vectors] = _vector_files(data_dir)
    with vectors.open("r+b") as fh:
        fh.truncate(0)  # what `truncate -s 0` does
    capsys.readouterr()
    if status_first:
        assert run_tier(make_cfg(*MINI, "tier=corpus", "action=status")) == 0
        out = capsys.readouterr()
        assert "is damaged" in out.out  # the status table says so, not only a warning on stderr
    again = make_cfg(*MINI)
    assert run_tier(again) == 0
    err = capsys.readouterr().err
    assert status_first or ("embedded store" in err and "is damaged" in err and "moved to" in err)
    _same(_outcome(again), before)
    [aside] = list(data_dir.glob("qdrant-edge/dim-384.corrupt-*"))
    assert [p.stat().st_size for p in aside.glob("segments/*/vector_storage/vectors/chunk_*.mmap")] == [0]  # kept


def test_a_zero_or_non_finite_vector_is_refused_at_write(tmp_path: Path) -> None:
    """Every stored vector is a unit vector, so the check at open can tell a zeroed one from a written one."""
    from nomad_eval.backends.base import StoredPoint
    from nomad_eval.backends.edge import EdgeStore
    from nomad_eval.base.errors import NomadError

    store = EdgeStore(str(tmp_path), 4, "collection", "T")
    payload = {"collection": "T", "fingerprint": "f", "chunk_id": "doc#3"}
    for bad in (np.zeros(4, dtype=np.float32), np.array([1, np.nan, 0, 0], dtype=np.float32)):
        with pytest.raises(NomadError, match="zero or non-finite vector for doc#3"):
            store.upsert([StoredPoint("00000000-0000-0000-0000-000000000001", bad, payload)])
    assert store.count() == 0 and store.health() is None
    store.close()
