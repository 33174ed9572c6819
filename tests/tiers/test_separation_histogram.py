"""Beyond EXACT_PAIRS irrelevant pairs, the every-chunk cosines are counted into a fixed histogram: figures within a
bin of the exact ones, memory flat in the number of pairs, and scores.json, the tables and report.html say so."""

from __future__ import annotations

import json
import re
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from omegaconf import OmegaConf

from nomad_eval.harness.cosines import _unit, split_cosines
from nomad_eval.metrics.separation import HIST_BINS, Histogram, distribution, rounded, separation_row
from nomad_eval.report.html_charts import separation_histograms
from nomad_eval.report.html_writer import write_html
from nomad_eval.report.markdown import retrieval_markdown
from nomad_eval.report.schema import Report
from nomad_eval.tiers.retrieval import separation

NOTE = "histogram of bin width 0.0005"


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
        # Some questions point at a document the corpus lacks, one at none: both paths must skip them alike.
        relevant.append(set() if i == 0 else {f"d{d}" for d in picked} | ({"missing"} if i % 5 == 0 else set()))
        for d in picked:
            c[4 * d:4 * d + 4] += 1.5 * q[i]
    return _unit(q), _unit(c), docs, relevant


def _json(x: Any) -> Any:
    return json.loads(json.dumps(x))  # as the report step reads scores.json back


def test_histogram_figures_are_within_a_bin_of_the_exact_ones() -> None:
    q, c, docs, relevant = _corpus(150, 6000)
    rel, irr = split_cosines(q, c, docs, relevant)
    rel_h, hist = split_cosines(q, c, docs, relevant, exact_pairs=len(irr) - 1)  # one pair over: binned
    assert isinstance(irr, np.ndarray) and isinstance(hist, Histogram)
    # The relevant side stays value by value, in the same order.
    assert rel.shape == rel_h.shape and np.allclose(rel, rel_h, atol=1e-6)

    exact = separation_row("raw cosine (every chunk)", "threshold", "irrelevant", _json(rounded(irr)))
    stored = _json(rounded(hist))
    assert len(stored["counts"]) == HIST_BINS and len(json.dumps(stored)) < 40_000  # small whatever the pairs
    binned = separation_row("raw cosine (every chunk)", "threshold", "irrelevant", distribution(stored))
    assert exact.score == "raw cosine (every chunk)"
    assert binned.score == f"raw cosine (every chunk), {NOTE}"
    assert binned.count == exact.count == len(irr)
    assert (binned.min, binned.max) == (exact.min, exact.max)
    # The exact path averages values rounded to 5 decimals; the histogram's sum is of the raw ones.
    assert binned.mean == pytest.approx(exact.mean, abs=5e-6)
    width = 2 / HIST_BINS
    for name in ("p10", "median", "p90"):
        assert abs(getattr(binned, name) - getattr(exact, name)) <= width, name
    # The histogram really is binned: not every quantile lands on the exact figure.
    assert (binned.p10, binned.median, binned.p90) != (exact.p10, exact.median, exact.p90)


def test_a_single_pair_and_clipped_cosines() -> None:
    # A float32 cosine can exceed 1 by a hair: counted in the last bin, min and max still exact.
    h = Histogram()
    h.add(np.array([[1.0000001, np.nan, -0.25]], dtype=np.float32))
    row = separation_row("s", "f", "irrelevant", h)
    assert row.count == 2 and row.min == -0.25 and row.max == pytest.approx(1.0000001)
    want = np.quantile(np.array([1.0000001, -0.25], dtype=np.float32), [0.1, 0.5, 0.9])
    got = [row.p10, row.median, row.p90]
    assert all(g is not None and abs(g - w) <= 0.0005 for g, w in zip(got, want, strict=True)), got
    one = Histogram()
    one.add(np.array([0.3], dtype=np.float32))
    assert separation_row("s", "f", "irrelevant", one).median == pytest.approx(0.3, abs=0.00025)
    with pytest.raises(ValueError, match="4000 bins"):
        Histogram.from_json({**Histogram().to_json(), "counts": [0, 1]})


