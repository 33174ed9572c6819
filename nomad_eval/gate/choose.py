"""The baseline a run is compared with when none is named: the baseline of the run's own fingerprint when there is
one; otherwise the nearest baseline of the same tier and suite, the one whose documents and settings differ least
(the most recent among equals). A store with other distractors never stands in (the hard tier's numbers are not
the plain store's). The choice is always said.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from nomad_eval.base.errors import NomadError
from nomad_eval.gate.changes import document_distance, system_of
from nomad_eval.gate.store import baseline_path
from nomad_eval.harness.system import differences
from nomad_eval.report.baseline import Baseline, load_baseline
from nomad_eval.report.schema import Report

PROMOTE_HINT = "run it once on the main branch, then `nomad-eval tier=promote promote.run=<run dir>` and commit " \
               "the baselines folder"


@dataclass(frozen=True)
class Candidate:
    path: Path
    baseline: Baseline
    documents: int | None   # documents that differ; None when either side did not record its documents
    settings: int           # settings that differ

    @property
    def distance(self) -> float:
        # A baseline without recorded documents ranks after every one that has them.
        return math.inf if self.documents is None else self.documents + self.settings


def find_baseline(root: Path, run: Report, variant: str | None) -> tuple[Path, Baseline, str]:
    """The baseline file, its contents, and why it was chosen (one line for the console and the record)."""
    ident = run.identity
    assert ident is not None
    own = baseline_path(root, ident.fingerprint, run.tier, variant)
    if own.exists():
        return own, load_baseline(own), f"the baseline of this run's own fingerprint {ident.fingerprint}"
    found: list[tuple[Path, Baseline]] = []
    for path in sorted(root.glob(f"*/{own.name}")):
        try:
            base = load_baseline(path)
        except NomadError:
            continue  # an unreadable baseline cannot be the nearest; naming it explicitly reports why
        if base.report.identity is not None and base.report.identity.suite == ident.suite:
            found.append((path, base))
    what = f"tier {run.tier}" + (f" ({variant})" if variant else "") + f", suite {ident.suite!r}"
    if not found:
        raise NomadError(f"no baseline for {what} in {root}: nothing to compare with yet; {PROMOTE_HINT}", 2)
    same_store = [(p, b) for p, b in found if b.report.identity and b.report.identity.distractors == ident.distractors]
    if not same_store:
        others = sorted({str(b.report.identity.distractors) for _, b in found if b.report.identity})
        raise NomadError(f"no baseline for {what} with this store (distractors {ident.distractors}); the suite's "
                         f"baselines use distractors {', '.join(others)}; {PROMOTE_HINT}", 2)
    # Most recent first (ISO timestamps sort as text), then the nearest: a stable sort keeps recent among equals.
    recent = sorted(same_store, key=lambda pb: pb[1].promoted_at, reverse=True)
    ranked = sorted((Candidate(p, b, document_distance(b.report, run), len(differences(system_of(b.report),
                                                                                        system_of(run))))
                     for p, b in recent), key=lambda c: c.distance)
    best = ranked[0]
    docs = "documents not recorded" if best.documents is None else f"{best.documents} document(s)"
    ties = sum(c.distance == best.distance for c in ranked) > 1
    return best.path, best.baseline, (f"no baseline for this fingerprint ({ident.fingerprint}); the nearest of "
                                      f"{len(ranked)} for {what}: {docs} and {best.settings} setting(s) differ"
                                      + (", the most recent among equals" if ties else ""))
