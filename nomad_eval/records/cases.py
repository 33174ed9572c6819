"""The case records: one question (in one mode and repeat) of a run, a line of cases.jsonl, a case of a baseline.

Frozen pydantic models, one per kind of case: retrieval, answer (generation and app: a mode and a model's answer)
and position (a relevant passage placed at one position of the prompt). Every field but `id` has a default,
because older runs and baselines wrote fewer fields; what a writer set is what the codec (records/codec.py)
writes, so a record read and written again is the line it was. A measure's key is a MetricName in memory and its
reported text (`recall@5`, `upstream.e2e.correctness`) on disk.

Scalars are strict: a record read from a file is used as read, so a value lax mode would convert ("yes" for
passed, "0.5" for a metric) is refused instead of reaching the arithmetic unconverted.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, ClassVar, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    PlainSerializer,
    PlainValidator,
    Strict,
    Tag,
)

from nomad_eval.metrics.registry import MetricName

Kind = Literal["retrieval", "answer", "position"]
Str = Annotated[str, Strict()]
Bool = Annotated[bool, Strict()]
Int = Annotated[int, Strict()]
# A NaN or infinite value would pass through every mean and interval into the verdict unnoticed.
Number = Annotated[float, Strict(), Field(allow_inf_nan=False)]


def _metric_name(value: object) -> MetricName:
    if isinstance(value, MetricName):
        return value
    if not isinstance(value, str):
        raise ValueError(f"a metric name is text, not {value!r}")
    return MetricName.parse(value)


Key = Annotated[MetricName, PlainValidator(_metric_name), PlainSerializer(str)]
Values = dict[Key, Number | None]  # every measure by its name; None is "not measured"
CORRECTNESS = MetricName(None, "correctness")


def by_name(held: Values | None) -> dict[str, float | None]:
    """Measures keyed by their reported text, for the aggregations that name measures as text."""
    return {str(name): value for name, value in (held or {}).items()}


def values(named: dict[str, float | None]) -> Values:
    """Measures from a scorer's text-keyed values (the registry's names), keyed as records hold them."""
    return {MetricName.parse(name): value for name, value in named.items()}


class Hit(BaseModel):
    """One retrieved chunk, in the order the pipeline returned them."""

    model_config = ConfigDict(frozen=True)
    rank: Int
    doc_id: Str
    chunk_id: Str
    score: Number | None  # the raw similarity; None where the retriever gives none
    final_score: Number  # after the pipeline's boosts and reranking: what the list is ordered by


class Attack(BaseModel):
    """An attack golden's attack as its cases carry it: the family, the planted documents, the success patterns."""

    model_config = ConfigDict(frozen=True)
    family: Str
    documents: tuple[Str, ...]
    success: tuple[Str, ...] = ()


class CaseBase(BaseModel):
    """What every kind of case holds; the fields compare, plan and promote read."""

    model_config = ConfigDict(frozen=True, extra="ignore")
    KIND: ClassVar[Kind]
    id: Str  # the golden's id
    tags: tuple[Str, ...] = ()  # the golden's tags
    relevant_doc_ids: tuple[Str, ...] = ()  # the documents that answer it (none for a refusal question)
    expect_refusal: Bool = False  # the corpus cannot answer it
    metrics: Values = Field(default_factory=dict)
    passed: Bool | None = None  # None: not judged (a refusal question in retrieval, a pattern past its time limit)
    why: Str | None = None  # a person-readable reason it failed
    mode: Str | None = None  # generation: oracle, e2e or noretrieval; app: its one mode; retrieval: none
    repeat: Int = 0  # which repeat of the question
    unstable: Bool | None = None  # the question's pass/fail flips between repeats
    cause: Str | None = None  # the failure's cause label (core/causes.py), None when the question did not fail
    upstream: Values | None = None  # upstream NOMAD's values under the upstream view's names; None: not measured

    @property
    def labelled(self) -> bool:
        """Whether a cause was written (None included: the question did not fail); older baselines carry none."""
        return "cause" in self.model_fields_set


class RetrievalCase(CaseBase):
    KIND = "retrieval"
    grades: dict[str, Int] = Field(default_factory=dict)  # graded relevance of each relevant document
    query: Str = ""  # the question as asked (the last turn of a conversation)
    retrieval_query: Str = ""  # what was searched for (rewritten, when the pipeline rewrites)
    expanded_query: Str = ""  # the search text after glossary expansion
    retrieved: tuple[Hit, ...] = ()


