"""Reproduce the published all-MiniLM-L6-v2 SciFact figures through the retrieval tier.

Run: python bench/scifact.py [--data-dir DIR]. Needs ../shared/datasets/scifact (not a unit test).
Writes bench/results/scifact.json with our figures beside the published ones, and cross-checks
our nDCG@10 and recall@100 with pytrec_eval computed from the run's cases.jsonl.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PUBLISHED = {"ndcg@10": 0.64508, "recall@10": 0.78333, "recall@100": 0.925, "ndcg@100": 0.67665}
SOURCE = "MTEB results, all-MiniLM-L6-v2/SciFact.json (test split), as quoted in shared/datasets/scifact/README.md"


def trec_check(cases_path: Path) -> dict[str, float]:
    import pytrec_eval

    qrels, run = {}, {}
    for line in cases_path.read_text().splitlines():
        c = json.loads(line)
        qrels[c["id"]] = {d: 1 for d in c["relevant_doc_ids"]}
        docs: dict[str, float] = {}
        for r in c["retrieved"]:
            docs[r["doc_id"]] = max(docs.get(r["doc_id"], float("-inf")), r["final_score"])
        run[c["id"]] = docs
    ev = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.100"})
    res = ev.evaluate(run)
    n = len(res)
    return {
        "ndcg@10": sum(r["ndcg_cut_10"] for r in res.values()) / n,
        "recall@100": sum(r["recall_100"] for r in res.values()) / n,
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", default=str(REPO / ".nomad_eval"))
    args = ap.parse_args()
    run_dir = Path(tempfile.mkdtemp(prefix="scifact-"))
    t = time.perf_counter()
    cmd = [sys.executable, "-m", "nomad_eval", "+experiment=scifact", f"paths.data_dir={args.data_dir}",
           f"paths.run_dir={run_dir}", "quiet=true"]
    subprocess.run(cmd, cwd=REPO, check=True)
    wall = time.perf_counter() - t
    report = json.loads((run_dir / "report.json").read_text())
    ours = {k: report["metrics"][k] for k in PUBLISHED}
    trec = trec_check(run_dir / "cases.jsonl")
    result = {
        "dataset": "BEIR SciFact, test split (300 queries)",
        "published_source": SOURCE,
        "published": PUBLISHED,
        "nomad_eval": ours,
        "pytrec_eval_from_cases": trec,
        "abs_diff": {k: abs(ours[k] - PUBLISHED[k]) for k in PUBLISHED},
        "within_0.01_ndcg@10": abs(ours["ndcg@10"] - PUBLISHED["ndcg@10"]) <= 0.01,
        "wall_seconds": round(wall, 1),
        "embedding_model_calls": report["counts"]["embedding_model_calls"],
        "fingerprint": report["identity"]["fingerprint"],
        "versions": report["provenance"]["versions"],
    }
    out = REPO / "bench" / "results" / "scifact.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    for k in PUBLISHED:
        print(f"{k:11s} ours {ours[k]:.5f}  published {PUBLISHED[k]:.5f}  diff {ours[k] - PUBLISHED[k]:+.5f}")
    print(f"pytrec_eval from cases.jsonl: {trec}")
    print(f"wrote {out}")
    return 0 if result["within_0.01_ndcg@10"] else 1


if __name__ == "__main__":
    sys.exit(main())
