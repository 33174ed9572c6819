"""One judgement: a rubric (judging.rubrics_dir/<name>.yaml), a question, the injected passages, an answer -> a
verdict or None, never a guess."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, replace
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from nomad_eval.backends.chat import ChatOptions, ChatResult, TokenLogprob
from nomad_eval.backends.response_cache import CachedChat
from nomad_eval.base.atomic import JsonValue
from nomad_eval.base.errors import Defect, InvalidInput, RequestRejected, first_error
from nomad_eval.rag.prompt import SEPARATOR, block

_OBJECT = re.compile(r"\{.*\}", re.DOTALL)
_VERDICT_VALUE = re.compile(r'"verdict"\s*:\s*(\d+)')
# Alternatives asked for at each generated token. A graded verdict needs only its scale's digits, which sit
# near the top at the verdict position (SmolLM2 puts them in its top 3); ten leaves room for a model that
# spreads mass over quotes and spaces the grammar then forbids.
TOP_LOGPROBS = 10


class Rubric(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    version: int
    scale: list[int]
    instructions: str

    @property
    def key(self) -> str:
        return f"{self.name}-v{self.version}"

    def verdict_schema(self) -> dict[str, JsonValue]:
        return {"type": "object", "properties": {"verdict": {"type": "integer", "enum": self.scale},
                                                 "reason": {"type": "string"}},
                "required": ["verdict", "reason"]}


def load_rubric(folder: Path, name: str) -> Rubric:
    path = folder / f"{name}.yaml"
    if not path.is_file():
        raise InvalidInput([Defect(str(path), None, f"no rubric named {name!r}")])
    try:
        return Rubric.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
    except ValidationError as exc:
        raise InvalidInput([Defect(str(path), None, first_error(exc))]) from None


@dataclass(frozen=True)
class Judgement:
    verdict: int | None       # None: unparseable after the bounded retries
    reason: str = ""
    attempts: int = 1
    by_rule: bool = False     # decided by a rule (a refusal is faithful), not sent to the judge
    rejected: bool = False    # the judge's server refused the request (e.g. longer than its context)
    # Graded rubrics, where the backend gives token probabilities: the mean of the scale weighted by the
    # judge's probability of each value at the verdict token. None when there are none to weigh.
    score_weighted: float | None = None


def wants_weights(rubric: Rubric) -> bool:
    """A graded scale (0/1/2) has a mean between its values worth reporting; a pass/fail one does not."""
    return len(rubric.scale) > 2


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


def weighted_score(logprobs: tuple[TokenLogprob, ...], verdict: int, scale: list[int]) -> float | None:
    """The scale's mean weighted by the probabilities at the token that wrote `verdict` after "verdict":.

    The probabilities are renormalised over the scale's tokens: the JSON schema allows nothing else there,
    while a backend may report the distribution before that constraint (llama.cpp does). A value missing
    from the alternatives counts as probability 0. None when the digit shares its token with other text, so
    the alternatives at that position are not alternative verdicts (or a value needs several tokens).
    """
    tokens = [t.token for t in logprobs]
    text = "".join(tokens)
    ends = []
    total = 0
    for tok in tokens:
        total += len(tok)
        ends.append(total)
    values = {str(v): v for v in scale}
    for match in _VERDICT_VALUE.finditer(text):
        if int(match.group(1)) != verdict:
            continue
        at = next(i for i, end in enumerate(ends) if end > match.start(1))
        chosen = logprobs[at]
        if chosen.token.strip() != match.group(1):
            return None
        # The generated token itself is a candidate even when a grammar forced it from outside the top k.
        seen = dict(chosen.top)
        seen.setdefault(chosen.token, chosen.logprob)
        mass: dict[int, float] = {}
        for tok, lp in seen.items():
            value = values.get(tok.strip())
            if value is not None:
                mass[value] = mass.get(value, 0.0) + math.exp(lp)
        norm = sum(mass.values())
        return sum(v * p for v, p in mass.items()) / norm if norm > 0 else None
    return None


def _ask(chat: CachedChat, msgs: list[dict[str, str]], opts: ChatOptions, repeat: int) -> ChatResult:
    try:
        return chat.chat(msgs, opts, repeat)
    except RequestRejected:
        if not opts.top_logprobs:
            raise
        # Some servers refuse the logprobs parameters themselves (OpenAI's reasoning models do): the verdict
        # must not depend on them, so ask once more without.
        return chat.chat(msgs, replace(opts, top_logprobs=0), repeat)


def judge(chat: CachedChat, rubric: Rubric, question: str, passages: list[str], answer: str, seed: int = 0,
          retries: int = 2, max_tokens: int = 160, repeat: int = 0) -> Judgement:
    msgs = judge_messages(rubric, question, passages, answer)
    top = TOP_LOGPROBS if wants_weights(rubric) else 0
    for attempt in range(retries + 1):
        # A retry changes the seed: at temperature 0 the same request would give the same bad output.
        opts = ChatOptions(0.0, seed + 1000 * attempt, max_tokens, rubric.verdict_schema(), top)
        try:
            result = _ask(chat, msgs, opts, repeat)
        except RequestRejected as exc:
            # The same request would be refused again; one example without a verdict must not cost the run.
            return Judgement(None, str(exc), attempt + 1, rejected=True)
        verdict, reason = parse_verdict(result.text, rubric.scale)
        if verdict is not None:
            weighted = weighted_score(result.logprobs, verdict, rubric.scale) if result.logprobs else None
            return Judgement(verdict, reason, attempt + 1, score_weighted=weighted)
    return Judgement(None, "", retries + 1)
