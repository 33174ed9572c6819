"""A compare verdict as JUnit XML, the format CI dashboards read."""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree as ET

from nomad_eval.compare.diff import Verdict
from nomad_eval.report.io import write_atomic


def write_junit(verdict: Verdict, path: Path, suite: str = "nomad-eval") -> None:
    cases = ET.Element("testsuite", name=suite, tests=str(max(1, len(verdict.deltas))),
                       failures=str(len(verdict.regressions)), errors=str(1 if verdict.refused else 0))
    if verdict.refused:
        tc = ET.SubElement(cases, "testcase", classname=suite, name="comparable")
        ET.SubElement(tc, "error", message="runs are not comparable").text = "\n".join(verdict.refused)
    for d in verdict.deltas:
        tc = ET.SubElement(cases, "testcase", classname=suite, name=d.name)
        if d.regressed:
            ET.SubElement(tc, "failure", message=f"{d.name} regressed: {d.baseline} -> {d.current} "
                                                 f"(tolerance {d.tolerance})")
    write_atomic(path, ET.tostring(cases, encoding="unicode", xml_declaration=True))
