"""The baseline store: baselines/<fingerprint>/<tier>[-<variant>].json, filed by promote, with the texts a replay
needs kept by content hash under baselines/objects/ (report/baseline.py reads a baseline file)."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

from nomad_eval.base.errors import NomadError
from nomad_eval.base.safe_names import require_safe
from nomad_eval.base.secrets import redact
from nomad_eval.data.anchors import doc_hash
from nomad_eval.records import Case, summary
from nomad_eval.report.baseline import Baseline, load_run, read_matrix
from nomad_eval.report.io import write_atomic
from nomad_eval.report.schema import Report


def baseline_path(root: Path, fingerprint: str, tier: str, variant: str | None = None,
                  source: str = "baseline path") -> Path:
    """A tier with several variants (generation: one per mode) files each under its own name.

    Every part is checked before it becomes a path (exit 2 otherwise): they come from reports, which are data.
    """
    require_safe(source, fingerprint=fingerprint, tier=tier, variant=variant)
    name = f"{tier}-{variant}.json" if variant else f"{tier}.json"
    return root / fingerprint / name


def default_variant(report: Report) -> str | None:
    return report.identity.mode if report.tier == "generation" and report.identity else None



def _complete(report: Report, cases: list[Case] | None, run: Path) -> None:
    """A run's cases.jsonl must hold every case its report counts: a baseline is compared case by case."""
    expected = report.counts.get("cases", report.counts.get("goldens") if report.tier == "retrieval" else None)
    if expected is None:
        return
    held = len(cases or [])
    if held != expected:
        raise NomadError(f"{run}: cases.jsonl holds {held} case(s) where report.json counts {expected}; a "
                         "baseline must hold every case: re-run it", 2)


def promote(run: Path, root: Path, variant: str | None = None) -> Path:
    if (run / "matrix.json").exists():  # a matrix sweep: its table is the baseline
        rows = read_matrix(run / "matrix.json")
        fps = {r["fingerprint"] for r in rows}
        if len(fps) != 1:
            raise NomadError(f"{run}: matrix rows span fingerprints {sorted(fps)}; promote one corpus at a time", 2)
        target = baseline_path(root, fps.pop(), "matrix", source=str(run / "matrix.json"))
        write_atomic(target, json.dumps({"promoted_from": str(run), "rows": rows}, indent=1))
        return target
    report, cases = load_run(run)
    if report.status != "ok" or report.identity is None:
        raise NomadError(f"{run}: a failed run cannot become a baseline ({report.error})", 2)
    _complete(report, cases, run)
    source = str(run if run.suffix == ".json" else run / "report.json")
    if variant:  # named on the command line: the message says so rather than blaming the report
        require_safe("promote.variant", variant=variant)
    target = baseline_path(root, report.identity.fingerprint, report.tier, variant or default_variant(report),
                           source=source)
    # A report written before configs were redacted may still hold a credential: a baseline is committed.
    report = report.model_copy(update={"config": redact(report.config, report.config),
                                       "system": redact(report.system, report.system)})
    base = Baseline(
        promoted_from=str(run), promoted_at=datetime.now(UTC).isoformat(timespec="seconds"),
        report=report, cases=[summary(c) for c in cases or []],
    )
    write_atomic(target, base.model_dump_json(indent=1))
    store_sources(report, root)
    return target


OBJECTS = "objects"  # baselines/objects/<sha256 12 hex>: texts a replay needs, content-addressed


def store_sources(report: Report, root: Path) -> int:
    """Keep the baseline's documents and glossary by content hash (baselines/objects/<hash>), so attribution can
    revert an edit to the baseline's text: each is read from where the run read it, and kept only when its hash is
    the one the run recorded (the file may have changed since). Deduplicated: a text kept once serves every
    baseline. Returns how many texts were newly written."""
    wanted: dict[str, Path] = {}
    corpus = (report.config.get("data") or {}).get("corpus_dir")
    if report.subject is not None and corpus:
        wanted |= {h: Path(str(corpus)) / f"{d}.md" for d, h in report.subject.documents.items()}
    glossary = (report.config.get("pipeline") or {}).get("glossary_file")
    recorded = report.system.get("pipeline.glossary_file", "")
    if glossary and "sha256:" in recorded:
        wanted[recorded.rsplit("sha256:", 1)[1]] = Path(str(glossary))
    written = 0
    for h, path in wanted.items():
        target = root / OBJECTS / h
        if target.exists() or not path.is_file():
            continue
        raw = path.read_bytes()
        if hashlib.sha256(raw).hexdigest()[:12] == h or doc_hash(raw.decode("utf-8-sig", "replace")) == h:
            write_atomic(target, raw)
            written += 1
    return written
