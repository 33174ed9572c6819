"""Judges run concurrently up to the judge model's `concurrency`, land in case order, and are cached."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from nomad_eval.backends.response_cache import ResponseCache
from nomad_eval.judges.run_judges import judge_cases, judge_chat
from nomad_eval.records import AnswerCase
from tests.servers import openai_compat
from tests.typed_config import judge_settings

N = 9
DELAY = 0.15  # seconds per request: long enough for requests sent together to be seen together


class Recorder:
    """A judge on loopback that counts requests in flight. Early cases answer slowest, so with requests in
    parallel they finish last: only collecting results in submission order keeps the case order."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.in_flight = 0
        self.peak = 0
        self.spans: list[tuple[float, float]] = []

    def answer(self, body: dict[str, Any]) -> str:
        i = int(re.search(r"answer number (\d+)", body["messages"][-1]["content"]).group(1))  # type: ignore[union-attr]
        start = time.monotonic()
        with self.lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        time.sleep(DELAY * (1 + (N - i) / N))
        with self.lock:
            self.in_flight -= 1
            self.spans.append((start, time.monotonic()))
        return json.dumps({"verdict": i % 3, "reason": f"case {i}"})

    def overlapping(self) -> int:
        """Pairs of requests that were being answered at the same time."""
        return sum(1 for a, (s1, e1) in enumerate(self.spans) for s2, e2 in self.spans[a + 1:]
                   if s1 < e2 and s2 < e1)


def make_cases() -> list[AnswerCase]:
    return [AnswerCase(id=f"q{i}", mode="e2e", repeat=0, query=f"question {i}?", answer=f"answer number {i}",
                       refused=False, expect_refusal=False) for i in range(N)]


def test_judges_run_concurrently_in_case_order_and_cached(make_cfg: Callable[..., DictConfig],
                                                          tmp_path: Path) -> None:
    rec = Recorder()
    passages = [[f"passage {i}"] for i in range(N)]
    with openai_compat.serve("judge", rec.answer) as url:
        cfg = make_cfg("judge=relevance", "model@judge.model=openai", "judge.model.name=judge",
                       f"judge.model.base_url={url}", "judge.model.concurrency=3")
        cache = ResponseCache(tmp_path / "responses.sqlite")
        first, chat = make_cases(), judge_chat(judge_settings(cfg), cache)
        t0 = time.monotonic()
        section = judge_cases(judge_settings(cfg), first, passages, chat)
        elapsed = time.monotonic() - t0
        second, chat2 = make_cases(), judge_chat(judge_settings(cfg), cache)
        section2 = judge_cases(judge_settings(cfg), second, passages, chat2)
        cache.close()

    serial = sum(e - s for s, e in rec.spans)
    print(f"peak in flight {rec.peak}, overlapping pairs {rec.overlapping()}, {elapsed:.2f} s vs {serial:.2f} s "
          "serial")
    assert rec.peak <= 3 and rec.overlapping() >= 2
    assert elapsed < 0.7 * serial  # the overlap bought time
    assert [c.judges["relevance"] for c in first] == [i % 3 for i in range(N)]
    assert section["e2e.relevance"]["n"] == N
    # The second run asks the server nothing: every verdict comes from the cache.
    assert chat.calls == N and chat2.calls == 0 and chat2.hits == N and len(rec.spans) == N
    assert [c.judges for c in second] == [c.judges for c in first] and section2 == section
