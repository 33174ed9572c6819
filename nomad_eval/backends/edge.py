"""Qdrant's own engine in-process (qdrant-edge-py 0.9.0): one shard directory per vector size.

Search is exact-equivalent and, at scale, fast (bench/store_scale.py, README "Search at a million chunks"):
new shards keep an int8 copy of every vector beside the float32 one and no HNSW graph (m=0), so a search scans
the int8 copies (4x less memory to read), takes `OVERSAMPLING` x the limit as candidates and rescores them
against the float32 vectors; the scores returned are those of the float32 vectors, as plain exact search gives.
The int8 copies exist only once `prepare_search` has run the engine's optimizer, which the store does by itself
before the first search of a shard of at least `FAST_MIN_POINTS` points; below that, and on shards made before
this, every search is the plain exact scan.

A shard of at least `PARALLEL_MIN_POINTS` points is also split in two by that first `prepare_search`, and its
searches use both cores (edge_parts.py): the engine searches a shard on the calling thread alone and holds the GIL
while it does, and a shard directory admits one process, so the points whose id hashes to part 1 move to a second
shard directory that a worker process searches while this one searches part 0; the two top lists are merged.
Each part's search is the exact-equivalent one above, so the merged top-k is the exact top-k; only the order
among exactly equal scores can differ from one shard's (the merge orders them by point id). Smaller stores keep
their one shard and every result as before.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
from rich.markup import escape

from nomad_eval.backends import edge_parts
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
# From here a shard is split in two and searched on two cores. The int8 scan of 1M points took 21-51 ms a query on
# one core (bench/results/store_scale.json, bench.json); below 400k it stays under ~20 ms there, and one shard
# keeps the engine's own order among equal scores, on which committed baselines depend.
PARALLEL_MIN_POINTS = 400_000


class EdgeStore:
    def __init__(self, path: str, dim: int, tag_key: str = "collection", tag: str = "__nomad_eval__",
                 rebuild_corrupt: bool = True, fast_search: bool = True,
                 fast_min_points: int = FAST_MIN_POINTS, parallel_min_points: int = PARALLEL_MIN_POINTS,
                 part: int = 0) -> None:
        """`part` 1 opens the second shard of a split store (edge_parts.py); only the store itself does that."""
        import qdrant_edge as qe

        self._qe = qe
        self._fast_search = fast_search
        self.fast_min_points = fast_min_points
        self.parallel_min_points = parallel_min_points
        self._part = part
        self._parts: edge_parts.Parts | None = None  # part 1, once this (part 0) store is split
        self._always_filter = False  # check the filter even where it selects the whole shard (bench only)
        self.split_s: float | None = None  # how long the split took, when this object made it
        self._prepared = False  # whether prepare_search has run since the last write
        self._filter_needed: dict[str | None, bool] = {}  # per fingerprint; forgotten on every write
        self._fast: bool | None = None  # read from the shard's config on first use
        self.tag_key = tag_key
        self.tag = tag
        self.root = Path(path)
        self.path = self.root / (f"dim-{dim}" if part == 0 else edge_parts.part_dir(self.root, dim).name)
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
            edge_parts.discard(self.root, dim)  # a part 1 of the damaged shard must not join the new one
            err_console.print(f"[yellow]warning:[/] the embedded store at {self.path} could not be opened "
                              f"({escape(str(exc)[:160])}); moved it to {aside} and started a new one, to be rebuilt "
                              "from the corpus")
            self._shard = self._open(qe, dim)
        schema = self._shard.info().payload_schema
        for key in (tag_key, "fingerprint"):
            if key not in schema:
                self._shard.update(qe.UpdateOperation.create_field_index(key, qe.PayloadSchemaType.Keyword))
        if part == 0 and self.fast:
            self._parts = edge_parts.reopen(self, open_part_1)

    def open_part(self, create: bool = False) -> EdgeStore:
        """Part 1 of this store, opened in this process; it must exist unless the split is creating it."""
        if not create and not (edge_parts.part_dir(self.root, self.dim) / "edge_config.json").exists():
            raise NomadError(f"{edge_parts.part_dir(self.root, self.dim)}, the second half of the split store at "
                             f"{self.path}, is missing; move both aside and ingest again")
        return EdgeStore(str(self.root), self.dim, self.tag_key, self.tag, rebuild_corrupt=False, part=1)

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
        """Build the int8 copies if the shard is large enough and has points without them, splitting it first
        if it is at least `parallel_min_points`; True if it built (or split)."""
        self._prepared = True
        if not self.fast:
            return False
        built = False
        if self._part == 0 and self._parts is None and self._count_here(tagged=False) >= self.parallel_min_points:
            err_console.print(f"[dim]splitting the {self._count_here(tagged=False)} points at {self.path} in two, "
                              "to search them on two cores[/]")
            t = time.perf_counter()
            self._parts = edge_parts.split(self, open_part_1)
            self.split_s = time.perf_counter() - t
            built = True
        if self._parts is not None:
            self._parts.start()  # the worker builds part 1's int8 copies while this process builds part 0's
        info = self._shard.info()
        # A part of a split store is large by definition: its half gets the int8 copies whatever its size.
        floor = 0 if self._parts is not None or self._part else self.fast_min_points
        if info.points_count >= floor and info.indexed_vectors_count < info.points_count:
            err_console.print(f"[dim]building the int8 search copies of {info.points_count} points at {self.path}[/]")
            self._shard.optimize()
            built = True
        if self._parts is not None:
            self._parts.wait_ready()
        return built

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
        if self._parts is not None:  # each point to the part its id hashes to, where an earlier copy of it lives
            self._parts.here().upsert([p for p in points if edge_parts.part_of(p.point_id)])
            points = [p for p in points if not edge_parts.part_of(p.point_id)]
        batch = [qe.Point(p.point_id, p.vector.astype(np.float32), p.payload) for p in points]
        for i in range(0, len(batch), 512):
            self._shard.update(qe.UpdateOperation.upsert_points(batch[i : i + 512]))

    def delete_tagged(self, fingerprint: str | None = None) -> None:
        self._written()
        if self._parts is not None:
            self._parts.here().delete_tagged(fingerprint)
        self._shard.update(self._qe.UpdateOperation.delete_points_by_filter(self._filter(fingerprint)))

    def _written(self) -> None:
        self._prepared = False
        self._filter_needed.clear()

    def count(self, fingerprint: str | None = None, tagged: bool = True) -> int:
        here = self._count_here(fingerprint, tagged)
        return here if self._parts is None else here + self._parts.here().count(fingerprint, tagged)

    def _count_here(self, fingerprint: str | None = None, tagged: bool = True) -> int:
        flt = self._filter(fingerprint) if tagged else None
        return int(self._shard.count(self._qe.CountRequest(exact=True, filter=flt)))

    def search(
        self, vector: np.ndarray, limit: int, threshold: float | None, fingerprint: str | None
    ) -> list[Hit]:
        if not self.fast:
            return self.search_exact(vector, limit, threshold, fingerprint)
        if not self._prepared:
            self.prepare_search()
        if self._parts is not None:
            return self._parts.search(vector, limit, threshold, fingerprint, exact=False)
        return self._search_here(vector, limit, threshold, fingerprint, exact=False)

    def search_exact(
        self, vector: np.ndarray, limit: int, threshold: float | None, fingerprint: str | None
    ) -> list[Hit]:
        """Plain exact search: every float32 vector scored, the filter checked per point (the reference)."""
        if self._parts is not None:
            return self._parts.search(vector, limit, threshold, fingerprint, exact=True)
        return self._search_here(vector, limit, threshold, fingerprint, exact=True)

    def _search_here(self, vector: np.ndarray, limit: int, threshold: float | None, fingerprint: str | None,
                     exact: bool) -> list[Hit]:
        """One search of this object's own shard (of one part, when split)."""
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
            total = self._count_here(tagged=False)
            self._filter_needed[fingerprint] = self._count_here(fingerprint) != total
        req = qe.QueryRequest(
            query=qe.Query.Nearest(vector.astype(np.float32)),
            limit=limit,
            filter=self._filter(fingerprint) if self._filter_needed[fingerprint] or self._always_filter else None,
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
                return out if self._parts is None else out + self._parts.here().scroll(tagged, with_vector)

    def close(self) -> None:
        if self._parts is not None:  # the worker first: it closes its shard before this process lets go
            self._parts.close()
        self._shard.flush()
        self._shard.close()


def open_part_1(root: str, dim: int, tag_key: str, tag: str) -> EdgeStore:
    """Part 1 of the split store at `root`, as the search worker opens it (edge_parts.serve)."""
    return EdgeStore(root, dim, tag_key, tag, rebuild_corrupt=False, part=1)
