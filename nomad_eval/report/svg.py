"""Charts drawn as inline SVG: bars, lines, error bars, histograms and a heat map, with no script library.

report.html used to carry plotly.js inline (4.6 MB on every run and every job of a sweep) for about ten small
charts. These are drawn here as SVG in the page itself: a report stays one self-contained file that opens offline,
at a few tens of kilobytes, and renders without running any script. Hover text is each shape's SVG <title>.
Every interval is drawn as its own `<path class="yerror">`, so a test (or a person) can count them; a value
without an interval gets none, never a zero-length bar that would look like certainty.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Literal

PALETTE = ("#1a73e8", "#e8710a", "#188038", "#a142f4", "#d93025", "#12b5cb", "#f9ab00", "#5f6368")
WIDTH, HEIGHT = 1000, 360
LEFT, RIGHT, TOP, BOTTOM = 56, 16, 40, 64
CHAR_W = 6.5          # an average glyph at font-size 12, for laying out text the browser measures later
LABEL_CHARS = 40      # a category label longer than this is cut (the whole one stays in its <title>)
LEGEND_ROW = 18


@dataclass
class Series:
    name: str
    y: Sequence[float | None]
    low: Sequence[float | None] | None = None
    high: Sequence[float | None] | None = None
    kind: Literal["bar", "line"] = "bar"
    color: str | None = None
    text: Sequence[str] | None = None      # written inside the foot of each bar, e.g. "n=40"
    hover: Sequence[str] | None = None     # extra hover text per point
    dash: bool = False
    opacity: float = 1.0
    error_color: str | None = None         # default: the series colour (dark on bars reads better: "#333")


@dataclass
class Chart:
    title: str
    x: Sequence[str | float]
    series: list[Series]
    y_range: tuple[float, float] | None = None
    x_title: str = ""
    y_title: str = ""
    numeric_x: bool = False                # x values are numbers on a linear axis (else categories)
    overlay: bool = False                  # bars of several series over each other (histograms), not grouped
    bar_width: float | None = None         # numeric x: a bar's width in x units
    vlines: list[tuple[float, str]] = field(default_factory=list)  # numeric x: dashed lines with a label

    def has_intervals(self) -> bool:
        return any(s.low is not None and any(lo is not None for lo in s.low) for s in self.series)


@dataclass
class Heatmap:
    title: str
    columns: Sequence[str]
    rows: Sequence[str]
    goodness: Sequence[Sequence[float | None]]  # 0 (bad, red) to 1 (good, green) per cell
    text: Sequence[Sequence[str]]


@dataclass
class Panels:
    """Charts side by side in one figure (e.g. raw and final score histograms), `columns` to a row."""

    charts: list[Chart]
    columns: int = 2


Figure = Chart | Heatmap | Panels


def render(fig: Figure, div_id: str) -> str:
    """The figure as `<div id=… class="chart">` holding its SVG."""
    if isinstance(fig, Panels):
        share = f"calc({100 / fig.columns:.4g}% - 8px)"
        inner = "".join(f'<div style="flex:0 0 {share};min-width:0">{_chart(c, WIDTH // fig.columns)}</div>'
                        for c in fig.charts)
        body = f'<div style="display:flex;flex-wrap:wrap;gap:8px">{inner}</div>'
    elif isinstance(fig, Heatmap):
        body = _heatmap(fig)
    else:
        body = _chart(fig, WIDTH)
    return f'<div id="{escape(div_id)}" class="chart">{body}</div>'


def _num(v: float) -> str:
    return f"{v:.1f}"


def _fmt(v: float | None) -> str:
    return "—" if v is None else f"{v:.4g}"


def _ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    span = hi - lo
    if span <= 0:
        return [lo]
    raw = span / count
    step = 10 ** math.floor(math.log10(raw))
    step *= next(m for m in (1, 2, 2.5, 5, 10) if step * m >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    return [round(first + i * step, 10) for i in range(int((hi - first) / step + 1e-9) + 1)]


def _y_bounds(c: Chart) -> tuple[float, float]:
    if c.y_range is not None:
        return c.y_range
    vals = [v for s in c.series for arr in (s.y, s.low or [], s.high or []) for v in arr if v is not None]
    if not vals:
        return 0.0, 1.0
    lo, hi = min(0.0, min(vals)), max(vals)
    if hi <= lo:
        hi = lo + 1.0
    return lo, hi + 0.05 * (hi - lo)


@dataclass
class _Frame:
    """Where a chart's values land in its SVG: the plot area, the value ranges and each category's band."""

    width: int
    height: int
    rotate: bool
    y0: float
    y1: float
    band: float
    numeric: bool
    xv: list[float]
    x0: float = 0.0
    x1: float = 1.0
    pw: int = WIDTH - LEFT - RIGHT
    ph: int = HEIGHT - TOP - BOTTOM
    left: int = LEFT
    foot: int = HEIGHT  # the bottom of the axis titles: the legend's rows start below it
    legend: list[tuple[float, float]] = field(default_factory=list)  # each series' legend entry: x, y

    def ys(self, v: float) -> float:
        return TOP + self.ph - (min(max(v, self.y0), self.y1) - self.y0) / (self.y1 - self.y0) * self.ph

    def xpos(self, v: float) -> float:
        """Numeric axes: the value's place; category axes: the middle of category `v`'s band."""
        if self.numeric:
            return self.left + (v - self.x0) / (self.x1 - self.x0) * self.pw
        return self.left + self.band * (v + 0.5)

    def xs(self, i: int) -> float:
        return self.xpos(self.xv[i]) if self.numeric else self.xpos(i)


def _x_bounds(c: Chart, xv: list[float]) -> tuple[float, float]:
    pad = (c.bar_width or 0.0) / 2
    x0, x1 = (min(xv) - pad, max(xv) + pad) if xv else (0.0, 1.0)
    for vx, _ in c.vlines:
        x0, x1 = min(x0, vx), max(x1, vx)
    if x1 <= x0:
        x0, x1 = x0 - 0.5, x1 + 0.5
    margin = 0.03 * (x1 - x0)
    return x0 - margin, x1 + margin


def _label(x: object) -> str:
    s = str(x)
    return s if len(s) <= LABEL_CHARS else s[: LABEL_CHARS - 1] + "…"


def _legend_places(c: Chart, left: int, pw: int, top: float) -> tuple[list[tuple[float, float]], float]:
    """Legend entries in rows under the axis titles, wrapped to the plot's width, so no entry covers a line or
    runs past the edge; returns each entry's place and the height the rows take."""
    if len(c.series) <= 1:
        return [], 0.0
    places, x, y = [], float(left), top
    for s in c.series:
        w = 14 + CHAR_W * len(_legend_name(s.name, pw)) + 18
        if x > left and x + w > left + pw:
            x, y = float(left), y + LEGEND_ROW
        places.append((x, y))
        x += w
    return places, y + LEGEND_ROW - top


