"""The one skeleton every scoring tier runs in: the skeleton makes the run's folder, the tier measures (its
`measure(config, out)` returns a RunResult: the report, the cases and the files beside them), then `conclude`
decides the gate, writes the folder, seals it and announces the verdict. The gate is decided before any file is
written, so each of them holds the verdict. Tiers do not import this module: run/registry.py wraps their
`measure` in `scoring_run`."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from nomad_eval.config import RunConfig
from nomad_eval.harness.rundir import run_dir, sweep_id
from nomad_eval.records import lines
from nomad_eval.report.exports import write_exports
from nomad_eval.report.html_writer import write_html
from nomad_eval.report.io import write_atomic
from nomad_eval.report.provenance import provenance
from nomad_eval.run.finish import decide, finish
from nomad_eval.run.result import Measure, RunResult, View


def scoring_run(measure: Measure, view: View) -> Callable[[RunConfig], int]:
    """A scoring tier's run(config) -> exit code: its folder made, `measure` run into it, then concluded."""

    def run(config: RunConfig) -> int:
        out = run_dir(config.paths.run_dir)
        return conclude(config, out, measure(config, out), view)

    return run


def conclude(config: RunConfig, out: Path, result: RunResult, view: View) -> int:
    """Decide the gate, write the folder, seal it and announce the verdict; returns the exit code. The report's
    timings get `write` and `total` here when the result says when its run `started`."""
    report, cases, art, started = result.report, result.cases, result.artifacts, result.started
    # The envelope every scoring tier's report holds: where the code came from, the command line, the sweep.
    report.provenance, report.overrides, report.sweep_id = provenance(), config.overrides, sweep_id()
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
