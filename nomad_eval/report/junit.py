"""A run's gate record as JUnit XML, the format CI dashboards read.

One test case per floor and per gated metric, one for the suite's questions all being measured, and one for the
runs being comparable. A broken floor, a regression or a missing value is a failure; a compare that could not be
made is an error; everything else passes with its figures in its output.
"""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree as ET

from nomad_eval.base.atomic import write_atomic
from nomad_eval.report.schema import Gate, GateMetric

FAILED = ("regression", "not measured", "too small to tell")


def _summary(m: GateMetric) -> str:
    ci = "—" if m.low is None or m.high is None else f"[{m.low:+.4f}, {m.high:+.4f}]"
    delta = "—" if m.delta is None else f"{m.delta:+.4f}"
    return (f"{m.outcome}: {m.name} {m.baseline} -> {m.run}, delta {delta}, run-to-run noise {m.noise}, "
            f"in general 95% CI {ci}, n={m.n}. {m.reason}")


def _case(suite: ET.Element, name: str, classname: str, failure: str | None = None, error: str | None = None,
          out: str | None = None) -> None:
    tc = ET.SubElement(suite, "testcase", classname=classname, name=name)
    if failure is not None:
        ET.SubElement(tc, "failure", message=failure.splitlines()[0][:500]).text = failure
    if error is not None:
        ET.SubElement(tc, "error", message=error.splitlines()[0][:500]).text = error
    if out is not None:
        ET.SubElement(tc, "system-out").text = out


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
    missing = gate.questions.get("not measured")
    if gate.metrics or missing:
        _case(root, "every question measured", f"{suite}.compare",
              failure=f"{len(missing)} question(s) of the suite have no record: {', '.join(missing)}"
              if missing else None)
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
