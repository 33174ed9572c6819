"""The benchmark tables of docs/benchmarks.md, generated from the committed results:
python bench/readme_tables.py [--check]

Rewrites the text between `<!-- bench-table:start -->` and `<!-- bench-table:end -->` (from
bench/results/bench.json, with bench/results/store_scale.json for the 1M exact-equivalence step when bench.json
lacks it) and between `<!-- scaling-table:start -->` and `<!-- scaling-table:end -->` (from
bench/results/scaling.json), and between the hard-tier markers (bench/hard_tier_table.py, from
bench/results/hard_tier.json). `--check` writes nothing and exits 1, printing a diff, when the page differs from
what it would write. Whether a target is met is decided by bench/run.py `gaps()`, the same function that writes the
results file's gaps, so the table and the file cannot disagree.
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

# After the path: run as a script, bench/ is not importable otherwise.
from bench.hard_tier_table import HARD_TIER_MARKERS, hard_tier_markdown  # noqa: E402
from bench.run import gaps  # noqa: E402
from bench.scaling import predicted_minilm_s  # noqa: E402

PAGE = Path("docs") / "benchmarks.md"  # relative to the repository
RESULTS = REPO / "bench" / "results"
BENCH_MARKERS = ("<!-- bench-table:start -->", "<!-- bench-table:end -->")
SCALING_MARKERS = ("<!-- scaling-table:start -->", "<!-- scaling-table:end -->")
NOT_MEASURED = "not measured"

Step = dict[str, Any]


# --- number formatting -----------------------------------------------------------------------------------------

def seconds(s: float) -> str:
    """A duration at the precision a reader can use: 0.12 s, 4.4 s, 48 s, 12 min, 3.4 h."""
    if s < 1:
        return f"{s:.2f} s"
    if s < 10:
        return f"{s:.1f} s"
    if s < 600:
        return f"{s:.0f} s"
    if s < 36_000:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"


def mib(mb: float) -> str:
    return f"{mb:,.0f} MB" if mb < 1024 else f"{mb / 1024:.1f} GB"


def wrap(paragraph: str) -> str:
    """Prose hard-wrapped like the rest of the page (tables are left on one line each)."""
    return textwrap.fill(paragraph, width=115, break_long_words=False, break_on_hyphens=False)


def target_text(raw: str) -> str:
    return raw.replace("<=", "≤").replace(">=", "≥")


def yes_no(ok: bool) -> str:
    return "yes" if ok else "**no**"


def _note(step: Step) -> str:
    return f" (measured {step['measured']})" if step.get("measured") else ""


# --- the benchmark table (bench.json) --------------------------------------------------------------------------

def _ingest(s: Step) -> tuple[str, str]:
    return (f"cold ingest of the core corpus ({s['chunks']} chunks) vs raw embedding of the same texts",
            f"{s['ratio']}× ({s['ingest_s']} s vs {s['raw_embed_s']} s)")


def _warm(s: Step) -> tuple[str, str]:
    return ("warm retrieval run, everything cached" + _note(s),
            f"{s['wall_s']} s wall: start-up {s['startup_s']} s, store open {s['store_open_s']} s, search "
            f"{s['search_s']} s, metrics with intervals {s['metrics_s']} s, query embeddings "
            f"{s['embed_queries_s']} s; model calls {s['embedding_model_calls']}, model loaded: "
            f"{'yes' if s['model_loaded'] else 'no'}")


def _sweep(s: Step) -> tuple[str, str]:
    if isinstance(s["single_s"], list):  # alternating pairs: the median ratio, then each pair's
        pairs = ", ".join(f"{w} s vs {o} s" for w, o in zip(s["sweep_5_s"], s["single_s"], strict=True))
        ci = f" (95% CI {s['ratio_ci95'][0]}–{s['ratio_ci95'][1]}, n={len(s['single_s'])} pairs)" \
            if s.get("ratio_ci95") else ""
        return (f"{s['jobs']}-point threshold sweep vs one run, both warm, {len(s['single_s'])} alternating pairs"
                + _note(s), f"{s['ratio']}× median of the pairs' ratios{ci} {s['pair_ratios']} ({pairs}); load "
                f"average {s['load_avg_1min']}")
    return (f"{s['jobs']}-point threshold sweep vs one run" + _note(s),
            f"{s['ratio']}× ({s['sweep_5_s']} s vs {s['single_s']} s)")


def _trec(s: Step) -> tuple[str, str]:
    rounds = f", {s['rounds']} alternating rounds" if s.get("rounds") else ""
    ci = f" median of the rounds' ratios (95% CI {s['ratio_ci95'][0]}–{s['ratio_ci95'][1]}, n={s['rounds']})" \
        if s.get("ratio_ci95") else ""
    return (f"metrics on {s['queries'] // 1000}k queries × {s['results_per_query']} results vs pytrec_eval{rounds}"
            + _note(s), f"{s['ratio']}×{ci} ({s['nomad_eval_s']} s vs {s['pytrec_eval_s']} s, medians)")


def _store(s: Step) -> tuple[str, str]:
    points = f"{s['points'] // 1000}k" if s["points"] < 1_000_000 else f"{s['points'] // 1_000_000}M"
    kind = "HNSW" if s["search"] == "hnsw" else s["search"]
    what = f"embedded store, {points} points, {kind}, tag-filtered top-10"
    if s.get("optimize_s"):
        what += f" (`optimize()` {s['optimize_s']} s)"
    ci = f" (95% CI {s['query_p50_ci95_ms'][0]}–{s['query_p50_ci95_ms'][1]})" if s.get("query_p50_ci95_ms") else ""
    measured = (f"ingest {s['ingest_points_per_s']:,} points/s, p50 {s['query_p50_ms']} ms{ci}, "
                f"p95 {s['query_p95_ms']} ms, +{s['rss_growth_mb']:.0f} MB")
    if "top10_agreement_with_exact" in s:
        measured += f"; top-10 agreement with exact {s['top10_agreement_with_exact']} (uniform random vectors)"
    return what, measured


def _hnsw_repeat(s: Step) -> tuple[str, str]:
    return (f"HNSW built twice on the same {s['points'] // 1000}k points",
            f"identical top 10 for {s['identical_top10_across_two_builds']} of {s['queries']} queries")


def _exact_equivalent(s: Step) -> tuple[str, str]:
    fast = s["fast_build1"]
    agree = fast["vs_plain_exact_same_build"]
    lo, hi = fast["p50_ci95_ms"]
    src = " (bench/results/store_scale.json)" if s.get("_source") else ""
    points = f"{s['points'] // 1000}k" if s["points"] < 1_000_000 else f"{s['points'] // 1_000_000}M"
    return (f"embedded store, {points} realistic points (MiniLM vectors plus noise), its default search: one "
            f"process, int8 scan rescored exactly, {s['queries']} real questions{src}",
            f"p50 {fast['p50_ms']} ms (95% CI {lo}–{hi}); plain exact search {s['exact']['p50_ms']} ms; int8 build "
            f"{fast['index_build_s']} s; top-10 agreement with exact {agree['top10_agreement']}; two builds "
            f"identical: {'yes' if s.get('two_fast_builds_identical') else 'no'}")


def _startup(s: Step) -> tuple[str, str]:
    def one(name: str) -> str:
        t = s[name]
        return f"{t['median_s']} s ({t['min_s']}–{t['max_s']})"

    return (f"start-up, whole process: `--help` and `tier=corpus action=check` (median of {s['runs']} runs, min–max)",
            f"--help {one('help')}; corpus check {one('corpus_check')}; load average {s['load_avg_1min']}")


def _gen_cache(s: Step) -> tuple[str, str]:
    return (f"generation re-run with a warm response cache ({s['goldens']} questions, SmolLM2)",
            f"{s['ratio']}× ({s['warm_s']} s vs {s['cold_s']} s; in-process {s['in_process_ratio']}×), "
            f"{'same' if s['same_metrics'] else 'different'} metrics, {s['warm_model_calls']} model calls")


def _html(s: Step) -> tuple[str, str]:
    parts = [f"retrieval run {s['retrieval_run_bytes'] / 1000:.0f} KB",
             f"generation run (mode=all) {s['generation_run_mode_all_bytes'] / 1000:.0f} KB"]
    if "sweep_summary_bytes" in s:
        parts.append(f"sweep summary {s['sweep_summary_bytes'] / 1000:.0f} KB")
    return "size of report.html", ", ".join(parts)


def _parallel(s: Step) -> tuple[str, str]:
    return (f"{s['jobs']} SmolLM2 generation jobs in parallel (joblib) vs one after the other, "
            f"{s['questions_per_job']} questions each",
            f"{s['ratio']}× ({s['parallel_s']} s vs {s['sequential_s']} s); model threads {s['threads_sequential']} "
            f"→ {s['threads_parallel']}")


# name, what it is when not measured, how a measured step reads, target shown when the step records none.
# A target of None: a figure without a target (met shows a dash).
ROWS: list[tuple[str, str, Callable[[Step], tuple[str, str]], str | None]] = [
    ("startup", "start-up of `--help` and the corpus check", _startup, "<= 0.5 s"),
    ("ingest_overhead", "cold ingest of the core corpus vs raw embedding", _ingest, "<= 1.15"),
    ("warm_run", "warm retrieval run, everything cached", _warm, "<= 1.5 s, no model load"),
    ("sweep_vs_single", "threshold sweep vs one run", _sweep, "<= 2.5"),
    ("metrics_vs_pytrec_eval", "metrics vs pytrec_eval", _trec, "<= 1"),
    ("store_100k", "embedded store, 100k points", _store, None),
    ("store_200k_hnsw", "embedded store, 200k points, HNSW", _store, None),
    ("hnsw_repeatability", "HNSW built twice on the same points", _hnsw_repeat, None),
    ("store_1m", "embedded store, 1M points, tag-filtered top-10", _store, "p50 < 50 ms"),
    ("store_1m_exact_equivalent", "embedded store, 1M realistic points, its default search", _exact_equivalent,
     "p50 < 50 ms, agreement 1.0, two builds identical"),
    ("generation_cache", "generation re-run with a warm response cache", _gen_cache, "< 0.05"),
    ("report_html", "size of report.html", _html, "<= 1,500,000 bytes"),
    ("parallel_generation", "generation jobs in parallel vs one after the other", _parallel,
     "parallel <= sequential"),
]


def _met(name: str, step: Step, missed: dict[str, str]) -> str:
    return yes_no(name not in missed)


def bench_markdown(bench: dict[str, Any], store_scale: dict[str, Any] | None = None) -> str:
    """The benchmark table with its date line. `store_scale` (bench/store_scale.py's own results file) stands in
    for a store_1m_exact_equivalent step bench.json lacks."""
    results = dict(bench)
    if "store_1m_exact_equivalent" not in results and store_scale:
        results["store_1m_exact_equivalent"] = {**store_scale, "_source": "store_scale.json"}
    missed = gaps(results)
    cores = (results.get("machine") or {}).get("cores", "?")
    lines = [wrap(f"Measured on this project's {cores}-core machine ({results.get('date', 'date unknown')}), from "
                  "`bench/results/bench.json`. This table is generated by `python bench/readme_tables.py` "
                  "(`--check` tells whether it is current)."),
             "",
             "| benchmark | measured | target | met |",
             "|---|---|---|---|"]
    for name, title, fmt, default_target in ROWS:
        step = results.get(name)
        target = target_text(str(step.get("target") or default_target)) if step and default_target \
            else target_text(default_target or "—")
        if not step:
            lines.append(f"| {title} (`{name}`) | {NOT_MEASURED} | {target} | {NOT_MEASURED} |")
            continue
        what, measured = fmt(step)
        met = _met(name, step, missed) if default_target else "—"
        lines.append(f"| {what} | {measured} | {target} | {met} |")
    return "\n".join(lines)


# --- the scaling table (scaling.json) --------------------------------------------------------------------------

def scaling_markdown(scaling: dict[str, Any]) -> str:
    """Prose, table and provenance line for the page's cost-against-size section."""
    rates = scaling.get("minilm") or {}
    rate = rates.get("embed_texts_per_s")
    intro = (
        "**Cost against size.** `python bench/scaling.py` times retrieval runs on synthetic corpora and suites of "
        "several sizes, each run its own process, and writes `bench/results/scaling.json`; "
        "`python bench/readme_tables.py` turns that file into the table below. Every run embeds with a fast stand-in "
        "(hashed words, `bench.scaling.HashEmbedder`), so the harness and the store are what is timed, and the "
        "stand-in's own time is left out of every column. The MiniLM column is a prediction, not a measurement: the "
        "texts a first run embeds divided by MiniLM's rate measured on the same kind of chunks, plus its token "
        "counting. A cold run is the first run on a corpus (with the 100-question suite): it reads, chunks, embeds "
        "and writes the store, and at 100k chunks and more its first search builds the store's int8 copies. A warm "
        "run finds the store and every embedding cached. *Search* is the store's vector search summed over the "
        "questions; the *harness share* is everything else in the wall time: start-up and imports, reading and "
        "chunking, the cache, store open and writes, query expansion and reranking, metrics with their intervals "
        "and the reports (wall − embedding − search). A first run with MiniLM takes about the first two cold "
        "columns added together."
    )
    lines = ["| corpus chunks | questions | cold run, without embedding | cold run, MiniLM embedding (predicted) "
             "| cold peak RSS | warm run wall | search | harness share | warm peak RSS |",
             "|---|---|---|---|---|---|---|---|---|"]
    loads: list[float] = []
    not_run = False
    for row in (scaling.get("corpora") or {}).values():
        cold = row["cold"]
        if "skipped" in cold:
            not_run = True
            lines.append(f"| {row['target_chunks']:,} | {cold['suite']:,} | not run: {cold['pairs']:,} question × "
                         "chunk pairs | | | | | | |")
            continue
        loads.append(cold["load_avg_1min_before"])
        # From the file's one MiniLM rate, so every row and the sentence below the table agree.
        predicted = seconds(predicted_minilm_s(cold, rates)) if rate else NOT_MEASURED
        cold_cells = [seconds(cold["wall_s"] - cold["stand_in_embed_s"]), predicted, mib(cold["peak_rss_mb"])]
        for i, (n, cell) in enumerate(sorted(row["warm"].items(), key=lambda kv: int(kv[0]))):
            first = [f"{cold['counts']['chunks']:,}", f"{int(n):,}"] + (cold_cells if i == 0 else ["", "", ""])
            if "skipped" in cell:
                not_run = True
                warm = [f"not run: {cell['pairs']:,} question × chunk pairs", "", "", ""]
            else:
                loads.append(cell["load_avg_1min_before"])
                warm = [seconds(cell["wall_s"]), seconds(cell["search_s"]), seconds(cell["harness_s"]),
                        mib(cell["peak_rss_mb"])]
            lines.append("| " + " | ".join(first + warm) + " |")
    machine = scaling.get("machine") or {}
    lo, hi = f"{min(loads, default=0):.1f}", f"{max(loads, default=0):.1f}"
    dates = sorted({row.get("date", "") for row in (scaling.get("corpora") or {}).values()} - {""})
    when = " to ".join(dict.fromkeys([dates[0], dates[-1]])) if dates else "(date unknown)"
    where = (f"Measured {when} on {machine.get('cores', '?')} cores and "
             f"{machine.get('memory_gb', '?')} GB, 1-minute load average {lo if lo == hi else f'{lo}–{hi}'} before "
             "the runs")
    if rate:
        where += (f"; MiniLM embedded {rate} chunks/s ({rates['texts']} synthetic chunks of "
                  f"{rates['mean_tokens_per_chunk']} tokens on average, batch {rates['batch_size']}, measured "
                  f"{rates['date']}) and counted tokens at {rates['tokenize_texts_per_s']:,} chunks/s.")
    else:
        where += "; MiniLM's rate was not measured."
    notes = [where]
    if not_run:
        notes.append(
            "Cells marked *not run* hold more question × chunk pairs than the benchmark's bound "
            f"(`--max-pairs`, {scaling.get('max_pairs', 0):,.0f}). Every retrieval run scores each answerable "
            "question against every chunk for its separation table, counting the cosines (to 5 decimals) tile by "
            "tile, so memory stays flat while time grows with questions × chunks.")
    return "\n\n".join([wrap(intro), "\n".join(lines), *(wrap(n) for n in notes)])


# --- the page --------------------------------------------------------------------------------------------------

def replace_between(text: str, markers: tuple[str, str], body: str) -> str:
    """`text` with everything between the two marker lines replaced by `body`; each marker must occur once."""
    start, end = markers
    if text.count(start) != 1 or text.count(end) != 1 or text.index(start) > text.index(end):
        raise ValueError(f"{PAGE} needs exactly one {start} followed by one {end}")
    head, rest = text.split(start)
    _, tail = rest.split(end)
    return f"{head}{start}\n{body}\n{end}{tail}"


def render(page: str, bench: dict[str, Any], store_scale: dict[str, Any] | None, scaling: dict[str, Any]) -> str:
    text = replace_between(page, BENCH_MARKERS, bench_markdown(bench, store_scale))
    return replace_between(text, SCALING_MARKERS, scaling_markdown(scaling))


def _load(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    return loaded


def rendered_page(repo: Path = REPO) -> tuple[str, str]:
    """docs/benchmarks.md as it is and as the committed results would make it."""
    page = (repo / PAGE).read_text()
    res = repo / "bench" / "results"
    text = render(page, _load(res / "bench.json"), _load(res / "store_scale.json") or None,
                  _load(res / "scaling.json"))
    return page, replace_between(text, HARD_TIER_MARKERS, hard_tier_markdown(_load(res / "hard_tier.json")))


def page_diff(repo: Path = REPO) -> str:
    """A unified diff from the page to what it should be; empty when the tables are current."""
    now, want = rendered_page(repo)
    return "".join(difflib.unified_diff(now.splitlines(keepends=True), want.splitlines(keepends=True),
                                        str(PAGE), f"{PAGE} (generated)"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help=f"exit 1 with a diff when {PAGE} is not current")
    args = ap.parse_args(argv)
    if args.check:
        diff = page_diff()
        if diff:
            print(diff, end="")
            print(f"{PAGE}'s tables differ from bench/results; run: python bench/readme_tables.py", file=sys.stderr)
            return 1
        return 0
    now, want = rendered_page()
    if now != want:
        (REPO / PAGE).write_text(want)
        print(f"{PAGE}: tables rewritten")
    else:
        print(f"{PAGE}: tables already current")
    return 0


if __name__ == "__main__":
    sys.exit(main())
