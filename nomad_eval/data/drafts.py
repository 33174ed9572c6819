"""Draft goldens from a corpus (tier=synthesize): the prompts, the reading of a model's reply, and the checks a
draft must pass before it is kept for review.

A chat model writes, for a chunk, a question that the chunk answers and the words of the chunk that answer it
(the mustInclude pattern is those words); a follow-up conversation about the chunk; or, from a document's
opening, a question near its subject that the corpus does not answer, with the term it asks about. What a small
model writes is often wrong, so every draft is checked against the corpus, and the first check it fails names why
it was dropped (CHECKS).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypedDict

from nomad_eval.backends.chat import Message
from nomad_eval.base.patterns import compile_pattern, search

# Why a draft is dropped, in the order the checks run.
MALFORMED = "malformed reply"
NOT_IN_SOURCE = "pattern absent from its source"
TOO_COMMON = "pattern found in most documents"
DUPLICATE = "near-duplicate of another draft"
TOPIC_IN_CORPUS = "refusal topic found in the corpus"
CHECKS = (MALFORMED, NOT_IN_SOURCE, TOO_COMMON, DUPLICATE, TOPIC_IN_CORPUS)

KINDS = ("answerable", "follow-up", "refusal")
SYSTEM = "You write test questions about a collection of documents. Follow the reply format exactly."
# One worked reply: a small model follows a shown reply far more often than a described one.
EXAMPLE = ("\n\nExample, for a passage saying \"Boil the water for one minute\":\n"
           "QUESTION: How long should the water boil?\nANSWER: one minute")
EXAMPLE_FOLLOW_UP = ("\n\nExample, for a passage saying \"Boil the water for one minute\":\n"
                     "FIRST: Is boiling a safe way to treat water?\nREPLY: Yes, boiling kills germs.\n"
                     "FOLLOW-UP: How long should I do it for?\nANSWER: one minute")
EXAMPLE_REFUSAL = ("\n\nExample, for a passage about boiling water:\nQUESTION: How deep should a well be dug?\n"
                   "TOPIC: well digging")
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Source:
    """The text a draft is asked about: a chunk (answerable, follow-up) or a document's opening (refusal)."""

    doc_id: str
    chunk_id: str
    title: str
    text: str


class Candidate(TypedDict):
    """A document shown under a draft for review: its best chunk, with its score and an excerpt."""

    doc_id: str
    chunk_id: Any                     # the chunk's id as recorded (a trace's own, or None for a refusal's)
    score: float
    excerpt: str


class DraftGolden(TypedDict):
    """A draft as a line of a suite, with upstream's keys only: what a person reviews and annotates."""

    id: str
    query: str
    turns: list[Message]
    relevantDocIds: list[str]
    mustInclude: list[str]
    mustNotInclude: list[str]
    expectRefusal: bool
    tags: list[str]


@dataclass
class Draft:
    kind: str
    source: Source
    query: str = ""
    turns: list[Message] = field(default_factory=list)
    answer: str = ""       # the words of the source that answer the question (answerable, follow-up)
    topic: str = ""        # what a refusal question asks about
    problem: str | None = None  # the first check it failed; None while kept
    reply: str = ""        # the model's reply as written, for a reviewer asking why a draft was dropped

    @property
    def pattern(self) -> str:
        return answer_pattern(self.answer)

    def golden(self) -> DraftGolden:
        """The draft as a line of a suite (upstream's keys only), for the review loop."""
        refusal = self.kind == "refusal"
        key = "\n".join([self.kind, self.source.chunk_id, *(t["content"] for t in self.turns), self.query])
        return DraftGolden(
            id="synth-" + hashlib.sha1(key.encode()).hexdigest()[:10], query=self.query, turns=self.turns,
            relevantDocIds=[] if refusal else [self.source.doc_id], mustInclude=[] if refusal else [self.pattern],
            mustNotInclude=[], expectRefusal=refusal,
            tags=["synthesized", *(["multi-turn"] if self.turns else []), *(["refusal"] if refusal else [])])


def candidates_path(draft: Path) -> Path:
    # Not *.jsonl, so a goldens folder holding drafts still checks as a folder of suites.
    return draft.with_name(draft.name + ".candidates")


def prompt(kind: str, s: Source) -> list[Message]:
    passage = f'Passage from "{s.title}":\n{s.text}\n\n'
    if kind == "answerable":
        ask = ("Write one question that this passage answers, then copy the few words of the passage that answer "
               "it.\nReply in exactly two lines:\nQUESTION: <the question>\nANSWER: <words copied from the passage>"
               + EXAMPLE)
    elif kind == "follow-up":
        ask = ("Write a short conversation about this passage: a first question, a one-sentence reply, and a "
               "follow-up question that refers back with a word such as \"it\" or \"that\" and that the passage "
               "answers. Then copy the few words of the passage that answer the follow-up.\nReply in exactly four "
               "lines:\nFIRST: <first question>\nREPLY: <one-sentence reply>\nFOLLOW-UP: <the follow-up>\n"
               "ANSWER: <words copied from the passage>" + EXAMPLE_FOLLOW_UP)
    else:
        ask = ("Write one question on the same general subject that this passage does NOT answer, and name in one "
               "to three words the thing it asks about, a term that does not appear in the passage.\nReply in "
               "exactly two lines:\nQUESTION: <the question>\nTOPIC: <the term>" + EXAMPLE_REFUSAL)
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": passage + ask}]


