"""tier=dataset: recorded retrieval spans -> a draft suite -> an annotated, valid suite.

    python -m nomad_eval tier=dataset dataset.from_traces=<trace.jsonl or folder> dataset.out=drafts.jsonl
    python -m nomad_eval tier=dataset dataset.annotate=drafts.jsonl dataset.out=goldens/mine.jsonl

Spans may come from this harness or from a user's own application writing the same JSONL.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from nomad_eval.base.atomic import JsonObject
from nomad_eval.base.console import console
from nomad_eval.base.errors import Defect, InvalidInput, NomadError
from nomad_eval.data.drafts import Candidate, DraftGolden, candidates_path
from nomad_eval.data.golden import Golden
from nomad_eval.report.io import read_jsonl, write_jsonl


class Draft(DraftGolden):
    """A draft golden from recorded spans, in suite format, with the candidates to annotate it from."""

    candidates: list[Candidate]


def read_spans(source: Path) -> list[JsonObject]:
    """The retrieval spans of trace files, as they hold them (this harness's, or an application's own)."""
    files = sorted(source.rglob("trace.jsonl")) + sorted(source.rglob("*.trace.jsonl")) if source.is_dir() \
        else [source]
    if not files:
        raise InvalidInput([Defect(str(source), None, "no trace.jsonl files here")])
    spans = []
    for f in files:
        for n, row in enumerate(read_jsonl(f), 1):
            attrs = row.get("attributes") or {}
            if attrs.get("gen_ai.operation.name") != "retrieval" and row.get("name") != "retrieval":
                continue
            if not isinstance(attrs.get("gen_ai.retrieval.query.text"), str):
                raise InvalidInput([Defect(str(f), n, "retrieval span without gen_ai.retrieval.query.text")])
            spans.append(row)
    return spans


def _conversation(attrs: JsonObject) -> tuple[str, list[dict[str, str]]]:
    """The question and the turns before it: from `gen_ai.input.messages` when the span carries the conversation
    (a list, or its JSON text; `content` or text `parts`), else the retrieval query with no history."""
    raw = attrs.get("gen_ai.input.messages")
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError:
            raw = None
    turns: list[dict[str, str]] = []
    messages: list[Any] = raw if isinstance(raw, list) else []
    for m in messages:
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant"):
            continue
        content = m.get("content")
        if not isinstance(content, str):
            found = m.get("parts")
            parts: list[Any] = found if isinstance(found, list) else []
            content = "".join(str(p.get("content", "")) for p in parts if isinstance(p, dict))
        turns.append({"role": str(m["role"]), "content": content})
    if turns and turns[-1]["role"] == "user" and turns[-1]["content"].strip():
        return turns[-1]["content"].strip(), turns[:-1]
    return str(attrs["gen_ai.retrieval.query.text"]).strip(), []


def drafts_from_spans(spans: list[JsonObject], max_candidates: int = 10) -> list[Draft]:
    """One draft per distinct conversation (history and question); candidates are its documents, best score
    first, across all its spans."""
    by_query: dict[str, dict[str, Candidate]] = {}
    asked: dict[str, tuple[str, list[dict[str, str]]]] = {}
    for s in spans:
        attrs = s["attributes"]
        q_text, history = _conversation(attrs)
        q = json.dumps([history, q_text])
        asked[q] = (q_text, history)
        cands = by_query.setdefault(q, {})
        for d in attrs.get("gen_ai.retrieval.documents") or []:
            doc = str(d.get("doc_id") or str(d.get("id", "")).split("#")[0])
            score = float(d.get("score") or 0.0)
            if doc not in cands or score > cands[doc]["score"]:
                cands[doc] = Candidate(doc_id=doc, chunk_id=d.get("id"), score=score,
                                       excerpt=str(d.get("content") or "")[:240])
    drafts = []
    for q, cands in by_query.items():
        ranked = sorted(cands.values(), key=lambda c: -c["score"])[:max_candidates]
        question, history = asked[q]
        # A single-turn draft keeps the id it always had (the hash of its question alone).
        gid = "trace-" + hashlib.sha1((q if history else question).encode()).hexdigest()[:10]
        drafts.append(Draft(id=gid, query=question, turns=history, relevantDocIds=[], mustInclude=[],
                            mustNotInclude=[], expectRefusal=False, tags=["from-traces"], candidates=ranked))
    return drafts


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


def run(cfg: DictConfig) -> int:
    ds = cfg.dataset
    if not ds.get("out"):
        raise NomadError("tier=dataset needs dataset.out=<file to write>", 2)
    out = Path(ds.out)
    if ds.get("from_traces"):
        drafts = drafts_from_spans(read_spans(Path(ds.from_traces)), int(ds.max_candidates))
        # The draft is already in suite format (only relevantDocIds is left to fill, by hand or with the
        # loop below); the candidates sit beside it so the draft never carries a key the loader refuses.
        write_jsonl(out, [{k: v for k, v in d.items() if k != "candidates"} for d in drafts])
        write_jsonl(candidates_path(out), [{"id": d["id"], "candidates": d["candidates"]} for d in drafts])
        console.print(f"wrote {len(drafts)} draft goldens to {out}; annotate them with: python -m nomad_eval "
                      f"tier=dataset dataset.annotate={out} dataset.out=<suite>.jsonl")
        return 0
    if ds.get("annotate"):
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
