"""The generation tier with the mock ceiling, the real embedded SmolLM2, and real servers on loopback."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from statistics import pstdev
from typing import Any

import pytest
from omegaconf import DictConfig

from nomad_eval.backends.chat import ChatOptions
from nomad_eval.backends.llamacpp import smollm2_path
from nomad_eval.base.errors import NomadError
from nomad_eval.base.shipped import build
from nomad_eval.cli.entry import run_tier
from nomad_eval.metrics.aggregate import mean
from nomad_eval.rag.prompt import user_message
from tests.conftest import MINI, run_cli, run_in_process
from tests.servers import ollama_compat, openai_compat


def run(cfg: DictConfig) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    assert run_tier(cfg) == 0
    out = Path(cfg.paths.run_dir)
    return json.loads((out / "report.json").read_text()), [json.loads(x) for x in
                                                             (out / "cases.jsonl").read_text().splitlines()]


def test_mock_all_modes_decompose_and_cases_match(make_cfg: Callable[..., DictConfig]) -> None:
    report, cases = run(make_cfg(*MINI, "tier=generation", "model=mock", "mode=all", "repeats=2"))
    m = report["metrics"]
    assert m["oracle.correctness"] >= m["e2e.correctness"]
    assert m["noretrieval.correctness"] == 0.0  # the ceiling declines without context
    assert len(cases) == 8 * 3 * 2
    for mode in ("oracle", "e2e", "noretrieval"):
        rows = [c for c in cases if c["mode"] == mode and not c["unstable"]]
        for metric in ("correctness", "refusal_recall", "false_refusal_rate", "leakage_rate", "groundedness"):
            assert m[f"{mode}.{metric}"] == pytest.approx(mean(c["metrics"][metric] for c in rows)), (mode, metric)
        assert report["intervals"][f"{mode}.correctness"]["n"] == 7  # answerable questions, repeats averaged
    d = report["details"]["decomposition"]
    assert d["retrieval_gap"] == pytest.approx(m["oracle.correctness"] - m["e2e.correctness"])
    # Upstream's meanAnswerLength / meanPromptTokens with their standard deviation, n answers and an interval.
    for mode in ("oracle", "e2e", "noretrieval"):
        lengths = [len(c["answer"]) for c in cases if c["mode"] == mode]
        tokens = [c["estimated_prompt_tokens"] for c in cases if c["mode"] == mode]
        z = report["details"]["sizes"][mode]
        assert z["meanAnswerLength"]["mean"] == pytest.approx(mean(lengths))
        assert z["meanAnswerLength"]["stddev"] == pytest.approx(pstdev(lengths))
        assert z["meanPromptTokens"]["mean"] == pytest.approx(mean(tokens))
        assert z["meanPromptTokens"]["n"] == 16 and z["meanPromptTokens"]["questions"] == 8
        low, high = z["meanPromptTokens"]["low"], z["meanPromptTokens"]["high"]
        assert low is not None and high is not None and low <= z["meanPromptTokens"]["mean"] <= high
    from nomad_eval.report.markdown import generation_markdown
    from nomad_eval.report.schema import Report

    md = generation_markdown(Report.model_validate(report))
    assert "## Sizes" in md and "n=16 answers, 8 questions" in md
    assert report["counts"]["rewritten_queries"] == 1  # mini-07, the one question with history
    follow_up = next(c for c in cases if c["id"] == "mini-07" and c["mode"] == "e2e")
    # The default history rule: the last user turn, then the question.
    assert follow_up["rewritten_query"] == ("I have an Osprey L9 lantern with NiMH cells.\n"
                                            "And how long does it run on high?")
    one = next(c for c in cases if c["id"] == "mini-01" and c["mode"] == "e2e")
    assert {"answer", "passed", "refused", "leaked", "groundedness", "prompt_tokens", "estimated_prompt_tokens",
            "elided_history", "dropped_chunks", "repeat", "mode"} <= set(one)
    assert one["retrieved"] and one["injected"]


def test_response_cache_makes_a_rerun_free(make_cfg: Callable[..., DictConfig]) -> None:
    first, _ = run(make_cfg(*MINI, "tier=generation", "model=mock", "mode=e2e", "repeats=1"))
    second, _ = run(make_cfg(*MINI, "tier=generation", "model=mock", "mode=e2e", "repeats=1"))
    assert first["counts"]["model_calls"] > 0 and second["counts"]["model_calls"] == 0
    assert first["metrics"] == second["metrics"]


def needs_smollm2() -> None:
    """SmolLM2 is an optional install (llama.cpp bindings and a package holding the weights): without it, its tests
    skip. The weights package is looked up, not imported, as the backend does (importing it needs the `llm` tool)."""
    pytest.importorskip("xllamacpp")
    try:
        smollm2_path()
    except NomadError as e:
        pytest.skip(str(e))


@pytest.mark.slow
def test_smollm2_e2e_is_repeatable_offline(make_cfg: Callable[..., DictConfig]) -> None:
    needs_smollm2()
    args = (*MINI, "tier=generation", "model=smollm2", "mode=e2e", "repeats=1", "limit=3", "cache=false",
            "tier.max_tokens=32")
    _, a = run(make_cfg(*args))
    _, b = run(make_cfg(*args))
    assert [c["answer"] for c in a] == [c["answer"] for c in b]
    assert all(c["answer"] for c in a)
    assert all(c["prompt_tokens"] and c["prompt_tokens"] > 50 for c in a)


def flip_by_seed(body: dict[str, Any]) -> str:
    """A model made to flip: right on even seeds, a refusal on odd ones."""
    last = body["messages"][-1]["content"]
    if last.startswith("Rewrite"):
        return last.rsplit("Question:", 1)[-1].strip()
    if body["max_tokens"] == 1:
        return "ok"
    return "Let it stand for 40 minutes." if body["seed"] == 0 else "I don't know."


def test_flipping_question_is_unstable_and_gated_as_instability(make_cfg: Callable[..., DictConfig],
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    with openai_compat.serve("flipper", flip_by_seed) as url:
        cfg = make_cfg(*MINI, "tier=generation", "model=openai", "model.name=flipper", f"model.base_url={url}",
                       "mode=e2e", "repeats=2", "tags=[kettle]", "cache=false")
        report, cases = run(cfg)
    assert report["details"]["unstable"] == ["e2e:mini-01"]
    assert all(c["unstable"] for c in cases) and {c["passed"] for c in cases} == {True, False}
    assert report["metrics"]["e2e.correctness"] == 0.5  # the flipping question counts at its pass rate
    assert report["metrics"]["e2e.instability"] == 1.0  # and its flip is what the gate's instability reads
    assert report["counts"]["unstable"] == 1
    out = cfg.paths.run_dir
    capsys.readouterr()
    compare = ("tier=compare", f"compare.run={out}", f"compare.baseline={out}", "quiet=true")
    assert run_in_process(*compare) == 0 and "verdict: pass" in capsys.readouterr().out
    # Upstream NOMAD's rule leaves unstable questions out of both sides: nothing is left, so the gate refuses.
    assert run_in_process(*compare, "compare.exclude_unstable=true") == 2
    assert "no questions in common" in capsys.readouterr().err


Chat = Callable[[list[dict[str, str]], dict[str, Any]], tuple[str, int, int]]


@pytest.fixture(scope="module")
def smol_chat() -> Chat:
    """The real SmolLM2 as the loopback server's model, loaded once for the module."""
    needs_smollm2()
    smol = build("model", "smollm2")

    def chat(messages: list[dict[str, str]], options: dict[str, Any]) -> tuple[str, int, int]:
        r = smol.chat(messages, ChatOptions(options.get("temperature", 0.0), options.get("seed", 0),
                                            options.get("num_predict", 32)))
        return r.text, r.prompt_tokens or 0, r.completion_tokens or 0

    return chat


