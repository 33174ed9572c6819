"""Errors that end a run with a clear message and a chosen exit code, never a traceback."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pydantic loads with the first model, not with every error class
    from pydantic import ValidationError


class NomadError(Exception):
    """A failure the user can act on, which stops the run before any verdict: exit 2, the input or the setup is
    wrong (docs/gate.md#exit-codes). Exit 1 belongs to a verdict that the system under test got worse; an error
    sets it only where the system under test itself broke a rule the gate enforces (the leak guard)."""

    exit_code: int = 2

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class RequestRejected(NomadError):
    """The model server is up but refused this one request (too long for its context, malformed for it).

    Unlike an unreachable server this says nothing about the next request, so a judge records it as no verdict.
    """


@dataclass(frozen=True)
class Defect:
    """One problem in an input file, located precisely enough to fix without searching."""

    file: str
    line: int | None
    message: str
    golden_id: str | None = None

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        who = f" [{self.golden_id}]" if self.golden_id else ""
        return f"{where}{who}: {self.message}"


class InvalidInput(NomadError):
    """Raised with every defect found, so one run shows the whole list. Exit 2: the input is wrong, never read
    as a regression."""

    def __init__(self, defects: list[Defect], exit_code: int = 2) -> None:
        self.defects = defects
        lines = "\n".join(f"  {d}" for d in defects)
        super().__init__(f"{len(defects)} defect(s) found:\n{lines}", exit_code=exit_code)


def first_error(exc: ValidationError) -> str:
    """A pydantic error's first problem as `'<dotted.location>': <message>` (the whole input when it has none)."""
    first = exc.errors()[0]
    return f"'{'.'.join(map(str, first['loc'])) or '(the whole file)'}': {first['msg']}"
