"""Does the gate hold its false-alarm rate on answers that vary? python bench/flaky_gate.py [--pairs N]

The measuring instrument of the generation gate (issue 41): simulated per-question records of a chat model whose
answers vary between repeats go through the gate's own pure function (`compare_questions`, every headline
metric of the mode gated together, as CI gates them); nothing of the gate is re-implemented here.

A suite of `questions` goldens, some of them refusal goldens; each question has a probability of being answered
right on one draw, the same on both sides when the system is unchanged. A wrong answer to an answerable golden is
a wrong answer (not a refusal); a wrong answer to a refusal golden answers instead of declining. Baseline and run
are fresh draws. The share of pairs that do not pass is the false-alarm rate of an unchanged system; with a change
(questions made always wrong, or made flaky) it is the power. Each rate has its n and a Wilson 95% interval.

Seeded (numpy's default_rng per setting and pair). Writes bench/results/flaky_gate.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing import Pool
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from scipy import stats

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from nomad_eval.core.adaptive import ask_until_settled, base_tallies  # noqa: E402
from nomad_eval.core.questions import means, questions_from_cases  # noqa: E402
from nomad_eval.core.sequential import Rule  # noqa: E402
from nomad_eval.gate.compare import compare_questions  # noqa: E402
from nomad_eval.gate.outcome import Verdict  # noqa: E402
from nomad_eval.metrics.registry import headline_names  # noqa: E402
from nomad_eval.records import decode  # noqa: E402
from nomad_eval.run import generation_cases  # noqa: E402,F401  (registers the answer measures)

SEED = 41
MODE = "e2e"
GATED = headline_names("generation", 5, [MODE])
# The shipped repeats=auto bounds, read from the one place defaults live.
_SHIPPED = yaml.safe_load((REPO / "nomad_eval" / "conf" / "config.yaml").read_text())
AUTO_MOST, AUTO_AGREE = int(_SHIPPED["repeats_max"]), int(_SHIPPED["repeats_agree"])
AUTO_FIRST = int(_SHIPPED["repeats_first"])
AUTO_BUDGET = None if _SHIPPED["repeats_budget"] is None else float(_SHIPPED["repeats_budget"])
REPEATS_CODE = {"auto": 0}  # a seed sequence takes integers: auto seeds as repeats 0


@dataclass(frozen=True)
class Suite:
    """Each question's probability of a right answer on one draw, and which questions are refusal goldens."""

    p: np.ndarray
    refusal: np.ndarray

    @property
    def size(self) -> int:
        return len(self.p)


def suite(questions: int = 60, flaky: int = 15, p: float = 0.5, refusals: int = 8, seed: int = SEED) -> Suite:
    """`flaky` questions, spread over answerable and refusal goldens alike, answered right with probability `p`;
    the rest always right."""
    rng = np.random.default_rng([seed, questions, flaky])
    probs = np.ones(questions)
    probs[rng.choice(questions, size=flaky, replace=False)] = p
    refusal = np.zeros(questions, dtype=bool)
    refusal[rng.choice(questions, size=refusals, replace=False)] = True
    return Suite(probs, refusal)


def changed(s: Suite, kind: str, count: int, p: float = 0.5) -> Suite:
    """`count` always-right questions made always wrong ("wrong") or flaky at `p` ("flaky")."""
    right = np.flatnonzero(s.p == 1.0)[:count]
    probs = s.p.copy()
    probs[right] = 0.0 if kind == "wrong" else p
    return Suite(probs, s.refusal)


class ScriptedModel:
    """The simulated backend: answers question i right with probability p[i] and counts every call it answers,
    so the calls reported are the backend's own, not the harness's."""

    def __init__(self, s: Suite, rng: np.random.Generator) -> None:
        self.s, self.rng, self.calls = s, rng, 0

    def answer(self, i: int) -> bool:
        self.calls += 1
        return bool(self.rng.random() < self.s.p[i])


def draws(model: ScriptedModel, repeats: int | Sequence[int]) -> list[list[bool]]:
    """Each question answered `repeats` times (one count for all, or one per question)."""
    reps = np.broadcast_to(np.asarray(repeats), (model.s.size,))
    return [[model.answer(i) for _ in range(int(reps[i]))] for i in range(model.s.size)]


def auto_draws(model: ScriptedModel, base: list[list[bool]] | None, rule: Rule, budget: int | None = None
               ) -> list[list[bool]]:
    """Each question answered as `repeats=auto` asks (core/adaptive.py), against the baseline's answers (None:
    a run without a baseline, as the first one promoted)."""
    answers: list[list[bool]] = [[] for _ in range(model.s.size)]

    def ask(batch: list[tuple[str, int]]) -> list[bool | None]:
        out: list[bool | None] = []
        for key, _ in batch:
            i = int(key[1:])
            answers[i].append(model.answer(i))
            out.append(answers[i][-1])
        return out

    ref = {} if base is None else base_tallies({f"q{i}": b for i, b in enumerate(base)})
    ask_until_settled([f"q{i}" for i in range(model.s.size)], ref, ask, rule, budget)
    return answers


