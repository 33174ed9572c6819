"""Does noise from question history hold the gate's false-alarm rate at repeats = 1?
python bench/history_noise.py [--pairs N] [--power-pairs N] [--history 0 2 4]

Issue 41, Deliver 2: with one repeat on both sides of a backend whose answers vary, the run-to-run noise comes
from the question's history (earlier runs of the same golden and system). Here each pair is a baseline and a run
asked once per question, plus H earlier runs of the baseline's system asked once per question (its history);
all go through the gate's own pure function (`compare_questions` with `History`, every headline metric of the
mode gated together), nothing of the gate re-implemented. The suites, the scripted backend and the case records
are bench/flaky_gate.py's. For each setting: the share of pairs that do not pass (the false-alarm rate of an
unchanged system), the share whose verdict is "cannot tell" (some gated metric not measured) and the share that
finds a regression (with six always-right questions made always wrong: the power), each with its n and a Wilson
95% interval. H = 0 is the rule without history. Seeded (numpy's default_rng per setting and pair). Writes
bench/results/history_noise.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from multiprocessing import Pool
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from bench.flaky_gate import (  # noqa: E402
    CHANGES,
    FLAKINESS,
    GATED,
    ScriptedModel,
    Suite,
    changed,
    draws,
    gate,
    records,
    suite,
    wilson,
)
from nomad_eval.core.noise import History  # noqa: E402
from nomad_eval.core.questions import Question, questions_from_cases  # noqa: E402
from nomad_eval.records import decode  # noqa: E402

SEED = 4102
CHUNK = 100  # pairs per task, so both workers stay busy


def history(rng: np.random.Generator, s: Suite, runs: int) -> History:
    """`runs` earlier runs of the system `s`, each asking every question once: its questions' history."""
    out: dict[str, list[Question]] = {}
    for _ in range(runs):
        for q in questions_from_cases([decode(c) for c in records(s, draws(ScriptedModel(s, rng), 1))]):
            out.setdefault(q.key, []).append(q)
    return History(out, runs)


def shares(base: Suite, run: Suite, runs: int, pairs: int, seed: int, start: int) -> dict[str, Any]:
    """Over `pairs` pairs (numbered from `start`): how many do not pass, how many say "cannot tell", what fired."""
    failed = cannot = found = 0
    fired: dict[str, int] = {}
    for k in range(start, start + pairs):
        rng = np.random.default_rng([seed, runs, k])
        earlier = history(rng, base, runs) if runs else None
        b = records(base, draws(ScriptedModel(base, rng), 1))
        r = records(run, draws(ScriptedModel(run, rng), 1))
        v = gate(b, r, seed=k, history=earlier)
        failed += v.exit_code != 0
        cannot += bool(v.unmeasured)
        found += bool(v.regressions)
        for m in v.metrics:
            if m.gated and m.outcome not in ("within tolerance", "not gated"):
                fired[f"{m.name}: {m.outcome}"] = fired.get(f"{m.name}: {m.outcome}", 0) + 1
    return {"pairs": pairs, "failed": failed, "cannot_tell": cannot, "regression": found, "fired": fired}


def _job(task: tuple[str, str, int, int, int, int, tuple[int, float], str | None]
         ) -> tuple[str, str, dict[str, Any]]:
    group, label, runs, start, pairs, seed, (flaky, p), change = task
    base = suite(flaky=flaky, p=p)
    run = changed(base, *CHANGES[change]) if change else base
    return group, label, shares(base, run, runs, pairs, seed, start)


def merge(a: dict[str, Any] | None, b: dict[str, Any]) -> dict[str, Any]:
    """Two chunks of one setting as one row, with the rates' Wilson intervals."""
    if a is None:
        a = {"pairs": 0, "failed": 0, "cannot_tell": 0, "regression": 0, "fired": {}}
    pairs = a["pairs"] + b["pairs"]
    counts = {k: a[k] + b[k] for k in ("failed", "cannot_tell", "regression")}
    fired = {k: a["fired"].get(k, 0) + b["fired"].get(k, 0) for k in a["fired"].keys() | b["fired"].keys()}
    row: dict[str, Any] = {"pairs": pairs, "failed": counts["failed"], **wilson(counts["failed"], pairs)}
    for k in ("cannot_tell", "regression"):  # each with its own rate and Wilson interval
        w = wilson(counts[k], pairs)
        row |= {k: counts[k], f"{k}_rate": w["rate"], f"{k}_low": w["low"], f"{k}_high": w["high"]}
    return row | {"fired": dict(sorted(fired.items()))}


def tasks(pairs: int, power_pairs: int, runs: list[int], bare: int) -> list[tuple[str, str, int, int, int, int,
                                                                                    tuple[int, float], str | None]]:
    """Every chunk: each flakiness setting unchanged, and six always-right questions made wrong, at each H (H = 0,
    today's rule, on `bare` pairs of each)."""
    out = []
    for h in runs:
        for name, fl in FLAKINESS.items():
            n, m = (pairs, power_pairs) if h else (bare, bare)
            rows = [("unchanged", f"{name}, H={h}", None, n, SEED),
                    ("power", f"{name}, 6 made wrong, H={h}", "6 made wrong", m, SEED + 1)]
            out += [(g, label, h, start, min(CHUNK, n - start), seed, fl, change)
                    for g, label, change, n, seed in rows for start in range(0, n, CHUNK)]
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=1000)
    ap.add_argument("--power-pairs", type=int, default=300)
    ap.add_argument("--history", type=int, nargs="+", default=[0, 2, 4], help="earlier runs H (0: no history)")
    ap.add_argument("--bare-pairs", type=int, default=200, help="pairs of each setting at H = 0 (today's rule)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "history_noise.json")
    a = ap.parse_args()
    t0 = time.perf_counter()
    result: dict[str, Any] = {"settings": {
        "questions": 60, "refusal_goldens": 8, "gated": GATED, "seed": SEED, "flakiness": FLAKINESS,
        "repeats": "1 on both sides", "history": "H earlier runs of the baseline's system, each asking every "
        "question once", "change": "6 always-right questions made always wrong", "interval": "Wilson 95%",
        "question_sampling_resamples": 200}}
    with Pool(a.workers) as pool:
        for group, label, row in pool.imap(_job, tasks(a.pairs, a.power_pairs, a.history, a.bare_pairs)):
            rows = result.setdefault(group, {})
            rows[label] = r = merge(rows.get(label), row)
            print(f"{group:9s} {label:40s} {r['failed']:5d}/{r['pairs']} = {r['rate']:.3f} "
                  f"[{r['low']:.3f}, {r['high']:.3f}] cannot tell {r['cannot_tell_rate']:.3f} "
                  f"regression {r['regression_rate']:.3f}", flush=True)
            result["seconds"] = round(time.perf_counter() - t0, 1)
            a.out.parent.mkdir(parents=True, exist_ok=True)
            a.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
