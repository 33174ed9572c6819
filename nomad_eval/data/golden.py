"""Golden questions in the upstream NOMAD JSONL format, loaded strictly."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError
from pydantic_core import ErrorDetails

from nomad_eval.base.errors import Defect, InvalidInput


class Turn(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    role: Literal["user", "assistant", "system"]
    content: str


class Golden(BaseModel):
    """One question. camelCase on the wire, snake_case in code."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    id: str = Field(min_length=1)
    query: str = Field(min_length=1)
    turns: list[Turn]
    relevant_doc_ids: list[str] = Field(alias="relevantDocIds")
    must_include: list[str] = Field(alias="mustInclude")
    must_not_include: list[str] = Field(alias="mustNotInclude")
    expect_refusal: bool = Field(alias="expectRefusal")
    tags: list[str]
    # Graded relevance, never on the wire (the JSONL format has no grades): set by sources that grade, such as
    # BEIR qrels, through with_grades. None means grade 1 for each relevantDocId.
    _grades: dict[str, int] | None = PrivateAttr(default=None)

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
        """Multi-turn goldens are scored on their final user message."""
        for turn in reversed(self.turns):
            if turn.role == "user":
                return turn.content
        return self.query

    def wire(self) -> dict[str, object]:
        return self.model_dump(by_alias=True, mode="json")


def _describe(err: ErrorDetails) -> str:
    loc = ".".join(str(p) for p in err["loc"])
    kind = err["type"]
    if kind == "missing":
        return f"missing key '{loc}'"
    if kind == "extra_forbidden":
        return f"unknown key '{loc}'"
    if kind == "literal_error" and str(loc).endswith("role"):
        return f"bad role {err.get('input')!r} at '{loc}' (expected user, assistant or system)"
    return f"'{loc}': {err['msg']} (got {err.get('input')!r})"


def load_goldens(path: Path, doc_ids: set[str] | None = None) -> list[Golden]:
    """Read a suite file; raise InvalidInput listing every defect with file, line, id and value.

    `doc_ids`, when given, is the corpus the suite must refer to.
    """
    defects: list[Defect] = []
    goldens: list[Golden] = []
    first_line: dict[str, int] = {}
    name = str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InvalidInput([Defect(name, None, f"cannot read suite: {exc.strerror}")]) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad_line = raw[: exc.start].count(b"\n") + 1
        raise InvalidInput([Defect(name, bad_line, "not UTF-8 text")]) from None
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            defects.append(Defect(name, lineno, f"not valid JSON ({exc.msg}): {line[:80]!r}"))
            continue
        if not isinstance(obj, dict):
            defects.append(Defect(name, lineno, f"expected a JSON object, got {type(obj).__name__}"))
            continue
        gid = obj.get("id") if isinstance(obj.get("id"), str) else None
        try:
            golden = Golden.model_validate(obj)
        except ValidationError as exc:
            for err in exc.errors():
                defects.append(Defect(name, lineno, _describe(err), gid))
            continue
        defects.extend(_check_golden(golden, name, lineno, doc_ids, first_line))
        goldens.append(golden)
    if defects:
        raise InvalidInput(defects)
    return goldens


def _check_golden(
    g: Golden, name: str, lineno: int, doc_ids: set[str] | None, first_line: dict[str, int]
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
            if doc not in doc_ids:
                bad(f"unknown doc id {doc!r} in relevantDocIds (not in the corpus)")
    for key, patterns in (("mustInclude", g.must_include), ("mustNotInclude", g.must_not_include)):
        for pattern in patterns:
            try:
                re.compile(pattern, re.IGNORECASE)
            except re.error as exc:
                bad(f"{key} pattern {pattern!r} does not compile: {exc}")
    if g.turns and g.turns[-1].role != "user":
        bad(f"last turn must be the user's, got role {g.turns[-1].role!r}")
    return out


def goldens_hash(goldens: list[Golden]) -> str:
    """Hash of the parsed suite, so reformatting a file does not change a run's identity."""
    # Grades enter only when some differ from 1, so an ungraded suite keeps the hash it always had.
    canon = json.dumps([g.wire() | ({"grades": g.grades} if set(g.grades.values()) - {1} else {}) for g in goldens],
                       sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canon.encode()).hexdigest()[:16]


def select(goldens: list[Golden], tags: list[str], limit: int | None) -> list[Golden]:
    """The subset a run works on: goldens carrying any of `tags` (all when empty), then the first `limit`."""
    chosen = [g for g in goldens if not tags or set(tags) & set(g.tags)]
    return chosen if limit is None else chosen[:limit]
