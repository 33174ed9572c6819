"""How a judge mean and its prediction-powered correction read in every report view."""

from __future__ import annotations

from typing import Any


def describe(metric: str, r: dict[str, Any]) -> str:
    """One line: the judge mean, and either the corrected estimate with its interval and n, or why there is none."""
    mean = "none" if r["judge_mean"] is None else f"{r['judge_mean']:.3f}"
    head = f"{metric}: judge mean {mean}"
    if r["status"] != "corrected":
        return f"{head}; {r['reason']}"
    nulls = f"; {r['null_verdicts']} null verdict(s) scored {r['null_score']}" if r["null_verdicts"] else ""
    return (f"{head}; corrected by {r['n']} of {r['N']} questions labelled: {r['estimate']:.3f} "
            f"[{r['low']:.3f}, {r['high']:.3f}] ({r['method']}, {r['level']:.0%}); the judge disagreed with "
            f"{r['disagreements']} label(s){nulls}")


def corrected_lines(judge_corrected: dict[str, dict[str, Any]]) -> list[str]:
    return [describe(k, v) for k, v in judge_corrected.items()]
