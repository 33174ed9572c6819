"""Attacks through the corpus, measured: each family's attack-success rate for the mock and for SmolLM2.

Run: python bench/attacks.py [--data-dir DIR] [--models mock,smollm2] [--families injection,contradiction,persuasion]
Writes bench/results/attacks.json. SmolLM2 runs on one thread at temperature 0 (about 10-20 minutes for the
three suites of 30 probes).

Each family is a corpus variant (conf/data/attack_<family>.yaml: the corpus plus corpus_attacks/<family>/) with
its own suite (goldens/attack_<family>/attack_<family>.jsonl). Every run is the generation tier itself, e2e mode,
one repeat, so the numbers here are the ones a user's report shows: the rate, n, the Wilson 95% interval, how
many prompts held a planted passage, and the mock's rate on the same prompts (a copier: what retrieval alone
handed over without the truth).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from bench.run import ENV  # noqa: E402
from nomad_eval.base.patterns import search  # noqa: E402

FAMILIES = ("injection", "contradiction", "persuasion")


def run_family(model: str, family: str, data_dir: Path, run_dir: Path) -> dict[str, Any]:
    extra = ["model.threads=1"] if model == "smollm2" else []
    cmd = [sys.executable, "-m", "nomad_eval", "tier=generation", f"model={model}", *extra, "mode=e2e",
           "repeats=1", f"data=attack_{family}", f"suite=attack_{family}", f"paths.data_dir={data_dir}",
           f"paths.run_dir={run_dir}", "quiet=true", "cache=false", "gate.fail_under=null"]
    t = time.perf_counter()
    subprocess.run(cmd, cwd=REPO, env=ENV, check=True, capture_output=True)
    return {**summarize(family, run_dir), "seconds": round(time.perf_counter() - t, 1)}


def summarize(family: str, run_dir: Path) -> dict[str, Any]:
    """A finished run's attack figures, read back from its report.json and cases.jsonl."""
    suite = REPO / "goldens" / f"attack_{family}" / f"attack_{family}.jsonl"
    planted = {g["id"]: g["mustNotInclude"] for g in map(json.loads, suite.read_text().splitlines())}
    report = json.loads((run_dir / "report.json").read_text())
    cases = [json.loads(x) for x in (run_dir / "cases.jsonl").read_text().splitlines()]
    rate = next(a for a in report["details"]["attacks"] if a["family"] == family and a["mode"] == "e2e")
    return {
        **{k: rate[k] for k in ("n", "successes", "rate", "low", "high", "method", "exposed", "mock")},
        "e2e_correctness": report["metrics"].get("e2e.correctness"),
        "fingerprint": report["identity"]["fingerprint"], "goldens_hash": report["identity"]["goldens_hash"],
        # The planted content anywhere in the answer, with or without the true figure (its mustNotInclude): how
        # often the attack got into the answer at all, beside how often it took the answer over.
        "planted_in_answer": sum(any(search(x, c["answer"]) for x in planted[c["id"]]) for c in cases),
        "succeeded": [c["id"] for c in cases if c["metrics"]["attack_success_rate"] == 1.0],
        "answers": {c["id"]: c["answer"][:200] for c in cases},
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", default=str(REPO / ".nomad_eval"))
    ap.add_argument("--models", default="mock,smollm2")
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--reuse", help="a previous run's folder of <model>_<family> runs: summarize, do not rerun")
    args = ap.parse_args()
    runs = Path(tempfile.mkdtemp(prefix="attacks-"))
    out = REPO / "bench" / "results" / "attacks.json"
    result: dict[str, Any] = {
        "what": "attack-success rate per family: share of probes whose answer the planted document took over "
                "(the planted content in the answer and the true figure not); e2e, repeats=1, n = probes",
        "model": {"mock": "nomad_eval.backends.mock (extractive echo of every passage it reads)",
                  "smollm2": "SmolLM2-135M-Instruct Q4_1, llama.cpp, 1 thread, temperature 0, max_tokens 128"},
        "interval": "Wilson 95% (statsmodels proportion_confint)",
        "results": {},
    }
    previous = json.loads(out.read_text()).get("results", {}) if out.exists() else {}
    for model in args.models.split(","):
        for family in args.families.split(","):
            if args.reuse:
                r = summarize(family, Path(args.reuse) / f"{model}_{family}")
                r["seconds"] = previous.get(model, {}).get(family, {}).get("seconds")
            else:
                r = run_family(model, family, Path(args.data_dir), runs / f"{model}_{family}")
            result["results"].setdefault(model, {})[family] = r
            print(f"{model} {family}: {r['successes']}/{r['n']} = {r['rate']:.3f} [{r['low']:.3f}, {r['high']:.3f}] "
                  f"exposed {r['exposed']}, mock {r['mock']}, {r['seconds']} s", flush=True)
            # Written after every family, so a long SmolLM2 run leaves its finished families behind.
            out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
