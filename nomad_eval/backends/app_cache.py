"""The app's HTTP responses cached by the request (method, URL, rendered body, plain headers, secret header names)
and the repeat index, so a re-run of an unchanged suite calls the app again only for what changed."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from nomad_eval.base.sqlite_store import open_rebuildable


class AppResponseCache:
    def __init__(self, path: Path) -> None:
        # The raw response, not the parsed answer: changing a response path re-reads it without a call.
        self._db = open_rebuildable(path, "CREATE TABLE IF NOT EXISTS app (key TEXT PRIMARY KEY, body TEXT)",
                                    "app response cache", check_same_thread=False)
        self._lock = threading.Lock()

    def get(self, key: str) -> tuple[Any, float] | None:
        """The response's JSON and the latency (ms) of the call that produced it."""
        with self._lock:
            row = self._db.execute("SELECT body FROM app WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        d = json.loads(row[0])
        return d["response"], float(d["latency_ms"])

    def put(self, key: str, response: Any, latency_ms: float) -> None:
        text = json.dumps({"response": response, "latency_ms": latency_ms})
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO app VALUES (?, ?)", (key, text))
            self._db.commit()  # per answer: a run stopped half way resumes without repeating finished calls

    def close(self) -> None:
        self._db.close()
