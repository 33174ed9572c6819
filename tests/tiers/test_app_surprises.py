"""tier=app without surprises: app.body replaces the default body whole, answers that look like a misread request
warn by name, and httpx's per-request lines show only with verbose=true."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir

from nomad_eval.base.paths import REPO
from nomad_eval.cli.entry import run_tier
from tests.conftest import FIXTURES, MINI, run_cli
from tests.servers._http import JsonHandler, running
from tests.servers.rag_app import Script, script_for

ANSWER = ["tier=app", "app=http", "app.answer_path=result.answer", "repeats=1"]


@contextmanager
def reads_question(script: Script) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """An app whose request key is `question`, recording every body it receives."""
    bodies: list[dict[str, Any]] = []

    class Handler(JsonHandler):
        def do_POST(self) -> None:
            body = self._body()
            bodies.append(body)
            self._send(200, script.reply({"query": body.get("question"), "history": []}))

    with running(Handler) as url:
        yield f"{url}/ask", bodies


def _run(tmp: Path, name: str, *overrides: str) -> dict[str, Any]:
    with initialize_config_dir(config_dir=str(REPO / "nomad_eval" / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=[f"paths.data_dir={tmp / 'data'}", f"paths.run_dir={tmp / name}",
                                           "quiet=true", *MINI, *ANSWER, *overrides])
    try:
        run_tier(cfg)
    except SystemExit:
        pass
    return json.loads((tmp / name / "report.json").read_text())  # type: ignore[no-any-return]


def _script() -> Script:
    return script_for(FIXTURES / "goldens" / "mini.jsonl", FIXTURES / "corpus")


def test_a_body_the_app_does_not_read_warns_and_app_body_replaces_it_whole(tmp_path: Path) -> None:
    with reads_question(_script()) as (url, bodies):
        default = _run(tmp_path, "default", f"app.url={url}", "app.contexts_path=contexts")
        assert {tuple(sorted(b)) for b in bodies} == {("history", "query")}
        bodies.clear()
        mine = _run(tmp_path, "mine", f"app.url={url}", "app.contexts_path=contexts",
                    'app.body={question: "{query}"}')
    assert [b for b in bodies if set(b) != {"question"}] == [] and len(bodies) == 8  # exactly that key
    assert {b["question"] for b in bodies} == {json.loads(x)["query"] for x in
                                              (FIXTURES / "goldens" / "mini.jsonl").read_text().splitlines() if x}
    warned = [w for w in default["warnings"] if w.startswith("identical answers:")]
    assert len(warned) == 1 and "all 8 requests" in warned[0] and '"query": "{query}"' in warned[0]
    assert default["metrics"]["e2e.correctness"] == 0.0
    assert not [w for w in mine["warnings"] if w.startswith(("identical answers:", "all refusals:"))]
    assert mine["metrics"]["e2e.correctness"] == pytest.approx(6 / 7)  # the follow-up needs the history left out


def test_passages_returned_but_not_read_warn_by_name(tmp_path: Path) -> None:
    with reads_question(_script()) as (url, _):
        report = _run(tmp_path, "r", f"app.url={url}", 'app.body={question: "{query}"}')  # contexts_path: null
    (warned,) = [w for w in report["warnings"] if w.startswith("contexts not read:")]
    assert "'contexts'" in warned and "app.contexts_path=contexts" in warned
    assert report["metrics"]["e2e.groundedness"] is None


def test_httpx_request_lines_only_with_verbose(tmp_path: Path) -> None:
    with reads_question(_script()) as (url, _):
        args = (*MINI, *ANSWER, f"app.url={url}", 'app.body={question: "{query}"}', f"paths.data_dir={tmp_path}")
        plain = run_cli(*args, f"paths.run_dir={tmp_path / 'plain'}", timeout=120)
        verbose = run_cli(*args, f"paths.run_dir={tmp_path / 'verbose'}", "verbose=true", timeout=120)
    assert plain.returncode == verbose.returncode == 0, plain.stderr[-2000:]
    assert "HTTP Request:" not in plain.stdout + plain.stderr
    assert "HTTP Request: POST" in verbose.stdout + verbose.stderr
