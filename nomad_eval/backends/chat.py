"""The chat-model protocol: messages in, an answer with the backend's real token counts out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

Message = dict[str, str]  # {"role": ..., "content": ...}


# Where to point a chat backend that cannot be reached; the same backend classes serve as judges.
BASE_URL_HINT = "Set base_url (model.base_url, or judge.model.base_url for a judge)."


@dataclass(frozen=True)
class ChatOptions:
    temperature: float = 0.0
    seed: int = 0
    max_tokens: int = 128
    json_schema: dict[str, Any] | None = None  # structured output, for judges

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"temperature": self.temperature, "seed": self.seed, "max_tokens": self.max_tokens}
        if self.json_schema is not None:
            out["response_format"] = {"type": "json_schema",
                                      "json_schema": {"name": "verdict", "schema": self.json_schema}}
        return out


@dataclass(frozen=True)
class ChatResult:
    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class ChatModel(Protocol):
    name: str
    num_ctx: int
    concurrency: int

    def identity(self) -> dict[str, Any]: ...

    def preflight(self) -> None:
        """Fail fast, before any retrieval work, when the model cannot be reached or does not exist."""
        ...

    def chat(self, messages: list[Message], options: ChatOptions) -> ChatResult: ...

    def close(self) -> None: ...
