"""The case codec: each kind read from its written form, written back byte for byte, and bad values refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from nomad_eval.metrics.registry import MetricName
from nomad_eval.records import AnswerCase, Hit, PositionCase, RetrievalCase, checked, decode, encode, line, summary

RETRIEVAL = ('{"id": "q1", "tags": ["water"], "relevant_doc_ids": ["d1"], "expect_refusal": false, "grades": '
             '{"d1": 2}, "query": "how?", "retrieval_query": "how?", "expanded_query": "how? h2o", "retrieved": '
             '[{"rank": 1, "doc_id": "d1", "chunk_id": "d1#0", "score": 0.5, "final_score": 0.75}], "metrics": '
             '{"recall@5": 1.0, "nonEmptyRateOnRefusal": null}, "upstream": {"upstream.recall@5": 1.0}, '
             '"passed": true, "why": null}')
ANSWER = ('{"id": "q2", "tags": [], "relevant_doc_ids": [], "expect_refusal": true, "mode": "e2e", "repeat": 1, '
          '"query": "é?", "rewritten_query": null, "retrieved": null, "injected": [], "answer": "no", '
          '"raw_answer": null, "passed": false, "why": "did not refuse", "refused": false, "leaked": false, '
          '"groundedness": null, "unsupported_numbers": null, "prompt_tokens": 9, "completion_tokens": 2, '
          '"latency_ms": 3.5, "metrics": {"refusal_recall": 0.0}, "pass_rate": 0.5, "unstable": true, '
          '"cause": "x", "cause_evidence": "y"}')
POSITION = ('{"id": "q3", "tags": [], "relevant_doc_ids": ["d1"], "position": 2, "repeat": 0, "query": "q", '
            '"relevant_chunk": "d1#0", "answer_bearing": true, "relevant_at": null, "injected": ["a", "d1#0"], '
            '"dropped_chunks": 1, "answer": "a", "raw_answer": null, "correctness": 1.0, "passed": true, '
            '"why": null, "prompt_tokens": null, "estimated_prompt_tokens": 40}')


@pytest.mark.parametrize(("text", "model"), [(RETRIEVAL, RetrievalCase), (ANSWER, AnswerCase),
                                              (POSITION, PositionCase)])
def test_each_kind_reads_as_its_model_and_writes_back_byte_for_byte(text: str, model: type) -> None:
    case = decode(json.loads(text))
    assert type(case) is model
    assert line(case) == text


def test_metric_keys_are_metric_names_in_memory_and_text_on_disk() -> None:
    case = decode(json.loads(RETRIEVAL))
    assert isinstance(case, RetrievalCase)
    assert case.metrics[MetricName(None, "recall", 5)] == 1.0
    assert case.upstream == {MetricName("upstream", "recall", 5): 1.0}
    assert case.retrieved == (Hit(rank=1, doc_id="d1", chunk_id="d1#0", score=0.5, final_score=0.75),)
    assert encode(case)["metrics"] == {"recall@5": 1.0, "nonEmptyRateOnRefusal": None}


def test_a_built_record_writes_only_what_was_set_and_an_update_adds_its_field() -> None:
    case = AnswerCase(id="q", mode="oracle", passed=True)
    assert line(case) == '{"id": "q", "mode": "oracle", "passed": true}'
    assert line(case.model_copy(update={"cause": "c"})) == '{"id": "q", "mode": "oracle", "passed": true, "cause": "c"}'
    with pytest.raises(ValidationError):
        case.passed = False  # frozen: what was read is what is compared


def test_a_summary_keeps_what_compare_reads_in_the_baseline_order() -> None:
    kept = encode(summary(decode(json.loads(ANSWER))), ("id", "tags", "passed", "unstable", "metrics", "mode"))
    assert list(kept)[:6] == ["id", "tags", "passed", "unstable", "metrics", "mode"]
    assert "answer" not in kept and kept["repeat"] == 1 and kept["cause"] == "x"


@pytest.mark.parametrize(("raw", "message"), [
    ({"id": "q1", "metrics": {"recall@5": float("nan")}}, "'metrics.recall@5': Input should be a finite number"),
    ({"id": 7}, "'id': Input should be a valid string"),
    ({"id": "q1", "passed": "yes"}, "'passed': Input should be a valid boolean"),
    ({"id": "q1", "metrics": {"recall@5": "0.5"}}, "'metrics.recall@5': Input should be a valid number"),
    ({"id": "q1", "metrics": {"recall@5": 1.5}}, "'metrics.recall@5' = 1.5 is outside the range of recall [0, 1]"),
    ({"id": "q1", "mode": 3}, "'mode': Input should be a valid string"),
    ({"id": "q1", "position": "2"}, "'position': Input should be a valid integer"),
])
def test_a_bad_record_is_named_by_its_field(raw: object, message: str) -> None:
    problem = checked(raw)
    assert isinstance(problem, str) and message in problem


def test_every_committed_baseline_case_reads_and_writes_back_unchanged() -> None:
    order = ("id", "tags", "passed", "unstable", "metrics", "mode", "repeat", "relevant_doc_ids", "expect_refusal",
             "cause", "upstream")
    paths = sorted(Path(__file__).parents[2].glob("baselines/*/*.json"))
    assert paths
    for path in paths:
        for raw in json.loads(path.read_text())["cases"]:
            case = checked(raw)
            assert not isinstance(case, str), (path, case)
            assert json.dumps(encode(case, order)) == json.dumps(raw)
