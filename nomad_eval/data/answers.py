"""The app's own outputs, one JSONL record per golden (and repeat): read strictly, written in the same schema.

A record (docs/app.md has the schema):

    {"id": "mini-01", "answer": "...", "contexts": [{"docId": "kettle-descaling", "text": "..."}],
     "latencyMs": 412.5, "promptTokens": 900, "completionTokens": 41, "repeat": 0}

Only `id` and `answer` are required. Every problem is a defect naming file and line; one defect and nothing is
scored, so a half-read file can never pass for a whole one.
"""

from __future__ import annotations

import json
import os
import stat
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, Strict, ValidationError, model_validator

from nomad_eval.base.atomic import JsonValue, write_atomic
from nomad_eval.base.errors import Defect, InvalidInput, NomadError
from nomad_eval.data.golden import Golden, describe, json_object

# A line past this is refused unread: an answer with a few dozen passages is a few hundred kB, so a longer line is
# a broken export (a whole file on one line, a binary blob) rather than a record. Twice app=http's default
# app.max_response_bytes, so what an HTTP run receives it can write as a record this reader takes back; a record
# past it is refused when written (write_answers), never kept to be refused later.
MAX_LINE_BYTES = 16 * 1024 * 1024
# The most defects an error lists; past it, the count and the file holding all of them.
SHOWN_DEFECTS = 50

Text = Annotated[str, Strict()]
NonNegative = Annotated[float, Strict(), Field(ge=0, allow_inf_nan=False)]
Tokens = Annotated[int, Strict(), Field(ge=0)]


class Context(BaseModel):
    """One passage the app retrieved, in its rank order: its document id, its text, or both."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    doc_id: Text | None = Field(default=None, alias="docId", min_length=1)
    text: Text | None = None

    @model_validator(mode="after")
    def _something(self) -> Context:
        if self.doc_id is None and self.text is None:
            raise ValueError("a context needs docId, text or both")
        return self


class AppOutput(BaseModel):
    """What the app did for one golden: camelCase on the wire, as goldens are."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    id: Annotated[str, Strict(), Field(min_length=1)]
    answer: Text
    contexts: list[Context] | None = None  # None: the app does not expose them (not "retrieved nothing")
    repeat: Annotated[int, Strict(), Field(ge=0)] = 0
    latency_ms: NonNegative | None = Field(default=None, alias="latencyMs")
    prompt_tokens: Tokens | None = Field(default=None, alias="promptTokens")
    completion_tokens: Tokens | None = Field(default=None, alias="completionTokens")

    @model_validator(mode="before")
    @classmethod
    def _bare_texts(cls, data: Any) -> Any:
        """A context given as a bare string (as Ragas' retrieved_contexts are) is its text."""
        if isinstance(data, dict) and isinstance(data.get("contexts"), list):
            return {**data, "contexts": [{"text": c} if isinstance(c, str) else c for c in data["contexts"]]}
        return data

    def wire(self) -> dict[str, JsonValue]:  # as an outputs file line holds it
        return self.model_dump(by_alias=True, mode="json", exclude_none=True)


def _lines(path: Path) -> Iterator[tuple[int, bytes | Defect]]:
    """Each line's bytes with its number, or the defect of a line too long to read (skipped unread)."""
    name = str(path)
    try:
        # Not blocking: opening a FIFO would wait for a writer. A FIFO or a device (/dev/zero) is then refused.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise InvalidInput([Defect(name, None, f"cannot read the app's outputs: {exc.strerror}")], 2) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise InvalidInput([Defect(name, None, "not a regular file (a FIFO, a device or a socket): the app's "
                                               "outputs are read from a JSONL file")], 2)
    os.set_blocking(fd, True)
    with os.fdopen(fd, "rb") as f:
        lineno = 0
        while True:
            raw = f.readline(MAX_LINE_BYTES + 1)
            if not raw:
                return
            lineno += 1
            if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                while raw and not raw.endswith(b"\n"):  # the rest of the long line, in bounded pieces
                    raw = f.readline(MAX_LINE_BYTES)
                yield lineno, Defect(name, lineno, f"line longer than {MAX_LINE_BYTES} bytes: not read")
                continue
            yield lineno, raw


