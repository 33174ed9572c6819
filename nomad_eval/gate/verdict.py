"""A run judged against its baseline: refused when the two measured different things (exit 2); otherwise the two
sides (this project's measures, or upstream NOMAD's view of both), the goldens out of date left out, the
quarantine applied, and the question-by-question compare (gate/compare.py), with what changed between them.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping

from rich.markup import escape

from nomad_eval.base.console import console
from nomad_eval.base.errors import NomadError
from nomad_eval.core.noise import History
from nomad_eval.core.questions import Question, questions_from_cases
from nomad_eval.data.anchors import Evidence, reanchor_all
from nomad_eval.data.quarantine import Entry, expired, load_quarantine
from nomad_eval.gate.changes import corpus_changes, system_of
from nomad_eval.gate.compare import compare_questions
from nomad_eval.gate.history import question_history
from nomad_eval.gate.outcome import Verdict
from nomad_eval.gate.settings import CompareSettings
from nomad_eval.harness.system import differences
from nomad_eval.metrics.registry import Tier, headline_names, spec_for
from nomad_eval.records import Case
from nomad_eval.report import upstream_view as view
from nomad_eval.report.baseline import Baseline
from nomad_eval.report.schema import TASK_FIELDS, Report
from nomad_eval.report.upstream import is_upstream, upstream_differences, upstream_refusals


def task_differences(run: Report, base: Report) -> list[str]:
    """What the runs measured: differing here means their numbers are about different things (exit 2). The corpus,
    the goldens' contents and every setting may differ; compare names those instead."""
    if run.identity is None or base.identity is None:
        return ["one of the reports has no identity (a failed run?); re-run it"]
    if run.tier != base.tier:
        return [f"tier differs: run {run.tier}, baseline {base.tier}; compare with a baseline of the same tier"]
    a, b = run.identity.model_dump(), base.identity.model_dump()
    return [f"{k} differs: run {a.get(k)!r}, baseline {b.get(k)!r}; run with the baseline's {k}, or promote a "
            f"baseline for this task (nomad-eval tier=promote promote.run=<run dir>)"
            for k in TASK_FIELDS if a.get(k) != b.get(k)]


def gated_metrics(s: CompareSettings, run: Report, base: Report, cases: list[Case]) -> list[str]:
    """The declared set: `compare.metrics`, or the registry's headline measures that the baseline holds."""
    if s.metrics:
        names = list(s.metrics)
        unknown = [n for n in names if spec_for(n) is None]
        if unknown:
            raise NomadError(f"compare.metrics names unknown metric(s) {unknown}", 2)
        # A descriptive count (`returned`: how many chunks came back) has no better direction to regress in.
        descriptive = [n for n in names if not getattr(spec_for(n), "gated", True)]
        if descriptive:
            raise NomadError(f"compare.metrics names {descriptive}, descriptive and never gated "
                             "(docs/metrics.md); gate a measure instead, e.g. recall@5", 2)
        missing = [n for n in names if n not in base.metrics]
        if missing:
            raise NomadError(f"compare.metrics names {missing}, which the baseline does not hold; "
                             f"it holds: {', '.join(sorted(base.metrics))}", 2)
        return names
    modes = sorted({c.mode for c in cases if c.mode})
    tier: Tier = "generation" if run.tier == "generation" else "retrieval"
    return [n for n in headline_names(tier, s.headline_k, modes)
            if base.metrics.get(n) is not None]


def _goldens(report: Report) -> dict[str, str] | None:
    return dict(report.subject.goldens) if report.subject and report.subject.goldens else None


Side = tuple[dict[str, float | None], list[Case]]  # a side's means and case records


def _refusals(run: Report, cases: list[Case] | None, base: Baseline, upstream: bool) -> list[str]:
    """Why the two cannot be compared (exit 2), or nothing."""
    refused = upstream_refusals(run, base.report) if upstream else task_differences(run, base.report)
    if refused:
        return refused
    if not cases or not base.cases:
        side = "run" if not cases else "baseline"
        return [f"the {side} has no per-question records (cases.jsonl) to pair; re-run or re-promote it"]
    return []