@pytest.mark.slow
def test_ollama_backend_against_a_loopback_server(make_cfg: Callable[..., DictConfig], smol_chat: Chat) -> None:
    log: list[dict[str, Any]] = []
    with ollama_compat.serve({}, {"smollm2:135m": smol_chat}, log) as url:
        report, cases = run(make_cfg(*MINI, "tier=generation", "model=ollama", "model.name=smollm2:135m",
                                     f"model.base_url={url}", "mode=e2e", "repeats=1", "limit=2",
                                     "tier.max_tokens=24", "model.num_ctx=2048"))
    chats = [x for x in log if x["path"] == "/api/chat"]
    assert chats[0]["options"]["num_predict"] == 1  # the throwaway warm-up comes first
    scored = chats[-1]["options"]
    assert scored["temperature"] == 0.0 and scored["num_ctx"] == 2048 and "seed" in scored
    assert any(x["path"] == "/api/generate" and x.get("keep_alive") == 0 and x["model"] == "other-model:7b"
               for x in log)  # the other resident model was evicted
    assert all(c["answer"] and c["prompt_tokens"] for c in cases)


@pytest.mark.slow
def test_dead_ollama_server_fails_fast_naming_url(tmp_path: Path) -> None:
    t = time.perf_counter()
    r = run_cli("tier=generation", "model=ollama", "model.base_url=http://127.0.0.1:9", *MINI,
                f"hydra.run.dir={tmp_path}")
    elapsed = time.perf_counter() - t
    assert r.returncode != 0 and "http://127.0.0.1:9" in r.stderr and "llama3.2:3b" in r.stderr
    assert "Traceback" not in r.stderr
    assert elapsed < 6  # includes interpreter start-up; the connect itself is bounded at 2 s


