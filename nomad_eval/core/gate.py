"""Absolute floors: a run below one fails whatever the baseline says."""

from __future__ import annotations

from collections.abc import Mapping

from nomad_eval.metrics.registry import spec_for


def gate_failures(metrics: Mapping[str, float | None], floors: Mapping[str, float]) -> list[str]:
    out = []
    for name, floor in floors.items():
        value = metrics.get(name)
        spec = spec_for(name)
        if name not in metrics or spec is None:
            out.append(f"gate names {name!r}, which this run does not report")
            continue
        if value is None:
            out.append(f"{name} could not be measured in this run (floor {floor})")
            continue
        below = value < floor if spec.direction == "higher" else value > floor
        if below:
            ranking = spec.tier == "retrieval" and spec.kernel is not None
            why = " — no prompt work fixes missing context" if ranking else ""
            out.append(f"{name} = {value:.4f} is past its floor {floor}{why}")
    return out
