"""A lock on the data dir, so processes sharing an embedded store take turns instead of failing."""

from __future__ import annotations

import fcntl
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from nomad_eval.base.errors import NomadError


@contextmanager
def data_dir_lock(data_dir: Path, timeout: float, quiet: bool = False) -> Iterator[None]:
    """Held while a process uses the embedded store. The holder writes its pid into the lock file, so a process
    that has to wait says once whom it waits for, instead of sitting silent for minutes."""
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / "store.lock"
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
                if not said and not quiet:
                    fh.seek(0)
                    holder = fh.read().strip() or "unknown"
                    print(f"waiting for the store in {data_dir}, held by process {holder} (up to {timeout:.0f} s)",
                          file=sys.stderr, flush=True)
                    said = True
                if time.monotonic() > deadline:
                    raise NomadError(
                        f"the embedded store in {data_dir} has been busy in another process for {timeout:.0f} s "
                        f"(lock {path}). Wait for that run to finish, or give this run its own paths.data_dir."
                    ) from None
                time.sleep(0.1)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
