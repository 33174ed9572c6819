from __future__ import annotations

import re

from nomad_eval.metrics.registry import MetricSpec, register

SPEC = register(MetricSpec("think_leak_rate", "share of answers that still hold a reasoning tag after cleaning",
                           direction="lower", tier="generation", binary=True))

_TAG = re.compile(r"</?think>", re.IGNORECASE)


def think_leaked(cleaned_answer: str) -> bool:
    return bool(_TAG.search(cleaned_answer))
