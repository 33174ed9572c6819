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
from nomad_eval.harness.runtime import Runtime
from nomad_eval.rag.chunking import Chunk

if TYPE_CHECKING:
    from nomad_eval.backends.cache import CachedEmbedder

_NS = uuid.UUID("6f1b8d2e-4c47-4b8a-9d5e-2f0a7c3e9b11")


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
        if store_state(rt, store).current:
            yield store
            return
    # Information, not trouble: stdout, so a failing run's first stderr line is its cause.
    console.print(f"store lacks fingerprint {rt.fingerprint}: embedding and writing {len(rt.chunks)} chunks")
    vecs = embed_chunks(rt, quiet)
    with rt.store() as store:
        if not store_state(rt, store).current:  # another job may have written the same set meanwhile
            ingest(rt, store, quiet, vecs)
        yield store
