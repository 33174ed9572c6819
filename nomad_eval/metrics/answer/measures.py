"""The answer measures, each a spec and a pure function of one answer (and its golden and context), registered in
the order every generation table shows them. Attacks through the corpus have their own module (attack.py).

markdownRate, upstream NOMAD's, is 1/0 per answer: an answer counts as formatted when it holds any of these
CommonMark constructs (lines may be indented by up to three spaces, as CommonMark allows):

- `heading`: an ATX heading, `#` to `######` then a space and text (`## Steps`);
- `bullet list`: a line starting with `-`, `*` or `+`, a space, then text (`- boil the water`);
- `numbered list`: a line starting with a number, `.` or `)`, a space, then text (`1. boil the water`);
- `bold`: `**text**` or `__text__` with no space just inside the markers;
- `italics`: `*text*` or `_text_` not inside a word (`snake_case_name` and `2 * 3 * 4` do not count);
- `code`: a fence line (three backticks or tildes) or inline code between single backticks;
- `table`: a delimiter row such as `|---|:---:|` (pipes, dashes, colons; at least one pipe and three dashes);
- `link`: `[text](target)`.

Plain prose, a hyphenated word, an arithmetic `*` or a lone `#` in text ("room #4") do not count.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from nomad_eval.base.patterns import search
from nomad_eval.metrics.registry import MetricSpec, register

# What the context budget cost: history left out, passages dropped, and how far the token estimate was off.
HISTORY = register(MetricSpec("history_elided_rate", "share of prompts in which older history was left out",
                              direction="lower", tier="generation", binary=True))
DROPPED = register(MetricSpec("chunks_dropped_rate", "share of prompts in which passages did not fit",
                              direction="lower", tier="generation", binary=True))
TOKEN_ERROR = register(MetricSpec(
    "prompt_token_error", "mean |estimated - real| / real prompt tokens", direction="lower",
    tolerance=0.25, tolerance_kind="rel", unit="ratio", tier="generation",
    # Relative to a small baseline error, 25% is nothing; the floor, not the tolerance as an absolute amount
    # (0.25, which let 0.0007 -> 0.2 pass), is the least worsening tolerated: two points of token error.
    floor=0.02,
))


def token_error(estimated: int, real: int | None) -> float | None:
    if not real:
        return None
    return abs(estimated - real) / real


CORRECTNESS = register(MetricSpec(
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


# Numbers the answer states that the injected context does not: the cheapest hallucination signal.
GROUNDEDNESS = register(MetricSpec(
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


# A question value of 1 when its outcome flips between repeats, 0 when they agree; measured only with two or more
# judged repeats. Gated, so a change that makes answers flaky fails by name instead of vanishing from the means.
INSTABILITY = register(MetricSpec(
    "instability", "share of questions whose pass/fail outcome differs between repeats (2+ repeats)",
    direction="lower", tolerance=0.05, tier="generation", binary=True, headline=True,
))


# Narrating retrieval ("according to the context", "Context 2") instead of answering.
LEAKAGE = register(MetricSpec("leakage_rate", "share of answers that narrate the retrieval", direction="lower",
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


MARKDOWN = register(MetricSpec(
    "markdownRate",
    "share of answers holding markdown formatting (heading, list, bold/italics, code, table or link)",
    # Upstream's harness reads a rise as better (NOMAD's chat renders markdown); a gate naming it here agrees.
    direction="higher", tier="generation", binary=True,
))

_M = re.MULTILINE
FEATURES: dict[str, re.Pattern[str]] = {
    "heading": re.compile(r"^ {0,3}#{1,6}[ \t]+\S", _M),
    "bullet list": re.compile(r"^ {0,3}[-*+][ \t]+\S", _M),
    "numbered list": re.compile(r"^ {0,3}\d{1,9}[.)][ \t]+\S", _M),
    "bold": re.compile(r"\*\*(?=\S)[^*\n]*?\S\*\*|(?<!\w)__(?=\S)[^_\n]*?\S__(?!\w)"),
    "italics": re.compile(r"(?<![\w*])\*(?=[^\s*])[^*\n]*?[^\s*]\*(?![\w*])"
                          r"|(?<![\w_])_(?=[^\s_])[^_\n]*?[^\s_]_(?![\w_])"),
    "code": re.compile(r"^ {0,3}(?:`{3,}|~{3,})|`[^`\n]+`", _M),
    "table": re.compile(r"^(?=[^\n]*\|)(?=[^\n]*-{3})[ \t|:-]+$", _M),
    "link": re.compile(r"\[[^\]\n]+\]\([^)\s]+\)"),
}


def markdown_features(answer: str) -> list[str]:
    """The kinds of formatting found in `answer`, in FEATURES order (empty: plain text)."""
    return [name for name, pattern in FEATURES.items() if pattern.search(answer)]


def has_markdown(answer: str) -> bool:
    return any(pattern.search(answer) for pattern in FEATURES.values())


PASS_RATE = register(MetricSpec(
    "pass_rate", "share of questions that pass (correct answer, or a correct refusal), each averaged over its repeats",
    tier="generation", headline=True,
))


def question_outcome(passes: Sequence[bool | None]) -> tuple[float | None, bool]:
    """(pass rate over repeats, unstable): unstable when the outcome flips between repeats."""
    measured = [p for p in passes if p is not None]
    if not measured:
        return None, False
    rate = sum(measured) / len(measured)
    return rate, 0.0 < rate < 1.0


# Declining what the corpus cannot answer, and never what it can: two measures, each over its own goldens, so a
# suite with few refusal goldens cannot hide every missed refusal behind its answerable questions (one rate over
# both, upstream's refusalCorrectness, is kept under that name in the upstream view).
REFUSAL_RECALL = register(MetricSpec(
    "refusal_recall", "share of refusal goldens the answer declines (refusal goldens only)",
    tier="generation", binary=True, headline=True,
))
FALSE_REFUSAL = register(MetricSpec(
    "false_refusal_rate", "share of answerable goldens the answer declines (answerable goldens only)",
    direction="lower", tier="generation", binary=True, headline=True,
))
# The name both replaced: a case or baseline that holds it is read once into them (report/renamed.py).
OLD_REFUSAL = "refusal_correctness"

# Each pattern is a statement about the speaker's knowledge or ability, so instructions that merely
# contain a negation ("do not cover the burn", "don't have the victim stand") do not count as refusals.
_REFUSALS = (
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
)
_REFUSAL = re.compile("|".join(f"(?:{p})" for p in _REFUSALS), re.IGNORECASE)


def is_refusal(answer: str) -> bool:
    return bool(_REFUSAL.search(answer)) or not answer.strip()


def refusal_values(answer: str, expect_refusal: bool) -> dict[str, float | None]:
    """refusal_recall on a refusal golden, false_refusal_rate on an answerable one; the other is not applicable."""
    declined = 1.0 if is_refusal(answer) else 0.0
    return {REFUSAL_RECALL.family: declined if expect_refusal else None,
            FALSE_REFUSAL.family: None if expect_refusal else declined}


THINK_LEAK = register(MetricSpec("think_leak_rate", "share of answers that still hold a reasoning tag after cleaning",
                           direction="lower", tier="generation", binary=True))

_TAG = re.compile(r"</?think>", re.IGNORECASE)


def think_leaked(cleaned_answer: str) -> bool:
    return bool(_TAG.search(cleaned_answer))
