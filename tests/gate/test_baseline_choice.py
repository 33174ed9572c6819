"""Which baseline a run is compared with when none is named: its own, else the suite's nearest."""

from __future__ import annotations

from pathlib import Path

import pytest

from nomad_eval.base.errors import NomadError
from nomad_eval.gate.choose import find_baseline
from nomad_eval.report.baseline import Baseline
from nomad_eval.report.schema import Identity, Report, Subject


def _report(fp: str, docs: dict[str, str], suite: str = "core", distractors: str | None = None,
            threshold: str = "0.25") -> Report:
    ident = Identity(fingerprint=fp, goldens_hash="g", suite=suite, embedder="e", pipeline="p",
                     distractors=distractors, measures=["@5"])
    return Report(tier="retrieval", identity=ident, system={"threshold": threshold},
                  subject=Subject(documents=docs))


def _file(root: Path, report: Report, promoted_at: str) -> Path:
    assert report.identity is not None
    path = root / report.identity.fingerprint / "retrieval.json"
    path.parent.mkdir(parents=True)
    path.write_text(Baseline(promoted_from="x", promoted_at=promoted_at, report=report, cases=[]).model_dump_json())
    return path


DOCS = {"a": "h1", "b": "h2", "c": "h3"}


def test_the_nearest_baseline_of_the_suite_and_the_most_recent_among_equals(tmp_path: Path) -> None:
    far = _file(tmp_path, _report("1" * 16, {"a": "x", "b": "y", "c": "h3"}), "2026-01-03T00:00:00")
    _file(tmp_path, _report("2" * 16, {**DOCS, "a": "x"}), "2026-01-01T00:00:00")
    near_new = _file(tmp_path, _report("3" * 16, {**DOCS, "b": "x"}), "2026-01-02T00:00:00")
    _file(tmp_path, _report("4" * 16, DOCS, suite="other"), "2026-01-05T00:00:00")  # another suite: never
    _file(tmp_path, _report("5" * 16, DOCS, distractors="revisions"), "2026-01-05T00:00:00")  # another store
    run = _report("f" * 16, DOCS)
    path, _, why = find_baseline(tmp_path, run, None)
    assert path == near_new and why.endswith("1 document(s) and 0 setting(s) differ, the most recent among equals")
    assert "the nearest of 3 for tier retrieval, suite 'core'" in why
    # A setting counts like a document: the far one with no setting changed loses to a near one.
    assert find_baseline(tmp_path, _report("f" * 16, {"a": "x", "b": "y", "c": "h3"}), None)[0] == far
    own = _file(tmp_path, _report("f" * 16, DOCS, threshold="0.3"), "2025-01-01T00:00:00")
    assert find_baseline(tmp_path, run, None)[:1] == (own,)


def test_no_baseline_for_the_suite_or_the_store_is_not_comparable_with_the_next_step(tmp_path: Path) -> None:
    with pytest.raises(NomadError) as none:
        find_baseline(tmp_path, _report("f" * 16, DOCS), None)
    assert none.value.exit_code == 2 and "tier=promote promote.run=<run dir>" in str(none.value)
    _file(tmp_path, _report("1" * 16, DOCS, distractors="revisions"), "2026-01-01T00:00:00")
    with pytest.raises(NomadError) as store:
        find_baseline(tmp_path, _report("f" * 16, DOCS), None)
    assert "with this store (distractors None); the suite's baselines use distractors revisions" in str(store.value)
