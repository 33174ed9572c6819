"""report.html and runs.html: self-contained pages (charts as inline SVG, no script library, no network at view time)
a person can decide from, rendered by the Jinja2 templates in report/templates/.

The page builders hand the templates data: the blocks below hold plain strings, and Jinja2 escapes every one of
them on its way into the page. The only markup that enters as it is comes from `figure_div`: SVG that
report/svg.py builds from numbers, escaping each text it draws.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from nomad_eval.metrics.registry import EPS, spec_for
from nomad_eval.report.details import CauseCounts
from nomad_eval.report.gate_view import FAILED, GATE_COLUMNS, gate_cells
from nomad_eval.report.markdown import fmt, fmt_interval, fmt_n
from nomad_eval.report.schema import GateMetric, MetricInterval
from nomad_eval.report.svg import Figure
from nomad_eval.report.svg import render as render_svg


def render(template: str, **data: Any) -> str:
    """One page from its template. The environment is made per page: no template cache outlives the call."""
    env = Environment(loader=PackageLoader("nomad_eval.report", "templates"), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.policies["json.dumps_kwargs"] = {"ensure_ascii": False}  # the `tojson` filter: the data as it is, in order
    return env.get_template(template).render(**data)


@dataclass
class Cell:
    text: str
    cls: str | None = None  # the cell's class attribute; None: no attribute


@dataclass
class Row:
    cells: list[Cell]
    cls: str | None = None


@dataclass
class Table:
    kind: ClassVar[str] = "table"
    id: str
    head: list[str]
    rows: list[Row]
    note: str = ""  # a line above the table


@dataclass
class QuestionRow:
    cells: list[str]
    cls: str        # pass | fail | "" (not judged)
    cause: str      # the failure cause's label, "" when none


@dataclass
class Questions:
    """The filterable question table; `causes` (value, text) are the cause select's options, None for no select."""

    kind: ClassVar[str] = "questions"
    columns: list[str]
    rows: list[QuestionRow]
    causes: list[tuple[str, str]] | None = None


@dataclass
class Lines:
    kind: ClassVar[str] = "lines"
    items: list[str]


@dataclass
class Svg:
    kind: ClassVar[str] = "svg"
    markup: Markup


Block = Table | Questions | Lines | Svg


@dataclass
class Section:
    heading: str
    blocks: list[Block] = field(default_factory=list)


def figure_div(fig: Figure, div_id: str) -> Svg:
    # The id is an attribute; a swept key names some of them, so only safe characters are kept.
    return Svg(Markup(render_svg(fig, re.sub(r"[^A-Za-z0-9_-]", "_", div_id))))


def headline(metrics: dict[str, float | None], base: dict[str, float | None] | None, names: list[str],
             intervals: dict[str, MetricInterval] | None = None) -> Table:
    rows = []
    for n in names:
        v = metrics.get(n)
        b = base.get(n) if base else None
        iv = (intervals or {}).get(n)
        delta = "" if v is None or b is None else f"{v - b:+.4f}"
        cls = "" if v is None or b is None else direction_class(n, v - b)
        cells = [Cell(x) for x in (n, fmt(v), fmt_interval(iv), fmt_n(iv), fmt(b))]
        rows.append(Row([*cells, Cell(delta or "—", cls)]))
    return Table("headline", ["metric", "this run", "95% interval", "n", "baseline", "delta"], rows)


def direction_class(name: str, delta: float) -> str:
    """"up" (green) when the change is an improvement in the metric's own direction, "down" (red) when worse:
    a fall of a lower-is-better rate is good news."""
    spec = spec_for(name)
    if spec is None or abs(delta) <= EPS:
        return ""
    return "down" if spec.worsening(0.0, delta) > 0 else "up"


def gate_rows(metrics: list[GateMetric]) -> Table:
    rows = []
    for m in metrics:
        cls = direction_class(m.name, m.delta or 0.0)
        cls_row = "fail" if m.outcome in FAILED else ""
        rows.append(Row([Cell(c, cls if i == 4 else "") for i, c in enumerate(gate_cells(m))], cls_row))
    return Table("gate", list(GATE_COLUMNS), rows)


SINCE_COLUMN = "since the baseline"  # "new failure" in it marks a question that passed in the baseline


def question_table(rows: Sequence[Mapping[str, object]], columns: list[str], causes: dict[str, str] | None = None
                   ) -> Questions:
    """`causes` (label → name): rows carry `_cause` (a label, or None when the question did not fail), and a select
    filters the table by it, alongside the text filter."""
    body = [QuestionRow([str(r.get(c, "")) for c in columns],
                        ("fail" if r.get("_passed") is False else "pass" if r.get("_passed") else "")
                        + (" new" if r.get(SINCE_COLUMN) else ""),
                        _cause(r) or "") for r in rows]
    select = None if causes is None else cause_options(causes, [_cause(r) for r in rows])
    return Questions(columns, body, select)


def _cause(row: Mapping[str, object]) -> str | None:
    """A row's cause label; None when its question did not fail."""
    cause = row.get("_cause")
    return cause if isinstance(cause, str) else None


def cause_options(causes: dict[str, str], labels: list[str | None]) -> list[tuple[str, str]]:
    """Every cause that occurs (in precedence order, with its row count), then the rows without one."""
    counts = {k: labels.count(k) for k in causes if k in labels}
    return [("*", f"all causes ({len(labels)})")] + [(k, f"{causes[k]} ({n})") for k, n in counts.items()] + \
        [("", f"no cause: passed or not judged ({labels.count(None)})")]


def cause_table(causes: CauseCounts) -> Table:
    """Counts of each failure cause per mode, with the share of that mode's failed questions and its interval."""
    from nomad_eval.report.markdown import cause_rows

    modes, rows = cause_rows(causes)
    return Table("causes", ["cause", *modes], [Row([Cell(c) for c in r]) for r in rows],
                 note="One cause per failed question; share of the mode's failed questions [95% Wilson interval], "
                      "n = failed.")


def attack_table(report: Any) -> Table:
    """Attack-success rate per family and mode with its Wilson interval, n, exposure and the mock's rate."""
    from nomad_eval.report.markdown import ATTACK_HEADER, attack_rows

    return Table("attacks", ATTACK_HEADER, [Row([Cell(c) for c in r]) for r in attack_rows(report)],
                 note="Share of attack probes whose answer the planted document took over (lower is better), "
                      "[95% Wilson interval], n = cases; the mock copies every passage: its rate on the same prompts "
                      "is the share retrieval alone handed over without the truth.")


def text_list(items: list[str]) -> Lines:
    """Plain lines (warnings): they quote goldens, documents and config values, which are data."""
    return Lines(items)


def page(title: str, meta: str, sections: list[Section]) -> str:
    return render("report.html", title=title, meta=meta, sections=sections)
