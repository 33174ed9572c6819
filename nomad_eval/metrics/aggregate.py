"""Means over measured cases only (a value that cannot be measured is None and never counts as 0), and shares with
their Wilson interval."""

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


def wilson(k: int, n: int) -> tuple[float | None, float | None]:
    """The Wilson score 95% interval of k successes in n trials, which stays inside [0, 1] and is sound at 0/n and
    n/n, unlike Wald's; (None, None) when n is 0."""
    if n == 0:
        return None, None
    # statsmodels is slow to import: loaded where a share is measured, not by every run that checks a gate.
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(k, n, alpha=0.05, method="wilson")
    # At 0/n and n/n the bound is exactly 0 or 1; the formula leaves rounding dust such as 7e-18.
    return (0.0 if k == 0 else float(low)), (1.0 if k == n else float(high))
