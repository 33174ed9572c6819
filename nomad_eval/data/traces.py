"""Goldens drafted from a deployment's traces: each logged question (with the conversation before it) and the
documents its retrieval returned, as candidates a person confirms (tier=dataset)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nomad_eval.base.atomic import JsonObject, read_jsonl
from nomad_eval.base.errors import Defect, InvalidInput
from nomad_eval.data.drafts import Candidate, DraftGolden


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


def _conversation(attrs: Mapping[str, object]) -> tuple[str, list[dict[str, str]]]:
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
