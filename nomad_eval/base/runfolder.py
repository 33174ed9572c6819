"""A run folder holds one run: its manifest, written last, lists each result file this run wrote, with its size and
the hash of the bytes as they were written.

A run holds the folder's lock (base/locking.py) for its lifetime and begins by marking the folder incomplete
(`.incomplete`); each result it writes is noted in the mark as it is written (base/atomic.py), and only the seal
replaces the mark with the manifest. So a folder is complete or refused: every reader (promote, compare, resume,
the run browser, labels) refuses a folder whose mark lists a file (a run still writing it, or one killed or failed
before its seal), a folder whose files do not match its manifest, and a folder a version that seals its runs wrote
without a manifest, naming the folder or the file. Hydra's own files (.hydra/, the job log), hidden files and the
failure record are not results and are not listed. A folder without a manifest written before manifests existed,
or by hand, is read as before.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TypedDict

from nomad_eval.base.atomic import FAILURE, MANIFEST, WRITING, write_atomic
from nomad_eval.base.errors import NomadError
from nomad_eval.base.locking import RUN_LOCK

__all__ = ["FAILURE", "MANIFEST", "RUN_LOCK", "WRITING"]
_NOT_RESULTS = frozenset({MANIFEST, FAILURE})
READ = ("report.json", "cases.jsonl")  # the files promote, compare, resume and the run browser open


class FileEntry(TypedDict):
    """A result file as the manifest lists it."""

    bytes: int
    sha256: str


# A result as the mark notes it while the run writes: bytes and sha256 as noted (unchecked until the seal lists
# them), or nothing for a line cut short.
Noted = dict[str, object]

# Runs have sealed their folders since this time (provenance.created of their report.json): such a report without
# a manifest beside it is a run that never finished, not an older one.
SEALED_SINCE = "2026-12-02T13:00"


def _digest(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def result_files(folder: Path) -> list[Path]:
    """The folder's result files: regular files at its top level, not Hydra's, not hidden, not the failure record."""
    out = []
    for p in sorted(folder.iterdir()):
        try:
            regular = stat.S_ISREG(p.lstat().st_mode)
        except OSError:  # removed while we looked
            continue
        if regular and not (p.name in _NOT_RESULTS or p.name.startswith(".") or p.suffix == ".log"):
            out.append(p)
    return out


def begin(folder: Path, keep: bool = False) -> None:
    """Mark the folder incomplete before this run writes its first result. The files of the run the folder held
    (its manifest's, or a run's that never finished) are remembered, so the seal removes those this run did not
    write again. `keep`: a command changing a finished run on purpose (having checked it) keeps its files listed."""
    entries = _entries_or_none(folder)
    stale = written(folder) or {}
    lines = [json.dumps({"earlier": [] if keep else sorted({*(entries or {}), *stale})})]
    lines += [json.dumps({"name": n, **e}) for n, e in (entries or {}).items()] if keep else []
    write_atomic(folder / WRITING, "".join(line + "\n" for line in lines))


def _mark(folder: Path) -> tuple[list[str], dict[str, Noted]] | None:
    """The mark's earlier files and the results noted in it (the last of each name); None without a mark. A line
    cut short (a run killed while noting a file) counts as a file written."""
    try:
        text = (folder / WRITING).read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return None
    earlier: list[str] = []
    noted: dict[str, Noted] = {}
    for n, line in enumerate(text.splitlines()):
        try:
            row = json.loads(line)
        except ValueError:
            row = None
        if n == 0 and isinstance(row, dict) and isinstance(row.get("earlier"), list):
            earlier = [e for e in row["earlier"] if isinstance(e, str) and _plain_name(e)]
        elif isinstance(row, dict) and _plain_name(row.get("name")):
            noted[row["name"]] = {"bytes": row.get("bytes"), "sha256": row.get("sha256")}
        else:
            noted[f"(line {n + 1} of {WRITING})"] = {}
    return earlier, noted


def written(folder: Path) -> dict[str, Noted] | None:
    """What the run writing the folder has written so far (name: bytes, sha256); None when no run is marked."""
    mark = _mark(folder)
    return None if mark is None else mark[1]


def _prune(folder: Path, earlier: list[str], noted: Iterable[str]) -> list[str]:
    """Remove the earlier run's files this run did not write again: they no longer stand for any run."""
    gone = []
    for name in sorted(set(earlier) - set(noted) - _NOT_RESULTS):
        try:
            os.unlink(folder / name)
            gone.append(name)
        except FileNotFoundError:
            continue
    return gone


def prune(folder: Path) -> list[str]:
    """Before a failure record replaces part of an earlier run: what is left of that run goes (on a full disk that
    also makes room for the record). Returns the names removed."""
    mark = _mark(folder)
    return [] if mark is None else _prune(folder, mark[0], mark[1])


def seal(folder: Path) -> None:
    """Replace the mark with the manifest of what this run wrote, as noted when each file was written; called once
    every result is written. Without a mark (a tier called outside a run's job), the result files as they are."""
    mark = _mark(folder)
    if mark is None:
        files = {p.name: {"bytes": p.stat().st_size, "sha256": _digest(p)} for p in result_files(folder)}
    else:
        files = mark[1]
        _prune(folder, *mark)
    write_atomic(folder / MANIFEST, json.dumps({"version": 2, "files": files}, indent=1) + "\n")
    (folder / WRITING).unlink(missing_ok=True)


def settle(folder: Path) -> None:
    """At the end of a run's job: a mark listing nothing (a run that wrote no result) goes; one listing files stays,
    so the folder is refused as incomplete."""
    if written(folder) == {}:
        (folder / WRITING).unlink(missing_ok=True)