def _record(raw: bytes, name: str, lineno: int) -> AppOutput | Defect | None:
    """The line's record, the defect that keeps it from being one, or None for a blank or `//` line."""
    try:
        line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8").rstrip("\r\n")
    except UnicodeDecodeError:
        return Defect(name, lineno, "not UTF-8 text")
    if not line.strip() or line.lstrip().startswith("//"):
        return None
    obj = json_object(line, name, lineno)
    if isinstance(obj, Defect):
        return obj
    try:
        return AppOutput.model_validate(obj)
    except ValidationError as exc:
        gid = obj.get("id")
        return Defect(name, lineno, describe(exc.errors()[0]), gid if isinstance(gid, str) else None)


def load_answers(path: Path, suite: Iterable[Golden], selected: Iterable[Golden], defects_file: Path | None = None
                 ) -> dict[tuple[str, int], AppOutput]:
    """Every record of the file by (golden id, repeat), checked against the suite: a record for an id the suite
    lacks, a repeated (id, repeat), a selected golden without a record, or repeats that differ between goldens
    (so a mean would weigh questions unevenly) are defects. Raises InvalidInput (exit 2) listing them: all of
    them, or past SHOWN_DEFECTS the first ones and their count, all of them written to `defects_file`."""
    name = str(path)
    known = {g.id for g in suite}
    defects: list[Defect] = []
    out: dict[tuple[str, int], AppOutput] = {}
    first: dict[tuple[str, int], int] = {}
    for lineno, raw in _lines(path):
        rec = raw if isinstance(raw, Defect) else _record(raw, name, lineno)
        if rec is None:
            continue
        if isinstance(rec, Defect):
            defects.append(rec)
            continue
        key = (rec.id, rec.repeat)
        if rec.id not in known:
            defects.append(Defect(name, lineno, f"unknown id {rec.id!r}: no golden of the suite has it", rec.id))
        elif key in first:
            defects.append(Defect(name, lineno, f"duplicate record for id {rec.id!r} repeat {rec.repeat} (first on "
                                                f"line {first[key]})", rec.id))
        else:
            first[key] = lineno
            out[key] = rec
    defects += _coverage(name, out, [g.id for g in selected])
    if defects:
        raise InvalidInput(_shown(defects, name, defects_file), 2)  # bad input: refused, never a regression
    return out


def _shown(defects: list[Defect], name: str, defects_file: Path | None) -> list[Defect]:
    """The defects an error lists: all of them, or the first SHOWN_DEFECTS and a last line with the count and
    the file that holds every one (a broken export of 200,000 lines would otherwise fill the console)."""
    if len(defects) <= SHOWN_DEFECTS:
        return defects
    where = "run again with fewer"
    if defects_file is not None:
        write_atomic(defects_file, "".join(f"{d}\n" for d in defects))
        where = f"all of them are listed in {defects_file}"
    more = len(defects) - SHOWN_DEFECTS
    return [*defects[:SHOWN_DEFECTS], Defect(name, None, f"... and {more} more defects ({len(defects)} in all): "
                                                          f"{where}")]


def _coverage(name: str, records: Mapping[tuple[str, int], AppOutput], ids: list[str]) -> list[Defect]:
    """A selected golden with no answer, or with other repeats than most goldens have."""
    repeats: dict[str, tuple[int, ...]] = {}
    for gid, r in sorted(records):
        repeats[gid] = (*repeats.get(gid, ()), r)
    common = Counter(repeats[g] for g in ids if g in repeats).most_common(1)
    want = common[0][0] if common else (0,)
    out = []
    for gid in ids:
        have = repeats.get(gid)
        if not have:
            out.append(Defect(name, None, f"missing answer: no record for golden {gid!r}", gid))
        elif have != want:
            out.append(Defect(name, None, f"golden {gid!r} has repeats {list(have)} where most goldens have "
                                          f"{list(want)}: every golden needs the same repeats", gid))
    return out


def repeats_of(records: Mapping[tuple[str, int], AppOutput]) -> int:
    return 1 + max((r for _, r in records), default=0)


def write_answers(path: Path, records: Iterable[AppOutput]) -> None:
    """The records as a file `load_answers` reads back unchanged (one line each, in the order given); a record
    whose line that reader would refuse as too long is refused here, by golden, before anything is written."""
    rows = list(records)
    lines = [json.dumps(r.wire(), ensure_ascii=False) + "\n" for r in rows]
    long = [f"golden {r.id!r} repeat {r.repeat} ({size} bytes)"
            for r, size in zip(rows, (len(line.encode()) for line in lines), strict=True) if size > MAX_LINE_BYTES]
    if long:
        raise NomadError(f"the app's outputs for {', '.join(long[:5])} are past the {MAX_LINE_BYTES} bytes a line "
                         f"of {path.name} may hold, so app=answers could not read them back: not kept", 2)
    write_atomic(path, "".join(lines))
