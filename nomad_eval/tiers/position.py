"""Position in context: does correctness fall with the rank at which the relevant passage sits in the prompt?"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from nomad_eval.base.case import Case
from nomad_eval.metrics.aggregate import mean


def relevant_rank(case: Case) -> int | None:
    """1-based position of the first injected passage from a relevant document, None when none was injected."""
    rel = set(case["relevant_doc_ids"])
    for i, chunk_id in enumerate(case["injected"], 1):
        if chunk_id.split("#")[0] in rel:
            return i
    return None


def position_analysis(cases: list[Case]) -> dict[str, Any]:
    rows = [c for c in cases if c["mode"] == "e2e" and not c["expect_refusal"] and not c.get("unstable")]
    by_rank: dict[str, dict[str, list[float | None]]] = defaultdict(lambda: defaultdict(list))
    ignored = 0
    injected = 0
    for c in rows:
        rank = relevant_rank(c)
        by_rank[str(rank) if rank is not None else "not injected"][str(c["id"])].append(c["metrics"]["correctness"])
        if rank is not None:
            injected += 1
            if c["metrics"]["correctness"] == 0.0:
                ignored += 1
                c["retrieved_but_ignored"] = True
    table = {k: rank_row(v) for k, v in
             sorted(by_rank.items(), key=lambda kv: (kv[0] == "not injected", kv[0].zfill(4)))}
    recall = injected / len(rows) if rows else None
    correct = mean(c["metrics"]["correctness"] for c in rows)
    return {
        "by_rank": table,
        "context_recall": recall,
        "retrieved_but_ignored_rate": ignored / injected if injected else None,
        # High recall with low correctness: the model had the answer in front of it and did not use it.
        "retrieved_but_ignored": bool(recall is not None and correct is not None and recall >= 0.8 and correct < 0.5),
    }


def rank_row(by_question: dict[str, list[float | None]]) -> dict[str, Any]:
    """One rank's correctness over its questions (each one's repeats averaged first: repeats are not new questions),
    n and a 95% interval: Wilson's for 0/1 values, a bootstrap over questions where a question's repeats disagree."""
    values = [v for v in (mean(r) for r in by_question.values()) if v is not None]
    row: dict[str, Any] = {"n": len(values), "cases": sum(len(r) for r in by_question.values()),
                           "correctness": mean(values), "low": None, "high": None, "method": "wilson"}
    if not values:
        return row
    from nomad_eval.core.stats import Interval, mean_interval
    from nomad_eval.core.summary import wilson_interval

    iv: Interval | None
    if all(v in (0.0, 1.0) for v in values):
        iv = wilson_interval(int(sum(values)), len(values))
    else:
        iv, row["method"] = mean_interval(values), "bootstrap"
    if iv is not None:
        row["low"], row["high"] = iv.low, iv.high
    return row
