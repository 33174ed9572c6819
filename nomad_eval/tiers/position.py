"""Position in context: does correctness fall with the rank at which the relevant passage sits in the prompt?"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from nomad_eval.metrics.aggregate import mean


def relevant_rank(case: dict[str, Any]) -> int | None:
    """1-based position of the first injected passage from a relevant document, None when none was injected."""
    rel = set(case["relevant_doc_ids"])
    for i, chunk_id in enumerate(case["injected"], 1):
        if chunk_id.split("#")[0] in rel:
            return i
    return None


def position_analysis(cases: list[dict[str, Any]]) -> dict[str, Any]:
    rows = [c for c in cases if c["mode"] == "e2e" and not c["expect_refusal"] and not c.get("unstable")]
    by_rank: dict[str, list[float | None]] = defaultdict(list)
    ignored = 0
    injected = 0
    for c in rows:
        rank = relevant_rank(c)
        by_rank[str(rank) if rank is not None else "not injected"].append(c["metrics"]["correctness"])
        if rank is not None:
            injected += 1
            if c["metrics"]["correctness"] == 0.0:
                ignored += 1
                c["retrieved_but_ignored"] = True
    table = {k: {"n": len(v), "correctness": mean(v)} for k, v in
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
