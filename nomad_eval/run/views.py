"""How the shipped scoring tiers' reports read: report.md, the console, and whether report.html is drawn. The
skeleton (run/registry.py) picks a tier's view here by its name, so a tier module measures and renders nothing; a
tier of one's own defines its VIEW beside its `measure`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType

from nomad_eval.base.console import console
from nomad_eval.config import RunConfig
from nomad_eval.records import Case
from nomad_eval.report.console_view import print_generation, print_position, print_retrieval
from nomad_eval.report.markdown import generation_markdown, position_markdown, retrieval_markdown, upstream_markdown
from nomad_eval.report.schema import Report
from nomad_eval.run import generation_auto
from nomad_eval.run.result import View


def _retrieval_markdown(report: Report) -> str:
    return retrieval_markdown(report) + upstream_markdown(report.upstream)


def _show_retrieval(config: RunConfig, report: Report, cases: Sequence[Case], out: Path) -> None:
    print_retrieval(report, cases, verbose=bool(config.verbose), quiet=bool(config.quiet), run_dir=out)
    if not config.quiet and report.upstream is not None and report.upstream.advice:
        console.print("upstream view, retrieved chunks' raw cosines: " + " ".join(report.upstream.advice),
                      markup=False, highlight=False)


def _answers_markdown(report: Report) -> str:
    auto = generation_auto.markdown(report.generation_part().adaptive)
    return generation_markdown(report) + upstream_markdown(report.upstream) + auto


def _show_answers(config: RunConfig, report: Report, cases: Sequence[Case], out: Path) -> None:
    print_generation(report, quiet=bool(config.quiet), run_dir=out)


def _show_position(config: RunConfig, report: Report, cases: Sequence[Case], out: Path) -> None:
    print_position(report, quiet=bool(config.quiet), run_dir=out)


ANSWERS = View(_answers_markdown, _show_answers)  # generation's and app's report
VIEWS: Mapping[str, View] = MappingProxyType({
    "retrieval": View(_retrieval_markdown, _show_retrieval),
    "generation": ANSWERS,
    "app": ANSWERS,
    "position": View(position_markdown, _show_position),
})
