"""The position curve measured: SmolLM2-135M with the relevant passage at each of N positions.

Run: python bench/position.py [--limit 30] [--passages 5] [--threads 1] [--data-dir DIR]
Writes bench/results/position.json: per position the correctness, n and 95% interval (and the mock ceiling on
the same prompts), the paired worst-vs-best comparison, what was skipped and why, and the run's seconds.

It runs `tier=position` as a user would (the CLI), with the response cache off so the seconds are the model's.
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

OUT = REPO / "bench" / "results" / "position.json"


def measure(data_dir: Path, run_dir: Path, overrides: list[str]) -> tuple[dict[str, Any], float]:
    cmd = [sys.executable, "-m", "nomad_eval", "tier=position", f"paths.data_dir={data_dir}",
           f"paths.run_dir={run_dir}", "quiet=true", "cache=false", *overrides]
    t = time.perf_counter()
    subprocess.run(cmd, cwd=REPO, env=ENV, check=True)
    return json.loads((run_dir / "report.json").read_text()), time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=30)
    ap.add_argument("--passages", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--data-dir", type=Path, default=REPO / ".nomad_eval")
    ap.add_argument("--run-dir", type=Path, default=None)
    args = ap.parse_args()
    overrides = ["model=smollm2", f"model.threads={args.threads}", "suite=core", f"limit={args.limit}",
                 "repeats=1", f"tier.passages={args.passages}"]
    run_dir = args.run_dir or Path(tempfile.mkdtemp(prefix="position-bench-"))
    report, seconds = measure(args.data_dir, run_dir, overrides)  # the run's cases stay there, to read
    curve = report["details"]["curve"]
    result = {
        "what": "correctness of SmolLM2-135M (embedded llama.cpp, temperature 0) with the relevant passage at "
                "each position among the same N-1 retrieved distractors, oracle mode, core suite",
        "command": "python -m nomad_eval tier=position " + " ".join(overrides),
        "model": report["identity"]["model"],
        "fingerprint": report["identity"]["fingerprint"],
        "passages": curve["passages"],
        "questions": curve["questions"],
        "curve": [{"position": p["position"], "correctness": p["correctness"], "n": p["n"],
                   "interval_95": [p["low"], p["high"]], "interval_method": p["method"], "mock_ceiling": p["mock"]}
                  for p in curve["points"]],
        "worst_minus_best": {"best": curve["best"], "worst": curve["worst"], "delta": curve["delta"],
                             "interval_95": [curve["delta_low"], curve["delta_high"]], "n": curve["questions"],
                             "test": curve["test"], "p_value": curve["p_value"]},
        "skipped": {k: len(v) for k, v in curve["skipped"].items()},
        "counts": report["counts"],
        "warnings": report["warnings"],
        "run_dir": str(run_dir),
        "seconds": round(seconds, 1),
        "timings": {k: round(v, 1) for k, v in report["timings"].items()},
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
