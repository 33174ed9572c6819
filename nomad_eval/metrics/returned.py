"""How many chunks came back for an answerable question: descriptive, so precision's denominator (k, whatever
came back) can be read beside it. Never a regression and never a gate."""

from __future__ import annotations

from nomad_eval.metrics.registry import MetricSpec, register

SPEC = register(MetricSpec(
    "returned", "chunks the pipeline returned for an answerable question (descriptive, not gated)",
    unit="chunks", tolerance_kind="rel", gated=False,
))


def returned(chunks: int) -> float:
    return float(chunks)
