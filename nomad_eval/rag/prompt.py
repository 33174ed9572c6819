"""The prompt the pipeline under test sends: rules, the injected passages, history, the question."""

from __future__ import annotations

import re
from dataclasses import dataclass

SYSTEM_RULES = (
    "You are the offline assistant of a field knowledge base. Answer the user's question from the reference "
    "material below.\n"
    "Rules:\n"
    "1. Answer directly and briefly. Never talk about the material itself: do not mention passages, context, "
    "documents, sources or a knowledge base.\n"
    "2. Ignore material that does not bear on the question.\n"
    "3. If the material does not contain the answer, say that you do not have that information, and stop.\n"
    "4. Copy figures and units exactly as written."
)
NO_CONTEXT = "There is no reference material for this question."
OMITTED = "[Earlier parts of this conversation were omitted.]"

_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)


@dataclass(frozen=True)
class Passage:
    chunk_id: str
    doc_id: str
    title: str
    text: str


def format_passage(p: Passage) -> str:
    return f"### {p.title}\n{p.text}"


def system_message(passages: list[Passage]) -> str:
    if not passages:
        return f"{SYSTEM_RULES}\n\n{NO_CONTEXT}"
    body = "\n\n".join(format_passage(p) for p in passages)
    return f"{SYSTEM_RULES}\n\n<context>\n{body}\n</context>"


def strip_reasoning(answer: str) -> str:
    """Remove well-formed reasoning blocks; anything left over is a leak the metrics count."""
    return _THINK_BLOCK.sub("", answer).strip()
