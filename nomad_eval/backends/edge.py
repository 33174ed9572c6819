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

import contextlib
import json
from pathlib import Path
from typing import Any

import numpy as np
from rich.markup import escape

from nomad_eval.backends.base import Hit, Payload, StoredPoint
from nomad_eval.base.console import err_console
from nomad_eval.base.errors import NomadError
from nomad_eval.base.sqlite_store import access_problem, move_aside

# Below this a plain exact scan already answers in about 10 ms (bench.json store_100k), and the shard is left as it
# is written, so small stores and tests search exactly as they always have.
FAST_MIN_POINTS = 100_000
# Candidates taken from the int8 scan per result wanted, then rescored exactly. 2x missed 1 of 1000 true top-10
# neighbours on clustered MiniLM vectors at 200k; 4x missed none there or at 1M (bench/results/store_scale.json).
OVERSAMPLING = 4.0
# Points whose vectors are read back at open, and the size up to which the check at open scans every vector
# (an exact scan of 100k points is about a millisecond; past it a sample and one ordinary search must do).
SAMPLE = 64
FULL_CHECK_POINTS = 100_000


def _engine_failure(exc: BaseException) -> bool:
    """Whether the engine raised it: a plain Exception carrying its message, or a Rust panic (reading a file cut
    short panics in 0.9.0), which pyo3 raises as `pyo3_runtime.PanicException`, a BaseException the package
    does not export."""
    return isinstance(exc, Exception) or type(exc).__name__ == "PanicException"


