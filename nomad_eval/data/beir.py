"""A BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv) read as one corpus and one suite."""

from __future__ import annotations

from pathlib import Path

from nomad_eval.base.errors import Defect, InvalidInput
from nomad_eval.data.corpus import Document
from nomad_eval.data.golden import Golden, json_lines, json_object

_MAX_DEFECTS = 50  # a wrong file gives one defect a line; the first ones say enough


def _lines(path: Path, missing: str) -> list[str]:
    """The file's lines (split at "\\n" only, as JSON Lines are), or InvalidInput naming the file and line."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InvalidInput([Defect(str(path), None, missing)]) from None
    except OSError as exc:
        raise InvalidInput([Defect(str(path), None, f"cannot read: {exc.strerror or exc}")]) from None
    return json_lines(raw, str(path))


def _jsonl(path: Path) -> list[tuple[int, dict[str, object]]]:
    """Each object with its line; `_id` a non-empty string, unique in the file."""
    lines = _lines(path, "missing; a BEIR folder holds corpus.jsonl, queries.jsonl, qrels/")
    out: list[tuple[int, dict[str, object]]] = []
    defects: list[Defect] = []
    first: dict[str, int] = {}
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        obj = json_object(line, str(path), n)
        if isinstance(obj, Defect) or not isinstance(obj.get("_id"), str) or not obj["_id"]:
            defects.append(obj if isinstance(obj, Defect) else
                           Defect(str(path), n, "expected an object with a non-empty string '_id'"))
            continue
        bad = [k for k in ("title", "text") if obj.get(k) is not None and not isinstance(obj[k], str)]
        if bad:
            defects.append(Defect(str(path), n, f"'{bad[0]}' is {type(obj[bad[0]]).__name__}, not a string"))
            continue
        _id = str(obj["_id"])
        if _id in first:
            defects.append(Defect(str(path), n, f"duplicate _id {_id!r} (first on line {first[_id]})"))
            continue
        first[_id] = n
        out.append((n, obj))
    if defects:
        raise InvalidInput(defects[:_MAX_DEFECTS])
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
    queries_path = folder / "queries.jsonl"
    queries = {str(o["_id"]): (n, str(o.get("text") or "")) for n, o in _jsonl(queries_path)}
    qrels_path = folder / "qrels" / f"{split}.tsv"
    rel: dict[str, dict[str, int]] = {}
    defects = []
    for n, line in enumerate(_lines(qrels_path, f"no qrels for split {split!r}"), 1):
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
            except ValueError:
                defects.append(Defect(str(qrels_path), n, f"score {score!r} is not an integer"))
                continue
            if grade > 0:
                rel.setdefault(qid, {})[did] = grade
    # A judged query must have a question to ask; an unjudged one is never asked, so its text does not matter.
    for qid in rel:
        line_no, text = queries[qid]
        if not text.strip():
            defects.append(Defect(str(queries_path), line_no, f"query {qid!r} is judged in {qrels_path.name} "
                                                              "but its 'text' is empty"))
    if defects:
        raise InvalidInput(defects[:_MAX_DEFECTS])
    return [
        Golden(id=qid, query=queries[qid][1], turns=[], relevantDocIds=list(grades), mustInclude=[],
               mustNotInclude=[], expectRefusal=False, tags=["beir"]).with_grades(grades)
        for qid, grades in rel.items()
    ]
