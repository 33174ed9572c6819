"""Files the harness can rebuild (the embedding and response caches, the embedded store): a damaged one is moved
aside, never deleted, with a one-line warning, and started afresh; one that cannot be opened for another
reason (no permission, a lock, a full disk) is an error that leaves it as it is.

Corruption is looked for at open with `PRAGMA quick_check`, because a truncated or overwritten file often opens
fine and fails only on the first read of a damaged page, in the middle of a run. It reads every page once: about
20 ms for a cache of 10,000 MiniLM vectors (21 MB) on an idle 2-core machine (60-80 ms with both cores busy),
against under 1 ms for the open alone; it grows with the file, about 2 ms per 1,000 vectors.
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

from rich.markup import escape

from nomad_eval.base.console import err_console
from nomad_eval.base.errors import NomadError
from nomad_eval.base.space import out_of_room

# SQLite's own verdicts on a file's contents; every other failure (CANTOPEN, READONLY, PERM, BUSY, IOERR, FULL)
# says nothing about them, and moving the file aside would lose a good cache.
_CORRUPT = {sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB}


class _Damaged(sqlite3.DatabaseError):
    """quick_check found a problem the open itself did not."""


def access_problem(path: Path) -> str | None:
    """Why this process may not use `path` (a file or directory, existing or to be made), or None.

    Checked before opening, so a permission problem is reported as one instead of looking like damage.
    """
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent  # the first existing ancestor is where the missing folders would be made
    if not folder.is_dir():
        return f"{folder} is not a directory"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"permission denied: cannot write in {folder}"
    if path.exists():
        mode = os.R_OK | os.W_OK | (os.X_OK if path.is_dir() else 0)
        if not os.access(path, mode):
            return f"permission denied: cannot read and write {path}"
    return None


def move_aside(path: Path) -> Path:
    """Renames `path` (and an SQLite file's -wal and -shm beside it) to `<name>.corrupt-<timestamp>`."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    aside = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 1
    while aside.exists():  # a second repair within the same second must not overwrite the first one's files
        n += 1
        aside = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
    path.rename(aside)
    for suffix in ("-wal", "-shm"):
        # A write-ahead log belongs to the file it was written for: left behind, it would be replayed into the
        # new one.
        side = path.with_name(path.name + suffix)
        if side.exists():
            side.rename(aside.with_name(aside.name + suffix))
    return aside


def _open(path: Path, schema: str, check_same_thread: bool) -> tuple[sqlite3.Connection, sqlite3.DatabaseError | None]:
    """The connection, and what was wrong with the file if anything (the connection is then still open)."""
    db = sqlite3.connect(path, timeout=60, check_same_thread=check_same_thread)
    try:
        # Checked before anything is written, so a damaged file is moved aside exactly as it was found.
        found = [str(r[0]) for r in db.execute("PRAGMA quick_check(3)")]
        if found != ["ok"]:
            raise _Damaged(" ".join(" ".join(found).split()))
        # Parallel sweep jobs share these files: WAL mode lets readers and one writer coexist.
        db.execute("PRAGMA journal_mode=WAL")
        db.executescript(schema)
        db.commit()
    except sqlite3.DatabaseError as exc:
        return db, exc
    except UnicodeDecodeError as exc:  # SQLite quoting a damaged schema's bytes, which are not UTF-8, in a message
        return db, _Damaged(f"text that is not UTF-8 ({exc.reason} at byte {exc.start})")
    except BaseException:
        db.close()
        raise
    return db, None


def is_corruption(exc: sqlite3.DatabaseError) -> bool:
    """SQLite says the file's contents are damaged (not: busy, locked, full, unreadable for another reason)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(exc, _Damaged) or (code is not None and code & 0xFF in _CORRUPT)


def open_rebuildable(path: Path, schema: str, what: str, check_same_thread: bool = True) -> sqlite3.Connection:
    """An SQLite database holding only what can be computed again (`what` names it in messages): opened and
    checked, or, when damaged, moved aside and created anew with `schema` (idempotent SQL)."""
    problem = access_problem(path)
    if problem:
        raise NomadError(f"cannot open the {what} at {path}: {problem}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        inode = path.stat().st_ino if path.exists() else None
        db, exc = _open(path, schema, check_same_thread)
        if exc is None:
            return db
        try:
            if not is_corruption(exc):
                raise NomadError(out_of_room(path.parent, f"opening the {what}", exc)
                                 or f"cannot open the {what} at {path}: {exc}; it was left as it is")
            # A parallel job that found the same damage may have replaced the file already: keep its new one.
            if path.exists() and path.stat().st_ino == inode:
                # Moved while the failed connection is still open: closing it deletes the write-ahead log by
                # name, and the log belongs with the damaged file.
                aside = move_aside(path)
                why = " ".join(str(exc).split())[:160]  # one line: quick_check reports over several
                err_console.print(f"[yellow]warning:[/] the {what} at {escape(str(path))} is damaged ({escape(why)}); "
                                  f"moved it to {escape(str(aside))} and started a new one, refilled as the run goes",
                                  soft_wrap=True)
        finally:
            db.close()
        db, exc = _open(path, schema, check_same_thread)
        if exc is not None:
            db.close()
            raise exc
        return db
    except (OSError, sqlite3.Error) as exc:  # making its folder, renaming it aside, or creating the new one
        raise NomadError(f"cannot open the {what} at {path}: {exc}") from None
