"""Rich tables on the console: the headline numbers, separation, and misses when asked."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table

from nomad_eval.base.console import console
from nomad_eval.judges.calibration import status_line
from nomad_eval.metrics.registry import MetricName, at_k_families, headline_names
from nomad_eval.records import Case, RetrievalCase, only
from nomad_eval.report.details import AnswerDetails
from nomad_eval.report.judge_corrected import corrected_lines, judge_lines
from nomad_eval.report.markdown import bounds, fmt, fmt_interval, fmt_n, position_summary, size_text
from nomad_eval.report.schema import Report, headline_k


def print_retrieval(r: Report, cases: Sequence[Case], verbose: bool, quiet: bool, run_dir: Path) -> None:
    if quiet:
        return
    _print_cutoffs(r)
    ref = r.intervals.get("nonEmptyRateOnRefusal")
    console.print(f"nonEmptyRateOnRefusal: {fmt(r.metrics.get('nonEmptyRateOnRefusal'))} {fmt_interval(ref)} "
                  f"n={fmt_n(ref)}")
    part = r.retrieval_part()
    if part.separation:
        s = Table(title="score separation")
        for col in ("score (over)", "calibrates", "chunks", "pairs", "p10", "median", "p90"):
            s.add_column(col)
        for row in part.separation:
            s.add_row(row.score, row.flag, row.label, str(row.count), fmt(row.p10), fmt(row.median), fmt(row.p90))
        console.print(s)
    if part.ablation:
        _print_ablation(part.ablation)
    print_misses(only(cases, RetrievalCase), headline_k(r), verbose)
    console.print(f"results in {run_dir}")


def _print_cutoffs(r: Report) -> None:
    """The per-cutoff table. Cutoffs beyond the headline one leave, largest first, until the table fits; a note
    names them."""
    ks = sorted({cut for n in r.metrics if (cut := MetricName.parse(n).k) is not None})
    hk = headline_k(r)
    shown = list(ks)
    t = cutoff_table(r, shown)
    natural = console.options.update_width(10_000)  # measured unclamped: does the table fit unwrapped?
    while len(shown) > 1 and Measurement.get(console, natural, t).maximum > console.width:
        shown.remove(max(k for k in shown if k != hk))
        t = cutoff_table(r, shown)
    console.print(t)
    hidden = [f"@{k}" for k in ks if k not in shown]
    if hidden:
        console.print(f"{len(hidden)} cutoff(s) not shown at this width ({', '.join(hidden)}): each value with its "
                      f"interval and n is in report.md and report.json", markup=False)


def _print_ablation(ablation: dict[str, dict[str, float | None]]) -> None:
    a = Table(title="ablation (one search, scored several ways)")
    cols = list(next(iter(ablation.values())))
    a.add_column("variant")
    for c in cols:
        a.add_column(c, justify="right")
    for name, m in ablation.items():
        a.add_row(name, *(fmt(m.get(c)) for c in cols))
    console.print(a)


def misses(cases: list[RetrievalCase], k: int) -> list[RetrievalCase]:
    """Upstream's miss: an answerable question whose recall@k is below 1 (a relevant document left out of the
    first k). A question without a recall@k value is not counted, as upstream counts it."""
    at_k = MetricName(None, "recall", k)
    return [c for c in cases if not c.expect_refusal and (recall := c.metrics.get(at_k)) is not None and recall < 1.0]


def print_misses(cases: list[RetrievalCase], headline: int, verbose: bool) -> None:
    names = [n for c in cases for n in c.metrics]
    ks = sorted({m.k for m in names if m.family == "recall" and m.mode is None and m.k})
    if not ks:
        return
    k = headline if headline in ks else ks[0]
    missed = misses(cases, k)
    answerable = sum(not c.expect_refusal for c in cases)
    console.print(f"{len(missed)} of {answerable} answerable questions missed at k={k} (recall@{k} < 1)")
    if not verbose:
        if missed:
            console.print("verbose=true lists them with what they retrieved")
        return
    for case in missed:
        got = ", ".join(f"{x.doc_id}({x.final_score:.3f})" for x in case.retrieved) or "nothing"
        console.print(f"[red]miss[/] {escape(case.id)}: wanted {escape(', '.join(case.relevant_doc_ids))}; "
                      f"retrieved {escape(got)}")


def cutoff_table(r: Report, ks: list[int]) -> Table:
    """Each family at each cutoff `ks` as `value [95% interval]`; n is the row's (questions), and a cell whose n
    differs from its row's carries its own."""
    t = Table(title=f"retrieval — {r.counts.get('goldens')} goldens, suite {r.identity.suite if r.identity else '?'}")
    t.add_column("metric")
    for k in ks:
        t.add_column(f"@{k} [95%]", justify="right")
    t.add_column("n", justify="right", style="dim")
    hk = headline_k(r)
    for f in at_k_families():
        ivs = {k: r.intervals.get(f"{f}@{k}") for k in ks}
        row_iv = ivs.get(hk) or next((iv for iv in ivs.values() if iv is not None), None)
        cells = []
        for k, iv in ivs.items():
            v = r.metrics.get(f"{f}@{k}")
            own_n = "" if iv is None or row_iv is None or iv.n == row_iv.n else f" n={iv.n}"
            cells.append("—" if v is None else f"{fmt(v)} {fmt_interval(iv)}{own_n}")
        t.add_row(f, *cells, fmt_n(row_iv))
    return t


