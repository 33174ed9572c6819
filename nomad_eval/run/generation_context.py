"""The passages each mode injects: the golden's own documents (oracle), the pipeline's (e2e), or none."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from nomad_eval.data.golden import Golden
from nomad_eval.harness.runtime import Runtime
from nomad_eval.harness.search import StoreSearcher
from nomad_eval.harness.trace import Tracer, timed
from nomad_eval.rag.chunking import Chunk
from nomad_eval.rag.pipeline import Pipeline, RetrievedChunk
from nomad_eval.rag.prompt import Passage
from nomad_eval.rag.rewrite import FormedQuery


@dataclass
class GoldenContext:
    query: str                     # what retrieval searched for, formed by pipeline.history
    rewritten: bool                # the rule changed it from the question
    oracle: list[Passage] = field(default_factory=list)
    e2e: list[Passage] = field(default_factory=list)
    retrieved: list[RetrievedChunk] = field(default_factory=list)

    def passages(self, mode: str) -> list[Passage]:
        return {"oracle": self.oracle, "e2e": self.e2e, "noretrieval": []}[mode]


def _passage(c: Chunk | RetrievedChunk, titles: dict[str, str]) -> Passage:
    return Passage(c.chunk_id, c.doc_id, titles.get(c.doc_id, c.doc_id), c.text)


@dataclass(frozen=True)
class CorpusMaps:
    """Built once per run: titles, each document's chunks, and chunk vectors by id. Looking these up per golden
    replaces a scan of every chunk (and a fresh set per chunk) for every golden, which grew as goldens x chunks."""

    titles: dict[str, str]
    chunks_by_doc: dict[str, list[Chunk]]
    vectors: dict[str, np.ndarray]

    @staticmethod
    def build(rt: Runtime, goldens: list[Golden]) -> CorpusMaps:
        by_doc: dict[str, list[Chunk]] = {}
        for c in rt.chunks:
            by_doc.setdefault(c.doc_id, []).append(c)
        wanted = {d for g in goldens for d in g.relevant_doc_ids}
        chunks = [c for d in sorted(wanted) for c in by_doc.get(d, [])]
        # One batch for every golden's documents: the cache answers each text once, a cold run embeds in batches.
        vecs = rt.cached_embedder.embed_documents([c.text for c in chunks]) if chunks else np.zeros((0, 0))
        return CorpusMaps({d.doc_id: d.title for d in rt.documents}, by_doc,
                          {c.chunk_id: vecs[i] for i, c in enumerate(chunks)})


def oracle_passages(rt: Runtime, g: Golden, pipeline: Pipeline, query: str, maps: CorpusMaps | None = None
                    ) -> list[Passage]:
    """All chunks of the golden's documents, most similar to the question first (budget permitting)."""
    maps = maps or CorpusMaps.build(rt, [g])
    chunks = [c for d in dict.fromkeys(g.relevant_doc_ids) for c in maps.chunks_by_doc.get(d, [])]
    if not chunks:
        return []
    docs = np.stack([maps.vectors[c.chunk_id] for c in chunks])
    q = rt.cached_embedder.embed_queries([pipeline.expand(query)])[0]
    sims = docs @ q / (np.linalg.norm(docs, axis=1) * np.linalg.norm(q) + 1e-12)
    order = sorted(range(len(chunks)), key=lambda i: (-float(sims[i]), chunks[i].chunk_id))
    return [_passage(chunks[i], maps.titles) for i in order]


def build_contexts(rt: Runtime, goldens: list[Golden], modes: list[str], pipeline: Pipeline,
                   searcher: StoreSearcher | None, queries: list[FormedQuery], tracer: Tracer
                   ) -> list[GoldenContext]:
    """`queries` are the retrieval queries (run/queries.py), formed before the store was taken."""
    maps = CorpusMaps.build(rt, goldens if "oracle" in modes else [])
    titles = maps.titles
    out = []
    for g, formed in zip(goldens, queries, strict=True):
        query, rewritten = formed.text, formed.changed
        ctx = GoldenContext(query, rewritten)
        if "oracle" in modes:
            ctx.oracle = oracle_passages(rt, g, pipeline, query, maps)
        if "e2e" in modes and searcher is not None:
            with timed() as clock:
                r = pipeline.retrieve(query, searcher)
            ctx.retrieved = r.chunks
            tracer.retrieval(clock, r.expanded_query, r.chunks, pipeline.top_k, searcher.store.tag, g.id,
                             rewritten=query if rewritten else None, timings=r.timings,
                             messages=[*g.history, {"role": "user", "content": g.final_query}])
            ctx.e2e = [_passage(c, titles) for c in ctx.retrieved]
        out.append(ctx)
    return out
