"""The charts of report.html, built with plotly from a run's report, cases and scores."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

COLORS = {"relevant": "#1a73e8", "irrelevant": "#e8710a"}


def separation_histograms(scores: dict[str, dict[str, list[float]]], threshold: float | None,
                          min_final: float | None) -> go.Figure:
    fig = make_subplots(rows=1, cols=2, subplot_titles=("raw cosine (threshold)", "final score (min_final_score)"))
    for col, key, line in ((1, "raw", threshold), (2, "final", min_final)):
        for label, values in scores[key].items():
            fig.add_trace(go.Histogram(x=values, name=label, legendgroup=label, showlegend=col == 1, opacity=0.6,
                                       marker_color=COLORS[label], nbinsx=40), row=1, col=col)
        if line is not None:
            fig.add_vline(x=line, line_dash="dash", line_color="#333", row=1, col=col,
                          annotation_text=f"{line}", annotation_position="top")
    fig.update_layout(barmode="overlay")
    return fig


def metric_at_k(metrics: dict[str, float | None]) -> go.Figure:
    fams = ("recall", "hit", "mrr", "ndcg", "chunk_precision")
    fig = go.Figure()
    for f in fams:
        pts = sorted((int(k.split("@")[1]), v) for k, v in metrics.items() if k.startswith(f + "@") and v is not None)
        if pts:
            fig.add_trace(go.Scatter(x=[p[0] for p in pts], y=[p[1] for p in pts], mode="lines+markers", name=f))
    fig.update_layout(title="metrics by cutoff k", xaxis_title="k", yaxis_range=[0, 1.05])
    return fig


def tag_bars(by_tag: dict[str, dict[str, float | None]], names: list[str]) -> go.Figure:
    tags = sorted(by_tag)
    fig = go.Figure([go.Bar(x=tags, y=[by_tag[t].get(n) for t in tags], name=n) for n in names])
    fig.update_layout(title="by tag", barmode="group", yaxis_range=[0, 1.05])
    return fig


def decomposition_bars(metrics: dict[str, float | None], mock: dict[str, dict[str, float | None]]) -> go.Figure:
    modes = [m for m in ("oracle", "e2e", "noretrieval") if f"{m}.correctness" in metrics]
    fig = go.Figure([go.Bar(x=modes, y=[metrics.get(f"{m}.correctness") for m in modes], name="model")])
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
    fig = go.Figure([go.Scatter(x=[p[0] for p in pts], y=[p[1].get(m) for p in pts], mode="lines+markers", name=m)
                     for m in metrics])
    fig.update_layout(title=f"metrics vs {param}", xaxis_title=param)
    return fig


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
