"""tier=labels: a person labels a seeded random sample of a run's judged answers, which corrects the judge's mean.

    python -m nomad_eval tier=labels tier.run=<a judged generation run> [tier.rubric=faithfulness] [tier.mode=e2e]

The sample is drawn by question (one repeat each, chosen at random too), in a seeded order, so any prefix of it
is itself a uniform random sample: stopping early, or coming back later to label more, keeps it one. Labels go to
a JSONL file (default `<run>/judge_labels.jsonl`), one line per answer, keyed by corpus fingerprint, golden id,
mode, repeat and rubric version, with a hash of the labelled material (question, injected chunk ids, answer; the
fingerprint fixes the chunks' text) and of the set of answers the sample was drawn from. A label is only applied
to the same answer in a run with the same set of answers: this run, or a later one that reproduced it (cached
answers). PPI needs the labelled answers to be a uniform random sample of the run's, so when some labelled answers
have changed the survivors are not one, and the correction is refused rather than computed from them.
`judge_corrected` (run/labels.py) turns labels into the prediction-powered estimate per judge metric
(nomad_eval/core/ppi.py).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from rich.markup import escape

from nomad_eval.base.console import console
from nomad_eval.base.errors import NomadError
from nomad_eval.base.runfolder import check, reopened
from nomad_eval.config import RunConfig
from nomad_eval.config.settings import saved_runtime
from nomad_eval.config.tiers import LabelsTier
from nomad_eval.judges.judge import Rubric, load_rubric
from nomad_eval.metrics.registry import MetricName
from nomad_eval.records import AnswerCase, only
from nomad_eval.report.baseline import read_cases
from nomad_eval.report.io import read_report, write_atomic, write_jsonl
from nomad_eval.report.judge_corrected import describe
from nomad_eval.report.schema import Report
from nomad_eval.run.labels import (
    Label,
    draw_sample,
    judge_corrected,
    judged,
    label_key,
    matching,
    population_hash,
    read_labels,
    text_hash,
)


def _show(i: int, total: int, case: AnswerCase, passages: list[str]) -> None:
    # Escaped: answers and corpus text are untrusted and may hold rich markup such as "[red]".
    console.print(f"\n[bold]{i}/{total}[/] {escape(case.id)} ({case.mode}, repeat {case.repeat})")
    console.print(f"[bold]question[/] {escape(case.query)}")
    for j, text in enumerate(passages, 1):
        console.print(f"[bold]passage {j}[/] {escape(text)}")
    if not passages:
        console.print("[bold]passages[/] (none)")
    console.print(f"[bold]answer[/] {escape(case.answer)}")


def label_loop(items: Sequence[tuple[AnswerCase, list[str]]], rubric: Rubric, read: Callable[[str], str],
               record: Callable[[AnswerCase, int | None], None]) -> int:
    """Ask for a label per (case, passages). Answers: a value of the rubric's scale, s (skip), q (save and stop).
    `record` is called after every answer, so labels already given survive an interrupted session. Returns how
    many were answered (labelled or skipped). The judge's own verdict is never shown: it would anchor the person.
    """
    allowed = [str(v) for v in rubric.scale]
    prompt = f"{rubric.name} ({' / '.join(allowed)}), s = skip, q = save and stop: "
    console.print(f"[bold]{rubric.key}[/]\n{escape(rubric.instructions.strip())}")
    answered = 0
    for i, (case, passages) in enumerate(items, 1):
        _show(i, len(items), case, passages)
        while True:
            try:
                answer = read(prompt).strip().lower()
            except EOFError:
                answer = "q"
            if answer in (*allowed, "s", "q"):
                break
            console.print(f"  please answer with {', '.join(allowed)}, s or q")
        if answer == "q":
            break
        record(case, None if answer == "s" else int(answer))
        answered += 1
    return answered


def _passage_texts(report: Report, wanted: set[str]) -> dict[str, str]:
    """The injected chunks' text, re-chunked from the run's own config; refused when the corpus or its chunking
    has changed since, because the person would label other text than the judge saw."""
    rt = saved_runtime(report.config)
    then = report.identity.fingerprint if report.identity else None
    if rt.fingerprint != then:
        raise NomadError(f"the corpus fingerprint is {rt.fingerprint} now, {then} in the run: its passages cannot "
                         "be shown as they were judged; label a fresh run", 2)
    texts = {c.chunk_id: c.text for c in rt.chunks}
    if missing := sorted(wanted - texts.keys()):
        raise NomadError(f"chunk {missing[0]} of the run is not in its corpus any more", 2)
    return {k: texts[k] for k in wanted}


def _choose(tier: LabelsTier, report: Report) -> tuple[str, str]:
    metrics = sorted(report.answer_part().judges)
    if not metrics:
        raise NomadError("this run has no judge verdicts: run tier=generation with judge=<rubric> first", 2)
    parsed = [MetricName.parse(m) for m in metrics]
    names = sorted({p.family for p in parsed})
    modes = sorted({p.mode or "" for p in parsed})
    name = str(tier.rubric or (names[0] if len(names) == 1 else ""))
    mode = str(tier.mode or (modes[0] if len(modes) == 1 else "e2e" if "e2e" in modes else ""))
    if f"{mode}.{name}" not in report.answer_part().judges:
        raise NomadError(f"name the judge metric to label with tier.rubric=<rubric> tier.mode=<mode>; this run has "
                         f"{', '.join(metrics)}", 2)
    return mode, name


def run(config: RunConfig) -> int:
    tier = config.tier_of(LabelsTier)
    if not tier.run:
        raise NomadError("tier=labels needs tier.run=<a judged generation run's directory>", 2)
    size = tier.sample
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise NomadError(f"tier.sample={size!r} must be a whole number of questions, at least 1", 2)
    run_dir = Path(tier.run) if Path(tier.run).is_dir() else Path(tier.run).parent
    check(run_dir)  # the files it labels and updates must be one finished run's
    report = read_report(Path(tier.run))
    cases = only(read_cases(run_dir / "cases.jsonl"), AnswerCase)
    mode, name = _choose(tier, report)
    rubric = load_rubric(Path(config.judging.rubrics_dir), name)
    then = report.answer_part().judges[f"{mode}.{name}"].get("rubric")
    if rubric.key != then:
        raise NomadError(f"the run was judged with {then} but the rubric is {rubric.key} now: a label would answer "
                         "another question than the judge did", 2)
    out = Path(tier.out) if tier.out else run_dir / "judge_labels.jsonl"
    labels = read_labels(out) if out.exists() else []
    fingerprint = report.identity.fingerprint if report.identity else ""
    population = judged(cases, rubric, mode)
    done, _ = matching(labels, fingerprint, rubric.key, mode, population)
    sample = draw_sample(population, int(config.seed), size)
    todo = [c for c in sample if label_key(fingerprint, rubric.key, c) not in done]
    texts = _passage_texts(report, {cid for c in todo for cid in c.injected})
    console.print(f"{len(sample) - len(todo)} of a sample of {len(sample)} already labelled in {out}; "
                  f"{len(todo)} to go")
    drawn_from = population_hash(population)

    def record(case: AnswerCase, label: int | None) -> None:
        labels.append(Label(fingerprint=fingerprint, id=case.id, mode=mode, repeat=case.repeat,
                            rubric=rubric.key, text_hash=text_hash(case), population=drawn_from, label=label,
                            scale=rubric.scale, run=str(run_dir), seed=int(config.seed),
                            labelled_at=datetime.now(UTC).isoformat()))
        write_jsonl(out, [lab.model_dump() for lab in labels])

    items = [(c, [texts[cid] for cid in c.injected]) for c in todo]
    answered = label_loop(items, rubric, input if sys.stdin else _no_input, record)
    console.print(f"\n{answered} answer(s) saved to {out}")
    _corrected(report, cases, labels, rubric, f"{mode}.{name}", run_dir if out == run_dir / "judge_labels.jsonl"
               else None)
    return 0


def _corrected(report: Report, cases: list[AnswerCase], labels: list[Label], rubric: Rubric, key: str,
               own_run: Path | None) -> None:
    """Print the judge-corrected estimate; with the run's own labels (`own_run`), its report shows it too."""
    result = judge_corrected(report, cases, labels, [rubric])
    console.print(describe(key, result[key]), markup=False)
    if own_run is not None:
        report.answer_part().judge_corrected.update(result)  # the run's own part, updated in place
        from nomad_eval.report.markdown import generation_markdown

        with reopened(own_run):
            write_atomic(own_run / "report.json", report.model_dump_json(indent=2))
            write_atomic(own_run / "report.md", generation_markdown(report))
        console.print(f"updated {own_run / 'report.json'} and report.md with the corrected estimate")


def _no_input(prompt: str) -> str:
    raise EOFError  # no terminal to ask: stop, keeping what is saved
