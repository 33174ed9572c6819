"""Real CLI baseline/run pairs of an unchanged flaky system:
python bench/cli_pairs.py [--pairs N] [--repeats R] [--baseline-repeats B] [--history H]

A scripted OpenAI-compatible model on loopback (tests/servers/openai_compat.py) answers 60 goldens of the core
suite (52 answerable, 8 refusal goldens): 45 always right, 15 right with probability 0.5 on every call. Each pair
is two runs of `python -m nomad_eval tier=generation mode=noretrieval` (a baseline, then a run gated against it
with compare.after_run=true); baseline and run are the same system with fresh draws (cache=false), so every
failing pair is a false alarm. The calls are the server's own count. Writes bench/results/cli_pairs.json
(merged: one entry per repeats setting).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from nomad_eval.base.patterns import search  # noqa: E402
from tests.servers import openai_compat  # noqa: E402

FLAKY, P = 15, 0.5
REFUSE = "I cannot answer that from the documents."
WRONG = "I think it is something else entirely."


def literal(pattern: str) -> str:
    """A text the pattern's first alternative matches, for the plain patterns the core suite mostly uses."""
    first = pattern.split("|")[0]
    text = re.sub(r"\\W(\.\{[\d,]+\}|\{[\d,]+\})?", " ", first)
    text = re.sub(r"\\b|\(\?i\)|[()^$]", "", text)
    return re.sub(r"\\(.)", r"\1", text)


def right_answer(g: dict[str, Any]) -> str | None:
    if g["expectRefusal"]:
        return REFUSE
    text = "; ".join(literal(p) for p in g["mustInclude"]) + "."
    ok = all(search(p, text) for p in g["mustInclude"]) and not any(search(p, text) for p in g["mustNotInclude"])
    return text if ok and not g["turns"] else None


def suite(folder: Path) -> list[dict[str, Any]]:
    """60 goldens of the core suite whose right answer can be scripted: 52 answerable, 8 refusals."""
    rows = [json.loads(line) for line in (REPO / "goldens" / "core.jsonl").read_text().splitlines() if line]
    answerable = [g for g in rows if not g["expectRefusal"] and right_answer(g)][:52]
    refusals = [g for g in rows if g["expectRefusal"]][:8]
    chosen = answerable + refusals
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "flaky60.jsonl").write_text("".join(json.dumps(g) + "\n" for g in chosen))
    return chosen


class Model:
    """Right for steady goldens, right with probability P for the flaky ones; counts its answer calls."""

    def __init__(self, goldens: list[dict[str, Any]], seed: int) -> None:
        rng = random.Random(seed)
        self.right = {g["query"]: right_answer(g) for g in goldens}
        self.wrong = {g["query"]: (WRONG if not g["expectRefusal"] else "It is 42.") for g in goldens}
        self.flaky = set(rng.sample(sorted(self.right), FLAKY))
        self.rng, self.calls, self.lock = rng, 0, threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str:
        last = body["messages"][-1]["content"]
        if body.get("max_tokens") == 1 or last.startswith("Rewrite"):
            return "ok"
        query = next((q for q in self.right if q in last), None)
        if query is None:
            return "ok"
        with self.lock:
            self.calls += 1
            draw = self.rng.random()
        return str(self.right[query]) if query not in self.flaky or draw < P else self.wrong[query]


def run(url: str, folder: Path, out: Path, repeats: str, *extra: str) -> tuple[int, float]:
    t = time.perf_counter()
    cmd = [sys.executable, "-m", "nomad_eval", "tier=generation", "model=openai", "model.name=scripted",
           f"model.base_url={url}", "mode=noretrieval", f"repeats={repeats}", "cache=false", "quiet=true",
           f"data.goldens_dir={folder}", "suite=flaky60", f"paths.data_dir={folder / 'data'}",
           f"paths.baselines_dir={folder / 'baselines'}", f"paths.run_dir={out}", *extra]
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    if done.returncode not in (0, 1):
        raise SystemExit(f"exit {done.returncode}: {done.stderr[-2000:]}")
    return done.returncode, time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=40)
    ap.add_argument("--repeats", default="auto")
    ap.add_argument("--baseline-repeats", default=None, help="the baseline's repeats (default: --repeats)")
    ap.add_argument("--history", type=int, default=0, help="earlier runs of the baseline's system before each "
                    "pair, at the baseline's repeats, which the gated run reads as its questions' history")
    ap.add_argument("--work", type=Path, default=Path("/tmp/nomad_cli_pairs"))
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "cli_pairs.json")
    ap.add_argument("--deadline", type=float, default=1800, help="stop starting pairs after this many seconds")
    a = ap.parse_args()
    rb = a.baseline_repeats or a.repeats
    label = f"repeats={a.repeats}" if rb == a.repeats else f"baseline repeats={rb}, run repeats={a.repeats}"
    label += f", history {a.history} run(s)" if a.history else ""
    folder = a.work / re.sub(r"[^A-Za-z0-9]+", "-", label)  # a path Hydra's override grammar takes as it is
    goldens = suite(folder)
    t0 = time.perf_counter()
    rows = []
    for k in range(a.pairs):
        if time.perf_counter() - t0 > a.deadline:
            break
        model = Model(goldens, seed=1000 * k + 1)
        with openai_compat.serve("scripted", model) as url:
            here = folder / "runs" / f"pair{k}"
            for h in range(a.history):
                run(url, folder, here / f"earlier{h}", rb)
            calls_earlier = model.calls
            base = here / "baseline"
            _, tb = run(url, folder, base, rb)
            calls_base = model.calls - calls_earlier
            # The pair's own folder is where the gated run looks for its questions' history.
            code, tr = run(url, folder, here / "run", a.repeats, "compare.after_run=true",
                           f"compare.baseline={base}", f"browse.roots=[{here}]")
        report = json.loads((folder / "runs" / f"pair{k}" / "run" / "report.json").read_text())
        rows.append({"pair": k, "exit_code": code, "verdict": report["gate"]["verdict"],
                     "calls_baseline": calls_base, "calls_run": model.calls - calls_base - calls_earlier,
                     "seconds_baseline": round(tb, 1), "seconds_run": round(tr, 1)})
        print(json.dumps(rows[-1]), flush=True)
    failed = sum(r["exit_code"] != 0 for r in rows)
    result: dict[str, Any] = json.loads(a.out.read_text()) if a.out.exists() else {}
    result[label] = {
        "pairs": len(rows), "failed": failed, "questions": len(goldens), "flaky": FLAKY, "p": P,
        "mean_calls_run": sum(r["calls_run"] for r in rows) / max(1, len(rows)),
        "mean_calls_baseline": sum(r["calls_baseline"] for r in rows) / max(1, len(rows)),
        "seconds": round(time.perf_counter() - t0, 1), "rows": rows}
    a.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"{label}: {failed} of {len(rows)} pairs failed")


if __name__ == "__main__":
    main()