def test_unknown_model_lists_what_the_server_has(make_cfg: Callable[..., DictConfig], smol_chat: Chat,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    with ollama_compat.serve({}, {"smollm2:135m": smol_chat}) as url:
        cfg = make_cfg(*MINI, "tier=generation", "model=ollama", "model.name=qwen3:8b", f"model.base_url={url}")
        with pytest.raises(SystemExit):
            run_tier(cfg)
    err = capsys.readouterr().err
    assert "qwen3:8b" in err and "smollm2:135m" in err


@pytest.mark.slow
def test_long_context_suite_reports_budget_metrics(make_cfg: Callable[..., DictConfig]) -> None:
    report, cases = run(make_cfg("suite=long_context", "tier=generation", "model=mock", "mode=e2e", "repeats=1",
                                 "model.num_ctx=1024"))
    m = report["metrics"]
    assert m["e2e.history_elided_rate"] > 0 and "e2e.chunks_dropped_rate" in m and "e2e.correctness" in m
    assert any(c["elided_history"] for c in cases)


def slow_echo(body: dict[str, Any]) -> str:
    """Answers out of order: later questions return sooner."""
    last = body["messages"][-1]["content"]
    time.sleep(0.02 * (10 - len(last) % 10))
    return f"echo: {last}"


def test_concurrent_requests_are_written_in_golden_order(make_cfg: Callable[..., DictConfig]) -> None:
    with openai_compat.serve("echo", slow_echo) as url:
        report, cases = run(make_cfg(*MINI, "tier=generation", "model=openai", "model.name=echo",
                                     f"model.base_url={url}", "model.concurrency=4", "mode=noretrieval",
                                     "repeats=1", "cache=false"))
    assert [c["id"] for c in cases] == [f"mini-0{i}" for i in range(1, 9)]
    # noretrieval: the final message is the no-passages note, then the question
    assert all(c["answer"] == f"echo: {user_message(c['query'], [])}" for c in cases)


def test_the_triage_advice_follows_upstreams_rule() -> None:
    from nomad_eval.run.generation_cases import decomposition, triage

    assert triage(0.55, 0.2, 0.0) == ["oracle 0.550 < 0.6: the model falls short even with the right passages, so "
                                      "retrieval work will not fix it; try a larger model"]
    assert triage(0.6, 0.5, 0.0)[0].startswith("model and retrieval both hold up")  # 0.6 is not below 0.6
    assert triage(0.9, 0.7, 0.1)[0].startswith("retrieval cost 0.200 > 0.15 (oracle − e2e)")
    assert "work on retrieval" in triage(0.9, 0.7, 0.1)[0] and len(triage(0.9, 0.7, 0.1)) == 1
    assert triage(0.9, 0.3, 0.4)[1] == ("RAG adds nothing: e2e 0.300 ≤ noretrieval 0.400; check that the retrieved "
                                        "passages reach the prompt")
    assert triage(None, 0.3, None) == []  # nothing to attribute without both sides
    d = decomposition({"oracle.correctness": 0.9, "e2e.correctness": 0.85, "noretrieval.correctness": 0.85})
    holds = "model and retrieval both hold up on this corpus (oracle ≥ 0.6, retrieval cost ≤ 0.15)"
    assert [n.split(":")[0] for n in d.diagnosis] == [holds, "RAG adds nothing"]
