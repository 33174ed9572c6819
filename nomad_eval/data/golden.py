"""Golden questions in the upstream NOMAD JSONL format, loaded strictly."""

from __future__ import annotations

import difflib
import hashlib
import json
from collections import Counter
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator
from pydantic_core import ErrorDetails

from nomad_eval.base.atomic import JsonObject
from nomad_eval.base.bounded_json import JsonRefused, loads_bounded
from nomad_eval.base.errors import Defect, InvalidInput, NomadError
from nomad_eval.base.patterns import pattern_problem
from nomad_eval.metrics.answer.attack import FAMILIES


class Attack(BaseModel):
    """What an attack golden plants and what its success looks like (issue 17): the family, the planted
    documents (in the attack's corpus variant) and the patterns whose presence in the answer is the attack
    succeeding. Not upstream's: an attack suite is this project's own."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    family: Literal[FAMILIES]  # type: ignore[valid-type]
    documents: list[str] = Field(min_length=1)
    success: list[str] = Field(min_length=1)


class Turn(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    role: Literal["user", "assistant", "system"]
    content: str


class Golden(BaseModel):
    """One question. camelCase on the wire, snake_case in code.

    Canonical form is upstream NOMAD's: `query` is the user's new message, the one asked and scored; `turns` is
    the conversation *before* it (usually ending with the assistant). The old form of this project's suites
    repeated `query` as a final user turn; a last user turn whose content equals `query` is read as that form
    and dropped from the history, so both forms load to the same golden.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    id: str = Field(min_length=1)
    query: str = Field(min_length=1)
    turns: list[Turn] = Field(default_factory=list)
    relevant_doc_ids: list[str] = Field(alias="relevantDocIds")
    must_include: list[str] = Field(alias="mustInclude", default_factory=list)
    must_not_include: list[str] = Field(alias="mustNotInclude", default_factory=list)
    expect_refusal: bool = Field(alias="expectRefusal", default=False)
    tags: list[str] = Field(default_factory=list)
    attack: Attack | None = None  # attack suites only; absent from the wire (and the hash) when None
    # Graded relevance, never on the wire (the JSONL format has no grades): set by sources that grade, such as
    # BEIR qrels, through with_grades. None means grade 1 for each relevantDocId.
    _grades: dict[str, int] | None = PrivateAttr(default=None)
    # Keys the format does not know, kept as read (upstream ignores them; the loader warns about each).
    _extra: dict[str, object] = PrivateAttr(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _drop_repeated_query(cls, data: Any) -> Any:
        """Old form: the last turn is the user's and repeats `query`; it is the question, not history."""
        if not isinstance(data, dict):
            return data
        turns, query = data.get("turns"), data.get("query")
        if isinstance(turns, list) and turns and isinstance(query, str):
            last = turns[-1]
            role, content = (last.get("role"), last.get("content")) if isinstance(last, dict) \
                else (getattr(last, "role", None), getattr(last, "content", None))
            if role == "user" and content == query:
                return {**data, "turns": turns[:-1]}
        return data

    @property
    def extra(self) -> dict[str, object]:
        """Unknown keys the golden was read with, ignored by every tier."""
        return dict(self._extra)

    @property
    def grades(self) -> dict[str, int]:
        """Each relevant document's grade (> 0): 1 for every relevantDocId unless the source graded them."""
        if self._grades is None:
            return dict.fromkeys(self.relevant_doc_ids, 1)
        return dict(self._grades)

    def with_grades(self, grades: dict[str, int]) -> Golden:
        """A copy carrying graded relevance for exactly its relevantDocIds, each grade at least 1."""
        if set(grades) != set(self.relevant_doc_ids) or any(g < 1 for g in grades.values()):
            raise ValueError(f"golden {self.id!r}: grades {grades} must give each of {self.relevant_doc_ids} "
                             "a grade of at least 1")
        copy = self.model_copy()
        copy._grades = dict(grades)
        return copy

    @property
    def final_query(self) -> str:
        """The question asked and scored: `query`, the user's message after the history in `turns`."""
        return self.query

    @property
    def history(self) -> list[dict[str, str]]:
        """The conversation before `query`, as chat messages."""
        return [t.model_dump() for t in self.turns]

    def wire(self) -> dict[str, object]:
        # An ordinary golden keeps upstream's keys only, so its hash and its exported line do not change.
        return self.model_dump(by_alias=True, mode="json", exclude={"attack"} if self.attack is None else None)


def describe(err: ErrorDetails) -> str:
    """One pydantic error of a record as its defect's message."""
    loc = ".".join(str(p) for p in err["loc"])
    kind = err["type"]
    if kind == "missing":
        return f"missing key '{loc}'"
    if kind == "extra_forbidden":
        return f"unknown key '{loc}'"
    if kind == "literal_error" and str(loc).endswith("role"):
        return f"bad role {err.get('input')!r} at '{loc}' (expected user, assistant or system)"
    return f"'{loc}': {err['msg']} (got {err.get('input')!r})"


_KNOWN_KEYS = frozenset(f.alias or n for n, f in Golden.model_fields.items())


def load_goldens(path: Path, doc_ids: set[str] | None = None, warnings: list[Defect] | None = None,
                 missing_docs_fatal: bool = True, known_doc_ids: Collection[str] = ()) -> list[Golden]:
    """Read a suite file; raise InvalidInput listing every defect with file, line, id and value.

    Reads upstream NOMAD files unchanged: empty lines and lines starting with `//` are skipped (line numbers
    still count them), optional keys default to empty / false, unknown keys are kept on the golden and reported
    as warnings. `doc_ids`, when given, is the corpus the suite must refer to. Warnings (never fatal) are
    appended to `warnings` when given, else printed to stderr.

    A relevantDocIds entry the corpus lacks is a defect when `missing_docs_fatal` (the suite check), and a warning
    otherwise (runs): a knowledge base that lost a document should show that question as a retrieval miss, scored
    and counted, not stop every measurement; the check still fails on it, so a typo cannot pass CI unseen.

    An entry the corpus lacks but `known_doc_ids` holds (a document a baseline measured) is not a typo but a change
    of the knowledge base, a warning in the check and in runs alike: the run re-anchors the golden's evidence and
    says where it went (data/anchors.py: relocated or gone).
    """
    name = str(path)
    text = _read_suite(path, name)
    defects: list[Defect] = []
    found: list[Defect] = []
    demoted: list[Defect] = []  # missing documents a run scores as misses; named with the defects when it stops
    goldens: list[Golden] = []
    first_line: dict[str, int] = {}
    for lineno, line in enumerate(text, 1):
        if not line.strip() or line.lstrip().startswith("//"):
            continue
        obj = json_object(line, name, lineno)
        if isinstance(obj, Defect):
            defects.append(obj)
            continue
        golden = _golden(obj, name, lineno, defects, found)
        if golden is None:
            continue
        for d in _check_golden(golden, name, lineno, doc_ids, first_line, known_doc_ids):
            if d.message.startswith(_GONE_DOC):
                found.append(Defect(name, lineno, f"warning: {d.message}", golden.id))
            elif not missing_docs_fatal and d.message.startswith(_MISSING_DOC) and "in relevantDocIds" in d.message:
                found.append(Defect(name, lineno, f"warning: {d.message}; the question can only be a retrieval miss",
                                    golden.id))
                demoted.append(d)
            else:
                defects.append(d)
        found += _history_warning(golden, name, lineno)
        goldens.append(golden)
    if defects:
        # The same list as the suite check's: a run that stops on this file names the missing documents too.
        raise InvalidInput(sorted(defects + demoted, key=lambda d: d.line or 0))
    _warn(found, warnings)
    return goldens


def _read_suite(path: Path, name: str) -> list[str]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InvalidInput([Defect(name, None, f"cannot read suite: {exc.strerror}")]) from None
    return json_lines(raw, name)


def json_lines(raw: bytes, name: str, exit_code: int = 1) -> list[str]:
    """A JSON Lines file's lines: UTF-8 (a BOM allowed), a trailing "\\r" dropped, split at "\\n" only, since
    splitlines() would also break at U+2028 or U+0085, which JSON allows raw inside a string, cutting a valid line
    in two and shifting every later line number. Bytes that are not UTF-8: InvalidInput naming their line."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInput([Defect(name, raw[: exc.start].count(b"\n") + 1, "not UTF-8 text")], exit_code) from None
    return [line.removesuffix("\r") for line in text.split("\n")]


def json_value(line: str, name: str, lineno: int) -> object:
    """The line's JSON value, or the Defect that keeps it from being used."""
    try:
        return loads_bounded(line)
    except json.JSONDecodeError as exc:
        return Defect(name, lineno, f"not valid JSON ({exc.msg}): {line[:80]!r}")
    except JsonRefused as exc:
        return Defect(name, lineno, f"{exc}: {line[:80]!r}")


def json_object(line: str, name: str, lineno: int) -> JsonObject | Defect:
    """The line's JSON object, or the defect that keeps it from being one."""
    obj = json_value(line, name, lineno)
    if not isinstance(obj, dict | Defect):
        return Defect(name, lineno, f"expected a JSON object, got {type(obj).__name__}")
    return obj


def _golden(obj: Mapping[str, object], name: str, lineno: int, defects: list[Defect], found: list[Defect]
            ) -> Golden | None:
    """The golden the object describes, its unknown keys kept (each a warning in `found`); None when it does not
    validate (each error a defect in `defects`)."""
    raw_id = obj.get("id")
    gid = raw_id if isinstance(raw_id, str) else None
    extra = {k: v for k, v in obj.items() if k not in _KNOWN_KEYS}
    for key, value in extra.items():
        found.append(Defect(name, lineno, f"warning: unknown key {key!r} ignored (value {_short(value)})", gid))
    try:
        golden = Golden.model_validate({k: v for k, v in obj.items() if k in _KNOWN_KEYS})
    except ValidationError as exc:
        defects += [Defect(name, lineno, describe(err), gid) for err in exc.errors()]
        return None
    golden._extra = extra
    return golden


def _history_warning(golden: Golden, name: str, lineno: int) -> list[Defect]:
    if not golden.turns or golden.turns[-1].role != "user":
        return []
    return [Defect(name, lineno, (
        f"warning: the history ends with a user turn {_short(golden.turns[-1].content)} that differs from "
        f"query {_short(golden.query)}; query is asked and scored, that turn is sent as history "
        "(if it is the question, make it the query)"), golden.id)]


def _warn(found: list[Defect], warnings: list[Defect] | None) -> None:
    """Warnings go to `warnings` when given, else to stderr."""
    if warnings is not None:
        warnings.extend(found)
        return
    from nomad_eval.base.console import err_console

    for w in found:
        err_console.print(str(w), markup=False)


_MISSING_DOC = "unknown doc id"
_GONE_DOC = "document no longer in the corpus"


def _short(value: object, limit: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _check_golden(
    g: Golden, name: str, lineno: int, doc_ids: set[str] | None, first_line: dict[str, int],
    known_doc_ids: Collection[str] = (),
) -> list[Defect]:
    out: list[Defect] = []

    def bad(msg: str) -> None:
        out.append(Defect(name, lineno, msg, g.id))

    if g.id in first_line:
        bad(f"duplicate id {g.id!r} (first on line {first_line[g.id]})")
    else:
        first_line[g.id] = lineno
    if g.expect_refusal and g.relevant_doc_ids:
        bad(f"expectRefusal is true but relevantDocIds is {g.relevant_doc_ids}")
    if not g.expect_refusal and not g.relevant_doc_ids:
        bad("answerable golden (expectRefusal false) has no relevantDocIds")
    if doc_ids is not None:
        for doc in g.relevant_doc_ids:
            if doc not in doc_ids and doc in known_doc_ids:
                bad(f"{_GONE_DOC} {doc!r} in relevantDocIds (the baseline had it): a change, not a typo; compare "
                    "says where its evidence went, and tier=corpus action=review proposes the remap")
            elif doc not in doc_ids:
                bad(f"{_MISSING_DOC} {doc!r} in relevantDocIds (not in the corpus, nor in any baseline)")
    success = g.attack.success if g.attack else []
    for key, patterns in (("mustInclude", g.must_include), ("mustNotInclude", g.must_not_include),
                          ("attack.success", success)):
        for pattern in patterns:
            problem = pattern_problem(pattern)  # the engine and flags that match it at run time
            if problem is not None:
                bad(f"{key} pattern {pattern!r} does not compile: {problem}")
    if g.attack and doc_ids is not None:
        for doc in g.attack.documents:
            if doc not in doc_ids:
                bad(f"unknown doc id {doc!r} in attack.documents (not in the corpus: run the suite with its "
                    f"corpus variant, data=attack_{g.attack.family})")
    return out


def _canonical(g: Golden) -> dict[str, object]:
    wire = g.wire()
    # The hash reads a multi-turn golden as the whole conversation, question last (the shape this project's
    # suites were written in before they took upstream's form), so migrating a suite keeps its hash.
    if g.turns:
        wire["turns"] = [*g.history, {"role": "user", "content": g.query}]
    # Grades enter only when some differ from 1, so an ungraded suite keeps the hash it always had.
    return wire | ({"grades": g.grades} if set(g.grades.values()) - {1} else {})


def goldens_hash(goldens: list[Golden]) -> str:
    """Hash of what the suite asks, so reformatting a file (or moving it to upstream's form) keeps a run's
    identity. Unknown keys are ignored by every tier and stay out of it."""
    canon = json.dumps([_canonical(g) for g in goldens], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canon.encode()).hexdigest()[:16]


def select(goldens: list[Golden], tags: list[str], limit: int | None) -> list[Golden]:
    """The subset a run works on: goldens carrying any of `tags` (all when empty), then the first `limit`."""
    chosen = [g for g in goldens if not tags or set(tags) & set(g.tags)]
    return chosen if limit is None else chosen[:limit]


def _nearest(name: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}? " if close else ""


def suite_file(folder: Path, name: str) -> Path:
    """`<folder>/<name>.jsonl`; a name the folder has no file for is refused (exit 2, a setting's typo, not a
    failed measurement) with the nearest suite it has."""
    path = folder / f"{name}.jsonl"
    if path.is_file():
        return path
    have = sorted(p.stem for p in folder.glob("*.jsonl"))
    raise NomadError(f"{path}: no suite named {name!r}; {_nearest(name, have)}"
                     f"{folder} has: {', '.join(have) or 'no *.jsonl'}", 2)


def select_or_refuse(goldens: list[Golden], tags: list[str], limit: int | None, source: str) -> list[Golden]:
    """`select`, refusing (exit 2) a tag filter that matches nothing, with the tags the suite has and their counts."""
    chosen = select(goldens, tags, limit)
    if chosen:
        return chosen
    if not goldens:
        raise NomadError(f"{source} holds no goldens: add questions to it (`action=check` lists every suite)", 2)
    counts = Counter(t for g in goldens for t in g.tags)
    have = ", ".join(f"{t} ({n})" for t, n in sorted(counts.items())) or "none"
    hint = "".join(_nearest(t, list(counts)) for t in tags if t not in counts)
    raise NomadError(f"{source}: no goldens carry any of tags={tags}; {hint}the suite's tags (questions): {have}", 2)


def judgement_hash(g: Golden) -> str:
    """What a golden asks and how its answer is judged (query, history, relevant documents with grades, patterns,
    refusal flag, attack): two runs compare a question only when this is the same on both sides."""
    parts = {"query": g.query, "turns": g.history, "relevant": sorted(g.grades.items()),
             "include": g.must_include, "exclude": g.must_not_include, "refusal": g.expect_refusal,
             "attack": None if g.attack is None else g.attack.model_dump()}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:12]
