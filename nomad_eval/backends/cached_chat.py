"""A chat model behind the response cache, counting what it really spent."""

from __future__ import annotations

import threading
from typing import Any

from nomad_eval.backends.chat import ChatModel, ChatOptions, ChatResult, Message
from nomad_eval.backends.response_cache import ResponseCache, response_key


class CachedChat:
    def __init__(self, model: ChatModel, cache: ResponseCache | None) -> None:
        self.model = model
        self.cache = cache
        self.calls = 0
        self.hits = 0
        self._lock = threading.Lock()

    def identity(self) -> dict[str, Any]:
        return self.model.identity()

    def chat(self, messages: list[Message], options: ChatOptions, repeat: int) -> ChatResult:
        key = response_key(self.model.identity(), messages, options.as_dict(), repeat)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                with self._lock:
                    self.hits += 1
                return hit
        result = self.model.chat(messages, options)
        with self._lock:
            self.calls += 1
        if self.cache is not None:
            self.cache.put(key, result)
        return result
