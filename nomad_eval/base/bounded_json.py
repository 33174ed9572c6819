"""JSON from outside the process (a line of an input file, a server's answer) read within bounds: nesting past
MAX_JSON_DEPTH and strings no file can hold are refused, by name, before anything prints, hashes or copies them.

Python's parser recurses once per nesting level, and so does every later walk of the value (printing it, hashing
it, validating it): a value nested a thousand deep parses, then ends the run with a RecursionError wherever it is
walked next. One bound, applied where the text is parsed, keeps every reader of outside JSON alike.
"""

from __future__ import annotations

import json
from typing import Any

MAX_JSON_DEPTH = 64  # a golden nests four levels deep, an answer a few more; far deeper is damage


class JsonRefused(ValueError):
    """JSON that parses (or would) but may not be used: too deep, or holding a lone surrogate."""


def json_problem(obj: object) -> str | None:
    """Why a decoded JSON value cannot be used, or None: nesting past MAX_JSON_DEPTH (printing or hashing it would
    recurse past Python's limit), or a string holding a lone surrogate (from an escape such as `\\ud800`, which no
    file, hash or terminal can encode). Walks iteratively, so the check itself never recurses."""
    stack: list[tuple[object, int]] = [(obj, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            return f"JSON nested deeper than {MAX_JSON_DEPTH} levels"
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return "a string holds a lone UTF-16 surrogate escape"
        elif isinstance(value, dict):
            stack.extend((k, depth + 1) for k in value)
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)
    return None


def loads_bounded(text: str | bytes) -> Any:
    """`json.loads(text)`, or json.JSONDecodeError for text that is not JSON, or JsonRefused naming why parsed
    JSON may not be used (json_problem; a nesting deep enough to exhaust the parser is refused the same way)."""
    try:
        value = json.loads(text)
    except RecursionError:  # the parser recurses once per nesting level
        raise JsonRefused(f"JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
    problem = json_problem(value)
    if problem is not None:
        raise JsonRefused(problem)
    return value
