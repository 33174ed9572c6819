"""Each golden's retrieval query under the pipeline's history rule, formed the same way in every tier."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hydra.utils import instantiate

from nomad_eval.backends.chat import ChatModel, ChatOptions, Message
from nomad_eval.backends.response_cache import CachedChat, ResponseCache
from nomad_eval.config import RunConfig
from nomad_eval.data.golden import Golden
from nomad_eval.harness.runtime import Runtime
from nomad_eval.rag.pipeline import Pipeline
from nomad_eval.rag.rewrite import FormedQuery, form_query


def needs_chat(goldens: list[Golden], pipeline: Pipeline) -> bool:
    return pipeline.history == "rewrite" and any(g.turns for g in goldens)


def formed_queries(goldens: list[Golden], pipeline: Pipeline, chat: CachedChat | None, seed: int
                   ) -> list[FormedQuery]:
    """One per golden. A rewrite is asked at temperature 0 with the same options in every tier, so the retrieval
    and generation tiers search for the same text (and share its cached answer)."""
    options = ChatOptions(temperature=0.0, seed=seed)

    def ask(messages: list[Message]) -> str:
        assert chat is not None  # needs_chat said so
        return chat.chat(messages, options, repeat=0).text

    return [form_query(g.final_query, g.history, pipeline.history, pipeline.history_turns,
                       ask if chat is not None else None) for g in goldens]


def open_model_chat(config: RunConfig, data_dir: Path) -> CachedChat:
    """The configured chat model behind the response cache (cache=true); close it with `close_chat`."""
    model: ChatModel = instantiate(config.model.spec())
    model.preflight()  # a dead server fails here, in seconds, before any other work
    return CachedChat(model, ResponseCache(data_dir / "responses.sqlite") if config.cache is not False else None,
                      under_test=True)


def close_chat(chat: CachedChat) -> None:
    if chat.cache is not None:
        chat.cache.close()
    chat.model.close()


@contextmanager
def rewrite_chat(config: RunConfig, rt: Runtime, needed: bool) -> Iterator[CachedChat | None]:
    """The chat model for a tier that has none of its own; None when the history rule asks nothing of a model."""
    if not needed:
        yield None
        return
    chat = open_model_chat(config, rt.data_dir)
    try:
        yield chat
    finally:
        close_chat(chat)
