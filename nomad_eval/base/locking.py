"""A lock on the data dir, so processes sharing an embedded store take turns instead of failing."""

from __future__ import annotations

import fcntl
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from nomad_eval.base.errors import NomadError


@contextmanager
def data_dir_lock(data_dir: Path, timeout: float) -> Iterator[None]:
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / "store.lock"
    with path.open("a+") as fh:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
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
