"""report.html opened in a real headless Chromium: the charts draw and the question table filters."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from nomad_eval.base.paths import REPO
from tests.conftest import MINI, run_cli

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = REPO / "test-artifacts"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--virtual-time-budget=8000"]

pytestmark = [pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)"),
              pytest.mark.slow]  # a headless browser per test; the pages' markup is checked in the quick lane


def chromium(tmp_path: Path, url: str, *args: str) -> str:
    r = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *args, url],  # type: ignore[list-item]
                       capture_output=True, text=True, timeout=120)
    return r.stdout


def _chart(dom: str, chart_id: str) -> str:
    """The DOM of one chart: from its div to the next chart's (or the end)."""
    start = dom.index(f'id="{chart_id}"')
    nxt = re.search(r'id="chart-', dom[start + 1:])
    return dom[start:start + 1 + nxt.start()] if nxt else dom[start:]


def test_retrieval_report_renders_and_filters(tmp_path: Path, data_dir: Path) -> None:
    run = tmp_path / "run"
    assert run_cli("tier=retrieval", *MINI, f"paths.data_dir={data_dir}", f"paths.run_dir={run}",
                   "quiet=true").returncode == 0
    html = (run / "report.html").read_text()
    assert "<script src=" not in html and "<link" not in html  # self-contained: nothing fetched to view it
    dom = chromium(tmp_path, f"file://{run / 'report.html'}#q=kettle", "--dump-dom")
    assert "<script src=" not in html and len(html) < 1_500_000  # charts inline as SVG: no library, small page
    for chart in ("chart-headline", "chart-separation", "chart-at-k", "chart-tags"):
        assert re.search(rf'id="{chart}" class="chart"><(div|svg)', dom), chart
        assert re.search(r'<rect class="bar"|<path class="line"', _chart(dom, chart)), chart  # something drawn
    # Uncertainty is drawn, not only tabled: one error bar per headline metric that has an interval.
    report = json.loads((run / "report.json").read_text())
    names = re.findall(r"<tr><td>([^<]+)</td><td>[^<]*</td><td>\[", html.split("id='headline'")[1].split("</table>")[0])
    with_interval = [n for n in names if report["intervals"][n]["low"] is not None]
    assert with_interval, "the run reported no intervals"
    assert len(re.findall(r'class="yerror"', _chart(dom, "chart-headline"))) == len(with_interval)
    assert re.search(r'class="yerror"', _chart(dom, "chart-at-k"))
    rows = re.findall(r"<tr class='(?:pass|fail|)'>(.*?)</tr>", html.split("<tbody>")[1])
    expected = sum("kettle" in re.sub("<[^>]+>", " ", r).lower() for r in rows)
    assert len(rows) == 8 and 0 < expected < 8
    shown = re.search(r'<span id="shown">(\d+)</span>', dom)
    assert shown and int(shown.group(1)) == expected
    assert dom.count('style="display: none;"') == 8 - expected
    ARTIFACTS.mkdir(exist_ok=True)
    chromium(tmp_path, f"file://{run / 'report.html'}", f"--screenshot={ARTIFACTS / 'retrieval-report.png'}",
             "--window-size=1200,2000")
    assert (ARTIFACTS / "retrieval-report.png").stat().st_size > 20_000


def test_sweep_report_draws_its_curves(tmp_path: Path, data_dir: Path) -> None:
    sweep = tmp_path / "sweep"
    assert run_cli("tier=retrieval", "threshold=0.2,0.4,0.6", *MINI, f"paths.data_dir={data_dir}", "quiet=true",
                   f"hydra.sweep.dir={sweep}", "-m").returncode == 0
    dom = chromium(tmp_path, f"file://{sweep / 'report.html'}", "--dump-dom")
    assert re.search(r'id="chart-threshold" class="chart"><svg', dom)
    # Each job's interval, from summary rows: three jobs, one line per metric with an interval at every job.
    assert len(re.findall(r'class="yerror"', _chart(dom, "chart-threshold"))) % 3 == 0
    assert re.search(r'class="yerror"', _chart(dom, "chart-threshold"))
    ARTIFACTS.mkdir(exist_ok=True)
    chromium(tmp_path, f"file://{sweep / 'report.html'}", f"--screenshot={ARTIFACTS / 'sweep-report.png'}",
             "--window-size=1200,1200")
    assert (ARTIFACTS / "sweep-report.png").stat().st_size > 10_000
