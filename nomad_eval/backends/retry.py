"""Bounded retries with backoff for transient server errors, and a wall-clock deadline for one request."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class Transient(Exception):
    """A failure worth one more try: a 429, a 5xx, a dropped connection mid-answer, a malformed answer."""


def with_retries(fn: Callable[[], T], attempts: int = 3, backoff: float = 0.5) -> T:
    for i in range(attempts):
        try:
            return fn()
        except Transient:
            if i == attempts - 1:
                raise
            time.sleep(backoff * 2**i)
    raise AssertionError("unreachable")


def within(seconds: float, fn: Callable[[], T]) -> T:
    """`fn()`, or TimeoutError once `seconds` of wall-clock time have passed, whatever `fn` is waiting on.

    An HTTP client's read timeout bounds each read, not the answer: a server sending one byte a second never
    trips it. So the call runs on a daemon thread and is waited for at most `seconds`; on time-out it is left to
    end on its own (its client's own timeouts still bound each read), and a daemon thread never holds the
    process open at exit. `fn`'s own exception is raised here, as if it had been called directly.
    """
    outcome: list[tuple[bool, object]] = []
    done = threading.Event()

    def work() -> None:
        try:
            outcome.append((True, fn()))
        except BaseException as exc:  # handed to the caller below
            outcome.append((False, exc))
        finally:
            done.set()

    threading.Thread(target=work, name="request-within-deadline", daemon=True).start()
    if not done.wait(seconds):
        raise TimeoutError(f"no complete answer within {seconds} s")
    ok, value = outcome[0]
    if not ok:
        assert isinstance(value, BaseException)
        raise value
    return value  # type: ignore[return-value]
