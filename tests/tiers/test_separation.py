"""Score separation calibrates `threshold`: raw cosine over every (question, chunk) pair, not the cut pool. Each side
is counted into a Histogram of its values to 5 decimals: figures equal to listing them, memory flat in the pairs."""

from __future__ import annotations

import json
import re
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hydra.utils import instantiate
from omegaconf import DictConfig

from nomad_eval.cli.entry import run_tier
from nomad_eval.harness.cosines import _unit, split_cosines
from nomad_eval.metrics.separation import Histogram, distribution, rounded, separation_row
from nomad_eval.rag.pipeline import Pipeline
from nomad_eval.report.details import RetrievalDetails
from nomad_eval.report.html_charts import BINS, separation_histograms
from nomad_eval.report.html_writer import write_html
from nomad_eval.report.markdown import retrieval_markdown
from nomad_eval.report.schema import Report
from nomad_eval.run.queries import formed_queries
from nomad_eval.run.retrieval_cases import separation
from tests.conftest import MINI
from tests.typed_config import runtime

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
    rows = {(r["flag"], r["label"]): r for r in report["details"]["separation"]}
    rel, irr = rows[("threshold", "relevant")], rows[("threshold", "irrelevant")]

    rt = runtime(cfg)
    answerable = [g for g in rt.goldens if not g.expect_refusal]
    chunks = rt.chunks
    assert len({c.doc_id for c in chunks}) < len(chunks)  # several chunks per document
    pairs = sum(c.doc_id in g.relevant_doc_ids for g in answerable for c in chunks)
    assert rel["count"] == pairs and irr["count"] == len(answerable) * len(chunks) - pairs
    # The point of the change: a relevant chunk the search cut off still shows, below the threshold.
    assert rel["min"] < threshold
    assert rel["score"] == "raw cosine (every chunk)" and rows[("pipeline.min_final_score", "relevant")][
        "score"] == "final score (candidate pool)"
    # scores.json (the HTML histograms) carries the whole distributions, as counts, not a summary.
    assert scores["population"] == {"raw": "every chunk", "final": "candidate pool"}
    stored = {label: np.repeat(scores["raw"][label]["values"], scores["raw"][label]["counts"])
              for label in ("relevant", "irrelevant")}
    assert len(stored["relevant"]) == pairs and len(stored["irrelevant"]) == irr["count"]
    assert min(stored["relevant"]) == rel["min"]

    # The numpy cosines are the store's own: every chunk's score from an uncut search, split the same way.
    pipeline = instantiate(cfg.pipeline)
    assert isinstance(pipeline, Pipeline)
    want: dict[str, list[float]] = {"relevant": [], "irrelevant": []}
    with rt.store() as store:
        for g, formed in zip(answerable, formed_queries(answerable, pipeline, None, 0), strict=True):
            # The query the run searched for: the question with its conversation's last user turns (pipeline.history).
            vec = rt.cached_embedder.embed_queries([pipeline.expand(formed.text)])[0]
            for h in store.search(vec, len(chunks), None, None):
                want["relevant" if h.payload["doc_id"] in g.relevant_doc_ids else "irrelevant"].append(h.score)
    for label in ("relevant", "irrelevant"):
        assert np.allclose(stored[label], sorted(want[label]), atol=1e-4), label

    # A warm run answers all of it from the embedding cache: no model call.
    warm, _ = _run(make_cfg(*MINI, *SMALL, f"threshold={threshold}", f"paths.run_dir={tmp_path / 'warm'}"))
    assert warm["counts"]["embedding_model_calls"] == 0
    assert warm["details"]["separation"] == report["details"]["separation"]


def test_a_custom_pipeline_keeps_its_candidate_pool(make_cfg: Callable[..., DictConfig]) -> None:
    report, scores = _run(make_cfg(*MINI, "pipeline=custom_example"))
    assert scores["population"] == {"raw": "candidate pool", "final": "candidate pool"}
    assert {r["score"] for r in report["details"]["separation"]} == {"raw cosine (candidate pool)",
                                                         "final score (candidate pool)"}
    # Its items carry one score, so there is no raw cosine at all: the rows say so with n = 0.
    assert all(r["count"] == 0 for r in report["details"]["separation"] if r["flag"] == "threshold")


def _corpus(questions: int, chunks: int, dim: int = 16, seed: int = 3) -> tuple[np.ndarray, np.ndarray, list[str],
                                                                                   list[set[str]]]:
    """Random unit vectors, 4 chunks a document; each question's relevant documents pulled towards it, so the
    relevant side sits apart from the irrelevant one the way a working embedder's does."""
    rng = np.random.default_rng(seed)
    c = rng.normal(size=(chunks, dim)).astype(np.float32)
    docs = [f"d{i // 4}" for i in range(chunks)]
    n_docs = (chunks + 3) // 4
    relevant: list[set[str]] = []
    q = rng.normal(size=(questions, dim)).astype(np.float32)
    for i in range(questions):
        picked = {int(d) for d in rng.integers(0, n_docs, size=1 + i % 3)}
        # Some questions point at a document the corpus lacks, one at none: both must be skipped.
        relevant.append(set() if i == 0 else {f"d{d}" for d in picked} | ({"missing"} if i % 5 == 0 else set()))
        for d in picked:
            c[4 * d:4 * d + 4] += 1.5 * q[i]
    return _unit(q), _unit(c), docs, relevant


