"""The context budget planner: what fits in the model's window, decided before the call.

Order of claims: a reserve for the answer, the system rules and the question, then a share of what is
left for passages (whole passages, best first), then history (whole messages, newest first) with a
marker where older ones were left out.
"""

from __future__ import annotations

from dataclasses import dataclass

from nomad_eval.rag.prompt import OMITTED, Passage, system_message
from nomad_eval.rag.tokens import PER_MESSAGE, TokenEstimator


@dataclass(frozen=True)
class Plan:
    messages: list[dict[str, str]]
    passages: list[Passage]
    dropped_passages: int
    elided_history: int
    estimated_tokens: int


def plan(
    question: str, history: list[dict[str, str]], passages: list[Passage], num_ctx: int, answer_reserve: int,
    chunk_share: float, est: TokenEstimator,
) -> Plan:
    base = est.messages([{"role": "system", "content": system_message([])}, {"role": "user", "content": question}])
    available = max(0, num_ctx - answer_reserve - base)
    chunk_budget = int(available * chunk_share)
    kept: list[Passage] = []
    used = 0
    for p in passages:
        cost = est.text(p.text) + est.text(p.title) + 2
        if used + cost <= chunk_budget:
            kept.append(p)
            used += cost
    history_budget = available - used
    kept_history: list[dict[str, str]] = []
    for msg in reversed(history):
        cost = est.text(msg["content"]) + PER_MESSAGE
        if cost > history_budget:
            break
        kept_history.insert(0, msg)
        history_budget -= cost
    elided = len(history) - len(kept_history)
    if elided:
        kept_history.insert(0, {"role": "user", "content": OMITTED})
    messages = [{"role": "system", "content": system_message(kept)}, *kept_history,
                {"role": "user", "content": question}]
    return Plan(messages, kept, len(passages) - len(kept), elided, est.messages(messages))
