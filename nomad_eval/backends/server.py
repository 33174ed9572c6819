"""A Qdrant server through qdrant-client: the path once the store outgrows one machine.

Tests drive it through qdrant-client's local mode (`url=":memory:"`), which speaks the same API.
"""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np

from nomad_eval.backends.base import Hit, Payload, StoredPoint
from nomad_eval.base.errors import NomadError
from nomad_eval.base.secrets import redact_text


class ServerStore:
    def __init__(
        self,
        url: str,
        dim: int,
        collection: str,
        tag_key: str,
        tag: str,
        timeout: float,
        api_key: str | None = None,
        client: Any = None,
    ) -> None:
        from qdrant_client import QdrantClient, models

        self._m = models
        self.url = url
        self.tag_key = tag_key
        self.tag = tag
        self.collection = collection
        self.dim = dim
        if client is not None:  # an already-open client, e.g. qdrant-client's local mode in tests
            self._client = client
        elif url == ":memory:" or not url.startswith(("http://", "https://")):
            self._client = QdrantClient(location=url) if url == ":memory:" else QdrantClient(path=url)
        else:
            # An unreachable server is reported below in one line; the client's version-check warning about the
            # same connection would only add noise. The client checks in a thread of its own that may warn after
            # this constructor returns, so a filter scoped to this block (catch_warnings) cannot hold it.
            warnings.filterwarnings("ignore", message="Failed to obtain server version", category=UserWarning)
            self._client = QdrantClient(url=url, timeout=int(timeout), api_key=api_key)
        self._prepare(api_key)

    def _prepare(self, api_key: str | None) -> None:
        """The collection made, or checked for the embedder's dimension, with its keyword indexes; a server that
        cannot do this is refused in one line, its key redacted."""
        m, collection, url, dim = self._m, self.collection, self.url, self.dim
        try:
            exists = self._client.collection_exists(collection)
            if not exists:
                self._client.create_collection(
                    collection, vectors_config=m.VectorParams(size=dim, distance=m.Distance.COSINE)
                )
            else:
                size = self._client.get_collection(collection).config.params.vectors.size
                if size != dim:
                    raise NomadError(
                        f"collection {collection!r} at {redact_text(url)} holds {size}-d vectors but the embedder "
                        f"makes {dim}-d; use another store.collection"
                    )
            with warnings.catch_warnings():
                # Local mode (tests) warns that indexes are no-ops there; on a server they are real.
                warnings.simplefilter("ignore", UserWarning)
                for key in (self.tag_key, "fingerprint"):
                    self._client.create_payload_index(collection, key, m.PayloadSchemaType.KEYWORD)
        except NomadError:
            raise
        except Exception as exc:
            keys = [api_key] if api_key else []
            raise NomadError(f"Qdrant server at {redact_text(url)} is not usable: "
                             f"{redact_text(str(exc), keys)}") from None

    def _filter(self, fingerprint: str | None) -> Any:
        m = self._m
        must = [m.FieldCondition(key=self.tag_key, match=m.MatchValue(value=self.tag))]
        if fingerprint is not None:
            must.append(m.FieldCondition(key="fingerprint", match=m.MatchValue(value=fingerprint)))
        return m.Filter(must=must)

    def upsert(self, points: list[StoredPoint]) -> None:
        for p in points:
            if p.payload.get(self.tag_key) != self.tag:
                raise ValueError(f"refusing to write an untagged point {p.point_id}")
        structs = [
            self._m.PointStruct(id=str(uuid.UUID(p.point_id)), vector=p.vector.astype(float).tolist(),
                                payload=p.payload)
            for p in points
        ]
        for i in range(0, len(structs), 256):
            self._client.upsert(self.collection, structs[i : i + 256], wait=True)

    def delete_tagged(self, fingerprint: str | None = None) -> None:
        selector = self._m.FilterSelector(filter=self._filter(fingerprint))
        self._client.delete(self.collection, points_selector=selector, wait=True)

    def count(self, fingerprint: str | None = None, tagged: bool = True) -> int:
        flt = self._filter(fingerprint) if tagged else None
        return int(self._client.count(self.collection, count_filter=flt, exact=True).count)

    def search(
        self, vector: np.ndarray, limit: int, threshold: float | None, fingerprint: str | None
    ) -> list[Hit]:
        res = self._client.query_points(
            self.collection,
            query=vector.astype(float).tolist(),
            limit=limit,
            query_filter=self._filter(fingerprint),
            score_threshold=threshold,
            with_payload=True,
            search_params=self._m.SearchParams(exact=True),
        )
        return [Hit(str(p.id), float(p.score), dict(p.payload or {})) for p in res.points]

    def scroll(self, tagged: bool = False, with_vector: bool = False) -> list[tuple[str, Payload, Any]]:
        out: list[tuple[str, Payload, Any]] = []
        offset = None
        while True:
            recs, offset = self._client.scroll(
                self.collection, scroll_filter=self._filter(None) if tagged else None,
                limit=1000, offset=offset, with_payload=True, with_vectors=with_vector,
            )
            out.extend((str(r.id), dict(r.payload or {}), r.vector if with_vector else None) for r in recs)
            if offset is None:
                return out

    def health(self) -> str | None:
        """A sample of the eval's points read back with their vectors; the server keeps its own files sound."""
        try:
            recs, _ = self._client.scroll(self.collection, scroll_filter=self._filter(None), limit=64,
                                          with_payload=False, with_vectors=True)
        except Exception as exc:
            return f"cannot be read ({exc})"
        for r in recs:
            vec = np.asarray(r.vector, dtype=np.float32)
            if vec.shape != (self.dim,) or not np.isfinite(vec).all() or not vec.any():
                return f"is damaged (point {r.id} has a vector of {vec.size} values, zero or not finite)"
        return None

    def close(self) -> None:
        self._client.close()


