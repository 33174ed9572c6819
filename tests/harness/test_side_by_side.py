"""Several fingerprints share one store: each configuration scores only its own chunks, and none deletes another's."""

from __future__ import annotations

import fcntl
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from omegaconf import DictConfig

from nomad_eval.backends.base import StoredPoint
from nomad_eval.base.cpus import available_cores
from nomad_eval.base.shipped import build
from nomad_eval.cli.entry import run_tier
from nomad_eval.harness.index import ingest, store_state
from nomad_eval.harness.search import StoreSearcher
from tests.backends.test_store_isolation import write_raw
from tests.conftest import MINI, run_cli
from tests.typed_config import runtime

pytestmark = pytest.mark.slow  # each test ingests and searches real stores, one a parallel sweep in subprocesses

SIZES = (120, 800)  # the fixture documents are 290-450 characters: several chunks each, or one


def _plant_foreign(store: Any) -> None:
    """Someone else's points: untagged, another tag, and one under the eval's tag with a fingerprint of no config."""
    rng = np.random.default_rng(11)
    payloads = [{"note": "user"}, {"collection": "user-notes", "note": 2},
                {"collection": "__nomad_eval__", "fingerprint": "0123456789abcdef", "doc_id": "kettle-descaling",
                 "chunk_id": "kettle-descaling#0", "text": "an old configuration's chunk"}]
    pts = [StoredPoint(str(uuid.UUID(int=i + 1)), rng.standard_normal(384).astype(np.float32), p)
           for i, p in enumerate(payloads)]
    write_raw(store, pts)


def _foreign(store: Any, decimals: int | None = None) -> list[tuple[str, str, bytes]]:
    """Foreign points as bytes; `decimals` rounds vectors for qdrant-client's local mode, which hands back float64
    lists recomputed on each read (the embedded store is compared byte for byte)."""
    own = {"__nomad_eval__"}

    def raw(v: Any) -> bytes:
        arr = np.asarray(v, dtype=np.float32)
        return (arr if decimals is None else arr.round(decimals)).tobytes()

    return sorted((i, json.dumps(p, sort_keys=True), raw(v))
                  for i, p, v in store.scroll(with_vector=True)
                  if p.get("collection") not in own or p.get("fingerprint") == "0123456789abcdef")


