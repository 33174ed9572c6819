"""Each cause rule on its own, the precedence between them, and the labelling of case records."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

import pytest

from nomad_eval.core import causes as c
from nomad_eval.core.causes import Facts, Oracle
from nomad_eval.records import AnswerCase, decode, encode


def facts(**kw: Any) -> Facts:
    """An answerable e2e question that failed once, with its relevant passage retrieved and injected at rank 1."""
    base: dict[str, Any] = dict(key="e2e:q", id="q", mode="e2e", expect_refusal=False, outcome="fail", passes=0,
                                repeats=1, relevant=["doc-a"], retrieved=[(1, "doc-a", "doc-a#0"),
                                                                          (2, "doc-b", "doc-b#0")],
                                injected=["doc-a#0", "doc-b#0"], oracle=Oracle("pass", True))
    return Facts(**(base | kw))


# --- one test per rule: fires on its evidence, stays silent without it ----------------------------------------

def test_unstable_fires_only_on_a_flipping_outcome() -> None:
    found = c.unstable(facts(outcome="unstable", passes=1, repeats=3))
    assert found is not None and found.label == "unstable" and "1 of 3" in found.evidence
    assert c.unstable(facts()) is None


def test_missed_refusal_needs_an_answer_where_a_refusal_was_expected() -> None:
    f = facts(expect_refusal=True, relevant=[], refusals=1, repeats=2)
    found = c.missed_refusal(f)
    assert found is not None and found.label == "missed_refusal" and "1 of 2" in found.evidence
    assert c.missed_refusal(replace(f, refusals=2)) is None      # declined every time: not this rule
    assert c.missed_refusal(facts(refusals=0)) is None            # answerable question


def test_retrieval_miss_when_no_relevant_document_is_retrieved() -> None:
    f = facts(retrieved=[(1, "doc-b", "doc-b#0")], injected=["doc-b#0"])
    found = c.retrieval_miss(f)
    assert found is not None and found.label == "retrieval_miss"
    assert "none of the relevant doc-a" in found.evidence and "doc-b (rank 1)" in found.evidence
    assert "oracle pass" in found.evidence
    assert c.retrieval_miss(facts()) is None                                  # retrieved
    assert c.retrieval_miss(replace(f, mode="oracle")) is None                # only e2e retrieves
    nothing = c.retrieval_miss(facts(retrieved=[], injected=[]))
    assert nothing is not None and "among the 0 retrieved: nothing" in nothing.evidence


def test_retrieval_miss_names_the_missing_half_of_a_multi_document_question() -> None:
    found = c.retrieval_miss(facts(relevant=["doc-a", "doc-c"]))
    assert found is not None and "1 of 2 relevant documents missing (doc-c)" in found.evidence


def test_dropped_by_budget_when_a_retrieved_relevant_chunk_was_not_injected() -> None:
    f = facts(retrieved=[(1, "doc-b", "doc-b#0"), (2, "doc-a", "doc-a#3")], injected=["doc-b#0"], dropped=1)
    found = c.dropped_by_budget(f)
    assert found is not None and found.label == "dropped_by_budget"
    assert "doc-a#3 (rank 2)" in found.evidence and "no relevant passage injected" in found.evidence
    assert c.dropped_by_budget(facts()) is None  # everything retrieved was injected
    # An irrelevant chunk dropped is not this question's cause.
    assert c.dropped_by_budget(facts(retrieved=[(1, "doc-a", "doc-a#0"), (2, "doc-b", "doc-b#0")],
                                     injected=["doc-a#0"], dropped=1)) is None


def test_dropped_by_budget_in_oracle_mode_reads_the_planner_count() -> None:
    found = c.dropped_by_budget(facts(mode="oracle", retrieved=[], injected=["doc-a#0"], dropped=2))
    assert found is not None and "left out 2 of the oracle's 3" in found.evidence
    assert c.dropped_by_budget(facts(mode="oracle", retrieved=[], dropped=0)) is None
    assert c.dropped_by_budget(facts(mode="noretrieval", retrieved=[], injected=[], dropped=3)) is None


def test_wrong_refusal_needs_every_repeat_declined_with_the_passage_injected() -> None:
    found = c.wrong_refusal(facts(refusals=2, repeats=2))
    assert found is not None and found.label == "wrong_refusal" and "doc-a#0 (position 1)" in found.evidence
    assert c.wrong_refusal(facts(refusals=1, repeats=2)) is None
    assert c.wrong_refusal(facts(refusals=1, injected=["doc-b#0"])) is None           # nothing relevant to use
    assert c.wrong_refusal(facts(mode="noretrieval", refusals=1, injected=[])) is None  # declining is right there
    assert c.wrong_refusal(facts(expect_refusal=True, refusals=1)) is None


def test_unsupported_claim_from_numbers_or_a_judge_verdict() -> None:
    nums = c.unsupported_claim(facts(unsupported=[99.0, 12.5]))
    assert nums is not None and nums.label == "unsupported_claim" and "99, 12.5" in nums.evidence
    judged = c.unsupported_claim(facts(unfaithful=1, judged=2))
    assert judged is not None and "judged unfaithful in 1 of 2" in judged.evidence
    assert c.unsupported_claim(facts(judged=2)) is None


def test_oracle_decides_between_ignored_and_beyond_the_model() -> None:
    ignored = c.model_or_ignored(facts(oracle=Oracle("pass", True)))
    assert ignored is not None and ignored.label == "retrieved_but_ignored"
    beyond = c.model_or_ignored(facts(oracle=Oracle("fail", True)))
    assert beyond is not None and beyond.label == "beyond_the_model"
    own = c.model_or_ignored(facts(mode="oracle", retrieved=[], injected=["doc-a#0"], oracle=None))
    assert own is not None and own.label == "beyond_the_model"
    assert c.model_or_ignored(facts(injected=["doc-b#0"])) is None  # nothing relevant was in front of the model


@pytest.mark.parametrize(("oracle", "says"), [
    (None, "oracle not run"),
    (Oracle("fail", False), "lost passages to the budget"),
    (Oracle("pass", False), "lost passages to the budget"),
    (Oracle("unstable", True), "oracle unstable"),
    (Oracle("not judged", True), "oracle not judged"),
])
def test_missing_or_inconclusive_oracle_is_said_not_guessed(oracle: Oracle | None, says: str) -> None:
    found = c.model_or_ignored(facts(oracle=oracle))
    assert found is not None and found.label == "injected_not_used" and says in found.evidence


def test_no_context_only_in_noretrieval_mode() -> None:
    found = c.no_context(facts(mode="noretrieval", retrieved=[], injected=[]))
    assert found is not None and found.label == "no_context"
    assert c.no_context(facts()) is None


# --- precedence -------------------------------------------------------------------------------------------

def test_a_passing_or_unjudged_question_has_no_cause() -> None:
    assert c.diagnose(facts(outcome="pass", passes=1)) is None
    assert c.diagnose(facts(outcome="not judged")) is None


@pytest.mark.parametrize(("kw", "label"), [
    # Every rule's evidence at once: the earliest stage wins.
    ({"outcome": "unstable", "passes": 1, "repeats": 2, "retrieved": [], "refusals": 2}, "unstable"),
    ({"expect_refusal": True, "relevant": [], "retrieved": [], "unsupported": [99.0]}, "missed_refusal"),
    ({"retrieved": [], "injected": [], "refusals": 1, "unsupported": [99.0]}, "retrieval_miss"),
    # doc-c never retrieved, doc-a retrieved but dropped: the earlier stage, retrieval, is named.
    ({"relevant": ["doc-a", "doc-c"], "injected": ["doc-b#0"], "dropped": 1}, "retrieval_miss"),
    ({"injected": ["doc-b#0"], "dropped": 1, "refusals": 1}, "dropped_by_budget"),
    ({"refusals": 1, "unsupported": [99.0]}, "wrong_refusal"),
    ({"unsupported": [99.0], "oracle": Oracle("fail", True)}, "unsupported_claim"),
    ({"oracle": Oracle("pass", True)}, "retrieved_but_ignored"),
    ({"mode": "noretrieval", "retrieved": [], "injected": [], "refusals": 1}, "no_context"),
    ({"mode": "noretrieval", "retrieved": [], "injected": [], "unsupported": [99.0]}, "unsupported_claim"),
])
def test_precedence(kw: dict[str, Any], label: str) -> None:
    found = c.diagnose(facts(**kw))
    assert found is not None and found.label == label


def test_precedence_order_is_the_documented_one() -> None:
    assert list(c.LABELS) == ["unstable", "missed_refusal", "retrieval_miss", "dropped_by_budget", "wrong_refusal",
                              "unsupported_claim", "retrieved_but_ignored", "beyond_the_model", "injected_not_used",
                              "no_context"]


# --- from case records ------------------------------------------------------------------------------------

def case(qid: str, mode: str, passed: bool | None, repeat: int = 0, **kw: Any) -> AnswerCase:
    row: dict[str, Any] = {"id": qid, "mode": mode, "repeat": repeat, "passed": passed, "expect_refusal": False,
                           "relevant_doc_ids": ["doc-a"], "retrieved": [], "injected": [], "dropped_chunks": 0,
                           "refused": False, "groundedness": None, "unsupported_numbers": []}
    if mode == "e2e":
        row["retrieved"] = [{"rank": 1, "doc_id": "doc-a", "chunk_id": "doc-a#0", "score": 0.5, "final_score": 0.5}]
    if mode in ("e2e", "oracle"):
        row["injected"] = ["doc-a#0"]
    written = decode(row | kw)
    assert isinstance(written, AnswerCase)
    return written


def test_unsupported_numbers_ignores_small_and_known_ones() -> None:
    assert c.unsupported_numbers("Boil 40 minutes at 99 degrees, 3 times, 1,200 W", "stand for 40 minutes") == \
        [99.0, 1200.0]
    assert c.unsupported_numbers("four AA cells", "four AA cells") == []


def test_facts_join_e2e_with_the_oracle_and_count_repeats() -> None:
    cases = [case("q", "e2e", False, 0, refused=True), case("q", "e2e", False, 1, unsupported_numbers=[99]),
             case("q", "oracle", True, 0), case("q", "oracle", True, 1, dropped_chunks=1),
             case("q", "noretrieval", False)]
    f = c.question_facts(cases)["e2e:q"]
    assert (f.outcome, f.repeats, f.refusals, f.unsupported) == ("fail", 2, 1, [99.0])
    assert f.oracle == Oracle("pass", True) and f.noretrieval == "fail"
    # Only e2e questions are joined to the other modes.
    assert c.question_facts(cases)["oracle:q"].oracle is None


def test_faithfulness_verdict_below_the_rubric_top_is_a_flag() -> None:
    cases = [case("q", "oracle", False, 0, judges={"faithfulness": 0}),
             case("q", "oracle", False, 1, judges={"faithfulness": 1})]
    f = c.facts_of(cases)
    assert (f.unfaithful, f.judged) == (1, 2)
    assert c.facts_of(cases, faithful_max=5).unfaithful == 2


def test_label_cases_writes_every_case_and_counts_per_question() -> None:
    cases = [case("a", "e2e", False, r, retrieved=[]) for r in range(2)] + \
        [case("b", "e2e", True, r) for r in range(2)] + \
        [case("c", "e2e", r == 0, r) for r in range(2)] + \
        [case("a", "oracle", True, r) for r in range(2)]
    findings = c.label_cases(cases)
    assert {k: v.label for k, v in findings.items()} == {"e2e:a": "retrieval_miss", "e2e:c": "unstable"}
    assert [x.cause for x in cases] == ["retrieval_miss"] * 2 + [None] * 2 + ["unstable"] * 2 + [None] * 2
    assert all((x.cause is None) == (x.cause_evidence is None) for x in cases)
    counts = c.cause_counts(cases)["by_mode"]
    assert counts["e2e"]["questions"] == 3 and counts["e2e"]["failed"] == 2
    miss = counts["e2e"]["labels"]["retrieval_miss"]
    assert (miss["count"], miss["n"], miss["share"]) == (1, 2, 0.5) and 0 < miss["low"] < 0.5 < miss["high"] < 1
    assert (miss["cases"], counts["e2e"]["labels"]["unstable"]["cases"]) == (2, 2)  # repeats carry the label
    assert (counts["e2e"]["cases"], counts["e2e"]["failed_cases"]) == (6, 4)
    assert counts["e2e"]["labels"]["beyond_the_model"]["count"] == 0
    assert counts["oracle"] == {"questions": 1, "failed": 0, "cases": 2, "failed_cases": 0, "labels": {
        k: {"count": 0, "n": 0, "share": None, "low": None, "high": None, "cases": 0} for k in c.LABELS}}
    per_question = Counter(x.cause for x in {(x.mode, x.id): x for x in cases}.values() if x.cause)
    assert per_question == {k: v["count"] for k, v in counts["e2e"]["labels"].items() if v["count"]}


def test_cause_changes_lists_changed_questions_and_refuses_to_invent() -> None:
    base = [case("a", "e2e", False, cause="retrieval_miss"), case("b", "e2e", True, cause=None),
            case("c", "e2e", False, cause="beyond_the_model"), case("d", "e2e", True, cause=None)]
    run = [case("a", "e2e", False, cause="dropped_by_budget"), case("b", "e2e", False, cause="wrong_refusal"),
           case("c", "e2e", False, cause="beyond_the_model"), case("e", "e2e", False, cause="retrieval_miss")]
    changes, note = c.cause_changes(base, run)
    assert note is None
    assert changes == [c.CauseChange("e2e:a", "retrieval_miss", "dropped_by_budget"),
                       c.CauseChange("e2e:b", None, "wrong_refusal")]
    old = [decode({k: v for k, v in encode(x).items() if k != "cause"}) for x in base]
    changes, note = c.cause_changes(old, run)
    assert changes == [] and note is not None and "baseline carries no failure causes" in note


def test_retrieval_miss_in_oracle_mode_when_the_corpus_holds_no_relevant_chunk() -> None:
    gone = facts(mode="oracle", key="oracle:q", retrieved=[], injected=[], dropped=0, oracle=None,
                 relevant=["doc-lost"])
    found = c.retrieval_miss(gone)
    assert found is not None and found.label == "retrieval_miss" and "no chunk of doc-lost" in found.evidence
    # The oracle had its passages: not this rule (it is beyond the model, or the budget's).
    assert c.retrieval_miss(replace(gone, injected=["doc-lost#0"])) is None
    assert c.retrieval_miss(replace(gone, dropped=1)) is None
