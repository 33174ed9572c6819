"""One real comparison with SmolLM2: wall time and model calls of a verdict at repeats=5 against repeats=auto.

    python bench/smollm2_auto.py [--limit N] [--temperature T]

The first N goldens of the core suite, mode=noretrieval, SmolLM2-135M in process (llama.cpp), sampled at
temperature T so that answers vary. For each setting, a baseline run and then a run gated against it
(compare.after_run=true), both through the CLI with the response cache off (every answer a model call). The calls
are the backend's own count (report counts.model_calls: the calls that reached llama.cpp, the token probes
included). Writes bench/results/smollm2_auto.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def run(work: Path, name: str, repeats: str, limit: int, temperature: float, seed: int, *extra: str
        ) -> dict[str, Any]:
    out = work / name
    cmd = [sys.executable, "-m", "nomad_eval", "tier=generation", "model=smollm2", "mode=noretrieval",
           f"repeats={repeats}", f"limit={limit}", f"tier.temperature={temperature}", f"seed={seed}", "cache=false",
           "quiet=true", f"paths.data_dir={work / 'data'}", f"paths.baselines_dir={work / 'baselines'}",
           f"paths.run_dir={out}", *extra]
    t = time.perf_counter()
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=1800)
    seconds = time.perf_counter() - t
    if done.returncode not in (0, 1):
        raise SystemExit(f"{name}: exit {done.returncode}: {done.stderr[-2000:]}")
    report = json.loads((out / "report.json").read_text())
    gate = report.get("gate") or {}
    return {"exit_code": done.returncode, "seconds": round(seconds, 1),
            "model_calls": report["counts"]["model_calls"], "cases": report["counts"]["cases"],
            "verdict": gate.get("verdict"), "repeats": report["counts"].get("repeats")}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=10)
    ap.add_argument("--temperature", type=float, default=0.7)
    ap.add_argument("--work", type=Path, default=Path("/tmp/nomad_smollm2_auto"))
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "smollm2_auto.json")
    ap.add_argument("--settings", nargs="*", default=["5", "auto"], help="repeats settings; others in --out kept")
    a = ap.parse_args()
    result: dict[str, Any] = json.loads(a.out.read_text()) if a.out.exists() else {}
    result.update({"suite": "core", "limit": a.limit, "mode": "noretrieval", "model": "smollm2",
                   "temperature": a.temperature})
    for repeats in a.settings:
        base = run(a.work, f"r{repeats}-baseline", repeats, a.limit, a.temperature, 1)
        gated = run(a.work, f"r{repeats}-run", repeats, a.limit, a.temperature, 2, "compare.after_run=true",
                    f"compare.baseline={a.work / f'r{repeats}-baseline'}")
        result[f"repeats={repeats}"] = {"baseline": base, "run": gated}
        print(json.dumps({repeats: result[f"repeats={repeats}"]}), flush=True)
        a.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
