"""What attributing flipped questions costs, against one warm retrieval run, on the core suite (issue 39).

Run: python bench/attribution.py [--data-dir DIR]     measures and writes bench/results/attribution.json

A copy of the corpus is run once (cold: it fills the embedding cache), promoted into a temporary baselines folder,
then run again unchanged: that second run is the warm retrieval run the cost is compared with. Then eight changes
are made at once (two documents edited, two added, one removed, pipeline.chunk_size, pipeline.term_boost and
threshold), the changed run is made twice (the second warm), and attribution's leave-one-out replay of the
changed run is timed on its own (the `attribute` step of the compare, as a run with compare.after_run=true
does it). Each time is the median of `--repeats` timings, in this process with the model loaded.
"""

from __future__ import annotations

import argparse
import datetime
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results" / "attribution.json"
sys.path.insert(0, str(REPO))

from hydra import compose, initialize_config_dir  # noqa: E402
from omegaconf import DictConfig  # noqa: E402

from nomad_eval.cli.resolvers import register_resolvers  # noqa: E402

CHANGES = ("pipeline.chunk_size=500", "pipeline.term_boost=0.06", "threshold=0.2")


def compose_cfg(*overrides: str) -> DictConfig:
    with initialize_config_dir(config_dir=str(REPO / "nomad_eval" / "conf"), version_base="1.3"):
        return compose("config", overrides=list(overrides))


def _edit(corpus: Path) -> None:
    """Five document changes: two edited, two added, one removed."""
    docs = sorted(corpus.glob("*.md"))
    for d in docs[:2]:
        d.write_text(d.read_text() + "\nA note added in review: check the figures above against the manual.\n")
    docs[2].unlink()
    (corpus / "bench-added-1.md").write_text("# Field notes\n\nKeep spare batteries dry and away from metal.\n")
    (corpus / "bench-added-2.md").write_text("# Water notes\n\nBoil water for one minute before drinking it.\n")


def _run(args: tuple[str, ...], out: Path) -> float:
    from nomad_eval.cli.entry import run_tier

    t = time.perf_counter()
    try:
        run_tier(compose_cfg(*args, f"paths.run_dir={out}"))
    except SystemExit:
        pass  # a regression exits 1: the run is measured all the same
    return time.perf_counter() - t


def _attribution(args: tuple[str, ...], run: Path, baselines: Path) -> tuple[float, dict[str, Any]]:
    from nomad_eval.cli.config_check import typed
    from nomad_eval.config.gating import compare_settings
    from nomad_eval.gate.decision import attribute
    from nomad_eval.gate.record import gate_record
    from nomad_eval.gate.verdict import verdict_for
    from nomad_eval.report.baseline import load_baseline, load_run
    from nomad_eval.run.finish import explainer

    cfg = compose_cfg(*args, f"paths.run_dir={run}")
    report, cases = load_run(run)
    base = load_baseline(next(baselines.glob("*/retrieval.json")))
    verdict = verdict_for(report, cases, base, compare_settings(typed(cfg)))
    gate = gate_record([], verdict)
    t = time.perf_counter()
    attribute(gate, explainer(typed(cfg)), report, cases or [], base, verdict)
    return time.perf_counter() - t, {"attribution": gate.attribution, "changes": verdict.differences,
                                     "waterfall": {m: [p.model_dump() for p in parts]
                                                   for m, parts in gate.waterfall.items()}}


def measure(data_dir: Path, repeats: int) -> dict[str, Any]:
    from nomad_eval.gate.store import promote

    register_resolvers()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        corpus, baselines = root / "corpus", root / "baselines"
        shutil.copytree(REPO / "corpus", corpus)
        args = ("tier=retrieval", "suite=core", f"data.corpus_dir={corpus}", f"paths.data_dir={data_dir}",
                f"paths.baselines_dir={baselines}", "quiet=true", "browse.after_run=false")
        _run(args, root / "cold")
        promote(root / "cold", baselines)
        warm = statistics.median(_run(args, root / f"warm{i}") for i in range(repeats))
        _edit(corpus)
        changed = (*args, *CHANGES)
        _run(changed, root / "pr-cold")
        pr_warm = statistics.median(_run(changed, root / f"pr{i}") for i in range(repeats))
        timings, detail = [], {}
        for _ in range(repeats):
            seconds, detail = _attribution(changed, root / "pr0", baselines)
            timings.append(seconds)
        cost = statistics.median(timings)
    return {"date": datetime.date.today().isoformat(), "suite": "core", "changes_made": 8,
            "repeats": repeats, "warm_run_s": round(warm, 3), "changed_warm_run_s": round(pr_warm, 3),
            "attribution_s": round(cost, 3), "attribution_timings_s": [round(t, 3) for t in timings],
            "ratio_to_warm_run": round(cost / warm, 3), "target_ratio": 3.0, **detail}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=None, help="embedding cache and store (default: a temp dir)")
    parser.add_argument("--repeats", type=int, default=3)
    a = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        result = measure(a.data_dir or Path(tmp), a.repeats)
    RESULTS.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k not in ("attribution", "changes", "waterfall")}, indent=1))


if __name__ == "__main__":
    main()
