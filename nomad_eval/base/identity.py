"""Identities of model weights: what a cache or fingerprint key needs to tell two models apart."""

from __future__ import annotations

import hashlib
from importlib import metadata


def file_sha256(path: str) -> str:
    """The full sha256 of a file (a model's weights, a label file)."""
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def package_version(name: str) -> str | None:
    """An installed distribution's version, or None."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None