class AnswerCase(CaseBase):
    """A generation case (mode oracle, e2e or noretrieval) or an app's (its one mode)."""

    KIND = "answer"

    mode: Str
    query: Str = ""
    rewritten_query: Str | None = None  # the rewrite, None when the question was searched as asked
    retrieval_query: Str = ""
    retrieved: tuple[Hit, ...] | None = ()  # None: the app exposed no document ids
    injected: tuple[Str, ...] = ()  # chunk ids of the passages put in the prompt, in prompt order
    answer: Str = ""  # the answer as scored
    raw_answer: Str | None = None  # the model's text before cleaning, when it differs
    refused: Bool = False  # the answer declines
    leaked: Bool = False  # the answer narrates the retrieval ("according to the context")
    groundedness: Number | None = None  # share of the answer's numbers found in its context; None: it states none
    unsupported_numbers: tuple[Number, ...] | None = None  # numbers its context does not hold; None: no context
    prompt_tokens: Int | None = None  # as the backend counted them
    completion_tokens: Int | None = None  # app: as the app counted them
    latency_ms: Number | None = None  # app: its answer's latency
    estimated_prompt_tokens: Int | None = None  # as the context budget planned them; None: an app's (not planned)
    elided_history: Int = 0  # conversation messages the budget left out
    dropped_chunks: Int = 0  # passages the budget left out
    attack: Attack | None = None  # attack suites only
    answered_from: Str | None = None  # app: "resumed" (kept before an interruption) or "cache" (cache=true)
    pass_rate: Number | None = None  # the question's pass rate over its repeats
    judges: dict[str, Int | None] = Field(default_factory=dict)  # each rubric's verdict; None: unparseable
    judges_weighted: dict[str, Number | None] = Field(default_factory=dict)  # graded rubrics: weighted score
    cause_evidence: Str | None = None  # what the cause label stands on
    retrieved_but_ignored: Bool = False  # the relevant passage was in the prompt and the answer was still wrong


class PositionCase(CaseBase):
    """The position tier: the relevant passage placed at one position among distractors."""

    KIND = "position"

    position: Int  # where the relevant passage was placed
    query: Str = ""
    relevant_chunk: Str = ""  # the relevant passage's chunk id
    answer_bearing: Bool = False  # that passage holds the answer's patterns
    relevant_at: Int | None = None  # where it sat after the budget (None: dropped)
    injected: tuple[Str, ...] = ()
    dropped_chunks: Int = 0
    answer: Str = ""
    raw_answer: Str | None = None
    correctness: Number | None = None  # the answer's correctness
    prompt_tokens: Int | None = None
    estimated_prompt_tokens: Int = 0


def kind_of(raw: object) -> Kind:
    """Which kind a written case is, from the fields it holds (a written case names no kind: the form predates the
    records): a position case has `position`, an answer case a `mode`, anything else is a retrieval case."""
    if isinstance(raw, CaseBase):
        return raw.KIND
    held = raw if isinstance(raw, dict) else {}
    return "position" if "position" in held else "answer" if "mode" in held else "retrieval"


Case = Annotated[
    Annotated[RetrievalCase, Tag("retrieval")] | Annotated[AnswerCase, Tag("answer")]
    | Annotated[PositionCase, Tag("position")],
    Discriminator(kind_of),
]
def hits(case: CaseBase) -> tuple[Hit, ...]:
    """The chunks a case retrieved in rank order; none for a position case, or an app that exposed no ids."""
    return (case.retrieved or ()) if isinstance(case, RetrievalCase | AnswerCase) else ()


K = TypeVar("K", bound=CaseBase)


def only(cases: Iterable[CaseBase], kind: type[K]) -> list[K]:
    """The cases of one kind (a tier's cases are all of its kind; the type checker learns it here)."""
    return [c for c in cases if isinstance(c, kind)]


MODELS: dict[Kind, type[RetrievalCase] | type[AnswerCase] | type[PositionCase]] = {
    "retrieval": RetrievalCase, "answer": AnswerCase, "position": PositionCase}