def records(s: Suite, outcomes: list[list[bool]]) -> list[dict[str, Any]]:
    """One side's case records from each question's answers."""
    out: list[dict[str, Any]] = []
    for i, answers in enumerate(outcomes):
        for r, right in enumerate(answers):
            refusal = bool(s.refusal[i])
            out.append({"id": f"q{i}", "mode": MODE, "passed": right, "relevant_doc_ids": [f"d{i}"],
                        "metrics": {"correctness": None if refusal else float(right),
                                    "refusal_correctness": float(right) if refusal else 1.0,
                                    "leakage_rate": 0.0}, "repeat": r})
    return out


def cases(rng: np.random.Generator, s: Suite, repeats: int | Sequence[int]) -> list[dict[str, Any]]:
    """One side's case records: each question drawn `repeats` times (one count for all, or one per question)."""
    return records(s, draws(ScriptedModel(s, rng), repeats))


def pair(rng: np.random.Generator, base: Suite, run: Suite, rb: int | str, rr: int | str, rule: Rule,
         budget: float | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int, int]:
    """One baseline/run pair's records and each side's model calls, as its scripted backend counted them."""
    mb, mr = ScriptedModel(base, rng), ScriptedModel(run, rng)
    b = auto_draws(mb, None, rule) if rb == "auto" else draws(mb, int(rb))
    calls = None if budget is None else int(budget * run.size)
    r = auto_draws(mr, b, rule, calls) if rr == "auto" else draws(mr, int(rr))
    return records(base, b), records(run, r), mb.calls, mr.calls


def gate(base: list[dict[str, Any]], run: list[dict[str, Any]], **options: Any) -> Verdict:
    """The gate's verdict on one pair, as tier=compare reaches it (question sampling's resamples cut: they are
    shown beside the verdict and do not decide it)."""
    bq, rq = questions_from_cases(list(map(decode, base))), questions_from_cases(list(map(decode, run)))
    base_metrics, run_metrics = means(bq, GATED), means(rq, GATED)
    gated = [n for n in GATED if base_metrics[n] is not None]  # as gate/verdict.py gates: what the baseline holds
    return compare_questions(bq, rq, gated, base_metrics=base_metrics, run_metrics=run_metrics,
                             resamples=options.pop("resamples", 200), **options)


def failing_share(base: Suite, run: Suite, repeats: int | str | tuple[int | str, int | str], pairs: int,
                  seed: int, start: int = 0, **options: Any) -> dict[str, Any]:
    """The share of `pairs` baseline/run pairs (numbered from `start`) whose gate does not pass, with what fired,
    each verdict's count and each side's model calls."""
    rb, rr = repeats if isinstance(repeats, tuple) else (repeats, repeats)
    rule = Rule(most=int(options.pop("most", AUTO_MOST)), agree=int(options.pop("agree", AUTO_AGREE)),
                first=int(options.pop("first", AUTO_FIRST)))
    budget = options.pop("budget", AUTO_BUDGET)
    fired: dict[str, int] = {}
    verdicts: dict[str, int] = {}
    failed = 0
    calls = [0, 0]
    for k in range(start, start + pairs):
        rng = np.random.default_rng([seed, *(REPEATS_CODE.get(str(x), x) for x in (rb, rr)), k])  # type: ignore
        b, r, cb, cr = pair(rng, base, run, rb, rr, rule, budget)
        calls[0] += cb
        calls[1] += cr
        v = gate(b, r, seed=k, **options)
        verdicts[v.outcome] = verdicts.get(v.outcome, 0) + 1
        if v.exit_code != 0:
            failed += 1
            for m in v.metrics:
                if m.gated and m.outcome != "within tolerance":
                    fired[f"{m.name}: {m.outcome}"] = fired.get(f"{m.name}: {m.outcome}", 0) + 1
    return {"pairs": pairs, "failed": failed, **wilson(failed, pairs), "fired": fired, "verdicts": verdicts,
            "calls": {"baseline": calls[0], "run": calls[1]}}


def wilson(hits: int, n: int) -> dict[str, float]:
    ci = stats.binomtest(hits, n).proportion_ci(0.95, method="wilson")
    return {"rate": hits / n, "low": round(float(ci.low), 4), "high": round(float(ci.high), 4)}


# The suite, and three other flakiness settings: few flaky questions, many mildly flaky, many rarely wrong.
FLAKINESS = {"15 at p=0.5": (15, 0.5), "5 at p=0.5": (5, 0.5), "30 at p=0.7": (30, 0.7), "15 at p=0.9": (15, 0.9)}
CHANGES = {"1 made wrong": ("wrong", 1), "3 made wrong": ("wrong", 3), "6 made wrong": ("wrong", 6),
           "1 made flaky": ("flaky", 1), "6 made flaky": ("flaky", 6)}


