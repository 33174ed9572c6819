"""Bounded retries with backoff for transient server errors; everything else fails at once."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class Transient(Exception):
    """A failure worth one more try: a 429, a 5xx, a dropped connection mid-answer."""


def with_retries(fn: Callable[[], T], attempts: int = 3, backoff: float = 0.5) -> T:
    for i in range(attempts):
        try:
            return fn()
        except Transient:
            if i == attempts - 1:
                raise
            time.sleep(backoff * 2**i)
    raise AssertionError("unreachable")
