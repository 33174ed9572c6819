"""report.html shows goldens, documents, warnings and sweep values as text: planted markup arrives escaped."""

from __future__ import annotations

import html
import json
import shutil
from collections.abc import Callable
from pathlib import Path

from omegaconf import DictConfig

from nomad_eval.cli.entry import run_tier
from nomad_eval.report.html import page
from nomad_eval.report.html_sweep import write_sweep_html
from tests.conftest import FIXTURES

SCRIPT = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(1)>"  # no slash, so it can be a file name: a document id


def _assert_only_escaped(text: str, *planted: str) -> None:
    for p in planted:
        assert p not in text, p
        assert html.escape(p) in text, p  # shown, as text


def test_run_report_escapes_goldens_documents_and_warnings(tmp_path: Path,
                                                           make_cfg: Callable[..., DictConfig]) -> None:
    corpus, goldens = tmp_path / "corpus", tmp_path / "goldens"
    shutil.copytree(FIXTURES / "corpus", corpus)
    (corpus / "rope-storage.md").rename(corpus / f"{IMG}.md")
    rows = [json.loads(x) for x in (FIXTURES / "goldens" / "mini.jsonl").read_text().splitlines() if x.strip()]
    for g in rows:
        g["relevantDocIds"] = [IMG if d == "rope-storage" else d for d in g["relevantDocIds"]]
    rows[0].update({"id": f"id-{SCRIPT}", "query": f"{SCRIPT} {rows[0]['query']}", "tags": [SCRIPT],
                    SCRIPT: 1})  # an unknown key: a warning naming it, shown on the page
    goldens.mkdir()
    (goldens / "evil.jsonl").write_text("".join(json.dumps(g) + "\n" for g in rows))
    # The keyword pipeline: no query embeddings, so the planted query costs no model load.
    cfg = make_cfg(f"data.corpus_dir={corpus}", f"data.goldens_dir={goldens}", "suite=evil", "pipeline=custom_example")
    assert run_tier(cfg) == 0
    out = Path(cfg.paths.run_dir)
    report = json.loads((out / "report.json").read_text())
    assert any(SCRIPT in w for w in report["warnings"])  # the warning really quotes the planted key
    cases = (out / "cases.jsonl").read_text()
    assert IMG in cases and json.dumps(SCRIPT)[1:-1] in cases  # the document was retrieved, the golden scored
    text = (out / "report.html").read_text()
    _assert_only_escaped(text, SCRIPT, IMG)
    questions, warnings = text.split("<h2>Warnings</h2>")
    assert html.escape(f"id-{SCRIPT}") in questions and html.escape(SCRIPT) in warnings


def test_page_meta_and_sweep_values_are_escaped(tmp_path: Path) -> None:
    assert html.escape(SCRIPT) in page("t", f"suite {SCRIPT}", []) and SCRIPT not in page(SCRIPT, "m", [])
    rows = [{"job": f"1_{SCRIPT}", "status": "ok", IMG: 0.2, "recall@5": 0.5},
            {"job": "2_b", "status": "failed", IMG: 0.4, "recall@5": None, "error": f"boom {SCRIPT}"}]
    write_sweep_html(tmp_path, rows, [{"model": SCRIPT, "e2e": 0.5}])
    text = (tmp_path / "report.html").read_text()
    _assert_only_escaped(text, SCRIPT, IMG)
    assert 'id="chart-_img_src_x_onerror_alert_1__"' in text  # a swept key names a chart: made a safe id
