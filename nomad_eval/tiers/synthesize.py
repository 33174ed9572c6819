"""tier=synthesize: draft goldens from the corpus with a chat model, checked, for review before any suite holds them.

    python -m nomad_eval tier=synthesize model=smollm2 tier.out=drafts.jsonl
    python -m nomad_eval tier=dataset dataset.annotate=drafts.jsonl dataset.out=goldens/mine.jsonl

Chunks are sampled across documents (seeded by `seed`); each is asked for a question it answers, some for a
follow-up conversation, and some documents' openings for a question near their subject that the corpus does not
answer. Only the drafts that pass every check (data/drafts.py) are written, in suite format, with the source
excerpt beside them for the review loop (tier=dataset's annotate: accept, edit, drop); the run reports how many
were drafted, dropped by each check, and kept, in synthesize.json.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import TypedDict

from nomad_eval.backends.chat import ChatOptions
from nomad_eval.backends.response_cache import CachedChat
from nomad_eval.base.console import console, map_in_order
from nomad_eval.base.errors import NomadError
from nomad_eval.config import RunConfig
from nomad_eval.config.settings import runtime
from nomad_eval.config.tiers import SynthesizeTier
from nomad_eval.data.drafts import (
    CHECKS,
    KINDS,
    Candidate,
    Draft,
    Limits,
    Source,
    candidates_path,
    excerpt,
    overlap,
    prompt,
    read_reply,
    verify,
)
from nomad_eval.harness.rundir import run_dir
from nomad_eval.harness.runtime import Runtime
from nomad_eval.rag.chunking import Chunk, chunk_corpus
from nomad_eval.report.io import write_atomic, write_jsonl
from nomad_eval.run.queries import rewrite_chat

OPENING = 800  # characters of a document a refusal question is asked near


def sample_sources(rt: Runtime, counts: dict[str, int], seed: int) -> list[tuple[str, Source]]:
    """(kind, source) pairs: chunks taken one document at a time in a seeded order, so a small sample still
    spreads over the corpus; a refusal's source is a document's opening."""
    docs = list(rt.corpus_documents)
    titles = {d.doc_id: d.title for d in docs}
    by_doc: dict[str, list[Chunk]] = {}
    for c in chunk_corpus(docs, rt.chunker):
        by_doc.setdefault(c.doc_id, []).append(c)
    rng = random.Random(seed)
    order = sorted(by_doc)
    rng.shuffle(order)
    for chunks in by_doc.values():
        rng.shuffle(chunks)
    picked: list[Chunk] = []
    wanted = counts["answerable"] + counts["follow-up"]
    while len(picked) < wanted and any(by_doc.values()):
        picked += [by_doc[d].pop() for d in order if by_doc[d]][: wanted - len(picked)]
    out = [("answerable" if i < counts["answerable"] else "follow-up",
            Source(c.doc_id, c.chunk_id, titles[c.doc_id], c.text)) for i, c in enumerate(picked)]
    text = {d.doc_id: d.text for d in docs}
    out += [("refusal", Source(d, f"{d}#opening", titles[d], text[d][:OPENING]))
            for d in (order * counts["refusal"])[: counts["refusal"]]]
    return out


def draft_all(chat: CachedChat, options: ChatOptions, sources: list[tuple[str, Source]], quiet: bool
              ) -> list[Draft]:
    def one(source: tuple[str, Source]) -> Draft:
        return read_reply(*source, chat.chat(prompt(*source), options, repeat=0).text)

    return map_in_order(one, sources, 1, "drafting", quiet)


class Summary(TypedDict):
    """synthesize.json: what was drafted, what each check rejected, what was kept, and every dropped draft."""

    model: str
    out: str
    drafted: int
    rejected: dict[str, int]
    kept: int
    by_kind: dict[str, dict[str, int]]
    dropped: list[dict[str, str | None]]


def review_candidates(d: Draft, documents: dict[str, str], titles: dict[str, str]) -> list[Candidate]:
    """What the review loop shows under a draft: its source, or for a refusal the documents nearest its wording
    (the reviewer confirms none of them answers it)."""
    if d.kind != "refusal":
        return [Candidate(doc_id=d.source.doc_id, chunk_id=d.source.chunk_id, score=1.0, excerpt=excerpt(d))]
    near = sorted(documents, key=lambda doc: (-overlap(d.query, titles[doc] + " " + documents[doc][:OPENING]), doc))
    return [Candidate(doc_id=doc, chunk_id=None, score=overlap(d.query, titles[doc] + " " + documents[doc][:OPENING]),
                      excerpt=" ".join(documents[doc][:240].split())) for doc in near[:3]]


def _out_path(config: RunConfig, goldens_dir: Path, run: Path) -> Path:
    """Where the drafts go: never over an existing file, never a suite of the goldens folder (drafts are
    reviewed first)."""
    tier = config.tier_of(SynthesizeTier)
    out = Path(tier.out) if tier.out else run / "drafts.jsonl"
    if out.exists():
        raise NomadError(f"tier.out={out}: the file exists; choose a new name (drafts never overwrite a file)", 2)
    goldens = goldens_dir.resolve()
    if out.suffix == ".jsonl" and out.resolve().parent == goldens:
        raise NomadError(f"tier.out={out} would be a suite of {goldens}; drafts are reviewed first: write them "
                         "elsewhere, then tier=dataset dataset.annotate=<drafts> dataset.out=<suite>.jsonl", 2)
    return out


def run(config: RunConfig) -> int:
    t = config.tier_of(SynthesizeTier)
    rt = runtime(config)
    run = run_dir(config.paths.run_dir)
    out = _out_path(config, rt.settings.data.goldens_dir, run)
    counts = {"answerable": int(t.questions), "follow-up": int(t.follow_ups), "refusal": int(t.refusals)}
    sources = sample_sources(rt, counts, int(config.seed))
    with rewrite_chat(config, rt, needed=True) as chat:
        assert chat is not None
        drafts = draft_all(chat, ChatOptions(float(t.temperature), int(config.seed), int(t.max_tokens)), sources,
                           bool(config.quiet))
    documents = {d.doc_id: d.text for d in rt.corpus_documents}
    titles = {d.doc_id: d.title for d in rt.corpus_documents}
    kept = verify(drafts, documents, Limits(float(t.max_doc_share), float(t.max_overlap)))
    write_jsonl(out, [d.golden() for d in kept])
    write_jsonl(candidates_path(out), [{"id": d.golden()["id"], "candidates": review_candidates(d, documents, titles)}
                                       for d in kept])
    summary = Summary(model=str(config.model.name), out=str(out), drafted=len(drafts),
                      rejected={check: sum(d.problem == check for d in drafts) for check in CHECKS}, kept=len(kept),
                      by_kind={k: {"drafted": sum(d.kind == k for d in drafts), "kept": sum(d.kind == k for d in kept)}
                               for k in KINDS},
                      dropped=[{"kind": d.kind, "source": d.source.chunk_id, "query": d.query, "why": d.problem,
                                "reply": d.reply[:400]} for d in drafts if d.problem])
    write_atomic(run / "synthesize.json", json.dumps(summary, indent=2))
    _print(summary, out, bool(config.quiet))
    return 0


def _print(summary: Summary, out: Path, quiet: bool) -> None:
    rejected = ", ".join(f"{n} {why}" for why, n in summary["rejected"].items() if n) or "none"
    console.print(f"drafted {summary['drafted']}, rejected: {rejected}; kept {summary['kept']} in {out}")
    if not quiet:
        console.print(f"review them with: python -m nomad_eval tier=dataset dataset.annotate={out} "
                      "dataset.out=<suite>.jsonl")
