"""The gate record every file states: its verdict and cause, the JUnit cases, the HTML colours by direction."""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree as ET

from nomad_eval.core.questions import questions_from_cases
from nomad_eval.gate.compare import compare_questions
from nomad_eval.gate.floors import floor_rows, run_floors
from nomad_eval.gate.junit import write_junit
from nomad_eval.gate.outcome import Verdict
from nomad_eval.gate.record import gate_record
from nomad_eval.report.gate_view import gate_markdown, verdict_line
from nomad_eval.report.html import direction_class, gate_rows, render
from nomad_eval.report.schema import MetricInterval, Report
from tests.written import records


def _cases(recalls: list[float]) -> list[dict[str, object]]:
    return [{"id": f"q{i}", "relevant_doc_ids": ["d"], "passed": r == 1.0, "metrics": {"recall@5": r}}
            for i, r in enumerate(recalls)]


def _verdict(base: list[float], run: list[float]) -> Verdict:
    b, r = _cases(base), _cases(run)
    return compare_questions(questions_from_cases(records(b)), questions_from_cases(records(r)), ["recall@5"],
                             base_metrics={"recall@5": sum(base) / len(base)},
                             run_metrics={"recall@5": sum(run) / len(run)})


def test_a_broken_floor_decides_the_verdict_and_is_a_failed_junit_case(tmp_path: Path) -> None:
    floors = floor_rows({"recall@5": 0.7857}, {"recall@5": 0.8})
    gate = gate_record(floors, _verdict([1.0] * 14, [1.0] * 14), baseline="b.json", baseline_reason="own")
    assert (gate.verdict, gate.exit_code) == ("floor broken", 1)
    assert verdict_line(gate) == "verdict: floor broken: recall@5 0.7857 < 0.8"
    write_junit(gate, tmp_path / "j.xml")
    suite = ET.parse(tmp_path / "j.xml").getroot()
    assert suite.get("failures") == "1" and suite.get("errors") == "0"
    (failed,) = [tc for tc in suite.iter("testcase") if tc.find("failure") is not None]
    assert failed.get("name") == "floor recall@5"
    assert "**verdict: floor broken: recall@5 0.7857 < 0.8**" in gate_markdown(gate)


def test_a_floor_carries_its_values_n_and_interval() -> None:
    report = Report(tier="retrieval", metrics={"recall@5": 0.7857},
                    intervals={"recall@5": MetricInterval(n=14, low=0.5714, high=0.9286)})
    (floor,) = run_floors(report, {"recall@5": 0.8})
    assert (floor.broken, floor.n, floor.low, floor.high) == (True, 14, 0.5714, 0.9286)
    gate = gate_record([floor], None)
    assert "- floor recall@5: recall@5 0.7857 < 0.8 [0.5714, 0.9286] n=14 — **broken**" in gate_markdown(gate)


def test_a_regression_names_its_questions_and_a_refusal_is_an_error(tmp_path: Path) -> None:
    gate = gate_record([], _verdict([1.0] * 14, [0.0] * 4 + [1.0] * 10))
    assert gate.verdict == "regression" and gate.exit_code == 1
    assert gate.cause == "recall@5 worse: 1.0000 → 0.7143, higher is better (q0, q1, q2, q3)"
    (m,) = gate.metrics
    assert m.outcome == "regression" and m.noise == 0.0 and m.low is not None and m.high is not None
    refused = gate_record([], None, refused="no baseline for tier retrieval, suite 'core'; promote one")
    write_junit(refused, tmp_path / "r.xml")
    suite = ET.parse(tmp_path / "r.xml").getroot()
    assert (refused.exit_code, suite.get("errors"), suite.get("failures")) == (2, "1", "0")
    passed = gate_record(floor_rows({"recall@5": 0.9}, {"recall@5": 0.8}), _verdict([1.0] * 14, [1.0] * 14))
    assert (passed.verdict, passed.exit_code) == ("pass", 0)
    assert verdict_line(passed) == ("verdict: pass: every floor holds; "
                                    "1 gated metric(s) within tolerance over 14 questions")
    assert verdict_line(gate_record([], None)).startswith("verdict: pass: nothing gated: no floor and no baseline")


def test_the_html_colours_a_change_by_the_metrics_direction() -> None:
    assert direction_class("recall@5", -0.1) == "down" and direction_class("recall@5", 0.1) == "up"
    # Lower is better: a fall is good news, a rise bad news.
    assert direction_class("nonEmptyRateOnRefusal", -0.2) == "up"
    assert direction_class("e2e.leakage_rate", 0.1) == "down"
    assert direction_class("recall@5", 0.0) == "" and direction_class("no-such-metric", -1.0) == ""
    gate = gate_record([], _verdict([1.0] * 14, [0.0] * 4 + [1.0] * 10))
    html = render("block.html", block=gate_rows(gate.metrics))
    assert "<td class='down'>-0.2857</td>" in html and "<tr class='fail'>" in html


def test_a_regression_line_says_which_way_is_better() -> None:
    name = "nonEmptyRateOnRefusal"
    base = [{"id": f"q{i}", "expect_refusal": True, "passed": True, "metrics": {name: 0.0}} for i in range(12)]
    run = [{**c, "passed": i >= 6, "metrics": {name: float(i < 6)}} for i, c in enumerate(base)]
    v = compare_questions(questions_from_cases(records(base)), questions_from_cases(records(run)), [name],
                          base_metrics={name: 0.0}, run_metrics={name: 0.5}, deterministic=True)
    gate = gate_record([], v)
    assert gate.verdict == "regression", gate.cause
    assert gate.cause.startswith(f"{name} worse: 0.0000 → 0.5000, lower is better (q0")
