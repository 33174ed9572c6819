"""A small OpenAI-compatible chat server on loopback whose answer is a function of the request.

Used to drive the `openai` backend for real, including a model made to flip between repeats.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from tests.servers._http import JsonHandler, running

AnswerFn = Callable[[dict[str, Any]], str]
# request, answer text -> (token, {alternative: probability}) per generated token, in order
LogprobFn = Callable[[dict[str, Any], str], list[tuple[str, dict[str, float]]]]
RefuseFn = Callable[[dict[str, Any]], bool]


@contextmanager
def serve(model: str, answer: AnswerFn, logprobs: LogprobFn | None = None, refuse: RefuseFn | None = None,
          served: dict[str, str] | None = None) -> Iterator[str]:
    """`logprobs` scripts the token probabilities returned when a request asks for them; `refuse` answers
    HTTP 400, as a server does for a parameter it does not support or a prompt longer than its context.
    `served` is added to every answer as read at that moment (`{"system_fingerprint": "fp_1"}`): a test swaps the
    model behind the name by changing it."""
    class Handler(JsonHandler):
        def do_GET(self) -> None:
            self._send(200, {"object": "list", "data": [{"id": model, "object": "model"}]})

        def do_POST(self) -> None:
            body = self._body()
            if refuse is not None and refuse(body):
                self._send(400, {"error": {"message": "refused by the test server", "type": "invalid_request_error"}})
                return
            text = answer(body)
            prompt = sum(len(m["content"]) for m in body["messages"]) // 4
            choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": text},
                                      "finish_reason": "stop"}
            if logprobs is not None and body.get("logprobs"):
                k = int(body.get("top_logprobs") or 0)
                choice["logprobs"] = {"content": [
                    {"token": tok, "logprob": math.log(alts.get(tok, 1e-9)),
                     "top_logprobs": [{"token": a, "logprob": math.log(p)}
                                      for a, p in sorted(alts.items(), key=lambda x: -x[1])[:k]]}
                    for tok, alts in logprobs(body, text)]}
            self._send(200, {"id": "x", "object": "chat.completion", "model": model, "choices": [choice],
                             "usage": {"prompt_tokens": prompt, "completion_tokens": len(text) // 4},
                             **(served or {})})

    with running(Handler) as url:
        yield f"{url}/v1"
