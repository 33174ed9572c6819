"""Chat responses cached by backend, model, the full prompt, options and repeat index.

A re-run of an unchanged config costs almost nothing, and repeats stay independent because the
repeat index is part of the key.
"""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path
from typing import Any

from nomad_eval.backends.chat import ChatResult, TokenLogprob, count
from nomad_eval.base.sqlite_store import open_rebuildable


def response_key(identity: dict[str, Any], messages: list[dict[str, str]], options: dict[str, Any],
                 repeat: int) -> str:
    blob = json.dumps({"id": identity, "m": messages, "o": options, "r": repeat}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


class ResponseCache:
    def __init__(self, path: Path) -> None:
        # A damaged file is moved aside and refilled: a cached answer is one model call away from coming back.
        self._db = open_rebuildable(path, "CREATE TABLE IF NOT EXISTS resp (key TEXT PRIMARY KEY, body TEXT)",
                                    "response cache", check_same_thread=False)
        self._lock = threading.Lock()

    def get(self, key: str) -> ChatResult | None:
        """The cached answer, or None: never cached, an empty answer (written before empty answers were kept
        out), or a row that cannot be read. Each of those is asked again, and the new answer replaces the row."""
        with self._lock:
            row = self._db.execute("SELECT CAST(body AS BLOB) FROM resp WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            result = _result(json.loads(row[0]))
        except (TypeError, ValueError, KeyError, AttributeError):
            return None
        return result if result.text.strip() else None

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
        text = json.dumps(body)
        with self._lock:
            # Committed per answer, so a run killed half way resumes without repeating finished calls.
            self._db.execute("INSERT OR REPLACE INTO resp VALUES (?, ?)", (key, text))
            self._db.commit()

    def close(self) -> None:
        self._db.close()


def _result(d: dict[str, Any]) -> ChatResult:
    """A row's body back into a result; any other shape raises (TypeError, ValueError, KeyError)."""
    # Rows written before logprobs were kept have no "logprobs": they load as a result without them.
    lp = d.get("logprobs")
    logprobs = None if lp is None else tuple(TokenLogprob(str(t), float(p), tuple((str(a), float(q)) for a, q in top))
                                             for t, p, top in lp)
    text = d["text"]
    if not isinstance(text, str):
        raise TypeError("text is not a string")
    return ChatResult(text, count(d.get("prompt_tokens")), count(d.get("completion_tokens")), logprobs)
