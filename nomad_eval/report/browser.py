"""runs.html: one self-contained page over many runs: a table, filters, metric trends and a per-question diff.

Pure: run/runs_page.py finds and reads the report.json and cases.jsonl files and passes their parsed contents here,
the cases as records read by the codec. The page runs no library and fetches nothing: the trends are inline SVG
drawn by report/svg.py, one per metric, and the side-by-side is built by a small inline script from a JSON blob of
per-question data that every run carries (bounded, so hundreds of runs stay a page a browser opens at once).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypedDict

from markupsafe import Markup

import nomad_eval.metrics  # noqa: F401  (registers every metric, so the headline set is complete)
from nomad_eval.base.json_fields import fields, items, whole
from nomad_eval.metrics.registry import MetricName, headline_names, is_number
from nomad_eval.records import AnswerCase, Case, by_name, hits
from nomad_eval.report.html import render as render_page
from nomad_eval.report.markdown import fmt_value
from nomad_eval.report.schema import MetricInterval
from nomad_eval.report.svg import PALETTE, Chart, Series, render

MAX_CASES = 2000      # a run with more cases keeps its table row and trend points but no per-question data
MAX_CHARS = 300       # per embedded string (question, retrieved ids)
ANSWER_CHARS = 200    # of an answer
MAX_LINES = len(PALETTE)  # trend lines per chart: the most recent suite+fingerprint pairs
# Keys that say where things live or how loudly, not what was measured: left out of the "key overrides".
QUIET_KEYS = ("paths.", "hydra.", "quiet", "verbose", "cache", "resume",
              "tier", "suite")


class QuestionRow(TypedDict):
    """One question of a run as the side-by-side shows it (per mode and question for generation)."""

    k: str                    # the key runs are matched on: id, or mode:id
    id: str
    q: str
    shown: str                # the retrieved ids, or the answer
    out: str                  # the outcome
    hit: float | None
    rec: float | None


class TableRow(TypedDict):
    """What the runs table shows of one run, as text."""

    suite: str
    tier: str
    model: str
    folder: str
    stamp: str
    fingerprint: str
    overrides: list[str]
    status: str
    verdict: str
    headline: list[str]
    error: str
    link: str
    label: str


@dataclass
class RunEntry:
    link: str                 # the run's report.html, relative to the page ("" when the run wrote none)
    folder: str               # the run's folder as shown
    time: float               # seconds since the epoch: when the run was created
    tier: str
    suite: str
    fingerprint: str
    model: str
    status: str
    error: str
    overrides: list[str]
    metrics: dict[str, float | None]
    intervals: dict[str, MetricInterval]
    headline: list[str]
    questions: list[QuestionRow] | None = None
    why_no_questions: str = ""
    verdict: str = ""          # the gate's verdict line, when the run recorded one
    commit: str = ""           # the project's commit the run measured (else the tool's checkout), "" for none


def _when(report: Mapping[str, object], mtime: float) -> float:
    created = fields(report.get("provenance")).get("created")
    try:
        return datetime.fromisoformat(str(created)).timestamp() if created else mtime
    except ValueError:
        return mtime


def _intervals(raw: object) -> dict[str, MetricInterval]:
    out: dict[str, MetricInterval] = {}
    for name, iv in raw.items() if isinstance(raw, dict) else ():
        try:
            out[str(name)] = MetricInterval.model_validate(iv)
        except ValueError:  # an older or hand-edited report: the value still shows, without its interval
            continue
    return out


def headline_k(report: Mapping[str, object]) -> int:
    """Like schema.headline_k, on the raw dict: the gate's cutoff where the run measured it."""
    k = whole(fields(fields(report.get("config")).get("compare")).get("headline_k") or 5)
    names = [p for n in fields(report.get("metrics")) if (p := MetricName.try_parse(str(n)))]
    ks = sorted({p.k for p in names if p.k is not None and p.mode is None})
    return k if k in ks or not ks else max(ks)


