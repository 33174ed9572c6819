"""The extractive ceiling: answers by echoing the injected context, declines when there is none.

It needs nothing, and it shows what a perfectly obedient model could score with the same context:
the line every real model is read against.
"""

from __future__ import annotations

import re

from nomad_eval.backends.base import Identity
from nomad_eval.backends.chat import ChatOptions, ChatResult, Message

DECLINE = "I don't have information about that in the available documents."
# The passage blocks of the final user message, read as a model reads them; the rag layer writes them
# (`rag.prompt.user_message`), and a test holds this reading to that writer.
_BLOCK = re.compile(r'<passage title="([^"]*)">\n(.*?)\n</passage>', re.DOTALL)
_ESCAPED = re.compile(r"&(amp|lt|quot);")
_UNESCAPE = {"amp": "&", "lt": "<", "quot": '"'}


class MockModel:
    def __init__(self, name: str, num_ctx: int, concurrency: int, chars_per_token: float = 4.0) -> None:
        self.name = name
        self.num_ctx = num_ctx
        self.concurrency = concurrency
        self.chars_per_token = chars_per_token

    def identity(self) -> Identity:
        return {"backend": "mock", "model": self.name}

    def preflight(self) -> None:
        pass

    def chat(self, messages: list[Message], options: ChatOptions) -> ChatResult:
        prompt = "\n".join(m["content"] for m in messages)
        tokens = int(len(prompt) / self.chars_per_token) + 4 * len(messages)
        last = messages[-1]["content"]
        if last.startswith("Rewrite"):  # the query-rewrite step: answer with the question as given
            q = last.rsplit("Question:", 1)[-1].strip()
            return ChatResult(q, tokens, len(q) // 4)
        # Only the final message's passages: a model that obeys the rules reads nothing else as material.
        # The echo keeps the shape it had when passages sat in the system message ("### title" sections), so
        # the ceiling's scores do not move with the prompt's layout.
        body = "\n\n".join(f"### {title}\n{text}" for title, text in _passages(last)).strip()
        text = body if body else DECLINE
        return ChatResult(text, tokens, int(len(text) / self.chars_per_token))

    def close(self) -> None:
        pass


def _passages(message: str) -> list[tuple[str, str]]:
    """Blocks at the head of the message, one after another: text after them (the question) adds none."""
    out = []
    pos = 0
    while m := _BLOCK.match(message, pos):
        out.append((_unescape(m.group(1)), _unescape(m.group(2))))
        pos = m.end() + (2 if message.startswith("\n\n", m.end()) else 0)
    return out


def _unescape(text: str) -> str:
    return _ESCAPED.sub(lambda m: _UNESCAPE[m.group(1)], text)


def ceiling() -> MockModel:
    """The mock as `model=mock` sets it up: the ceiling drawn beside another model."""
    from nomad_eval.base.shipped import build

    model: MockModel = build("model", "mock")
    return model
