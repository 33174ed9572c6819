"""docs/benchmarks.md's hard-tier table, generated from bench/results/hard_tier.json (bench/hard_tier.py writes it)
by bench/readme_tables.py: every figure of it is the committed result's, none typed."""

from __future__ import annotations

from typing import Any

HARD_TIER_MARKERS = ("<!-- hard-tier-table:start -->", "<!-- hard-tier-table:end -->")
COLUMNS = ("recall@5", "mrr@5", "hit@1", "chunk_precision@5")


def _label(overrides: list[str]) -> str:
    """`store.distractors=scifact` -> `scifact`; other settings as `key=value`."""
    if not overrides:
        return "none"
    parts = [o.split("=", 1) for o in overrides]
    return ", ".join(f"`{v}`" if k == "store.distractors" else f"`{k.removeprefix('store.')}={v}`" for k, v in parts)


def _displaced(entry: dict[str, Any]) -> str:
    deep = entry.get("deep_raw_search")
    if not deep:
        return "—"
    return f"{deep['questions_where_a_distractor_outscores_every_relevant_chunk']} of {deep['answerable']}"


def hard_tier_markdown(results: dict[str, Any]) -> str:
    if not results.get("sets"):
        return "not measured: bench/results/hard_tier.json is missing; run python bench/hard_tier.py"
    lines = ["| distractors | points | recall@5 | MRR@5 | hit@1 | chunk_precision@5 (then over min(k, returned)) "
             "| distractor outscores every relevant chunk (raw top-100) |", "|---|---|---|---|---|---|---|"]
    for entry in results["sets"].values():
        m = entry["metrics"]
        cells = [_label(entry["overrides"]), f"{entry['points']:,}", *(f"{m[c]:.4f}" for c in COLUMNS),
                 _displaced(entry)]
        lines.append("| " + " | ".join(cells) + " |")
    plain = next((e for e in results["sets"].values() if not e["overrides"]), None)
    where = f"; the plain store is fingerprint {plain['fingerprint']}" if plain else ""
    lines += ["", f"Suite {results['suite']}, pipeline {results['pipeline']}{where}; "
                  "from bench/results/hard_tier.json."]
    return "\n".join(lines)