@contextmanager
def reopened(folder: Path) -> Iterator[None]:
    """A command changing a finished run on purpose (having checked it first): what it writes joins the run's
    manifest. A folder without a manifest (an older run) stays without one."""
    if not (folder / MANIFEST).exists():
        yield
        return
    begin(folder, keep=True)
    yield
    seal(folder)


class DamagedRun(NomadError):
    """A run folder whose files are not the ones its manifest lists (exit 2: not comparable)."""

    exit_code = 2


def _entries_or_none(folder: Path) -> dict[str, FileEntry] | None:
    try:
        return _entries(folder)
    except DamagedRun:
        return None


def _entries(folder: Path) -> dict[str, FileEntry] | None:
    path = folder / MANIFEST
    try:
        raw = json.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError, RecursionError) as exc:
        raise DamagedRun(f"{path}: not a readable manifest ({type(exc).__name__}); the folder cannot be trusted: "
                         "re-run into a fresh folder") from None
    files = raw.get("files") if isinstance(raw, dict) else None
    good = isinstance(files, dict) and all(
        _plain_name(k) and isinstance(v, dict) and isinstance(v.get("bytes"), int)
        and isinstance(v.get("sha256"), str) for k, v in files.items())
    if not good:
        raise DamagedRun(f"{path}: not a valid manifest (expected files: {{name: {{bytes, sha256}}}}); the folder "
                         "cannot be trusted: re-run into a fresh folder")
    return files


def _plain_name(name: object) -> bool:
    """A file name of this folder: no path, printable, and one the file system can be asked about."""
    if not isinstance(name, str) or name in ("", ".", "..") or name != Path(name).name or not name.isprintable():
        return False
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate
        return False
    return True


def _mismatch(folder: Path, name: str, entry: FileEntry, hashed: bool) -> str | None:
    path = folder / name
    try:
        st = path.lstat()
    except OSError:
        return f"{path}: listed in the run's manifest but missing"
    if not stat.S_ISREG(st.st_mode):
        return f"{path}: listed in the run's manifest as a file, but is not a regular file"
    if st.st_size != entry["bytes"] or (hashed and _digest(path) != entry["sha256"]):
        return (f"{path}: does not match the run's manifest ({folder / MANIFEST}): changed after the run finished, "
                "or written by a later run that did not finish; re-run into a fresh folder")
    return None


def _unfinished(folder: Path) -> str | None:
    """Why the folder is not a finished run before its manifest is even read: marked as being written, or a report
    of a version that seals its runs with no manifest beside it."""
    noted = written(folder)
    if noted:
        return (f"{folder}: incomplete: a run began writing it ({', '.join(sorted(noted)[:3])}"
                f"{' …' if len(noted) > 3 else ''}) and has not sealed it ({folder / WRITING}): still running, or "
                "killed or failed before its manifest; re-run into a fresh folder")
    if (folder / MANIFEST).exists():
        return None
    try:
        report = json.loads((folder / "report.json").read_bytes())
    except (OSError, ValueError, RecursionError):
        return None  # no report: nothing a reader would take for a run; an unreadable one is named by its reader
    created = (report.get("provenance") or {}).get("created") if isinstance(report, dict) else None
    if isinstance(created, str) and created >= SEALED_SINCE:
        return (f"{folder}: incomplete: no {MANIFEST}, though the run that wrote its report.json ({created}) seals "
                "its folder when it finishes: killed before its manifest; re-run into a fresh folder")
    return None


def problem(folder: Path, hash_only: Iterable[str] | None = None) -> str | None:
    """Why the folder is not the one finished run its manifest lists, or None (no manifest and an older run: read as
    before).

    `hash_only`: hash only these files and compare the rest by size, for a reader that opens only them; by default
    every listed file is hashed."""
    if (why := _unfinished(folder)) is not None:
        return why
    try:
        entries = _entries(folder)
    except DamagedRun as exc:
        return str(exc)
    if entries is None:
        return None
    names = None if hash_only is None else set(hash_only)
    for name, entry in entries.items():
        if (why := _mismatch(folder, name, entry, names is None or name in names)) is not None:
            return why
    for name in READ:  # what every reader opens must be the run's, not a file put beside it later
        if name not in entries and (folder / name).exists():
            return f"{folder / name}: not in the run's manifest ({folder / MANIFEST}): written after the run finished"
    return None


def check(folder: Path, hash_only: Iterable[str] | None = None) -> None:
    """Refuse (exit 2) a folder whose files do not match its manifest, naming the file."""
    if (why := problem(folder, hash_only)) is not None:
        raise DamagedRun(why)


def still_listed(folder: Path) -> list[Path]:
    """The files that still match the manifest: after a later run failed part-way, what is left of the earlier
    run. An unreadable manifest lists nothing."""
    try:
        entries = _entries(folder) or {}
    except DamagedRun:
        return []
    return [folder / n for n, e in entries.items() if _mismatch(folder, n, e, hashed=True) is None]


def sealed_intact(folder: Path) -> bool:
    """True when the folder has a manifest and every listed file still matches it."""
    return (folder / MANIFEST).exists() and problem(folder) is None


def reports_under(roots: Sequence[Path], limit: int) -> list[Path]:
    """Every run's report.json under `roots`, most recently written first, at most `limit` (the run browser's, promote's
    latest and the gate's question history read the same runs)."""
    found: dict[Path, float] = {}
    for root in roots:
        for p in root.rglob("report.json"):  # nothing under a root that is missing
            try:
                found[p.resolve()] = p.stat().st_mtime
            except OSError:  # removed while we looked
                continue
    return sorted(found, key=lambda p: found[p], reverse=True)[:limit]
