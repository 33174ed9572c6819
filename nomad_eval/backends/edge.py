"""Qdrant's own engine in-process (qdrant-edge-py 0.9.0): one shard directory per vector size.

Search is exact-equivalent and, at scale, fast (bench/store_scale.py, README "Search at a million chunks"):
new shards keep an int8 copy of every vector beside the float32 one and no HNSW graph (m=0), so a search scans
the int8 copies (4x less memory to read), takes `OVERSAMPLING` x the limit as candidates and rescores them
against the float32 vectors; the scores returned are those of the float32 vectors, as plain exact search gives.
The int8 copies exist only once `prepare_search` has run the engine's optimizer, which the store does by itself
before the first search of a shard of at least `FAST_MIN_POINTS` points; below that, and on shards made before
this, every search is the plain exact scan.

One shard is searched by one process on one core. Corpora past what that answers fast belong on a Qdrant server
(`store=server`), which shards and searches in parallel itself.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from rich.markup import escape

from nomad_eval.backends.base import Hit, StoredPoint
from nomad_eval.base.console import err_console
from nomad_eval.base.errors import NomadError
from nomad_eval.base.sqlite_store import access_problem, move_aside

# Below this a plain exact scan already answers in about 10 ms (bench.json store_100k), and the shard is left as it
# is written, so small stores and tests search exactly as they always have.
FAST_MIN_POINTS = 100_000
# Candidates taken from the int8 scan per result wanted, then rescored exactly. 2x missed 1 of 1000 true top-10
# neighbours on clustered MiniLM vectors at 200k; 4x missed none there or at 1M (bench/results/store_scale.json).
OVERSAMPLING = 4.0


class EdgeStore:
    def __init__(self, path: str, dim: int, tag_key: str, tag: str, rebuild_corrupt: bool = True,
                 fast_search: bool = True, fast_min_points: int = FAST_MIN_POINTS) -> None:
        import qdrant_edge as qe

        self._qe = qe
        self._fast_search = fast_search
        self.fast_min_points = fast_min_points
        self._prepared = False  # whether prepare_search has run since the last write
        self._filter_needed: dict[str | None, bool] = {}  # per fingerprint; forgotten on every write
        self._fast: bool | None = None  # read from the shard's config on first use
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
        if not self._fast_search:
            cfg = qe.EdgeConfig(vectors=qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine))
            return qe.EdgeShard.create(str(self.path), cfg)
        vectors = qe.EdgeVectorParams(
            size=dim, distance=qe.Distance.Cosine,
            quantization_config=qe.ScalarQuantizationConfig(type=qe.ScalarType.Int8, always_ram=True),
            # m=0: the optimizer builds no graph, so every search stays a full scan (never approximate), and the
            # full-scan threshold is set past any size for the same reason.
            hnsw_config=qe.HnswIndexConfig(m=0, ef_construct=100, full_scan_threshold=2**40, payload_m=0))
        # indexing_threshold=1 KB: when prepare_search runs the optimizer, every segment gets its int8 copy.
        cfg = qe.EdgeConfig(vectors=vectors, optimizers=qe.EdgeOptimizersConfig(indexing_threshold=1))
        return qe.EdgeShard.create(str(self.path), cfg)

    @property
    def fast(self) -> bool:
        """Whether this shard was made for the int8-scan-and-rescore search (older shards search exactly)."""
        if self._fast is None:
            self._fast = self._fast_config()
        return self._fast

    def _fast_config(self) -> bool:
        if not self._fast_search:
            return False
        try:
            vec = json.loads((self.path / "edge_config.json").read_text())["vectors"][""]
        except (OSError, KeyError, ValueError):
            return False
        return bool(vec.get("quantization_config", {}).get("scalar")) and (vec.get("hnsw_config") or {}).get("m") == 0

    def prepare_search(self) -> bool:
        """Build the int8 copies if the shard is large enough and has points without them; True if it built."""
        self._prepared = True
        if not self.fast:
            return False
        info = self._shard.info()
        if info.points_count < self.fast_min_points or info.indexed_vectors_count >= info.points_count:
            return False
        err_console.print(f"[dim]building the int8 search copies of {info.points_count} points at {self.path}[/]")
        self._shard.optimize()
        return True

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
        self._written()
        batch = [qe.Point(p.point_id, p.vector.astype(np.float32), p.payload) for p in points]
        for i in range(0, len(batch), 512):
            self._shard.update(qe.UpdateOperation.upsert_points(batch[i : i + 512]))

    def delete_tagged(self, fingerprint: str | None = None) -> None:
        self._written()
        self._shard.update(self._qe.UpdateOperation.delete_points_by_filter(self._filter(fingerprint)))

    def _written(self) -> None:
        self._prepared = False
        self._filter_needed.clear()

    def count(self, fingerprint: str | None = None, tagged: bool = True) -> int:
        flt = self._filter(fingerprint) if tagged else None
        return int(self._shard.count(self._qe.CountRequest(exact=True, filter=flt)))

    def search(
        self, vector: np.ndarray, limit: int, threshold: float | None, fingerprint: str | None
    ) -> list[Hit]:
        if not self.fast:
            return self.search_exact(vector, limit, threshold, fingerprint)
        if not self._prepared:
            self.prepare_search()
        return self._search(vector, limit, threshold, fingerprint, exact=False)

    def search_exact(
        self, vector: np.ndarray, limit: int, threshold: float | None, fingerprint: str | None
    ) -> list[Hit]:
        """Plain exact search: every float32 vector scored, the filter checked per point (the reference)."""
        return self._search(vector, limit, threshold, fingerprint, exact=True)

    def _search(self, vector: np.ndarray, limit: int, threshold: float | None, fingerprint: str | None,
                exact: bool) -> list[Hit]:
        qe = self._qe
        if exact:
            req = qe.QueryRequest(query=qe.Query.Nearest(vector.astype(np.float32)), limit=limit,
                                  filter=self._filter(fingerprint), score_threshold=threshold,
                                  params=qe.SearchParams(exact=True), with_payload=True, with_vector=False)
            return [Hit(str(p.id), float(p.score), dict(p.payload)) for p in self._shard.query(req)]
        if fingerprint not in self._filter_needed:
            # The shard is locked to this process, so a count taken after our last write stays true. When every
            # point carries the tag and fingerprint, the filter selects the whole shard: leaving it out returns
            # the same points and saves checking it for each of them (a third of an exact scan's time).
            total = self.count(tagged=False)
            self._filter_needed[fingerprint] = self.count(fingerprint) != total
        req = qe.QueryRequest(
            query=qe.Query.Nearest(vector.astype(np.float32)),
            limit=limit,
            filter=self._filter(fingerprint) if self._filter_needed[fingerprint] else None,
            # No score_threshold here: the engine would apply it to the int8 scores before rescoring. The
            # rescored top `limit` is cut below instead, as the engine cuts: a score equal to the threshold is
            # dropped (tests/backends/test_edge_search.py pins this against plain exact search).
            params=qe.SearchParams(quantization=qe.QuantizationSearchParams(rescore=True, oversampling=OVERSAMPLING)),
            with_payload=True,
            with_vector=False,
        )
        hits = [Hit(str(p.id), float(p.score), dict(p.payload)) for p in self._shard.query(req)]
        return hits if threshold is None else [h for h in hits if h.score > threshold]

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
