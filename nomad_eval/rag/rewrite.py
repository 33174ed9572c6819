"""Multi-turn query rewrite: a follow-up such as "how long should I do it for?" becomes a standalone question."""

from __future__ import annotations

from nomad_eval.backends.chat import Message

RECENT = 6  # messages of history the rewrite looks at


def needs_rewrite(turns: list[Message]) -> bool:
    """Only when the recent conversation holds at least two user turns (the final question included)."""
    return sum(1 for t in turns[-RECENT - 1:] if t["role"] == "user") >= 2


def rewrite_messages(turns: list[Message], question: str) -> list[Message]:
    convo = "\n".join(f"{t['role']}: {t['content']}" for t in turns[-RECENT - 1:-1])
    return [
        {"role": "system", "content": "You turn follow-up questions into standalone questions."},
        {"role": "user", "content": "Rewrite the last question so that it can be understood without the "
                                    "conversation. Reply with the rewritten question only.\n\n"
                                    f"Conversation:\n{convo}\n\nQuestion: {question}"},
    ]


def accept(original: str, rewritten: str) -> str:
    """A small model's rewrite can be empty or ramble; then the original question is safer."""
    r = rewritten.strip().strip('"').strip()
    if not r or len(r) > 3 * len(original) + 200:
        return original
    return r
