"""The charts of report.html, as inline SVG (report/svg.py) from a run's report, cases and scores."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from nomad_eval.metrics.registry import MetricName, at_k_families
from nomad_eval.metrics.separation import Scores, distribution
from nomad_eval.metrics.separation import sides as side_of
from nomad_eval.report.details import RankAnalysis
from nomad_eval.report.markdown import fmt_interval
from nomad_eval.report.schema import MetricInterval
from nomad_eval.report.svg import Chart, Panels, Series

COLORS = {"relevant": "#1a73e8", "irrelevant": "#e8710a"}
BINS = 40


def interval_series(name: str, names: Sequence[str], metrics: Mapping[str, float | None],
                    intervals: Mapping[str, MetricInterval], **kw: Any) -> Series:
    """A series of reported metrics with each one's 95% interval (none where the report has none) and n."""
    ivs = [intervals.get(n) for n in names]
    return Series(name, [metrics.get(n) for n in names], [iv.low if iv else None for iv in ivs],
                  [iv.high if iv else None for iv in ivs],
                  hover=[f"95% {fmt_interval(iv)}, n={iv.n if iv else '—'}" for iv in ivs], **kw)


def separation_histograms(scores: Scores, threshold: float | None, min_final: float | None) -> Panels:
    """Relevant vs irrelevant, each as its share of pairs per bin, binned here.

    Shares, because over every chunk the irrelevant pairs outnumber the relevant ones a hundred to one and
    counts would flatten the relevant curve; binned in Python, because the page would otherwise carry every
    one of the (questions x chunks) values. scores.json keeps each side as counts of its values to 5 decimals,
    so the chart bins hold exactly the pairs they would if every value were listed.
    """
    pop = scores.get("population") or {}
    panels = []
    for key, flag, line in (("raw", "threshold", threshold), ("final", "min_final_score", min_final)):
        sides = {label: distribution(v) for label, v in side_of(scores, key).items()}
        title = f"{'raw cosine' if key == 'raw' else 'final score'}, {pop.get(key, 'candidate pool')}"
        n = " / ".join(f"{len(v):,} {label}" for label, v in sides.items())
        cut = "" if line is None else f"dashed: {flag} = {line} · "
        chart = Chart(title, [], [], numeric_x=True, overlay=True, x_title=f"{cut}{n} pairs",
                      y_title="share of pairs", vlines=[] if line is None else [(float(line), f"{flag} = {line}")])
        ranges = [v.summary()[:2] for v in sides.values() if len(v)]
        if ranges:
            # numpy's edges for BINS bins depend only on the data's min and max: the same edges as binning every value.
            edges = np.histogram_bin_edges(np.array([min(r[0] for r in ranges), max(r[1] for r in ranges)]),
                                           bins=BINS)
            chart.x = [float(m) for m in (edges[:-1] + edges[1:]) / 2]
            chart.bar_width = float(edges[1] - edges[0])
            for label, values in sides.items():
                counts, _ = np.histogram(values.bins(), bins=edges, weights=values.counts)
                share = counts / max(len(values), 1)
                chart.series.append(Series(label, [float(s) for s in share], color=COLORS.get(label), opacity=0.6,
                                           hover=[f"{int(c)} pairs" for c in counts]))
        panels.append(chart)
    return Panels(panels)


def headline_bars(metrics: Mapping[str, float | None], intervals: Mapping[str, MetricInterval],
                  names: Sequence[str]) -> Chart:
    """The headline numbers with their 95% intervals: a difference inside the bars is not a difference."""
    s = interval_series("this run", names, metrics, intervals, color="#1a73e8", error_color="#333",
                        text=[f"n={iv.n}" if (iv := intervals.get(n)) else "" for n in names])
    # 0 to 1.05 for rates, so bars compare across runs; the data's own range for anything outside.
    rates = all(v is None or 0 <= v <= 1 for v in s.y)
    return Chart("headline metrics with 95% intervals", list(names), [s], y_range=(0.0, 1.05) if rates else None)


