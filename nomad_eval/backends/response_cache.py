"""Answers cached on disk: a chat model's by backend, model, the full prompt, options and repeat index, and the
user's app's HTTP responses by the request and repeat index, so a re-run of an unchanged config costs almost
nothing; repeats stay independent because the repeat index is part of the key.
"""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path
from typing import Any

from nomad_eval.backends.chat import ChatModel, ChatOptions, ChatResult, Message, TokenLogprob, count
from nomad_eval.base.sqlite_store import open_rebuildable


def response_key(identity: dict[str, Any], messages: list[dict[str, str]], options: dict[str, Any],
                 repeat: int) -> str:
    blob = json.dumps({"id": identity, "m": messages, "o": options, "r": repeat}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


class _Rows:
    """Key -> JSON rows in a file the harness may rebuild (a damaged one is moved aside and refilled: a cached
    answer is one call away from coming back), shared by threads. Each row is committed as it is written, so a run
    killed half way resumes without repeating finished calls."""

    def __init__(self, path: Path, table: str, what: str) -> None:
        self._table = table
        self._db = open_rebuildable(path, f"CREATE TABLE IF NOT EXISTS {table} (key TEXT PRIMARY KEY, body TEXT)",
                                    what, check_same_thread=False)
        self._lock = threading.Lock()

    def get(self, key: str) -> Any:
        """The row's value; None when there is none or it is not JSON."""
        with self._lock:
            row = self._db.execute(f"SELECT CAST(body AS BLOB) FROM {self._table} WHERE key = ?", (key,)).fetchone()
        try:
            return None if row is None else json.loads(row[0])
        except ValueError:
            return None

    def put(self, key: str, value: Any) -> None:
        text = json.dumps(value)
        with self._lock:
            self._db.execute(f"INSERT OR REPLACE INTO {self._table} VALUES (?, ?)", (key, text))
            self._db.commit()

    def close(self) -> None:
        self._db.close()


class ResponseCache:
    def __init__(self, path: Path) -> None:
        self._rows = _Rows(path, "resp", "response cache")

    def get(self, key: str) -> ChatResult | None:
        """The cached answer, or None: never cached, an empty answer (written before empty answers were kept
        out), or a row that cannot be read. Each of those is asked again, and the new answer replaces the row."""
        try:
            result = _result(self._rows.get(key))
        except (TypeError, ValueError, KeyError, AttributeError):
            return None
        return result if result is not None and result.text.strip() else None

    def put(self, key: str, result: ChatResult) -> None:
        """Keeps `result`, unless its text is empty: a null or empty answer is more often a server's hiccup
        than the model's answer, and kept it would be served after the server recovers."""
        if not result.text.strip():
            return
        body: dict[str, object] = {"text": result.text, "prompt_tokens": result.prompt_tokens,
                                   "completion_tokens": result.completion_tokens}
        if result.logprobs is not None:
            # Positional triples [token, logprob, [[alternative, logprob], ...]]: a judge asks for a few
            # alternatives at each of up to judging.max_tokens positions, so key names would dominate the row.
            body["logprobs"] = [[t.token, t.logprob, [list(a) for a in t.top]] for t in result.logprobs]
        self._rows.put(key, body)

    def close(self) -> None:
        self._rows.close()


def _result(d: dict[str, Any] | None) -> ChatResult | None:
    """A row's body back into a result; any other shape raises (TypeError, ValueError, KeyError)."""
    if d is None:
        return None
    # Rows written before logprobs were kept have no "logprobs": they load as a result without them.
    lp = d.get("logprobs")
    logprobs = None if lp is None else tuple(TokenLogprob(str(t), float(p), tuple((str(a), float(q)) for a, q in top))
                                             for t, p, top in lp)
    text = d["text"]
    if not isinstance(text, str):
        raise TypeError("text is not a string")
    return ChatResult(text, count(d.get("prompt_tokens")), count(d.get("completion_tokens")), logprobs)


class CachedChat:
    """A chat model behind the response cache, counting what it really spent."""

    def __init__(self, model: ChatModel, cache: ResponseCache | None) -> None:
        self.model = model
        self.cache = cache
        self.calls = 0
        self.hits = 0
        self._lock = threading.Lock()

    def identity(self) -> dict[str, Any]:
        return self.model.identity()

    def cached(self, messages: list[Message], options: ChatOptions, repeat: int) -> ChatResult | None:
        """The answer the cache holds for this call, without asking the model or counting a hit."""
        if self.cache is None:
            return None
        return self.cache.get(response_key(self.model.identity(), messages, options.as_dict(), repeat))

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


class AppResponseCache:
    """The app's raw responses (not the parsed answers: changing a response path re-reads one without a call), by
    the request (method, URL, rendered body, plain headers, secret header names) and the repeat index."""

    def __init__(self, path: Path) -> None:
        self._rows = _Rows(path, "app", "app response cache")

    def get(self, key: str) -> tuple[Any, float] | None:
        """The response's JSON and the latency (ms) of the call that produced it."""
        d = self._rows.get(key)
        return None if d is None else (d["response"], float(d["latency_ms"]))

    def put(self, key: str, response: Any, latency_ms: float) -> None:
        self._rows.put(key, {"response": response, "latency_ms": latency_ms})

    def close(self) -> None:
        self._rows.close()
