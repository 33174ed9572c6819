"""report.html: one self-contained page (plotly.js inline, no network at view time) a person can decide from."""

from __future__ import annotations

import html
import re
from functools import lru_cache
from typing import Any

from nomad_eval.report.markdown import fmt, fmt_interval, fmt_n
from nomad_eval.report.schema import MetricInterval

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
<script>{plotly_js}</script></head><body>
<h1>{title}</h1><div class="meta">{meta}</div>
{body}
<script>
function applyFilter(q) {{
  q = q.toLowerCase(); let shown = 0;
  document.querySelectorAll('#questions tbody tr').forEach(function (tr) {{
    const hit = tr.textContent.toLowerCase().indexOf(q) !== -1;
    tr.style.display = hit ? '' : 'none'; if (hit) shown++;
  }});
  const c = document.getElementById('shown'); if (c) c.textContent = shown;
}}
const box = document.getElementById('filter');
if (box) {{
  box.addEventListener('input', function () {{ applyFilter(box.value); }});
  const m = location.hash.match(/^#q=(.*)$/);  // a shareable filter: report.html#q=multi-hop
  if (m) {{ box.value = decodeURIComponent(m[1]); applyFilter(box.value); }}
}}
</script></body></html>"""


@lru_cache(maxsize=1)
def _plotly_js() -> str:
    from plotly.offline import get_plotlyjs

    return str(get_plotlyjs())


def figure_div(fig: Any, div_id: str) -> str:
    fig.update_layout(margin={"l": 40, "r": 20, "t": 40, "b": 40}, height=360, template="plotly_white")
    # plotly puts the id in an attribute and a script string unescaped; a swept key names some of them.
    safe_id = re.sub(r"[^A-Za-z0-9_-]", "_", div_id)
    return str(fig.to_html(full_html=False, include_plotlyjs=False, div_id=safe_id, config={"displaylogo": False}))


def headline(metrics: dict[str, float | None], base: dict[str, float | None] | None, names: list[str],
             intervals: dict[str, MetricInterval] | None = None) -> str:
    rows = []
    for n in names:
        v = metrics.get(n)
        b = base.get(n) if base else None
        iv = (intervals or {}).get(n)
        delta = "" if v is None or b is None else f"{v - b:+.4f}"
        cls = "" if not delta else ("up" if v > b else "down" if v < b else "")  # type: ignore[operator]
        cells = [html.escape(x) for x in (n, fmt(v), fmt_interval(iv), fmt_n(iv), fmt(b))]
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + f"<td class='{cls}'>{delta or '—'}</td></tr>")
    head = ("<tr><th>metric</th><th>this run</th><th>95% interval</th><th>n</th><th>baseline</th>"
            "<th>delta</th></tr>")
    return f"<table id='headline'>{head}{''.join(rows)}</table>"


def question_table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = []
    for r in rows:
        cls = "fail" if r.get("_passed") is False else "pass" if r.get("_passed") else ""
        cells = "".join(f"<td>{html.escape(str(r.get(c, '')))}</td>" for c in columns)
        body.append(f"<tr class='{cls}'>{cells}</tr>")
    return ("<input id='filter' placeholder='filter questions: id, tag, document, text…'> "
            f"<span class='meta'><span id='shown'>{len(rows)}</span> of {len(rows)} shown</span>"
            f"<table id='questions'><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>")


def text_list(items: list[str]) -> str:
    """Plain lines (warnings), escaped: they quote goldens, documents and config values, which are data."""
    return "<ul>" + "".join(f"<li>{html.escape(x)}</li>" for x in items) + "</ul>"


def page(title: str, meta: str, sections: list[tuple[str, str]]) -> str:
    """`title`, `meta` and section headings are plain text (escaped here); section contents are HTML built by
    the functions above, which escape every value they show."""
    body = "".join(f"<h2>{html.escape(h)}</h2>{content}" for h, content in sections)
    return PAGE.format(title=html.escape(title), meta=html.escape(meta), body=body, plotly_js=_plotly_js())