def print_generation(r: Report, quiet: bool, run_dir: Path) -> None:
    if quiet:
        return
    console.print(_generation_table(r))
    g, a = r.generation_part(), r.answer_part()
    if (d := g.decomposition) is not None:
        console.print(f"decomposition: oracle {fmt(d.oracle)}, e2e {fmt(d.e2e)}, noretrieval "
                      f"{fmt(d.noretrieval)}; oracle − e2e {fmt(d.retrieval_gap)}, e2e − noretrieval "
                      f"{fmt(d.rag_lift)}")
        for note in d.diagnosis:
            console.print(f"  → {note}")
    for mode, z in g.sizes.items():
        console.print(f"{mode}: " + "; ".join(f"{name} {size_text(v)}" for name, v in z.items()), markup=False)
    _print_judges(a)
    if (p := g.position) is not None:
        ranks = ", ".join(f"{k}: {fmt(v.correctness)} {bounds(v.low, v.high)} n={v.n}" for k, v in p.by_rank.items())
        console.print(f"correctness by rank of the relevant passage [95% interval] n questions: {ranks}", markup=False)
        if p.retrieved_but_ignored:
            console.print("[yellow]retrieved but ignored:[/] recall is high while correctness is low")
    _print_causes_and_attacks(a)
    if a.unstable:
        console.print(f"unstable (outcome flips across repeats; counted in instability): {', '.join(a.unstable)}")
    for w in r.warnings:
        console.print(f"[yellow]warning:[/] {w}")
    console.print(f"model calls {r.counts.get('model_calls')}, cache hits {r.counts.get('cache_hits')}; "
                  f"results in {run_dir}")
    if a.repeats_reason:
        console.print(f"repeats {r.counts.get('repeats')}: {a.repeats_reason}", markup=False)


def _generation_table(r: Report) -> Table:
    parsed = [MetricName.parse(k) for k in r.metrics]
    modes = sorted({p.mode for p in parsed if p.mode})
    fams = sorted({p.bare for p in parsed if p.mode})
    ident = r.identity
    t = Table(title=f"generation — model {ident.model if ident else '?'}, {r.counts.get('goldens')} goldens × "
                    f"{r.counts.get('repeats')} repeats")
    t.add_column("metric")
    for m in modes:
        t.add_column(m, justify="right")
        t.add_column(f"{m} 95%", justify="right", style="dim")
        t.add_column("n", justify="right", style="dim")
        if r.generation_part().mock_line:
            t.add_column(f"{m} (mock)", justify="right", style="dim")
    for f in fams:
        t.add_row(f, *(cell for m in modes for cell in _generation_cells(r, m, f)))
    return t


def _generation_cells(r: Report, mode: str, family: str) -> list[str]:
    iv = r.intervals.get(f"{mode}.{family}")
    cells = [fmt(r.metrics.get(f"{mode}.{family}")), fmt_interval(iv), fmt_n(iv)]
    mock = r.generation_part().mock_line
    return cells + ([fmt(mock.get(mode, {}).get(family))] if mock else [])


def _print_judges(r: AnswerDetails) -> None:
    for line, v in zip(judge_lines(r.judges), r.judges.values(), strict=True):
        cal = "calibrated" if v["calibration"].get("calibrated") else "NOT calibrated: not for gating"
        # The calibration's own figures (agreement, coverage, kappa, bias battery) and any same-family warning.
        figures = status_line(v["calibration"], decision=False)
        console.print(f"judge {line} — {cal}" + (f" ({figures})" if figures else ""), markup=False)
    for line in corrected_lines(r.judge_corrected):
        console.print(f"  {line}", markup=False)


def _print_causes_and_attacks(r: AnswerDetails) -> None:
    names = r.causes.names
    for mode, entry in r.causes.by_mode.items():
        counted = ", ".join(f"{names.get(k, k)} {v.count}" for k, v in entry.labels.items() if v.count)
        console.print(f"failure causes ({mode}, {entry.failed} of {entry.questions} questions failed): "
                      f"{counted or 'none'}", markup=False)
    for a in r.attacks:
        console.print(f"attack {a.family} ({a.mode}): success {fmt(a.rate)} [{fmt(a.low)}, {fmt(a.high)}] Wilson 95%, "
                      f"{a.successes} of n={a.n} (planted passage in {a.exposed} prompts; mock (copier) {fmt(a.mock)})",
                      markup=False)


def print_position(r: Report, quiet: bool, run_dir: Path) -> None:
    c = r.position_part().curve
    if quiet or c is None:
        return
    ident = r.identity
    t = Table(title=f"position curve — model {ident.model if ident else '?'}, {c.questions} questions × "
                    f"{r.counts.get('repeats')} repeats, {c.passages} passages")
    for col in ("position", "correctness", "95%", "n", "mock"):
        t.add_column(col, justify="right")
    for p in c.points:
        t.add_row(str(p.position), fmt(p.correctness), bounds(p.low, p.high), str(p.n), fmt(p.mock))
    console.print(t)
    for line in position_summary(c):
        console.print(line, markup=False)
    for w in r.warnings:
        console.print(f"[yellow]warning:[/] {w}")
    console.print(f"model calls {r.counts.get('model_calls')}, cache hits {r.counts.get('cache_hits')}; "
                  f"results in {run_dir}")


def job_line(r: Report, run_dir: Path, num: object) -> str:
    """A sweep job's one console line: its verdict, headline numbers and report; the sweep's summary shows the rest."""
    modes = sorted({p.mode for p in map(MetricName.parse, r.metrics) if p.mode and "." not in p.mode})
    names = headline_names("generation" if r.tier == "generation" else "retrieval", headline_k(r), modes)
    shown = [f"{n} {fmt(r.metrics.get(n))} {fmt_interval(r.intervals.get(n))} n={fmt_n(r.intervals.get(n))}"
             for n in names[:3] if n in r.metrics]
    verdict = f"verdict {r.gate.verdict}" if r.gate else f"status {r.status}"
    return f"job {num}: {verdict}; {'; '.join(shown) or 'no headline numbers'}; report: {run_dir / 'report.html'}"
