"""Content-addressed embedding cache on disk: a model call is paid once per (embedder, exact text)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from nomad_eval.backends.base import Embedder
from nomad_eval.base.sqlite_store import open_rebuildable


def key_head(identity: dict[str, Any]) -> str:
    # The embedder's whole identity (weights, truncation, ...), not only its name: a vector made with other
    # settings must never answer for this one.
    return json.dumps(identity, sort_keys=True)


def _key(head: str, text: str) -> str:
    return hashlib.sha256(f"{head}\0{text}".encode()).hexdigest()


class EmbeddingCache:
    def __init__(self, path: Path) -> None:
        # Shared by parallel sweep jobs (WAL mode); a damaged file is moved aside and the cache refilled, since
        # every vector in it can be computed again.
        self._db = open_rebuildable(path, "CREATE TABLE IF NOT EXISTS emb (key TEXT PRIMARY KEY, dim INT, vec BLOB)",
                                    "embedding cache")

    def get_many(self, keys: list[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        for i in range(0, len(keys), 500):
            part = keys[i : i + 500]
            marks = ",".join("?" * len(part))
            for key, _dim, blob in self._db.execute(f"SELECT key, dim, vec FROM emb WHERE key IN ({marks})", part):
                found[key] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put_many(self, items: dict[str, np.ndarray]) -> None:
        rows = [(k, int(v.shape[0]), v.astype(np.float32).tobytes()) for k, v in items.items()]
        self._db.executemany("INSERT OR REPLACE INTO emb VALUES (?, ?, ?)", rows)
        self._db.commit()

    def close(self) -> None:
        self._db.close()


class CachedEmbedder:
    """Applies the embedder's prefixes, then answers from the cache and embeds only what is missing."""

    def __init__(self, embedder: Embedder, cache: EmbeddingCache, batch: int = 64) -> None:
        self.embedder = embedder
        self.cache = cache
        self.batch = batch
        self.model_calls = 0
        self._memo: dict[str, np.ndarray] = {}  # this run's lookups, so a repeated text skips SQLite
        self._head: str | None = None

    def _embed(self, texts: list[str], on_progress: Callable[[int], None] | None) -> np.ndarray:
        # An embedder's identity does not change while it lives (an Ollama digest is asked once, then remembered),
        # and building it reads package metadata: once per embedder, not once per question.
        if self._head is None:
            self._head = key_head(self.embedder.identity())
        head = self._head
        keys = [_key(head, t) for t in texts]
        found = {k: self._memo[k] for k in keys if k in self._memo}
        if len(found) < len(set(keys)):
            found.update(self.cache.get_many([k for k in keys if k not in found]))
        missing = list(dict.fromkeys(t for t, k in zip(texts, keys, strict=True) if k not in found))
        if on_progress:
            on_progress(len(texts) - len(missing))
        for i in range(0, len(missing), self.batch):
            part = missing[i : i + self.batch]
            vecs = self.embedder.embed(part)
            self.model_calls += 1
            new = {_key(head, t): v for t, v in zip(part, vecs, strict=True)}
            self.cache.put_many(new)
            found.update(new)
            if on_progress:
                on_progress(len(part))
        if not texts:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        if len(self._memo) < 200_000:
            self._memo.update(found)
        return np.stack([found[k] for k in keys])

    def embed_documents(self, texts: list[str], on_progress: Callable[[int], None] | None = None) -> np.ndarray:
        return self._embed([self.embedder.document_prefix + t for t in texts], on_progress)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self._embed([self.embedder.query_prefix + t for t in texts], None)
