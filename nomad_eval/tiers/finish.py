"""What every scoring tier does after writing its report: absolute gates, then the baseline compare."""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig
from rich.markup import escape

from nomad_eval.base.console import console, err_console
from nomad_eval.base.errors import NomadError
from nomad_eval.core.gate import gate_failures
from nomad_eval.judges.run_judges import judge_floor_failures
from nomad_eval.report.schema import Report


def finish(cfg: DictConfig, report: Report, out: Path) -> int:
    code = 0
    floors = {str(k): float(v) for k, v in (cfg.gate.get("fail_under") or {}).items()}
    judge_floors = {k: v for k, v in floors.items() if k.startswith("judge.")}
    floors = {k: v for k, v in floors.items() if k not in judge_floors}
    for line in gate_failures(report.metrics, floors) + judge_floor_failures(report.judges, judge_floors):
        console.print(f"[red]gate:[/] {escape(line)}")
        code = 1
    if cfg.compare.get("after_run"):
        from nomad_eval.tiers.compare import judge

        base = Path(cfg.compare.baseline) if cfg.compare.get("baseline") else None
        try:
            code = max(code, judge(out, base, cfg, junit_base=out))
        except NomadError as exc:
            # The run measured fine and its report stays as written (promotable); only the verdict is missing.
            err_console.print(f"[red]error:[/] {escape(str(exc))}", soft_wrap=True)
            code = max(code, exc.exit_code)
    from nomad_eval.tiers.browse import after

    after(cfg, out)  # refresh runs.html; never fails the run (a warning line at worst)
    return code
