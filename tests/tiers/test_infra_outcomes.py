"""Infrastructure is not behaviour: calls the server fails (here: answers slower than model.timeout) are listed
apart, never scored; a few leave the verdict the clean server gets, too many make the run "not measured"."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from nomad_eval.cli.entry import run_tier
from tests.conftest import MINI
from tests.servers import openai_compat

ANSWER = "Let it stand for 40 minutes; the lantern takes four AA cells."


class Server:
    """Answers every question alike; the answer calls numbered in `slow` take longer than model.timeout."""

    def __init__(self) -> None:
        self.slow: set[int] = set()
        self.calls = 0
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str:
        last = body["messages"][-1]["content"]
        if body.get("max_tokens") == 1 or last.startswith("Rewrite"):
            return "ok"
        with self.lock:
            n, self.calls = self.calls, self.calls + 1
        if n in self.slow:
            time.sleep(1.5)
        return ANSWER


def _run(make_cfg: Callable[..., DictConfig], url: str, out: Path, *extra: str) -> dict[str, Any]:
    cfg = make_cfg(*MINI, "tier=generation", "model=openai", "model.name=scripted", f"model.base_url={url}",
                   "model.timeout=0.5", "mode=noretrieval", "repeats=2", "cache=false", f"paths.run_dir={out}", *extra)
    try:
        run_tier(cfg)
    except SystemExit:  # a failing verdict exits, as on the command line; report.json holds it
        pass
    report: dict[str, Any] = json.loads((out / "report.json").read_text())
    return report


def test_timeouts_are_infrastructure_outcomes_and_gate_only_past_max_infra(
        make_cfg: Callable[..., DictConfig], tmp_path: Path) -> None:
    server = Server()
    with openai_compat.serve("scripted", server) as url:
        clean = _run(make_cfg, url, tmp_path / "clean")
        assert clean["details"]["infra"] == [] and clean["counts"]["calls_asked"] == 16
        gate = ("compare.after_run=true", f"compare.baseline={tmp_path / 'clean'}")
        server.calls, server.slow = 0, {3, 10}  # one call in eight times out
        some = _run(make_cfg, url, tmp_path / "some", *gate)
        server.calls, server.slow = 0, {0, 1, 4, 5, 8, 9, 12}  # seven in sixteen: past gate.max_infra=0.2
        many = _run(make_cfg, url, tmp_path / "many", *gate)
    assert some["counts"]["infra"] == 2 and len(some["details"]["infra"]) == 2
    assert all("did not answer within 0.5 s" in x["reason"] for x in some["details"]["infra"])
    assert some["gate"]["verdict"] == "pass" and some["gate"]["exit_code"] == 0  # the clean server's verdict
    assert any("12.5% of the run's model calls failed in the infrastructure" in w for w in some["gate"]["warnings"])
    # Four questions lost both calls (0 and 1 are one question's two repeats): listed apart, never "missing".
    assert many["gate"]["verdict"] == "not measured" and many["gate"]["exit_code"] == 1
    assert "more than gate.max_infra=0.2" in many["gate"]["cause"]
    assert "not measured" not in many["gate"]["questions"]
    assert many["gate"]["questions"]["infrastructure failed, not gated"]
