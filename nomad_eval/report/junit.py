"""A compare verdict as JUnit XML, the format CI dashboards read: one test case per gated metric.

Each case names its outcome: a regression (or a metric the run failed to measure) is a failure, "too small
to tell" is skipped with the detectable effect in its message, "within noise" passes with its interval.
"""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree as ET

from nomad_eval.base.atomic import write_atomic
from nomad_eval.core.compare import MetricVerdict, Verdict


def _summary(m: MetricVerdict) -> str:
    ci = "—" if m.interval is None else f"[{m.interval.low:+.4f}, {m.interval.high:+.4f}]"
    delta = "—" if m.delta is None else f"{m.delta:+.4f}"
    return f"{m.outcome}: {m.name} {m.baseline} -> {m.current}, delta {delta}, 95% CI {ci}, n={m.n}. {m.reason}"


def write_junit(verdict: Verdict, path: Path, suite: str = "nomad-eval") -> None:
    gated = [m for m in verdict.metrics if m.gated]
    skipped = [m for m in gated if m.outcome == "too small to tell"]
    cases = ET.Element("testsuite", name=suite, tests=str(max(1, len(gated))),
                       failures=str(len(verdict.regressions)), errors=str(1 if verdict.refused else 0),
                       skipped=str(len(skipped)))
    props = ET.SubElement(cases, "properties")
    ET.SubElement(props, "property", name="verdict", value=verdict.outcome)
    ET.SubElement(props, "property", name="questions", value=str(verdict.common))
    ET.SubElement(props, "property", name="unstable_excluded", value=str(len(verdict.unstable)))
    if verdict.refused:
        tc = ET.SubElement(cases, "testcase", classname=suite, name="comparable")
        ET.SubElement(tc, "error", message="runs are not comparable").text = "\n".join(verdict.refused)
    for m in gated:
        tc = ET.SubElement(cases, "testcase", classname=suite, name=f"{m.name} ({m.outcome})")
        text = _summary(m)
        if m.outcome in ("regression", "not measured"):
            ET.SubElement(tc, "failure", message=text)
        elif m.outcome == "too small to tell":
            ET.SubElement(tc, "skipped", message=text)
        else:
            ET.SubElement(tc, "system-out").text = text
    if verdict.differences:
        ET.SubElement(cases, "system-out").text = "system under test differs:\n" + "\n".join(verdict.differences)
    write_atomic(path, ET.tostring(cases, encoding="unicode", xml_declaration=True))
