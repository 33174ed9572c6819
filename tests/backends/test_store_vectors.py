"""Stored vectors are what the embedding cache says (issue 44, medium cases 3 and 4): damage in the store's own
vector file that keeps every vector of unit length (negated, swapped, rotated, sign bits), and one exponent bit
flipped, are each named by `action=status` before the run, then named, moved aside and rebuilt by the run, whose
metrics equal a clean run's."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from omegaconf import DictConfig

from nomad_eval.backends.base import StoredPoint
from nomad_eval.backends.edge import EdgeStore
from nomad_eval.base.errors import NomadError
from nomad_eval.cli.entry import run_tier
from nomad_eval.metrics.separation import Histogram
from tests.conftest import MINI

pytestmark = pytest.mark.slow  # real retrieval runs on the fixture corpus

Vectors = list[np.ndarray]


def _every_third_negated(v: Vectors) -> Vectors:
    return [-x if i % 3 == 0 else x for i, x in enumerate(v)]


def _two_swapped(v: Vectors) -> Vectors:
    return [v[1], v[0], *v[2:]]


def _rotated(v: Vectors) -> Vectors:
    return v[1:] + v[:1]


def _sign_bits(v: Vectors) -> Vectors:
    out = []
    for x in v:
        bits = x.view(np.uint32).copy()
        bits[::7] ^= np.uint32(1 << 31)
        out.append(bits.view(np.float32))
    return out


def _exponent_bit(v: Vectors) -> Vectors:
    bits = v[-1].view(np.uint32).copy()
    bits[5] ^= np.uint32(1 << 30)  # the top exponent bit of one float of one vector: about 1e37 times larger
    return [*v[:-1], bits.view(np.float32)]


DAMAGE: dict[str, Callable[[Vectors], Vectors]] = {
    "every third negated": _every_third_negated, "two swapped": _two_swapped, "all rotated one slot": _rotated,
    "sign bits flipped": _sign_bits, "one exponent bit": _exponent_bit,
}


def _damage_in_place(data_dir: Path, how: Callable[[Vectors], Vectors]) -> None:
    """Rewrites the stored vectors' bytes inside the shard's files (the engine is not asked: it would normalise)."""
    store = EdgeStore(str(data_dir / "qdrant-edge"), 384, "collection", "__nomad_eval__")
    points = store.scroll(with_vector=True)
    store.close()
    old = [np.asarray(p[2], dtype=np.float32) for p in points]
    new = how(old)
    files = [f for f in (data_dir / "qdrant-edge").rglob("*.mmap") if f.is_file()]
    for f in files:
        before = f.read_bytes()
        raw = bytearray(before)
        for a, b in zip(old, new, strict=True):  # each vector found in the file as it was, then overwritten
            at = before.find(a.tobytes())
            if at >= 0:
                raw[at:at + a.nbytes] = b.tobytes()
        f.write_bytes(bytes(raw))
    store = EdgeStore(str(data_dir / "qdrant-edge"), 384, "collection", "__nomad_eval__", rebuild_corrupt=False) \
        if how is not _exponent_bit else None
    if store is not None:  # the damage is really there, and the engine's own check at open does not see it
        after = {p[0]: np.asarray(p[2], dtype=np.float32) for p in store.scroll(with_vector=True)}
        store.close()
        assert any(not np.array_equal(after[p[0]], b) for p, b in zip(points, old, strict=True))


def _metrics(run: Path) -> dict[str, float]:
    return json.loads((run / "report.json").read_text())["metrics"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_damaged_store_vectors_are_named_rebuilt_and_the_run_equals_a_clean_one(
        damage: str, data_dir: Path, tmp_path: Path, make_cfg: Callable[..., DictConfig],
        capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    assert run_tier(make_cfg(*MINI)) == 0
    clean = _metrics(run)
    _damage_in_place(data_dir, DAMAGE[damage])
    capsys.readouterr()
    assert run_tier(make_cfg(*MINI, "tier=corpus", "action=status")) == 0
    status = " ".join(capsys.readouterr().out.split())
    if damage == "one exponent bit":  # a vector no longer of unit length: the store's own check at open names it
        assert "store health │ is damaged (point" in status and "not a unit vector" in status, status
    else:
        assert "damaged: the stored vector of chunk" in status and "differs from the embedding cache" in status, \
            status
        assert run_tier(make_cfg(*MINI)) == 0
        err = capsys.readouterr().err
        assert "holds vectors that are not the ones written" in err and "moved to" in err, err
    assert list(data_dir.glob("qdrant-edge/dim-384.corrupt-*"))
    assert run_tier(make_cfg(*MINI)) == 0
    again = _metrics(run)
    assert again.keys() == clean.keys()
    assert all(again[k] == pytest.approx(clean[k], abs=1e-9) for k in clean)
    assert json.loads((run / "report.json").read_text())["counts"]["store_vectors_checked"] == 5


def test_a_score_no_unit_vector_gives_is_named_not_a_traceback() -> None:
    with pytest.raises(NomadError) as exc:
        Histogram.of([0.5, 1.7e37])
    assert exc.value.exit_code == 2 and "a score of 1.7e+37 is no similarity" in str(exc.value)
    assert len(Histogram.of([0.5, float("nan"), -0.25])) == 2


def test_an_exponent_bit_outside_the_sample_at_open_is_named_at_search(tmp_path: Path) -> None:
    """A store too large to be compared whole at open: a search meeting the damaged vector's score moves the
    store aside and names it (exit 2), instead of passing a score of 1e37 on to the metrics."""
    store = EdgeStore(str(tmp_path), 8, "collection", "__nomad_eval__", fast_search=False)
    rng = np.random.default_rng(0)
    vecs = rng.standard_normal((200, 8)).astype(np.float32)
    store.upsert([StoredPoint(f"00000000-0000-0000-0000-{i:012d}", v, {"collection": "__nomad_eval__"})
                  for i, v in enumerate(vecs)])
    store.close()
    store = EdgeStore(str(tmp_path), 8, "collection", "__nomad_eval__")
    last = store.scroll(with_vector=True)[-1]  # scrolled in id order: not among the first 64 read at open
    store.close()
    target = np.asarray(last[2], dtype=np.float32)
    damaged = target.view(np.uint32).copy()
    damaged[int(np.argmax(target))] ^= np.uint32(1 << 30)
    for f in tmp_path.rglob("*.mmap"):
        raw = f.read_bytes()
        if (at := raw.find(target.tobytes())) >= 0:
            f.write_bytes(raw[:at] + damaged.tobytes() + raw[at + target.nbytes:])
    store = EdgeStore(str(tmp_path), 8, "collection", "__nomad_eval__")
    assert store.damage is None  # the 64 points read back at open are not the damaged one
    with pytest.raises(NomadError) as exc:
        store.search(target, 5, None, None)
    assert exc.value.exit_code == 2
    assert f"the embedded store at {tmp_path / 'dim-8'} is damaged: point {last[0]} scored" in str(exc.value)
    assert list(tmp_path.glob("dim-8.corrupt-*")) and "moved it to" in str(exc.value)
