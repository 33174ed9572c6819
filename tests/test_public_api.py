"""The names nomad_eval lists as its API resolve, and the documented snippet (docs/reference.md, "The measuring
core, from Python") runs: two runs' cases.jsonl read, paired and gated."""

from __future__ import annotations

import json
from pathlib import Path

import nomad_eval
import nomad_eval.core


def test_every_listed_name_resolves() -> None:
    for module in (nomad_eval, nomad_eval.core):
        missing = [n for n in module.__all__ if getattr(module, n, None) is None]
        assert missing == [], f"{module.__name__}: {missing}"


def _run(folder: Path, recall: list[float]) -> Path:
    folder.mkdir()
    lines = [{"id": f"q{i}", "tags": [], "relevant_doc_ids": [f"d{i}"], "query": f"question {i}",
              "retrieved": [], "metrics": {"recall@5": r, "mrr@5": r}, "passed": r == 1.0}
             for i, r in enumerate(recall)]
    (folder / "cases.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return folder


def test_the_documented_compare_of_two_runs_names_the_regression(tmp_path: Path) -> None:
    from nomad_eval import compare_questions, questions_from_cases, read_cases

    a = _run(tmp_path / "baseline_run", [1.0] * 20)
    b = _run(tmp_path / "new_run", [1.0] * 17 + [0.0] * 3)
    base, run = (questions_from_cases(read_cases(p / "cases.jsonl")) for p in (a, b))
    verdict = compare_questions(base, run, ["recall@5", "mrr@5"], base_metrics={}, run_metrics={})
    rows = {m.name: m for m in verdict.metrics}
    assert verdict.outcome == "regression" and verdict.exit_code == 1
    assert rows["recall@5"].outcome == "regression" and set(rows["recall@5"].worse) == {"q17", "q18", "q19"}
    same = compare_questions(base, base, ["recall@5"], base_metrics={}, run_metrics={})
    assert same.outcome == "pass" and same.exit_code == 0
