"""The upstream view of a run: upstream NOMAD's metrics by its own definitions, from the case records.

A retrieval case record holds its values under `upstream` (names `upstream.recall@5`, ...), made from the chunks
it retrieved in rank order; the report holds their means (summed in order, as upstream sums them), intervals,
means per tag and upstream's score separation. Compare reads this view whenever one side is an upstream file
(`side`, `gated`), so both sides are measured by one definition. A generation case holds upstream's answer
scores under `upstream` too; the report holds their means per mode (report/upstream_answers.py). report.md
renders the view (report/markdown.upstream_markdown).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from nomad_eval.metrics.registry import MetricName
from nomad_eval.metrics.upstream.retrieval import K_VALUES, PREFIX, aggregate, case_values, metric_names
from nomad_eval.metrics.upstream.separation import advice, describe, split_scores
from nomad_eval.records import Case, by_name, hits, values
from nomad_eval.report.schema import MetricInterval, Report, UpstreamView

# Upstream's names for this project's headline measures (recall@k, ndcg@k, mrr@k, nonEmptyRateOnRefusal): the
# upstream view's default gate.
HEADLINE = ("recall@{k}", "ndcg@{k}", "mrr", "nonEmptyRateOnRefusal")


def view_ks(ks: Sequence[int]) -> list[int]:
    """Upstream's cut-offs (1, 3, 5, 10, measured past top_k as upstream does) and the run's own."""
    return sorted({*K_VALUES, *ks})


def case_view(case: Case, ks: Sequence[int]) -> dict[str, float | None]:
    """One case record's upstream values, from its retrieved chunks (`retrieved`: rank order)."""
    chunks: list[str | None] = [r.doc_id for r in sorted(hits(case), key=lambda r: r.rank)]
    return case_values(chunks, list(case.relevant_doc_ids), case.expect_refusal, ks)


def _raw_scores(case: Case) -> list[tuple[str | None, float]]:
    """(document, score) per retrieved chunk: the raw cosine where the pipeline kept it, else the final score,
    as upstream reads `semanticScore ?? score`."""
    return [(r.doc_id, r.score if r.score is not None else r.final_score) for r in hits(case)]


def as_view_cases(cases: Sequence[Case]) -> list[Case]:
    """The cases with their upstream values as their metrics, so questions and compare read the view."""
    return [c.model_copy(update={"metrics": dict(c.upstream or {})}) for c in cases]


def with_view_metrics(cases: Sequence[Case]) -> list[Case]:
    """The cases with their upstream values beside their own metrics (the view's names carry its prefix), so one
    summary of their questions gives both views' intervals from one resampling of the questions."""
    return [c.model_copy(update={"metrics": {**c.metrics, **(c.upstream or {})}}) for c in cases]


def retrieval_view(cases: Sequence[Case], ks: Sequence[int], intervals: Mapping[str, MetricInterval]
                   ) -> UpstreamView:
    """The report's upstream section from case records that hold `upstream` (see `case_view`); `intervals` holds
    the view's names (`metric_names(ks)`), summarised over the questions of `with_view_metrics(cases)`."""
    names = metric_names(ks)
    per_case = [by_name(c.upstream) for c in cases]
    tags = sorted({t for c in cases for t in c.tags})
    by_tag = {t: aggregate([v for c, v in zip(cases, per_case, strict=True) if t in c.tags], names) for t in tags}
    rel, irr = split_scores([(_raw_scores(c), list(c.relevant_doc_ids)) for c in cases])
    rel_d, irr_d = describe(rel), describe(irr)
    return UpstreamView(
        ks=list(ks), metrics=aggregate(per_case, names),
        intervals={n: intervals[n] for n in names if n in intervals},
        metrics_by_tag=by_tag, relevant_scores=rel_d, irrelevant_scores=irr_d, advice=advice(rel_d, irr_d),
    )


def view_metrics(report: Report, cases: Sequence[Case]) -> dict[str, float | None]:
    """A side's upstream means: the report's section, else (a run from before it existed) from its cases."""
    if report.upstream is not None:
        return dict(report.upstream.metrics)
    per_case = [by_name(c.upstream) for c in cases]
    return aggregate(per_case, list(dict.fromkeys(n for v in per_case for n in v)))


def with_view(cases: Sequence[Case], ks: Sequence[int]) -> list[Case]:
    """Cases that lack upstream values but kept their retrieved chunks get them (runs from before the view)."""
    return [c if c.upstream is not None or not hits(c)
            else c.model_copy(update={"upstream": values(case_view(c, ks))}) for c in cases]


def view_names(names: Sequence[str]) -> list[str]:
    """Only the upstream view's names: `compare.metrics` may name them, or this project's, in its own view."""
    return [n for n in names if (p := MetricName.try_parse(n)) is not None and p.mode == PREFIX.rstrip(".")]


def headline(k: int, held: Mapping[str, float | None]) -> list[str]:
    """The upstream view's default gate: upstream's names of this project's headline measures at cut-off k,
    those the baseline measured."""
    names = [PREFIX + form.format(k=k) for form in HEADLINE]
    return [n for n in names if held.get(n) is not None]


def side(report: Report, cases: Sequence[Case]) -> tuple[dict[str, float | None], list[Case]]:
    """One side of a compare in the upstream view: its means and its cases with the view's values as metrics.
    An upstream file is already in it; a run of ours from before the view is measured from its chunks."""
    ident = report.identity
    ks = [k for m in (ident.measures if ident else []) if (k := int(m.lstrip("@") or 0)) > 0]
    full = with_view(cases, view_ks(ks))
    return view_metrics(report, full), as_view_cases(full)


def gated(named: Sequence[str] | None, k: int, base_metrics: Mapping[str, float | None]) -> list[str]:
    """The upstream view's gate: `compare.metrics` (upstream.<name> names only), or `headline`."""
    from nomad_eval.base.errors import NomadError
    from nomad_eval.metrics.registry import spec_for

    if not any(v is not None for v in base_metrics.values()):
        raise NomadError("the baseline has no upstream view (promoted before the view existed, and its cases keep "
                         "no retrieved chunks to measure it from); the other side is an upstream NOMAD file, which "
                         "is only compared in that view: re-run the baseline's suite and promote that run", 2)
    if not named:
        return headline(k, base_metrics)

    wrong = [n for n in named if n not in view_names(named) or spec_for(n) is None]
    if wrong:
        raise NomadError(f"compare.metrics names {wrong}; one side is an upstream NOMAD file, so the compare is in "
                         f"upstream's own definitions: name upstream.<name> metrics, e.g. upstream.recall@5, "
                         "upstream.precision@3, upstream.mrr (docs/upstream-nomad.md)", 2)
    missing = [n for n in named if n not in base_metrics]
    if missing:
        raise NomadError(f"compare.metrics names {missing}, which the baseline's upstream view does not hold; it "
                         f"holds: {', '.join(sorted(base_metrics))}", 2)
    return list(named)
