"""Known-flaky questions with an owner and an expiry: run and listed, never gated; an expired entry fails
action=check by name (exit 2), and a malformed one is refused naming file and line."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path
from typing import Any

import pytest

from nomad_eval.base.errors import InvalidInput
from nomad_eval.core.questions import means, questions_from_cases
from nomad_eval.data.quarantine import expiry_defects, load_quarantine
from nomad_eval.gate.compare import compare_questions
from nomad_eval.records import Case
from tests.conftest import FIXTURES, run_cli
from tests.written import records

ENTRY = "- id: mini-03\n  mode: e2e\n  reason: flips between two phrasings\n  owner: '@alice'\n  expires: {}\n"


def _goldens(tmp_path: Path, text: str) -> Path:
    folder = tmp_path / "goldens"
    folder.mkdir()
    shutil.copy(FIXTURES / "goldens" / "mini.jsonl", folder / "mini.jsonl")
    (folder / "quarantine.yaml").write_text(text)
    return folder


def test_an_entry_without_an_owner_or_a_date_is_refused_by_line(tmp_path: Path) -> None:
    folder = _goldens(tmp_path, ENTRY.format("2027-01-31") + "- id: mini-04\n  reason: slow\n  expires: soon\n")
    with pytest.raises(InvalidInput) as exc:
        load_quarantine(folder)
    (defect,) = exc.value.defects
    assert defect.line == 6 and "lacks owner" in defect.message and defect.golden_id == "mini-04"


def test_an_expired_entry_fails_check_by_name(tmp_path: Path) -> None:
    folder = _goldens(tmp_path, ENTRY.format("2026-01-31"))
    (held,) = load_quarantine(folder)
    assert held.expires == dt.date(2026, 1, 31) and held.covers("e2e:mini-03") and not held.covers("oracle:mini-03")
    assert expiry_defects(folder, [held], {"mini-03"}, dt.date(2026, 1, 30)) == []
    r = run_cli("tier=corpus", "action=check", f"data.corpus_dir={FIXTURES / 'corpus'}", f"data.goldens_dir={folder}",
                "suite=mini", cwd=tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "quarantine.yaml:1" in r.stderr and "mini-03 (e2e)" in r.stderr and "expired" in r.stderr


def _cases(passes: dict[str, list[bool]]) -> list[Case]:
    return records({"id": q, "mode": "e2e", "repeat": r, "relevant_doc_ids": [q], "passed": p,
             "metrics": {"correctness": float(p)}} for q, ps in passes.items() for r, p in enumerate(ps))


def test_a_quarantined_flaky_question_is_compared_and_listed_but_never_gated() -> None:
    gated = ["e2e.correctness", "e2e.pass_rate"]
    base = _cases({"flaky": [True] * 3, **{f"q{i}": [True] * 3 for i in range(20)}})
    run = _cases({"flaky": [False] * 3, **{f"q{i}": [True] * 3 for i in range(20)}})
    bq, rq = questions_from_cases(base), questions_from_cases(run)
    kw: dict[str, Any] = {"base_metrics": means(bq, gated), "run_metrics": means(rq, gated)}
    assert compare_questions(bq, rq, gated, **kw).outcome == "regression"  # -0.048, every repeat agrees
    held = compare_questions(bq, rq, gated, quarantined=lambda key: key == "e2e:flaky", **kw)
    assert held.outcome == "pass" and held.questions.quarantined == ["e2e:flaky"] and held.common == 20
    assert held.questions.listing()["quarantined, not gated"] == ["e2e:flaky"]
