"""repeats=auto on a scripted loopback model: each question is asked again only while its outcome could still
change the verdict, and the calls the server counts are the calls the report gives."""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from nomad_eval.cli.entry import run_tier
from tests.conftest import MINI
from tests.servers import openai_compat

# A right answer to each mini golden, found by a word of its question.
RIGHT = {"vinegar": "Let it stand for 40 minutes.", "AA cells": "It takes four AA cells.",
         "compost heap reach": "It reaches 55 degrees.", "climbing rope": "Retire it after 10 years.",
         "sourdough": "That is hooch: hunger.", "mercury": "I cannot answer that from the documents.",
         "run on high": "About 3 hours on high.", "kettle be": "Fill 0.8 litre; turn it every 4 days."}
WRONG = "No idea, maybe twelve."


class Model:
    """Answers each golden right, except `flaky` (right on every other call) and `wrong` (always wrong); counts
    the answer calls per golden, as the backend sees them."""

    def __init__(self, flaky: str = "sourdough", wrong: str | None = None) -> None:
        self.flaky, self.wrong = flaky, wrong
        self.calls: Counter[str] = Counter()
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str:
        last = body["messages"][-1]["content"]
        if body.get("max_tokens") == 1:
            return "ok"
        word = next(w for w in RIGHT if w in last)
        with self.lock:
            self.calls[word] += 1
            n = self.calls[word]
        if word == self.wrong or (word == self.flaky and n % 2 == 0):
            return WRONG
        return RIGHT[word]


def _run(make_cfg: Callable[..., DictConfig], model: Model, out: Path, *extra: str) -> dict[str, Any]:
    with openai_compat.serve("scripted", model) as url:
        cfg = make_cfg(*MINI, "tier=generation", "model=openai", "model.name=scripted", f"model.base_url={url}",
                       "mode=noretrieval", "repeats=auto", "cache=false", f"paths.run_dir={out}", *extra)
        try:
            run_tier(cfg)
        except SystemExit:  # a failing verdict exits, as on the command line; report.json holds it
            pass
    report: dict[str, Any] = json.loads((out / "report.json").read_text())
    return report


def _rows(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["key"]: r for r in report["details"]["adaptive"]}


def test_without_a_baseline_unanimous_questions_stop_at_repeats_agree(
        make_cfg: Callable[..., DictConfig], tmp_path: Path) -> None:
    model = Model()
    report = _run(make_cfg, model, tmp_path / "first")
    rows = _rows(report)
    assert rows["noretrieval:mini-05"]["calls"] == 8 and rows["noretrieval:mini-05"]["stopped"] == "repeats.max"
    assert rows["noretrieval:mini-05"]["pass_rate"] == 0.5
    steady = [r for k, r in rows.items() if k != "noretrieval:mini-05"]
    assert {r["calls"] for r in steady} == {8} and {r["stopped"] for r in steady} == {"answers agree"}
    # The server's count is the report's: every call the loop made reached the backend once. No budget cuts a
    # run without a baseline: it is the one a team promotes.
    assert sum(model.calls.values()) == sum(r["calls"] for r in rows.values()) == report["counts"]["cases"] == 64
    assert report["system"]["repeats"] == "auto" and "repeats=auto" in report["details"]["repeats_reason"]
    low, high = rows["noretrieval:mini-05"]["low"], rows["noretrieval:mini-05"]["high"]
    assert 0.0 < low < 0.5 < high < 1.0  # an interval wider than Wilson's at n=6: it holds at every look
    assert "## Adaptive repeats" in (tmp_path / "first" / "report.md").read_text()


def test_against_a_baseline_agreeing_questions_stop_after_two_answers_and_a_new_failure_is_confirmed(
        make_cfg: Callable[..., DictConfig], tmp_path: Path) -> None:
    _run(make_cfg, Model(), tmp_path / "base")
    gate = ("compare.after_run=true", f"compare.baseline={tmp_path / 'base'}")
    same = Model()
    unchanged = _run(make_cfg, same, tmp_path / "same", *gate)
    rows = _rows(unchanged)
    assert {r["calls"] for k, r in rows.items() if k != "noretrieval:mini-05"} == {2}
    assert {r["stopped"] for k, r in rows.items() if k != "noretrieval:mini-05"} == {"agrees with the baseline"}
    # Flaky in the baseline: measured until the budget (2.5 calls a question, 20 in all) is spent.
    assert rows["noretrieval:mini-05"]["calls"] == 6 and rows["noretrieval:mini-05"]["stopped"] == \
        "model-call budget spent"
    assert sum(same.calls.values()) == 20 < 64
    assert unchanged["gate"]["verdict"] == "pass"

    # Without the flaky question, the baseline's repeats show no noise: one question made wrong is a regression.
    _run(make_cfg, Model(flaky=""), tmp_path / "steady")
    broken = Model(flaky="", wrong="climbing rope")
    changed = _run(make_cfg, broken, tmp_path / "changed", "compare.after_run=true",
                   f"compare.baseline={tmp_path / 'steady'}")
    rope = _rows(changed)["noretrieval:mini-04"]
    # A fresh failure of a question the baseline always passed is asked again before it counts.
    assert broken.calls["climbing rope"] == rope["calls"] >= 2 and rope["passes"] == 0
    assert rope["stopped"] in ("worse than the baseline", "repeats.max", "model-call budget spent")
    assert changed["gate"]["verdict"] == "regression"


def test_the_budget_bounds_the_calls(make_cfg: Callable[..., DictConfig], tmp_path: Path) -> None:
    _run(make_cfg, Model(), tmp_path / "base")
    model = Model()
    report = _run(make_cfg, model, tmp_path / "budget", "repeats_budget=2", "compare.after_run=true",
                  f"compare.baseline={tmp_path / 'base'}")
    assert sum(model.calls.values()) == 16  # two calls per question on average, spent round by round
    assert "model-call budget spent" in {r["stopped"] for r in report["details"]["adaptive"]}


def test_plan_gives_the_expected_calls_per_verdict(make_cfg: Callable[..., DictConfig], tmp_path: Path) -> None:
    _run(make_cfg, Model(), tmp_path / "base")
    cfg = make_cfg(*MINI, "tier=plan", f"plan.baseline={tmp_path / 'base'}", f"paths.run_dir={tmp_path / 'plan'}")
    assert run_tier(cfg) == 0
    calls = json.loads((tmp_path / "plan" / "plan.json").read_text())["calls"]
    # Seven steady questions cost two calls each; the flaky one (4 of 8 in the baseline) is measured until the
    # budget, 2.5 calls a question (20), is spent.
    assert calls["questions"] == 8 and 19 <= calls["auto_calls"] <= 20
    assert (calls["fixed_repeats"], calls["fixed_calls"]) == (8, 64)
