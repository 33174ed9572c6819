"""tier=promote: file a run as the baseline for its fingerprint, protecting the baseline it replaces (the gate's
checks, gate/promotion.py, and its store, gate/store.py).

Shows each headline metric old → new, and refuses (unless promote.force=true) a run that failed, broke a floor,
or regresses against the baseline compare would have used for it. `promote.run=latest` takes the newest finished
run of `promote.tier` and the suite under the run folders (`browse.roots`), so CI on main needs no path.
"""

from __future__ import annotations

import json
from pathlib import Path

from rich.markup import escape

from nomad_eval.base.console import console
from nomad_eval.base.errors import NomadError
from nomad_eval.base.runfolder import MANIFEST, problem, reports_under
from nomad_eval.config import RunConfig
from nomad_eval.config.gating import gate_settings
from nomad_eval.gate.promotion import objections
from nomad_eval.gate.store import promote
from nomad_eval.run.finish import explainer

LATEST = "latest"


def latest(roots: list[Path], tier: str, suite: str) -> Path:
    """The newest run folder under `roots` of this tier and suite that finished and is whole (its manifest holds)."""
    for report in reports_under(roots, limit=10_000):  # newest first
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


def run(config: RunConfig) -> int:
    if not config.promote.run:
        raise NomadError("tier=promote needs promote.run=<run dir or report.json> (or promote.run=latest)", 2)
    run_path = Path(config.promote.run)
    if str(config.promote.run) == LATEST:
        run_path = latest([Path(str(r)) for r in config.browse.roots], str(config.promote.tier), str(config.suite))
        console.print(f"promote.run=latest: {run_path}", markup=False, highlight=False)
    run_dir = run_path.parent if run_path.name == "report.json" else run_path  # or upstream's file
    found = objections(run_dir, gate_settings(config), explainer(config))
    if found and not config.promote.force:
        raise NomadError("promote refused: " + "; ".join(found) + "; if this is intended (the drop is accepted), "
                         "promote again with promote.force=true", 1)
    variant = config.promote.variant  # Hydra reads `promote.variant=2` as a number; a name is text
    target = promote(run_path, Path(config.paths.baselines_dir), None if variant is None else str(variant))
    for line in found:  # said once the baseline is filed: a promote that then fails (a full disk) promoted nothing
        console.print(f"[yellow]promoted despite:[/] {escape(line)}")
    console.print(f"promoted {run_path} to {target}; commit it to make it the CI baseline")
    return 0
