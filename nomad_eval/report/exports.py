"""Exports for other tools: a TREC run and qrels (trec_eval, ranx, ir_measures), per-case parquet (polars)."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from pathlib import Path

from nomad_eval.core.evaluate import ranking
from nomad_eval.records import Case, RetrievalCase, encode, hits
from nomad_eval.report.io import write_atomic


def trec_run(cases: Sequence[Case], tag: str = "nomad_eval") -> str:
    """Document level: a document's score is its best chunk's, written in full (repr round-trips the float), and
    ranks follow trec_eval's order of those scores (descending, ties by document id descending), the order the
    case metrics ranked documents in; so trec_eval on this file and qrels.trec reproduces cases.jsonl."""
    lines = []
    for c in cases:
        best: dict[str, float] = {}
        for r in hits(c):  # None: an app that exposed no document ids (tier=app)
            if r.doc_id not in best or r.final_score > best[r.doc_id]:
                best[r.doc_id] = r.final_score
        for rank, doc in enumerate(ranking(best), 1):
            lines.append(f"{c.id} Q0 {doc} {rank} {best[doc]!r} {tag}")
    return "\n".join(lines) + ("\n" if lines else "")


def trec_qrels(cases: Sequence[Case]) -> str:
    """Each relevant document with its grade (a case's `grades` when it has them, else 1)."""
    lines = []
    for c in cases:
        if c.expect_refusal:
            continue
        grades = c.grades if isinstance(c, RetrievalCase) else {}
        lines += [f"{c.id} 0 {d} {grades.get(d, 1)}\n" for d in c.relevant_doc_ids]
    return "".join(lines)


def flat_row(case: Case) -> dict[str, object]:
    """A case as one parquet row: lists and mappings as JSON text, each metric a `metric.<name>` column."""
    held = encode(case)
    row = {k: (json.dumps(v) if isinstance(v, list | dict) else v) for k, v in held.items() if k != "metrics"}
    row.update({f"metric.{k}": v for k, v in case.metrics.items()})
    return row


def write_parquet(cases: Sequence[Case], path: Path) -> None:
    import polars as pl

    # Built in memory and written like every other result: a full disk then says so by name and leaves no
    # temporary file, instead of a polars error.
    buf = io.BytesIO()
    pl.DataFrame([flat_row(c) for c in cases], infer_schema_length=None).write_parquet(buf)
    write_atomic(path, buf.getvalue())


def write_exports(out: Path, cases: Sequence[Case]) -> None:
    if cases and isinstance(cases[0], RetrievalCase):
        write_atomic(out / "run.trec", trec_run(cases))
        write_atomic(out / "qrels.trec", trec_qrels(cases))
    write_parquet(cases, out / "cases.parquet")
