"""Score separation: how well a cutoff on a score would split relevant from irrelevant chunks."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel

# Which pairs a row's distribution is over. Raw cosine, with the run's own embedder: every answerable question
# against every chunk of the corpus (the search pool is cut at `threshold`, so it cannot calibrate it). Final
# score only exists for what the pipeline reranked, and a custom pipeline has no embedder: the candidate pool.
EVERY_CHUNK = "every chunk"
CANDIDATE_POOL = "candidate pool"


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


def separation_row(score: str, flag: str, label: str, values: Sequence[float] | np.ndarray) -> SeparationRow:
    if len(values) == 0:
        return SeparationRow(score=score, flag=flag, label=label, count=0, min=None, p10=None, median=None,
                             p90=None, max=None, mean=None)
    # numpy: an every-chunk distribution holds questions x chunks values. Its default quantile is linear
    # interpolation between closest ranks, the definition this table has always used.
    s = np.sort(np.asarray(values, dtype=np.float64))
    p10, median, p90 = (float(x) for x in np.quantile(s, [0.1, 0.5, 0.9]))
    return SeparationRow(score=score, flag=flag, label=label, count=int(s.size), min=float(s[0]), p10=p10,
                         median=median, p90=p90, max=float(s[-1]), mean=float(s.mean()))


def rounded(values: np.ndarray) -> list[float]:
    """A distribution as scores.json stores it: plain floats at 5 decimals."""
    out: list[float] = np.round(np.asarray(values, dtype=np.float64), 5).tolist()
    return out
