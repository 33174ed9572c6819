"""The question history read from real run folders (written and sealed by the code's own writers, the baseline filed
by promote): a compare at one repeat a side takes its run-to-run noise from the earlier sealed runs of the same
goldens and system, never from the run under test, the baseline's own run, another system's run, a run not sealed
or a golden judged differently, and says so in its verdict."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nomad_eval.base.runfolder import begin, seal
from nomad_eval.core.questions import means, questions_from_cases
from nomad_eval.gate.decision import decide
from nomad_eval.gate.history import question_history
from nomad_eval.gate.settings import CompareSettings, GateSettings, HistorySettings
from nomad_eval.gate.store import promote
from nomad_eval.metrics.registry import headline_names
from nomad_eval.records import Case, lines
from nomad_eval.report.baseline import load_baseline, load_run
from nomad_eval.report.io import write_atomic
from nomad_eval.report.schema import Identity, Provenance, Report, Subject
from nomad_eval.run import generation_cases  # noqa: F401  (registers the answer measures)
from tests.written import records

FLAKY = [f"f{i}" for i in range(12)]
STABLE = [f"s{i}" for i in range(28)]
NAMES = headline_names("generation", 5, ["e2e"])
IDENT = Identity(fingerprint="f" * 16, goldens_hash="g1", suite="core", embedder="e", pipeline="p", mode="e2e",
                 model="scripted")


def _cases(flaky_pass: set[int]) -> list[Case]:
    passes = {**{q: i in flaky_pass for i, q in enumerate(FLAKY)}, **dict.fromkeys(STABLE, True)}
    return records({"id": q, "mode": "e2e", "repeat": 0, "relevant_doc_ids": [q], "passed": p,
                    "metrics": {"correctness": 1.0 if p else 0.0}} for q, p in passes.items())


def _write(folder: Path, flaky_pass: set[int], n: int, *, model: str = "scripted", sealed: bool = True,
           goldens: dict[str, str] | None = None) -> Path:
    """A generation run's folder, as a run leaves it: cases.jsonl and report.json, then sealed (or only begun)."""
    cases = _cases(flaky_pass)
    report = Report(
        tier="generation", identity=IDENT, metrics=means(questions_from_cases(cases), NAMES),
        config={"model": {"_target_": "nomad_eval.backends.openai_chat.OpenAIChat", "name": model}},
        system={"model.name": model, "repeats": "1", "seed": str(n)},  # earlier runs may draw with other seeds
        counts={"cases": len(cases), "model_calls": len(cases)},
        subject=Subject(goldens=goldens or {q: f"h-{q}" for q in FLAKY + STABLE}),
        provenance=Provenance(git_commit="c0", git_dirty=False, versions={}, python="3.12",
                              created=f"2026-12-04T10:00:{n:02d}+00:00"))
    folder.mkdir(parents=True)
    begin(folder)
    write_atomic(folder / "cases.jsonl", lines(cases))
    write_atomic(folder / "report.json", report.model_dump_json(indent=2))
    if sealed:
        seal(folder)
    return folder


def _settings(baseline: Path, history: HistorySettings | None) -> GateSettings:
    compare = CompareSettings(metrics=None, headline_k=5, view="auto", stale="fail", exclude_unstable=False,
                              strict=False, tolerance=None, cluster=False, resamples=200, seed=0, correlation=0.5,
                              max_infra=0.2, quarantine_dir=None, history=history)
    return GateSettings(floors={}, after_run=True, baseline=baseline, variant=None, baselines_dir=baseline.parent,
                        junit=None, compare=compare)


def _project(tmp_path: Path) -> dict[str, Any]:
    out = tmp_path / "outputs"
    even, first_half = {i for i in range(12) if i % 2 == 0}, set(range(6))
    _write(out / "h1", {i for i in range(12) if i % 2}, 1)
    _write(out / "h2", first_half, 2)
    _write(out / "other", set(), 3, model="another")           # another system: its draws are not this one's
    _write(out / "unsealed", set(), 4, sealed=False)           # killed before its seal
    _write(out / "changed", set(), 5, goldens={q: "other-judgement" for q in FLAKY + STABLE})
    base = _write(out / "base", even, 6)
    run = _write(out / "run", {0, 3, 6, 9}, 7)                 # 6 flaky passes before, 4 now: chance
    return {"out": out, "baseline": promote(base, tmp_path / "baselines"), "run": run}


def test_a_compare_at_one_repeat_takes_its_noise_from_the_earlier_runs_and_names_them(tmp_path: Path) -> None:
    p = _project(tmp_path)
    report, cases = load_run(p["run"])
    history = HistorySettings(roots=(p["out"],), scan=100, runs=20)
    without = decide(report, cases, _settings(p["baseline"], None)).verdict
    assert without is not None and without.outcome == "not measured"
    outcome = decide(report, cases, _settings(p["baseline"], history))
    v = outcome.verdict
    assert v is not None and v.exit_code == 0, [m.reason for m in v.metrics]
    assert outcome.gate.verdict == "pass"
    # The record every file of the run carries says where the noise came from.
    row = next(g for g in outcome.gate.metrics if g.name == "e2e.correctness")
    assert row.noise_source.startswith("from question history (2 earlier run(s)")
    assert any("from question history: 2 earlier sealed run(s)" in w for w in v.warnings)
    m = next(m for m in v.metrics if m.name == "e2e.correctness")
    # h1 and h2 only: 2 runs of 40 questions asked once.
    assert m.noise_source == "from question history (2 earlier run(s), 80 draws of 40 question(s))"
    assert m.noise is not None and m.noise > 0 and "from question history" in m.reason
    assert m.outcome == "within tolerance"


def test_the_reader_counts_only_sealed_runs_of_the_same_goldens_and_system_and_at_most_the_newest(
        tmp_path: Path) -> None:
    p = _project(tmp_path)
    report, _ = load_run(p["run"])
    base = load_baseline(p["baseline"])
    found = question_history([p["out"]], base, report, scan=100, most=20)
    assert found.runs == 2 and len(found.questions["e2e:f0"]) == 2
    assert question_history([p["out"]], base, report, scan=100, most=1).runs == 1
    assert question_history([tmp_path / "nowhere"], base, report, scan=100, most=20).runs == 0
