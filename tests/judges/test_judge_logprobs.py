"""Graded verdicts from token probabilities: the relevance score as the probability-weighted mean of 0/1/2 at
the verdict token, beside the argmax verdict, through real backends (loopback servers, the embedded SmolLM2)."""

from __future__ import annotations

import json
import math
import re
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from omegaconf import DictConfig

from nomad_eval.backends.chat import ChatOptions, ChatResult, TokenLogprob
from nomad_eval.backends.response_cache import CachedChat, ResponseCache, response_key
from nomad_eval.base.paths import REPO
from nomad_eval.base.shipped import build
from nomad_eval.judges.judge import TOP_LOGPROBS, judge, judge_messages, load_rubric, weighted_score
from nomad_eval.judges.run_judges import judge_cases, judge_chat
from nomad_eval.records import AnswerCase
from tests.servers import openai_compat
from tests.servers._http import JsonHandler, running
from tests.typed_config import judge_settings

RUBRICS = REPO / "nomad_eval" / "conf" / "rubrics"
# The judge's probabilities at the verdict token: verdict 1 is what it wrote (a grammar can force a token that
# is not the most likely), 2 is the likeliest value, and '"' is a token the JSON schema forbids there.
AT_VERDICT = {"2": 0.5, "1": 0.3, "0": 0.1, '"': 0.1}
WEIGHTED = (2 * 0.5 + 1 * 0.3 + 0 * 0.1) / (0.5 + 0.3 + 0.1)


def tokens_of(text: str) -> list[str]:
    """Split roughly as SmolLM2 does: digits alone, words, punctuation runs."""
    return re.findall(r"\d|\w+|\s+|[^\w\s]+", text)


def scripted(body: dict[str, Any], text: str) -> list[tuple[str, dict[str, float]]]:
    out: list[tuple[str, dict[str, float]]] = []
    for tok in tokens_of(text):
        after_key = "".join(t for t, _ in out).rstrip().endswith('"verdict":')
        out.append((tok, AT_VERDICT if after_key and tok.isdigit() else {tok: 0.9, "x": 0.1}))
    return out


def judge_answer(body: dict[str, Any]) -> str:
    # A reason holding a digit, so a digit elsewhere in the reply cannot pass for the verdict's token.
    return json.dumps({"verdict": 1, "reason": "covers 2 of the 3 steps"})


def cases() -> tuple[list[AnswerCase], list[list[str]]]:
    rows = [AnswerCase(id=f"q{i}", mode="e2e", repeat=0, query=f"question {i}?", answer=f"answer {i}",
                       refused=False, expect_refusal=False) for i in range(2)]
    return rows, [["a passage"], ["another passage"]]