# Labels a small model writes instead of the format's ("Q:", "The answer is:"), read as the format's.
_ALIASES = MappingProxyType({"Q": "QUESTION", "A": "ANSWER", "FOLLOW UP": "FOLLOW-UP", "FOLLOWUP": "FOLLOW-UP"})


def _label(raw: str) -> str:
    label = " ".join(raw.strip("*_# ").upper().split())
    label = label.removeprefix("THE ").removesuffix(" IS")
    return _ALIASES.get(label, label)


def fields(reply: str) -> dict[str, str]:
    """`LABEL: value` lines of a reply, labels upper-cased (and read through _ALIASES); markdown emphasis and
    quotes around values dropped; the first line with a label wins."""
    out: dict[str, str] = {}
    for line in reply.splitlines():
        raw, sep, value = line.strip().strip("*_ ").partition(":")
        label = _label(raw)
        if sep and label and label not in out:
            out[label] = value.strip().strip("*_ ").strip().strip('"').strip()
    return out


def read_reply(kind: str, source: Source, reply: str) -> Draft:
    """The draft a reply describes; MALFORMED when a line the format asks for is missing or empty."""
    f = fields(reply)
    d = Draft(kind, source, reply=reply)
    if kind == "follow-up":
        first, said, d.query, d.answer = (f.get(k, "") for k in ("FIRST", "REPLY", "FOLLOW-UP", "ANSWER"))
        d.turns = [{"role": "user", "content": first}, {"role": "assistant", "content": said}]
        needed = [first, said, d.query, d.answer]
    elif kind == "answerable":
        d.query, d.answer = f.get("QUESTION", ""), f.get("ANSWER", "")
        needed = [d.query, d.answer]
    else:
        d.query, d.topic = f.get("QUESTION", ""), f.get("TOPIC", "")
        needed = [d.query, d.topic]
    d.answer = d.answer.rstrip(".,;:!?")
    if not all(needed):
        d.problem = MALFORMED
    return d


def answer_pattern(answer: str) -> str:
    """The answer's words as a pattern: literal text, any run of whitespace between words, whole words at the
    ends (so "12" does not match inside "120")."""
    words = answer.split()
    body = r"\s+".join(re.escape(w) for w in words)
    head = r"\b" if words and _WORD.match(words[0][0]) else ""
    tail = r"\b" if words and _WORD.match(words[-1][-1]) else ""
    return f"{head}{body}{tail}"


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def overlap(a: str, b: str) -> float:
    """Jaccard overlap of the two texts' word sets."""
    wa, wb = _words(a), _words(b)
    return len(wa & wb) / len(wa | wb) if wa | wb else 1.0


def asked(d: Draft) -> str:
    """What a draft asks, for the duplicate check: the user's turns and the question."""
    return "\n".join([*(t["content"] for t in d.turns if t["role"] == "user"), d.query])


@dataclass(frozen=True)
class Limits:
    max_doc_share: float  # a pattern matching more than this share of the other documents is too common
    max_overlap: float    # a draft whose words overlap an earlier kept one's this much is a duplicate


def check(d: Draft, documents: dict[str, str], kept: list[Draft], limits: Limits) -> str | None:
    """The first check `d` fails, or None. `documents`: every corpus document's text by id."""
    if d.problem:
        return d.problem
    if d.kind == "refusal":
        topic = answer_pattern(d.topic)
        if any(search(topic, text) for text in documents.values()):
            return TOPIC_IN_CORPUS
    else:
        if not search(d.pattern, documents.get(d.source.doc_id, "")):
            return NOT_IN_SOURCE
        others = [text for doc, text in documents.items() if doc != d.source.doc_id]
        found = sum(bool(search(d.pattern, text)) for text in others)
        if others and found / len(others) > limits.max_doc_share:
            return TOO_COMMON
    if any(overlap(asked(d), asked(k)) >= limits.max_overlap for k in kept):
        return DUPLICATE
    return None


def verify(drafts: list[Draft], documents: dict[str, str], limits: Limits) -> list[Draft]:
    """The drafts that pass every check, in order; each dropped one carries its reason in `problem`."""
    kept: list[Draft] = []
    for d in drafts:
        d.problem = check(d, documents, kept, limits)
        if d.problem is None:
            kept.append(d)
    return kept


def excerpt(d: Draft, width: int = 240) -> str:
    """The part of the source around the answer, for the reviewer."""
    m = compile_pattern(d.pattern).search(d.source.text) if d.answer else None
    start = max(0, m.start() - width // 3) if m else 0
    return " ".join(d.source.text[start:start + width].split())
