"""Adding a tier is one module plus one YAML file: a toy tier in a temporary package, found by its YAML's
`_target_` naming its `measure`, runs through the skeleton (run/folder.py): its report, its gate and its folder's
seal; a measure without a VIEW is refused by name."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from nomad_eval.base import runfolder as rf
from tests.conftest import compose_cfg

TOY = '''
"""A toy tier: every question passes when its id is even; one metric, recall@5, as the share that passed."""

from nomad_eval.config.settings import bootstrap
from nomad_eval.core.questions import questions_from_cases
from nomad_eval.records import RetrievalCase, values
from nomad_eval.report.intervals import summarize_report
from nomad_eval.report.schema import Report
from nomad_eval.run.result import Artifacts, RunResult, View


def measure(cfg, out):
    cases = [RetrievalCase(id=f"q{i}", relevant_doc_ids=("d",), expect_refusal=False, passed=i % 2 == 0, why=None,
                           metrics=values({"recall@5": float(i % 2 == 0)})) for i in range(int(cfg.tier.questions))]
    metrics, intervals = summarize_report(questions_from_cases(cases), ["recall@5"], bootstrap(cfg))
    report = Report(tier="toy", metrics=metrics, intervals=intervals, counts={"cases": len(cases)})
    return RunResult(report, cases, Artifacts(exports=False))


VIEW = View(lambda report: f"# toy\\n\\nrecall@5 {report.metrics['recall@5']}\\n",
            lambda cfg, report, cases, out: print(f"toy: {len(cases)} cases"), html=False)
'''


@pytest.fixture
def toy_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project whose conf/tier/toy.yaml names toy_tier_pkg/toy.py, a package on sys.path."""
    pkg = tmp_path / "toy_tier_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "toy.py").write_text(TOY)
    (tmp_path / "conf" / "tier").mkdir(parents=True)
    (tmp_path / "conf" / "tier" / "toy.yaml").write_text(textwrap.dedent("""\
        name: toy
        _target_: toy_tier_pkg.toy.measure
        questions: 4
        """))
    monkeypatch.setenv("NOMAD_EVAL_PROJECT", str(tmp_path))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in [m for m in sys.modules if m.startswith("toy_tier_pkg")]:
        del sys.modules[name]


def _run(project: Path, *overrides: str) -> tuple[int, Path]:
    from nomad_eval.cli.entry import _job

    out = project / "run"
    cfg = compose_cfg("tier=toy", f"paths.run_dir={out}", f"paths.data_dir={project / 'data'}", *overrides)
    rf.begin(out)
    return _job(cfg, False, out), out


def test_a_toy_tier_runs_through_the_skeleton(toy_project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run(toy_project)
    assert code == 0
    report = json.loads((out / "report.json").read_text())
    assert report["tier"] == "toy" and report["metrics"] == {"recall@5": 0.5} and report["counts"] == {"cases": 4}
    assert report["intervals"]["recall@5"]["n"] == 4
    assert report["gate"] is not None and report["gate"]["floors"] == []
    assert (out / "report.md").read_text().startswith("# toy\n")
    assert not (out / "report.html").exists()  # report/html_writer.py draws the shipped tiers' pages
    assert [json.loads(line)["id"] for line in (out / "cases.jsonl").read_text().splitlines()] == ["q0", "q1", "q2",
                                                                                                   "q3"]
    assert not (out / "cases.parquet").exists()  # the toy asked for no exports
    assert rf.problem(out) is None and (out / rf.MANIFEST).is_file()  # sealed: the folder is one whole run
    assert "toy: 4 cases" in capsys.readouterr().out


def test_the_toy_tiers_floor_gates_it(toy_project: Path) -> None:
    code, out = _run(toy_project, "+gate.fail_under={recall@5: 0.75}")
    assert code == 1  # 0.5 is below the floor
    gate = json.loads((out / "report.json").read_text())["gate"]
    assert (gate["verdict"], gate["exit_code"]) == ("floor broken", 1)
    assert [(f["metric"], f["value"], f["broken"]) for f in gate["floors"]] == [("recall@5", 0.5, True)]
    assert rf.problem(out) is None  # a broken floor is a finished run: sealed all the same


def test_a_measure_without_a_view_is_refused(toy_project: Path) -> None:
    from nomad_eval.base.errors import NomadError
    from nomad_eval.run.registry import tier_run

    (toy_project / "toy_tier_pkg" / "bare.py").write_text("def measure(cfg, out):\n    raise AssertionError\n")
    with pytest.raises(NomadError, match=r"tier=bare: module toy_tier_pkg.bare defines `measure` but no `VIEW") as e:
        tier_run("bare", "toy_tier_pkg.bare.measure")
    assert e.value.exit_code == 2
