"""Means over measured cases only: a value that cannot be measured is None and never counts as 0."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence


def mean(values: Iterable[float | None]) -> float | None:
    measured = [v for v in values if v is not None]
    return sum(measured) / len(measured) if measured else None


def mean_metrics(rows: Sequence[Mapping[str, float | None]], names: list[str]) -> dict[str, float | None]:
    return {n: mean(r.get(n) for r in rows) for n in names}


def by_tag(
    rows: Sequence[Mapping[str, float | None]], tags: list[list[str]], names: list[str]
) -> dict[str, dict[str, float | None]]:
    groups: dict[str, list[Mapping[str, float | None]]] = {}
    for row, row_tags in zip(rows, tags, strict=True):
        for t in row_tags:
            groups.setdefault(t, []).append(row)
    return {t: mean_metrics(groups[t], names) for t in sorted(groups)}
