"""Qdrant's own engine in-process (qdrant-edge-py 0.9.0): one shard directory per vector size."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from rich.markup import escape

from nomad_eval.backends.base import Hit, StoredPoint
from nomad_eval.base.console import err_console
from nomad_eval.base.errors import NomadError
from nomad_eval.base.sqlite_store import access_problem, move_aside


class EdgeStore:
    def __init__(self, path: str, dim: int, tag_key: str = "collection", tag: str = "__nomad_eval__",
                 rebuild_corrupt: bool = True) -> None:
        import qdrant_edge as qe

        self._qe = qe
        self.tag_key = tag_key
        self.tag = tag
        self.path = Path(path) / f"dim-{dim}"
        self.dim = dim
        try:
            self._shard = self._open(qe, dim)
        except Exception as exc:  # the binding raises plain exceptions with the engine's message
            if "WouldBlock" in str(exc):
                raise NomadError(
                    f"the embedded store at {self.path} is open in another process. Wait for it to "
                    "finish, or give this run its own paths.data_dir."
                ) from None
            msg = str(exc).lower()
            # Only damage is repaired. A permission problem, a shard written by a newer engine, or a failure of
            # our own file calls (OSError) says nothing about the shard's contents: moving it aside would hide a
            # good store behind a rebuild, so it is reported and left as it is.
            other = access_problem(self.path) or (
                f"{exc}" if isinstance(exc, OSError) or "permission denied" in msg or "os error 13" in msg
                or any(m in msg for m in ("newer than", "upgrade", "incompatib")) else None)
            damaged = any(m in msg for m in ("deserializ", "parse", "invalid", "corrupt", "malformed", "eof",
                                             "unexpected", "can't init wal", "checksum"))
            if not rebuild_corrupt or other or not damaged:
                raise NomadError(f"cannot open the embedded store at {self.path}: {other or exc}; it was left as "
                                 "it is") from None
            # A corrupted shard is moved aside, never deleted, and rebuilt: the run then re-ingests its
            # corpus because the new shard lacks the fingerprint.
            aside = move_aside(self.path)
            err_console.print(f"[yellow]warning:[/] the embedded store at {self.path} could not be opened "
                              f"({escape(str(exc)[:160])}); moved it to {aside} and started a new one, to be rebuilt "
                              "from the corpus")
            self._shard = self._open(qe, dim)
        schema = self._shard.info().payload_schema
        for key in (tag_key, "fingerprint"):
            if key not in schema:
                self._shard.update(qe.UpdateOperation.create_field_index(key, qe.PayloadSchemaType.Keyword))

    def _open(self, qe: Any, dim: int) -> Any:
        if (self.path / "edge_config.json").exists():
            return qe.EdgeShard.load(str(self.path))
        self.path.mkdir(parents=True, exist_ok=True)
        cfg = qe.EdgeConfig(vectors=qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine))
        return qe.EdgeShard.create(str(self.path), cfg)

    def _filter(self, fingerprint: str | None) -> Any:
        qe = self._qe
        must = [qe.FieldCondition(key=self.tag_key, match=qe.MatchValue(self.tag))]
        if fingerprint is not None:
            must.append(qe.FieldCondition(key="fingerprint", match=qe.MatchValue(fingerprint)))
        return qe.Filter(must=must)

    def upsert(self, points: list[StoredPoint]) -> None:
        qe = self._qe
        for p in points:
            if p.payload.get(self.tag_key) != self.tag:
                raise ValueError(f"refusing to write an untagged point {p.point_id}")
        batch = [qe.Point(p.point_id, p.vector.astype(np.float32), p.payload) for p in points]
        for i in range(0, len(batch), 512):
            self._shard.update(qe.UpdateOperation.upsert_points(batch[i : i + 512]))

    def delete_tagged(self, fingerprint: str | None = None) -> None:
        self._shard.update(self._qe.UpdateOperation.delete_points_by_filter(self._filter(fingerprint)))

    def count(self, fingerprint: str | None = None, tagged: bool = True) -> int:
        flt = self._filter(fingerprint) if tagged else None
        return int(self._shard.count(self._qe.CountRequest(exact=True, filter=flt)))

    def search(
        self, vector: np.ndarray, limit: int, threshold: float | None, fingerprint: str | None
    ) -> list[Hit]:
        qe = self._qe
        req = qe.QueryRequest(
            query=qe.Query.Nearest(vector.astype(np.float32)),
            limit=limit,
            filter=self._filter(fingerprint),
            score_threshold=threshold,
            with_payload=True,
            with_vector=False,
        )
        return [Hit(str(p.id), float(p.score), dict(p.payload)) for p in self._shard.query(req)]

    def scroll(self, tagged: bool = False, with_vector: bool = False) -> list[tuple[str, dict[str, Any], Any]]:
        """Every point as (id, payload, vector); for tests that prove foreign points are untouched."""
        qe = self._qe
        out: list[tuple[str, dict[str, Any], Any]] = []
        offset = None
        while True:
            recs, offset = self._shard.scroll(
                qe.ScrollRequest(
                    limit=1000, offset=offset, filter=self._filter(None) if tagged else None,
                    with_payload=True, with_vector=with_vector,
                )
            )
            out.extend((str(r.id), dict(r.payload), r.vector if with_vector else None) for r in recs)
            if offset is None:
                return out

    def close(self) -> None:
        self._shard.flush()
        self._shard.close()
