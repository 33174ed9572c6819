"""Locks on folders, so processes sharing one take turns instead of failing or mixing their files: the data dir's
embedded store, and a run folder, held by the run writing it for the run's whole lifetime."""

from __future__ import annotations

import fcntl
import os
import sys
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from nomad_eval.base.errors import NomadError

RUN_LOCK = ".lock"  # in a run folder: hidden, so never taken for one of its results


@contextmanager
def _file_lock(path: Path, timeout: float, quiet: bool, waiting: str, busy: str, code: int) -> Iterator[None]:
    """Held for the block. The holder writes its pid into the lock file, so a process that has to wait says once
    whom it waits for, instead of sitting silent for minutes. `waiting` and `busy` take `{holder}`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+") as fh:
        deadline = time.monotonic() + timeout
        said = False
        while True:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                fh.seek(0)
                fh.truncate()
                fh.write(str(os.getpid()))
                fh.flush()
                break
            except BlockingIOError:
                fh.seek(0)
                holder = fh.read().strip() or "unknown"
                if not said and not quiet:
                    print(waiting.format(holder=holder), file=sys.stderr, flush=True)
                    said = True
                if time.monotonic() > deadline:
                    raise NomadError(busy.format(holder=holder), code) from None
                time.sleep(0.1)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def data_dir_lock(data_dir: Path, timeout: float, quiet: bool = False) -> AbstractContextManager[None]:
    """Held while a process uses the embedded store."""
    path = data_dir / "store.lock"
    return _file_lock(
        path, timeout, quiet,
        f"waiting for the store in {data_dir}, held by process {{holder}} (up to {timeout:.0f} s)",
        f"the embedded store in {data_dir} has been busy in another process ({{holder}}) for {timeout:.0f} s "
        f"(lock {path}). Wait for that run to finish, or give this run its own paths.data_dir.", 1)


def run_folder_lock(folder: Path, timeout: float, quiet: bool = False) -> AbstractContextManager[None]:
    """Held by the run writing `folder` from before its first file to after its last: a second run into the same
    folder waits for it, then writes a folder of its own results, never a mix of both."""
    return _file_lock(
        folder / RUN_LOCK, timeout, quiet,
        f"waiting for the run folder {folder}: process {{holder}} is writing it (up to {timeout:.0f} s)",
        f"the run folder {folder} has been in use by process {{holder}} for {timeout:.0f} s: wait for that run to "
        "finish, or give this run its own paths.run_dir", 2)
