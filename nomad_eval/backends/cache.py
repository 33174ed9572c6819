"""Content-addressed embedding cache on disk: a model call is paid once per (embedder, exact text).

Every vector is stored with a checksum of its key and bytes. SQLite's own check (`PRAGMA quick_check`, at open)
sees damaged pages, not damaged values: a flipped sign bit or a zeroed vector inside a sound page reads back as
a plausible vector and moves every number computed from it. So each row is checked as it is read; a row that
fails (checksum, length, type) is counted as damage, named in one warning, recomputed and written again.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from rich.markup import escape

from nomad_eval.backends.base import Embedder
from nomad_eval.base.console import err_console
from nomad_eval.base.errors import NomadError
from nomad_eval.base.sqlite_store import is_corruption, move_aside, open_rebuildable

# `emb` held vectors without checksums: they cannot be told apart from damaged ones, so they are dropped once and
# recomputed as they are asked for.
_SCHEMA = ("DROP TABLE IF EXISTS emb;\n"
           "CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, dim INT, vec BLOB, sum BLOB)")


def _key(head: str, text: str) -> str:
    return hashlib.sha256(f"{head}\0{text}".encode()).hexdigest()


def checksum(key: str, vec: bytes) -> bytes:
    """Binds a vector's bytes to its key: a changed value, or a value moved to another key, fails."""
    return hashlib.blake2b(key.encode() + b"\0" + vec, digest_size=16).digest()


def _vector(key: str, dim: Any, blob: Any, digest: Any, want: int | None) -> np.ndarray | None:
    """The row's vector, or None when the row is not what was written (damaged, wrong length or type)."""
    if not isinstance(blob, bytes) or not isinstance(digest, bytes) or len(blob) % 4 or not blob:
        return None
    if dim != len(blob) // 4 or (want is not None and dim != want) or checksum(key, blob) != digest:
        return None
    return np.frombuffer(blob, dtype=np.float32)


class EmbeddingCache:
    def __init__(self, path: Path) -> None:
        # Shared by parallel sweep jobs (WAL mode); a damaged file is moved aside and the cache refilled, since
        # every vector in it can be computed again.
        self.path = path
        self._damaged: set[str] = set()  # keys whose rows failed their check, so each is named once
        self._db = open_rebuildable(path, _SCHEMA, "embedding cache")

    def get_many(self, keys: list[str], dim: int | None = None) -> dict[str, np.ndarray]:
        """The cached vectors of `keys` (of length `dim` when given). A row that fails its check is left out, so
        the caller recomputes it, and named in a warning."""
        found: dict[str, np.ndarray] = {}
        damaged = 0
        try:
            for i in range(0, len(keys), 500):
                part = keys[i : i + 500]
                marks = ",".join("?" * len(part))
                # The key read as bytes: a damaged one may not decode, and must count as damage, not stop the run.
                rows = self._db.execute(f"SELECT CAST(key AS BLOB), dim, vec, sum FROM vectors WHERE key IN "
                                        f"({marks})", part).fetchall()
                for raw, n, blob, digest in rows:
                    key = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else ""
                    vec = _vector(key, n, blob, digest, dim)
                    if vec is None or key not in part:
                        damaged += key not in self._damaged  # asked again before it is recomputed: named once
                        self._damaged.add(key)
                    else:
                        found[key] = vec
        except sqlite3.DatabaseError as exc:
            self._unreadable(exc)  # what was read before stays: every vector in it passed its checksum
        if damaged:
            err_console.print(f"[yellow]warning:[/] the embedding cache at {escape(str(self.path))} holds {damaged} "
                              "damaged vector(s) (checksum, length or type wrong); recomputing them", soft_wrap=True)
        return found

    def _unreadable(self, exc: sqlite3.DatabaseError) -> None:
        """Damage the check at open did not see (it reads pages, not whether an index agrees with its table):
        the file is moved aside and a new one started, as at open."""
        if not is_corruption(exc):  # busy past the timeout, full, read-only: nothing a new file would fix
            raise NomadError(f"cannot use the embedding cache at {self.path}: {exc}") from None
        self._db.close()
        aside = move_aside(self.path)
        err_console.print(f"[yellow]warning:[/] the embedding cache at {escape(str(self.path))} is damaged "
                          f"({escape(str(exc))}); moved it to {escape(str(aside))} and started a new one, refilled "
                          "as the run goes", soft_wrap=True)
        self._db = open_rebuildable(self.path, _SCHEMA, "embedding cache")

    def put_many(self, items: dict[str, np.ndarray]) -> None:
        rows = []
        for k, v in items.items():
            blob = np.ascontiguousarray(v, dtype=np.float32).tobytes()
            rows.append((k, len(blob) // 4, blob, checksum(k, blob)))
        for attempt in (1, 2):
            try:
                self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)", rows)
                self._db.commit()
                return
            except sqlite3.DatabaseError as exc:
                self._db.rollback()
                if attempt == 2:
                    raise NomadError(f"cannot write to the embedding cache at {self.path}: {exc}") from None
                self._unreadable(exc)

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

    def _keys(self, texts: list[str]) -> list[str]:
        # An embedder's identity does not change while it lives (an Ollama digest is asked once, then remembered),
        # and building it reads package metadata: once per embedder, not once per question.
        # The embedder's whole identity (weights, truncation, ...), not only its name: a vector made with other
        # settings must never answer for this one.
        if self._head is None:
            self._head = json.dumps(self.embedder.identity(), sort_keys=True)
        return [_key(self._head, t) for t in texts]

    def _found(self, keys: list[str]) -> dict[str, np.ndarray]:
        found = {k: self._memo[k] for k in keys if k in self._memo}
        if len(found) < len(set(keys)):
            found.update(self.cache.get_many([k for k in keys if k not in found], self.embedder.dim))
        return found

    def _missing(self, texts: list[str]) -> int:
        keys = self._keys(texts)
        found = self._found(keys)
        if len(self._memo) < 200_000:
            self._memo.update(found)  # the embedding that follows reads them from here, not SQLite again
        return len(set(keys)) - len(found)

    def cached_documents(self, texts: list[str]) -> list[np.ndarray | None]:
        """Each document's cached vector, or None where the cache has none (no model is asked)."""
        keys = self._keys([self.embedder.document_prefix + t for t in texts])
        found = self._found(keys)
        return [found.get(k) for k in keys]

    def missing_documents(self, texts: list[str]) -> int:
        """How many distinct documents of `texts` have no vector yet: what the model would have to embed."""
        return self._missing([self.embedder.document_prefix + t for t in texts])

    def missing_queries(self, texts: list[str]) -> int:
        """How many distinct queries of `texts` have no vector yet."""
        return self._missing([self.embedder.query_prefix + t for t in texts])

    def _embed(self, texts: list[str], on_progress: Callable[[int], None] | None) -> np.ndarray:
        keys = self._keys(texts)
        found = self._found(keys)
        missing = list(dict.fromkeys(t for t, k in zip(texts, keys, strict=True) if k not in found))
        if on_progress:
            on_progress(len(texts) - len(missing))
        for i in range(0, len(missing), self.batch):
            part = missing[i : i + self.batch]
            vecs = self.embedder.embed(part)
            self.model_calls += 1
            new = dict(zip(self._keys(part), vecs, strict=True))
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
