"""Refusal detection and refusal correctness: decline what the corpus cannot answer, never hedge otherwise."""

from __future__ import annotations

import re

from nomad_eval.metrics.registry import MetricSpec, register

SPEC = register(MetricSpec(
    "refusal_correctness", "declines on refusal goldens, answers (does not decline) on answerable ones",
    tier="generation", binary=True, headline=True,
))

# Each pattern is a statement about the speaker's knowledge or ability, so instructions that merely
# contain a negation ("do not cover the burn", "don't have the victim stand") do not count as refusals.
_REFUSALS = [
    r"\bI (?:do not|don't|did not|didn't) have (?:any |enough |the |that |this )?"
    r"(?:information|details|data|knowledge)",
    r"\bI (?:do not|don't) know\b",
    r"\bI(?:'m| am) (?:not able|unable) to (?:answer|find|help|provide)",
    r"\bI (?:cannot|can't|can not) (?:answer|find|help with|provide|say)",
    r"\b(?:there is|there's|I have|I found) no (?:information|mention|data|details)\b",
    r"\bno information (?:about|on|regarding)\b",
    r"\b(?:is|are) not (?:covered|mentioned|included|addressed) in (?:the|my|this|these|available)",
    r"\bI(?:'m| am) not sure\b",
    r"\bunable to (?:answer|find)\b",
    r"\b(?:outside|beyond) (?:the scope|what I)",
]
_REFUSAL = re.compile("|".join(f"(?:{p})" for p in _REFUSALS), re.IGNORECASE)


def is_refusal(answer: str) -> bool:
    return bool(_REFUSAL.search(answer)) or not answer.strip()


def refusal_correctness(answer: str, expect_refusal: bool) -> float:
    return 1.0 if is_refusal(answer) == expect_refusal else 0.0
