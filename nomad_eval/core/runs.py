"""Ranked lists and their scores: when scores reproduce a list's order, and scores that always do.

trec_eval (and every tool reading a TREC run) ignores the order a list is written in: it sorts by score
descending, ties by id descending. A pipeline's list means what it says only if its scores agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise


def order_consistent(items: Sequence[tuple[str, float]]) -> bool:
    """True when sorting `(id, score)` the trec_eval way (score descending, ties by id descending) keeps the
    given order. Equal (score, id) pairs and NaN scores have no defined place, so they are not consistent."""
    for (a_id, a_score), (b_id, b_score) in pairwise(items):
        if not (a_score > b_score or (a_score == b_score and a_id > b_id)):
            return False
    return True


def scores_from_order(ids: Sequence[str]) -> list[float]:
    """Strictly decreasing scores (n, n-1, ..., 1) under which any ordering of `ids` is its own trec order."""
    n = len(ids)
    return [float(n - i) for i in range(n)]
