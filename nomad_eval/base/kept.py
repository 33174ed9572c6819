"""Values computed once per process and kept by everything they are computed from.

The jobs of an in-process sweep read the same files and score the same questions again and again; a value that is
a pure function of its key is computed once and handed out after. The key must hold every input of the value (a
file's content or its size and time, never only its name), and a value handed out is shared: callers must not
change it. Bounded: past `most` entries the oldest goes first.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class Kept(Generic[V]):
    def __init__(self, most: int) -> None:
        self.most = most
        self._values: dict[Hashable, V] = {}

    def get(self, key: Hashable, make: Callable[[], V]) -> V:
        """The value kept under `key`, made by `make()` and kept the first time it is asked for."""
        if key in self._values:
            return self._values[key]
        value = make()
        if len(self._values) >= self.most:
            self._values.pop(next(iter(self._values)))
        self._values[key] = value
        return value

    def clear(self) -> None:
        self._values.clear()

    def __len__(self) -> int:
        return len(self._values)
