"""tier=promote: file a run as the baseline for its fingerprint, protecting the baseline it replaces.

Shows each headline metric old → new, and refuses (unless promote.force=true) a run that failed, broke a floor,
or regresses against the baseline compare would have used for it. `promote.run=latest` takes the newest finished
run of `promote.tier` and the suite under the run folders (`browse.roots`), so CI on main needs no path.
"""

from __future__ import annotations

import json
from pathlib import Path

from omegaconf import DictConfig
from rich.markup import escape

from nomad_eval.base.console import console
from nomad_eval.base.errors import NomadError
from nomad_eval.base.runfolder import MANIFEST, problem
from nomad_eval.data.anchors import unanchored
from nomad_eval.gate.choose import PROMOTE_HINT
from nomad_eval.gate.floors import run_floors
from nomad_eval.gate.settings import configured_floors
from nomad_eval.gate.store import promote
from nomad_eval.report.baseline import load_run
from nomad_eval.report.gate_view import direction_text
from nomad_eval.report.markdown import fmt
from nomad_eval.report.schema import Report
from nomad_eval.tiers.browse import find_reports
from nomad_eval.tiers.finish import decide

LATEST = "latest"


def name_unanchored(report: Report) -> None:
    """A golden whose pattern its relevant documents never say is a defect of the suite the baseline would carry:
    named (as lint names it), not refused, since a computed answer may be meant."""
    for line in unanchored(report.subject.anchors if report.subject else {}):
        console.print(f"[yellow]warning:[/] {escape(line)}: no evidence to anchor (tier=corpus action=lint)")


def objections(cfg: DictConfig, run: Path) -> list[str]:
    """Why this run should not become a baseline; prints old → new for every gated metric on the way."""
    if (run / "matrix.json").exists():
        return []
    report, cases = load_run(run)
    if report.status != "ok" or report.identity is None:
        return []  # promote() refuses a failed run itself, with its own message (exit 2)
    name_unanchored(report)
    # The floors the run was made with (its saved config), so a promote anywhere applies the same ones.
    floors = run_floors(report, configured_floors(report.config.get("gate")))
    out = [f"floor broken: {f.reason}" for f in floors if f.broken]
    if report.gate is not None and report.gate.exit_code == 1 and report.gate.verdict != "floor broken":
        out.append(f"the run's own gate said {report.gate.verdict}: {report.gate.cause}")
    outcome = decide(cfg, report, cases, floors=False, compare=True)
    g = outcome.gate
    if g.verdict == "not comparable":
        # The cause's next step is to promote, which is what this is doing: it is left out.
        first = g.cause.replace(f"; {PROMOTE_HINT}", "")
        console.print(f"no baseline this run compares with, so none to protect ({first}); filing it", markup=False)
        return out
    console.print(f"replacing, as the suite's reference, {escape(g.baseline or '')} "
                  f"({escape(g.baseline_reason or '')})")
    for m in g.metrics:
        console.print(f"  {escape(m.name)}: {fmt(m.baseline)} → {fmt(m.run)} ({m.outcome}{direction_text(m.name)})")
    if g.exit_code == 1:
        out.append(f"against that baseline: {g.verdict}: {g.cause}")
    return out


def latest(roots: list[Path], tier: str, suite: str) -> Path:
    """The newest run folder under `roots` of this tier and suite that finished and is whole (its manifest holds)."""
    for report in find_reports(roots, limit=10_000):  # newest first
        try:
            raw = json.loads(report.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(raw, dict) or raw.get("status") != "ok" or raw.get("tier") != tier \
                or not isinstance(ident := raw.get("identity"), dict) or ident.get("suite") != suite:
            continue
        # A run's manifest is written last: without one it was cut short (or predates manifests: name it).
        if not (report.parent / MANIFEST).is_file() or problem(report.parent) is not None:
            continue
        return report.parent
    raise NomadError(f"promote.run=latest: no finished {tier} run of suite {suite!r} under "
                     f"{', '.join(map(str, roots))}; run one (`nomad-eval tier={tier} suite={suite}`) or name it "
                     "with promote.run=<run dir>", 2)


def run(cfg: DictConfig) -> int:
    if not cfg.promote.get("run"):
        raise NomadError("tier=promote needs promote.run=<run dir or report.json> (or promote.run=latest)", 2)
    run_path = Path(cfg.promote.run)
    if str(cfg.promote.run) == LATEST:
        run_path = latest([Path(str(r)) for r in cfg.browse.roots], str(cfg.promote.tier), str(cfg.suite))
        console.print(f"promote.run=latest: {run_path}", markup=False, highlight=False)
    found = objections(cfg, run_path.parent if run_path.name == "report.json" else run_path)  # or upstream's file
    if found and not cfg.promote.get("force"):
        raise NomadError("promote refused: " + "; ".join(found) + "; if this is intended (the drop is accepted), "
                         "promote again with promote.force=true", 1)
    variant = cfg.promote.get("variant")  # Hydra reads `promote.variant=2` as a number; a name is text
    target = promote(run_path, Path(cfg.paths.baselines_dir), None if variant is None else str(variant))
    for line in found:  # said once the baseline is filed: a promote that then fails (a full disk) promoted nothing
        console.print(f"[yellow]promoted despite:[/] {escape(line)}")
    console.print(f"promoted {run_path} to {target}; commit it to make it the CI baseline")
    return 0
