"""Golden patterns matched with a guard: a pattern that would take exponential time gives None, not a hang."""

from __future__ import annotations

import regex

TIMEOUT_S = 1.0


def search(pattern: str, text: str) -> bool | None:
    """Case-insensitive search; None when the pattern ran past the time limit (the golden is then reported)."""
    try:
        return regex.search(pattern, text, flags=regex.IGNORECASE, timeout=TIMEOUT_S) is not None
    except TimeoutError:
        return None
