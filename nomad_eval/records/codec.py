"""The one codec of case records: cases.jsonl lines, a baseline's cases and upstream's converted cases are all
read by `decode` and written by `encode`.

The written form is the one runs have always written: no kind field (records/cases.py `kind_of` tells the kind
from the fields), only the fields the writer set, in the order the tiers wrote them, so a record read and
written again is byte for byte the line it was.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from nomad_eval.base.bounded_json import json_problem
from nomad_eval.base.errors import first_error
from nomad_eval.metrics.registry import spec_for
from nomad_eval.records.cases import MODELS, Case, CaseBase, Kind, kind_of

# Each kind's fields in the order its tier writes them (the fields added after scoring last, in the order they
# are added); a field outside the list follows in declaration order.
ORDER: dict[Kind, tuple[str, ...]] = {
    "retrieval": ("id", "tags", "relevant_doc_ids", "expect_refusal", "grades", "query", "retrieval_query",
                  "expanded_query", "retrieved", "metrics", "upstream", "passed", "why"),
    "answer": ("id", "tags", "relevant_doc_ids", "expect_refusal", "mode", "repeat", "query", "rewritten_query",
               "retrieval_query", "retrieved", "injected", "answer", "raw_answer", "passed", "why", "refused", "leaked",
               "groundedness", "unsupported_numbers", "prompt_tokens", "completion_tokens", "latency_ms",
               "estimated_prompt_tokens", "elided_history", "dropped_chunks", "metrics", "upstream", "attack",
               "answered_from", "pass_rate", "unstable", "judges", "judges_weighted", "cause", "cause_evidence",
               "retrieved_but_ignored"),
    "position": ("id", "tags", "relevant_doc_ids", "position", "repeat", "query", "relevant_chunk", "answer_bearing",
                 "relevant_at", "injected", "dropped_chunks", "answer", "raw_answer", "correctness", "passed", "why",
                 "prompt_tokens", "estimated_prompt_tokens"),
}
# What a baseline keeps of each case, in this order: everything compare needs to rebuild per-question outcomes
# (repeats, and documents for clustering), and the failure cause, so compare can list the questions whose cause
# changed.
SUMMARY = ("id", "tags", "passed", "unstable", "metrics", "mode", "repeat", "relevant_doc_ids", "expect_refusal",
           "cause", "upstream")


def decode(raw: object) -> Case:
    """A written case as its record; pydantic's ValidationError names the first field that is not one."""
    return MODELS[kind_of(raw)].model_validate(raw)


def encode(case: CaseBase, order: Iterable[str] | None = None) -> dict[str, Any]:
    """The case as JSON (the JSON boundary): the fields its writer set, in `order` (default: its kind's)."""
    held = case.model_dump(mode="json", exclude_unset=True)
    first = [k for k in (ORDER[case.KIND] if order is None else order) if k in held]
    return {k: held[k] for k in [*first, *(k for k in held if k not in first)]}


def line(case: CaseBase) -> str:
    """The case's line of cases.jsonl, without the newline (as base/atomic.py's write_jsonl encodes a row)."""
    return json.dumps(encode(case), ensure_ascii=False)


def lines(cases: Iterable[CaseBase]) -> str:
    """cases.jsonl's text: a line per case, each ending in a newline."""
    return "".join(line(c) + "\n" for c in cases)


def summary(case: CaseBase) -> Case:
    """What a baseline keeps of a case (SUMMARY), as a record of the same kind."""
    held = encode(case, SUMMARY)
    return decode({k: held[k] for k in SUMMARY if k in held})


def out_of_range(metrics: Mapping[Any, object], where: str = "metrics") -> str | None:
    """The first value outside its measure's range (a rate in [0, 1], anything else at least 0), or None; names the
    registry does not know are left to compare, which does not gate them."""
    for name, value in metrics.items():
        spec = spec_for(str(name))  # text in a report, a MetricName in a record
        if spec is None or not isinstance(value, int | float) or isinstance(value, bool):
            continue
        high = 1.0 if spec.unit == "rate" else math.inf
        if not 0.0 <= value <= high:
            return f"'{where}.{name}' = {value!r} is outside the range of {spec.family} [0, {high:g}]"
    return None


def checked(raw: object) -> Case | str:
    """The written case as its record, or why it cannot be compared ("'metrics.recall@5': Input should be ...")."""
    if (problem := json_problem(raw)) is not None:  # too deep, or a lone surrogate no terminal can print
        return problem
    try:
        case = decode(raw)
    except ValidationError as exc:
        return f"not a valid case record: {first_error(exc)}"
    return out_of_range(case.metrics) or case
