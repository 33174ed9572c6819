"""Several suites in one run (`suite=[core,long_context]`, upstream's `--suite a,b`): one run of the tier per
suite, each in its own folder with its own report and baseline, then one verdict over all of them.

Each suite is compared with its own baseline, never pooled: a suite added to a run must not move the numbers
another suite's baseline was recorded with (upstream keeps its extra suites opt-in for the same reason).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypedDict

from omegaconf import DictConfig, ListConfig, open_dict
from rich.markup import escape

from nomad_eval.base.atomic import write_atomic
from nomad_eval.base.console import console
from nomad_eval.base.errors import NomadError
from nomad_eval.base.safe_names import require_safe

TIERS = ("retrieval", "generation")  # the tiers whose runs a suite decides


def suite_names(cfg: DictConfig) -> list[str] | None:
    """The suites of a list-valued `suite`, or None when the run has one suite (a name, or a list of one)."""
    value = cfg.get("suite")
    if not isinstance(value, ListConfig | list):
        return None
    names = [str(v) for v in value]
    if not names:
        raise NomadError("suite=[] names no suite; give one (suite=core) or several (suite=[core,long_context])", 2)
    if len(set(names)) != len(names):
        raise NomadError(f"suite={names} names a suite twice", 2)
    return names


def one_suite(cfg: DictConfig, name: str, out: Path | None) -> DictConfig:
    """The config of one suite's run: `suite` a name, results in `out` (None: where they would go anyway).

    Baselines are filed per corpus fingerprint and tier, so two suites of one corpus would share one file: a suite
    is compared with the baseline variant named after it when one was promoted (`promote.variant=<suite>`), unless
    the command line names a variant itself.
    """
    sub = cfg.copy()
    with open_dict(sub):
        sub.suite = name
        if out is not None:
            sub.paths.run_dir = str(out)
        if not cfg.compare.get("variant") and _has_variant(cfg, name):
            sub.compare.variant = name
    return sub


def _has_variant(cfg: DictConfig, name: str) -> bool:
    root = Path(str(cfg.paths.baselines_dir))
    return root.is_dir() and any(root.glob(f"*/{cfg.tier.name}-{name}.json"))


def run_suites(cfg: DictConfig, names: list[str], base: Path, run_one: Callable[[DictConfig], int]) -> int:
    """Each suite's run in `<base>/<suite>`, then a table of their verdicts, suites.json and the worst verdict."""
    tier = str(cfg.tier.name)
    if tier not in TIERS:
        raise NomadError(f"suite={names}: several suites run with tier=retrieval or tier=generation; tier={tier} "
                         "takes one suite", 2)
    for name in names:
        require_safe("suite", suite=name)  # each becomes a folder name
    untagged: list[str] = []
    if cfg.data.get("kind") != "beir":  # every name checked before the first suite spends minutes running
        untagged = _without_tags(cfg, names)
    rows: list[SuiteRow] = []
    for name in names:
        if name in untagged:
            console.print(f"suite {name}: no question carries any of tags={list(cfg.tags)}; skipped", markup=False)
            rows.append(SuiteRow(suite=name, exit_code=0, verdict="skipped", cause="no question with the tags",
                                 questions=0, run_dir=None, metrics={}))
            continue
        console.rule(f"suite {name}")
        out = base / name
        started = time.time()
        code = run_one(one_suite(cfg, name, out))
        rows.append(_row(name, code, out, started))
    return _summarise(rows, base)


def _without_tags(cfg: DictConfig, names: list[str]) -> list[str]:
    """The suites none of whose questions carries the run's tags (skipped, as the tag picks questions across all
    the suites); when that is every suite, none is skipped and each run refuses the filter with its own tags."""
    from nomad_eval.base.errors import InvalidInput
    from nomad_eval.data.golden import load_goldens, suite_file

    tags = {str(t) for t in cfg.get("tags") or []}
    paths = {name: suite_file(Path(str(cfg.data.goldens_dir)), name) for name in names}
    if not tags:
        return []
    out = []
    for name, path in paths.items():
        try:
            if not any(tags & set(g.tags) for g in load_goldens(path, warnings=[])):
                out.append(name)
        except InvalidInput:
            continue  # its own run reports the defects
    return [] if len(out) == len(names) else out


class SuiteRow(TypedDict):
    """One suite of suites.json: its verdict and exit code, why, and its metrics as its report.json gave them."""

    suite: str
    exit_code: int
    verdict: str
    cause: str | None
    questions: int | None
    run_dir: str | None               # None: skipped, no run
    metrics: dict[str, float | None]


def _row(name: str, code: int, out: Path, started: float) -> SuiteRow:
    path = out / "report.json"
    try:
        # A report older than this suite's run is an earlier run's (a failure may be filed beside it instead),
        # unless resume kept it, which rewrites it.
        report = json.loads(path.read_text()) if path.stat().st_mtime >= started - 1 else {}
    except (OSError, ValueError):
        report = {}
    gate = report.get("gate") or {}
    verdict = gate.get("verdict") or ("pass" if code == 0 else "failed")
    goldens = (report.get("subject") or {}).get("goldens") or {}
    return SuiteRow(suite=name, exit_code=code, verdict=verdict, cause=gate.get("cause") or report.get("error"),
                    questions=len(goldens) or None, run_dir=str(out), metrics=report.get("metrics") or {})


def overall_code(codes: list[int]) -> int:
    """A failure in any suite fails the run (1); else a suite that could not be judged (2) refuses it; else 0."""
    return 1 if 1 in codes else (2 if any(codes) else 0)


def _summarise(rows: list[SuiteRow], base: Path) -> int:
    code = overall_code([r["exit_code"] for r in rows])
    write_atomic(base / "suites.json", json.dumps({"exit_code": code, "suites": rows}, indent=2))
    console.rule("suites")
    for r in rows:
        n = "" if r["questions"] is None else f", {r['questions']} questions"
        console.print(f"{escape(r['suite'])}: {escape(r['verdict'])} (exit {r['exit_code']}{n})"
                      + (f" — {escape(r['run_dir'])}" if r["run_dir"] else ""))
    worst = next((r for r in rows if r["exit_code"] == code), rows[0])
    each = ", ".join(f"{r['suite']} {r['verdict']}" for r in rows)
    style = "green" if code == 0 else "red"
    console.print(f"[{style}]verdict: {escape(worst['verdict'] if code else 'pass')}: {escape(each)}[/]")
    return code