def run_entry(report: Mapping[str, object], link: str, folder: str, mtime: float) -> RunEntry:
    ident = fields(report.get("identity"))
    config = fields(report.get("config"))
    tier = str(report.get("tier") or "?")
    metrics = {str(k): (float(v) if is_number(v) else None) for k, v in fields(report.get("metrics")).items()}
    if tier == "generation":
        modes = list(dict.fromkeys(p.mode for n in metrics if (p := MetricName.try_parse(n)) and p.mode))
        names = headline_names("generation", headline_k(report), modes)
    elif tier == "retrieval":
        names = headline_names("retrieval", headline_k(report))
    else:
        names = []
    return RunEntry(
        link=link, folder=folder, time=_when(report, mtime), tier=tier,
        suite=str(ident.get("suite") or config.get("suite") or "?"),
        fingerprint=str(ident.get("fingerprint") or "—"), model=_model(ident, config, tier),
        status=str(report.get("status") or "?"), error=str(report.get("error") or ""),
        overrides=_overrides(report), metrics=metrics, intervals=_intervals(report.get("intervals")),
        headline=[n for n in names if n in metrics], verdict=_verdict(report.get("gate")), commit=_commit(report))


def _commit(report: Mapping[str, object]) -> str:
    prov = report.get("provenance")
    commit = prov.get("project_commit") or prov.get("git_commit") if isinstance(prov, dict) else None
    return str(commit)[:7] if commit else ""


def _model(ident: Mapping[str, object], config: Mapping[str, object], tier: str) -> str:
    """The model a run answered with: its identity's, else (generation) its config's; "—" for none."""
    model = ident.get("model") or (fields(config.get("model")).get("name") if tier == "generation" else None)
    return str(model or "—")


def _overrides(report: Mapping[str, object]) -> list[str]:
    return [str(o) for o in items(report.get("overrides")) if not str(o).startswith(QUIET_KEYS)]


def _verdict(gate: object) -> str:
    if not isinstance(gate, dict) or not gate.get("verdict"):
        return ""
    return str(gate["verdict"]) + ("" if gate["verdict"] == "pass" else f": {gate.get('cause') or ''}")


def _cut(v: Any, n: int = MAX_CHARS) -> str:
    s = "" if v is None else str(v)
    return s if len(s) <= n else s[: n - 1] + "…"


def _num(v: Any) -> float | None:
    return float(v) if is_number(v) else None


def questions(cases: Sequence[Case], tier: str, k: int = 5) -> list[QuestionRow] | None:
    """Per question (per mode and question for generation, repeats together): what the run retrieved or answered
    and its outcome. Retrieval outcomes carry hit@k and recall@k, so a change in either is a change of outcome."""
    if tier not in ("retrieval", "generation"):
        return None
    grouped: dict[str, list[Case]] = {}
    for c in cases:
        key = c.id if tier == "retrieval" else f"{c.mode}:{c.id}"
        grouped.setdefault(key, []).append(c)
    return [_question_row(key, group, tier, k) for key, group in grouped.items()]


def _question_row(key: str, group: list[Case], tier: str, k: int) -> QuestionRow:
    first = group[0]
    docs = [h.doc_id for h in hits(first)]
    passed = sum(1 for c in group if c.passed is True)
    if tier == "retrieval":
        m = by_name(first.metrics)
        shown, out = _cut(", ".join(docs[:k]) or "(nothing retrieved)"), _retrieval_outcome(first, passed)
        hit, rec = _num(m.get(f"hit@{k}")), _num(m.get(f"recall@{k}"))
    else:
        # An older case that wrote no answer shows as none, not as an empty one.
        answer = first.answer if isinstance(first, AnswerCase) and "answer" in first.model_fields_set else None
        shown = _cut(answer, ANSWER_CHARS) if answer is not None else "(no answer)"
        out = "pass" if passed == len(group) else "fail" if passed == 0 else f"mixed {passed}/{len(group)}"
        hit, rec = None, None
    return QuestionRow(k=_cut(key), id=_cut(first.id), q=_cut(first.query), shown=shown, out=out, hit=hit, rec=rec)


def _retrieval_outcome(case: Case, passed: int) -> str:
    """A refusal question has no relevant document to find (its `passed` is null): its outcome is whether the
    store returned anything, so a refusal that starts retrieving shows as changed."""
    if case.expect_refusal:
        return "refusal: retrieved" if hits(case) else "refusal: nothing retrieved"
    return "pass" if passed else "fail"