def metric_at_k(metrics: dict[str, float | None], intervals: Mapping[str, MetricInterval] | None = None) -> Panels:
    """One small chart per family (its value at each cutoff k with 95% intervals), on the same 0-1 axis: seven
    lines with their intervals in one plot would cover each other."""
    parsed = [MetricName.try_parse(n) for n in metrics]
    ks = sorted({p.k for p in parsed if p is not None and p.k is not None})
    panels = []
    for f in at_k_families():
        names = [f"{f}@{k}" for k in ks]
        if any(metrics.get(n) is not None for n in names):
            panels.append(Chart(f"{f}@k (95% intervals)", [float(k) for k in ks],
                                [interval_series(f, names, metrics, intervals or {}, kind="line")],
                                y_range=(0.0, 1.05), x_title="k", numeric_x=True))
    return Panels(panels, columns=4)


def tag_bars(by_tag: dict[str, dict[str, float | None]], names: list[str],
             intervals: Mapping[str, Mapping[str, MetricInterval]] | None = None) -> Chart:
    """Each tag's metrics with their 95% intervals; a tag's label carries its n (questions), as does each hover."""
    # A tag none of whose questions measure these metrics (refusal questions only) would be an empty slot.
    tags = [t for t in sorted(by_tag) if any(by_tag[t].get(n) is not None for n in names)]
    left_out = sorted(set(by_tag) - set(tags))
    intervals = intervals or {}
    series = [interval_series(n, tags, {t: by_tag[t].get(n) for t in tags},
                              {t: iv for t in tags if (iv := intervals.get(t, {}).get(n)) is not None})
              for n in names]
    labels = [f"{t} (n={_tag_n(intervals.get(t, {}), names)})" for t in tags]
    title = "by tag (95% intervals)" if intervals else "by tag"
    if left_out:
        title += f"; not shown, no question measures them: {', '.join(left_out)}"
    return Chart(title, labels, series, y_range=(0.0, 1.05))


def _tag_n(intervals: Mapping[str, MetricInterval], names: list[str]) -> str:
    """The tag's questions behind the shown metrics: one n when they agree, each one's otherwise."""
    ns = list(dict.fromkeys(str(iv.n) for n in names if (iv := intervals.get(n)) is not None))
    return "/".join(ns) or "—"


def decomposition_bars(metrics: dict[str, float | None], mock: dict[str, dict[str, float | None]],
                       intervals: Mapping[str, MetricInterval] | None = None) -> Chart:
    modes = [m for m in ("oracle", "e2e", "noretrieval") if f"{m}.correctness" in metrics]
    series = [interval_series("model", [f"{m}.correctness" for m in modes], metrics, intervals or {},
                              error_color="#333")]
    if mock:
        series.append(Series("mock ceiling", [mock.get(m, {}).get("correctness") for m in modes]))
    return Chart("correctness by context mode", modes, series, y_range=(0.0, 1.05))


def position_bars(position: RankAnalysis) -> Chart:
    """Each rank's correctness with its 95% interval (a report from before intervals has none) and n questions."""
    rows = position.by_rank
    ranks = list(rows)
    return Chart("correctness by the rank of the relevant passage in the prompt (95% intervals)", ranks,
                 [Series("correctness", [rows[r].correctness for r in ranks], [rows[r].low for r in ranks],
                         [rows[r].high for r in ranks], error_color="#333",
                         text=[f"n={rows[r].n}" for r in ranks],
                         hover=[f"n={rows[r].n} questions, {rows[r].method}" for r in ranks])],
                 y_range=(0.0, 1.05))


def position_curve(points: Sequence[Any]) -> Chart:
    """Correctness by the relevant passage's position (tier=position) with each point's 95% interval, and the
    mock ceiling on the same prompts as a dashed line. `points` are the report's PositionPoint rows."""
    x = [float(p.position) for p in points]
    series = [Series("model", [p.correctness for p in points], [p.low for p in points], [p.high for p in points],
                     kind="line", hover=[f"n={p.n} ({p.method})" for p in points])]
    if any(p.mock is not None for p in points):
        series.append(Series("mock ceiling", [p.mock for p in points], kind="line", dash=True))
    return Chart("correctness by the position of the relevant passage", x, series, y_range=(0.0, 1.05),
                 x_title="position in the prompt (1 = first)", numeric_x=True)
