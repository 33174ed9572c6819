"""Raw cosine between each question and every chunk of the corpus: what calibrating `threshold` needs.

The search pool is already cut at `threshold`, so its lowest relevant cosine is the threshold itself and says
nothing about where the cutoff should be. Here every (question, chunk) pair is scored, from vectors the run
already has: ingest put every chunk's vector in the embedding cache and the run embedded every query, so a
warm run loads no model and asks the store nothing.
"""

from __future__ import annotations

import numpy as np

from nomad_eval.backends.cache import CachedEmbedder
from nomad_eval.rag.chunking import Chunk

# Questions per matrix product: bounds the (questions x chunks) block held at once on a large corpus.
BLOCK = 256


def _unit(m: np.ndarray) -> np.ndarray:
    # The store is configured for cosine distance (edge and server alike), which normalizes vectors. MiniLM's
    # are unit length already, another embedder's (Ollama) need not be, so normalize here to get the same number.
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return m / np.where(norms == 0, 1.0, norms)


def corpus_cosines(embedder: CachedEmbedder, chunks: list[Chunk], queries: list[str],
                   relevant: list[set[str]]) -> tuple[np.ndarray, np.ndarray]:
    """Cosines of every (query, chunk) pair, split by whether the chunk's document is relevant to that query.

    `queries` are the queries as the pipeline searched them (glossary-expanded); the embedder adds its query
    prefix, and the chunks' texts get its document prefix, exactly as the search and ingest did.
    """
    if not queries or not chunks:
        return np.zeros(0, dtype=np.float32), np.zeros(0, dtype=np.float32)
    q = _unit(embedder.embed_queries(queries).astype(np.float32))
    c = _unit(embedder.embed_documents([ch.text for ch in chunks]).astype(np.float32))
    # Documents as integer codes: membership tests on ints stay fast on a corpus of many thousand chunks.
    code = {d: i for i, d in enumerate(dict.fromkeys(ch.doc_id for ch in chunks))}
    docs = np.array([code[ch.doc_id] for ch in chunks], dtype=np.int64)
    rel: list[np.ndarray] = []
    irr: list[np.ndarray] = []
    for start in range(0, len(queries), BLOCK):
        sims = q[start:start + BLOCK] @ c.T
        mask = np.stack([np.isin(docs, [code[d] for d in r if d in code]) for r in relevant[start:start + BLOCK]])
        rel.append(sims[mask])
        irr.append(sims[~mask])
    return np.concatenate(rel), np.concatenate(irr)
