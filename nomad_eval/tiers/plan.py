"""tier=plan: how small a change can this suite see? The minimum detectable effect of each headline metric.

From a baseline's per-question values: the spread a paired delta would have (assuming a question's value
correlates `plan.correlation` between two runs), the smallest true change the gate's one-sided test finds
at 80% power, and how many questions the configured tolerance would need. bench/stats_sim.py checks the
figure against simulated gates.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from omegaconf import DictConfig
from rich.table import Table

from nomad_eval.base.console import console
from nomad_eval.base.errors import NomadError
from nomad_eval.core.questions import questions_from_cases, stable, values_of
from nomad_eval.core.stats import minimum_detectable_effect, planning_sd, questions_needed
from nomad_eval.harness.runtime import Runtime
from nomad_eval.metrics.registry import Tier, headline_names, spec_for
from nomad_eval.report.baseline import baseline_path, load_baseline


def plan_rows(cases: list[dict[str, Any]], names: list[str], correlation: float) -> list[dict[str, Any]]:
    questions = stable(questions_from_cases(cases))
    rows = []
    for name in names:
        spec = spec_for(name)
        values, _ = values_of(questions, name)
        if spec is None or len(values) < 2:
            continue
        sd = planning_sd(values, correlation)
        tol = spec.allowed(sum(values) / len(values))
        rows.append({"metric": name, "n": len(values), "mean": sum(values) / len(values), "delta_sd": sd,
                     "mde": minimum_detectable_effect(sd, len(values)), "tolerance": tol,
                     "questions_for_tolerance": questions_needed(tol, sd)})
    return rows


def run(cfg: DictConfig) -> int:
    if cfg.plan.get("baseline"):
        path = Path(cfg.plan.baseline)
    else:
        rt = Runtime(cfg)
        variant = cfg.compare.get("variant")
        path = baseline_path(Path(cfg.paths.baselines_dir), rt.fingerprint, str(cfg.plan.get("tier") or "retrieval"),
                             str(variant) if variant else None)
    base = load_baseline(path)
    if not base.cases:
        raise NomadError(f"{path}: the baseline holds no per-question records; re-promote it", 2)
    modes = sorted({str(c["mode"]) for c in base.cases if c.get("mode")})
    tier: Tier = "generation" if base.report.tier == "generation" else "retrieval"
    names = [str(n) for n in cfg.compare.get("metrics") or []] or headline_names(
        tier, int(cfg.compare.get("headline_k") or 5), modes)
    rows = plan_rows(base.cases, names, float(cfg.plan.get("correlation", 0.5)))
    t = Table(title=f"what this suite can detect (80% power, one-sided α=0.05) — baseline {path}")
    for c in ("metric", "n", "mean", "delta sd", "detectable change", "tolerance", "questions for tolerance"):
        t.add_column(c)
    for r in rows:
        mde = "—" if r["mde"] is None else f"{r['mde']:.4f}"
        need = "—" if r["questions_for_tolerance"] is None else str(r["questions_for_tolerance"])
        flag = "" if r["mde"] is None or r["mde"] <= r["tolerance"] else " [yellow](too small to tell)[/]"
        t.add_row(r["metric"], str(r["n"]), f"{r['mean']:.4f}", f"{r['delta_sd']:.4f}", mde + flag,
                  f"{r['tolerance']:g}", need)
    console.print(t)
    console.print(f"assumes a question's value correlates {cfg.plan.get('correlation', 0.5)} between two runs "
                  "(plan.correlation); the delta's spread, not the metric's, sets what a paired gate can see")
    if cfg.get("paths", {}).get("run_dir"):
        out = Path(cfg.paths.run_dir)
        out.mkdir(parents=True, exist_ok=True)
        (out / "plan.json").write_text(json.dumps({"baseline": str(path), "rows": rows}, indent=1))
    return 0
