"""The chat model a tier answers with and how it answers: the token estimator fitted on probe prompts, each
golden's planned prompt, and the calls in the model's concurrency (generation, app and position share these)."""

from __future__ import annotations

from dataclasses import dataclass

from hydra.utils import instantiate

from nomad_eval.backends.chat import ChatModel, ChatOptions
from nomad_eval.backends.response_cache import CachedChat
from nomad_eval.base.console import map_in_order
from nomad_eval.base.errors import NomadError
from nomad_eval.config import RunConfig
from nomad_eval.config.tiers import AnswerTier
from nomad_eval.data.golden import Golden
from nomad_eval.harness.runtime import Runtime
from nomad_eval.rag.budget import Plan, TokenEstimator, calibrate, plan
from nomad_eval.rag.pipeline import Pipeline
from nomad_eval.rag.prompt import SYSTEM_RULES, Passage, strip_reasoning, user_message
from nomad_eval.run.generation_cases import repeat_options
from nomad_eval.run.queries import close_chat, open_model_chat


def calibrate_estimator(rt: Runtime, chat: CachedChat, options: ChatOptions) -> TokenEstimator:
    """Fit chars-per-token from a few fixed probe prompts (cached), so every run plans the same prompts."""
    titles = {d.doc_id: d.title for d in rt.documents}
    probes = [Passage(c.chunk_id, c.doc_id, titles.get(c.doc_id, c.doc_id), c.text) for c in rt.chunks[:8]]
    samples = []
    for n in (1, 3, len(probes)):
        # Laid out as the real prompts are: corpus text is never put in a system message, not even to count.
        msgs = [{"role": "system", "content": SYSTEM_RULES},
                {"role": "user", "content": user_message("Summarise.", probes[:n])}]
        real = chat.chat(msgs, ChatOptions(options.temperature, options.seed, 1), repeat=0).prompt_tokens
        if real:
            samples.append((msgs, real))
    return calibrate(samples) if samples else TokenEstimator()


def plan_prompt(g: Golden, passages: list[Passage], s: ChatSetup, config: RunConfig, est: TokenEstimator) -> Plan:
    return plan(g.final_query, g.history, passages, int(s.model.num_ctx), config.tier_of(AnswerTier).max_tokens,
                config.tier_of(AnswerTier).chunk_share, est)


def prompt_context(p: Plan) -> str:
    """What an answer may draw on, unescaped: the passages as written and the history (the messages between the
    rules and the final question-with-passages message)."""
    return "\n".join(f"{x.title}\n{x.text}" for x in p.passages) + "\n" + "\n".join(
        m["content"] for m in p.messages[1:-1])


def answer_plan(chat: CachedChat, p: Plan, options: ChatOptions, repeat: int) -> tuple[str, str, int | None]:
    result = chat.chat(p.messages, options, repeat)
    return result.text, strip_reasoning(result.text), result.prompt_tokens


@dataclass
class ChatSetup:
    """The chat model a tier answers with (behind its response cache), default options and the harness pipeline."""

    chat: CachedChat
    options: ChatOptions
    pipeline: Pipeline

    @property
    def model(self) -> ChatModel:
        return self.chat.model

    def close(self) -> None:
        close_chat(self.chat)


def open_chat(config: RunConfig, rt: Runtime, tier: str) -> ChatSetup:
    pipeline = instantiate(config.pipeline.spec())
    if not isinstance(pipeline, Pipeline):
        raise NomadError(f"the {tier} tier needs the harness pipeline (pipeline=default)", 2)
    asked = config.tier_of(AnswerTier)
    options = ChatOptions(asked.temperature, config.seed, asked.max_tokens)
    return ChatSetup(open_model_chat(config, rt.data_dir), options, pipeline)


def answer_all(s: ChatSetup, work: list[tuple[Plan, int]], label: str, quiet: bool
               ) -> list[tuple[str, str, int | None]]:
    """Each (plan, repeat) answered, in the model's concurrency, returned in the order of `work`."""
    def one(task: tuple[Plan, int]) -> tuple[str, str, int | None]:
        p, r = task
        return answer_plan(s.chat, p, repeat_options(s.options, r), r)

    return map_in_order(one, work, int(s.model.concurrency), label, quiet)


def answer_or_infra(s: ChatSetup, work: list[tuple[Plan, int]], label: str, quiet: bool
                    ) -> list[tuple[str, str, int | None] | str]:
    """answer_all, except that a call the infrastructure failed (a timeout, an unreachable server, an HTTP error,
    an answer still malformed after the backend's retries) is its reason instead of an answer: an infrastructure
    outcome, never scored as a failed answer nor a passed one (docs/gate.md#infrastructure-is-not-behaviour)."""
    def one(task: tuple[Plan, int]) -> tuple[str, str, int | None] | str:
        p, r = task
        try:
            return answer_plan(s.chat, p, repeat_options(s.options, r), r)
        except NomadError as exc:
            return str(exc) or type(exc).__name__

    return map_in_order(one, work, int(s.model.concurrency), label, quiet)
