"""A small OpenAI-compatible chat server on loopback whose answer is a function of the request.

Used to drive the `openai` backend for real, including a model made to flip between repeats.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from tests.servers._http import JsonHandler, running

AnswerFn = Callable[[dict[str, Any]], str]


@contextmanager
def serve(model: str, answer: AnswerFn) -> Iterator[str]:
    class Handler(JsonHandler):
        def do_GET(self) -> None:
            self._send(200, {"object": "list", "data": [{"id": model, "object": "model"}]})

        def do_POST(self) -> None:
            body = self._body()
            text = answer(body)
            prompt = sum(len(m["content"]) for m in body["messages"]) // 4
            self._send(200, {"id": "x", "object": "chat.completion", "model": model,
                             "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                          "finish_reason": "stop"}],
                             "usage": {"prompt_tokens": prompt, "completion_tokens": len(text) // 4}})

    with running(Handler) as url:
        yield f"{url}/v1"
