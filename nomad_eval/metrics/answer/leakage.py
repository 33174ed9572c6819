"""Narrating retrieval ("according to the context", "Context 2") instead of answering."""

from __future__ import annotations

import re

from nomad_eval.metrics.registry import MetricSpec, register

SPEC = register(MetricSpec("leakage_rate", "share of answers that narrate the retrieval", direction="lower",
                           tier="generation", binary=True, headline=True))

_LEAK = re.compile(
    r"according to the (?:provided |given )?(?:context|passages?|documents?|sources?|material|reference)"
    r"|\b(?:context|passage|document|source) \d+\b"
    r"|\bthe knowledge base\b"
    r"|\b(?:based on|from|in) the (?:provided|given|above|supplied) "
    r"(?:context|information|passages?|documents?|text|material)"
    r"|\bthe (?:context|passages?|reference material) (?:says|states|mentions|provided|indicates|does not)",
    re.IGNORECASE,
)


def leaked(answer: str) -> bool:
    return bool(_LEAK.search(answer))
