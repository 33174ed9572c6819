"""`repeats=auto` in a generation run: the baseline's answers the rule reads, the loop over the model's calls, and
the per-question record the report shows (docs/gate.md#adaptive-repeats)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from nomad_eval.base.errors import NomadError
from nomad_eval.config import RunConfig
from nomad_eval.core.adaptive import Tally, ask_until_settled, by_key
from nomad_eval.core.sequential import Rule
from nomad_eval.gate.choose import find_baseline
from nomad_eval.gate.store import default_variant
from nomad_eval.records.sections import AdaptiveRow
from nomad_eval.report.baseline import load_baseline
from nomad_eval.report.schema import Report


def is_auto(config: RunConfig) -> bool:
    return str(config.repeats) == "auto"


def rule(config: RunConfig) -> Rule:
    return Rule(most=int(config.repeats_max), agree=int(config.repeats_agree), first=int(config.repeats_first))


def budget(config: RunConfig, questions: int, against_baseline: bool = True) -> int | None:
    """The most model calls the loop may make: `repeats_budget` calls per question (None: no bound but
    repeats_max). A run without a baseline is the one a team promotes: its depth is what lets later runs stop
    early, so no budget cuts it."""
    if not against_baseline:
        return None
    return int(float(config.repeats_budget) * questions)


def reference(config: RunConfig, provisional: Report) -> tuple[dict[str, tuple[int, int]], str]:
    """The baseline's (passes, answers) per question key, and which baseline it is; empty with none to read (a
    first run: unanimous answers stop, disagreeing ones are measured to repeats_max)."""
    try:
        if config.compare.baseline:
            path = Path(str(config.compare.baseline))
            base = load_baseline(path)
        else:
            variant = config.compare.variant or default_variant(provisional)
            path, base, _ = find_baseline(Path(config.paths.baselines_dir), provisional,
                                          None if variant is None else str(variant))
    except NomadError:
        return {}, "no baseline to read"
    return by_key(base.cases), f"baseline {path}"


# One round's (golden index, mode, repeat) tasks -> each call's result, and the pass outcome of a result.
Answer = Callable[[list[tuple[int, str, int]]], list[Any]]
Passed = Callable[[tuple[int, str, int], Any], bool | None]


def ask(keys: dict[str, tuple[int, str]], ref: dict[str, tuple[int, int]], answer: Answer, passed: Passed,
        r: Rule, calls: int | None) -> tuple[list[tuple[int, str, int]], list[Any], dict[str, Tally]]:
    """Every task asked and its result, in order, and each question's tally."""
    tasks: list[tuple[int, str, int]] = []
    results: list[Any] = []

    def one_round(batch: list[tuple[str, int]]) -> list[bool | None]:
        round_tasks = [(*keys[k], rep) for k, rep in batch]
        got = answer(round_tasks)
        tasks.extend(round_tasks)
        results.extend(got)
        return [passed(t, g) for t, g in zip(round_tasks, got, strict=True)]

    tallies = ask_until_settled(list(keys), ref, one_round, r, calls)
    return tasks, results, tallies


def run_auto(config: RunConfig, provisional: Report, keys: dict[str, tuple[int, str]], answer: Answer,
             passed: Passed) -> tuple[list[tuple[int, str, int]], list[Any], int, str, list[AdaptiveRow]]:
    """The generation run's asks under `repeats=auto`: its tasks and results in order, the most answers a
    question got, why, and the per-question table."""
    r = rule(config)
    ref, source = reference(config, provisional)
    calls = budget(config, len(keys), bool(ref))
    tasks, results, tallies = ask(keys, ref, answer, passed, r, calls)
    most = max((t.asked for t in tallies.values()), default=1)
    return tasks, results, most, reason(r, calls, tallies, source), per_question(tallies, r)


def per_question(tallies: dict[str, Tally], r: Rule) -> list[AdaptiveRow]:
    """Each question's calls, pass rate and anytime-valid 95% interval, and why it stopped: the report's table."""
    out: list[AdaptiveRow] = []
    for key, t in tallies.items():
        low, high = t.interval(r.alpha)
        out.append({"key": key, "calls": t.asked, "answers": t.answers, "passes": t.passes,
                    "pass_rate": t.passes / t.answers if t.answers else None, "low": low, "high": high,
                    "stopped": t.why})
    return out


def reason(r: Rule, calls: int | None, tallies: dict[str, Tally], source: str) -> str:
    asked = sum(t.asked for t in tallies.values())
    bound = "" if calls is None else f", budget {calls} calls"
    return (f"repeats=auto: each question asked again only while its outcome could still change the verdict "
            f"(at most repeats_max={r.most}{bound}; {source}): {asked} calls for {len(tallies)} questions")


def markdown(rows: list[AdaptiveRow]) -> str:
    if not rows:
        return ""
    lines = ["", "## Adaptive repeats (repeats=auto)", "",
             "Pass rate with its anytime-valid 95% interval (a confidence sequence: it holds however often the "
             "rule looked).", "", "| question | calls | pass rate | interval | stopped |", "|---|---|---|---|---|"]
    for q in rows:
        rate = "—" if q["pass_rate"] is None else f"{q['pass_rate']:.2f} ({q['passes']}/{q['answers']})"
        lines.append(f"| {q['key']} | {q['calls']} | {rate} | [{q['low']:.2f}, {q['high']:.2f}] | {q['stopped']} |")
    return "\n".join(lines) + "\n"

