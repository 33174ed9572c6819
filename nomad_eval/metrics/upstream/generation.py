"""Upstream NOMAD's answer scoring, as its harness defines it (the upstream view of the generation tier).

Its detectors (refusal, leakage, think tag, markdown) are its own pattern sets, written here for Python's `re`
with JavaScript's meaning: `\\b`, `\\w`, `\\d` and case folding are ASCII (re.ASCII, as a JavaScript regex
without the u flag), and `\\s` is JavaScript's whitespace class, which holds Unicode spaces re.ASCII would drop.
This project's own detectors (metrics/answer/) stay the default everywhere else.

`correct` is upstream's: every mustInclude pattern matched and no mustNotInclude pattern did. A refusal question
usually has no patterns, so it is correct whatever the answer; its refusal is scored by `refusalCorrect`.
`correctness` is the mean over every scored question (refusal ones included) of its pass rate over repeats.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from nomad_eval.base.patterns import search
from nomad_eval.metrics.upstream.retrieval import mean_of

# JavaScript's \s: WhiteSpace and LineTerminator code points.
_JS_SPACE = "[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]"
_FLAGS = re.IGNORECASE | re.ASCII


def _js(source: str, flags: int = _FLAGS) -> re.Pattern[str]:
    return re.compile(source.replace(r"\s", _JS_SPACE), flags)


REFUSAL_SOURCES = (
    r"\bi (?:don'?t|do not) (?:know|have)\b",
    r"\bi(?:'m| am) (?:not able|unable) to\b",
    r"\bi (?:couldn'?t|could not|can'?t|cannot) find\b",
    r"\b(?:no|not enough) (?:information|details|data)\b",
    r"\b(?:does|do) not (?:contain|include|mention|specify|provide|cover)\b",
    r"\b(?:isn'?t|is not|aren'?t|are not) (?:mentioned|specified|covered|available|provided)\b",
    r"\bnot (?:mentioned|specified|covered|stated|documented)\b",
    r"\bunable to (?:answer|determine|find)\b",
    r"\bthere (?:is|'s) no (?:information|mention|record)\b",
    r"\bi(?:'d| would) need more\b",
)
LEAKAGE_SOURCES = (
    r"\b(?:according to|based on|per|from) the (?:provided |retrieved |given |supplied )?context\b",
    r"\bcontext \d+\b",
    r"\bthe knowledge ?base\b",
    r"\bthe (?:provided|retrieved|supplied|given) (?:documents?|passages?|excerpts?|text)\b",
    r"\bthe context (?:does not|doesn'?t|is|was|seems|appears)\b",
    r"\b(?:in|from) the (?:documents?|passages?) (?:provided|above|below)\b",
    r"\b(?:no|any|specific|relevant) context\b",
    r"\bsearch results?\b",
)
THINK_TAG_SOURCE = r"<\/?(?:think|thought|thinking|reasoning)\b[^>]*>"
# Upstream's markdown test has no i flag: it has no letters to fold.
MARKDOWN_SOURCE = r"(^|\n)\s{0,3}#{1,6}\s|(^|\n)\s*[-*+]\s|(^|\n)\s*\d+\.\s|\*\*[^*]+\*\*|`[^`]+`|(^|\n)\s*\|"

_REFUSAL = tuple(_js(s) for s in REFUSAL_SOURCES)
_LEAKAGE = tuple(_js(s) for s in LEAKAGE_SOURCES)
_THINK_TAG = _js(THINK_TAG_SOURCE)
_MARKDOWN = _js(MARKDOWN_SOURCE, re.ASCII)


def detect_refusal(answer: str) -> bool:
    return any(p.search(answer) for p in _REFUSAL)


def detect_leakage(answer: str) -> list[str]:
    """The sources of the leakage patterns the answer matches (upstream lists them by source)."""
    return [s for s, p in zip(LEAKAGE_SOURCES, _LEAKAGE, strict=True) if p.search(answer)]


def has_think_tag(answer: str) -> bool:
    return _THINK_TAG.search(answer) is not None


def is_markdown(answer: str) -> bool:
    """Upstream's loose check: a heading, a list item, bold, inline code or a table row."""
    return _MARKDOWN.search(answer) is not None


@dataclass(frozen=True)
class AnswerScores:
    correct: bool
    refused: bool
    refusal_correct: bool
    leakage: bool
    think_tag: bool
    markdown: bool


def score_answer(answer: str, must_include: Sequence[str], must_not_include: Sequence[str],
                 expect_refusal: bool) -> AnswerScores:
    """Upstream's `scoreAnswer` for one answer; golden patterns match through this project's pattern engine
    (case-insensitive, as upstream compiles them). A pattern that times out counts as not matched."""
    missed = any(not search(p, answer) for p in must_include)
    forbidden = any(search(p, answer) for p in must_not_include)
    refused = detect_refusal(answer)
    return AnswerScores(
        correct=not missed and not forbidden, refused=refused,
        refusal_correct=refused if expect_refusal else not refused,
        leakage=bool(detect_leakage(answer)), think_tag=has_think_tag(answer), markdown=is_markdown(answer),
    )


UPSTREAM_CASE_NAMES = ("correctness", "refusalCorrectness", "leakageRate", "thinkTagLeakRate", "markdownRate")
# Upstream pools these over every answer (repeats included); correctness and refusalCorrectness are the mean of
# each question's pass rate over its repeats.
POOLED = ("leakageRate", "thinkTagLeakRate", "markdownRate")


def case_values(s: AnswerScores) -> dict[str, float]:
    """One answer's upstream values, each 0/1, under upstream's names (the case's mode says which mode)."""
    values = (s.correct, s.refusal_correct, s.leakage, s.think_tag, s.markdown)
    return {n: float(v) for n, v in zip(UPSTREAM_CASE_NAMES, values, strict=True)}


def aggregate(answers: Sequence[tuple[str, Mapping[str, float | None]]]) -> dict[str, float | None]:
    """Upstream's `aggregateGeneration` for one mode, from (question id, case values) per answer in run order."""
    by_question: dict[str, list[Mapping[str, float | None]]] = {}
    for qid, values in answers:
        by_question.setdefault(qid, []).append(values)
    out: dict[str, float | None] = {}
    for name in UPSTREAM_CASE_NAMES:
        if name in POOLED:
            out[name] = mean_of([v[name] for _, v in answers])
        else:
            out[name] = mean_of([mean_of([v[name] for v in rows]) for rows in by_question.values()])
    return out
