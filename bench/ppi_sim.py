"""Prediction-powered judge estimates checked by simulation against truths we set: python bench/ppi_sim.py

One simulated run: N judged cases drawn from a population whose true mean (of the human label, 0-1 scale) is
known; a judge that agrees with the truth with a given accuracy and is off by a given bias on the mean; 50 cases
labelled uniformly at random. For 1,000 runs per setting it counts how often each 95% interval covers the true
mean: prediction-powered (nomad_eval.core.ppi: the small-sample adjusted interval the reports lead with,
ppi-python's classic lam=1 interval around the same estimate, and PPI++'s tuned lam), the labels alone
(classical CLT interval on the 50), and the naive interval around the judge mean over all N.

Settings: pass/fail truth (N = 200 and 1,000), graded 0/1/2 truth (N = 500), unparseable verdicts that are more
common on failing answers (scored as the middle of the scale by the kernel), and runs with 3 repeats per question
(labelled by question, one repeat each); and 100 labels in the one corner where 50 fall short. Seeded; runs on
two processes. Writes bench/results/ppi.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass
from multiprocessing import Pool
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from nomad_eval.core.ppi import corrected_mean  # noqa: E402

SEED = 20261
LEVEL = 0.95
LABELS = 50
BIASES = (-0.10, 0.0, 0.10)
ACCURACIES = (0.6, 0.75, 0.9)
PASS_RATE = 0.7                                   # pass/fail truth: P(pass)
GRADES = np.array([0.0, 0.5, 1.0])                # 0/1/2 divided by 2, as reports scale graded verdicts
GRADE_MIX = np.array([0.25, 0.25, 0.5])
NULL_RATE = {"fail": 0.15, "pass": 0.05}          # unparseable verdicts, three times as common on failing answers
REPEATS = 3
REPEAT_FLIP = 0.1                                 # a repeat's answer differs in verdict from its question's first


@dataclass(frozen=True)
class Setting:
    name: str
    scale: str           # "binary" or "graded"
    cases: int           # N judged cases in one run
    bias: float          # judge mean minus true mean, on the 0-1 scale
    accuracy: float      # share of cases where the judge's verdict equals the truth
    nulls: bool = False
    repeats: int = 1
    labels: int = LABELS


def confusion(s: Setting) -> tuple[np.ndarray, np.ndarray, np.ndarray] | str:
    """Truth values, their probabilities, and P(verdict | truth) rows with the setting's accuracy and bias, or why
    no such judge exists."""
    err = 1 - s.accuracy
    if s.scale == "binary":
        p = PASS_RATE * (1 - REPEAT_FLIP) + (1 - PASS_RATE) * REPEAT_FLIP if s.repeats > 1 else PASS_RATE
        mix = np.array([1 - p, p])
        # Errors are false passes (mass fp) or false fails (mass ff): fp + ff = err, fp - ff = bias.
        fp, ff = (err + s.bias) / 2, (err - s.bias) / 2
        joint = np.array([[1 - p - fp, fp], [ff, p - ff]])
        values = np.array([0.0, 1.0])
    else:
        mix, values = GRADE_MIX, GRADES
        # Upward errors (mass up) spread evenly over 0->1, 0->2, 1->2, downward ones over 1->0, 2->1, 2->0;
        # each set moves the 0-1 mean by 2/3 of its mass, so up - down = 1.5 bias.
        up, down = (err + 1.5 * s.bias) / 2, (err - 1.5 * s.bias) / 2
        joint = np.array([[0, up / 3, up / 3], [down / 3, 0, up / 3], [down / 3, down / 3, 0]])
        joint[np.diag_indices(3)] = mix - joint.sum(axis=1)
    if (joint < -1e-12).any():
        return (f"no judge with accuracy {s.accuracy} can be off by {s.bias:+.2f} on this truth: it would need "
                "more errors in one direction than it makes")
    return values, mix, joint / joint.sum(axis=1, keepdims=True)


def truth_mean(s: Setting) -> float:
    model = confusion(s)
    assert not isinstance(model, str)
    return float(model[0] @ model[1])


def covers(iv: tuple[float, float] | tuple[None, None], truth: float) -> bool:
    return iv[0] is not None and iv[1] is not None and iv[0] <= truth <= iv[1]


def one_run(args: tuple[int, Setting, int]) -> dict[str, float]:
    import ppi_py

    index, s, rep = args
    rng = np.random.default_rng([SEED, index, rep])
    model = confusion(s)
    assert not isinstance(model, str)
    values, mix, rows = model
    truth = float(values @ mix)
    if s.repeats > 1:
        questions = s.cases // s.repeats
        first = rng.choice(len(values), size=questions, p=[1 - PASS_RATE, PASS_RATE])
        flip = rng.random((questions, s.repeats)) < REPEAT_FLIP
        y_idx = np.where(flip, 1 - first[:, None], first[:, None]).ravel()
    else:
        y_idx = rng.choice(len(values), size=s.cases, p=mix)
    # The judge's verdict, drawn from its row of the confusion matrix by inverse CDF.
    f_idx = (rng.random(len(y_idx))[:, None] > rows[y_idx].cumsum(axis=1)).sum(axis=1)
    y, f = values[y_idx], values[f_idx]
    null = np.zeros(len(y), dtype=bool)
    if s.nulls:
        null = rng.random(len(y)) < np.where(y_idx == 0, NULL_RATE["fail"], NULL_RATE["pass"])
    judge = {str(i): (None if null[i] else float(f[i])) for i in range(len(y))}
    if s.repeats > 1:
        picked = rng.choice(len(y) // s.repeats, size=s.labels, replace=False)
        labelled = picked * s.repeats + rng.integers(0, s.repeats, size=s.labels)
        groups: dict[str, str] | None = {str(i): str(i // s.repeats) for i in range(len(y))}
    else:
        labelled = rng.choice(len(y), size=s.labels, replace=False)
        groups = None
    labels = {str(i): float(y[i]) for i in labelled}

    out: dict[str, float] = {}
    variants = {"ppi": (groups, False), "ppi++": (groups, True)}
    if s.repeats > 1:
        variants["ppi_cases_as_independent"] = (None, False)
    step = 1.0 if s.scale == "binary" else 0.5
    for name, (g, tuned) in variants.items():
        r = corrected_mean(judge, labels, g, power_tuning=tuned, step=step)
        assert r.low is not None and r.high is not None and r.estimate is not None
        out[f"{name}.covered"] = covers((r.low, r.high), truth)
        out[f"{name}.width"] = r.high - r.low
        out[f"{name}.error"] = r.estimate - truth
        if name == "ppi":
            out["ppi.covers_run_mean"] = covers((r.low, r.high), float(y.mean()))
            assert r.adjusted_low is not None and r.adjusted_high is not None
            out["ppi_adjusted.covered"] = covers((r.adjusted_low, r.adjusted_high), truth)
            out["ppi_adjusted.width"] = r.adjusted_high - r.adjusted_low
            out["ppi_adjusted.error"] = r.estimate - truth
    parsed = f[~null]
    naive = ppi_py.classical_mean_ci(parsed, alpha=1 - LEVEL)
    out["naive.covered"] = covers((float(naive[0]), float(naive[1])), truth)
    out["naive.width"] = float(naive[1] - naive[0])
    out["naive.error"] = float(parsed.mean()) - truth
    only = ppi_py.classical_mean_ci(y[labelled], alpha=1 - LEVEL)
    out["labels_only.covered"] = covers((float(only[0]), float(only[1])), truth)
    out["labels_only.width"] = float(only[1] - only[0])
    out["labels_only.error"] = float(y[labelled].mean()) - truth
    return out


def settings() -> list[Setting]:
    grid = [Setting(f"binary-N{n}", "binary", n, b, a) for n in (200, 1000) for b in BIASES for a in ACCURACIES]
    grid += [Setting("graded-N500", "graded", 500, b, a) for b in BIASES for a in ACCURACIES]
    grid += [Setting("binary-N500-nulls", "binary", 500, b, 0.75, nulls=True) for b in BIASES]
    grid += [Setting("binary-300x3-repeats", "binary", 900, b, 0.75, repeats=REPEATS) for b in BIASES]
    # The one corner where 50 labels fall short (a 90%-accurate judge whose errors all go one way): with 100.
    grid += [Setting("binary-N1000-100labels", "binary", 1000, b, 0.9, labels=100) for b in (-0.10, 0.10)]
    return grid


def binomial_ci(hits: int, n: int) -> list[float]:
    ci = stats.binomtest(hits, n).proportion_ci(LEVEL, method="exact")
    return [round(float(ci.low), 4), round(float(ci.high), 4)]


def summarise(rows: list[dict[str, float]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in sorted({k.split(".")[0] for k in rows[0]}):
        hits = sum(bool(r[f"{name}.covered"]) for r in rows)
        out[name] = {"coverage": hits / len(rows), "ci95": binomial_ci(hits, len(rows)),
                     "mean_width": round(float(np.mean([r[f"{name}.width"] for r in rows])), 4),
                     "mean_error": round(float(np.mean([r[f"{name}.error"] for r in rows])), 4)}
    hits = sum(bool(r["ppi.covers_run_mean"]) for r in rows)
    out["ppi"]["coverage_of_the_runs_own_label_mean"] = hits / len(rows)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "ppi.json")
    a = ap.parse_args()
    started = time.perf_counter()
    cells: list[dict[str, Any]] = []
    runnable = []
    for i, s in enumerate(settings()):
        model = confusion(s)
        if isinstance(model, str):
            cells.append({**asdict(s), "skipped": model})
        else:
            runnable.append((i, s))
    with Pool(a.workers) as pool:
        for i, s in runnable:
            rows = pool.map(one_run, [(i, s, r) for r in range(a.runs)], chunksize=50)
            cells.append({**asdict(s), "true_mean": truth_mean(s), **summarise(rows)})
    fifty = [c for c in cells if "ppi" in c and c["labels"] == LABELS]

    def outside(name: str, by_ci: bool = False) -> list[str]:
        # by_ci: outside only when the coverage's own 95% Clopper-Pearson interval (1,000 runs) misses the band,
        # i.e. the miss is more than Monte Carlo error.
        return [f"{c['name']} bias {c['bias']:+.2f} accuracy {c['accuracy']}: {c[name]['coverage']:.3f} "
                f"{c[name]['ci95']}" for c in fifty
                if (c[name]["ci95"][1] < 0.93 or c[name]["ci95"][0] > 0.97 if by_ci
                    else not 0.93 <= c[name]["coverage"] <= 0.97)]

    biased = [c for c in fifty if c["bias"] != 0]
    result: dict[str, Any] = {
        "settings": {"seed": SEED, "runs_per_setting": a.runs, "labels": LABELS, "level": LEVEL,
                     "interval": "nomad_eval.core.ppi.corrected_mean: ppi_adjusted (the reported interval: "
                                 "ppi-python's estimate, rectifier variance with half a pseudo-disagreement each "
                                 "way, one scale step: 1 binary, 0.5 graded), ppi (ppi_py.ppi_mean_ci, lam=1), "
                                 "ppi++ (tuned lam); naive and labels_only: ppi_py.classical_mean_ci",
                     "workers": a.workers, "pass_rate": PASS_RATE, "graded_mix": GRADE_MIX.tolist(),
                     "null_rate": NULL_RATE, "repeats": REPEATS, "repeat_flip": REPEAT_FLIP,
                     "true_mean": "the population mean the run's cases are drawn from (what PPI estimates)"},
        "cells": cells,
        "targets": {
            "ppi_adjusted_coverage_93_97_with_50_labels": not outside("ppi_adjusted"),
            "ppi_adjusted_with_50_labels_outside_93_97": outside("ppi_adjusted"),
            "ppi_adjusted_misses_93_97_beyond_monte_carlo_error": outside("ppi_adjusted", by_ci=True),
            "ppi_python_unadjusted_coverage_93_97_with_50_labels": not outside("ppi"),
            "ppi_python_unadjusted_misses_93_97_beyond_monte_carlo_error": outside("ppi", by_ci=True),
            "ppi_python_unadjusted_with_50_labels_outside_93_97": outside("ppi"),
            "naive_coverage_below_50pct_when_biased": all(c["naive"]["coverage"] < 0.5 for c in biased),
        },
        "seconds": round(time.perf_counter() - started, 1),
    }
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(result, indent=2) + "\n")
    report(result)


def report(r: dict[str, Any]) -> None:
    print(f"coverage of 95% intervals for the true mean, {r['settings']['runs_per_setting']} runs each, "
          f"{r['settings']['labels']} labels (mean width in brackets)")
    print(f"{'setting':24s} {'bias':>5s} {'acc':>5s}  {'PPI adjusted':>14s} {'PPI (ppi-py)':>14s} {'PPI++':>14s} "
          f"{'labels only':>14s} {'naive judge':>14s}")
    for c in r["cells"]:
        head = f"{c['name']:24s} {c['bias']:+5.2f} {c['accuracy']:5.2f}"
        if "skipped" in c:
            print(f"{head}  skipped: {c['skipped']}")
            continue
        cols = [f"{c[k]['coverage']:.3f} ({c[k]['mean_width']:.3f})"
                for k in ("ppi_adjusted", "ppi", "ppi++", "labels_only", "naive")]
        extra = f"  cases as independent {c['ppi_cases_as_independent']['coverage']:.3f}" \
            if "ppi_cases_as_independent" in c else ""
        print(f"{head}  " + " ".join(f"{col:>14s}" for col in cols) + extra)
    print("targets:", ", ".join(f"{k}={v}" for k, v in r["targets"].items() if isinstance(v, bool)),
          f"({r['seconds']} s)")
    for name in ("ppi_adjusted", "ppi_python_unadjusted"):
        print(f"runs with {r['settings']['labels']} labels, {name} outside 93-97%:",
              "; ".join(r["targets"][f"{name}_with_50_labels_outside_93_97"]) or "none",
              "| beyond Monte Carlo error:",
              "; ".join(r["targets"][f"{name}_misses_93_97_beyond_monte_carlo_error"]) or "none")


if __name__ == "__main__":
    main()