def _legend_name(name: str, pw: int) -> str:
    most = max(4, int((pw - 32) / CHAR_W))
    return name if len(name) <= most else name[: most - 1] + "…"


def _frame(c: Chart, width: int) -> _Frame:
    n = len(c.x)
    labels = [_label(x) for x in c.x]
    rotate = not c.numeric_x and (n > 6 or any(len(x) > 12 for x in labels))
    # Rotated labels hang below the axis (the figure grows to hold the longest, the plot keeps its height) and
    # the first one leans left past the axis: the left margin widens until it fits.
    drop = round(max((len(x) for x in labels), default=0) * 4.2) if rotate else 0
    left = LEFT
    if rotate and labels:
        lean = len(labels[0]) * CHAR_W * 0.87 + 6 - (width - LEFT - RIGHT) / n / 2
        left = max(LEFT, min(int(lean) + 1, width // 3))
    pw = width - left - RIGHT
    legend, legend_h = _legend_places(c, left, pw, HEIGHT + drop + (4 if c.x_title else -16))
    foot = HEIGHT + drop
    height = round(foot + legend_h + (4 if legend_h and c.x_title else 0))
    y0, y1 = _y_bounds(c)
    if not c.numeric_x:
        return _Frame(width, height, rotate, y0, y1, pw / max(n, 1), False, [], pw=pw, left=left, foot=foot,
                      legend=legend)
    xv = [float(x) for x in c.x]
    x0, x1 = _x_bounds(c, xv)
    band = (c.bar_width or (x1 - x0) / max(n, 1)) / (x1 - x0) * pw
    return _Frame(width, height, rotate, y0, y1, band, True, xv, x0, x1, pw=pw, left=left, foot=foot, legend=legend)


def _chart(c: Chart, width: int) -> str:
    f = _frame(c, width)
    out = [f'<svg viewBox="0 0 {width} {f.height}" width="100%" role="img" aria-label="{escape(c.title)}" '
           'font-family="system-ui,sans-serif" font-size="12">',
           f'<text x="{f.left}" y="20" font-size="15" fill="#222">{escape(c.title)}</text>']
    out += _axes(c, f)
    bars = [s for s in c.series if s.kind == "bar"]
    slots = 1 if c.overlay else max(len(bars), 1)
    slot_w = f.band * (0.96 if c.numeric_x and c.bar_width else 0.8) / slots
    if not c.numeric_x:
        slot_w = min(slot_w, 90.0)  # a few categories must not make slabs
    for si, s in enumerate(c.series):
        offset = 0.0
        if s.kind == "bar" and not c.overlay:
            offset = (bars.index(s) - (slots - 1) / 2) * slot_w
        out += _series(c, f, s, s.color or PALETTE[si % len(PALETTE)], offset, slot_w)
    for vx, label in c.vlines:
        x = f.xpos(vx)
        out.append(f'<line x1="{_num(x)}" x2="{_num(x)}" y1="{TOP}" y2="{TOP + f.ph}" stroke="#333" '
                   f'stroke-dasharray="5 4"><title>{escape(label)}</title></line>')
    out += _legend(c, f)
    out.append("</svg>")
    return "".join(out)


def _axes(c: Chart, f: _Frame) -> list[str]:
    """Horizontal grid with y ticks, the x axis, its tick labels and both axis titles."""
    pw, ph, left = f.pw, f.ph, f.left
    out = []
    for t in _ticks(f.y0, f.y1):
        y = f.ys(t)
        out.append(f'<line x1="{left}" x2="{left + pw}" y1="{_num(y)}" y2="{_num(y)}" stroke="#e6e6e6"/>'
                   f'<text x="{left - 6}" y="{_num(y + 4)}" text-anchor="end" fill="#555">{t:g}</text>')
    out.append(f'<line x1="{left}" x2="{left + pw}" y1="{_num(TOP + ph)}" y2="{_num(TOP + ph)}" stroke="#999"/>')
    out += _x_labels(c, f)
    if c.x_title:
        out.append(f'<text x="{left + pw / 2}" y="{f.foot - 6}" text-anchor="middle" '
                   f'fill="#333">{escape(c.x_title)}</text>')
    if c.y_title:
        out.append(f'<text transform="translate(14,{TOP + ph / 2}) rotate(-90)" text-anchor="middle" '
                   f'fill="#333">{escape(c.y_title)}</text>')
    return out


def _x_labels(c: Chart, f: _Frame) -> list[str]:
    """Every category, rotated when many or long; numeric axes get round ticks."""
    below = TOP + f.ph
    if c.numeric_x:
        return [f'<text x="{_num(f.xpos(t))}" y="{below + 16}" text-anchor="middle" fill="#555">{t:g}</text>'
                for t in _ticks(f.x0, f.x1, 8)]
    out = []
    for i, x in enumerate(c.x):
        label = escape(_label(x)) + (f"<title>{escape(str(x))}</title>" if len(str(x)) > LABEL_CHARS else "")
        if f.rotate:
            out.append(f'<text class="xlabel" transform="translate({_num(f.xs(i))},{below + 12}) rotate(-30)" '
                       f'text-anchor="end" fill="#555">{label}</text>')
        else:
            out.append(f'<text class="xlabel" x="{_num(f.xs(i))}" y="{below + 16}" text-anchor="middle" '
                       f'fill="#555">{label}</text>')
    return out


def _series(c: Chart, f: _Frame, s: Series, color: str, offset: float, slot_w: float) -> list[str]:
    """One series' bars or points with their intervals, then (for a line) the line through them."""
    out: list[str] = []
    points: list[tuple[float, float] | None] = []
    for i, v in enumerate(s.y):
        if v is None or (isinstance(v, float) and math.isnan(v)):
            points.append(None)
            continue
        cx = f.xs(i) + offset
        out += _point(c, f, s, i, v, cx, color, slot_w)
        points.append((cx, f.ys(v)))
    if s.kind == "line":
        out += _line(points, color, s.dash)
    return out


def _tip(c: Chart, s: Series, i: int, v: float, lo: float | None, hi: float | None) -> str:
    tip = f"{s.name} · {c.x[i]}: {_fmt(v)}" + (f" [{_fmt(lo)}, {_fmt(hi)}]" if lo is not None else "")
    if s.hover is not None and s.hover[i]:
        tip += f" · {s.hover[i]}"
    return tip


def _point(c: Chart, f: _Frame, s: Series, i: int, v: float, cx: float, color: str, slot_w: float) -> list[str]:
    """Value `i` of a series: its bar (with the text at its foot) or its dot, then its interval if it has one."""
    lo = s.low[i] if s.low is not None else None
    hi = s.high[i] if s.high is not None else None
    tip = _tip(c, s, i, v, lo, hi)
    out = []
    if s.kind == "bar":
        top, base = f.ys(v), f.ys(max(f.y0, 0.0))
        y_, h = min(top, base), abs(base - top)
        out.append(f'<rect class="bar" x="{_num(cx - slot_w / 2)}" y="{_num(y_)}" width="{_num(slot_w)}" '
                   f'height="{_num(max(h, 0.5))}" fill="{color}" fill-opacity="{s.opacity}">'
                   f'<title>{escape(tip)}</title></rect>')
        if s.text is not None and s.text[i]:
            out.append(f'<text x="{_num(cx)}" y="{_num(base - 5)}" text-anchor="middle" fill="#fff" '
                       f'font-size="11">{escape(s.text[i])}</text>')
    else:
        out.append(f'<circle cx="{_num(cx)}" cy="{_num(f.ys(v))}" r="3.5" fill="{color}">'
                   f'<title>{escape(tip)}</title></circle>')
    if lo is not None and hi is not None:
        a, b = f.ys(lo), f.ys(hi)
        out.append(f'<path class="yerror" d="M{_num(cx)} {_num(a)}V{_num(b)}M{_num(cx - 4)} {_num(a)}'
                   f'H{_num(cx + 4)}M{_num(cx - 4)} {_num(b)}H{_num(cx + 4)}" stroke="{s.error_color or color}" '
                   f'stroke-width="1.5" fill="none"><title>{escape(tip)}</title></path>')
    return out


def _line(points: list[tuple[float, float] | None], color: str, dash: bool) -> list[str]:
    """A missing value breaks the line rather than joining its neighbours across it."""
    runs: list[list[tuple[float, float]]] = [[]]
    for p in points:
        if p is None:
            runs.append([])
        else:
            runs[-1].append(p)
    style = ' stroke-dasharray="6 4"' if dash else ""
    out = []
    for run in runs:
        if len(run) > 1:
            d = "M" + "L".join(f"{_num(px)} {_num(py)}" for px, py in run)
            out.append(f'<path class="line" d="{d}" stroke="{color}" stroke-width="2" fill="none"{style}/>')
    return out


def _legend(c: Chart, f: _Frame) -> list[str]:
    out = []
    for si, (s, (x, y)) in enumerate(zip(c.series, f.legend, strict=False)):
        color = s.color or PALETTE[si % len(PALETTE)]
        out.append(f'<g class="legend"><rect x="{_num(x)}" y="{_num(y)}" width="10" height="10" fill="{color}"/>'
                   f'<text x="{_num(x + 14)}" y="{_num(y + 9)}" fill="#333">{escape(_legend_name(s.name, f.pw))}'
                   f'</text></g>')
    return out


def _color(good: float) -> str:
    """Red (0) through yellow (0.5) to green (1)."""
    stops = ((0.0, (215, 48, 39)), (0.5, (254, 224, 139)), (1.0, (26, 152, 80)))
    g = min(max(good, 0.0), 1.0)
    (a, ca), (b, cb) = (stops[0], stops[1]) if g <= 0.5 else (stops[1], stops[2])
    t = (g - a) / (b - a)
    r, gr, bl = (round(ca[k] + (cb[k] - ca[k]) * t) for k in range(3))
    return f"rgb({r},{gr},{bl})"


def _heatmap(h: Heatmap) -> str:
    label_w, cell_w, cell_h, top = 200, 110, 28, 56
    width = label_w + cell_w * len(h.columns) + 10
    height = top + cell_h * len(h.rows) + 10
    out = [f'<svg viewBox="0 0 {width} {height}" width="{min(width, WIDTH)}" role="img" '
           f'aria-label="{escape(h.title)}" font-family="system-ui,sans-serif" font-size="12">',
           f'<text x="4" y="20" font-size="15" fill="#222">{escape(h.title)}</text>']
    for j, col in enumerate(h.columns):
        out.append(f'<text x="{label_w + cell_w * (j + 0.5)}" y="{top - 8}" text-anchor="middle" fill="#555">'
                   f'{escape(col)}</text>')
    for i, row in enumerate(h.rows):
        y = top + cell_h * i
        out.append(f'<text x="{label_w - 8}" y="{y + cell_h / 2 + 4}" text-anchor="end" '
                   f'fill="#333">{escape(row)}</text>')
        for j in range(len(h.columns)):
            g = h.goodness[i][j]
            fill = "#eee" if g is None else _color(g)
            out.append(f'<rect class="cell" x="{label_w + cell_w * j}" y="{y}" width="{cell_w - 2}" '
                       f'height="{cell_h - 2}" fill="{fill}"><title>{escape(row)} · {escape(h.columns[j])}: '
                       f'{escape(h.text[i][j])}</title></rect>'
                       f'<text x="{label_w + cell_w * (j + 0.5)}" y="{y + cell_h / 2 + 3}" text-anchor="middle" '
                       f'fill="#222">{escape(h.text[i][j])}</text>')
    out.append("</svg>")
    return "".join(out)
