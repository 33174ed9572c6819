"""Inline SVG charts: one error bar per interval and none without, gaps for missing values, escaped text."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from nomad_eval.report.svg import Chart, Heatmap, Panels, Series, render


def _svg(fig: Chart | Heatmap | Panels) -> ET.Element:
    return ET.fromstring(render(fig, "chart-x"))  # well-formed XML, or this raises


def test_error_bars_only_where_an_interval_exists_and_no_bar_for_a_missing_value() -> None:
    chart = Chart("t", ["a", "b", "c", "d"], [Series("s", [0.5, None, 0.7, 0.2], [0.4, None, 0.6, None],
                                                     [0.6, None, 0.8, None])], y_range=(0.0, 1.05))
    page = render(chart, "chart-x")
    assert len(re.findall(r'class="yerror"', page)) == 2
    assert len(re.findall(r'class="bar"', page)) == 3
    assert chart.has_intervals() and not Chart("t", ["a"], [Series("s", [0.5])]).has_intervals()
    _svg(chart)


def test_an_interval_spans_its_low_and_high_on_the_axis() -> None:
    chart = Chart("t", ["a"], [Series("s", [0.5], [0.25], [0.75])], y_range=(0.0, 1.0))
    path = re.search(r'class="yerror" d="M([\d.]+) ([\d.]+)V([\d.]+)', render(chart, "c"))
    assert path is not None
    top, plot_h = 40, 360 - 40 - 64
    assert float(path.group(2)) == round(top + plot_h * 0.75, 1)  # low: lower on the page
    assert float(path.group(3)) == round(top + plot_h * 0.25, 1)


def test_a_line_breaks_at_a_missing_value() -> None:
    chart = Chart("t", [1.0, 2.0, 3.0, 4.0, 5.0], [Series("s", [0.1, 0.2, None, 0.4, 0.5], kind="line")],
                  numeric_x=True)
    assert len(re.findall(r'class="line"', render(chart, "c"))) == 2


def test_text_is_escaped_and_ids_too() -> None:
    chart = Chart("<b>title</b>", ["<script>x</script>"], [Series("a&b", [0.3], text=["n=<3>"])])
    page = render(chart, 'chart-"x"')
    assert "<script>" not in page and "<b>" not in page and "&lt;script&gt;" in page
    assert 'id="chart-&quot;x&quot;"' in page
    _svg(chart)


def test_panels_and_heatmap_render_as_svg() -> None:
    hist = Chart("h", [0.1, 0.2], [Series("r", [0.5, 0.5]), Series("i", [0.2, 0.8])], numeric_x=True,
                 overlay=True, bar_width=0.1, vlines=[(0.15, "threshold")])
    root = _svg(Panels([hist, hist]))
    assert len(root.findall(".//{http://www.w3.org/2000/svg}svg") + root.findall(".//svg")) == 2
    heat = Heatmap("m", ["a", "b"], ["model-1", "model-2"], [[1.0, None], [0.0, 0.5]], [["1.00", "—"], ["0", ".5"]])
    page = render(heat, "chart-m")
    assert len(re.findall(r'class="cell"', page)) == 4 and 'fill="#eee"' in page
    _svg(heat)
