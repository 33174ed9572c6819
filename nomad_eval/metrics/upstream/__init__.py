"""The upstream view: upstream NOMAD's metrics computed by its own definitions, under its own names.

Reported as `upstream.<name>` beside (never instead of) this project's measures, and used whenever one side of a
comparison is an upstream file. docs/upstream-nomad.md says, per name, how the two definitions differ.
"""

from __future__ import annotations

from nomad_eval.metrics.registry import UPSTREAM, MetricSpec

_RETRIEVAL = (
    MetricSpec("recall", "relevant documents among the first k chunks, over the relevant documents",
               parametrized=True, level="chunk", headline=True),
    MetricSpec("hitRate", "1 when any of the first k chunks is from a relevant document", parametrized=True,
               level="chunk", binary=True),
    MetricSpec("precision", "relevant chunks among the first k chunks, over min(k, chunks returned); 0 when "
               "nothing came back", parametrized=True, level="chunk"),
    MetricSpec("ndcg", "binary-gain nDCG over the first k distinct documents", parametrized=True,
               level="document", headline=True),
    MetricSpec("mrr", "1 / rank of the first relevant chunk, no cut-off", level="chunk", headline=True),
    MetricSpec("emptyRateOnAnswerable", "answerable questions that retrieved nothing", direction="lower",
               binary=True),
    MetricSpec("nonEmptyRateOnRefusal", "refusal questions that retrieved something", direction="lower",
               binary=True, headline=True),
)
_GENERATION = (
    MetricSpec("correctness", "every mustInclude matched and no mustNotInclude did, over every question",
               tier="generation", binary=True, headline=True),
    MetricSpec("refusalCorrectness", "refused a refusal question, or answered an answerable one",
               tier="generation", binary=True, headline=True),
    MetricSpec("leakageRate", "answers matching upstream's leakage patterns", direction="lower",
               tier="generation", binary=True),
    MetricSpec("thinkTagLeakRate", "answers holding a reasoning tag", direction="lower", tier="generation",
               binary=True),
    MetricSpec("markdownRate", "answers with upstream's loose markdown", tier="generation", binary=True),
)
for _spec in [*_RETRIEVAL, *_GENERATION]:
    UPSTREAM.setdefault(_spec.family, _spec)
