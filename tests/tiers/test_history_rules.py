"""pipeline.history: how a conversation becomes the retrieval query, the same in the retrieval and generation tiers,
recorded per case."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from omegaconf import DictConfig

from nomad_eval.base.errors import NomadError
from nomad_eval.cli.config_check import check_config
from nomad_eval.cli.entry import run_tier
from nomad_eval.rag.rewrite import form_query, with_last_user_turns
from tests.conftest import MINI
from tests.servers import openai_compat

HISTORY = [{"role": "user", "content": "I have an Osprey L9 lantern with NiMH cells."},
           {"role": "assistant", "content": "It takes four AA cells."}]
QUESTION = "And how long does it run on high?"
STANDALONE = "How long does the Osprey L9 lantern run on high?"


def cases(cfg: DictConfig) -> dict[str, dict[str, Any]]:
    assert run_tier(cfg) == 0
    rows = [json.loads(x) for x in (Path(cfg.paths.run_dir) / "cases.jsonl").read_text().splitlines()]
    return {f"{r['id']}/{r.get('mode', '')}": r for r in rows}


def test_last_user_keeps_the_newest_user_turns_then_the_question() -> None:
    long = [*HISTORY, {"role": "user", "content": "Mine is the 2019 model."}, {"role": "assistant", "content": "OK"}]
    assert with_last_user_turns(long, QUESTION, 1) == f"Mine is the 2019 model.\n{QUESTION}"
    assert with_last_user_turns(long, QUESTION, 2) == f"{HISTORY[0]['content']}\nMine is the 2019 model.\n{QUESTION}"
    # Without history every rule searches for the question as asked.
    for rule in ("query", "last_user", "rewrite"):
        assert form_query(QUESTION, [], rule, 2, None).text == QUESTION


def test_rewrite_falls_back_to_the_question_when_the_model_rambles() -> None:
    assert form_query(QUESTION, HISTORY, "rewrite", 2, lambda _: " ").text == QUESTION
    assert form_query(QUESTION, HISTORY, "rewrite", 2, lambda _: "x" * 1000).changed is False
    assert form_query(QUESTION, HISTORY, "rewrite", 2, lambda _: f'"{STANDALONE}"').text == STANDALONE


@pytest.mark.parametrize("rule", ["last_user", "rewrite"])
def test_both_tiers_search_for_the_same_formed_query(make_cfg: Callable[..., DictConfig], rule: str) -> None:
    def rewrite(body: dict[str, Any]) -> str:
        last = body["messages"][-1]["content"]
        return STANDALONE if last.startswith("Rewrite") else "The lantern runs for 3 hours on high."

    with openai_compat.serve("rewriter", rewrite) as url:
        model = ["model=openai", "model.name=rewriter", f"model.base_url={url}", "cache=false"]
        retrieval = cases(make_cfg(*MINI, *model, f"pipeline.history={rule}"))
        generation = cases(make_cfg(*MINI, *model, f"pipeline.history={rule}", "tier=generation", "mode=e2e",
                                    "repeats=1"))
    want = STANDALONE if rule == "rewrite" else f"{HISTORY[0]['content']}\n{QUESTION}"
    r, g = retrieval["mini-07/"], generation["mini-07/e2e"]
    assert r["query"] == g["query"] == QUESTION  # the question asked and scored is unchanged
    assert r["retrieval_query"] == g["retrieval_query"] == g["rewritten_query"] == want
    assert [x["chunk_id"] for x in r["retrieved"]] == [x["chunk_id"] for x in g["retrieved"]]
    # A question without history is searched for as asked, under every rule.
    assert retrieval["mini-01/"]["retrieval_query"] == retrieval["mini-01/"]["query"]


def test_the_question_alone_is_still_a_rule(make_cfg: Callable[..., DictConfig]) -> None:
    rows = cases(make_cfg(*MINI, "pipeline.history=query"))
    assert rows["mini-07/"]["retrieval_query"] == QUESTION


def test_an_unknown_rule_is_named_before_any_work(make_cfg: Callable[..., DictConfig]) -> None:
    with pytest.raises(NomadError, match=r"pipeline.history='recent'") as e:
        check_config(make_cfg(*MINI, "pipeline.history=recent"))
    assert e.value.exit_code == 2
    with pytest.raises(NomadError, match=r"pipeline.history_turns=0"):
        check_config(make_cfg(*MINI, "pipeline.history_turns=0"))
