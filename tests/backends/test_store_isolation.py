"""Ingest and reset touch only the eval's tagged points, in both store implementations."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from omegaconf import DictConfig

from nomad_eval.backends.base import StoredPoint
from nomad_eval.backends.edge import EdgeStore
from nomad_eval.base.errors import NomadError
from nomad_eval.base.shipped import build
from nomad_eval.harness.index import ingest, store_state
from tests.conftest import MINI
from tests.typed_config import runtime


def _edge(tmp_path: Path) -> Any:
    return build("store", "edge", path=str(tmp_path / "edge"), dim=384)


def _server(tmp_path: Path) -> Any:
    from qdrant_client import QdrantClient

    return build("store", "server", url=":memory:", dim=384, client=QdrantClient(location=":memory:"))


def seed_foreign(store: Any, n: int) -> None:
    """Points written by someone else: another tag, and no tag at all."""
    rng = np.random.default_rng(7)
    pts = []
    for i in range(n):
        payload = {"collection": "user-notes", "note": i} if i % 2 else {"note": i}
        pts.append(StoredPoint(str(uuid.UUID(int=i + 1)), rng.standard_normal(384).astype(np.float32), payload))
    write_raw(store, pts)


def write_raw(store: Any, pts: list[StoredPoint]) -> None:
    """Writes points past the store's tag guard, on purpose: they stand for the user's own, or another tool's."""
    if isinstance(store, EdgeStore):
        qe = store._qe
        store._shard.update(qe.UpdateOperation.upsert_points([qe.Point(p.point_id, p.vector, p.payload) for p in pts]))
    else:
        m = store._m
        store._client.upsert(store.collection, [m.PointStruct(id=p.point_id, vector=p.vector.tolist(),
                                                              payload=p.payload) for p in pts])


@pytest.mark.parametrize("factory", [_edge, _server], ids=["edge", "server-local-mode"])
def test_foreign_points_survive_ingest_and_reset(
    tmp_path: Path, make_cfg: Callable[..., DictConfig], factory: Callable[[Path], Any]
) -> None:
    store = factory(tmp_path)
    seed_foreign(store, 200)
    before = sorted((i, repr(sorted(p.items())), np.asarray(v).round(6).tobytes())
                    for i, p, v in store.scroll(with_vector=True))
    rt = runtime(make_cfg(*MINI))
    ingest(rt, store, quiet=True)
    ingest(rt, store, quiet=True)
    assert store_state(rt, store).current
    assert store.count(tagged=False) == 200 + len(rt.chunks)
    store.delete_tagged()
    assert store.count() == 0
    after = sorted((i, repr(sorted(p.items())), np.asarray(v).round(6).tobytes())
                   for i, p, v in store.scroll(with_vector=True))
    assert after == before
    store.close()


def test_store_refuses_untagged_writes(tmp_path: Path) -> None:
    store = _edge(tmp_path)
    with pytest.raises(ValueError, match="untagged"):
        store.upsert([StoredPoint(str(uuid.uuid4()), np.ones(384, np.float32), {"collection": "other"})])
    store.close()


def test_second_open_of_edge_store_names_path(tmp_path: Path) -> None:
    first = _edge(tmp_path)
    with pytest.raises(NomadError) as exc:
        _edge(tmp_path)
    assert str(tmp_path / "edge") in str(exc.value) and "another process" in str(exc.value)
    first.close()
