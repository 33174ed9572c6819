"""Score separation calibrates `threshold`: raw cosine over every (question, chunk) pair, not the cut pool."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hydra.utils import instantiate
from omegaconf import DictConfig

from nomad_eval.cli.entry import run_tier
from nomad_eval.harness.runtime import Runtime
from nomad_eval.rag.pipeline import Pipeline
from tests.conftest import MINI

# Small chunks, so documents span several chunks and "relevant chunk" differs from "relevant document".
SMALL = ["pipeline.chunk_size=200", "pipeline.chunk_overlap=30"]


def _run(cfg: DictConfig) -> tuple[dict, dict]:  # type: ignore[type-arg]
    assert run_tier(cfg) == 0
    out = Path(cfg.paths.run_dir)
    return json.loads((out / "report.json").read_text()), json.loads((out / "scores.json").read_text())


def test_raw_cosine_covers_every_chunk_and_reaches_below_threshold(make_cfg: Callable[..., DictConfig],
                                                                   tmp_path: Path) -> None:
    threshold = 0.5
    cfg = make_cfg(*MINI, *SMALL, f"threshold={threshold}")
    report, scores = _run(cfg)
    rows = {(r["flag"], r["label"]): r for r in report["separation"]}
    rel, irr = rows[("threshold", "relevant")], rows[("threshold", "irrelevant")]

    rt = Runtime(cfg)
    answerable = [g for g in rt.goldens if not g.expect_refusal]
    chunks = rt.chunks
    assert len({c.doc_id for c in chunks}) < len(chunks)  # several chunks per document
    pairs = sum(c.doc_id in g.relevant_doc_ids for g in answerable for c in chunks)
    assert rel["count"] == pairs and irr["count"] == len(answerable) * len(chunks) - pairs
    # The point of the change: a relevant chunk the search cut off still shows, below the threshold.
    assert rel["min"] < threshold
    assert rel["score"] == "raw cosine (every chunk)" and rows[("pipeline.min_final_score", "relevant")][
        "score"] == "final score (candidate pool)"
    # scores.json (the HTML histograms) carries the whole distributions, not a summary.
    assert scores["population"] == {"raw": "every chunk", "final": "candidate pool"}
    assert len(scores["raw"]["relevant"]) == pairs and len(scores["raw"]["irrelevant"]) == irr["count"]
    assert min(scores["raw"]["relevant"]) == pytest.approx(rel["min"])

    # The numpy cosines are the store's own: every chunk's score from an uncut search, split the same way.
    pipeline = instantiate(cfg.pipeline)
    assert isinstance(pipeline, Pipeline)
    want: dict[str, list[float]] = {"relevant": [], "irrelevant": []}
    with rt.store() as store:
        for g in answerable:
            vec = rt.cached_embedder.embed_queries([pipeline.expand(g.final_query)])[0]
            for h in store.search(vec, len(chunks), None, None):
                want["relevant" if h.payload["doc_id"] in g.relevant_doc_ids else "irrelevant"].append(h.score)
    for label in ("relevant", "irrelevant"):
        assert np.allclose(sorted(scores["raw"][label]), sorted(want[label]), atol=1e-4), label

    # A warm run answers all of it from the embedding cache: no model call.
    warm, _ = _run(make_cfg(*MINI, *SMALL, f"threshold={threshold}", f"paths.run_dir={tmp_path / 'warm'}"))
    assert warm["counts"]["embedding_model_calls"] == 0
    assert warm["separation"] == report["separation"]


def test_a_custom_pipeline_keeps_its_candidate_pool(make_cfg: Callable[..., DictConfig]) -> None:
    report, scores = _run(make_cfg(*MINI, "pipeline=custom_example"))
    assert scores["population"] == {"raw": "candidate pool", "final": "candidate pool"}
    assert {r["score"] for r in report["separation"]} == {"raw cosine (candidate pool)",
                                                         "final score (candidate pool)"}
    # Its items carry one score, so there is no raw cosine at all: the rows say so with n = 0.
    assert all(r["count"] == 0 for r in report["separation"] if r["flag"] == "threshold")
