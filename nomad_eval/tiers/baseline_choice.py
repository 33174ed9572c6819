"""Which baseline a run is compared with when none is named.

The baseline of the run's own fingerprint when there is one; otherwise the nearest baseline of the same tier and
suite: the one whose documents and settings differ least (the most recent among equals). A store with other
distractors never stands in (the hard tier's numbers are not the plain store's). The choice is always said.
"""

from __future__ import annotations

from pathlib import Path

from nomad_eval.base.errors import NomadError
from nomad_eval.harness.system import differences, system_settings
from nomad_eval.report.baseline import Baseline, baseline_path, load_baseline
from nomad_eval.report.changes import document_distance
from nomad_eval.report.schema import Report

PROMOTE_HINT = "run it once on the main branch, then `nomad-eval tier=promote promote.run=<run dir>` and commit " \
               "the baselines folder"


def system_of(report: Report) -> dict[str, str]:
    return report.system or system_settings(report.config, report.tier)


def _distance(base: Report, run: Report) -> tuple[int, int]:
    return document_distance(base, run), len(differences(system_of(base), system_of(run)))


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
    ranked = sorted(same_store, key=lambda pb: (sum(_distance(pb[1].report, run)), _negated(pb[1].promoted_at)))
    path, base = ranked[0]
    docs, settings = _distance(base.report, run)
    docs_text = "documents not recorded" if docs >= 10**6 else f"{docs} document(s)"
    ties = sum(sum(_distance(b.report, run)) == docs + settings for _, b in ranked) > 1
    return path, base, (f"no baseline for this fingerprint ({ident.fingerprint}); the nearest of "
                        f"{len(same_store)} for {what}: {docs_text} and {settings} setting(s) differ"
                        + (", the most recent among equals" if ties else ""))


def _negated(stamp: str) -> tuple[int, ...]:
    # ISO timestamps sort as text; the most recent first means the largest first.
    return tuple(-ord(ch) for ch in stamp)
