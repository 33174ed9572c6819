"""The chat-model protocol: messages in, an answer with the backend's real token counts out."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from nomad_eval.backends.base import Identity
from nomad_eval.base.atomic import JsonValue
from nomad_eval.base.json_fields import fields, items, real

Message = dict[str, str]  # {"role": ..., "content": ...}


# Where to point a chat backend that cannot be reached; the same backend classes serve as judges.
BASE_URL_HINT = "Set base_url (model.base_url, or judge.model.base_url for a judge)."


@dataclass(frozen=True)
class ChatOptions:
    temperature: float = 0.0
    seed: int = 0
    max_tokens: int = 128
    json_schema: Mapping[str, JsonValue] | None = None  # structured output, for judges
    # > 0: return the log probabilities of this many alternatives at each generated token (graded judges).
    top_logprobs: int = 0

    def as_dict(self) -> dict[str, JsonValue]:
        """The request's options in OpenAI's vocabulary; also the options part of the response cache key."""
        out: dict[str, JsonValue] = {"temperature": self.temperature, "seed": self.seed, "max_tokens": self.max_tokens}
        if self.json_schema is not None:
            out["response_format"] = {"type": "json_schema",
                                      "json_schema": {"name": "verdict", "schema": self.json_schema}}
        if self.top_logprobs > 0:
            # Added only when asked for, so requests (and cache keys) without it stay what they were.
            out["logprobs"] = True
            out["top_logprobs"] = self.top_logprobs
        return out


@dataclass(frozen=True)
class TokenLogprob:
    """One generated token, its log probability, and the most likely tokens at its position (with their own)."""
    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class ChatResult:
    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    logprobs: tuple[TokenLogprob, ...] | None = None  # None: not asked for, or the backend gave none
    # What the server said of the model that answered (OpenAI-style: its model id and system fingerprint); None:
    # the backend reports nothing with an answer (its identity() already pins the weights, or cannot).
    served: dict[str, str | None] | None = None


class Malformed(ValueError):
    """A server's answer that is not the shape its API promises (not JSON, an HTML page, `{}`)."""


def openai_logprobs(choice: Mapping[str, object]) -> tuple[TokenLogprob, ...] | None:
    """`choices[i].logprobs.content` of an OpenAI-style chat response (llama.cpp's server speaks it too); a shape
    other than the API's raises (KeyError, TypeError, ValueError)."""
    content = fields(choice.get("logprobs")).get("content")
    if not content:
        return None
    return tuple(_token_logprob(fields(t)) for t in items(content))


def _token_logprob(t: Mapping[str, object]) -> TokenLogprob:
    top = [fields(a) for a in items(t.get("top_logprobs"))]
    return TokenLogprob(str(t["token"]), real(t["logprob"]), tuple((str(a["token"]), real(a["logprob"])) for a in top))


def count(value: Any) -> int | None:
    """A token count as a server reports it: a whole number, or None when it sent none (or nonsense)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def openai_answer(data: Any) -> ChatResult:
    """The answer in an OpenAI-style chat response body (already parsed from JSON), or Malformed saying what
    is wrong with it. A null `content` is an empty answer (which is never cached: response_cache.py)."""
    if not isinstance(data, dict):
        raise Malformed(f"a JSON {type(data).__name__}, not an object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise Malformed("no choices[0]")
    message = choices[0].get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(message, dict) or not isinstance(content, str | None):
        raise Malformed("no text in choices[0].message.content")
    try:
        logprobs = openai_logprobs(choices[0])
    except (AttributeError, KeyError, TypeError, ValueError):
        raise Malformed("unreadable choices[0].logprobs") from None
    usage = data.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    served = {k: v if isinstance(v := data.get(k), str) and v else None for k in ("model", "system_fingerprint")}
    return ChatResult(content or "", count(usage.get("prompt_tokens")), count(usage.get("completion_tokens")),
                      logprobs, served)


class ChatModel(Protocol):
    name: str
    num_ctx: int
    concurrency: int

    def identity(self) -> Identity: ...

    def preflight(self) -> None:
        """Fail fast, before any retrieval work, when the model cannot be reached or does not exist."""
        ...

    def chat(self, messages: list[Message], options: ChatOptions) -> ChatResult: ...

    def close(self) -> None: ...
