"""Agreement between a judge and human labels: pure functions."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence


def agreement(human: Sequence[int], judge: Sequence[int]) -> float | None:
    if not human:
        return None
    return sum(h == j for h, j in zip(human, judge, strict=True)) / len(human)


def cohen_kappa(human: Sequence[int], judge: Sequence[int]) -> float | None:
    """Unweighted Cohen's kappa; 1.0 when both raters use a single identical label (no chance to correct for)."""
    n = len(human)
    if n == 0:
        return None
    po = agreement(human, judge)
    ch, cj = Counter(human), Counter(judge)
    pe = sum(ch[k] * cj[k] for k in set(ch) | set(cj)) / (n * n)
    if pe == 1.0:
        return 1.0 if po == 1.0 else 0.0
    return (po - pe) / (1 - pe)  # type: ignore[operator]


def _ranks(xs: Sequence[float]) -> list[float]:
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    ranks = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def spearman(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Pearson correlation of average ranks; None when either side is constant."""
    if len(a) < 2:
        return None
    ra, rb = _ranks(a), _ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb, strict=True))
    va = sum((x - ma) ** 2 for x in ra)
    vb = sum((y - mb) ** 2 for y in rb)
    if va == 0 or vb == 0:
        return None
    return cov / math.sqrt(va * vb)


def flip_rate(repeated: Sequence[Sequence[int | None]]) -> float | None:
    """Share of examples whose parseable verdicts differ across repeated judgements."""
    judged = [[v for v in row if v is not None] for row in repeated]
    judged = [row for row in judged if len(row) >= 2]
    if not judged:
        return None
    return sum(len(set(row)) > 1 for row in judged) / len(judged)