def _sides(run: Report, cases: list[Case], base: Baseline, s: CompareSettings, upstream: bool
           ) -> tuple[Side, Side, list[str]]:
    """What each side is compared on, and the gated names: this project's measures, or (an upstream file on
    either side, or compare.view=upstream) the upstream view of both."""
    if not upstream:
        return (dict(run.metrics), cases), (dict(base.report.metrics), base.cases), gated_metrics(s, run, base.report,
                                                                                                  cases)
    if run.tier != "retrieval":
        raise NomadError(f"compare.view=upstream compares retrieval runs; this is a {run.tier} run (its upstream "
                         "figures are in its report.json and report.md), so compare it with compare.view=auto", 2)
    run_side, base_side = view.side(run, cases), view.side(base.report, base.cases)
    return run_side, base_side, view.gated(list(s.metrics) if s.metrics else None, s.headline_k, base_side[0])


def deterministic(report: Report) -> bool:
    """Answers deterministic by construction: the mock model's, or every answer replayed from the response cache
    (no model call). Retrieval has no answers that vary."""
    if report.tier != "generation":
        return True
    if (report.config or {}).get("app"):  # tier=app: the user's app answers, whatever model the config names
        return False
    counts = report.counts or {}
    model = (report.config or {}).get("model")
    mock = isinstance(model, dict) and str(model.get("_target_")).endswith(".MockModel")
    return mock or (counts.get("model_calls") == 0 and counts.get("cache_hits", 0) > 0)


ANCHORS_NOTE = ("the baseline has no evidence anchors (promoted before they existed): its goldens are anchored on "
                "the run's corpus instead; re-promote it to record them")


def evidence(run: Report, base: Report) -> tuple[dict[str, Evidence], list[str]]:
    """Each run golden's evidence status against the baseline's anchors, and the notes the output carries; none
    for a run that recorded no anchors (an older run, or an upstream file)."""
    if run.subject is None or not run.subject.anchors:
        return {}, []
    anchors = base.subject.anchors if base.subject is not None else {}
    found = reanchor_all(anchors or None, run.subject.anchors, base.subject.documents if base.subject else None,
                         run.subject.documents)
    notes = [] if anchors else [ANCHORS_NOTE]
    return found, notes + [e.message for e in found.values() if e.status == "ambiguous"]


def _stale_mode(s: CompareSettings) -> bool:
    """True when compare.stale=warn; a value other than fail or warn is refused."""
    mode = s.stale
    if mode not in ("fail", "warn"):
        raise NomadError(f"compare.stale={mode!r}: choose fail (a golden out of date exits 1) or warn", 2)
    return mode == "warn"


def _without(side: Side, goldens: dict[str, str] | None, ids: set[str]) -> tuple[Side, dict[str, str] | None]:
    """A side with the out-of-date goldens left out: their values answer a question the corpus no longer poses."""
    metrics, cases = side
    kept = {k: v for k, v in goldens.items() if k not in ids} if goldens is not None else None
    return (metrics, [c for c in cases if c.id not in ids]), kept


def _quarantine(s: CompareSettings) -> list[Entry]:
    """The project's quarantine (goldens/quarantine.yaml) in force today; an expired entry no longer holds."""
    if s.quarantine_dir is None:
        return []
    entries = load_quarantine(s.quarantine_dir)
    today = datetime.date.today()
    for e in expired(entries, today):
        console.print(f"[yellow]warning:[/] quarantine expired, gated again: {escape(e.text())}")
    return [e for e in entries if e.expires >= today]


