"""Answers cached on disk: a chat model's by backend, model, the full prompt, options and repeat index, and the
user's app's HTTP responses by the request and repeat index, so a re-run of an unchanged config costs almost
nothing; repeats stay independent because the repeat index is part of the key.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nomad_eval.backends.base import Identity
from nomad_eval.backends.chat import ChatModel, ChatOptions, ChatResult, Message, TokenLogprob, count
from nomad_eval.base.atomic import JsonValue
from nomad_eval.base.console import err_console
from nomad_eval.base.json_fields import items, real
from nomad_eval.base.sqlite_store import open_rebuildable


def response_key(identity: Identity, messages: list[Message], options: Mapping[str, JsonValue], repeat: int
                 ) -> str:
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
        if result.served is not None:
            body["served"] = result.served
        if result.logprobs is not None:
            # Positional triples [token, logprob, [[alternative, logprob], ...]]: a judge asks for a few
            # alternatives at each of up to judging.max_tokens positions, so key names would dominate the row.
            body["logprobs"] = [[t.token, t.logprob, [list(a) for a in t.top]] for t in result.logprobs]
        self._rows.put(key, body)

    def close(self) -> None:
        self._rows.close()


def _result(d: Mapping[str, object] | None) -> ChatResult | None:
    """A row's body back into a result; any other shape raises (TypeError, ValueError, KeyError)."""
    if d is None:
        return None
    # Rows written before logprobs were kept have no "logprobs": they load as a result without them.
    lp = d.get("logprobs")
    logprobs = None if lp is None else tuple(_logprob(items(row)) for row in items(lp))
    text = d["text"]
    if not isinstance(text, str):
        raise TypeError("text is not a string")
    served = d.get("served")
    served = {str(k): None if v is None else str(v) for k, v in served.items()} if isinstance(served, dict) else None
    return ChatResult(text, count(d.get("prompt_tokens")), count(d.get("completion_tokens")), logprobs, served)



def _logprob(row: list[object]) -> TokenLogprob:
    """A token's row as the cache keeps it: [token, logprob, [[alternative, logprob], ...]]."""
    t, p, top = row
    return TokenLogprob(str(t), real(p), tuple((str(a), real(q)) for a, q in map(items, items(top))))


class CachedChat:
    """A chat model behind the response cache, counting what it really spent.

    A backend that names its weights in identity() (a digest, a file's hash) is answered from rows of that key.
    One under test whose server can only say, with each answer, which model answered (`reports_served`:
    OpenAI-compatible servers give a model id and, some, a system fingerprint) has its first answer of a run asked
    live; a cached
    answer is then served only when it was given by what the server serves now, so a model swapped behind the
    same name is asked again. A server that reports no fingerprint is said to be trusted by the model's name."""

    def __init__(self, model: ChatModel, cache: ResponseCache | None, under_test: bool = False) -> None:
        self.model = model
        self.cache = cache
        self.calls = 0
        self.hits = 0
        # Only the model under test is checked so; a judge's verdicts are keyed by its identity as before.
        self.verify = under_test and bool(getattr(model, "reports_served", False))
        self.served_now: dict[str, str | None] | None = None  # what the server said with this run's first answer
        self._lock = threading.Lock()
        self._first = threading.Lock()

    def identity(self) -> Identity:
        return self.model.identity()

    def cached(self, messages: list[Message], options: ChatOptions, repeat: int) -> ChatResult | None:
        """The answer the cache holds for this call, without asking the model or counting a hit."""
        if self.cache is None:
            return None
        return self.cache.get(response_key(self.model.identity(), messages, options.as_dict(), repeat))

    def chat(self, messages: list[Message], options: ChatOptions, repeat: int) -> ChatResult:
        key = response_key(self.model.identity(), messages, options.as_dict(), repeat)
        hit = self.cache.get(key) if self.cache is not None else None
        if hit is not None and self.verify:
            with self._first:  # the others wait for what the first live answer says the server serves
                if self.served_now is None:
                    return self._ask(messages, options, key)
            hit = hit if hit.served == self.served_now else None
        if hit is not None:
            with self._lock:
                self.hits += 1
            return hit
        return self._ask(messages, options, key)

    def _ask(self, messages: list[Message], options: ChatOptions, key: str) -> ChatResult:
        result = self.model.chat(messages, options)
        with self._lock:
            self.calls += 1
            learned = self.verify and self.served_now is None
            if learned:
                self.served_now = result.served or {}
        if learned and self.cache is not None and not (result.served or {}).get("system_fingerprint"):
            err_console.print(f"warning: {self.model.name}: the server reports no system fingerprint, so its "
                              "cached answers are trusted by the model's name only (a model swapped behind the "
                              "same name is not seen); cache=false asks it for every answer", markup=False)
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