def trend_metrics(runs: Sequence[RunEntry]) -> list[str]:
    """Every headline metric some run measured, in the order runs first name them (retrieval ones first)."""
    names: dict[str, None] = {}
    for r in sorted(runs, key=lambda r: r.tier != "retrieval"):
        for n in r.headline:
            if r.metrics.get(n) is not None:
                names.setdefault(n, None)
    # Recall first: the page opens on the measure most people look for.
    return sorted(names, key=lambda n: not n.startswith("recall@"))


def _when_and_commit(r: RunEntry) -> str:
    """A run on the trend's x axis: its date and time, and the commit it measured."""
    return datetime.fromtimestamp(r.time, UTC).strftime("%Y-%m-%d %H:%M") + (f" {r.commit}" if r.commit else "")


def trend(runs: Sequence[RunEntry], metric: str) -> Chart:
    """`metric` run by run, in time order, each run named by its date and commit on the x axis; one line per
    suite and corpus state (fingerprint), named by the suite and when that state was first measured, with each
    run's interval as an error bar. The points of one line sit together in `x`, so another line's runs in between
    never break it."""
    points = sorted((r for r in runs if r.metrics.get(metric) is not None), key=lambda r: r.time)
    groups: dict[tuple[str, str], list[RunEntry]] = {}
    for r in points:
        groups.setdefault((r.suite, r.fingerprint), []).append(r)
    recent = sorted(groups, key=lambda g: groups[g][-1].time, reverse=True)[:MAX_LINES]
    x: list[str] = []
    series: list[Series] = []
    for suite, fp in recent:
        members = groups[(suite, fp)]
        before = len(x)
        x += [_when_and_commit(r) for r in members]
        pad: list[float | None] = [None] * before
        ivs = [r.intervals.get(metric) for r in members]
        series.append(Series(
            name=f"{suite} · corpus and settings as of {_when_and_commit(members[0])}", kind="line",
            y=pad + [r.metrics[metric] for r in members],
            low=pad + [iv.low if iv else None for iv in ivs],
            high=pad + [iv.high if iv else None for iv in ivs],
            hover=[""] * before + [f"{r.folder} · {_stamp(r.time)}" for r in members]))
    for s in series:  # every series spans all of x: pad the tail after its own block
        tail = len(x) - len(s.y)
        s.y = [*s.y, *[None] * tail]
        s.low = [*(s.low or []), *[None] * tail]
        s.high = [*(s.high or []), *[None] * tail]
        s.hover = [*(s.hover or []), *[""] * tail]
    title = f"{metric} over time ({len(points)} runs)"
    return Chart(title=title, x=x, series=series, y_title=metric, x_title="run (UTC date and time, commit)")


def _stamp(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _row(i: int, r: RunEntry) -> TableRow:
    """What the runs table shows of one run, as text: the template escapes every value."""
    stamp = _stamp(r.time)
    return TableRow(suite=r.suite, tier=r.tier, model=r.model, folder=r.folder, stamp=stamp,
                    fingerprint=r.fingerprint, overrides=r.overrides, status=r.status, verdict=_cut(r.verdict),
                    headline=[f"{n} {fmt_value(r.metrics.get(n), r.intervals.get(n))}" for n in r.headline],
                    error=_cut(r.error), link=r.link, label=f"#{i} {stamp} · {r.tier} · {r.suite} · {r.folder}")


def build_page(runs: Sequence[RunEntry], title: str = "nomad-eval runs", note: str = "") -> str:
    """The whole page; `runs` most recent first (their index is the row number and the side-by-side's value)."""
    metrics = trend_metrics(runs)
    rows = [_row(i, r) for i, r in enumerate(runs)]
    suites, tiers, models = (sorted({getattr(r, a) for r in runs}) for a in ("suite", "tier", "model"))
    # The per-question data every run carries, read by the side-by-side's script (templates/browser.html).
    data = [{"label": row["label"], "q": r.questions, "why": r.why_no_questions}
            for row, r in zip(rows, runs, strict=True)]
    return render_page("browser.html", title=title, meta=note, rows=rows, suites=suites, tiers=tiers, models=models,
                       metrics=metrics, data=data,
                       charts=[Markup(render(trend(runs, m), f"trend-{j}")) for j, m in enumerate(metrics)])
