"""Raw cosine between each question and every chunk of the corpus: what calibrating `threshold` needs.

The search pool is already cut at `threshold`, so its lowest relevant cosine is the threshold itself and says
nothing about where the cutoff should be. Here every (question, chunk) pair is scored, from vectors the run
already has: ingest put every chunk's vector in the embedding cache and the run embedded every query, so a
warm run loads no model and asks the store nothing.

Both sides are counted into a Histogram (metrics/separation.py) one tile of cosines at a time, so memory stays flat
however large the suite and corpus (10k questions x 100k chunks would otherwise need some 90 GB).
"""

from __future__ import annotations

import numpy as np

from nomad_eval.backends.cache import CachedEmbedder
from nomad_eval.metrics.separation import Histogram
from nomad_eval.rag.chunking import Chunk

# Questions per matrix product: bounds the (questions x chunks) block held at once on a large corpus.
BLOCK = 256
# Chunks per matrix product: a block of BLOCK x TILE float32 cosines is 4 MB whatever the corpus size (counting it
# takes a few float64 copies), still wide enough for the product to run at full speed.
TILE = 4096


def _unit(m: np.ndarray) -> np.ndarray:
    # The store is configured for cosine distance (edge and server alike), which normalizes vectors. MiniLM's
    # are unit length already, another embedder's (Ollama) need not be, so normalize here to get the same number.
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return m / np.where(norms == 0, 1.0, norms)


def corpus_cosines(embedder: CachedEmbedder, chunks: list[Chunk], queries: list[str], relevant: list[set[str]]
                   ) -> tuple[Histogram, Histogram]:
    """Cosines of every (query, chunk) pair, split by whether the chunk's document is relevant to that query.

    `queries` are the queries as the pipeline searched them (glossary-expanded); the embedder adds its query
    prefix, and the chunks' texts get its document prefix, exactly as the search and ingest did.
    """
    if not queries or not chunks:
        return Histogram(), Histogram()
    q = _unit(embedder.embed_queries(queries).astype(np.float32))
    c = _unit(embedder.embed_documents([ch.text for ch in chunks]).astype(np.float32))
    return split_cosines(q, c, [ch.doc_id for ch in chunks], relevant)


def split_cosines(q: np.ndarray, c: np.ndarray, doc_ids: list[str], relevant: list[set[str]]
                  ) -> tuple[Histogram, Histogram]:
    """Relevant and irrelevant cosines of unit query vectors `q` against unit chunk vectors `c` (chunk i of
    document doc_ids[i]), counted BLOCK x TILE cosines at a time. Relevant pairs are few (a question's documents'
    chunks), so they are addressed by index instead of a questions x chunks mask."""
    code = {d: i for i, d in enumerate(dict.fromkeys(doc_ids))}
    docs = np.array([code[d] for d in doc_ids], dtype=np.int64)
    # Each document's chunk positions: a question's relevant chunks are the union of its documents'.
    order = np.argsort(docs, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(docs, minlength=len(code)))])
    rel, irr = Histogram(), Histogram()
    for start in range(0, len(q), BLOCK):
        cols = [np.concatenate([order[bounds[code[d]]:bounds[code[d] + 1]] for d in r if d in code] or
                               [np.zeros(0, dtype=np.int64)]) for r in relevant[start:start + BLOCK]]
        rows = np.repeat(np.arange(len(cols)), [len(x) for x in cols])
        flat = np.concatenate(cols) if cols else np.zeros(0, dtype=np.int64)
        for lo in range(0, len(c), TILE):
            sims = q[start:start + BLOCK] @ c[lo:lo + TILE].T
            inside = (flat >= lo) & (flat < lo + TILE)
            r, k = rows[inside], flat[inside] - lo
            rel.add(sims[r, k])
            sims[r, k] = np.nan  # Histogram.add skips NaN: only the irrelevant pairs are counted
            irr.add(sims)
            del sims  # else the next tile's product is allocated while this one is still held: two tiles at peak
    return rel, irr
