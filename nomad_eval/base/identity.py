"""Identities of model weights: what a cache or fingerprint key needs to tell two models apart."""

from __future__ import annotations

import hashlib
import os
from functools import lru_cache
from importlib import metadata


@lru_cache(maxsize=32)
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    # Keyed on size and mtime too, so a file replaced in place during a long process is hashed again.
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def file_sha256(path: str) -> str:
    """The full sha256 of a weights file (about 0.2 s for 100 MB), computed once per process and version."""
    st = os.stat(path)
    return _sha256(os.path.realpath(path), st.st_size, st.st_mtime_ns)


@lru_cache(maxsize=64)
def package_version(name: str) -> str | None:
    """An installed distribution's version, read once per process: reading the metadata costs about 1.5 ms, and
    an embedder's identity (which holds its weights package's version) is asked for on every cached lookup. A
    package upgraded under a running process is not what that process imported either."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None
