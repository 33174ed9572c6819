"""A run folder holds one run: its manifest, written last, lists each result file with its size and hash.

A run that fails or is killed part-way through a folder holding an earlier run leaves files of two runs side by
side; the earlier run's manifest then no longer matches, and every reader (promote, compare, resume, the run
browser) refuses the folder, naming the file. Hydra's own files (.hydra/, the job log), hidden temporary files and
the failure record are not results and are not listed. A folder without a manifest was written before manifests
existed, or by hand, and is read as before.
"""

from __future__ import annotations

import hashlib
import json
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from nomad_eval.base.atomic import write_atomic
from nomad_eval.base.errors import NomadError

MANIFEST = "manifest.json"
FAILURE = "report.failed.json"
_NOT_RESULTS = frozenset({MANIFEST, FAILURE})
READ = ("report.json", "cases.jsonl")  # the files promote, compare, resume and the run browser open


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


def seal(folder: Path) -> None:
    """Write the manifest of the folder's result files as they are now; called once every result is written."""
    files = {p.name: {"bytes": p.stat().st_size, "sha256": _digest(p)} for p in result_files(folder)}
    write_atomic(folder / MANIFEST, json.dumps({"version": 1, "files": files}, indent=1) + "\n")


def reseal(folder: Path) -> None:
    """After a command changed a finished run on purpose (having checked it first): list its files again."""
    if (folder / MANIFEST).exists():
        seal(folder)


def unseal(folder: Path) -> None:
    """Drop the manifest: the folder no longer holds one finished run (a failed run overwrote part of it)."""
    (folder / MANIFEST).unlink(missing_ok=True)


class DamagedRun(NomadError):
    """A run folder whose files are not the ones its manifest lists (exit 2: not comparable)."""

    exit_code = 2


def _entries(folder: Path) -> dict[str, dict[str, Any]] | None:
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


def _mismatch(folder: Path, name: str, entry: dict[str, Any], hashed: bool) -> str | None:
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


def problem(folder: Path, hash_only: Iterable[str] | None = None) -> str | None:
    """Why the folder is not the one run its manifest lists, or None (no manifest: an older run, read as before).

    `hash_only`: hash only these files and compare the rest by size, for a reader that opens only them; by default
    every listed file is hashed."""
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
