"""The charts of report.html, built with plotly from a run's report, cases and scores."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from nomad_eval.metrics.registry import at_k_families
from nomad_eval.report.markdown import fmt_interval
from nomad_eval.report.schema import MetricInterval

COLORS = {"relevant": "#1a73e8", "irrelevant": "#e8710a"}
BINS = 40


def error_bars(values: Sequence[float | None], lows: Sequence[float | None], highs: Sequence[float | None],
               color: str | None = None) -> dict[str, Any] | None:
    """plotly `error_y` drawing each point's [low, high]; None when no point has an interval (an old report).

    Distances go in as float arrays with NaN where a point has none: plotly.js ships them as binary float64
    and skips NaN, while a JSON null would be read as 0 and draw a zero-length bar that looks like certainty.
    """
    def dist(a: float | None, b: float | None) -> float:
        return float("nan") if a is None or b is None else max(a - b, 0.0)

    plus = np.array([dist(h, v) for v, h in zip(values, highs, strict=True)], dtype=np.float64)
    minus = np.array([dist(v, lo) for v, lo in zip(values, lows, strict=True)], dtype=np.float64)
    if np.isnan(plus).all():
        return None
    # Without a colour each bar takes its trace's, which tells overlapping curves' intervals apart.
    return {"type": "data", "symmetric": False, "array": plus, "arrayminus": minus, "visible": True,
            "thickness": 1.5, "width": 5} | ({"color": color} if color else {})


def interval_error_bars(names: Sequence[str], metrics: Mapping[str, float | None],
                        intervals: Mapping[str, MetricInterval], color: str | None = None
                        ) -> tuple[dict[str, Any] | None, list[str]]:
    """Error bars for reported metrics from the report's intervals, and hover text naming interval and n."""
    ivs = [intervals.get(n) for n in names]
    bars = error_bars([metrics.get(n) for n in names], [iv.low if iv else None for iv in ivs],
                      [iv.high if iv else None for iv in ivs], color)
    hover = [f"95% {fmt_interval(iv)}, n={iv.n if iv else '—'}" for iv in ivs]
    return bars, hover


def separation_histograms(scores: dict[str, Any], threshold: float | None, min_final: float | None) -> go.Figure:
    """Relevant vs irrelevant, each as its share of pairs per bin, binned here.

    Shares, because over every chunk the irrelevant pairs outnumber the relevant ones a hundred to one and
    counts would flatten the relevant curve; binned in Python, because the page would otherwise carry every
    one of the (questions x chunks) values.
    """
    pop = scores.get("population") or {}

    fig = make_subplots(rows=1, cols=2, subplot_titles=(f"raw cosine, {pop.get('raw', 'candidate pool')}",
                                                        f"final score, {pop.get('final', 'candidate pool')}"))
    for col, key, flag, line in ((1, "raw", "threshold", threshold), (2, "final", "min_final_score", min_final)):
        # The cutoff's value and the pair counts go under the axis: above it they collide with the title.
        n = " / ".join(f"{len(v):,} {label}" for label, v in scores[key].items())
        cut = "" if line is None else f"dashed: {flag} = {line} · "
        fig.update_xaxes(title_text=f"{cut}{n} pairs", title_font_size=12, row=1, col=col)
        both = [v for values in scores[key].values() for v in values]
        if not both:
            continue
        edges = np.histogram_bin_edges(np.asarray(both, dtype=np.float64), bins=BINS)
        mids, width = (edges[:-1] + edges[1:]) / 2, float(edges[1] - edges[0])
        for label, values in scores[key].items():
            counts, _ = np.histogram(np.asarray(values, dtype=np.float64), bins=edges)
            share = counts / max(len(values), 1)
            fig.add_trace(go.Bar(x=mids, y=share, width=width, name=label, legendgroup=label,
                                 showlegend=col == 1, opacity=0.6, marker_color=COLORS[label],
                                 customdata=counts, hovertemplate="%{x:.3f}: %{customdata} pairs"),
                          row=1, col=col)
        if line is not None:
            fig.add_vline(x=line, line_dash="dash", line_color="#333", row=1, col=col)
    fig.update_layout(barmode="overlay", bargap=0)
    fig.update_yaxes(title_text="share of pairs", row=1, col=1)
    return fig


def headline_bars(metrics: Mapping[str, float | None], intervals: Mapping[str, MetricInterval],
                  names: Sequence[str]) -> go.Figure:
    """The headline numbers with their 95% intervals: a difference inside the bars is not a difference."""
    bars, hover = interval_error_bars(names, metrics, intervals, color="#333")  # dark: readable on the bars
    values = [metrics.get(n) for n in names]
    ns = [f"n={iv.n}" if (iv := intervals.get(n)) else "" for n in names]
    fig = go.Figure(go.Bar(x=list(names), y=values, error_y=bars, text=ns, textposition="inside",
                           insidetextanchor="start", hovertext=hover, marker_color="#1a73e8"))
    fig.update_layout(title="headline metrics with 95% intervals", yaxis_range=_unit_range(values))
    return fig


