"""Score separation: how well a cutoff on a score would split relevant from irrelevant chunks."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel


class SeparationRow(BaseModel):
    score: str          # "raw cosine" or "final score"
    flag: str           # the config key this row calibrates
    label: str          # "relevant" or "irrelevant"
    count: int
    min: float | None
    p10: float | None
    median: float | None
    p90: float | None
    max: float | None
    mean: float | None


def _quantile(sorted_vals: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), written out to stay dependency-free."""
    pos = (len(sorted_vals) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo)


def separation_row(score: str, flag: str, label: str, values: Sequence[float]) -> SeparationRow:
    if not values:
        return SeparationRow(score=score, flag=flag, label=label, count=0, min=None, p10=None, median=None,
                             p90=None, max=None, mean=None)
    s = sorted(values)
    return SeparationRow(
        score=score, flag=flag, label=label, count=len(s), min=s[0], p10=_quantile(s, 0.1),
        median=_quantile(s, 0.5), p90=_quantile(s, 0.9), max=s[-1], mean=sum(s) / len(s),
    )
