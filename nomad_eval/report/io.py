"""Writing results so that a reader never sees half a file: temporary file, fsync, rename."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from nomad_eval.errors import Defect, InvalidInput, NomadError
from nomad_eval.report.schema import Report


def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; results are meant to be read by others
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    write_atomic(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def read_report(path: Path) -> Report:
    if path.is_dir():
        path = path / "report.json"
    try:
        return Report.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        # Exit 2, like every other "cannot be compared": CI must not read a mistyped path as a regression.
        raise NomadError(f"{path}: no report.json here (name a run directory or its report.json)", 2) from None
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise NomadError(f"{path}: not a valid report: '{loc}': {first['msg']}", 2) from None


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise InvalidInput([Defect(str(path), n, f"not valid JSON ({exc.msg})")]) from None
    return rows
