"""What a scoring tier hands the skeleton (run/folder.py): its `measure(config, out)` returns a RunResult (the
report, the cases and the files beside them), and its module's VIEW says how the report reads. Kept apart from the
skeleton so a tier imports these few types, not the gate, the writers and the renderers the skeleton calls."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from nomad_eval.config import RunConfig
from nomad_eval.harness.trace import Tracer
from nomad_eval.metrics.separation import Scores
from nomad_eval.records import Case
from nomad_eval.report.schema import Report


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
    """What a scoring tier's `measure` returns: everything the skeleton writes, decides and announces. `started`
    (a perf_counter reading) when the tier wants the skeleton to add the `write` and `total` timings."""

    report: Report
    cases: Sequence[Case]
    artifacts: Artifacts = field(default_factory=Artifacts)
    started: float | None = None


Measure = Callable[[RunConfig, Path], RunResult]  # a scoring tier's measure(config, out): out is its run's folder
