"""Score separation: how well a cutoff on a score would split relevant from irrelevant chunks."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypedDict

import numpy as np
from pydantic import BaseModel

from nomad_eval.base.errors import NomadError

# Which pairs a row's distribution is over. Raw cosine, with the run's own embedder: every answerable question
# against every chunk of the corpus (the search pool is cut at `threshold`, so it cannot calibrate it). Final
# score only exists for what the pipeline reranked, and a custom pipeline has no embedder: the candidate pool.
EVERY_CHUNK = "every chunk"
CANDIDATE_POOL = "candidate pool"

# A score is kept to 5 decimals, as scores.json has always kept it: bin k of a Histogram holds the values that
# round to k / SCALE.
SCALE = 100_000
# No similarity an embedder or a reranker gives comes near this; a score past it (or infinite) is a damaged stored
# vector's, which would otherwise overflow the bins (or ask for petabytes of them).
LIMIT = 1e6


class StoredHistogram(TypedDict):
    """A Histogram as scores.json stores it: each rounded value that occurs, ascending, and how often."""

    values: list[float]
    counts: list[int]


class Scores(TypedDict):
    """scores.json: each score's relevant and irrelevant sides, and which pairs each score is over."""

    raw: dict[str, StoredHistogram]          # "relevant", "irrelevant"
    final: dict[str, StoredHistogram]
    population: dict[str, str]               # "raw", "final" -> EVERY_CHUNK or CANDIDATE_POOL


def sides(scores: Scores, key: str) -> dict[str, StoredHistogram]:
    """The two sides of the score `key` ("raw" or "final")."""
    return scores["raw"] if key == "raw" else scores["final"]


@dataclass
class Histogram:
    """A distribution as counts of its values rounded to 5 decimals (numpy's rounding).

    Every figure of the separation table comes from the counts exactly: n, min, max, mean and the quantiles are
    those of the rounded values, the same as listing them one by one. Memory and scores.json grow with the
    distinct rounded values (at most 200,001 for a cosine), never with the number of pairs (questions x chunks).
    """

    lo: int = 0  # the bin (value * SCALE) of counts[0]
    counts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    @classmethod
    def of(cls, values: Sequence[float] | np.ndarray) -> Histogram:
        h = cls()
        h.add(np.asarray(values, dtype=np.float64))
        return h

    def __len__(self) -> int:
        return int(self.counts.sum())

    def add(self, block: np.ndarray) -> None:
        """Count a block of values, skipping its NaN entries (the caller's way to leave pairs out in place)."""
        wild = np.abs(np.asarray(block, dtype=np.float64)) > LIMIT  # NaN compares False: left out below
        if wild.any():
            bad = float(np.asarray(block, dtype=np.float64).ravel()[np.flatnonzero(wild.ravel())[0]])
            raise NomadError(f"a score of {bad!r} is no similarity (a stored vector is damaged): the score "
                             "separation cannot count it; run tier=corpus action=status to check the store", 2)
        x = np.multiply(block, float(SCALE), dtype=np.float64).ravel()
        np.rint(x, out=x)  # np.round(v, 5) is rint(v * 1e5) / 1e5
        k = x[~np.isnan(x)].astype(np.int64)
        if k.size == 0:
            return
        lo, hi = int(k.min()), int(k.max()) + 1
        if self.counts.size:
            lo, hi = min(lo, self.lo), max(hi, self.lo + self.counts.size)
        counts = np.bincount(k - lo, minlength=hi - lo)
        counts[self.lo - lo:self.lo - lo + self.counts.size] += self.counts
        self.lo, self.counts = lo, counts

    def bins(self) -> np.ndarray:
        """Each bin's value: the rounded value it counts."""
        return (self.lo + np.arange(self.counts.size)) / SCALE

    def _bin(self, rank: int) -> int:
        """The bin of the rank-th smallest value (0-based)."""
        return self.lo + int(np.searchsorted(np.cumsum(self.counts), rank, side="right"))

    def quantiles(self, qs: Sequence[float]) -> list[float]:
        """numpy's default quantile: linear between the two closest ranks."""
        n, out = len(self), []
        for q in qs:
            h = (n - 1) * q
            below = int(h)
            a, b = self._bin(below) / SCALE, self._bin(min(below + 1, n - 1)) / SCALE
            out.append(a + (h - below) * (b - a))
        return out

    def summary(self) -> tuple[float, float, float]:
        """The exact min, max and mean of the rounded values."""
        kept = np.flatnonzero(self.counts)
        total = int(np.dot(np.arange(self.lo, self.lo + self.counts.size, dtype=np.int64), self.counts))
        return (self.lo + int(kept[0])) / SCALE, (self.lo + int(kept[-1])) / SCALE, total / len(self) / SCALE

    def to_json(self) -> StoredHistogram:
        """The form scores.json stores: each rounded value that occurs, ascending, and how often."""
        kept = np.flatnonzero(self.counts)
        return StoredHistogram(values=((self.lo + kept) / SCALE).tolist(), counts=self.counts[kept].tolist())

    @classmethod
    def from_json(cls, d: StoredHistogram) -> Histogram:
        k = np.rint(np.asarray(d["values"], dtype=np.float64) * SCALE).astype(np.int64)
        counts = np.asarray(d["counts"], dtype=np.int64)
        if k.shape != counts.shape:
            raise ValueError(f"a histogram of {k.size} values carries {counts.size} counts")
        h = cls()
        if k.size:
            h.lo, h.counts = int(k.min()), np.bincount(k - k.min(), weights=counts).astype(np.int64)
        return h


def distribution(stored: StoredHistogram) -> Histogram:
    """One side's values as scores.json stores them."""
    return Histogram.from_json(stored)


def rounded(values: Histogram | Sequence[float] | np.ndarray) -> StoredHistogram:
    """A distribution as scores.json stores it: its Histogram's counts."""
    return (values if isinstance(values, Histogram) else Histogram.of(values)).to_json()


class SeparationRow(BaseModel):
    score: str          # "raw cosine (every chunk)", "final score (candidate pool)", ...: the score and its pairs
    flag: str           # the config key this row calibrates
    label: str          # "relevant" or "irrelevant"
    count: int          # (question, chunk) pairs
    min: float | None
    p10: float | None
    median: float | None
    p90: float | None
    max: float | None
    mean: float | None


def separation_row(score: str, flag: str, label: str, values: Histogram) -> SeparationRow:
    if len(values) == 0:
        return SeparationRow(score=score, flag=flag, label=label, count=0, min=None, p10=None, median=None,
                             p90=None, max=None, mean=None)
    p10, median, p90 = values.quantiles([0.1, 0.5, 0.9])
    low, high, mean = values.summary()
    return SeparationRow(score=score, flag=flag, label=label, count=len(values), min=low, p10=p10, median=median,
                         p90=p90, max=high, mean=mean)