def verdict_for(run: Report, cases: list[Case] | None, base: Baseline, s: CompareSettings) -> Verdict:
    # NOMAD's own file on either side: its fingerprint never equals ours (reported below), and both sides are
    # measured in the upstream view, by upstream's definitions (report/upstream_view.py); compare.view=upstream
    # asks for that view between two runs of ours.
    upstream = is_upstream(base.report) or is_upstream(run)
    refused = _refusals(run, cases, base, upstream)
    if refused or not cases:
        return Verdict(refused=refused)
    warn_stale = _stale_mode(s)
    run_side, base_side, gated = _sides(run, cases, base, s, upstream or s.view == "upstream")
    found, notes = ({}, []) if upstream else evidence(run, base.report)
    v = _compare(run, base, (run_side, base_side), gated, {e.id for e in found.values() if e.stale}, s)
    v.stale, v.stale_warn = [e.message for e in found.values() if e.stale], warn_stale
    v.evidence = {status: ids for status in ("gone", "relocated", "ambiguous", "moved", "unanchored")
                  if (ids := sorted(e.id for e in found.values() if e.status == status))}
    v.warnings += notes
    if not gated and not v.refused:
        v.refused.append("no gated metric: the baseline measured none of the headline measures; "
                         "name them with compare.metrics=[...]")
    v.differences = (upstream_differences(run, base.report, cases, base.cases) if upstream
                     else corpus_changes(base.report.subject, run.subject)
                     + differences(system_of(base.report), system_of(run)))
    return v


def _compare(run: Report, base: Baseline, sides: tuple[Side, Side], gated: list[str], stale: set[str],
             s: CompareSettings) -> Verdict:
    """The question-by-question compare of the two sides, the out-of-date goldens (`stale`) left out."""
    (run_metrics, run_cases), run_goldens = _without(sides[0], _goldens(run), stale)
    (base_metrics, base_cases), base_goldens = _without(sides[1], _goldens(base.report), stale)
    infra, infra_share = _infra(run)
    bq, rq = questions_from_cases(base_cases), questions_from_cases(run_cases)
    return compare_questions(
        bq, rq, gated,
        base_metrics=base_metrics, run_metrics=run_metrics,
        informational=_informational(base_metrics, run_metrics, gated),
        base_goldens=base_goldens, run_goldens=run_goldens,
        exclude_unstable=s.exclude_unstable, cluster=s.cluster, resamples=s.resamples, seed=s.seed,
        strict=s.strict, correlation=s.correlation, tolerance=s.tolerance,
        deterministic=deterministic(run) and deterministic(base.report),
        infra=infra, max_infra=s.max_infra, infra_share=infra_share, quarantined=_quarantined(s),
        history=_history(run, base, (bq, rq), s),
    )


def _history(run: Report, base: Baseline, sides: tuple[list[Question], list[Question]], s: CompareSettings
             ) -> History | None:
    """The earlier draws of the questions (compare.history), read only when some question was asked once on both
    sides of answers that may vary: the one case whose noise they measure."""
    once = [{q.key for q in side if q.repeats == 1} for side in sides]
    h = s.history
    if h is None or not once[0] & once[1] or (deterministic(run) and deterministic(base.report)):
        return None
    return question_history(h.roots, base, run, scan=h.scan, most=h.runs)


def _informational(base: Mapping[str, float | None], run: Mapping[str, float | None], gated: list[str]
                   ) -> list[str]:
    """The registry's measures compared and shown, not gated."""
    both = [n for n in base if n in run and n not in gated and spec_for(n)]
    # Measured on one side only (e.g. e2e retrieval metrics against an older generation baseline): "not measured".
    return both + [n for n in run if n not in base and n not in gated and spec_for(n)]


def _infra(run: Report) -> tuple[list[str], float]:
    """The run's questions with a call the infrastructure failed, and the share of its calls that did."""
    infra = run.answer_part().infra
    share = len(infra) / max(1, (run.counts or {}).get("calls_asked", 0) or len(infra))
    return [x.key for x in infra], share


def _quarantined(s: CompareSettings) -> Callable[[str], bool] | None:
    """Whether a question key is quarantined today; None when nothing is."""
    held = _quarantine(s)
    return (lambda key: any(e.covers(key) for e in held)) if held else None
