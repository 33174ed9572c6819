"""Golden patterns (mustInclude / mustNotInclude): one engine and one set of flags for checking and matching.

Checking with one engine and matching with another lets a pattern pass the check and mean something else at run
time (`[[:alpha:]]` is a POSIX class in `regex` but a plain character set in `re`; `\\p{L}` is refused by `re`).
Every caller therefore compiles through `compile_pattern`.
"""

from __future__ import annotations

from typing import Any

import regex

FLAGS = regex.IGNORECASE  # upstream NOMAD's patterns are case-insensitive
TIMEOUT_S = 1.0  # a pattern that backtracks exponentially gives up here instead of hanging the run


class PatternError(ValueError):
    """A pattern the engine refuses, with the engine's reason."""


def compile_pattern(pattern: str) -> Any:
    """The compiled pattern, or PatternError (the engine keeps its own cache of compiled patterns)."""
    try:
        return regex.compile(pattern, FLAGS)
    except regex.error as exc:
        raise PatternError(str(exc)) from None
    except RecursionError:  # the engine's parser recurses once per nesting level
        raise PatternError("nested too deeply to compile") from None


def pattern_problem(pattern: str) -> str | None:
    """Why the engine refuses `pattern`, or None when it compiles."""
    try:
        compile_pattern(pattern)
    except PatternError as exc:
        return str(exc)
    return None


def search(pattern: str, text: str) -> bool | None:
    """Case-insensitive search; None when the match ran past the time limit (the golden is then reported)."""
    try:
        return compile_pattern(pattern).search(text, timeout=TIMEOUT_S) is not None
    except TimeoutError:
        return None


def shown(pattern: str) -> str:
    """A pattern quoted as it is written in a goldens file: `'\\b25\\s*seconds'`, not repr's doubled backslashes."""
    return f"'{pattern}'"
