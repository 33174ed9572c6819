"""The tier's own section (`tier/<name>.yaml`): one model per kind of tier, chosen by `tier.name`. A tier the
package does not ship (a project's own) is a Tier with its name and target."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import ConfigDict, Discriminator, Field, Tag

from nomad_eval.config.types import Bool, Count, Int, Keys, Share, Text, Whole


class Tier(Keys):
    name: Text
    target: Text = Field(alias="_target_")


class RetrievalTier(Tier):
    ks: Annotated[list[Int], Field(min_length=1)]  # values: ks_rule, with pipeline.top_k


class AnswerTier(Tier):
    """generation and matrix: how an answer is asked for."""

    temperature: Annotated[float, Field(ge=0.0, allow_inf_nan=False, strict=True)]
    max_tokens: Count
    chunk_share: Annotated[float, Field(gt=0.0, le=1.0, allow_inf_nan=False, strict=True)]


class PositionTier(AnswerTier):
    passages: Count  # N; its positions are checked against it by the tier
    positions: list[Count] | None


class SynthesizeTier(Tier):
    questions: Whole  # drafts of each kind
    follow_ups: Whole
    refusals: Whole
    out: Text | None
    temperature: Annotated[float, Field(ge=0.0, allow_inf_nan=False, strict=True)]
    max_tokens: Count
    max_doc_share: Share
    max_overlap: Annotated[float, Field(gt=0.0, le=1.0, allow_inf_nan=False, strict=True)]


class CorpusTier(Tier):
    reset: Text
    fail_unsourced: Bool  # action=lint
    review_file: Text
    accept: Bool  # action=review


class LabelsTier(Tier):
    run: Text | None
    rubric: Text | None
    mode: Text | None
    sample: Count
    out: Text | None


class OwnTier(Tier):
    """A tier with no model of its own (a project's tier, or a shipped one whose settings live elsewhere): its
    YAML's keys are kept as written, for the tier's own module to read."""

    model_config = ConfigDict(extra="allow", frozen=True)


# tier.name -> its model; any other name is an OwnTier.
KINDS: dict[str, type[Tier]] = {
    "retrieval": RetrievalTier, "generation": AnswerTier, "matrix": AnswerTier, "position": PositionTier,
    "synthesize": SynthesizeTier, "corpus": CorpusTier, "labels": LabelsTier,
}


def _kind(node: Any) -> str:
    name = node.get("name") if isinstance(node, dict) else getattr(node, "name", None)
    return KINDS[name].__name__ if isinstance(name, str) and name in KINDS else OwnTier.__name__


AnyTier = Annotated[
    Annotated[RetrievalTier, Tag("RetrievalTier")] | Annotated[PositionTier, Tag("PositionTier")]
    | Annotated[AnswerTier, Tag("AnswerTier")] | Annotated[SynthesizeTier, Tag("SynthesizeTier")]
    | Annotated[CorpusTier, Tag("CorpusTier")] | Annotated[LabelsTier, Tag("LabelsTier")]
    | Annotated[OwnTier, Tag("OwnTier")],
    Discriminator(_kind),
]
