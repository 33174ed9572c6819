"""Numbers the answer states that the injected context does not: the cheapest hallucination signal."""

from __future__ import annotations

import re

from nomad_eval.metrics.registry import MetricSpec, register

SPEC = register(MetricSpec(
    "groundedness", "share of the answer's numbers above 10 that appear in the injected context "
    "(null when the answer states none)",
    tier="generation",
))

_NUM = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\w.])\d+(?:\.\d+)?")


def numbers(text: str) -> set[float]:
    return {float(m.replace(",", "")) for m in _NUM.findall(text)}


def groundedness(answer: str, context: str) -> float | None:
    stated = {n for n in numbers(answer) if n > 10}
    if not stated:
        return None
    known = numbers(context)
    return sum(1 for n in stated if n in known) / len(stated)
