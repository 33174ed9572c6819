"""The history-rule tables in README.md and docs/history.md come from bench/results/history_rules.json, and the
shipped default is the rule measured best there."""

from __future__ import annotations

import json

from bench.history_rules import RESULTS, best_rule, default_rule, page_diffs, table


def test_history_tables_match_the_committed_results() -> None:
    diff = page_diffs()
    assert not diff, "the history tables are stale; run python bench/history_rules.py --table\n" + diff


def test_the_shipped_default_is_the_best_measured_rule() -> None:
    results = json.loads(RESULTS.read_text())
    assert default_rule()[0] == best_rule(results)
    assert results["history_turns"] == default_rule()[1]  # measured with the shipped number of turns
    for x in results["rules"].values():
        assert x["n"] == len(x["questions"]) and x["low"] <= x["value"] <= x["high"]


def test_a_tie_goes_to_the_cheaper_rule_and_the_default_is_marked() -> None:
    same = {"value": 0.5, "n": 2, "low": 0.0, "high": 1.0,
            "questions": {"a": {"value": 1.0}, "b": {"value": 0.0}}}
    results = {"metric": "recall@5", "model": "m", "history_turns": 2, "date": "2026-01-01",
               "rules": {"query": same, "last_user": same, "rewrite": same}}
    assert best_rule(results) == "query"
    rows = table(results, "query").splitlines()
    assert rows[2].startswith("| `query` (default) |") and rows[3].endswith("| 0 / 0 |")