def _unit_range(values: Sequence[float | None]) -> list[float] | None:
    """0 to 1.05 for rates, so bars compare across runs; plotly's own range for anything outside."""
    return [0, 1.05] if all(v is None or 0 <= v <= 1 for v in values) else None


def metric_at_k(metrics: dict[str, float | None], intervals: Mapping[str, MetricInterval] | None = None
                ) -> go.Figure:
    fams = at_k_families()
    fig = go.Figure()
    for f in fams:
        pts = sorted((int(k.split("@")[1]), k) for k, v in metrics.items() if k.startswith(f + "@") and v is not None)
        if pts:
            names = [p[1] for p in pts]
            bars, hover = interval_error_bars(names, metrics, intervals or {})
            fig.add_trace(go.Scatter(x=[p[0] for p in pts], y=[metrics[n] for n in names], mode="lines+markers",
                                     name=f, error_y=bars, hovertext=hover))
    fig.update_layout(title="metrics by cutoff k (95% intervals)", xaxis_title="k", yaxis_range=[0, 1.05])
    return fig


def tag_bars(by_tag: dict[str, dict[str, float | None]], names: list[str]) -> go.Figure:
    tags = sorted(by_tag)
    fig = go.Figure([go.Bar(x=tags, y=[by_tag[t].get(n) for t in tags], name=n) for n in names])
    fig.update_layout(title="by tag", barmode="group", yaxis_range=[0, 1.05])
    return fig


def decomposition_bars(metrics: dict[str, float | None], mock: dict[str, dict[str, float | None]],
                       intervals: Mapping[str, MetricInterval] | None = None) -> go.Figure:
    modes = [m for m in ("oracle", "e2e", "noretrieval") if f"{m}.correctness" in metrics]
    bars, hover = interval_error_bars([f"{m}.correctness" for m in modes], metrics, intervals or {}, color="#333")
    fig = go.Figure([go.Bar(x=modes, y=[metrics.get(f"{m}.correctness") for m in modes], name="model",
                            error_y=bars, hovertext=hover)])
    if mock:
        fig.add_trace(go.Bar(x=modes, y=[mock.get(m, {}).get("correctness") for m in modes], name="mock ceiling"))
    fig.update_layout(title="correctness by context mode", barmode="group", yaxis_range=[0, 1.05])
    return fig


def position_bars(position: dict[str, Any]) -> go.Figure:
    ranks = list(position["by_rank"])
    fig = go.Figure([go.Bar(x=ranks, y=[position["by_rank"][r]["correctness"] for r in ranks],
                            text=[f"n={position['by_rank'][r]['n']}" for r in ranks])])
    fig.update_layout(title="correctness by the rank of the relevant passage in the prompt", yaxis_range=[0, 1.05])
    return fig


def sweep_curves(rows: list[dict[str, Any]], param: str, metrics: list[str]) -> go.Figure:
    pts = []
    for r in rows:
        try:
            pts.append((float(r[param]), r))
        except (TypeError, ValueError, KeyError):
            continue
    pts.sort(key=lambda p: p[0])
    fig = go.Figure()
    for m in metrics:
        ys = [_num(p[1].get(m)) for p in pts]
        # A summary row carries `<metric>.low` / `.high` when its job reported an interval (report/merge.py).
        bars = error_bars(ys, [_num(p[1].get(f"{m}.low")) for p in pts], [_num(p[1].get(f"{m}.high")) for p in pts])
        fig.add_trace(go.Scatter(x=[p[0] for p in pts], y=ys, mode="lines+markers", name=m, error_y=bars))
    fig.update_layout(title=f"metrics vs {param}" + (" (95% intervals)" if any(t.error_y.array is not None
                                                                               for t in fig.data) else ""),
                      xaxis_title=param)
    return fig


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def matrix_heatmap(rows: list[dict[str, Any]], columns: tuple[str, ...]) -> go.Figure:
    from nomad_eval.metrics.registry import spec_for

    values = [[r.get(c) for c in columns] for r in rows]

    def good(col: str, v: float | None) -> float | None:
        # Colour by goodness, so a low leakage rate is green like a high correctness.
        spec = spec_for(col)
        lower = (spec is not None and spec.direction == "lower") or col == "gap"
        return None if v is None else (1 - v if lower else v)

    z = [[good(c, v) for c, v in zip(columns, row, strict=True)] for row in values]
    fig = go.Figure(go.Heatmap(z=z, x=list(columns), y=[r["model"] for r in rows], colorscale="RdYlGn", zmin=0,
                               zmax=1, text=[[("—" if v is None else f"{v:.2f}") for v in row] for row in values],
                               texttemplate="%{text}", showscale=False))
    fig.update_layout(title="model capability matrix")
    return fig
