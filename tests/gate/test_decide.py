"""The gate's one entry takes plain settings: floors alone, no baseline to compare with, the run's own baseline,
and a regression, each with the record, the verdict and the exit code every file and the console carry."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from nomad_eval.core.attribution import Attribution
from nomad_eval.gate.decision import decide
from nomad_eval.gate.outcome import Verdict
from nomad_eval.gate.settings import CompareSettings, GateSettings
from nomad_eval.gate.store import baseline_path
from nomad_eval.records import Case, decode
from nomad_eval.report.baseline import Baseline
from nomad_eval.report.schema import Identity, Report

COMPARE = CompareSettings(metrics=None, headline_k=5, view="auto", stale="fail", exclude_unstable=False,
                          strict=False, tolerance=None, cluster=False, resamples=200, seed=0, correlation=0.5,
                          max_infra=0.2, quarantine_dir=None, history=None)


def _settings(root: Path, **kw: Any) -> GateSettings:
    base = GateSettings(floors={}, after_run=True, baseline=None, variant=None, baselines_dir=root, junit=None,
                        compare=COMPARE)
    return replace(base, **kw)


def _run(recalls: list[float]) -> tuple[Report, list[Case]]:
    cases = [decode({"id": f"q{i}", "relevant_doc_ids": ["d"], "passed": r == 1.0, "metrics": {"recall@5": r}})
             for i, r in enumerate(recalls)]
    ident = Identity(fingerprint="f" * 16, goldens_hash="g", suite="core", embedder="e", pipeline="p",
                     measures=["@5"])
    return Report(tier="retrieval", identity=ident, metrics={"recall@5": sum(recalls) / len(recalls)}), cases


def _promoted(root: Path, report: Report, cases: list[Case]) -> Path:
    assert report.identity is not None
    path = baseline_path(root, report.identity.fingerprint, "retrieval")
    path.parent.mkdir(parents=True)
    path.write_text(Baseline(promoted_from="x", promoted_at="2026-01-01T00:00:00", report=report,
                             cases=cases).model_dump_json())
    return path


def test_floors_alone_decide_without_a_baseline(tmp_path: Path) -> None:
    report, cases = _run([1.0] * 6 + [0.0] * 2)
    broken = decide(report, cases, _settings(tmp_path, floors={"recall@5": 0.9}, after_run=False))
    assert (broken.gate.verdict, broken.gate.exit_code, broken.verdict) == ("floor broken", 1, None)
    assert broken.gate.cause == "recall@5 0.7500 < 0.9"
    nothing = decide(report, cases, _settings(tmp_path, after_run=False)).gate
    assert (nothing.verdict, nothing.exit_code) == ("pass", 0) and nothing.cause.startswith("nothing gated")


def test_no_baseline_to_compare_with_is_not_comparable(tmp_path: Path) -> None:
    report, cases = _run([1.0] * 8)
    gate = decide(report, cases, _settings(tmp_path)).gate
    assert (gate.verdict, gate.exit_code) == ("not comparable", 2)
    assert gate.cause.startswith(f"no baseline for tier retrieval, suite 'core' in {tmp_path}")


def test_the_runs_own_baseline_and_an_explanation_that_fails_is_a_note(tmp_path: Path) -> None:
    report, cases = _run([1.0] * 8)
    path = _promoted(tmp_path, report, cases)

    def broken(*_: object) -> tuple[Attribution | None, list[str]]:
        raise RuntimeError("no replay here")

    outcome = decide(report, cases, _settings(tmp_path), explain=broken)
    g = outcome.gate
    assert (g.verdict, g.exit_code, g.baseline) == ("pass", 0, str(path))
    assert g.baseline_reason == f"the baseline of this run's own fingerprint {'f' * 16}"
    assert g.attribution == ["attribution not run: RuntimeError: no replay here"]
    assert outcome.base_cases == cases and outcome.tier == "retrieval"


def test_a_regression_against_a_named_baseline_hands_the_verdict_to_the_explanation(tmp_path: Path) -> None:
    base_report, base_cases = _run([1.0] * 8)
    named = _promoted(tmp_path / "elsewhere", base_report, base_cases)
    report, cases = _run([0.0] * 3 + [1.0] * 5)
    seen: list[Verdict] = []

    def explain(run: Report, _cases: list[Case], base: Baseline, verdict: Verdict
                ) -> tuple[Attribution | None, list[str]]:
        seen.append(verdict)
        return None, [f"explained {run.metrics['recall@5']:.3f} against {base.promoted_from}"]

    g = decide(report, cases, _settings(tmp_path, baseline=named), explain=explain).gate
    assert (g.verdict, g.exit_code, g.baseline, g.baseline_reason) == ("regression", 1, str(named),
                                                                        "named by compare.baseline")
    assert g.cause == "recall@5 worse: 1.0000 → 0.6250, higher is better (q0, q1, q2)"
    assert [v.outcome for v in seen] == ["regression"] and g.attribution == ["explained 0.625 against x"]
