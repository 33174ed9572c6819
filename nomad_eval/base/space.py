"""Room on disk before an engine that writes through memory maps opens its files.

A write through a memory map has no error to return: on a full disk the kernel kills the process with SIGBUS
(exit 135, no message). The embedded store maps files it created sparse and fills their pages as it loads and
writes, so the space it may take is known before it opens: the holes of its files, or, for a new store, the size
of the files it makes. Refusing then, with the folder named, is the only place the run can still say why.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from nomad_eval.base.errors import NomadError

MIB = 2**20
# A new embedded shard creates its write-ahead log segments and its first vector and payload pages sparse, about
# this much in all; everything it writes later goes into those pages or into files of the same kind.
NEW_STORE = 160 * MIB
# Room kept for what follows the open: new log segments, a grown segment, the embedding cache.
HEADROOM = 64 * MIB


def _existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def unallocated(folder: Path) -> int:
    """Bytes the files under `folder` may still take: their sizes less the blocks they hold (sparse holes)."""
    holes = 0
    for root, _, files in os.walk(folder):
        for name in files:
            try:
                st = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            holes += max(0, st.st_size - st.st_blocks * 512)
    return holes


def store_room(folder: Path) -> int:
    """What an embedded store under `folder` may take when opened and written."""
    shards = [p for p in folder.glob("dim-*") if p.is_dir()] if folder.is_dir() else []
    return (sum(unallocated(p) for p in shards) if shards else NEW_STORE) + HEADROOM


def require_room(folder: Path, need: int, what: str) -> None:
    """Refuse (exit 2, the setup) when the file system holding `folder` has less than `need` bytes free."""
    free = shutil.disk_usage(_existing(folder)).free
    if free < need:
        raise NomadError(f"no space left on {folder}: {what} may need up to {need / MIB:.0f} MiB, "
                         f"{free / MIB:.0f} MiB free; free space there (or set paths.data_dir to a larger disk) "
                         "and run again", 2)


def out_of_room(folder: Path, what: str, exc: BaseException) -> str | None:
    """The message for a failure met on a file system with (almost) nothing free, where SQLite reports the full
    disk as a generic I/O error: named as a full disk. None when there is room, so the failure is something else."""
    if shutil.disk_usage(_existing(folder)).free >= MIB:
        return None
    return f"no space left on {folder} ({what}: {exc}); free space there and run again"
