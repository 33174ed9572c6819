"""Exports for other tools: a TREC run and qrels (trec_eval, ranx, ir_measures), per-case parquet (polars)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nomad_eval.report.io import write_atomic


def trec_run(cases: list[dict[str, Any]], tag: str = "nomad_eval") -> str:
    """Document level: a document's score is its best chunk's, ranks follow the pipeline's order."""
    lines = []
    for c in cases:
        seen: dict[str, float] = {}
        for r in c["retrieved"]:
            seen.setdefault(r["doc_id"], r["final_score"])
        for rank, (doc, score) in enumerate(seen.items(), 1):
            lines.append(f"{c['id']} Q0 {doc} {rank} {score:.6f} {tag}")
    return "\n".join(lines) + ("\n" if lines else "")


def trec_qrels(cases: list[dict[str, Any]]) -> str:
    return "".join(f"{c['id']} 0 {d} 1\n" for c in cases if not c["expect_refusal"] for d in c["relevant_doc_ids"])


def write_parquet(cases: list[dict[str, Any]], path: Path) -> None:
    import polars as pl

    flat = []
    for c in cases:
        row = {k: (json.dumps(v) if isinstance(v, list | dict) else v) for k, v in c.items() if k != "metrics"}
        row.update({f"metric.{k}": v for k, v in (c.get("metrics") or {}).items()})
        flat.append(row)
    tmp = path.with_name(f".{path.name}.tmp")
    pl.DataFrame(flat, infer_schema_length=None).write_parquet(tmp)
    tmp.replace(path)


def write_exports(out: Path, cases: list[dict[str, Any]]) -> None:
    if cases and "retrieved" in cases[0] and "mode" not in cases[0]:
        write_atomic(out / "run.trec", trec_run(cases))
        write_atomic(out / "qrels.trec", trec_qrels(cases))
    write_parquet(cases, out / "cases.parquet")
