"""tier=dataset: recorded retrieval spans -> a draft suite -> an annotated, valid suite.

    python -m nomad_eval tier=dataset dataset.from_traces=<trace.jsonl or folder> dataset.out=drafts.jsonl
    python -m nomad_eval tier=dataset dataset.annotate=drafts.jsonl dataset.out=goldens/mine.jsonl

Spans may come from this harness or from a user's own application writing the same JSONL.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from nomad_eval.base.atomic import JsonObject
from nomad_eval.base.console import console
from nomad_eval.base.errors import NomadError
from nomad_eval.config import RunConfig
from nomad_eval.data.drafts import candidates_path
from nomad_eval.data.golden import Golden
from nomad_eval.data.traces import drafts_from_spans, read_spans
from nomad_eval.report.io import read_jsonl, write_jsonl


def annotate(drafts: list[JsonObject], read: Any = input) -> list[JsonObject]:
    """Ask, per draft (as its file holds it), which candidates are relevant; returns the goldens' lines. Answers:
    numbers (1,3), r (refusal), s (skip), q (stop)."""
    done: list[JsonObject] = []
    for i, d in enumerate(drafts, 1):
        console.print(f"\n[bold]{i}/{len(drafts)}[/]")
        for t in d.get("turns") or []:  # the conversation before the question, as the golden holds it
            console.print(f"  {t['role']}: {t['content']}", markup=False)
        console.print(d["query"], markup=False)
        if d.get("mustInclude"):  # drafts from tier=synthesize carry their pattern; edit the file to change it
            console.print(f"  mustInclude: {d['mustInclude']}", markup=False)
        for j, c in enumerate(d["candidates"], 1):
            console.print(f"  {j}. {c['doc_id']} ({c['score']:.3f}) {c['excerpt'][:100]!r}")
        while True:
            try:
                answer = read("relevant numbers (e.g. 1,3), r = nothing relevant (refusal), s = skip, q = save and "
                              "stop: ").strip().lower()
            except EOFError:
                answer = "q"
            if answer in ("s", "q", "r"):
                break
            try:
                picks = sorted({int(x) for x in answer.replace(",", " ").split()})  # "1,3" or "1 3"
            except ValueError:
                console.print("  please answer with numbers, r, s or q")
                continue
            if picks and all(1 <= p <= len(d["candidates"]) for p in picks):
                break
            console.print(f"  numbers must be between 1 and {len(d['candidates'])}")
        if answer == "q":
            break
        if answer == "s":
            continue
        g = {k: v for k, v in d.items() if k != "candidates"}
        if answer == "r":
            g["expectRefusal"], g["relevantDocIds"] = True, []
        else:
            g["relevantDocIds"] = list(dict.fromkeys(d["candidates"][p - 1]["doc_id"] for p in picks))
        Golden.model_validate(g)  # the annotated line must be a valid golden
        done.append(g)
    return done


def run(config: RunConfig) -> int:
    ds = config.dataset
    if not ds.out:
        raise NomadError("tier=dataset needs dataset.out=<file to write>", 2)
    out = Path(ds.out)
    if ds.from_traces:
        drafts = drafts_from_spans(read_spans(Path(ds.from_traces)), int(ds.max_candidates))
        # The draft is already in suite format (only relevantDocIds is left to fill, by hand or with the
        # loop below); the candidates sit beside it so the draft never carries a key the loader refuses.
        write_jsonl(out, [{k: v for k, v in d.items() if k != "candidates"} for d in drafts])
        write_jsonl(candidates_path(out), [{"id": d["id"], "candidates": d["candidates"]} for d in drafts])
        console.print(f"wrote {len(drafts)} draft goldens to {out}; annotate them with: python -m nomad_eval "
                      f"tier=dataset dataset.annotate={out} dataset.out=<suite>.jsonl")
        return 0
    if ds.annotate:
        lines = read_jsonl(Path(ds.annotate))
        side = candidates_path(Path(ds.annotate))
        cands = {r["id"]: r["candidates"] for r in read_jsonl(side)} if side.exists() else {}
        lines = [d | {"candidates": d.get("candidates") or cands.get(d["id"], [])} for d in lines]
        goldens = annotate(lines, input if sys.stdin else None)
        write_jsonl(out, goldens)
        console.print(f"wrote {len(goldens)} annotated goldens to {out}; check them with: python -m nomad_eval "
                      f"tier=corpus action=check data.goldens_dir={out.parent} suite={out.stem}")
        return 0
    raise NomadError("tier=dataset needs dataset.from_traces=<trace.jsonl or folder> or dataset.annotate=<drafts>", 2)