def test_parallel_sweep_over_chunk_size_scores_only_its_own_chunks(tmp_path: Path, data_dir: Path,
                                                                     make_cfg: Callable[..., DictConfig]) -> None:
    store = build("store", "edge", path=str(data_dir / "qdrant-edge"), dim=384)
    _plant_foreign(store)
    before = _foreign(store)
    store.close()

    sweep = tmp_path / "sweep"
    r = run_cli("tier=retrieval", f"pipeline.chunk_size={SIZES[0]},{SIZES[1]}", "pipeline.chunk_overlap=20", *MINI,
                f"paths.data_dir={data_dir}", "quiet=true", "threshold=null", "hydra/launcher=joblib",
                "hydra.launcher.n_jobs=2", f"hydra.sweep.dir={sweep}", "-m")
    assert r.returncode == 0, r.stderr
    import polars as pl

    df = pl.read_parquet(sweep / "summary.parquet")  # both jobs finished and the sweep summary holds them
    assert df.height == 2 and df["status"].to_list() == ["ok"] * 2

    fingerprints = set()
    for size in SIZES:
        rt = runtime(make_cfg(*MINI, f"pipeline.chunk_size={size}", "pipeline.chunk_overlap=20"))
        fingerprints.add(rt.fingerprint)
        # Found by the config it ran, not its folder name: a long checkout path can push the swept key past the
        # folder name's length limit.
        job = next(p for p in sweep.iterdir() if (p / "report.json").exists()
                   and json.loads((p / "report.json").read_text())["config"]["pipeline"]["chunk_size"] == size)
        ran = json.loads((job / "report.json").read_text())
        assert ran["identity"]["fingerprint"] == rt.fingerprint
        # Two jobs at once share the cores: each embedder was given its half (base/cpus.py), at least one.
        assert ran["config"]["embedder"]["threads"] == max(1, available_cores() // 2)
        assert f"pipeline.chunk_size-{size}+" in job.name  # the swept value survives in the folder name
        own = {c.chunk_id: c.text for c in rt.chunks}
        cases = [json.loads(line) for line in (job / "cases.jsonl").read_text().splitlines()]
        rows = [(c["expanded_query"], row) for c in cases for row in c["retrieved"]]
        assert rows and all(row["chunk_id"] in own for _, row in rows)
        # The planted difference: the same id (`doc#0`) names a 120- or an 800-character chunk. Each retrieved
        # score must be the cosine of the query with *this* chunking's text, which only its own points give.
        queries = rt.cached_embedder.embed_queries([q for q, _ in rows])
        texts = rt.cached_embedder.embed_documents([own[row["chunk_id"]] for _, row in rows])
        cos = np.sum(queries * texts, axis=1) / (np.linalg.norm(queries, axis=1) * np.linalg.norm(texts, axis=1))
        assert np.allclose(cos, [row["score"] for _, row in rows], atol=1e-4)
        if size == SIZES[1]:
            assert {cid.split("#")[1] for cid in own} == {"0"}

    store = build("store", "edge", path=str(data_dir / "qdrant-edge"), dim=384)
    try:
        assert len(fingerprints) == 2
        for size in SIZES:
            rt = runtime(make_cfg(*MINI, f"pipeline.chunk_size={size}", "pipeline.chunk_overlap=20"))
            assert store_state(rt, store).current
        assert _foreign(store) == before  # byte-identical, vectors included
    finally:
        store.close()


def test_two_fingerprints_side_by_side_through_qdrant_client(make_cfg: Callable[..., DictConfig]) -> None:
    """store=server: one collection, two chunkings ingested one after the other, each searched under its own filter.

    qdrant-client's local mode stands in for a server (none is installable here); it runs in one process, so the
    jobs take turns rather than run in parallel, which is what the filters are tested against.
    """
    from qdrant_client import QdrantClient

    store = build("store", "server", url=":memory:", dim=384, client=QdrantClient(location=":memory:"))
    _plant_foreign(store)
    before = _foreign(store, 6)
    rts = [runtime(make_cfg(*MINI, f"pipeline.chunk_size={s}", "pipeline.chunk_overlap=20")) for s in SIZES]
    for rt in rts:
        ingest(rt, store, quiet=True)
    assert all(store_state(rt, store).current for rt in rts)
    assert store.count() == sum(len(rt.chunks) for rt in rts) + 1  # + the planted old-fingerprint point
    for rt in rts:
        searcher = StoreSearcher(rt.cached_embedder, store, None, rt.doc_ids, rt.fingerprint)
        vec = searcher.embed_queries(["how long does rope keep in storage"])[0]
        hits = store.search(vec, 50, None, rt.fingerprint)
        assert hits and {h.payload["fingerprint"] for h in hits} == {rt.fingerprint}
        assert len(searcher.search(vec, 50)) == len(rt.chunks)
    store.delete_tagged(rts[0].fingerprint)  # action=reset for one configuration
    assert store_state(rts[1], store).current and store.count(rts[0].fingerprint) == 0
    assert _foreign(store, 6) == before
    store.close()


class LockProbeEmbedder:
    """An embedder that records whether the data-dir lock was held while it was asked for vectors."""

    calls: list[bool] = []

    def __init__(self, lock_dir: str, dim: int = 384, name: str = "probe", max_input_tokens: int = 10_000,
                 document_prefix: str = "", query_prefix: str = "") -> None:
        self.lock_path = Path(lock_dir) / "store.lock"
        self.name, self.dim, self.max_input_tokens = name, dim, max_input_tokens
        self.document_prefix, self.query_prefix = document_prefix, query_prefix

    def identity(self) -> dict[str, Any]:
        return {"backend": "probe", "dim": self.dim}

    def _lock_held(self) -> bool:
        if not self.lock_path.exists():
            return False
        with self.lock_path.open("a+") as fh:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
            return False

    def embed(self, texts: list[str]) -> np.ndarray:
        LockProbeEmbedder.calls.append(self._lock_held())
        rng = np.random.default_rng(len(texts))
        return rng.standard_normal((len(texts), self.dim)).astype(np.float32)

    def token_counts(self, texts: list[str]) -> list[int]:
        return [len(t) // 4 for t in texts]


def test_the_data_dir_lock_is_not_held_through_a_cold_embedding_pass(make_cfg: Callable[..., DictConfig],
                                                                       data_dir: Path) -> None:
    LockProbeEmbedder.calls.clear()
    cfg = make_cfg(*MINI, "embedder._target_=tests.harness.test_side_by_side.LockProbeEmbedder",
                   f"+embedder.lock_dir={data_dir}", "~embedder.batch_size", "~embedder.threads")
    assert run_tier(cfg) == 0
    assert LockProbeEmbedder.calls and not any(LockProbeEmbedder.calls)
