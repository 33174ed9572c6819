"""The case record: one question (in one mode and repeat) of a run, a line of cases.jsonl.

Typed, so a misspelt key is a type error; a plain dict at run time, so the JSON a run writes is the dict itself.
Tiers write the keys they have (retrieval, generation, app, position, an upstream file's cases); only `id` is
in every record ever written, so it is the one key a reader may index without asking (report/baseline.py checks
the rest of what compare reads).
"""

from __future__ import annotations

from typing import Any, Required, TypedDict


class Retrieved(TypedDict):
    """One retrieved chunk, in the order the pipeline returned them."""

    rank: int
    doc_id: str
    chunk_id: str
    score: float | None  # the raw similarity; None where the retriever gives none
    final_score: float  # after the pipeline's boosts and reranking: what the list is ordered by


class Case(TypedDict, total=False):
    id: Required[str]  # the golden's id
    tags: list[str]  # the golden's tags
    relevant_doc_ids: list[str]  # the documents that answer it (none for a refusal question)
    expect_refusal: bool  # the corpus cannot answer it
    grades: dict[str, int]  # graded relevance of each relevant document
    query: str  # the question as asked (the last turn of a conversation)
    retrieval_query: str  # what was searched for (rewritten, when the pipeline rewrites)
    expanded_query: str  # the search text after glossary expansion
    rewritten_query: str | None  # the rewrite, None when the question was searched as asked
    retrieved: list[Retrieved] | None  # None: the app exposed no document ids
    metrics: dict[str, float | None]  # every measure by its name; None is "not measured"
    upstream: dict[str, float | None]  # upstream NOMAD's values under the upstream view's names
    passed: bool | None  # None: not judged (a refusal question in retrieval, a pattern past its time limit)
    why: str | None  # a person-readable reason it failed
    mode: str  # generation: oracle, e2e or noretrieval; app: its one mode; retrieval: none
    repeat: int  # which repeat of the question
    injected: list[str]  # chunk ids of the passages put in the prompt, in prompt order
    answer: str  # the answer as scored
    raw_answer: str | None  # the model's text before cleaning, when it differs
    refused: bool  # the answer declines
    leaked: bool  # the answer narrates the retrieval ("according to the context")
    groundedness: float | None  # share of the answer's numbers found in its context; None: it states none
    unsupported_numbers: list[float] | None  # numbers the answer states and its context does not; None: no context
    prompt_tokens: int | None  # as the backend counted them
    estimated_prompt_tokens: int  # as the context budget planned them
    completion_tokens: int | None  # app: as the app counted them
    latency_ms: float | None  # app: its answer's latency
    answered_from: str  # app: "resumed" (kept by this run before it was interrupted) or "cache" (cache=true)
    elided_history: int  # conversation messages the budget left out
    dropped_chunks: int  # passages the budget left out
    attack: dict[str, Any]  # attack suites: the golden's attack (family, planted documents, success patterns)
    pass_rate: float | None  # the question's pass rate over its repeats
    unstable: bool  # the question's pass/fail flips between repeats
    cause: str | None  # the failure's cause label (core/causes.py), None when the question did not fail
    cause_evidence: str | None  # what the cause label stands on
    judges: dict[str, int | None]  # each rubric's verdict; None: unparseable
    judges_weighted: dict[str, float | None]  # graded rubrics: the probability-weighted score
    retrieved_but_ignored: bool  # the relevant passage was in the prompt and the answer was still wrong
    position: int  # position tier: where the relevant passage was placed
    relevant_chunk: str  # position tier: the relevant passage's chunk id
    answer_bearing: bool  # position tier: that passage holds the answer's patterns
    relevant_at: int | None  # position tier: where it sat after the budget (None: dropped)
    correctness: float | None  # position tier: the answer's correctness
