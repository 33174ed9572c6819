"""What every ranking kernel shares: relevance read as trec_eval reads it, and the @k window.

Relevance is graded (`{doc: grade}`); a grade > 0 is relevant (trec_eval's default relevance_level 1). A plain set
of relevant ids is accepted too and read as grade 1 for each.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from typing import TypeVar

Relevance = Mapping[str, int] | Set[str]
T = TypeVar("T")


def grades(rels: Relevance) -> Mapping[str, int]:
    return rels if isinstance(rels, Mapping) else dict.fromkeys(rels, 1)


def relevant(rels: Relevance) -> Set[str]:
    """The ids that count as relevant: grade > 0. A set is used as it is (kernels run per query and cutoff)."""
    if type(rels) is set or type(rels) is frozenset:  # the common case, without the ABC check (~0.3 us a call)
        return rels
    if isinstance(rels, Mapping):
        return {d for d, g in rels.items() if g > 0}
    return rels


def window(ranked: Sequence[T], k: int | None) -> Sequence[T]:
    """The first k of the ranking (all of it when k is None); a cut-off below 1 is refused, never read as empty."""
    if k is None:
        return ranked
    if type(k) is not int or k < 1:  # bool is a subclass of int; `type` refuses it and is the cheaper test
        raise ValueError(f"cut-off k={k!r} must be an integer of at least 1")
    return ranked[:k]
