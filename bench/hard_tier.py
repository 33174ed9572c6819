"""The hard tier measured: what each distractor set does to the core suite's retrieval.

Run: python bench/hard_tier.py [--data-dir DIR] [--sets scifact,scifact-whole,revisions] [--scifact DIR]
Needs ../shared/datasets/scifact for the SciFact sets. Writes bench/results/hard_tier.json.

For every set it runs the retrieval tier as a user would (the CLI, the default pipeline) and then looks
under the metrics: a deep raw-cosine search (top 100, no threshold) per answerable question counts the
distractor passages that score above the best chunk of a relevant document. A distractor can only lower
recall@5 by outscoring relevant chunks, so that count and the score margin explain the metric either way.

It also asks what a hard tier is for: does it catch a modest regression that the plain store lets through?
The regression is the pipeline reduced to raw cosine order (no boosts, no same-document penalty), taken from
the run's ablation; compare's verdict uses each metric's own tolerance from the registry.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from bench.run import ENV, compose  # noqa: E402

METRICS = ("recall@5", "mrr@5", "hit@1", "ndcg@5", "chunk_precision@5")
SETS: dict[str, list[str]] = {
    "none": [],
    "scifact": ["store.distractors=scifact"],
    "scifact-whole": ["store.distractors=scifact", "store.distractor_chunking=whole"],
    "revisions": ["store.distractors=revisions"],
}
DEEP = 100


def sensitivity(report: dict[str, Any]) -> dict[str, Any]:
    """The raw-cosine ablation as a regression: its deltas and whether compare would flag each one."""
    from nomad_eval.metrics.registry import spec_for

    full, raw = report["metrics"], report["details"]["ablation"]["raw cosine"]
    out: dict[str, Any] = {}
    for m in ("recall@5", "mrr@5", "hit@1", "ndcg@5"):
        spec = spec_for(m)
        assert spec is not None
        out[m] = {"delta": round(raw[m] - full[m], 4), "caught": spec.regressed(full[m], raw[m])}
    return out


def run_cli(data_dir: Path, run_dir: Path, overrides: list[str]) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "nomad_eval", "tier=retrieval", "suite=core", f"paths.data_dir={data_dir}",
           f"paths.run_dir={run_dir}", "quiet=true", "ablate=true", *overrides]
    subprocess.run(cmd, cwd=REPO, env=ENV, check=True, capture_output=True)
    return json.loads((run_dir / "report.json").read_text())  # type: ignore[no-any-return]


def deep_displacement(data_dir: Path, overrides: list[str], cases_path: Path) -> dict[str, Any]:
    """Per answerable question: distractors scoring above the best relevant chunk in a raw top-100 search."""
    from nomad_eval.cli.config_check import typed
    from nomad_eval.config.settings import runtime

    rt = runtime(typed(compose(f"paths.data_dir={data_dir}", "suite=core", *overrides)))
    distractor_ids = {d.doc_id for d in rt.distractors}
    # The query text the pipeline embedded (glossary expansion included), as the run recorded it.
    answerable = [c for c in map(json.loads, cases_path.read_text().splitlines()) if c["relevant_doc_ids"]]
    vectors = rt.cached_embedder.embed_queries([c["expanded_query"] for c in answerable])
    above, margins, outscored = [], [], []
    with rt.store() as store:
        for c, v in zip(answerable, vectors, strict=True):
            hits = store.search(v, DEEP, None, None)
            rel = [h.score for h in hits if h.payload.get("doc_id") in c["relevant_doc_ids"]]
            dis = [h.score for h in hits if h.payload.get("doc_id") in distractor_ids]
            if not rel:
                continue
            above.append(sum(s > rel[0] for s in dis))
            if above[-1]:
                outscored.append(c["id"])
            margins.append(rel[0] - (dis[0] if dis else 0.0))
    return {
        "answerable": len(answerable),
        "relevant_in_top_100": len(above),
        "questions_where_a_distractor_outscores_every_relevant_chunk": len(outscored),
        "those_questions": outscored if len(outscored) <= 20 else outscored[:20] + ["..."],
        "distractors_above_best_relevant_mean": round(statistics.fmean(above), 3) if above else None,
        "margin_best_relevant_minus_best_distractor": {
            "min": round(min(margins), 4), "p10": round(statistics.quantiles(margins, n=10)[0], 4),
            "median": round(statistics.median(margins), 4)} if margins else None,
    }


def top5_share(cases_path: Path, distractor_prefix: str | None) -> float:
    """The share of top-5 slots, over answerable questions, that distractor passages hold."""
    if distractor_prefix is None:
        return 0.0
    held = total = 0
    for line in cases_path.read_text().splitlines():
        c = json.loads(line)
        if c["expect_refusal"]:
            continue
        top = c["retrieved"][:5]
        total += len(top)
        held += sum(r["doc_id"].startswith(distractor_prefix) for r in top)
    return round(held / total, 4) if total else 0.0


def lost_questions(plain: Path, other: Path) -> list[str]:
    """Questions whose recall@5 is lower than in the plain run."""
    base = {c["id"]: c["metrics"]["recall@5"] for c in map(json.loads, plain.read_text().splitlines())}
    return sorted(c["id"] for c in map(json.loads, other.read_text().splitlines())
                  if c["metrics"]["recall@5"] is not None and c["metrics"]["recall@5"] < base[c["id"]])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", default=str(REPO / ".nomad_eval"),
                    help="reuse this data dir's embedding cache (SciFact takes minutes to embed cold)")
    ap.add_argument("--sets", default="scifact,scifact-whole,revisions")
    ap.add_argument("--scifact", help="the SciFact BEIR folder, when not at ../shared/datasets/scifact")
    args = ap.parse_args()
    if args.scifact:
        for name in ("scifact", "scifact-whole"):
            SETS[name] = [*SETS[name], f"distractor_sets.scifact={args.scifact}"]
    data_dir = Path(args.data_dir)
    runs = Path(tempfile.mkdtemp(prefix="hard-tier-"))
    results: dict[str, Any] = {}
    for name in ["none", *args.sets.split(",")]:
        overrides = SETS[name]
        report = run_cli(data_dir, runs / name, overrides)
        prefix = None if name == "none" else f"{name.split('-')[0]}:"
        row: dict[str, Any] = {
            "overrides": overrides,
            "report_names_set": report["identity"]["distractors"],
            "fingerprint": report["identity"]["fingerprint"],
            "points": report["counts"]["chunks"],
            "documents": report["counts"]["documents"],
            "metrics": {m: round(report["metrics"][m], 4) for m in METRICS},
            "top5_share_held_by_distractors": top5_share(runs / name / "cases.jsonl", prefix),
            "regression_raw_cosine": sensitivity(report),
        }
        if name != "none":
            row["delta_vs_plain"] = {m: round(report["metrics"][m] - results["none"]["metrics"][m], 4)
                                     for m in METRICS}
            row["questions_losing_recall@5"] = lost_questions(runs / "none" / "cases.jsonl",
                                                              runs / name / "cases.jsonl")
            row["deep_raw_search"] = deep_displacement(data_dir, overrides, runs / name / "cases.jsonl")
        results[name] = row
        print(name, row["points"], "points", row["metrics"], row.get("deep_raw_search", ""), flush=True)
    out = REPO / "bench" / "results" / "hard_tier.json"
    out.write_text(json.dumps({"suite": "core", "pipeline": "default (top_k 5, threshold 0.25)",
                               "deep_search_limit": DEEP, "sets": results}, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
