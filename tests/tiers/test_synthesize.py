"""tier=synthesize: drafts from a scripted loopback model, planted bad drafts dropped by the right check, only the
survivors written, and the review loop reads them; SmolLM2 on the shipped corpus end to end."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from omegaconf import DictConfig

from nomad_eval.base.errors import NomadError
from nomad_eval.base.patterns import search
from nomad_eval.cli.entry import run_tier
from nomad_eval.data.drafts import (
    DUPLICATE,
    MALFORMED,
    NOT_IN_SOURCE,
    TOO_COMMON,
    TOPIC_IN_CORPUS,
    answer_pattern,
    candidates_path,
    fields,
)
from nomad_eval.data.golden import Golden
from nomad_eval.tiers.dataset import annotate
from nomad_eval.tiers.synthesize import run as synthesize_run
from tests.conftest import FIXTURES, MINI
from tests.servers import openai_compat
from tests.typed_config import typed

SAME = "What should I check on it every few days?"
# By the passage's title: what the scripted model replies, every label present so that each kind of prompt reads
# the lines it asks for.
ANSWERS = {
    "Descaling the Brindle K2 kettle": ("How long should the vinegar mix stand in the kettle?", "40 minutes"),
    "Batteries for the Osprey L9 lantern": ("How long does the lantern run on turbo?", "12 hours on turbo"),  # absent
    "Storing climbing rope": ("Where should I keep my rope?", "a"),  # in every document
    "Keeping a sourdough starter": (SAME, "hooch"),  # the same question as the compost one: a duplicate
    "Hot composting in the Tamsin bay": (SAME, "55 to 65 degrees Celsius"),
}
REFUSALS = {
    "Descaling the Brindle K2 kettle": ("Which vinegar is best?", "white vinegar"),  # the corpus covers it
    "Batteries for the Osprey L9 lantern": ("What is the boiling point of mercury?", "mercury"),
    "Storing climbing rope": None,  # a reply without the format's lines
    "Keeping a sourdough starter": ("How much gluten does rye flour hold?", "rye"),
    "Hot composting in the Tamsin bay": ("How deep should garlic cloves be planted?", "garlic"),
}


def scripted(body: dict[str, Any]) -> str:
    text = body["messages"][-1]["content"]
    title = re.match(r'Passage from "([^"]*)"', text)
    assert title is not None
    if "TOPIC:" in text:
        refusal = REFUSALS[title.group(1)]
        return "I cannot help with that." if refusal is None else f"QUESTION: {refusal[0]}\nTOPIC: {refusal[1]}"
    q, a = ANSWERS[title.group(1)]
    return f"QUESTION: {q}\nFIRST: Hi.\nREPLY: Hello.\nFOLLOW-UP: {q}\n**ANSWER:** {a}."


def synthesize(make_cfg: Callable[..., DictConfig], *extra: str) -> tuple[dict[str, Any], list[dict[str, Any]], Path]:
    with openai_compat.serve("drafter", scripted) as url:
        cfg = make_cfg(*MINI, "tier=synthesize", "model=openai", "model.name=drafter", f"model.base_url={url}",
                       "tier.questions=3", "tier.follow_ups=2", "tier.refusals=5", "cache=false", *extra)
        assert run_tier(cfg) == 0
    run = Path(cfg.paths.run_dir)
    summary = json.loads((run / "synthesize.json").read_text())
    out = Path(summary["out"])
    return summary, [json.loads(x) for x in out.read_text().splitlines()], out


def test_planted_bad_drafts_are_dropped_by_the_right_check(make_cfg: Callable[..., DictConfig]) -> None:
    summary, drafts, out = synthesize(make_cfg)
    why = {(d["source"].split("#")[0], d["kind"] == "refusal"): d["why"] for d in summary["dropped"]}
    assert why[("lantern-batteries", False)] == NOT_IN_SOURCE
    assert why[("rope-storage", False)] == TOO_COMMON
    assert why[("kettle-descaling", True)] == TOPIC_IN_CORPUS
    assert why[("rope-storage", True)] == MALFORMED
    # Each dropped draft keeps the model's reply, for the reviewer.
    assert "I cannot help with that." in [d["reply"] for d in summary["dropped"]]
    # Of the two identical questions, the later one goes.
    assert [w for (doc, _), w in why.items() if doc in ("bread-starter", "garden-compost")] == [DUPLICATE]
    assert summary["drafted"] == 10 and summary["kept"] == 5 == len(drafts)
    assert summary["rejected"] == {MALFORMED: 1, NOT_IN_SOURCE: 1, TOO_COMMON: 1, DUPLICATE: 1, TOPIC_IN_CORPUS: 1}
    assert summary["by_kind"]["follow-up"]["drafted"] == 2 and summary["by_kind"]["refusal"]["kept"] == 3
    # Only the survivors are written, each a valid golden whose pattern is in its own document.
    texts = {p.stem: p.read_text() for p in (FIXTURES / "corpus").glob("*.md")}
    queries = [d["query"] for d in drafts]
    assert "How long does the lantern run on turbo?" not in queries and "Which vinegar is best?" not in queries
    for d in drafts:
        g = Golden.model_validate(d)
        assert all(search(p, texts[g.relevant_doc_ids[0]]) for p in g.must_include)
        assert g.expect_refusal == (not g.relevant_doc_ids)
        if g.turns:
            assert [t.role for t in g.turns] == ["user", "assistant"] and "multi-turn" in g.tags
    kettle = next(d for d in drafts if d["relevantDocIds"] == ["kettle-descaling"])
    assert kettle["mustInclude"] == [r"\b40\s+minutes\b"]  # the answer's words, trailing full stop dropped


def test_drafts_go_through_the_review_loop(make_cfg: Callable[..., DictConfig]) -> None:
    _, drafts, out = synthesize(make_cfg)
    cands = {r["id"]: r["candidates"] for r in map(json.loads, candidates_path(out).read_text().splitlines())}
    answers = iter("r" if d["expectRefusal"] else "1" for d in drafts)
    reviewed = annotate([d | {"candidates": cands[d["id"]]} for d in drafts], lambda _: next(answers))
    assert [g["id"] for g in reviewed] == [d["id"] for d in drafts]
    answerable = [g for g in reviewed if not g["expectRefusal"]]
    assert answerable and all(g["relevantDocIds"] and g["mustInclude"] for g in answerable)


def test_drafts_never_land_in_a_suite_or_over_a_file(make_cfg: Callable[..., DictConfig], tmp_path: Path) -> None:
    with pytest.raises(NomadError, match="drafts are reviewed first") as e:
        synthesize_run(typed(make_cfg(*MINI, "tier=synthesize", f"tier.out={FIXTURES / 'goldens' / 'drafted.jsonl'}")))
    assert e.value.exit_code == 2
    taken = tmp_path / "taken.jsonl"
    taken.write_text("keep me\n")
    with pytest.raises(NomadError, match="the file exists"):
        synthesize_run(typed(make_cfg(*MINI, "tier=synthesize", f"tier.out={taken}")))
    assert taken.read_text() == "keep me\n"


def test_reply_fields_and_answer_patterns() -> None:
    assert fields('**Question:** "Why?"\nANSWER: 3 hours\nANSWER: again') == {"QUESTION": "Why?", "ANSWER": "3 hours"}
    # What a small model writes instead of the labels asked for.
    assert fields("The question is: Why?\n\nThe answer is: because\nQ: Again?") == {"QUESTION": "Why?",
                                                                                   "ANSWER": "because"}
    p = answer_pattern("0.8 litre")
    assert search(p, "to the 0.8\nlitre mark") and not search(p, "10.8 litres") and not search(p, "0x8 litre")


@pytest.mark.slow
def test_smollm2_drafts_from_the_shipped_corpus(make_cfg: Callable[..., DictConfig]) -> None:
    """End to end with the embedded model: whatever SmolLM2 writes, the counts add up and every kept draft passes
    the checks it was kept by."""
    from tests.tiers.test_generation_tier import needs_smollm2

    needs_smollm2()
    cfg = make_cfg("tier=synthesize", "model=smollm2", "tier.questions=2", "tier.follow_ups=1", "tier.refusals=1")
    assert run_tier(cfg) == 0
    summary = json.loads((Path(cfg.paths.run_dir) / "synthesize.json").read_text())
    kept = [json.loads(x) for x in Path(summary["out"]).read_text().splitlines()]
    assert summary["drafted"] == 4 == summary["kept"] + sum(summary["rejected"].values())
    assert len(kept) == summary["kept"]
    texts = {p.stem: p.read_text() for p in (Path(cfg.data.corpus_dir)).glob("*.md")}
    for d in kept:
        g = Golden.model_validate(d)
        assert all(search(p, texts[doc]) for doc in g.relevant_doc_ids for p in g.must_include)
