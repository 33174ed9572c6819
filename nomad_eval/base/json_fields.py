"""Fields of parsed JSON (a report.json, a calibration file) read without Any: each helper narrows one value to
what its reader uses, and a value of another type fails as using it would have (a TypeError), so reading through
these changes no outcome, only what the type checker can see."""

from __future__ import annotations

from collections.abc import Mapping


def fields(v: object) -> Mapping[str, object]:
    """An object's fields; absent, null or empty reads as none (the readers' `x.get(k) or {}`)."""
    if not v:
        return {}
    if isinstance(v, Mapping):
        return v
    raise TypeError(f"expected a JSON object, got {type(v).__name__}")


def items(v: object) -> list[object]:
    """A list's items; absent, null or empty reads as none (the readers' `x.get(k) or []`)."""
    if not v:
        return []
    if isinstance(v, list | tuple):
        return list(v)
    raise TypeError(f"expected a JSON list, got {type(v).__name__}")


def number(v: object) -> float | None:
    """A number, or None for null (an int stays an int)."""
    if v is None or isinstance(v, int | float):
        return v
    raise TypeError(f"expected a JSON number, got {type(v).__name__}")


def whole(v: object) -> int:
    """int() of a number or a numeric string, as the readers' int(x) took it."""
    if isinstance(v, int | float | str):
        return int(v)
    raise TypeError(f"expected a JSON number, got {type(v).__name__}")


def real(v: object) -> float:
    """float() of a number or a numeric string, as the readers' float(x) took it."""
    if isinstance(v, int | float | str):
        return float(v)
    raise TypeError(f"expected a JSON number, got {type(v).__name__}")
