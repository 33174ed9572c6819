"""How a conversation becomes the retrieval query (`pipeline.history`), the same rule in every tier.

A follow-up such as "how long should I do it for?" names nothing the corpus can match; the rule decides what is
searched for instead:
  query      the question alone (what a single-turn pipeline does)
  last_user  the last `pipeline.history_turns` user turns of the history, then the question, as one text
  rewrite    the chat model rewrites the question into a standalone one, from the recent conversation
A question without history is searched for as it is under every rule.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from nomad_eval.backends.chat import Message

RULES = ("query", "last_user", "rewrite")
RECENT = 6  # messages of history the rewrite looks at


@dataclass(frozen=True)
class FormedQuery:
    """What retrieval searches for, and whether the rule changed it from the question."""

    text: str
    changed: bool


def check_rule(rule: str, turns: int) -> None:
    """A ValueError naming the setting: the pipeline calls this at construction, before any work."""
    if rule not in RULES:
        raise ValueError(f"pipeline.history={rule!r}: choose one of {', '.join(RULES)}")
    if isinstance(turns, bool) or not isinstance(turns, int) or turns < 1:
        raise ValueError(f"pipeline.history_turns={turns!r}: must be an integer of at least 1")


def with_last_user_turns(history: list[Message], question: str, turns: int) -> str:
    """The last `turns` user messages of the history, oldest first, then the question. The question closes
    the text because it is what the reranker's query terms should favour when the history is long."""
    said = [t["content"].strip() for t in history if t["role"] == "user" and t["content"].strip()]
    return "\n".join([*said[-turns:], question]) if said else question


def rewrite_messages(history: list[Message], question: str) -> list[Message]:
    convo = "\n".join(f"{t['role']}: {t['content']}" for t in history[-RECENT:])
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


def form_query(question: str, history: list[Message], rule: str, turns: int,
               ask: Callable[[list[Message]], str] | None) -> FormedQuery:
    """The retrieval query under `rule`; `ask` sends messages to the chat model (needed by `rewrite` only)."""
    if not history or rule == "query":
        return FormedQuery(question, False)
    if rule == "last_user":
        text = with_last_user_turns(history, question, turns)
    else:
        if ask is None:
            raise ValueError("pipeline.history=rewrite needs a chat model")
        text = accept(question, ask(rewrite_messages(history, question)))
    return FormedQuery(text, text != question)
