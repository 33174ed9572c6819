"""A generation run's upstream view: upstream NOMAD's answer scores (metrics/upstream/generation.py) per mode, with
intervals over questions, from each case's `upstream` values. Apart from the retrieval view (upstream_view.py), so a
retrieval run does not import upstream's answer scoring."""

from __future__ import annotations

from collections.abc import Sequence

from nomad_eval.core.questions import questions_from_cases
from nomad_eval.metrics.upstream.generation import UPSTREAM_CASE_NAMES
from nomad_eval.metrics.upstream.generation import aggregate as answer_means
from nomad_eval.metrics.upstream.retrieval import PREFIX
from nomad_eval.records import Case, by_name
from nomad_eval.report.intervals import Bootstrap, summarize_report
from nomad_eval.report.schema import UpstreamView


def generation_view(cases: Sequence[Case], boot: Bootstrap) -> UpstreamView:
    """A generation run's upstream section: per mode, upstream's correctness, refusalCorrectness and detector
    rates (`upstream.<mode>.<name>`) from each case's `upstream` values, with intervals over questions."""
    scored = [c for c in cases if c.upstream]
    modes = list(dict.fromkeys(str(c.mode) for c in scored))
    metrics: dict[str, float | None] = {}
    for mode in modes:
        means = answer_means([(c.id, by_name(c.upstream)) for c in scored if c.mode == mode])
        metrics |= {f"{PREFIX}{mode}.{n}": v for n, v in means.items()}
    # Questions keyed `upstream.<mode>:<id>`, so their values carry the view's names.
    as_view: list[Case] = [c.model_copy(update={"mode": f"{PREFIX}{c.mode}", "metrics": c.upstream}) for c in scored]
    names = [f"{PREFIX}{m}.{n}" for m in modes for n in UPSTREAM_CASE_NAMES]
    return UpstreamView(metrics=metrics, intervals=summarize_report(questions_from_cases(as_view), names, boot)[1])
