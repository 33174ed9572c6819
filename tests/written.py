"""Case records written as JSON in a test (the form cases.jsonl and baselines hold), read by the one codec."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from nomad_eval.records import Case, decode


def records(rows: Iterable[Mapping[str, object]]) -> list[Case]:
    return [decode(dict(row)) for row in rows]
