"""How many answers each prompt gets: greedy decoding asks once unless the backend is known to vary, and Ctrl-C
stops a generation run within one call's time, saying so at once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from omegaconf import DictConfig

from nomad_eval.base.paths import REPO
from nomad_eval.cli.entry import run_tier
from nomad_eval.run.generation_cases import repeat_seed
from tests.conftest import MINI
from tests.servers import openai_compat


def _prompt(body: dict[str, Any]) -> str:
    return json.dumps(body["messages"], sort_keys=True)


def _report(cfg: DictConfig) -> dict[str, Any]:
    assert run_tier(cfg) == 0
    return json.loads((Path(cfg.paths.run_dir) / "report.json").read_text())  # type: ignore[no-any-return]


def test_greedy_default_asks_each_prompt_once(make_cfg: Callable[..., DictConfig]) -> None:
    asked: Counter[str] = Counter()

    def answer(body: dict[str, Any]) -> str:
        asked[_prompt(body)] += 1
        return "Let it stand for 40 minutes."

    with openai_compat.serve("m", answer) as url:
        report = _report(make_cfg(*MINI, "tier=generation", "model=openai", "model.name=m", f"model.base_url={url}",
                                  "mode=all"))
    assert report["counts"]["repeats"] == 1 and report["system"]["repeats"] == "1"
    assert "not known to vary" in report["details"]["repeats_reason"]
    assert max(asked.values()) == 1  # the server's own count: no prompt asked twice
    assert sum(asked.values()) == report["counts"]["model_calls"] == len(asked)
    assert report["counts"]["cases"] == 8 * 3


def test_a_backend_seen_to_vary_gets_sample_repeats(make_cfg: Callable[..., DictConfig]) -> None:
    asked: Counter[tuple[str, int]] = Counter()

    def flips(body: dict[str, Any]) -> str:
        asked[(_prompt(body), int(body["seed"]))] += 1
        return "1:3" if body["seed"] == 0 else "One part to three."  # at temperature 0: a batching server

    args = (*MINI, "tier=generation", "model=openai", "model.name=m", "mode=noretrieval")
    with openai_compat.serve("m", flips) as url:
        first = _report(make_cfg(*args, f"model.base_url={url}", "repeats=2"))  # asked twice: the cache now knows
        before = sum(asked.values())
        again = _report(make_cfg(*args, f"model.base_url={url}", "sample_repeats=3"))
    assert first["counts"]["repeats"] == 2 and first["details"]["repeats_reason"] == "repeats=2 as set"
    assert again["counts"]["repeats"] == 3 and "known to vary" in again["details"]["repeats_reason"]
    assert "not known" not in again["details"]["repeats_reason"]
    # Only the third repeat is new: the first two come from the cache. (The run's first call, a token probe, is
    # asked live, to learn which model the server serves now.)
    assert sum(asked.values()) - before == again["counts"]["model_calls"]
    assert sum(n for (_, seed), n in asked.items() if seed == repeat_seed(0, 2)) == 8
    assert again["counts"]["model_calls"] <= 8 + 1


def test_the_same_answers_twice_mean_once(make_cfg: Callable[..., DictConfig]) -> None:
    args = (*MINI, "tier=generation", "model=mock", "mode=e2e")
    assert _report(make_cfg(*args, "repeats=2"))["counts"]["repeats"] == 2
    assert _report(make_cfg(*args))["counts"]["repeats"] == 1  # both cached repeats agree
    sampled = _report(make_cfg(*args, "tier.temperature=0.7", "sample_repeats=2"))
    assert sampled["counts"]["repeats"] == 2 and "temperature 0.7" in sampled["details"]["repeats_reason"]


def _start(url: str, tmp_path: Path, data_dir: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    # A child started from a non-interactive shell may inherit SIGINT ignored; Ctrl-C must reach it.
    return subprocess.Popen([sys.executable, "-m", "nomad_eval", "tier=generation", "model=openai", "model.name=slow",
                             f"model.base_url={url}", "mode=noretrieval", *MINI, "cache=false",
                             f"paths.data_dir={data_dir}", f"paths.run_dir={tmp_path / 'r'}"], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _lines_with_times(stream: Any, into: list[tuple[float, str]]) -> threading.Thread:
    def read() -> None:
        for line in stream:
            into.append((time.monotonic(), line))

    t = threading.Thread(target=read, daemon=True)
    t.start()
    return t


SLOW = 6.0  # seconds one answer takes


def _slow_server(answering: threading.Event) -> Callable[[dict[str, Any]], str]:
    def slow(body: dict[str, Any]) -> str:
        if int(body.get("max_tokens") or 0) > 1:  # an answer, not a one-token calibration probe
            answering.set()
            time.sleep(SLOW)
        return "Let it stand for 40 minutes."

    return slow


@pytest.mark.slow
@pytest.mark.parametrize("presses", [1, 2])
def test_ctrl_c_says_so_at_once_and_stops_within_one_call(tmp_path: Path, data_dir: Path, presses: int) -> None:
    answering = threading.Event()
    lines: list[tuple[float, str]] = []
    with openai_compat.serve("slow", _slow_server(answering)) as url:
        p = _start(url, tmp_path, data_dir)
        reader = _lines_with_times(p.stderr, lines)
        assert answering.wait(timeout=120), "no answer was asked for"
        time.sleep(0.5)
        pressed = time.monotonic()
        p.send_signal(signal.SIGINT)
        if presses == 2:
            time.sleep(1.0)
            p.send_signal(signal.SIGINT)
        p.wait(timeout=SLOW + 30)
        ended = time.monotonic()
        reader.join(timeout=5)
    said = [t for t, line in lines if "stopping after the current answer" in line]
    assert said and said[0] - pressed < 1.0, lines
    assert p.returncode == 130
    if presses == 1:
        assert ended - pressed < SLOW + 3  # the call under way finishes, no other starts
        assert any("interrupted" in line for _, line in lines) and not any("Traceback" in x for _, x in lines)
    else:
        assert ended - pressed < SLOW - 2  # the second press does not wait for the call
    assert not (tmp_path / "r" / "report.json").exists()


def test_another_seed_gives_fresh_draws_for_every_repeat() -> None:
    """seed + repeat made seed=101 repeat seed=100's draws one repeat later; hashed, no repeat's seed is shared."""
    seeds_100 = {repeat_seed(100, r) for r in range(5)}
    seeds_101 = {repeat_seed(101, r) for r in range(5)}
    assert repeat_seed(100, 0) == 100 and len(seeds_100) == 5 and not seeds_100 & seeds_101
    assert repeat_seed(100, 1) == repeat_seed(100, 1) and 0 <= repeat_seed(7, 3) < 2 ** 31
