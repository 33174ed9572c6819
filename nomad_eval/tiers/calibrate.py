"""tier=calibrate: a judge against human labels -> agreement, kappa, Spearman, flip rate and a bias battery.

Every figure carries a 95% interval, and an unparseable or refused verdict counts as a disagreement (coverage
stands beside it). A run writes its result under its run directory only. `calibrate.file=<that run dir>` files
it into judging.calibration_dir under the rubric version, the judge (backend, model, weights) and the labels
file's hash, where a judge gate finds it: a judge metric can gate only when that calibration shows enough
agreement, so filing one is a decision, never a side effect (and the default calibration_dir is inside the
repository's conf/).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from rich.table import Table

from nomad_eval.backends.response_cache import CachedChat, ResponseCache
from nomad_eval.base.console import console, progress_bar
from nomad_eval.base.errors import NomadError
from nomad_eval.base.identity import file_sha256
from nomad_eval.base.safe_names import require_safe
from nomad_eval.config import RunConfig
from nomad_eval.config.judging import judge_settings, judging_rules
from nomad_eval.harness.rundir import run_dir
from nomad_eval.judges import battery
from nomad_eval.judges.agreement import (
    FigureJson,
    Verdict,
    agreement,
    agreement_parsed,
    coverage,
    flip_rate,
    kappa_figure,
    spearman_figure,
)
from nomad_eval.judges.battery import BatteryFigures, BatteryRow
from nomad_eval.judges.calibration import (
    filed_name,
    fmt_figure,
    gate_rule,
    judge_identity,
    labels_location,
    labels_ref,
    same_family_warning,
)
from nomad_eval.judges.calibration_file import Agreement, Calibration, Label, LabelRow, NoBattery, load_labels
from nomad_eval.judges.judge import Rubric, judge
from nomad_eval.judges.run_judges import judge_chat, rubrics
from nomad_eval.report.io import write_atomic, write_jsonl


def file_result(source: Path, calibration_dir: Path) -> Path:
    """Copies a calibrate run's calibration.json to where judge gates read it, under the name the run chose."""
    path = source / "calibration.json" if source.is_dir() else source
    try:
        result = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise NomadError(f"{path}: no calibration.json here (name a tier=calibrate run directory)", 2) from None
    except (OSError, ValueError) as exc:
        raise NomadError(f"{path}: not a readable calibration result ({exc})", 2) from None
    if not isinstance(result, dict) or not all(k in result for k in ("rubric", "agreement", "n", "filed_as")):
        raise NomadError(f"{path}: not a calibration result (needs rubric, agreement, n and filed_as)", 2)
    if not isinstance(result.get("judge"), dict) or not isinstance(result.get("labels"), dict):
        raise NomadError(f"{path}: a calibration without the judge's identity and the labels file's hash, which no "
                         "gate can match: run tier=calibrate again", 2)
    name = result["filed_as"]
    require_safe(str(path), file_name=name)  # it becomes a path: nothing in a result may point elsewhere
    where = labels_location(str(result["labels"].get("file")))
    if not where.is_file() or file_sha256(str(where)) != result["labels"].get("sha256"):
        # A gate would never read it: say so now rather than file a calibration that can only be refused.
        raise NomadError(f"{path}: its labels file {where} is gone or has changed since the calibration; "
                         "run tier=calibrate on the labels as they are", 2)
    target = calibration_dir / str(name)
    write_atomic(target, json.dumps(result, indent=1))
    return target


@contextmanager
def _costed(chat: CachedChat, cost: dict[str, dict[str, float]], phase: str) -> Iterator[None]:
    """What a phase cost: model calls (retries included), cache hits and wall-clock seconds."""
    calls, hits, start = chat.calls, chat.hits, time.monotonic()
    yield
    cost[phase] = {"model_calls": chat.calls - calls, "cache_hits": chat.hits - hits,
                   "seconds": round(time.monotonic() - start, 1)}


def _judge_labels(config: RunConfig, chat: CachedChat, rubric: Rubric, labels: list[Label], repeats: int
                  ) -> list[LabelRow]:
    rows: list[LabelRow] = []
    with progress_bar(f"judging ({rubric.key})", len(labels) * repeats, bool(config.quiet)) as prog:
        for lab in labels:
            verdicts, rejected = [], []
            for r in range(repeats):
                j = judge(chat, rubric, lab.question, lab.chunks, lab.answer, int(config.seed) + r,
                          int(config.judging.retries), int(config.judging.max_tokens), repeat=r)
                verdicts.append(j.verdict)
                rejected.append(j.rejected)
                prog.advance(prog.task_ids[0])
            rows.append(LabelRow(id=lab.id, label=lab.label, verdict=verdicts[0], verdicts=verdicts,
                                 rejected=rejected[0]))
    return rows


