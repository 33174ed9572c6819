"""report.html: one self-contained page (charts as inline SVG, no script library, no network at view time) a
person can decide from."""

from __future__ import annotations

import html
import re
from typing import Any

from nomad_eval.metrics.registry import EPS, spec_for
from nomad_eval.report.markdown import fmt, fmt_interval, fmt_n
from nomad_eval.report.schema import GateMetric, MetricInterval
from nomad_eval.report.svg import Figure, render

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body{{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}}
h1{{font-size:22px}} h2{{font-size:18px;margin-top:28px;border-bottom:1px solid #ddd}}
table{{border-collapse:collapse;font-size:13px}} td,th{{border:1px solid #ddd;padding:3px 8px;text-align:left}}
.up{{color:#137333}} .down{{color:#b3261e}} .meta{{color:#666;font-size:13px}}
#questions td{{vertical-align:top;max-width:420px}} #filter{{width:360px;padding:4px;margin:8px 0}}
.fail{{background:#fdecea}} .pass{{background:#eef7ee}}
</style>
</head><body>
<h1>{title}</h1><div class="meta">{meta}</div>
{body}
<script>
const cause = document.getElementById('cause');  // generation reports: one failure cause per question
function applyFilter(q) {{
  q = q.toLowerCase(); let shown = 0;
  const want = cause ? cause.value : '*';
  document.querySelectorAll('#questions tbody tr').forEach(function (tr) {{
    const hit = tr.textContent.toLowerCase().indexOf(q) !== -1 && (want === '*' || tr.dataset.cause === want);
    tr.style.display = hit ? '' : 'none'; if (hit) shown++;
  }});
  const c = document.getElementById('shown'); if (c) c.textContent = shown;
}}
const box = document.getElementById('filter');
if (box) {{
  box.addEventListener('input', function () {{ applyFilter(box.value); }});
  if (cause) cause.addEventListener('change', function () {{ applyFilter(box.value); }});
  const m = location.hash.match(/^#q=(.*)$/);  // a shareable filter: report.html#q=multi-hop
  if (m) {{ box.value = decodeURIComponent(m[1]); applyFilter(box.value); }}
  const k = location.hash.match(/^#cause=(.*)$/);  // or by cause: report.html#cause=retrieval_miss
  if (k && cause) {{ cause.value = decodeURIComponent(k[1]); applyFilter(box.value); }}
}}
</script></body></html>"""


def figure_div(fig: Figure, div_id: str) -> str:
    # The id is an attribute; a swept key names some of them, so only safe characters are kept.
    return render(fig, re.sub(r"[^A-Za-z0-9_-]", "_", div_id))


def headline(metrics: dict[str, float | None], base: dict[str, float | None] | None, names: list[str],
             intervals: dict[str, MetricInterval] | None = None) -> str:
    rows = []
    for n in names:
        v = metrics.get(n)
        b = base.get(n) if base else None
        iv = (intervals or {}).get(n)
        delta = "" if v is None or b is None else f"{v - b:+.4f}"
        cls = "" if v is None or b is None else direction_class(n, v - b)
        cells = [html.escape(x) for x in (n, fmt(v), fmt_interval(iv), fmt_n(iv), fmt(b))]
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + f"<td class='{cls}'>{delta or '—'}</td></tr>")
    head = ("<tr><th>metric</th><th>this run</th><th>95% interval</th><th>n</th><th>baseline</th>"
            "<th>delta</th></tr>")
    return f"<table id='headline'>{head}{''.join(rows)}</table>"


def direction_class(name: str, delta: float) -> str:
    """"up" (green) when the change is an improvement in the metric's own direction, "down" (red) when worse:
    a fall of a lower-is-better rate is good news."""
    spec = spec_for(name)
    if spec is None or abs(delta) <= EPS:
        return ""
    return "down" if spec.worsening(0.0, delta) > 0 else "up"


def gate_table(metrics: list[GateMetric]) -> str:
    head = "".join(f"<th>{c}</th>" for c in ("metric", "n", "baseline", "run", "delta", "run-to-run noise",
                                             "in general: 95% CI", "p (Holm)", "detectable", "tolerance", "outcome"))
    rows = []
    for m in metrics:
        ci = "—" if m.low is None or m.high is None else f"[{m.low:+.4f}, {m.high:+.4f}]"
        cells = [m.name, str(m.n), fmt(m.baseline), fmt(m.run), "—" if m.delta is None else f"{m.delta:+.4f}",
                 fmt(m.noise), ci, fmt(m.p_holm), fmt(m.detectable), m.tolerance, m.outcome]
        cls = direction_class(m.name, m.delta or 0.0)
        cls_row = "fail" if m.outcome in ("regression", "not measured", "too small to tell") else ""
        tds = "".join(f"<td class='{cls if i == 4 else ''}'>{html.escape(c)}</td>" for i, c in enumerate(cells))
        rows.append(f"<tr class='{cls_row}'>{tds}</tr>")
    return f"<table id='gate'><tr>{head}</tr>{''.join(rows)}</table>"


def question_table(rows: list[dict[str, Any]], columns: list[str], causes: dict[str, str] | None = None) -> str:
    """`causes` (label → name): rows carry `_cause` (a label, or None when the question did not fail), and a select
    filters the table by it, alongside the text filter."""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = []
    for r in rows:
        cls = "fail" if r.get("_passed") is False else "pass" if r.get("_passed") else ""
        cells = "".join(f"<td>{html.escape(str(r.get(c, '')))}</td>" for c in columns)
        data = f" data-cause='{html.escape(r.get('_cause') or '', quote=True)}'" if causes is not None else ""
        body.append(f"<tr class='{cls}'{data}>{cells}</tr>")
    select = "" if causes is None else cause_select(causes, [r.get("_cause") for r in rows])
    return ("<input id='filter' placeholder='filter questions: id, tag, document, text…'> " + select +
            f"<span class='meta'><span id='shown'>{len(rows)}</span> of {len(rows)} shown</span>"
            f"<table id='questions'><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>")


def cause_select(causes: dict[str, str], labels: list[str | None]) -> str:
    """Every cause that occurs (in precedence order, with its row count), then the rows without one."""
    counts = {k: labels.count(k) for k in causes if k in labels}
    options = [("*", f"all causes ({len(labels)})")] + [(k, f"{causes[k]} ({n})") for k, n in counts.items()] + \
        [("", f"no cause: passed or not judged ({labels.count(None)})")]
    return ("<select id='cause'>" + "".join(f"<option value='{html.escape(v, quote=True)}'>{html.escape(t)}</option>"
                                             for v, t in options) + "</select> ")


def cause_table(causes: dict[str, Any]) -> str:
    """Counts of each failure cause per mode, with the share of that mode's failed questions and its interval."""
    from nomad_eval.report.markdown import cause_cell

    by_mode = causes.get("by_mode") or {}
    names = causes.get("names") or {}
    modes = list(by_mode)
    used = [k for k in [*causes.get("precedence", []), "unexplained"]
            if any((by_mode[m]["labels"].get(k) or {}).get("count") for m in modes)]
    head = "<tr><th>cause</th>" + "".join(f"<th>{html.escape(m)}</th>" for m in modes) + "</tr>"
    rows = [[names.get(k, k), *(cause_cell(by_mode[m]["labels"].get(k)) for m in modes)] for k in used]
    rows.append(["failed / questions", *(f"{by_mode[m]['failed']} / {by_mode[m]['questions']}" for m in modes)])
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return ("<p class='meta'>One cause per failed question; share of the mode's failed questions [95% Wilson "
            f"interval], n = failed.</p><table id='causes'>{head}{body}</table>")


def attack_table(report: Any) -> str:
    """Attack-success rate per family and mode with its Wilson interval, n, exposure and the mock's rate."""
    from nomad_eval.report.markdown import ATTACK_HEADER, attack_rows

    head = "<tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in ATTACK_HEADER) + "</tr>"
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in attack_rows(report))
    return ("<p class='meta'>Share of attack probes whose answer the planted document took over (lower is better), "
            "[95% Wilson interval], n = cases; the mock copies every passage: its rate on the same prompts is the "
            f"share retrieval alone handed over without the truth.</p><table id='attacks'>{head}{body}</table>")


def text_list(items: list[str]) -> str:
    """Plain lines (warnings), escaped: they quote goldens, documents and config values, which are data."""
    return "<ul>" + "".join(f"<li>{html.escape(x)}</li>" for x in items) + "</ul>"


def page(title: str, meta: str, sections: list[tuple[str, str]]) -> str:
    """`title`, `meta` and section headings are plain text (escaped here); section contents are HTML built by
    the functions above, which escape every value they show."""
    body = "".join(f"<h2>{html.escape(h)}</h2>{content}" for h, content in sections)
    return PAGE.format(title=html.escape(title), meta=html.escape(meta), body=body)

