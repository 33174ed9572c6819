"""Ingest: chunks -> embeddings (cached) -> tagged points in the store, one set per fingerprint.

Points carry their fingerprint and every search filters on it, so the sets of several configurations (a sweep
over chunk sizes, two embedders) live side by side in one store and none is ever deleted to make room for another.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from nomad_eval.backends.base import Store, StoredPoint
from nomad_eval.base.console import console, err_console, progress_bar, timed_load
from nomad_eval.base.errors import NomadError
from nomad_eval.harness.runtime import Runtime
from nomad_eval.rag.chunking import Chunk

if TYPE_CHECKING:
    from nomad_eval.backends.cache import CachedEmbedder

_NS = uuid.UUID("6f1b8d2e-4c47-4b8a-9d5e-2f0a7c3e9b11")
# The stored vectors compared with the embedding cache when the store is readied: every one up to ALL (reading
# them back and comparing costs under a second there: bench/results/vector_check.json), a stratified sample of
# SAMPLE past it (one vector from each of SAMPLE equal runs of the chunk list, so every part of the corpus is seen).
VECTOR_CHECK_ALL = 4_000
VECTOR_CHECK_SAMPLE = 4_000
# A stored (normalised) vector and the cache's, normalised: float32 rounding differs by about 1e-7.
VECTOR_TOLERANCE = 1e-4


@dataclass(frozen=True)
class StoreState:
    fingerprint: str
    chunks: int
    tagged_points: int
    matching_points: int

    @property
    def current(self) -> bool:
        """True when the store holds every chunk of this fingerprint (other fingerprints' points may be there)."""
        return self.matching_points == self.chunks


def point_id(tag: str, chunk_id: str, fingerprint: str) -> str:
    # The fingerprint is part of the id: the same chunk id under two chunkings is two points, never one
    # overwriting the other.
    return str(uuid.uuid5(_NS, f"{tag}\0{fingerprint}\0{chunk_id}"))


def truncated_chunks(rt: Runtime) -> list[tuple[Chunk, int]]:
    """Chunks longer than the embedder reads, with their token counts: their tails are never embedded."""
    emb = rt.embedder
    distractor_ids = {d.doc_id for d in rt.distractors}
    own = [c for c in rt.chunks if c.doc_id not in distractor_ids]
    counts = emb.token_counts([emb.document_prefix + c.text for c in own])
    return [(c, n) for c, n in zip(own, counts, strict=True) if n > emb.max_input_tokens]


@dataclass(frozen=True)
class VectorCheck:
    """The stored vectors of this fingerprint compared with the embedding cache's."""

    checked: int          # vectors compared
    total: int            # this fingerprint's chunks
    problem: str | None   # the first difference, or None
    uncached: int = 0     # chunks the cache holds no vector for (not compared)

    def describe(self) -> str:
        left = f"; {self.uncached} not in the cache, not compared" if self.uncached else ""
        if self.problem:
            return (f"damaged: {self.problem} (found comparing {self.checked} of the {self.total} stored vectors "
                    f"with the embedding cache{left})")
        scope = "all" if self.checked + self.uncached == self.total else "a stratified sample of"
        return f"sound: {scope} {self.checked} of the {self.total} stored vectors match the embedding cache{left}"


def _sample(n: int) -> list[int]:
    if n <= VECTOR_CHECK_ALL:
        return list(range(n))
    edges = np.linspace(0, n, VECTOR_CHECK_SAMPLE + 1).astype(np.int64)
    rng = np.random.default_rng(n)  # the same sample each run of a corpus, so a status and a run agree
    return [int(rng.integers(lo, hi)) for lo, hi in zip(edges[:-1], edges[1:], strict=True) if hi > lo]


def check_vectors(rt: Runtime, store: Store) -> VectorCheck | None:
    """Whether the store holds, for this fingerprint's chunks, the vectors the (checksummed) embedding cache holds;
    None for a store that cannot hand its vectors back (only the embedded one is compared)."""
    from nomad_eval.backends.edge import EdgeStore

    if not isinstance(store, EdgeStore):
        return None
    chunks = [rt.chunks[i] for i in _sample(len(rt.chunks))]
    cached = rt.cached_embedder.cached_documents([c.text for c in chunks])
    ids = [point_id(store.tag, c.chunk_id, rt.fingerprint) for c in chunks]
    stored = store.vectors([i for i, v in zip(ids, cached, strict=True) if v is not None])
    checked = 0
    for chunk, pid, want in zip(chunks, ids, cached, strict=True):
        if want is None:
            continue
        have = stored.get(pid)
        if have is None:
            return VectorCheck(checked, len(rt.chunks), f"the point of chunk {chunk.chunk_id} is missing")
        with np.errstate(all="ignore"):
            diff = float(np.max(np.abs(have - want / np.linalg.norm(want)))) if have.shape == want.shape else np.inf
        checked += 1
        if not diff <= VECTOR_TOLERANCE:
            return VectorCheck(checked, len(rt.chunks), f"the stored vector of chunk {chunk.chunk_id} differs from "
                               f"the embedding cache's (largest difference {diff:.3g})")
    return VectorCheck(checked, len(rt.chunks), None, sum(v is None for v in cached))


def store_state(rt: Runtime, store: Store) -> StoreState:
    return StoreState(rt.fingerprint, len(rt.chunks), store.count(), store.count(rt.fingerprint))


def load_model(embedder: CachedEmbedder, missing: int, quiet: bool) -> None:
    """The embedder's model loaded, in a timed line of its own, before the progress of embedding `missing` texts
    starts, so that progress counts embedding alone; nothing when every vector is cached (no model loads)."""
    load = getattr(embedder.embedder, "load", None)
    if load is not None and missing:
        timed_load(embedder.embedder.name, load, quiet)


def embed_chunks(rt: Runtime, quiet: bool = False) -> list[np.ndarray]:
    """Every chunk's vector, from the cache or the model. Called without the store (or its lock) held, so a cold
    pass of one job never makes another job wait."""
    cut = truncated_chunks(rt)
    if cut:
        names = ", ".join(f"{c.chunk_id} ({n} tokens)" for c, n in cut[:10])
        err_console.print(
            f"[yellow]warning:[/] {len(cut)} chunk(s) exceed the embedder's {rt.embedder.max_input_tokens} "
            f"tokens; their ends are never embedded: {names}. "
            + ("Whole documents are embedded as one passage: the model sees only their beginning."
               if rt.chunker.whole_document else "Lower pipeline.chunk_size.")
        )
    texts, embedder = [c.text for c in rt.chunks], rt.cached_embedder
    load_model(embedder, embedder.missing_documents(texts), quiet)
    with progress_bar("embedding chunks", len(rt.chunks), quiet) as prog:
        return list(embedder.embed_documents(texts, on_progress=lambda n: prog.advance(prog.task_ids[0], n)))


def ingest(rt: Runtime, store: Store, quiet: bool = False, vecs: list[np.ndarray] | None = None) -> int:
    """Write this fingerprint's chunks beside whatever else the store holds; returns the number written.

    Point ids are fixed by (tag, fingerprint, chunk id), so writing again replaces the same points: a half-written
    set from an interrupted run is completed, and nothing of another fingerprint is touched.
    """
    chunks = rt.chunks
    if vecs is None:
        vecs = embed_chunks(rt, quiet)
    points = [StoredPoint(point_id(store.tag, c.chunk_id, rt.fingerprint), v,
                          {store.tag_key: store.tag, "fingerprint": rt.fingerprint,
                           **{k: getattr(c, k) for k in ("chunk_id", "doc_id", "path", "index", "heading", "text")}})
              for c, v in zip(chunks, vecs, strict=True)]
    store.upsert(points)
    return len(points)


@contextmanager
def ready_store(rt: Runtime, quiet: bool = False) -> Iterator[Store]:
    """The store, holding this fingerprint's chunks, open for searching.

    Warm (the set is there): one open. Cold: the store is closed again while the chunks are embedded, and opened
    once more only to write them. The embedded engine's data-dir lock is therefore held while writing and
    searching, never through a cold embedding pass that can take minutes.
    """
    with rt.store() as store:
        if store_state(rt, store).current and _vectors_hold(rt, store, repair=True):
            yield store
            return
    # Information, not trouble: stdout, so a failing run's first stderr line is its cause.
    console.print(f"store lacks fingerprint {rt.fingerprint}: embedding and writing {len(rt.chunks)} chunks")
    vecs = embed_chunks(rt, quiet)
    with rt.store() as store:
        if not store_state(rt, store).current:  # another job may have written the same set meanwhile
            ingest(rt, store, quiet, vecs)
        _vectors_hold(rt, store, repair=False)
        yield store


def _vectors_hold(rt: Runtime, store: Store, repair: bool) -> bool:
    """Whether the stored vectors are the cache's (recorded on the runtime for the report). A store found to hold
    others (damage that keeps them unit length: negated, swapped, rotated; or one exponent bit) is moved aside,
    named, and started anew (`repair`), to be rebuilt from the cache; one just written that differs is refused."""
    check = check_vectors(rt, store)
    rt.vector_check = None if check is None else (check.checked, check.total)
    if check is None or check.problem is None:
        return True
    if not repair:
        raise NomadError(f"the store at {getattr(store, 'path', '?')} does not hold the vectors just written: "
                         f"{check.describe()}", 2)
    from nomad_eval.backends.edge import EdgeStore

    assert isinstance(store, EdgeStore)  # the only store check_vectors compares
    store.replace_damaged(f"holds vectors that are not the ones written ({check.describe()})")
    return False