def _peak_mb(questions: int, chunks: int, exact_pairs: int) -> float:
    q, c, docs, relevant = _corpus(questions, chunks, dim=8)
    tracemalloc.start()
    try:
        split_cosines(q, c, docs, relevant, exact_pairs=exact_pairs)
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def test_histogram_memory_does_not_grow_with_the_pairs() -> None:
    # 200 questions x 20k chunks, then x 80k: four times the pairs. The vectors are made before tracing, so the peak
    # is what scoring them holds. Kept value by value it grows with the pairs; binned it is one tile.
    small, large = _peak_mb(200, 20_000, 0), _peak_mb(200, 80_000, 0)
    exact_small, exact_large = _peak_mb(200, 20_000, 10**12), _peak_mb(200, 80_000, 10**12)
    assert exact_large > 3 * exact_small  # the measure sees growth where there is some
    assert large < 1.5 * small, (small, large)
    assert large < exact_large / 4


def _scores(rel: np.ndarray, irr: np.ndarray | Histogram) -> dict[str, Any]:
    # The shape score_lists gives scores.json.
    out: dict[str, Any] = _json({"raw": {"relevant": rounded(rel), "irrelevant": rounded(irr)},
                                 "final": {"relevant": [0.6, 0.7], "irrelevant": [0.1, 0.2, 0.3]},
                                 "population": {"raw": "every chunk", "final": "candidate pool"}})
    return out


def test_report_draws_and_labels_a_histogram_form_scores_json(tmp_path: Path) -> None:
    q, c, docs, relevant = _corpus(60, 3000)
    rel, irr = split_cosines(q, c, docs, relevant)
    _, hist = split_cosines(q, c, docs, relevant, exact_pairs=0)
    listed, binned = _scores(rel, irr), _scores(rel, hist)
    assert isinstance(binned["raw"]["irrelevant"], dict)

    # The tables: the irrelevant every-chunk row says it is from a histogram, the others stay as they were.
    rows = separation(binned)
    assert [r.score for r in rows] == ["raw cosine (every chunk)", f"raw cosine (every chunk), {NOTE}",
                                       "final score (candidate pool)", "final score (candidate pool)"]
    assert [r.score for r in separation(listed)][1] == "raw cosine (every chunk)"
    md = retrieval_markdown(Report(tier="retrieval", separation=rows))
    assert f"| raw cosine (every chunk), {NOTE} | threshold | irrelevant | {len(irr)} |" in md

    # report.html from scores.json on disk, the way the run writes it: the figure draws, and says it is binned.
    (tmp_path / "scores.json").write_text(json.dumps(binned))
    write_html(tmp_path, Report(tier="retrieval", counts={"goldens": 60}), [], OmegaConf.create({}))
    html = (tmp_path / "report.html").read_text()
    start = html.index('id="chart-separation"')
    figure = html[start:html.index('id="chart-', start + 1)]  # up to the next chart
    assert "<svg" in figure and len(re.findall(r'<rect class="bar"', figure)) > 10
    assert "raw cosine, every chunk · irrelevant binned at 0.0005</text>" in figure
    assert f"{len(irr):,} irrelevant" in figure and "final score, candidate pool</text>" in figure

    # The same picture as binning every value, to the histogram's resolution: the bins and the relevant side
    # match exactly, and the irrelevant side's share below each chart edge differs at most by the share of pairs
    # in the fine bin that edge cuts through.
    a, b = (separation_histograms(s, 0.5, None).charts[0] for s in (listed, binned))
    assert a.x == b.x and a.bar_width == b.bar_width
    assert a.series[0].y == b.series[0].y
    values = np.asarray(listed["raw"]["irrelevant"])
    width = 2 / HIST_BINS
    lo_edge = np.asarray(a.x, dtype=np.float64) - a.bar_width / 2 if a.bar_width else np.zeros(0)
    below_a = np.cumsum(np.asarray(a.series[1].y, dtype=np.float64))
    below_b = np.cumsum(np.asarray(b.series[1].y, dtype=np.float64))
    assert below_b[-1] == pytest.approx(1.0)
    for j, edge in enumerate(lo_edge[1:]):
        cut = -1 + np.floor((edge + 1) / width) * width
        slack = np.count_nonzero((values >= cut - 1e-6) & (values < cut + width + 1e-6)) / len(values)
        assert abs(below_a[j] - below_b[j]) <= slack + 1e-9, (j, edge)
    assert np.abs(below_a - below_b).max() > 0  # binned, not a copy of the exact picture
