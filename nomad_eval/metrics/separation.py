"""Score separation: how well a cutoff on a score would split relevant from irrelevant chunks."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import BaseModel

# Which pairs a row's distribution is over. Raw cosine, with the run's own embedder: every answerable question
# against every chunk of the corpus (the search pool is cut at `threshold`, so it cannot calibrate it). Final
# score only exists for what the pipeline reranked, and a custom pipeline has no embedder: the candidate pool.
EVERY_CHUNK = "every chunk"
CANDIDATE_POOL = "candidate pool"

# Up to this many pairs a distribution is kept value by value (about 90 bytes a pair at peak, in memory and in
# scores.json). Beyond it, questions x chunks outgrows memory (10k x 100k is 10^9 pairs), so it is counted into a
# fixed histogram instead: a cosine lies in [-1, 1], and 4,000 bins of 0.0005 put every quantile within about half
# a bin of its exact value, well inside the steps a threshold is tuned in (0.3, 0.35, ...).
EXACT_PAIRS = 2_000_000
HIST_LO, HIST_HI, HIST_BINS = -1.0, 1.0, 4000


@dataclass
class Histogram:
    """A distribution too large to keep, as counts over fixed bins plus its exact n, min, max and sum.

    Bin i is [lo + i * width, lo + (i + 1) * width), the last one closed, as numpy.histogram counts them.
    """

    counts: np.ndarray = field(default_factory=lambda: np.zeros(HIST_BINS, dtype=np.int64))
    n: int = 0
    min: float = math.inf
    max: float = -math.inf
    sum: float = 0.0
    lo: float = HIST_LO
    hi: float = HIST_HI

    @property
    def width(self) -> float:
        return (self.hi - self.lo) / len(self.counts)

    def __len__(self) -> int:
        return self.n

    def add(self, block: np.ndarray) -> None:
        """Count a block of values, skipping its NaN entries (the caller's way to leave pairs out in place).

        The block is clipped in place: a float32 cosine of unit vectors can land a hair outside [-1, 1], and
        numpy.histogram drops what its range does not hold. Min and max are taken before, so they stay exact.
        """
        keep = ~np.isnan(block)
        n = int(np.count_nonzero(keep))
        if n == 0:
            return
        self.n += n
        # A float64 accumulator: a billion float32 terms would lose the mean's digits.
        self.sum += float(np.add.reduce(block, axis=None, where=keep, dtype=np.float64))
        # fmin/fmax skip NaN without the copy nanmin's fallback paths may make.
        self.min = min(self.min, float(np.fmin.reduce(block, axis=None)))
        self.max = max(self.max, float(np.fmax.reduce(block, axis=None)))
        np.clip(block, self.lo, self.hi, out=block)
        # numpy.histogram works through a large input 65,536 values at a time, and NaN fails its range test.
        self.counts += np.histogram(block, bins=len(self.counts), range=(self.lo, self.hi))[0]

    def quantiles(self, qs: Sequence[float]) -> list[float]:
        """numpy's default quantile (linear between the closest ranks), with each rank's value read as its bin's
        middle: within about half a bin of the exact figure, and never outside the exact min and max."""
        cum = np.cumsum(self.counts)
        mids = self.lo + (np.arange(len(self.counts)) + 0.5) * self.width

        def at(rank: int) -> float:
            v = float(mids[int(np.searchsorted(cum, rank, side="right"))])
            return min(max(v, self.min), self.max)

        out = []
        for q in qs:
            h = (self.n - 1) * q
            below = math.floor(h)
            a, b = at(below), at(min(below + 1, self.n - 1))
            out.append(round(a + (h - below) * (b - a), 5))  # 5 decimals, as scores.json keeps a value
        return out

    def to_json(self) -> dict[str, Any]:
        """The form scores.json stores: a few kilobytes whatever the number of pairs."""
        return {"histogram": {"lo": self.lo, "hi": self.hi, "bins": len(self.counts)},
                "counts": self.counts.tolist(), "n": self.n, "min": round(self.min, 5), "max": round(self.max, 5),
                "sum": self.sum}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Histogram:
        spec = d["histogram"]
        counts = np.asarray(d["counts"], dtype=np.int64)
        if len(counts) != int(spec["bins"]):
            raise ValueError(f"a histogram of {spec['bins']} bins carries {len(counts)} counts")
        return cls(counts=counts, n=int(d["n"]), min=float(d["min"]), max=float(d["max"]), sum=float(d["sum"]),
                   lo=float(spec["lo"]), hi=float(spec["hi"]))


Distribution = Sequence[float] | np.ndarray | Histogram


def distribution(stored: list[float] | dict[str, Any]) -> list[float] | Histogram:
    """One side's values as scores.json stores them: a list of floats, or a histogram's dict beyond EXACT_PAIRS."""
    return Histogram.from_json(stored) if isinstance(stored, dict) else stored


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


def binned_note(width: float) -> str:
    """What a row's score says when its figures come from a histogram, wherever the row is shown."""
    return f"histogram of bin width {width:g}"


def separation_row(score: str, flag: str, label: str, values: Distribution) -> SeparationRow:
    if len(values) == 0:
        return SeparationRow(score=score, flag=flag, label=label, count=0, min=None, p10=None, median=None,
                             p90=None, max=None, mean=None)
    if isinstance(values, Histogram):
        # Quantiles to the bin width; count, min, max and mean are exact. The score says so, so the markdown and
        # console tables, which print it, say so too.
        p10, median, p90 = values.quantiles([0.1, 0.5, 0.9])
        return SeparationRow(score=f"{score}, {binned_note(values.width)}", flag=flag, label=label, count=values.n,
                             min=values.min, p10=p10, median=median, p90=p90, max=values.max,
                             mean=values.sum / values.n)
    # numpy: an every-chunk distribution holds questions x chunks values. Its default quantile is linear
    # interpolation between closest ranks, the definition this table has always used.
    s = np.sort(np.asarray(values, dtype=np.float64))
    p10, median, p90 = (float(x) for x in np.quantile(s, [0.1, 0.5, 0.9]))
    return SeparationRow(score=score, flag=flag, label=label, count=int(s.size), min=float(s[0]), p10=p10,
                         median=median, p90=p90, max=float(s[-1]), mean=float(s.mean()))


def rounded(values: np.ndarray | Histogram) -> list[float] | dict[str, Any]:
    """A distribution as scores.json stores it: plain floats at 5 decimals, or a histogram's small dict."""
    if isinstance(values, Histogram):
        return values.to_json()
    out: list[float] = np.round(np.asarray(values, dtype=np.float64), 5).tolist()
    return out
