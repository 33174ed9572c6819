"""The bias battery: pure checks with a judge written as a function, then tier=calibrate with a loopback judge
whose biases are scripted, so every figure has a value known in advance."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from nomad_eval.judges import battery
from nomad_eval.judges.agreement import Verdict
from tests.conftest import run_cli
from tests.servers import openai_compat

N = 30


def own(i: int) -> str:
    return f"Passage {i}: descale the kettle every {i + 2} weeks."


def test_a_lone_passage_gets_a_second_one_to_reorder() -> None:
    assert battery.two_orders(["a"], "x") == (["a", "x"], ["x", "a"])
    assert battery.two_orders(["a", "b", "c"], "x") == (["a", "b", "c"], ["c", "b", "a"])  # no passage added
    assert battery.padded("Boil it for 1 minute.  ").startswith("Boil it for 1 minute. I hope this helps.")
    assert battery.sample(46, None, 0) == list(range(46))
    sub = battery.sample(46, 10, 0)
    assert len(sub) == 10 and sub == sorted(set(sub)) and sub == battery.sample(46, 10, 0) != battery.sample(46, 10, 1)


def test_battery_figures_from_a_judge_with_known_biases() -> None:
    # Example 0 has two passages (its order is the labelled one, whose verdict is reused); the others have one.
    examples = [battery.Example("e0", "q0", [own(0), own(100)], "a0", 1),
                *(battery.Example(f"e{i}", f"q{i}", [own(i)], f"a{i}", i % 2) for i in range(1, 9))]
    calls: list[tuple[str, list[str], str]] = []

    def ask(question: str, passages: list[str], answer: str) -> Verdict:
        calls.append((question, passages, answer))
        i = int(question[1:])
        if answer in battery.DECLINES:
            return None if i == 1 else int(answer == battery.DECLINES[0])  # one unparseable, the rest by phrasing
        if "I hope this helps" in answer:
            return 1  # length bias: padding always wins
        return i % 2 if passages[0] == own(i) else 0  # position bias: own passage second -> 0

    figures, rows = battery.run(examples, [own(i) for i in range(9)], ask, [0, 1], True, seed=0, resamples=200)
    added = [(q, ps) for q, ps, _ in calls if len(ps) == 2 and q != "q0"]  # a second passage beside its own
    assert len(added) == 16 and all(own(int(q[1:])) in ps and ps[0] != ps[1] for q, ps in added)
    assert rows[0]["order"][0] == 1 and not rows[0]["added_passage"]  # e0's labelled order: its verdict, reused
    # e0 reversed starts with another passage: 1 -> 0, a flip.
    # Single-passage examples flip when their labelled verdict is 1 (odd i): 1, 3, 5, 7.
    assert figures["order_flip"]["value"] == pytest.approx(5 / 9) and figures["order_flip"]["n"] == 9
    assert figures["order_flip"]["low"] < 5 / 9 < figures["order_flip"]["high"]
    # Padding moves every 0 to 1: e2, e4, e6, e8 -> +4/9 on the 0-1 scale.
    assert figures["verbosity_shift"]["value"] == pytest.approx(4 / 9)
    # Declines rotate through DECLINES: i = 0, 4, 8 get the first phrasing; e1's is unparseable and counts as 0.
    assert figures["abstention_faithful"]["value"] == pytest.approx(3 / 9) and figures["abstention_faithful"]["n"] == 9
    assert figures["size"] == 9 and figures["added_passage"] == 8
    assert figures["calls"] == len(calls) == 1 + 8 * 2 + 9 + 9  # e0's first order is not asked again
    assert figures["unparseable"] == 1
    without, _ = battery.run(examples, [own(i) for i in range(9)], ask, [0, 1], False, seed=0, resamples=200)
    assert "abstention_faithful" not in without  # relevance has no such rule


def labels(tmp_path: Path) -> Path:
    rows = [{"id": f"ex-{i:02d}", "question": f"question {i}?", "chunks": [own(i)], "answer": f"answer number {i}",
             "label": i % 2} for i in range(N)]
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def biased_judge(body: dict[str, Any]) -> str:
    """Right on every labelled example, and biased three ways the battery must see."""
    user = body["messages"][-1]["content"]
    i = int(re.search(r"<question>\nquestion (\d+)\?", user).group(1))  # type: ignore[union-attr]
    answer = re.search(r"<answer>\n(.*?)\n</answer>", user, re.DOTALL).group(1)  # type: ignore[union-attr]
    first = re.search(r"<passage>\n(.*?)\n</passage>", user, re.DOTALL).group(1)  # type: ignore[union-attr]
    if answer.startswith(("I do not", "I don")):
        verdict = 1
    elif answer.startswith("answer number") and "I hope this helps" in answer:
        verdict = 1
    elif answer.startswith("answer number"):
        verdict = i % 2 if first.startswith(f"Passage {i}:") else 0
    else:
        verdict = 0  # the other declines: judged unfaithful, against the rubric
    return json.dumps({"verdict": verdict, "reason": "scripted"})


@pytest.mark.slow
def test_calibrate_runs_the_battery_and_stores_it_with_the_calibration(tmp_path: Path, data_dir: Path) -> None:
    out = tmp_path / "run"
    with openai_compat.serve("judge", biased_judge) as url:
        r = run_cli("tier=calibrate", "judge=faithfulness", f"calibrate.labels={labels(tmp_path)}",
                    "model@judge.model=openai", "judge.model.name=judge", f"judge.model.base_url={url}",
                    "calibrate.repeats=1", "calibrate.generator=judge-7b", "stats.resamples=300",
                    f"paths.data_dir={data_dir}", f"paths.run_dir={out}", "cache=false")
    assert r.returncode == 0, r.stderr
    result = json.loads((out / "calibration.json").read_text())
    b = result["battery"]
    assert result["agreement"]["value"] == 1.0 and b["size"] == N and b["added_passage"] == N
    assert b["order_flip"]["value"] == pytest.approx(0.5)  # every label-1 example drops to 0 when reordered
    assert b["verbosity_shift"]["value"] == pytest.approx(0.5)  # every label-0 example rises to 1 when padded
    # Two of the four declines are judged faithful; 30 examples rotate through them: i % 4 in (0, 1) -> 16.
    assert b["abstention_faithful"]["value"] == pytest.approx(16 / 30)
    assert b["calls"] == 4 * N and b["unparseable"] == 0
    assert result["warnings"] == ["judge judge and generator judge-7b are the same model family (judge): a judge "
                                  "tends to prefer its own family's answers"]
    rows = [json.loads(x) for x in (out / "calibration_battery.jsonl").read_text().splitlines()]
    assert sum(r["order"][0] != r["order"][1] for r in rows) == N // 2
    md = (out / "calibration.md").read_text()
    assert "order flip rate | 0.50 [" in md and "verbosity shift | +0.50 [" in md and "same model family" in md
    assert "order flip rate" in r.stdout and "declines judged faithful" in r.stdout


@pytest.mark.slow
def test_the_battery_runs_on_a_seeded_subset(tmp_path: Path, data_dir: Path) -> None:
    out = tmp_path / "run"
    with openai_compat.serve("judge", biased_judge) as url:
        r = run_cli("tier=calibrate", "judge=faithfulness", f"calibrate.labels={labels(tmp_path)}",
                    "model@judge.model=openai", "judge.model.name=judge", f"judge.model.base_url={url}",
                    "calibrate.repeats=1", "calibrate.battery_size=8", "stats.resamples=300",
                    f"paths.data_dir={data_dir}", f"paths.run_dir={out}", "cache=false", "quiet=true")
    assert r.returncode == 0, r.stderr
    result = json.loads((out / "calibration.json").read_text())
    rows = [json.loads(x) for x in (out / "calibration_battery.jsonl").read_text().splitlines()]
    assert result["battery"]["size"] == len(rows) == 8 and result["battery"]["calls"] == 32
    chosen = [int(r["id"][3:]) for r in rows]
    assert chosen == battery.sample(N, 8, 0)
    assert result["battery"]["order_flip"]["value"] == pytest.approx(sum(i % 2 for i in chosen) / 8)
    assert result["warnings"] == [] and result["generators"] == []  # nobody named the labels' generator