def _battery(config: RunConfig, chat: CachedChat, rubric: Rubric, labels: list[Label], rows: list[LabelRow]
             ) -> tuple[BatteryFigures, list[BatteryRow]]:
    size = config.calibrate.battery_size
    chosen = battery.sample(len(labels), None if size is None else int(size), int(config.seed))
    examples = [battery.Example(labels[i].id, labels[i].question, labels[i].chunks, labels[i].answer,
                                rows[i]["verdict"]) for i in chosen]
    pool = list(dict.fromkeys(c for lab in labels for c in lab.chunks))
    abstention = rubric.name == "faithfulness"  # the rubric that says a decline is always faithful
    per_example = 3 + abstention  # at most: two orders, the padded answer, a decline (retries not counted)
    with progress_bar(f"bias battery ({rubric.key})", len(examples) * per_example, bool(config.quiet)) as prog:
        def ask(question: str, passages: list[str], answer: str) -> Verdict:
            prog.advance(prog.task_ids[0])
            return judge(chat, rubric, question, passages, answer, int(config.seed), int(config.judging.retries),
                         int(config.judging.max_tokens)).verdict

        return battery.run(examples, pool, ask, rubric.scale, abstention, int(config.seed), int(config.stats.resamples))


def _battery_figures(result: Calibration) -> BatteryFigures | None:
    b = result["battery"]
    return b if "size" in b else None


def _rows(result: Calibration) -> list[tuple[str, str, str, str]]:
    """(figure, value [95% interval], n, how) for the console and the markdown file."""
    def row(name: str, fig: FigureJson, how: str, signed: bool = False) -> tuple[str, str, str, str]:
        return name, fmt_figure(fig, signed), str(fig["n"]) if fig else "—", how

    out = [row("agreement", result["agreement"], "unparseable and refused verdicts count as misses; Wilson"),
           row("coverage", result["coverage"], "parsed / total; Wilson"),
           row("agreement among parsed", result["agreement_parsed"], "secondary; Wilson"),
           row("Cohen's kappa", result["kappa"], "misses as above; null when undefined; bootstrap")]
    if result["spearman"] is not None:
        out.append(row("Spearman's rho", result["spearman"], "parsed verdicts; bootstrap"))
    if result["flip_rate"] is not None:
        out.append(row("flip rate across repeats", result["flip_rate"], "Wilson"))
    if b := _battery_figures(result):
        out += [row("order flip rate", b["order_flip"], "verdict changes with the passages reversed; Wilson"),
                row("verbosity shift", b["verbosity_shift"], "mean verdict change (0-1 scale), answer padded; "
                    "bootstrap", signed=True)]
        if "abstention_faithful" in b:
            out.append(row("declines judged faithful", b["abstention_faithful"], "must be 1; Wilson"))
    return out


def _markdown(result: Calibration) -> str:
    lines = [f"# Calibration of {result['rubric']} — judge {result['judge'].get('model')}", "",
             f"- judge: {json.dumps(result['judge'])}",
             f"- labels: {result['labels']['file']} (sha256 {result['labels']['sha256']}), {result['n']} examples, "
             f"{result['parsed']} parsed, {result['unparseable']} unparseable, {result['rejected']} refused",
             f"- may gate: {'yes' if result['calibrated'] else 'no — ' + result['reason']}", "",
             "| figure | value [95% interval] | n | how |", "|---|---|---|---|",
             *(f"| {' | '.join(r)} |" for r in _rows(result)), ""]
    return "\n".join([*lines, *(f"- {note}" for note in _notes(result))]) + "\n"


def _notes(result: Calibration) -> list[str]:
    """What follows the figures, in calibration.md and on the console: the battery, each phase's cost, warnings."""
    b = _battery_figures(result)
    notes = [f"bias battery on {b['size']} examples ({b['added_passage']} single-passage examples given a second "
             f"passage to reorder): {b['calls']} verdicts asked, {b['unparseable']} unparseable"] if b else []
    notes += [f"cost of the {phase}: {c['model_calls']} model calls (retries included), {c['cache_hits']} cache "
              f"hits, {c['seconds']} s" for phase, c in result["cost"].items()]
    return notes + [f"warning: {w}" for w in result["warnings"]]


