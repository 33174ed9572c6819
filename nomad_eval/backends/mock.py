"""The extractive ceiling: answers by echoing the injected context, declines when there is none.

It needs nothing, and it shows what a perfectly obedient model could score with the same context:
the line every real model is read against.
"""

from __future__ import annotations

import re
from typing import Any

from nomad_eval.backends.chat import ChatOptions, ChatResult, Message

DECLINE = "I don't have information about that in the available documents."
_CONTEXT = re.compile(r"<context>\n(.*?)\n</context>", re.DOTALL)


class MockModel:
    def __init__(self, name: str = "mock", num_ctx: int = 8192, concurrency: int = 1, chars_per_token: float = 4.0
                 ) -> None:
        self.name = name
        self.num_ctx = num_ctx
        self.concurrency = concurrency
        self.chars_per_token = chars_per_token

    def identity(self) -> dict[str, Any]:
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
        match = _CONTEXT.search(prompt)
        body = match.group(1).strip() if match else ""
        text = body if body else DECLINE
        return ChatResult(text, tokens, int(len(text) / self.chars_per_token))

    def close(self) -> None:
        pass
