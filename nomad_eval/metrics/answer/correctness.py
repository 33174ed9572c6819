from __future__ import annotations

from nomad_eval.metrics.answer.patterns import search
from nomad_eval.metrics.registry import MetricSpec, register

SPEC = register(MetricSpec(
    "correctness", "every mustInclude pattern matches the answer and no mustNotInclude pattern does "
    "(answerable goldens only)",
    tier="generation", binary=True, headline=True,
))


def correctness(answer: str, must_include: list[str], must_not_include: list[str]) -> float | None:
    """1.0 or 0.0; None when a pattern hit the match time limit, so it cannot be judged."""
    hits = [search(p, answer) for p in must_include]
    misses = [search(p, answer) for p in must_not_include]
    if None in hits or None in misses:
        return None
    return 1.0 if all(hits) and not any(misses) else 0.0
