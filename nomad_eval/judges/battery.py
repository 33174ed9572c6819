"""The bias battery: does the judge's verdict move with things that must not move it?

Each check judges a labelled example again with one thing changed that the rubric says is irrelevant:

- order flip: the same passages in the other order (position bias; Zheng et al. 2023 found GPT-4 about 65%
  order-consistent). An example with one passage gets a passage of another example beside it, so it has an order
  to change; both orders carry the same passages, so only the order differs between the two verdicts.
- verbosity shift: the answer with neutral, claim-free sentences appended (length bias). Padding adds no claim
  and answers nothing new, so neither faithfulness nor relevance should change.
- abstention (faithfulness only): the answer replaced by a decline, which the rubric says is always faithful.

A missing verdict (unparseable, or refused by the judge's server) is left out of a pairwise figure (there is
nothing to compare) and counted in `unparseable`; in the abstention check it counts as not faithful, as a miss
does in agreement.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NotRequired, TypedDict

from nomad_eval.judges.agreement import FigureJson, Verdict, mean_shift, proportion

PADDING = ("I hope this helps.", "Let me know if you would like me to go over any part of this again.",
           "Thank you for your question, and feel free to ask another one.")
DECLINES = ("I do not have that information.", "I don't know: the passages I was given do not say.",
            "The information provided does not answer this question.",
            "I'm sorry, I can't answer that from what I have.")

# question, passages, answer -> verdict (None: unparseable or refused by the judge's server)
Ask = Callable[[str, list[str], str], Verdict]


@dataclass(frozen=True)
class Example:
    id: str
    question: str
    chunks: list[str]
    answer: str
    verdict: Verdict  # the calibration's own verdict on the example as labelled


class BatteryRow(TypedDict):
    """One example's verdicts: as labelled, in both passage orders, padded, and (faithfulness) declined."""

    id: str
    verdict: Verdict
    order: list[Verdict]
    added_passage: bool               # a single-passage example given a second passage to reorder
    padded: Verdict
    decline: NotRequired[str]
    decline_verdict: NotRequired[Verdict]


class BatteryFigures(TypedDict):
    """The battery's figures, as a calibration stores them under "battery"."""

    size: int
    calls: int
    unparseable: int
    added_passage: int
    order_flip: FigureJson
    verbosity_shift: FigureJson
    abstention_faithful: NotRequired[FigureJson]


def sample(n: int, size: int | None, seed: int) -> list[int]:
    """Indices of the examples the battery runs on: all of them, or a seeded random subset of `size`."""
    if size is None or size >= n:
        return list(range(n))
    return sorted(random.Random(seed).sample(range(n), size))


def two_orders(chunks: list[str], distractor: str) -> tuple[list[str], list[str]]:
    shown = chunks if len(chunks) > 1 else [*chunks, distractor]
    return shown, shown[::-1]


def padded(answer: str) -> str:
    return f"{answer.rstrip()} {' '.join(PADDING)}"


def run(examples: Sequence[Example], pool: Sequence[str], ask: Ask, scale: list[int], abstention: bool,
        seed: int, resamples: int) -> tuple[BatteryFigures, list[BatteryRow]]:
    """The battery's figures (each with n and a 95% interval) and one row per example with every verdict.

    `pool`: passages to draw a second one from for single-passage examples (seeded); `abstention`: run the
    decline check (the faithfulness rubric's rule).
    """
    rng = random.Random(seed)
    top = max(scale)
    rows: list[BatteryRow] = []
    asked: list[Verdict] = []  # every verdict the battery asked for: its cost and its unparseable count

    def call(question: str, passages: list[str], answer: str) -> Verdict:
        asked.append(ask(question, passages, answer))
        return asked[-1]

    for i, ex in enumerate(examples):
        others = [p for p in pool if p not in ex.chunks]
        first, second = two_orders(ex.chunks, rng.choice(others) if others else "")
        # With several passages the first order is the example as labelled: its verdict is already known.
        as_labelled = first == ex.chunks
        row = BatteryRow(id=ex.id, verdict=ex.verdict,
                         order=[ex.verdict if as_labelled else call(ex.question, first, ex.answer),
                                call(ex.question, second, ex.answer)],
                         added_passage=not as_labelled, padded=call(ex.question, ex.chunks, padded(ex.answer)))
        if abstention:
            decline = DECLINES[i % len(DECLINES)]
            row["decline"], row["decline_verdict"] = decline, call(ex.question, ex.chunks, decline)
        rows.append(row)
    pairs = [r["order"] for r in rows if None not in r["order"]]
    figures = BatteryFigures(
        size=len(rows), calls=len(asked), unparseable=sum(v is None for v in asked),
        added_passage=sum(r["added_passage"] for r in rows),
        order_flip=proportion(sum(a != b for a, b in pairs), len(pairs)).as_dict(),
        verbosity_shift=mean_shift([r["verdict"] for r in rows], [r["padded"] for r in rows], top,
                                   resamples, seed).as_dict())
    if abstention:
        figures["abstention_faithful"] = proportion(sum(r["decline_verdict"] == top for r in rows),
                                                    len(rows)).as_dict()
    return figures, rows