def _by_hand(q: np.ndarray, c: np.ndarray, docs: list[str], relevant: list[set[str]]) -> dict[str, np.ndarray]:
    sims = q @ c.T
    mask = np.array([[d in r for d in docs] for r in relevant])
    return {"relevant": np.round(sims[mask].astype(np.float64), 5),
            "irrelevant": np.round(sims[~mask].astype(np.float64), 5)}


def _json(x: Any) -> Any:
    return json.loads(json.dumps(x))  # as the report step reads scores.json back


def test_counted_figures_are_those_of_the_listed_values() -> None:
    q, c, docs, relevant = _corpus(150, 6000)
    rel, irr = split_cosines(q, c, docs, relevant)
    want = _by_hand(q, c, docs, relevant)
    step = 1e-5  # the histogram's rounding step
    for label, got in (("relevant", rel), ("irrelevant", irr)):
        listed = got.bins().repeat(got.counts)
        # The same values as one whole-matrix product, within one rounding step: the tiles sum float32 products in
        # another order, and a value that lands on a rounding edge may round to the neighbouring step on some CPUs.
        by_hand = np.sort(want[label])
        assert len(listed) == len(by_hand), label
        assert np.max(np.abs(listed - by_hand)) <= step * 1.01, label
        assert np.mean(listed != by_hand) < 1e-3, label  # edge cases are rare, not a systematic shift
        # The row's figures are exactly those of the values it counted.
        row = separation_row("raw cosine (every chunk)", "threshold", label, distribution(_json(rounded(got))))
        assert row.count == len(listed) and (row.min, row.max) == (listed.min(), listed.max())
        assert row.mean == pytest.approx(listed.mean(), abs=1e-12)
        assert [row.p10, row.median, row.p90] == pytest.approx(list(np.quantile(listed, [0.1, 0.5, 0.9])), abs=1e-12)
    # One entry per distinct rounded value, at most 200,001 for a cosine whatever the pairs.
    assert len(_json(rounded(irr))["values"]) < len(want["irrelevant"]) / 5


def test_a_single_value_nan_and_empty_sides() -> None:
    h = Histogram()
    h.add(np.array([[1.0000001, np.nan, -0.25]], dtype=np.float32))  # a float32 cosine can pass 1 by a hair
    h.add(np.array([0.123456]))
    row = separation_row("s", "f", "irrelevant", h)
    assert (row.count, row.min, row.max) == (3, -0.25, 1.0)
    assert row.median == 0.12346 and row.mean == pytest.approx((1.0 - 0.25 + 0.12346) / 3, abs=1e-15)
    assert separation_row("s", "f", "relevant", Histogram.of([0.3])).p90 == 0.3
    assert separation_row("s", "f", "relevant", distribution(rounded([]))).count == 0
    with pytest.raises(ValueError, match="2 values carries 1 counts"):
        Histogram.from_json({"values": [0.1, 0.2], "counts": [1]})


def _peak_mb(make: Callable[[], object]) -> float:
    tracemalloc.start()
    try:
        make()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def test_memory_does_not_grow_with_the_pairs() -> None:
    # 200 questions x 20k chunks, then x 80k: four times the pairs. The vectors are made before tracing, so the peak
    # is what scoring them holds: one tile, where the whole product grows with the pairs.
    small, large = (_corpus(200, n, dim=8) for n in (20_000, 80_000))
    whole_small, whole_large = _peak_mb(lambda: small[0] @ small[1].T), _peak_mb(lambda: large[0] @ large[1].T)
    assert whole_large > 3 * whole_small  # the measure sees growth where there is some
    counted_small, counted_large = _peak_mb(lambda: split_cosines(*small)), _peak_mb(lambda: split_cosines(*large))
    assert counted_large < 1.5 * counted_small, (counted_small, counted_large)
    assert counted_large < whole_large / 2


def test_tables_and_report_html_from_counted_scores_json(tmp_path: Path) -> None:
    q, c, docs, relevant = _corpus(60, 3000)
    rel, irr = split_cosines(q, c, docs, relevant)
    scores = _json({"raw": {"relevant": rounded(rel), "irrelevant": rounded(irr)},
                    "final": {"relevant": rounded([0.6, 0.7]), "irrelevant": rounded([0.1, 0.2, 0.3])},
                    "population": {"raw": "every chunk", "final": "candidate pool"}})
    rows = separation(scores)
    assert [r.score for r in rows] == ["raw cosine (every chunk)"] * 2 + ["final score (candidate pool)"] * 2
    md = retrieval_markdown(Report(tier="retrieval", details=RetrievalDetails(separation=rows)))
    assert f"| raw cosine (every chunk) | threshold | irrelevant | {len(irr)} |" in md

    (tmp_path / "scores.json").write_text(json.dumps(scores))
    write_html(tmp_path, Report(tier="retrieval", counts={"goldens": 60}), [])
    html = (tmp_path / "report.html").read_text()
    start = html.index('id="chart-separation"')
    figure = html[start:html.index('id="chart-', start + 1)]  # up to the next chart
    assert "<svg" in figure and len(re.findall(r'<rect class="bar"', figure)) > 10
    assert "raw cosine, every chunk</text>" in figure and f"{len(irr):,} irrelevant" in figure

    # The chart's shares are those of binning every listed value.
    chart = separation_histograms(scores, 0.5, None).charts[0]
    want = _by_hand(q, c, docs, relevant)
    edges = np.histogram_bin_edges(np.r_[want["relevant"], want["irrelevant"]], bins=BINS)
    for series, label in zip(chart.series, ("relevant", "irrelevant"), strict=True):
        counts, _ = np.histogram(want[label], bins=edges)
        assert series.y == pytest.approx(list(counts / len(want[label])), abs=1e-15), label
