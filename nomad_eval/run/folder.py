"""The one writer of a scoring run's folder."""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig

from nomad_eval.base.case import Case
from nomad_eval.harness.trace import Tracer
from nomad_eval.report.console_view import print_generation
from nomad_eval.report.exports import write_exports
from nomad_eval.report.html_writer import write_html
from nomad_eval.report.io import write_atomic, write_jsonl
from nomad_eval.report.markdown import generation_markdown
from nomad_eval.report.schema import Report
from nomad_eval.report.upstream_view import upstream_markdown
from nomad_eval.tiers import generation_auto


def write_run(cfg: DictConfig, out: Path, report: Report, cases: list[Case], tracer: Tracer | None = None) -> None:
    """A generation report's files (tier=app's too), and its console view."""
    write_jsonl(out / "cases.jsonl", cases)
    if tracer is not None and tracer.spans:
        warning = tracer.write(out / "trace.jsonl", cfg.trace.get("otlp_endpoint"),
                               float(cfg.trace.otlp_timeout_s))
        if warning:
            report.warnings.append(warning)
    write_atomic(out / "report.md", generation_markdown(report) + upstream_markdown(report.upstream)
                 + generation_auto.markdown(report.adaptive))
    write_atomic(out / "report.json", report.model_dump_json(indent=2))
    write_exports(out, cases)
    write_html(out, report, cases)
    print_generation(report, quiet=bool(cfg.quiet), run_dir=out)
