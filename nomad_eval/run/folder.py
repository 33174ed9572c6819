"""The one skeleton every scoring tier ends in: a tier measures (its `measure` returns a RunResult: the report,
the cases and the files beside them), then `conclude` decides the gate, writes the run's folder, seals it and
announces the verdict. The gate is decided before any file is written, so each of them holds the verdict."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from nomad_eval.config import RunConfig
from nomad_eval.harness.trace import Tracer
from nomad_eval.metrics.separation import Scores
from nomad_eval.records import Case, lines
from nomad_eval.report.exports import write_exports
from nomad_eval.report.html_writer import write_html
from nomad_eval.report.io import write_atomic
from nomad_eval.report.schema import Report
from nomad_eval.run.finish import decide, finish


@dataclass(frozen=True)
class View:
    """How a tier's report reads: report.md (`markdown`), the console (`show`), and whether report.html is drawn
    (report/html_writer.py knows the shipped tiers' pages)."""

    markdown: Callable[[Report], str]
    show: Callable[[RunConfig, Report, Sequence[Case], Path], None]
    html: bool = True


@dataclass
class Artifacts:
    """What a run writes beside report.json and cases.jsonl."""

    tracer: Tracer | None = None                  # trace.jsonl (and its OTLP export), when it holds spans
    files: Mapping[str, str] = field(default_factory=dict)  # further files by name, written as given
    exports: bool = True                          # cases.parquet (and a retrieval run's run.trec, qrels.trec)
    scores: Scores | None = None                  # the scores the HTML report draws (a retrieval run's scores.json)


@dataclass
class RunResult:
    """What a scoring tier's `measure` returns: everything the skeleton writes, decides and announces."""

    report: Report
    cases: Sequence[Case]
    artifacts: Artifacts = field(default_factory=Artifacts)


def conclude(config: RunConfig, out: Path, result: RunResult, view: View, started: float | None = None) -> int:
    """Decide the gate, write the folder, seal it and announce the verdict; returns the exit code. `started`
    (a perf_counter reading): the report's timings get `write` and `total` here, for a tier that times them."""
    report, cases, art = result.report, result.cases, result.artifacts
    outcome = decide(config, report, cases)
    report.gate = outcome.gate
    t = time.perf_counter()
    write_atomic(out / "cases.jsonl", lines(cases))
    for name, text in art.files.items():
        write_atomic(out / name, text)
    if art.exports:
        write_exports(out, cases)
    if art.tracer is not None and art.tracer.spans:
        warning = art.tracer.write(out / "trace.jsonl", config.trace.otlp_endpoint,
                                   float(config.trace.otlp_timeout_s))
        if warning:
            report.warnings.append(warning)
    if started is not None:
        report.timings["write"] = time.perf_counter() - t
        report.timings["total"] = time.perf_counter() - started
    write_atomic(out / "report.md", view.markdown(report))
    write_atomic(out / "report.json", report.model_dump_json(indent=2))
    if view.html:
        write_html(out, report, cases, art.scores)
    view.show(config, report, cases, out)
    return finish(config, out, outcome)
