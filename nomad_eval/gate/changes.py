"""What differs between a baseline and a run, in the words compare prints before its table: documents, chunks and
the system's settings."""

from __future__ import annotations

from nomad_eval.harness.system import system_settings
from nomad_eval.report.schema import Report, Subject


def system_of(report: Report) -> dict[str, str]:
    return report.system or system_settings(report.config, report.tier)


def _names(ids: list[str], limit: int = 8) -> str:
    return ", ".join(ids[:limit]) + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def corpus_changes(base: Subject | None, run: Subject | None) -> list[str]:
    """Documents added, removed and changed (by content hash), and the chunk count, baseline → run."""
    if base is None or run is None:
        side = "baseline" if base is None else "run"
        return [f"documents: not recorded in the {side} (re-promote the baseline to name document changes)"]
    b, r = base.documents, run.documents
    out = []
    for label, ids in (("added", sorted(r.keys() - b.keys())), ("removed", sorted(b.keys() - r.keys())),
                       ("changed", sorted(k for k in b.keys() & r.keys() if b[k] != r[k]))):
        if ids:
            out.append(f"documents {label} ({len(ids)}): {_names(ids)}")
    nb, nr = sum(base.chunks.values()), sum(run.chunks.values())
    if nb != nr or any(base.chunks.get(d) != run.chunks.get(d) for d in b.keys() & r.keys()):
        moved = sorted(d for d in b.keys() & r.keys() if base.chunks.get(d) != run.chunks.get(d))
        out.append(f"chunks {nb} → {nr}" + (f" (count changed in {_names(moved, 5)})" if moved else ""))
    return out


def document_distance(base: Report, run: Report) -> int | None:
    """How many documents differ (added, removed or changed), the first part of "nearest baseline"; None when
    either side did not record its documents."""
    if base.subject is None or run.subject is None:
        return None
    b, r = base.subject.documents, run.subject.documents
    return len(b.keys() ^ r.keys()) + sum(b[k] != r[k] for k in b.keys() & r.keys())
