from __future__ import annotations

import pytest

from nomad_eval.metrics.answer.measures import (
    correctness,
    groundedness,
    is_refusal,
    leaked,
    question_outcome,
    refusal_values,
    think_leaked,
)
from nomad_eval.rag.prompt import strip_reasoning


@pytest.mark.parametrize("text", [
    "I don't have information about that in the available documents.",
    "I do not know.",
    "There is no information about the Vireo HX-9.",
    "That is not covered in the available material.",
    "I'm unable to answer that from what I have.",
    "",
])
def test_refusals_detected(text: str) -> None:
    assert is_refusal(text)


@pytest.mark.parametrize("text", [
    "Do not cover the burn with butter; cool it under running water for 20 minutes.",
    "Don't have the casualty stand up; keep them lying down.",
    "You cannot answer a radio call on the net frequency without your call sign.",
    "If you don't know the water source, boil it for 1 minute.",
    "There is no need to add more bleach if it smells faintly of chlorine.",
])
def test_tricky_non_refusals(text: str) -> None:
    assert not is_refusal(text)
    assert refusal_values(text, expect_refusal=False) == {"refusal_recall": None, "false_refusal_rate": 0.0}


def test_refusal_recall_and_false_refusals_each_count_their_own_goldens() -> None:
    declined, answered = "I do not know.", "Let it stand for 40 minutes."
    assert refusal_values(declined, expect_refusal=True) == {"refusal_recall": 1.0, "false_refusal_rate": None}
    assert refusal_values(answered, expect_refusal=True) == {"refusal_recall": 0.0, "false_refusal_rate": None}
    assert refusal_values(declined, expect_refusal=False) == {"refusal_recall": None, "false_refusal_rate": 1.0}


def test_correctness_needs_all_includes_and_no_excludes() -> None:
    assert correctness("Boil for 1 minute, 3 minutes above 2,000 m.", ["1 minute", "3 minutes"], []) == 1.0
    assert correctness("Boil for 1 minute.", ["1 minute", "3 minutes"], []) == 0.0
    assert correctness("Boil for 1 minute, or 10 seconds.", ["1 minute"], [r"\b10 seconds"]) == 0.0
    assert correctness("BOIL FOR 1 MINUTE", ["boil for 1 minute"], []) == 1.0


def test_leakage_and_think_tags() -> None:
    assert leaked("According to the context, boil for 1 minute.")
    assert leaked("Context 2 says 40 minutes.")
    assert leaked("The knowledge base lists 3.4 litres per hour.")
    assert not leaked("Boil it for 1 minute; the documents at home can wait.")
    assert strip_reasoning("<think>hmm</think>Boil it.") == "Boil it."
    assert think_leaked(strip_reasoning("<think>unclosed reasoning Boil it."))
    assert not think_leaked(strip_reasoning("<think>a</think> Boil it."))


def test_groundedness_counts_numbers_above_ten() -> None:
    ctx = "The still makes 3.4 litres per hour and draws 48 W; the bank holds 2,304 Wh."
    assert groundedness("It draws 48 W from 2,304 Wh.", ctx) == 1.0
    assert groundedness("It draws 48 W for 96 hours.", ctx) == 0.5
    assert groundedness("It makes 3.4 litres.", ctx) is None  # no number above 10: unmeasurable


def test_question_outcome_flags_flips() -> None:
    assert question_outcome([True, True, True]) == (1.0, False)
    assert question_outcome([True, False, True]) == (pytest.approx(2 / 3), True)
    assert question_outcome([None, None]) == (None, False)


def test_every_registered_generation_measure_is_scored_per_case() -> None:
    from nomad_eval.data.golden import Golden
    from nomad_eval.run.generation_cases import CASE_METRICS, score_case

    g = Golden(id="g", query="How long?", relevantDocIds=["d"], mustInclude=["40"], mustNotInclude=[],
               expectRefusal=False, tags=[], turns=[])
    scored = score_case(g, "Boil it for 40 minutes.", "Boil for 40 minutes.", 0, 0, 100, 100)
    assert set(scored["metrics"]) == set(CASE_METRICS)
    assert scored["metrics"]["correctness"] == 1.0
