"""The config groups whose option a user may write (their own pipeline, model, store, app): each an open mapping,
kept whole since a `_target_` is instantiated with it, checked for the keys nomad-eval knows (`*Keys`: a key an
option lacks is not checked), and read through typed properties."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator

from nomad_eval.config.types import Bool, Count, Float, Keys, Seconds, Whole


class PipelineKeys(Keys):
    top_k: Count
    candidate_multiplier: Count
    min_final_score: Float
    chunk_size: Count
    chunk_overlap: Whole
    whole_document: Bool
    glossary: Bool
    rerank: Bool
    term_boost: Float
    keyword_boost: Float
    heading_boost: Float
    same_doc_penalty: Float
    history: Literal["query", "last_user", "rewrite"]  # rag/rewrite.py RULES
    history_turns: Count

    @model_validator(mode="after")
    def _overlap_below_size(self) -> PipelineKeys:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(f"pipeline.chunk_overlap={self.chunk_overlap} must be below "
                             f"pipeline.chunk_size={self.chunk_size}")
        return self


class EmbedderKeys(Keys):
    dim: Count
    max_input_tokens: Count
    batch_size: Count
    timeout: Seconds
    retries: Count  # tries per batch (embedder=ollama)
    max_response_bytes: Count


class BackendKeys(Keys):
    """A chat model's numbers, under `model` and under `judge.model`."""

    num_ctx: Count
    concurrency: Count
    threads: Count
    retries: Whole
    timeout: Seconds
    connect_timeout: Seconds
    max_response_bytes: Count


class ModelKeys(BackendKeys):
    """The model under test: model=smollm2's num_ctx is null, the context its GGUF file records."""

    num_ctx: Count | None  # type: ignore[assignment]


class AppKeys(Keys):
    """tier=app's HTTP client (app=http); app=answers has none of these."""

    timeout: Seconds
    connect_timeout: Seconds
    deadline: Seconds
    retries: Count  # tries per request
    concurrency: Count
    max_response_bytes: Count
    method: Literal["GET", "POST", "PUT", "get", "post", "put"]


class StoreKeys(Keys):
    lock_timeout: Annotated[float, Field(ge=0, allow_inf_nan=False, strict=True)]
    single_process: Bool | None
    timeout: Seconds


class Option(BaseModel):
    """A group's option as composed and resolved: the mapping its `_target_` is instantiated with."""

    model_config = ConfigDict(frozen=True)
    values: dict[str, JsonValue]

    def spec(self) -> dict[str, JsonValue]:
        """A copy to instantiate or record (the option itself stays as composed)."""
        return dict(self.values)

    def text(self, key: str) -> str | None:
        v = self.values.get(key)
        return None if v is None else str(v)


class Pipeline(Option):
    @property
    def target(self) -> str:
        return str(self.values["_target_"])

    @property
    def top_k(self) -> int | None:
        v = self.values.get("top_k")
        return None if v is None else int(str(v))

    @property
    def history(self) -> str | None:
        return self.text("history")


class Model(Option):
    @property
    def name(self) -> str:
        return str(self.values["name"])


class Store(Option):
    @property
    def lock_timeout(self) -> float:
        return float(str(self.values["lock_timeout"]))


class Data(Option):
    @property
    def kind(self) -> Literal["markdown", "beir"]:
        # Only BEIR is read differently: every other kind is a folder of Markdown.
        return "beir" if self.values["kind"] == "beir" else "markdown"

    @property
    def goldens_dir(self) -> Path:
        return Path(str(self.values["goldens_dir"]))


class Judge(BaseModel):
    model_config = ConfigDict(frozen=True)
    rubrics: tuple[str, ...]
    model: Model


class Mode(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")
    name: str
    modes: tuple[str, ...]
