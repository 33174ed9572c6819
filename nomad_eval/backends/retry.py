"""Bounded retries with backoff for transient server errors, and a wall-clock deadline for one request."""

from __future__ import annotations

import email.utils
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from nomad_eval.base.errors import NomadError
from nomad_eval.base.secrets import redact_text

T = TypeVar("T")


# The longest a server's Retry-After is waited: a server asking for more is tried again after this (and a run's
# own deadline, where it has one, still ends the wait sooner).
MAX_RETRY_AFTER = 30.0


class Transient(Exception):
    """A failure worth one more try: a 429, a 5xx, a dropped connection mid-answer, a malformed answer.
    `retry_after`: the seconds the server asked to wait first (its Retry-After header), if it said."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def retry_after(value: str | None) -> float | None:
    """A Retry-After header's wait in seconds (it is a number of seconds or an HTTP date), or None when absent or
    unreadable; never negative."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - time.time())


def retried(fn: Callable[[], T], attempts: int, where: str, backoff: float = 0.5,
            until: Callable[[], float] | None = None) -> T:
    """`fn()`, tried `attempts` times in all while it raises Transient (at least once: `retries=0` is one try),
    waiting twice as long before each try, or as long as the server's Retry-After asks when that is longer (at
    most MAX_RETRY_AFTER, and never past `until()`, the seconds left of the caller's deadline); then a NomadError
    naming the server (`where`) and the last failure: what every backend says of a server that keeps failing."""
    attempts = max(1, attempts)
    for i in range(attempts):
        try:
            return fn()
        except Transient as exc:
            if i == attempts - 1:
                raise NomadError(f"{where} kept failing after {attempts} tries: {exc}") from None
            wait = min(max(backoff * 2**i, exc.retry_after or 0.0), MAX_RETRY_AFTER)
            time.sleep(max(0.0, min(wait, until())) if until is not None else wait)
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


def malformed(exc: Exception) -> str:
    """What an HTTP client library raised while reading an answer it could not parse, for a Transient's message.

    The official Ollama client raises these for a 2xx answer that is not JSON or lacks the fields it expects
    (ValueError: JSON and pydantic's errors; TypeError: JSON that is not an object), and AttributeError for an
    error answer whose JSON is not an object. Its first line, since pydantic's run on for many.
    """
    first = str(exc).splitlines()[0][:160] if str(exc).strip() else type(exc).__name__
    if isinstance(exc, AttributeError):
        return f"an error answer that is not a JSON object ({redact_text(first)})"
    return f"HTTP 2xx with a malformed answer ({redact_text(first)})"
