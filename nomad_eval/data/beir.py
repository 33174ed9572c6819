"""A BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv) read as one corpus and one suite."""

from __future__ import annotations

import json
from pathlib import Path

from nomad_eval.base.errors import Defect, InvalidInput
from nomad_eval.data.corpus import Document
from nomad_eval.data.golden import Golden


def _jsonl(path: Path) -> list[tuple[int, dict[str, object]]]:
    if not path.is_file():
        raise InvalidInput([Defect(str(path), None,
                                   "missing; a BEIR folder holds corpus.jsonl, queries.jsonl, qrels/")])
    out, defects = [], []
    with path.open(encoding="utf-8", errors="strict") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                defects.append(Defect(str(path), n, f"not valid JSON ({exc.msg})"))
                continue
            if not isinstance(obj, dict) or not isinstance(obj.get("_id"), str):
                defects.append(Defect(str(path), n, "expected an object with a string '_id'"))
                continue
            out.append((n, obj))
    if defects:
        raise InvalidInput(defects)
    return out


def load_beir_corpus(folder: Path) -> list[Document]:
    """Each document's text is `title + " " + text`, stripped: the form MTEB embeds."""
    path = folder / "corpus.jsonl"
    docs = []
    for _n, obj in _jsonl(path):
        title, text = str(obj.get("title") or ""), str(obj.get("text") or "")
        docs.append(Document(str(obj["_id"]), f"{path}#{obj['_id']}", f"{title} {text}".strip(), title))
    if not docs:
        raise InvalidInput([Defect(str(path), None, "no documents")])
    return sorted(docs, key=lambda d: d.doc_id)


def load_beir_goldens(folder: Path, split: str, doc_ids: set[str]) -> list[Golden]:
    """One golden per query judged in the split; a judgement names its relevant documents (score > 0), and the
    golden keeps each one's grade (graded nDCG uses it)."""
    queries = {str(o["_id"]): str(o.get("text", "")) for _n, o in _jsonl(folder / "queries.jsonl")}
    qrels_path = folder / "qrels" / f"{split}.tsv"
    if not qrels_path.is_file():
        raise InvalidInput([Defect(str(qrels_path), None, f"no qrels for split {split!r}")])
    rel: dict[str, dict[str, int]] = {}
    defects = []
    for n, line in enumerate(qrels_path.read_text(encoding="utf-8").splitlines(), 1):
        parts = line.strip().split("\t")
        if not line.strip() or (n == 1 and parts[0] == "query-id"):
            continue
        if len(parts) != 3:
            defects.append(Defect(str(qrels_path), n, f"expected 3 tab-separated fields, got {line!r}"))
            continue
        qid, did, score = parts
        if qid not in queries:
            defects.append(Defect(str(qrels_path), n, f"unknown query id {qid!r}"))
        elif did not in doc_ids:
            defects.append(Defect(str(qrels_path), n, f"unknown doc id {did!r}"))
        else:
            try:
                grade = int(score)
                if grade > 0:
                    rel.setdefault(qid, {})[did] = grade
            except ValueError:
                defects.append(Defect(str(qrels_path), n, f"score {score!r} is not an integer"))
    if defects:
        raise InvalidInput(defects[:50])
    return [
        Golden(id=qid, query=queries[qid], turns=[], relevantDocIds=list(grades), mustInclude=[], mustNotInclude=[],
               expectRefusal=False, tags=["beir"]).with_grades(grades)
        for qid, grades in rel.items()
    ]
