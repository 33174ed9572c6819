"""docs/benchmarks.md's tables are generated from the committed results (bench/readme_tables.py)."""

from __future__ import annotations

from typing import Any

from bench.hard_tier_table import hard_tier_markdown
from bench.readme_tables import NOT_MEASURED, bench_markdown, page_diff, replace_between, scaling_markdown


def _row(table: str, starts: str) -> list[str]:
    [line] = [ln for ln in table.splitlines() if ln.startswith(f"| {starts}")]
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_benchmark_tables_match_the_committed_results() -> None:
    diff = page_diff()
    assert not diff, "docs/benchmarks.md's tables are stale; run python bench/readme_tables.py\n" + diff


def test_a_missed_target_reads_no_and_a_missing_step_not_measured() -> None:
    results: dict[str, Any] = {"machine": {"cores": 2}, "date": "2026-01-01",
                               "sweep_vs_single": {"single_s": 3.0, "sweep_5_s": 9.0, "jobs": 5, "ratio": 3.0,
                                                   "target": "<= 2.5"},
                               "report_html": {"retrieval_run_bytes": 100_000, "generation_run_mode_all_bytes": 200_000,
                                               "max_bytes": 200_000, "target": "<= 1,500,000 bytes"}}
    table = bench_markdown(results)
    assert _row(table, "5-point threshold sweep") == ["5-point threshold sweep vs one run", "3.0× (9.0 s vs 3.0 s)",
                                                      "≤ 2.5", "**no**"]
    assert _row(table, "size of report.html")[-1] == "yes"
    # Absent steps are listed, neither dropped nor passed: gaps() alone would say nothing about them.
    missing = _row(table, "cold ingest")
    assert missing[1] == NOT_MEASURED and missing[-1] == NOT_MEASURED
    assert _row(table, "embedded store, 1M points")[-1] == NOT_MEASURED
    assert table.count("| yes |") == 1


def test_scaling_table_rows_and_figures() -> None:
    cell = {"suite": 100, "load_avg_1min_before": 0.5, "wall_s": 5.0, "peak_rss_mb": 2048, "search_s": 0.5,
            "harness_s": 4.0, "stand_in_embed_s": 0.5, "counts": {"chunks": 1003}}
    scaling = {"date": "2026-01-01", "machine": {"cores": 2, "memory_gb": 8},
               "minilm": {"embed_texts_per_s": 25.0, "texts": 300, "mean_tokens_per_chunk": 150.0, "batch_size": 32,
                          "date": "2026-01-01", "tokenize_texts_per_s": 3500},
               "corpora": {"1000": {"date": "2026-01-01", "target_chunks": 1000,
                                    "cold": {**cell, "stand_in_embedder": {"embed_texts": 1000,
                                                                           "token_count_texts": 1000}},
                                    "warm": {"1000": {**cell, "wall_s": 7.0}, "100": cell,
                                             "10000": {"suite": 10000, "pairs": 10_030_000, "skipped": "too many"}}}}}
    table = scaling_markdown(scaling)
    # The MiniLM prediction: 1,000 texts at 25/s embedded plus 1,000 at 3,500/s counted.
    assert _row(table, "1,003 | 100 ") == ["1,003", "100", "4.5 s", "40 s", "2.0 GB", "5.0 s", "0.50 s", "4.0 s",
                                           "2.0 GB"]
    assert _row(table, "1,003 | 1,000")[2:5] == ["", "", ""]  # the cold run is shown once per corpus
    assert "25.0 chunks/s" in table
    # A cell the memory guard kept from running is listed as such, never left out.
    assert _row(table, "1,003 | 10,000")[5] == "not run: 10,030,000 question × chunk pairs"


def test_replace_between_needs_its_markers_once() -> None:
    text = "a\n<!-- x -->\nold\n<!-- y -->\nb\n"
    assert replace_between(text, ("<!-- x -->", "<!-- y -->"), "new") == "a\n<!-- x -->\nnew\n<!-- y -->\nb\n"
    try:
        replace_between("no markers", ("<!-- x -->", "<!-- y -->"), "new")
    except ValueError:
        pass
    else:
        raise AssertionError("missing markers must be an error")


def test_the_hard_tier_table_is_the_results_file() -> None:
    entry = {"overrides": ["store.distractors=scifact", "store.distractor_chunking=whole"], "points": 5421,
             "fingerprint": "f", "metrics": {"recall@5": 0.5, "mrr@5": 0.25, "hit@1": 0.125, "chunk_precision@5": 1.0},
             "deep_raw_search": {"answerable": 9, "questions_where_a_distractor_outscores_every_relevant_chunk": 2}}
    table = hard_tier_markdown({"suite": "core", "pipeline": "default", "sets": {"x": entry}})
    assert _row(table, "`scifact`") == ["`scifact`, `distractor_chunking=whole`", "5,421", "0.5000", "0.2500",
                                        "0.1250", "1.0000", "2 of 9"]
    assert hard_tier_markdown({}).startswith("not measured")
