"""tier=corpus action=audit: a served Qdrant collection (qdrant-client's local mode in a folder, written and read
with the calls a server takes) accounted point by point against the corpus, with real MiniLM vectors."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from omegaconf import DictConfig

from nomad_eval.cli.entry import run_tier
from tests.conftest import MINI
from tests.typed_config import runtime

SMALL = (*MINI, "pipeline.chunk_size=160", "pipeline.chunk_overlap=20")  # several chunks per document


def _code(cfg: DictConfig) -> int:
    try:
        return run_tier(cfg)
    except SystemExit as exc:
        return int(exc.code or 0)


def _other_model(text: str, dim: int) -> list[float]:
    """A vector another model could have made: unrelated to this embedder's, seeded by the text."""
    v = np.random.default_rng(int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)).standard_normal(dim)
    return [float(x) for x in v / np.linalg.norm(v)]


def _write(folder: Path, points: list[tuple[dict[str, Any], list[float]]], dim: int) -> None:
    from qdrant_client import QdrantClient, models

    client = QdrantClient(path=str(folder))
    client.create_collection("team", vectors_config=models.VectorParams(size=dim, distance=models.Distance.COSINE))
    structs = [models.PointStruct(id=str(uuid.uuid4()), vector=v, payload=p) for p, v in points]
    for i in range(0, len(structs), 256):
        client.upsert("team", structs[i : i + 256], wait=True)
    client.close()


def _collection(make: Callable[..., DictConfig], folder: Path, dirty: bool) -> None:
    rt = runtime(make(*SMALL))
    chunks = rt.chunks
    vecs = rt.cached_embedder.embed_documents([c.text for c in chunks])
    points = [({"doc_id": c.doc_id, "text": c.text}, [float(x) for x in v]) for c, v in zip(chunks, vecs, strict=True)]
    if dirty:
        by_doc = {d: [p for p in points if p[0]["doc_id"] == d] for d in {c.doc_id for c in chunks}}
        old = ["Descale the kettle with bleach every day.", "Boil vinegar for two hours.", "Kettles never scale."]
        ghosts = [({"doc_id": "kettle-descaling", "text": t}, v) for t, v in
                  zip(old, rt.cached_embedder.embed_documents(old), strict=True)]
        orphans = [({"doc_id": "old-faq", "text": "Opening hours: nine to five."}, by_doc["bread-starter"][0][1])]
        compost = [(p, _other_model(p["text"], len(v))) for p, v in by_doc["garden-compost"]]
        lantern = by_doc["lantern-batteries"][1:]  # its first chunk was never re-ingested
        points = [p for p in points if p[0]["doc_id"] not in ("rope-storage", "garden-compost", "lantern-batteries")]
        points += ghosts + orphans + compost + lantern + by_doc["bread-starter"]  # bread-starter twice
    _write(folder, points, rt.embedder.dim)


def test_the_audit_names_every_finding_by_document_and_a_clean_collection_passes(
        tmp_path: Path, make_cfg: Callable[..., DictConfig], capsys: pytest.CaptureFixture[str]) -> None:
    served = ("tier=corpus", "action=audit", "store=server", "store.collection=team")
    _collection(make_cfg, tmp_path / "clean", dirty=False)
    assert _code(make_cfg(*SMALL, *served, f"store.url={tmp_path / 'clean'}")) == 0
    out = capsys.readouterr().out
    assert "the collection matches the corpus" in out
    # The collection was embedded through this data folder's cache: every point is compared with it, no model call.
    assert "17 stored chunks compared with the embedding cache and 0 re-embedded (audit.sample), 5 documents " \
           "reached, lowest cosine 1.0" in out
    # A fresh data folder holds no vector: the drift check re-embeds its sample (audit.sample) instead.
    cold = f"paths.data_dir={tmp_path / 'cold'}"
    assert _code(make_cfg(*SMALL, *served, f"store.url={tmp_path / 'clean'}", cold, "audit.sample=6")) == 0
    assert "0 stored chunks compared with the embedding cache and 6 re-embedded (audit.sample), 5 documents " \
           "reached" in capsys.readouterr().out

    _collection(make_cfg, tmp_path / "dirty", dirty=True)
    assert _code(make_cfg(*SMALL, *served, f"store.url={tmp_path / 'dirty'}")) == 1
    lines = {line.split(":")[0]: line for line in capsys.readouterr().out.splitlines()}
    assert "kettle-descaling (3)" in lines["ghost"] and lines["ghost"].startswith("ghost: 1 document(s)")
    assert "old-faq (1)" in lines["orphan"]
    assert lines["missing"].endswith("documents no point holds: rope-storage")
    assert "lantern-batteries (0." in lines["partial"]
    assert lines["duplicated"].startswith("duplicated: 1 document(s)") and "bread-starter (" in lines["duplicated"]
    assert lines["drift"].startswith("drift: 1 document(s)") and "garden-compost (" in lines["drift"]
    assert "audit: over the limit: ghost, orphan, missing, partial, duplicated, drift" in out_of(lines)

    # Limits raised to what was found: the same collection passes.
    limits = [f"audit.max_{k}=1" for k in ("ghost", "orphan", "missing", "partial", "duplicated", "drift")]
    assert _code(make_cfg(*SMALL, *served, f"store.url={tmp_path / 'dirty'}", *limits)) == 0


def out_of(lines: dict[str, str]) -> str:
    return "\n".join(lines.values())


def test_the_audit_needs_a_server_store_and_an_existing_collection(
        tmp_path: Path, make_cfg: Callable[..., DictConfig]) -> None:
    assert _code(make_cfg(*MINI, "tier=corpus", "action=audit")) == 2  # the embedded store is the harness's own
    assert _code(make_cfg(*MINI, "tier=corpus", "action=audit", "store=server", f"store.url={tmp_path / 'none'}",
                          "store.collection=absent")) == 2
