"""The one number nomad-eval reads from a GGUF file's header: the context length the model was trained with.

GGUF (llama.cpp's model format) opens with its metadata as typed key/value pairs; `<arch>.context_length` is
among the first, before the tokenizer's long arrays, so reading stops long before the weights.
"""

from __future__ import annotations

import struct
from pathlib import Path
from types import MappingProxyType
from typing import BinaryIO

# The sizes of GGUF's scalar value types, by type id (8 is a string, 9 an array).
_SCALAR = MappingProxyType({0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8})
_INTS = MappingProxyType({4: "<I", 5: "<i", 10: "<Q", 11: "<q"})


def _u64(f: BinaryIO) -> int:
    return int(struct.unpack("<Q", f.read(8))[0])


def _string(f: BinaryIO) -> str:
    return f.read(_u64(f)).decode("utf-8", "replace")


def _skip(f: BinaryIO, kind: int) -> None:
    if kind == 8:
        f.seek(_u64(f), 1)
    elif kind == 9:
        item = int(struct.unpack("<I", f.read(4))[0])
        for _ in range(_u64(f)):
            _skip(f, item)
    elif kind in _SCALAR:
        f.seek(_SCALAR[kind], 1)
    else:
        raise ValueError(f"unknown GGUF value type {kind}")


def context_length(path: str | Path) -> int | None:
    """`<arch>.context_length` from the file's metadata; None when the file is no GGUF or does not say."""
    with open(path, "rb") as f:
        if f.read(4) != b"GGUF":
            return None
        f.read(4)  # version
        _u64(f)  # tensor count
        for _ in range(_u64(f)):
            key, kind = _string(f), int(struct.unpack("<I", f.read(4))[0])
            if key.endswith(".context_length") and kind in _INTS:
                return int(struct.unpack(_INTS[kind], f.read(_SCALAR[kind]))[0])
            _skip(f, kind)
    return None