def run(config: RunConfig) -> int:
    if config.calibrate.file:
        target = file_result(Path(config.calibrate.file), Path(config.judging.calibration_dir))
        console.print(f"filed {config.calibrate.file} as {target}; judge gates of that rubric, judge model and labels "
                      "file read it")
        return 0
    rubric, labels_path, labels = _rubric_and_labels(config)
    ref = labels_ref(labels_path)  # hashed before judging: the labels the verdicts were compared with
    repeats = max(1, int(config.calibrate.repeats))
    cache = ResponseCache(Path(config.paths.data_dir) / "responses.sqlite") if config.cache is not False else None
    chat = judge_chat(judge_settings(config), cache)
    judge_id = judge_identity(chat.identity())
    cost: dict[str, dict[str, float]] = {}
    with _costed(chat, cost, "labels"):
        rows = _judge_labels(config, chat, rubric, labels, repeats)
    figures: BatteryFigures | NoBattery = NoBattery()
    battery_rows: list[BatteryRow] = []
    if config.calibrate.battery_size != 0:
        with _costed(chat, cost, "battery"):
            figures, battery_rows = _battery(config, chat, rubric, labels, rows)
    resamples, seed = int(config.stats.resamples), int(config.seed)
    # Who wrote the labelled answers, where known (labels' `generator`, or calibrate.generator for all of them).
    named = config.calibrate.generator
    generators = sorted({lab.generator for lab in labels if lab.generator} | ({str(named)} if named else set()))
    warning = same_family_warning(str(judge_id.get("model")), generators)
    figs = _agreement_figures(rows, len(rubric.scale) > 2, repeats, resamples, seed)
    # As this config's gate would decide; a gate decides again.
    ok, why = gate_rule({"n": figs["n"], "agreement": figs["agreement"], "battery": figures},
                        judging_rules(config.judging))
    result: Calibration = {
        "format": 2, "rubric": rubric.key, "judge": judge_id, "labels": {**ref, "n": len(labels)}, **figs,
        "repeats": repeats, "seed": seed, "resamples": resamples, "cost": cost,
        "battery": figures, "generators": generators, "warnings": [warning] if warning else [],
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "filed_as": filed_name(rubric.key, judge_id, ref["sha256"]),  # where `calibrate.file=<this run>` puts it
        "min_agreement": float(config.judging.min_agreement), "gate_on": str(config.judging.gate_on), "calibrated": ok,
        "reason": why}
    out = run_dir(config.paths.run_dir)
    write_jsonl(out / "calibration_cases.jsonl", rows)
    if battery_rows:
        write_jsonl(out / "calibration_battery.jsonl", battery_rows)
    write_atomic(out / "calibration.json", json.dumps(result, indent=1))
    write_atomic(out / "calibration.md", _markdown(result))
    if not config.quiet:
        _print(result, out)
    return 0


def _rubric_and_labels(config: RunConfig) -> tuple[Rubric, Path, list[Label]]:
    """The one rubric to calibrate and its human labels, refused (exit 2) when either is missing or too few."""
    if not config.calibrate.labels:
        raise NomadError("tier=calibrate needs calibrate.labels=<labels.jsonl> and judge=<rubric> (or "
                         "calibrate.file=<a calibrate run dir> to file its result)", 2)
    chosen = rubrics(judge_settings(config))
    if len(chosen) != 1:
        raise NomadError("tier=calibrate calibrates one rubric at a time: judge=faithfulness or judge=relevance", 2)
    labels_path = Path(config.calibrate.labels)
    labels = load_labels(labels_path, chosen[0].scale)
    if len(labels) < 25:
        raise NomadError(f"{config.calibrate.labels}: {len(labels)} labels; calibration needs at least 25", 2)
    return chosen[0], labels_path, labels


def _agreement_figures(rows: list[LabelRow], graded: bool, repeats: int, resamples: int, seed: int
                       ) -> Agreement:
    """How the judge's verdicts agree with the human labels: counts, agreement, coverage, kappa, Spearman on a
    graded scale, and the verdicts' flip rate over repeats."""
    human, verdicts = [r["label"] for r in rows], [r["verdict"] for r in rows]
    parsed = sum(v is not None for v in verdicts)
    rejected = sum(r["rejected"] for r in rows)
    return Agreement(
        n=len(rows), parsed=parsed, unparseable=len(rows) - parsed - rejected, rejected=rejected,
        agreement=agreement(human, verdicts).as_dict(),
        coverage=coverage(verdicts).as_dict(),
        agreement_parsed=agreement_parsed(human, verdicts).as_dict(),
        kappa=kappa_figure(human, verdicts, resamples, seed).as_dict(),
        spearman=spearman_figure(human, verdicts, resamples, seed).as_dict() if graded else None,
        flip_rate=flip_rate([r["verdicts"] for r in rows]).as_dict() if repeats > 1 else None)


def _print(result: Calibration, out: Path) -> None:
    t = Table("figure", "value [95% interval]", "n", "how", title=f"calibration of {result['rubric']} (judge "
              f"{result['judge'].get('model')}) on {result['labels']['file']}")
    for r in _rows(result):
        t.add_row(*r)
    console.print(t)
    for note in _notes(result):
        console.print(note, markup=False)
    console.print(f"unparseable {result['unparseable']}, refused {result['rejected']} of {result['n']}; may gate: "
                  + ("yes" if result["calibrated"] else f"no — {result['reason']}"))
    console.print(f"written to {out / 'calibration.json'} and calibration.md; to let judge gates use it: python -m "
                  f"nomad_eval tier=calibrate calibrate.file={out} (files it as {result['filed_as']})")
