"""Which history rule forms the best retrieval query for a follow-up question (`pipeline.history`).

Run: python bench/history_rules.py [--data-dir DIR] [--model smollm2]   measures, writes the results file
     python bench/history_rules.py --table [--check]        regenerates (or checks) the tables

Each rule runs the retrieval tier as a user would (the CLI, the default pipeline) on the core suite's multi-turn
goldens (tag `multi-turn`): the question alone, the question with the last user turns, and a rewrite by the chat
model (`--model`, SmolLM2 in-process by default). recall@5 comes from each run's report with its n and 95%
interval. The tables in README.md and docs/history.md are generated from the results file, between
`<!-- history-table:start -->` and `<!-- history-table:end -->`; the shipped default is the rule with the best
recall@5 (tests/bench/test_history_table.py holds both).
"""

from __future__ import annotations

import argparse
import datetime
import difflib
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results" / "history_rules.json"
PAGES = (Path("README.md"), Path("docs") / "history.md")
MARKERS = ("<!-- history-table:start -->", "<!-- history-table:end -->")
RULES = ("query", "last_user", "rewrite")  # rag/rewrite.py's, in the table's order
LABELS = {"query": "the question alone", "last_user": "the question with the last user turns",
          "rewrite": "a standalone rewrite by the chat model"}
METRIC = "recall@5"


def measure_rule(rule: str, model: str, data_dir: Path, run_dir: Path) -> dict[str, Any]:
    """One retrieval run under `rule`: the metric, its interval and each question's value and query."""
    subprocess.run([sys.executable, "-m", "nomad_eval", "quiet=true", "suite=core", "tags=[multi-turn]",
                    f"pipeline.history={rule}", f"model={model}", f"paths.data_dir={data_dir}",
                    f"paths.run_dir={run_dir}", "browse.after_run=false"], cwd=REPO, check=True)
    report = json.loads((run_dir / "report.json").read_text())
    cases = [json.loads(line) for line in (run_dir / "cases.jsonl").read_text().splitlines()]
    iv = report["intervals"][METRIC]
    return {"value": report["metrics"][METRIC], "n": iv["n"], "low": iv["low"], "high": iv["high"],
            "questions": {c["id"]: {"value": c["metrics"][METRIC], "retrieval_query": c["retrieval_query"]}
                          for c in cases}}


def measure(model: str, data_dir: Path) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        rules = {r: measure_rule(r, model, data_dir, Path(tmp) / r) for r in RULES}
    return {"date": datetime.date.today().isoformat(), "suite": "core", "tags": ["multi-turn"], "metric": METRIC,
            "model": model, "history_turns": default_rule()[1], "rules": rules}


def default_rule(repo: Path = REPO) -> tuple[str, int]:
    """The shipped pipeline's history rule and its number of user turns."""
    conf = yaml.safe_load((repo / "nomad_eval" / "conf" / "pipeline" / "default.yaml").read_text())
    return str(conf["history"]), int(conf["history_turns"])


def best_rule(results: dict[str, Any]) -> str:
    """The rule with the highest value; a tie goes to the earlier (cheaper) rule."""
    rules = results["rules"]
    return max(RULES, key=lambda r: (rules[r]["value"], -RULES.index(r)))


def paired(results: dict[str, Any], rule: str, default: str) -> str:
    """Questions on which `rule` scores above / below the default rule, paired by golden id."""
    if rule == default:
        return "–"
    mine, base = results["rules"][rule]["questions"], results["rules"][default]["questions"]
    better = sum(mine[q]["value"] > base[q]["value"] for q in base)
    worse = sum(mine[q]["value"] < base[q]["value"] for q in base)
    return f"{better} / {worse}"


def table(results: dict[str, Any], default: str) -> str:
    rules = results["rules"]
    lines = [f"| `pipeline.history` | retrieval query | {results['metric']} | 95% interval | n "
             "| questions better / worse than the default |",
             "|---|---|---|---|---|---|"]
    for r in RULES:
        x = rules[r]
        mark = " (default)" if r == default else ""
        lines.append(f"| `{r}`{mark} | {LABELS[r]} | {x['value']:.3f} | {x['low']:.3f}–{x['high']:.3f} | {x['n']} "
                     f"| {paired(results, r, default)} |")
    lines.append("")
    lines.append(f"Core suite, goldens tagged `multi-turn`; rewrite by `model={results['model']}`; `last_user` with "
                 f"{results['history_turns']} turns;")
    lines.append(f"measured {results['date']} by bench/history_rules.py.")
    return "\n".join(lines)


def replace_between(text: str, body: str, page: Path) -> str:
    start, end = MARKERS
    if text.count(start) != 1 or text.count(end) != 1 or text.index(start) > text.index(end):
        raise ValueError(f"{page} needs exactly one {start} followed by one {end}")
    head, rest = text.split(start)
    _, tail = rest.split(end)
    return f"{head}{start}\n{body}\n{end}{tail}"


def page_diffs(repo: Path = REPO) -> str:
    """A unified diff from each page to what the results file would make it; empty when both are current."""
    body = table(json.loads((repo / RESULTS.relative_to(REPO)).read_text()), default_rule(repo)[0])
    out = []
    for page in PAGES:
        now = (repo / page).read_text()
        want = replace_between(now, body, page)
        out += difflib.unified_diff(now.splitlines(keepends=True), want.splitlines(keepends=True), str(page),
                                    f"{page} (generated)")
    return "".join(out)


def write_tables(repo: Path = REPO) -> None:
    body = table(json.loads(RESULTS.read_text()), default_rule(repo)[0])
    for page in PAGES:
        path = repo / page
        path.write_text(replace_between(path.read_text(), body, page))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--table", action="store_true", help="regenerate the tables from the results file")
    ap.add_argument("--check", action="store_true", help="with --table: exit 1 with a diff when a table is stale")
    ap.add_argument("--model", default="smollm2", help="the chat model the rewrite rule asks")
    ap.add_argument("--data-dir", type=Path, default=REPO / ".nomad_eval")
    args = ap.parse_args(argv)
    if not args.table:
        results = measure(args.model, args.data_dir)
        RESULTS.write_text(json.dumps(results, indent=2) + "\n")
        print(f"{RESULTS.relative_to(REPO)}: best rule {best_rule(results)}")
        return 0
    if args.check:
        diff = page_diffs()
        print(diff, end="")
        return 1 if diff else 0
    write_tables()
    return 0


if __name__ == "__main__":
    sys.exit(main())
