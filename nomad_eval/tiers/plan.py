"""tier=plan: what can this suite tell? Two figures per headline metric, one per uncertainty.

- The change *in general* the suite detects: the smallest true change that compare's question-sampling test (one-
  sided, Holm across the gated metrics) finds at 80% power, from a baseline's per-question values and the spread
  a paired delta has when a question's value correlates `plan.correlation` between two runs. Compare's
  "detectable" column is the same figure; bench/plan_sim.py checks it against simulated compares.
- For answers that vary between repeats: how many repeats make run-to-run noise small enough that a drop of the
  tolerance stands out from it (the gate's own test, one-sided 95%, at 80% power).
"""

from __future__ import annotations

import json
from pathlib import Path

from rich.table import Table

from nomad_eval.base.console import console
from nomad_eval.base.errors import NomadError
from nomad_eval.config import RunConfig
from nomad_eval.config.settings import runtime
from nomad_eval.core.adaptive import planned_calls
from nomad_eval.core.planning import PlanRow, plan_rows
from nomad_eval.core.sequential import Rule
from nomad_eval.gate.store import baseline_path
from nomad_eval.metrics.registry import Tier, headline_names
from nomad_eval.report.baseline import load_baseline
from nomad_eval.report.upstream import is_upstream
from nomad_eval.report.upstream_view import headline


def _plan_table(rows: list[PlanRow], metrics: int, path: Path) -> Table:
    t = Table("metric", "n", "mean", "delta sd", "detectable in general", "tolerance", "questions for tolerance",
              "gate's 80% drop", "repeats for drop", title=f"what this suite can tell (80% power; in general: "
              f"one-sided α=0.05, Holm over {metrics}) — baseline {path}")
    for r in rows:
        t.add_row(*_plan_cells(r))
    return t


def _plan_cells(r: PlanRow) -> tuple[str, ...]:
    """One metric's row of the plan table, as text ("—" for what is not measured)."""
    mde = "—" if r["mde"] is None else f"{r['mde']:.4f}"
    need = "—" if r["questions_for_tolerance"] is None else str(r["questions_for_tolerance"])
    gate80 = "—" if r.get("gate_80_drop") is None else f"{r['gate_80_drop']:.4f}"
    reps = ("—" if "drop" not in r else f"{r['repeats_for_drop'] or '— (no repeats)'} for {r['drop']:g}")
    flag = "" if r["mde"] is None or r["mde"] <= r["tolerance"] else " [yellow](too small to tell)[/]"
    return (r["metric"], str(r["n"]), f"{r['mean']:.4f}", f"{r['delta_sd']:.4f}", mde + flag,
            f"{r['tolerance']:g}", need, gate80, reps)


def _baseline_file(config: RunConfig) -> Path:
    """plan.baseline, else the baseline this config's runs compare with."""
    if config.plan.baseline:
        return Path(config.plan.baseline)
    rt = runtime(config)
    variant = config.compare.variant
    return baseline_path(Path(config.paths.baselines_dir), rt.fingerprint, str(config.plan.tier),
                         str(variant) if variant else None)


def run(config: RunConfig) -> int:
    path = _baseline_file(config)
    base = load_baseline(path)
    if not base.cases:
        raise NomadError(f"{path}: the baseline holds no per-question records; re-promote it", 2)
    modes = sorted({c.mode for c in base.cases if c.mode})
    tier: Tier = "generation" if base.report.tier == "generation" else "retrieval"
    k = int(config.compare.headline_k)
    # An upstream NOMAD file holds only the upstream view: plan its gate (report/upstream_view.py).
    default = headline(k, base.report.metrics) if is_upstream(base.report) else headline_names(tier, k, modes)
    names = [str(n) for n in config.compare.metrics or []] or default
    tolerance = config.compare.tolerance
    drop = config.plan.drop
    rows = plan_rows(base.cases, names, float(config.plan.correlation), bool(config.compare.exclude_unstable),
                     None if tolerance is None else float(tolerance), None if drop is None else float(drop))
    console.print(_plan_table(rows, len(names), path))
    console.print(f"in general: assumes a question's value correlates {config.plan.correlation} between two "
                  "runs (plan.correlation); compare's 'detectable' column is this figure. The gate itself decides "
                  "on run-to-run noise: deterministic metrics need no repeats; for answers that vary, the gate's "
                  "80% drop is what it finds at the baseline's repeats, and 'repeats for drop' what finds "
                  "plan.drop (default twice the tolerance) at 80%")
    auto = Rule(most=int(config.repeats_max), agree=int(config.repeats_agree), first=int(config.repeats_first))
    calls = planned_calls(auto, base.cases, int(config.seed), float(config.repeats_budget)) \
        if tier == "generation" else None
    if calls:
        console.print(f"calls per verdict: repeats=auto about {calls['auto_calls']:g} (sd {calls['auto_calls_sd']:g}"
                      f", simulated at this baseline's pass rates) for {calls['questions']} questions; "
                      f"repeats={calls['fixed_repeats']}: {calls['fixed_calls']}", markup=False)
    if config.paths.run_dir:
        out = Path(config.paths.run_dir)
        out.mkdir(parents=True, exist_ok=True)
        (out / "plan.json").write_text(json.dumps({"baseline": str(path), "rows": rows, "calls": calls}, indent=1))
    return 0