def test_relevance_is_weighted_at_the_verdict_token_and_cached(make_cfg: Callable[..., DictConfig],
                                                               tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []

    def answer(body: dict[str, Any]) -> str:
        seen.append(body)
        return judge_answer(body)

    with openai_compat.serve("judge", answer, logprobs=scripted) as url:
        cfg = make_cfg("judge=all", "model@judge.model=openai", "judge.model.name=judge",
                       f"judge.model.base_url={url}")
        rows, passages = cases()
        cache = ResponseCache(tmp_path / "responses.sqlite")
        section = judge_cases(judge_settings(cfg), rows, passages, judge_chat(judge_settings(cfg), cache))
        cache.close()

        again, _ = cases()
        reopened = ResponseCache(tmp_path / "responses.sqlite")
        chat = judge_chat(judge_settings(cfg), reopened)
        section_again = judge_cases(judge_settings(cfg), again, passages, chat)
        reopened.close()

    for case in rows:
        assert case.judges == {"faithfulness": 1, "relevance": 1}  # the argmax verdict, as written
        assert case.judges_weighted["relevance"] == pytest.approx(WEIGHTED)
        assert "faithfulness" not in case.judges_weighted  # pass/fail: no graded score to weigh
    rel = section["e2e.relevance"]
    assert rel["mean"] == 0.5 and rel["n_weighted"] == 2
    assert rel["mean_weighted"] == pytest.approx(WEIGHTED / 2)
    assert "mean_weighted" not in section["e2e.faithfulness"]
    # Token probabilities are asked for only by the graded rubric.
    relevance = load_rubric(RUBRICS, "relevance").instructions.strip()
    asked = [(b["messages"][0]["content"] == relevance, b.get("logprobs"), b.get("top_logprobs")) for b in seen]
    assert sorted(asked, key=str) == [(False, None, None)] * 2 + [(True, True, TOP_LOGPROBS)] * 2
    # From the cache, with the probabilities: the same scores and no request.
    assert chat.calls == 0 and chat.hits == 4 and len(seen) == 4
    assert [c.judges_weighted for c in again] == [c.judges_weighted for c in rows]
    assert section_again == section


def test_a_server_refusing_logprobs_still_gives_the_verdict(make_cfg: Callable[..., DictConfig]) -> None:
    with openai_compat.serve("judge", judge_answer, logprobs=scripted,
                             refuse=lambda body: bool(body.get("logprobs"))) as url:
        chat = CachedChat(build("model", "openai", name="judge", base_url=url, retries=1), None)
        j = judge(chat, load_rubric(RUBRICS, "relevance"), "q?", ["p"], "a")
    assert j.verdict == 1 and not j.rejected and j.score_weighted is None
    assert chat.calls == 1  # the refused request raised; only the plain one answered


def test_old_cache_rows_load_and_new_rows_keep_their_probabilities(tmp_path: Path) -> None:
    path = tmp_path / "responses.sqlite"
    cache = ResponseCache(path)
    with_lp = ChatResult("{}", 3, 1, (TokenLogprob("{", -0.25, (("{", -0.25), ("[", -1.5))),
                                      TokenLogprob("}", -1e-7)))
    cache.put("new", with_lp)
    cache.close()
    db = sqlite3.connect(path)
    # A row as written before logprobs were kept.
    db.execute("INSERT INTO resp VALUES (?, ?)",
               ("old", json.dumps({"text": "hello", "prompt_tokens": 5, "completion_tokens": 2})))
    db.commit()
    db.close()
    cache = ResponseCache(path)
    assert cache.get("old") == ChatResult("hello", 5, 2, None)
    assert cache.get("new") == with_lp
    cache.close()


def lp(token: str, p: float, top: dict[str, float] | None = None) -> TokenLogprob:
    return TokenLogprob(token, math.log(p), tuple((t, math.log(q)) for t, q in (top or {}).items()))


def test_weighted_score_reads_only_a_clean_verdict_token() -> None:
    head = [lp('{"', 0.9), lp("verdict", 0.9), lp('":', 0.9)]
    tail = [lp(",", 0.9), lp(' "reason": "x"}', 0.9)]
    # The digit a grammar forced is counted though it is missing from the top alternatives; " 2" is a 2.
    forced = [*head, lp(" ", 0.9), lp("0", 0.05, {"2": 0.6, " 2": 0.2, "1": 0.15}), *tail]
    assert weighted_score(tuple(forced), 0, [0, 1, 2]) == pytest.approx((2 * 0.8 + 0.15) / 1.0)
    # A digit sharing its token with a comma: the alternatives there are not alternative verdicts.
    shared = [*head, lp(" 2,", 0.9, {" 2,": 0.5, " 1,": 0.5}), lp(' "reason": "x"}', 0.9)]
    assert weighted_score(tuple(shared), 2, [0, 1, 2]) is None
    # A verdict the text does not hold at "verdict": gives nothing.
    assert weighted_score(tuple(forced), 1, [0, 1, 2]) is None


@contextmanager
def ollama_server(log: list[dict[str, Any]]) -> Iterator[str]:
    """Only /api/chat, answering as Ollama does when `logprobs` is asked for (one entry per generated token)."""
    class Handler(JsonHandler):
        def do_GET(self) -> None:  # /api/tags: the digest a cache key carries
            self._send(200, {"models": [{"name": "judge", "model": "judge", "digest": "sha256-judge"}]})

        def do_POST(self) -> None:
            body = self._body()
            log.append(body)
            text = '{"verdict": 2, "reason": "direct"}'
            reply: dict[str, Any] = {"model": body["model"], "created_at": "2026-01-01T00:00:00Z",
                                     "message": {"role": "assistant", "content": text}, "done": True,
                                     "done_reason": "stop", "prompt_eval_count": 10, "eval_count": 9}
            if body.get("logprobs"):
                reply["logprobs"] = [
                    {"token": t, "logprob": math.log(0.7 if t == "2" else 0.9),
                     "top_logprobs": ([{"token": "2", "logprob": math.log(0.7)},
                                       {"token": "1", "logprob": math.log(0.3)}] if t == "2" else [])}
                    for t in tokens_of(text)]
            self._send(200, reply)

    with running(Handler) as url:
        yield url


def test_ollama_logprobs_through_the_official_client() -> None:
    log: list[dict[str, Any]] = []
    with ollama_server(log) as url:
        model = build("model", "ollama", name="judge", base_url=url, evict_others=False, warmup=False)
        plain = model.chat([{"role": "user", "content": "hi"}], ChatOptions())
        j = judge(CachedChat(model, None), load_rubric(RUBRICS, "relevance"), "q?", ["p"], "a")
    assert "logprobs" not in log[0] and "top_logprobs" not in log[0] and plain.logprobs is None
    assert log[1]["logprobs"] is True and log[1]["top_logprobs"] == TOP_LOGPROBS
    assert j.verdict == 2 and j.score_weighted == pytest.approx(2 * 0.7 + 1 * 0.3)


@pytest.mark.slow
def test_smollm2_verdict_is_the_likeliest_allowed_digit(tmp_path: Path) -> None:
    """At temperature 0 the grammar lets only the scale's digits through and the likeliest of them is written,
    so the reported probabilities must rank the written verdict first among them: a check that the position
    read is the verdict's, and that llama.cpp's probabilities are those the verdict was drawn from."""
    label = json.loads((REPO / "goldens" / "labels" / "relevance.jsonl").read_text().splitlines()[0])
    rubric = load_rubric(RUBRICS, "relevance")
    model = build("model", "smollm2", threads=1)
    cache = ResponseCache(tmp_path / "responses.sqlite")
    chat = CachedChat(model, cache)
    j = judge(chat, rubric, label["question"], label["chunks"], label["answer"], retries=0)
    model.close()
    assert chat.calls == 1 and j.verdict is not None
    assert j.score_weighted is not None and 0 <= j.score_weighted <= 2
    # The reply as cached. Its tokens may hold more than its text: llama.cpp lets the model open a ```json fence,
    # which it strips from the content, so the verdict's position is found in the tokens themselves.
    msgs = judge_messages(rubric, label["question"], label["chunks"], label["answer"])
    opts = ChatOptions(0.0, 0, 160, rubric.verdict_schema(), TOP_LOGPROBS)
    result = cache.get(response_key(model.identity(), msgs, opts.as_dict(), 0))
    cache.close()
    assert result is not None and result.logprobs is not None
    generated = "".join(t.token for t in result.logprobs)
    assert result.text in generated
    ends = [len("".join(t.token for t in result.logprobs[:k + 1])) for k in range(len(result.logprobs))]
    digit = re.search(r'"verdict"\s*:\s*(\d)', generated)
    assert digit is not None and int(digit.group(1)) == j.verdict
    at = result.logprobs[next(k for k, end in enumerate(ends) if end > digit.start(1))]
    digits = {tok.strip(): p for tok, p in at.top if tok.strip() in {"0", "1", "2"}}
    assert max(digits, key=lambda d: digits[d]) == str(j.verdict)