CHUNK = 100  # pairs per task, so both workers stay busy and results are written as they come


def _job(task: tuple[str, str, Any, int, int, int, dict[str, Any]]) -> tuple[str, str, dict[str, Any]]:
    group, label, repeats, start, pairs, seed, spec = task
    flaky, p = spec["flakiness"]
    base = suite(questions=spec.get("questions", 60), flaky=flaky, p=p)
    run = changed(base, *spec["change"]) if spec.get("change") else base
    return group, label, failing_share(base, run, repeats, pairs, seed, start, **spec.get("options", {}))


def settings(pairs: int, power_pairs: int) -> list[tuple[str, str, Any, int, int, dict[str, Any]]]:
    """(group, label, repeats, pairs, seed, spec), the Done-when rows first."""
    main = {"flakiness": FLAKINESS["15 at p=0.5"]}
    out: list[tuple[str, str, Any, int, int, dict[str, Any]]] = [
        ("unchanged", f"15 at p=0.5, repeats {r}", r, pairs, SEED, main) for r in (3, 5, (3, 1), 1, "auto")]
    out += [("power", f"{name}, repeats {r}", r, power_pairs, SEED + 1, {**main, "change": CHANGES[name]})
            for name in ("6 made wrong", "6 made flaky") for r in (5, 3, "auto")]
    out.append(("strict", "15 at p=0.5, repeats 3, compare.strict=true", 3, pairs, SEED,
                {**main, "options": {"strict": True}}))
    out += [("unchanged", f"{name}, repeats {r}", r, pairs, SEED, {"flakiness": fl})
            for r in (3, 5, "auto", 1) for name, fl in FLAKINESS.items() if name != "15 at p=0.5"]
    out += [("power", f"{name}, repeats {r}", r, power_pairs, SEED + 1, {**main, "change": CHANGES[name]})
            for name in ("1 made wrong", "3 made wrong", "1 made flaky") for r in (3, 5, "auto")]
    # Suite size: the same share of flaky questions (a quarter at p=0.5) in a smaller and a larger suite.
    out += [("size", f"{q} questions, {q // 4} at p=0.5, repeats {r}", r, pairs, SEED,
             {"flakiness": (q // 4, 0.5), "questions": q}) for q in (30, 120) for r in (5, "auto")]
    return out


def merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Two chunks of one setting as one row."""
    def add(x: dict[str, int], y: dict[str, int]) -> dict[str, int]:
        return {k: x.get(k, 0) + y.get(k, 0) for k in x.keys() | y.keys()}

    pairs, failed = a["pairs"] + b["pairs"], a["failed"] + b["failed"]
    return {"pairs": pairs, "failed": failed, **wilson(failed, pairs), "fired": add(a["fired"], b["fired"]),
            "verdicts": add(a["verdicts"], b["verdicts"]), "calls": add(a["calls"], b["calls"])}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=1000)
    ap.add_argument("--power-pairs", type=int, default=300)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "flaky_gate.json")
    ap.add_argument("--only", nargs="*", default=[], help="run only the settings whose label holds one of these "
                    "texts; the others already in --out are kept")
    a = ap.parse_args()
    t0 = time.perf_counter()
    result: dict[str, Any] = json.loads(a.out.read_text()) if a.only and a.out.exists() else {}
    result["settings"] = {"questions": 60, "refusal_goldens": 8, "gated": GATED, "seed": SEED,
                          "flakiness": FLAKINESS, "changes": CHANGES, "interval": "Wilson 95%",
                          "question_sampling_resamples": 200,
                          "auto": {"repeats_max": AUTO_MOST, "repeats_agree": AUTO_AGREE, "repeats_first": AUTO_FIRST,
                                   "repeats_budget": AUTO_BUDGET,
                                   "baseline": "a repeats=auto run without a baseline (as first promoted; no budget)"},
                          "calls": "answers the scripted backend gave each side, summed over the pairs"}
    todo = [s for s in settings(a.pairs, a.power_pairs) if not a.only or any(t in s[1] for t in a.only)]
    for g, label, *_ in todo:
        result.get(g, {}).pop(label, None)
    chunks = [(g, label, reps, start, min(CHUNK, n - start), seed, spec)
              for g, label, reps, n, seed, spec in todo for start in range(0, n, CHUNK)]
    with Pool(a.workers) as pool:
        for group, label, row in pool.imap(_job, chunks):
            rows = result.setdefault(group, {})
            rows[label] = merge(rows[label], row) if label in rows else row
            r = rows[label]
            per = {side: round(c / r["pairs"], 1) for side, c in r["calls"].items()}
            print(f"{group:9s} {label:45s} {r['failed']:5d}/{r['pairs']} = {r['rate']:.3f} "
                  f"[{r['low']:.3f}, {r['high']:.3f}] {r['verdicts']} calls/pair {per}", flush=True)
            result["seconds"] = round(time.perf_counter() - t0, 1)
            a.out.parent.mkdir(parents=True, exist_ok=True)
            a.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
