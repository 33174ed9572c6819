"""The gate record in junit.xml, the format CI dashboards read: one test case per floor and per gated metric, one
for the suite's questions all being measured, and one for the runs being comparable. A broken floor, a regression
or a missing value is a failure; a compare that could not be made is an error; everything else passes with its
figures in its output.
"""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree as ET

from nomad_eval.base.atomic import write_atomic
from nomad_eval.report.gate_view import FAILED, GATE_COLUMNS, direction_text, gate_cells
from nomad_eval.report.schema import Gate, GateMetric


def _summary(m: GateMetric) -> str:
    """A compared metric in one line for junit.xml, its numbers rounded as the reports show them."""
    cells = dict(zip(GATE_COLUMNS, gate_cells(m), strict=True))
    return (f"{m.outcome}: {m.name} {cells['baseline']} -> {cells['run']}{direction_text(m.name)}, delta "
            f"{cells['delta']}, run-to-run noise {cells['run-to-run noise']}, in general 95% CI "
            f"{cells['in general: 95% CI']}, n={m.n}. {m.reason}")


def _case(suite: ET.Element, name: str, classname: str, failure: str | None = None, error: str | None = None,
          out: str | None = None) -> None:
    tc = ET.SubElement(suite, "testcase", classname=classname, name=name)
    if failure is not None:
        ET.SubElement(tc, "failure", message=failure.splitlines()[0][:500]).text = failure
    if error is not None:
        ET.SubElement(tc, "error", message=error.splitlines()[0][:500]).text = error
    if out is not None:
        ET.SubElement(tc, "system-out").text = out


def _coverage_cases(root: ET.Element, gate: Gate, suite: str) -> None:
    """The goldens-up-to-date and every-question-measured cases, when anything was compared."""
    if gate.metrics or gate.stale:  # a golden out of date is its own failure, beside the metrics' regressions
        stale = "\n".join(gate.stale)
        _case(root, "goldens up to date", f"{suite}.compare",
              failure=f"{len(gate.stale)} golden(s) out of date:\n{stale}" if gate.stale and not gate.stale_warn
              else None, out=f"out of date (compare.stale=warn):\n{stale}" if gate.stale_warn and gate.stale else None)
    missing = gate.questions.get("not measured")
    if gate.metrics or missing:
        _case(root, "every question measured", f"{suite}.compare",
              failure=f"{len(missing)} question(s) of the suite have no record: {', '.join(missing)}"
              if missing else None)


def write_junit(gate: Gate, path: Path, suite: str = "nomad-eval") -> None:
    root = ET.Element("testsuite", name=suite)
    props = ET.SubElement(root, "properties")
    ET.SubElement(props, "property", name="verdict", value=gate.verdict)
    ET.SubElement(props, "property", name="cause", value=gate.cause)
    if gate.baseline:
        ET.SubElement(props, "property", name="baseline", value=gate.baseline)
    for f in gate.floors:
        _case(root, f"floor {f.metric}", f"{suite}.floors", failure=f.reason if f.broken else None,
              out=None if f.broken else f.reason)
    if gate.verdict == "not comparable":
        _case(root, "comparable", f"{suite}.compare", error=gate.cause)
    for m in gate.metrics:
        _case(root, f"{m.name} ({m.outcome})", f"{suite}.compare",
              failure=_summary(m) if m.outcome in FAILED else None, out=None if m.outcome in FAILED else _summary(m))
    _coverage_cases(root, gate, suite)
    if not root.findall("testcase"):
        _case(root, "gate", suite, out=gate.cause)
    cases = root.findall("testcase")
    root.set("tests", str(max(1, len(cases))))
    root.set("failures", str(sum(tc.find("failure") is not None for tc in cases)))
    root.set("errors", str(sum(tc.find("error") is not None for tc in cases)))
    root.set("skipped", "0")
    if gate.changes:
        ET.SubElement(root, "system-out").text = "changed since the baseline:\n" + "\n".join(gate.changes)
    write_atomic(path, ET.tostring(root, encoding="unicode", xml_declaration=True))


def write_gate_files(gate: Gate, out: Path, junit: Path | None) -> Path | None:
    """junit.xml, when asked for: relative to the run folder (or the compared run's); returns where."""
    if junit is None:
        return None
    target = junit if junit.is_absolute() else out / junit
    write_junit(gate, target)
    return target
