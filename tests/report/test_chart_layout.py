"""Charts measured in a real headless Chromium: every label and legend entry inside its figure, and no legend
entry over the data."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from nomad_eval.report.svg import Chart, Panels, Series, render
from tests.report.test_html_in_browser import CHROMIUM, chromium

pytestmark = [pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)"),
              pytest.mark.slow]  # a headless browser per test; the pages' markup is checked in the quick lane

# After layout: each figure's box, and the boxes of its texts, legend entries, lines and bars, in page pixels.
MEASURE = """<script>
window.addEventListener('load', function () {
  var box = function (e) { var r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  var out = [];
  document.querySelectorAll('svg').forEach(function (svg) {
    out.push({svg: box(svg),
              texts: Array.from(svg.querySelectorAll('text')).map(function (t) { return [t.textContent, box(t)]; }),
              legend: Array.from(svg.querySelectorAll('g.legend')).map(box),
              data: Array.from(svg.querySelectorAll('path.line, rect.bar')).map(box)});
  });
  document.getElementById('out').textContent = JSON.stringify(out);
});
</script>"""


def _overlap(a: list[float], b: list[float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _measure(tmp_path: Path, body: str) -> list[dict[str, list]]:  # type: ignore[type-arg]
    page = tmp_path / "charts.html"
    page.write_text(f"<!doctype html><html><body style='margin:0;width:1000px'>{body}"
                    f"<pre id='out'></pre>{MEASURE}</body></html>")
    dom = chromium(tmp_path, f"file://{page}", "--dump-dom", "--window-size=1000,3000")
    found = re.search(r"<pre id=\"out\">(.*?)</pre>", dom, re.S)
    assert found and found.group(1), dom[-500:]
    return json.loads(found.group(1).replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">"))


def test_legends_and_labels_stay_inside_and_off_the_data(tmp_path: Path) -> None:
    names = [f"core-suite-with-a-long-name · fingerprint{i:02d}abcdef" for i in range(8)]
    trend = Chart("recall@5 over time", list(range(10)), [
        Series(n, [0.9 + 0.01 * ((i + j) % 5) for j in range(10)], kind="line") for i, n in enumerate(names)],
        numeric_x=True, x_title="minutes since the first run")
    tags = Chart("by tag", ["multi-turn-conversation-follow-ups", "b", "c", "d", "e", "f", "g", "h"],
                 [Series("recall@5", [1.0] * 8), Series("hit@5", [0.98] * 8)], y_range=(0.0, 1.0))
    single = Chart("one series", ["a", "b"], [Series("x", [0.5, 0.7])])
    body = render(trend, "chart-trend") + render(tags, "chart-tags") + render(single, "chart-single") + \
        render(Panels([tags, trend]), "chart-panels")
    figures = _measure(tmp_path, body)
    assert len(figures) == 5
    for fig in figures:
        svg = fig["svg"]
        for text, b in fig["texts"]:
            assert b[0] >= svg[0] - 1 and b[2] <= svg[2] + 1 and b[1] >= svg[1] - 1 and b[3] <= svg[3] + 1, \
                (text, b, svg)
        for lb in fig["legend"]:
            assert not any(_overlap(lb, d) for d in fig["data"]), (lb, fig["data"][:2])
    assert len(figures[0]["legend"]) == 8 and len(figures[1]["legend"]) == 2 and not figures[2]["legend"]
