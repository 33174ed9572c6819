"""What the context budget cost: history left out, passages dropped, and how far the token estimate was off."""

from __future__ import annotations

from nomad_eval.metrics.registry import MetricSpec, register

HISTORY = register(MetricSpec("history_elided_rate", "share of prompts in which older history was left out",
                              direction="lower", tier="generation", binary=True))
DROPPED = register(MetricSpec("chunks_dropped_rate", "share of prompts in which passages did not fit",
                              direction="lower", tier="generation", binary=True))
TOKEN_ERROR = register(MetricSpec(
    "prompt_token_error", "mean |estimated - real| / real prompt tokens", direction="lower",
    tolerance=0.25, tolerance_kind="rel", unit="ratio", tier="generation",
))


def token_error(estimated: int, real: int | None) -> float | None:
    if not real:
        return None
    return abs(estimated - real) / real
