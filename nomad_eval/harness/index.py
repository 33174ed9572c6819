"""Ingest: chunks -> embeddings (cached) -> tagged points in the store, rebuilt whole each time."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from nomad_eval.backends.base import Store, StoredPoint
from nomad_eval.base.console import err_console, progress_bar
from nomad_eval.harness.runtime import Runtime
from nomad_eval.rag.chunking import Chunk

_NS = uuid.UUID("6f1b8d2e-4c47-4b8a-9d5e-2f0a7c3e9b11")


@dataclass(frozen=True)
class StoreState:
    fingerprint: str
    chunks: int
    tagged_points: int
    matching_points: int

    @property
    def current(self) -> bool:
        """True when the store holds exactly this fingerprint's chunks and no other tagged point."""
        return self.tagged_points == self.matching_points == self.chunks


def point_id(tag: str, chunk_id: str) -> str:
    return str(uuid.uuid5(_NS, f"{tag}\0{chunk_id}"))


def truncated_chunks(rt: Runtime) -> list[tuple[Chunk, int]]:
    """Chunks longer than the embedder reads, with their token counts: their tails are never embedded."""
    emb = rt.embedder
    distractor_ids = {d.doc_id for d in rt.distractors}
    own = [c for c in rt.chunks if c.doc_id not in distractor_ids]
    counts = emb.token_counts([emb.document_prefix + c.text for c in own])
    return [(c, n) for c, n in zip(own, counts, strict=True) if n > emb.max_input_tokens]


def store_state(rt: Runtime, store: Store) -> StoreState:
    return StoreState(rt.fingerprint, len(rt.chunks), store.count(), store.count(rt.fingerprint))


def ingest(rt: Runtime, store: Store, quiet: bool = False) -> int:
    """Replace the store's tagged points with this corpus's chunks; returns the number written."""
    chunks = rt.chunks
    cut = truncated_chunks(rt)
    if cut:
        names = ", ".join(f"{c.chunk_id} ({n} tokens)" for c, n in cut[:10])
        err_console.print(
            f"[yellow]warning:[/] {len(cut)} chunk(s) exceed the embedder's {rt.embedder.max_input_tokens} "
            f"tokens; their ends are never embedded: {names}. "
            + ("Whole documents are embedded as one passage: the model sees only their beginning."
               if rt.chunker.whole_document else "Lower pipeline.chunk_size.")
        )
    with progress_bar("embedding chunks", len(chunks), quiet) as prog:
        vecs = rt.cached_embedder.embed_documents(
            [c.text for c in chunks], on_progress=lambda n: prog.advance(prog.task_ids[0], n)
        )
    points = [
        StoredPoint(
            point_id(store.tag, c.chunk_id),
            v,
            {
                store.tag_key: store.tag,
                "fingerprint": rt.fingerprint,
                "chunk_id": c.chunk_id,
                "doc_id": c.doc_id,
                "path": c.path,
                "index": c.index,
                "heading": c.heading,
                "text": c.text,
            },
        )
        for c, v in zip(chunks, vecs, strict=True)
    ]
    store.delete_tagged()
    store.upsert(points)
    return len(points)


def ensure_ingested(rt: Runtime, store: Store, quiet: bool = False) -> bool:
    """Ingest only when the store lacks exactly this fingerprint; True when it did."""
    if store_state(rt, store).current:
        return False
    err_console.print(f"store lacks fingerprint {rt.fingerprint}: ingesting {len(rt.chunks)} chunks")
    ingest(rt, store, quiet)
    return True
