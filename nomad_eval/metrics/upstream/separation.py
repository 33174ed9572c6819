"""Upstream NOMAD's score separation: the raw cosines of the chunks each question retrieved, split by whether
the chunk's document is relevant to it, summarised with nearest-rank quantiles, and read as one advice line.

This differs from this project's separation table (metrics/separation.py), which scores every question against
every chunk of the corpus because the retrieved set is already cut at the threshold it is meant to calibrate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Decimal

from pydantic import BaseModel


class Distribution(BaseModel):
    count: int
    min: float
    p10: float
    median: float
    p90: float
    max: float
    mean: float


def describe(scores: Sequence[float]) -> Distribution | None:
    """Upstream's `describeScores`: nearest-rank percentiles (a reported value always occurred); the mean sums the
    sorted values in order. None when there is nothing to describe."""
    if not scores:
        return None
    s = sorted(scores)
    n = len(s)

    def pct(p: int) -> float:
        return s[min(n - 1, max(0, math.ceil(p / 100 * n) - 1))]

    total = 0.0
    for v in s:
        total += v
    return Distribution(count=n, min=s[0], p10=pct(10), median=pct(50), p90=pct(90), max=s[-1], mean=total / n)


def split_scores(cases: Sequence[tuple[Sequence[tuple[str | None, float]], Sequence[str]]]
                 ) -> tuple[list[float], list[float]]:
    """(relevant, irrelevant) scores over every question's retrieved chunks, each given as (document, raw
    cosine). A refusal question has no relevant document, so everything it retrieved is irrelevant."""
    relevant: list[float] = []
    irrelevant: list[float] = []
    for chunks, rel in cases:
        wanted = set(rel)
        for doc, score in chunks:
            (relevant if doc and doc in wanted else irrelevant).append(score)
    return relevant, irrelevant


def fixed3(x: float) -> str:
    """A number to three decimals the way JavaScript's toFixed(3) writes it (halves of the exact binary value
    away from zero), so the advice line reads as upstream prints it."""
    return str(Decimal(x).quantize(Decimal("0.001"), rounding=ROUND_HALF_UP))


def advice(rel: Distribution | None, irr: Distribution | None) -> list[str]:
    """Upstream's reading of the two distributions: a clean split (and where a threshold goes) or an overlap."""
    if rel is None or irr is None:
        return []
    if rel.p10 > irr.p90:
        return [f"Clean separation: a threshold between {fixed3(irr.p90)} and {fixed3(rel.p10)} splits them."]
    return [f"Overlapping: relevant p10 ({fixed3(rel.p10)}) sits below irrelevant p90 ({fixed3(irr.p90)}).",
            "No cutoff separates these cleanly — the retriever needs work, not the threshold."]
