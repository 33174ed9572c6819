"""One judgement: a rubric, a question, the injected passages, an answer -> a verdict or None, never a guess."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from nomad_eval.backends.cached_chat import CachedChat
from nomad_eval.backends.chat import ChatOptions
from nomad_eval.base.errors import RequestRejected
from nomad_eval.judges.rubric import Rubric
from nomad_eval.rag.prompt import SEPARATOR, block

_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


@dataclass(frozen=True)
class Judgement:
    verdict: int | None       # None: unparseable after the bounded retries
    reason: str = ""
    attempts: int = 1
    by_rule: bool = False     # decided by a rule (a refusal is faithful), not sent to the judge
    rejected: bool = False    # the judge's server refused the request (e.g. longer than its context)


def judge_messages(rubric: Rubric, question: str, passages: list[str], answer: str) -> list[dict[str, str]]:
    """The rubric as the system message; the material as escaped blocks in the user message.

    All three are untrusted: the answer is model output and may say "Verdict: 1" or close its own block,
    the passages are corpus text and the question is the golden's. Escaped, none of them can end its block
    or add one, so the reply format after the last block is the only instruction the user message carries.
    """
    body = SEPARATOR.join(block("passage", p) for p in passages) or "(no passages)"
    allowed = ", ".join(str(s) for s in rubric.scale)
    material = SEPARATOR.join([block("question", question), body, block("answer", answer)])
    return [
        {"role": "system", "content": rubric.instructions.strip()},
        {"role": "user", "content": f"{material}{SEPARATOR}"
                                    'Reply with JSON only: {"verdict": <one of ' + allowed
                                    + '>, "reason": "<one sentence>"}'},
    ]


def parse_verdict(text: str, scale: list[int]) -> tuple[int | None, str]:
    match = _OBJECT.search(text)
    if not match:
        return None, ""
    try:
        obj = json.loads(match.group(0))
    except json.JSONDecodeError:
        return None, ""
    v = obj.get("verdict") if isinstance(obj, dict) else None
    if isinstance(v, bool) or not isinstance(v, int | float) or int(v) != v or int(v) not in scale:
        return None, ""
    return int(v), str(obj.get("reason", ""))


def judge(chat: CachedChat, rubric: Rubric, question: str, passages: list[str], answer: str, seed: int = 0,
          retries: int = 2, max_tokens: int = 160, repeat: int = 0) -> Judgement:
    msgs = judge_messages(rubric, question, passages, answer)
    for attempt in range(retries + 1):
        # A retry changes the seed: at temperature 0 the same request would give the same bad output.
        opts = ChatOptions(0.0, seed + 1000 * attempt, max_tokens, rubric.verdict_schema())
        try:
            text = chat.chat(msgs, opts, repeat).text
        except RequestRejected as exc:
            # The same request would be refused again; one example without a verdict must not cost the run.
            return Judgement(None, str(exc), attempt + 1, rejected=True)
        verdict, reason = parse_verdict(text, rubric.scale)
        if verdict is not None:
            return Judgement(verdict, reason, attempt + 1)
    return Judgement(None, "", retries + 1)
