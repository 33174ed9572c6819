from __future__ import annotations

from nomad_eval.rag.budget import TokenEstimator, calibrate, plan
from nomad_eval.rag.prompt import OMITTED, Passage

EST = TokenEstimator(4.0)


def passages(n: int, size: int) -> list[Passage]:
    return [Passage(f"d#{i}", "d", "Doc", f"p{i} " + "x" * size) for i in range(n)]


def test_everything_fits_in_a_large_window() -> None:
    hist = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    p = plan("q?", hist, passages(3, 100), num_ctx=8192, answer_reserve=128, chunk_share=0.6, est=EST)
    assert p.dropped_passages == 0 and p.elided_history == 0
    assert [m["role"] for m in p.messages] == ["system", "user", "assistant", "user"]
    assert p.estimated_tokens == EST.messages(p.messages)


def test_whole_passages_best_first_and_newest_history_first() -> None:
    hist = [{"role": "user", "content": f"turn {i} " + "y" * 400} for i in range(10)]
    p = plan("q?", hist, passages(10, 400), num_ctx=1200, answer_reserve=128, chunk_share=0.6, est=EST)
    kept = [x.chunk_id for x in p.passages]
    assert kept == [f"d#{i}" for i in range(len(kept))] and 0 < len(kept) < 10
    assert p.dropped_passages == 10 - len(kept)
    assert p.elided_history > 0
    assert p.messages[1]["content"] == OMITTED
    assert p.messages[-2]["content"].startswith("turn 9")  # the newest history survives
    assert p.estimated_tokens <= 1200


def test_calibration_recovers_the_ratio() -> None:
    msgs = [{"role": "system", "content": "a" * 3000}, {"role": "user", "content": "b" * 300}]
    real = 3300 // 3 + 4 * 2 + 2
    assert abs(calibrate([(msgs, real)]).chars_per_token - 3.0) < 0.01
