"""The context budget planner: what fits in the model's window, decided before the call.

Order of claims: a reserve for the answer, the system rules and the question, then a share of what is
left for passages (whole passages, best first), then history (whole messages, newest first) with a
marker where older ones were left out.

Layout (see `prompt`): [system rules] [history ...] [user: passage blocks, then the question]. Prompt tokens are
estimated, calibrated per model from the backend's real prompt token counts.
"""

from __future__ import annotations

from dataclasses import dataclass

from nomad_eval.rag.prompt import OMITTED, SEPARATOR, SYSTEM_RULES, Passage, format_passage, user_message

PER_MESSAGE = 4  # role markers and separators a chat template adds around each message


@dataclass(frozen=True)
class TokenEstimator:
    chars_per_token: float = 4.0

    def text(self, s: str) -> int:
        return int(len(s) / self.chars_per_token) + 1

    def messages(self, msgs: list[dict[str, str]]) -> int:
        return sum(self.text(m["content"]) + PER_MESSAGE for m in msgs) + 2


def calibrate(samples: list[tuple[list[dict[str, str]], int]]) -> TokenEstimator:
    """Fit chars-per-token on (messages, real prompt tokens) pairs, net of the template overhead."""
    chars = sum(sum(len(m["content"]) for m in msgs) for msgs, _ in samples)
    tokens = sum(real - PER_MESSAGE * len(msgs) - 2 for msgs, real in samples)
    if chars <= 0 or tokens <= 0:
        return TokenEstimator()
    return TokenEstimator(chars / tokens)


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
    # The question's message without passages carries the no-passages note instead, which is longer than
    # the separator it replaces: costing each block on its own on top of it never underestimates.
    base = est.messages([{"role": "system", "content": SYSTEM_RULES},
                         {"role": "user", "content": user_message(question, [])}])
    available = max(0, num_ctx - answer_reserve - base)
    chunk_budget = int(available * chunk_share)
    kept: list[Passage] = []
    used = 0
    for p in passages:
        cost = est.text(format_passage(p) + SEPARATOR)  # the block as sent, escaping and tags included
        if used + cost <= chunk_budget:
            kept.append(p)
            used += cost
    history_budget = available - used
    if sum(est.text(m["content"]) + PER_MESSAGE for m in history) > history_budget:
        history_budget -= est.text(OMITTED) + PER_MESSAGE  # something will be left out: room for the marker
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
    messages = [{"role": "system", "content": SYSTEM_RULES}, *kept_history,
                {"role": "user", "content": user_message(question, kept)}]
    return Plan(messages, kept, len(passages) - len(kept), elided, est.messages(messages))