def _full(exc: BaseException) -> bool:
    """Whether the engine's error is a full disk or quota (it reports the OS error in its message)."""
    msg = str(exc).lower()
    return any(m in msg for m in ("no space left", "os error 28", "os error 122", "quota exceeded"))


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
        self._closed = False
        # Whether this process changed the shard (created, wrote, indexed or optimised it): only then does close
        # flush. A run that only searched has nothing to flush, and the engine's flush syncs every file anyway.
        self._changed = False
        self.damage: str | None = None  # what the check at open found, and where the damaged shard went
        try:
            self._shard = self._open(qe, dim)
        except BaseException as exc:
            if not _engine_failure(exc):
                raise
            self._unopenable(exc, rebuild_corrupt)
            self._replace(f"could not be opened ({exc})")  # only damage gets here
        # A shard can open fine and fail on every search (a truncated vector file): read a sample first.
        problem = self.check()
        if problem:
            self._shard.close()
            if not rebuild_corrupt:
                raise NomadError(f"the embedded store at {self.path} is damaged: {problem}; it was left as it is")
            self._replace(f"is damaged ({problem})")
        schema = self._shard.info().payload_schema
        for key in (tag_key, "fingerprint"):
            if key not in schema:
                self._shard.update(qe.UpdateOperation.create_field_index(key, qe.PayloadSchemaType.Keyword))
                self._changed = True

    def _unopenable(self, exc: BaseException, rebuild_corrupt: bool) -> None:
        """Raises unless the failure to open says the shard's files are damaged (then it may be replaced)."""
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
        damaged = not isinstance(exc, Exception) or any(m in msg for m in (
            "deserializ", "parse", "invalid", "corrupt", "malformed", "eof", "unexpected", "can't init wal",
            "checksum", "out of bounds", "failed to load segment", "already contains segment data"))
        if not rebuild_corrupt or other or not damaged:
            raise NomadError(f"cannot open the embedded store at {self.path}: {other or exc}; it was left as "
                             "it is") from None

    def _replace(self, why: str) -> None:
        """Moves the damaged shard aside, never deletes it, and starts a new one: the run then re-ingests its
        corpus because the new shard lacks the fingerprint."""
        problem = access_problem(self.path)
        if problem:
            raise NomadError(f"the embedded store at {self.path} {why}, and cannot be moved aside: {problem}; "
                             "it was left as it is")
        aside = move_aside(self.path)
        self.damage = f"{' '.join(why.split())[:240]}; moved to {aside}"
        err_console.print(f"[yellow]warning:[/] the embedded store at {escape(str(self.path))} "
                          f"{escape(self.damage)} and a new one started, to be rebuilt from the corpus",
                          soft_wrap=True)
        self._shard = self._open(self._qe, self.dim)

    def check(self) -> str | None:
        """Why the shard cannot be searched, or None. Reads a sample of points with their payloads and vectors
        (each must be finite and of unit length: the engine normalises cosine vectors as it stores them), counts
        the tagged points through the payload index, and searches once: a shard of up to `FULL_CHECK_POINTS`
        points is scanned exactly, which reads every stored vector."""
        qe = self._qe
        try:
            total = self.count(tagged=False)
            if total == 0:
                return None
            self.count()
            recs, _ = self._shard.scroll(qe.ScrollRequest(limit=SAMPLE, with_payload=True, with_vector=True))
            for r in recs:
                vec = np.asarray(r.vector, dtype=np.float32)
                with np.errstate(over="ignore"):  # an exponent bit flipped: a length of inf, named below
                    norm = float(np.linalg.norm(vec)) if vec.shape == (self.dim,) else float("nan")
                if not abs(norm - 1.0) < 1e-3:
                    return f"point {r.id} has a vector of {vec.size} values and length {norm:.4g}, not a unit vector"
            probe = np.full(self.dim, self.dim ** -0.5, dtype=np.float32)
            exact = qe.SearchParams(exact=True) if total <= FULL_CHECK_POINTS else None
            self._shard.query(qe.QueryRequest(query=qe.Query.Nearest(probe), limit=1, params=exact))
        except BaseException as exc:  # the engine's reading errors ("... is not readable", "out of bounds")
            if not _engine_failure(exc):
                raise
            return " ".join(str(exc).split())[:300]
        return None

    def health(self) -> str | None:
        """What is wrong with the stored vectors (and what was done about it), or None when a sample reads back
        sound."""
        problem = self.check()
        return self.damage or (f"is damaged ({problem})" if problem else None)

    def _open(self, qe: Any, dim: int) -> Any:
        if (self.path / "edge_config.json").exists():
            return qe.EdgeShard.load(str(self.path))
        self.path.mkdir(parents=True, exist_ok=True)
        self._changed = True
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
        self._changed = True
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
        vecs = np.asarray([p.vector for p in points], dtype=np.float32).reshape(len(points), -1)
        norms = np.linalg.norm(vecs, axis=1) if len(points) else np.zeros(0)
        bad = np.flatnonzero(~np.isfinite(norms) | (norms == 0))
        if bad.size:
            # Every stored vector is then a unit vector, which the check at open relies on.
            name = points[int(bad[0])].payload.get("chunk_id", points[int(bad[0])].point_id)
            raise NomadError(f"the embedder returned a zero or non-finite vector for {name} ({bad.size} of "
                             f"{len(points)} in this batch); it cannot be searched by cosine")
        self._written()
        batch = [qe.Point(p.point_id, v, p.payload) for p, v in zip(points, vecs, strict=True)]
        for i in range(0, len(batch), 512):
            try:
                self._shard.update(qe.UpdateOperation.upsert_points(batch[i : i + 512]))
            except BaseException as exc:
                if not _engine_failure(exc) or not _full(exc):
                    raise
                # Another process filled the disk after the room check at open: named, not the engine's traceback.
                raise NomadError(f"no space left on {self.path} while writing the store ({len(batch)} points): "
                                 "free space there and run again; the points written so far are completed by the "
                                 "next run", 2) from None

    def delete_tagged(self, fingerprint: str | None = None) -> None:
        self._written()
        self._shard.update(self._qe.UpdateOperation.delete_points_by_filter(self._filter(fingerprint)))

    def _written(self) -> None:
        self._changed = True
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
            exact_hits = [Hit(str(p.id), float(p.score), dict(p.payload)) for p in self._query(req)]
            self._damaged_scores(exact_hits)
            return exact_hits
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
        hits = [Hit(str(p.id), float(p.score), dict(p.payload)) for p in self._query(req)]
        self._damaged_scores(hits)
        return hits if threshold is None else [h for h in hits if h.score > threshold]

    def vectors(self, point_ids: list[str]) -> dict[str, np.ndarray]:
        """The stored vectors of these points (as the engine keeps them: normalised), by id; absent ids left out."""
        out: dict[str, np.ndarray] = {}
        for i in range(0, len(point_ids), 1000):
            for r in self._shard.retrieve(point_ids[i : i + 1000], with_payload=False, with_vector=True):
                out[str(r.id)] = np.asarray(r.vector, dtype=np.float32)
        return out

    def replace_damaged(self, why: str) -> None:
        """Stored vectors found to differ from what was written (the check against the embedding cache): the shard
        is moved aside, named, and a new one started, to be rebuilt from the corpus."""
        self._shard.close()
        self._replace(why)

    def _damaged_scores(self, hits: list[Hit]) -> None:
        """A cosine score outside [-1, 1] (beyond rounding), or not finite, comes only from a damaged stored
        vector (an exponent bit flipped): the shard is moved aside and named, never passed on to the metrics."""
        bad = next((h for h in hits if not abs(h.score) <= 1.001), None)
        if bad is None:
            return
        with contextlib.suppress(Exception):
            self._shard.close()
        self._closed = True
        aside = move_aside(self.path)
        raise NomadError(f"the embedded store at {self.path} is damaged: point {bad.point_id} scored {bad.score!r}, "
                         f"which no unit vector can; moved it to {aside}: run again to rebuild it from the corpus")

    def _query(self, req: Any) -> Any:
        try:
            return self._shard.query(req)
        except BaseException as exc:
            if not _engine_failure(exc):
                raise
            why = " ".join(str(exc).split())[:200]
            if not self.check():  # the shard reads back sound: the request was at fault (a vector's length)
                raise NomadError(f"the embedded store at {self.path} refused a search: {why}") from None
            # Damage the check at open did not reach (its sample missed it, on a shard too large to scan whole):
            # this run cannot go on, and the next one must not meet it again.
            with contextlib.suppress(Exception):
                self._shard.close()
            self._closed = True
            aside = move_aside(self.path)
            raise NomadError(f"the embedded store at {self.path} failed a search ({why}); moved it to {aside}: "
                             "run again to rebuild it from the corpus") from None

    def scroll(self, tagged: bool = False, with_vector: bool = False) -> list[tuple[str, Payload, Any]]:
        """Every point as (id, payload, vector); for tests that prove foreign points are untouched."""
        qe = self._qe
        out: list[tuple[str, Payload, Any]] = []
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
        if self._closed:
            return
        self._closed = True
        if self._changed:
            self._shard.flush()
        self._shard.close()
