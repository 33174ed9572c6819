"""Graded relevance verdicts from token probabilities against the argmax verdict: python bench/judge_logprobs.py

The embedded SmolLM2 judges every example of the shipped relevance labels (goldens/labels/relevance.jsonl) once,
as `tier=calibrate` would (the relevance rubric, temperature 0, seed 0, judging.retries and judging.max_tokens
from the config), with the token probabilities llama.cpp returns. Each example then has two scores:

- argmax: the verdict the judge wrote (0/1/2);
- weighted: the mean of 0/1/2 weighted by the judge's probabilities at the verdict token, renormalised over the
  three digits (nomad_eval.judges.judge.weighted_score), and that mean rounded (half up) to the scale.

Reported against the human labels: agreement of argmax and of the rounded weighted score, over all examples (an
unparseable verdict counts as a disagreement for both) and among parsed ones, with Wilson 95% intervals; the
discordant pairs and McNemar's exact p for the difference; Spearman's rho of each against the labels with a
bootstrap 95% interval; and the mean absolute error to the label. One thread for llama.cpp, so it can run
beside another llama.cpp job. Writes bench/results/judge_logprobs.json.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from bench.run import compose  # noqa: E402
from nomad_eval.backends.response_cache import ResponseCache  # noqa: E402
from nomad_eval.cli.config_check import typed  # noqa: E402
from nomad_eval.config.judging import judge_settings  # noqa: E402
from nomad_eval.judges.judge import TOP_LOGPROBS, judge  # noqa: E402
from nomad_eval.judges.run_judges import judge_chat, rubrics  # noqa: E402

LABELS = REPO / "goldens" / "labels" / "relevance.jsonl"
OUT = REPO / "bench" / "results" / "judge_logprobs.json"
BOOTSTRAP = 2000


def round_half_up(x: float) -> int:
    return math.floor(x + 0.5)


def share(hits: int, n: int) -> dict[str, Any]:
    low, high = proportion_confint(hits, n, alpha=0.05, method="wilson") if n else (None, None)
    return {"value": hits / n if n else None, "hits": hits, "n": n, "wilson95": [low, high]}


def rho(labels: list[int], scores: list[float], seed: int) -> dict[str, Any]:
    """Spearman's rho and a percentile bootstrap interval (resamples where a side is constant are skipped).
    Null when a side is constant (a judge that always writes the same verdict): rho is undefined there."""
    x, y = np.array(labels, float), np.array(scores, float)
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return {"value": None, "bootstrap95": [None, None], "n": len(x)}
    point = float(stats.spearmanr(x, y).statistic)
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(BOOTSTRAP):
        idx = rng.integers(0, len(x), len(x))
        if np.ptp(x[idx]) > 0 and np.ptp(y[idx]) > 0:
            draws.append(float(stats.spearmanr(x[idx], y[idx]).statistic))
    low, high = np.percentile(draws, [2.5, 97.5]) if draws else (math.nan, math.nan)
    return {"value": point, "bootstrap95": [float(low), float(high)], "n": len(x)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, help="response cache folder (default: a fresh temporary one)")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()

    cfg = compose("judge=relevance", "model@judge.model=smollm2", f"judge.model.threads={args.threads}")
    rubric = rubrics(judge_settings(typed(cfg)))[0]
    labels = [json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines() if line.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = args.data_dir or Path(tmp)
        data_dir.mkdir(parents=True, exist_ok=True)
        cache = ResponseCache(data_dir / "responses.sqlite")
        chat = judge_chat(judge_settings(typed(cfg)), cache)
        t0 = time.perf_counter()
        rows = []
        for lab in labels:
            j = judge(chat, rubric, lab["question"], lab["chunks"], lab["answer"], int(cfg.seed),
                      int(cfg.judging.retries), int(cfg.judging.max_tokens))
            rows.append({"id": lab["id"], "label": lab["label"], "verdict": j.verdict,
                         "score_weighted": j.score_weighted, "attempts": j.attempts})
        seconds = time.perf_counter() - t0
        identity = chat.identity()
        chat.model.close()
        cache.close()

    n = len(rows)
    parsed = [r for r in rows if r["verdict"] is not None]
    weighted = [r for r in parsed if r["score_weighted"] is not None]
    for r in rows:
        r["weighted_rounded"] = None if r["score_weighted"] is None else round_half_up(r["score_weighted"])
    argmax_ok = [r["verdict"] == r["label"] for r in rows]
    rounded_ok = [r["weighted_rounded"] == r["label"] for r in rows]
    only_argmax = sum(a and not b for a, b in zip(argmax_ok, rounded_ok, strict=True))
    only_rounded = sum(b and not a for a, b in zip(argmax_ok, rounded_ok, strict=True))
    discordant = only_argmax + only_rounded
    mcnemar = stats.binomtest(only_rounded, discordant, 0.5).pvalue if discordant else 1.0
    lab_w = [r["label"] for r in weighted]
    result = {
        "labels_file": str(LABELS.relative_to(REPO)), "rubric": rubric.key, "judge": identity,
        "top_logprobs": TOP_LOGPROBS, "retries": int(cfg.judging.retries),
        "max_tokens": int(cfg.judging.max_tokens), "seconds": round(seconds, 1),
        "n": n, "parsed": len(parsed), "with_weights": len(weighted),
        "agreement_all": {"argmax": share(sum(argmax_ok), n), "weighted_rounded": share(sum(rounded_ok), n)},
        "agreement_parsed": {
            "argmax": share(sum(r["verdict"] == r["label"] for r in weighted), len(weighted)),
            "weighted_rounded": share(sum(r["weighted_rounded"] == r["label"] for r in weighted), len(weighted))},
        "discordant": {"argmax_only_right": only_argmax, "weighted_only_right": only_rounded,
                       "mcnemar_exact_p": mcnemar},
        "spearman": {"argmax": rho(lab_w, [r["verdict"] for r in weighted], 1),
                     "weighted": rho(lab_w, [r["score_weighted"] for r in weighted], 1)},
        "mean_abs_error": {
            "argmax": float(np.mean([abs(r["verdict"] - r["label"]) for r in weighted])) if weighted else None,
            "weighted": float(np.mean([abs(r["score_weighted"] - r["label"]) for r in weighted]))
            if weighted else None},
        # Does the weighted score still order the labels when the argmax cannot (one verdict for all)?
        "weighted_mean_by_label": {str(v): float(np.mean([r["score_weighted"] for r in weighted if r["label"] == v]))
                                   if any(r["label"] == v for r in weighted) else None for v in rubric.scale},
        "label_counts": {str(v): sum(r["label"] == v for r in rows) for v in rubric.scale},
        "verdict_counts": {str(v): sum(r["verdict"] == v for r in rows) for v in rubric.scale},
        "rounded_counts": {str(v): sum(r["weighted_rounded"] == v for r in rows) for v in rubric.scale},
        "rows": rows,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    a, w = result["agreement_all"]["argmax"], result["agreement_all"]["weighted_rounded"]
    sp = result["spearman"]
    print(f"n={n} (parsed {len(parsed)}, with weights {len(weighted)}): agreement argmax {a['value']:.3f}, "
          f"rounded weighted {w['value']:.3f}; discordant {only_argmax} vs {only_rounded} (McNemar p={mcnemar:.3f}); "
          f"Spearman argmax {sp['argmax']['value']}, weighted {sp['weighted']['value']}; "
          f"written to {OUT.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