class CollectionReader:
    """A served collection read as it is, never written (no collection made, no index added): what an audit of
    the collection a team's app searches needs. Scrolls every point with its payload and vector, as a Qdrant server
    answers them (qdrant-client's local mode, a folder or `:memory:`, speaks the same calls)."""

    def __init__(self, url: str, collection: str, timeout: float, api_key: str | None = None, **_: Any) -> None:
        from qdrant_client import QdrantClient

        self.url = url
        self.collection = collection
        self._key = [api_key] if api_key else []
        if url == ":memory:" or not url.startswith(("http://", "https://")):
            self._client = QdrantClient(location=url) if url == ":memory:" else QdrantClient(path=url)
        else:
            warnings.filterwarnings("ignore", message="Failed to obtain server version", category=UserWarning)
            self._client = QdrantClient(url=url, timeout=int(timeout), api_key=api_key)

    def _fail(self, exc: Exception) -> NomadError:
        return NomadError(f"collection {self.collection!r} at {redact_text(self.url)} cannot be read: "
                          f"{redact_text(str(exc), self._key)}", 2)

    def count(self) -> int:
        try:
            if not self._client.collection_exists(self.collection):
                raise NomadError(f"Qdrant at {redact_text(self.url)} has no collection {self.collection!r} "
                                 "(store.collection)", 2)
            return int(self._client.count(self.collection, exact=True).count)
        except NomadError:
            raise
        except Exception as exc:
            raise self._fail(exc) from None

    def points(self, batch: int = 1000) -> Iterator[tuple[str, Payload, Any]]:
        """(id, payload, vector) of every point; a collection of named vectors gives its only one (or None)."""
        offset = None
        while True:
            try:
                recs, offset = self._client.scroll(self.collection, limit=batch, offset=offset, with_payload=True,
                                                   with_vectors=True)
            except Exception as exc:
                raise self._fail(exc) from None
            for r in recs:
                vec: Any = r.vector
                if isinstance(vec, dict):
                    vec = next(iter(vec.values())) if len(vec) == 1 else None
                yield str(r.id), dict(r.payload or {}), vec
            if offset is None:
                return

    def close(self) -> None:
        self._client.close()
