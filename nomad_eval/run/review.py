"""tier=corpus action=review: proposed updates for the goldens the knowledge base outgrew, never silent edits.

Re-anchors the suite against the corpus as it is now (data/anchors.py) and writes a reviewable file
(`tier.review_file`): the relevantDocIds remap of each relocated golden; for a gone golden whose sentence survives
with another value, the sentence before and after and a pattern for the new value; the goldens to retire. A person
sets `"accept": true` on the ones they agree with; `tier.accept=true` then writes exactly those into the suite,
every other line kept byte for byte.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import NotRequired, TypedDict

from rich.markup import escape

from nomad_eval.base.atomic import JsonObject, write_atomic
from nomad_eval.base.console import console
from nomad_eval.base.errors import Defect, InvalidInput, NomadError
from nomad_eval.config import RunConfig
from nomad_eval.config.tiers import CorpusTier
from nomad_eval.data.anchors import Evidence, anchor_goldens, doc_hash, first_match, reanchor_all, sentences
from nomad_eval.data.corpus import Document
from nomad_eval.data.golden import Golden, json_lines
from nomad_eval.gate.choose import find_baseline
from nomad_eval.harness.runtime import Runtime
from nomad_eval.harness.system import system_settings
from nomad_eval.report.baseline import Baseline, load_baseline
from nomad_eval.report.schema import Identity, Report, Subject

SIMILAR = 0.6  # difflib ratio above which a sentence of the corpus is taken for the baseline's, edited


class Proposal(TypedDict):
    """One line of the review file: what would change in a golden (`before`, `after`) or what to do by hand."""

    id: str
    line: int
    status: str
    evidence: str
    accept: bool
    kind: str                                          # remap, pattern, choose or retire
    before: NotRequired[dict[str, str | list[str]]]
    after: NotRequired[dict[str, str | list[str]]]
    note: NotRequired[str]


def _baseline(config: RunConfig, rt: Runtime) -> tuple[str, Baseline]:
    """The baseline compare would use for this corpus and suite (compare.baseline, else the nearest)."""
    if config.compare.baseline:
        return str(config.compare.baseline), load_baseline(Path(str(config.compare.baseline)))
    docs = {d.doc_id: doc_hash(d.text) for d in rt.corpus_documents}
    here = Report(tier="retrieval", identity=Identity(
        fingerprint=rt.fingerprint, goldens_hash=rt.goldens_hash, suite=rt.settings.suite,
        embedder=str(config.embedder.name), pipeline=rt.settings.pipeline_target, distractors=rt.distractor_name),
        subject=Subject(documents=docs), system=system_settings(rt.resolved_config(), "retrieval"))
    path, base, _ = find_baseline(Path(str(config.paths.baselines_dir)), here, None)
    return str(path), base


def _successor(quote: str, docs: list[Document]) -> str | None:
    """The corpus sentence most like the baseline's quote (the same sentence, edited), or None."""
    best, ratio = None, SIMILAR
    for d in docs:
        for s in sentences(d.text):
            r = difflib.SequenceMatcher(None, quote, s).ratio()
            if r > ratio and s != quote:
                best, ratio = s, r
    return best


def _new_pattern(pattern: str, before: str, after: str) -> str | None:
    """The pattern with the words the edit replaced replaced in it too, when it then matches the edited sentence."""
    old_words, new_words = before.split(), after.split()
    ops = difflib.SequenceMatcher(None, old_words, new_words).get_opcodes()
    for tag, i1, i2, j1, j2 in ops:
        if tag != "replace":
            continue
        old, new = " ".join(old_words[i1:i2]).strip(".,;:"), " ".join(new_words[j1:j2]).strip(".,;:")
        if old and old in pattern:
            candidate = pattern.replace(old, new, 1)
            if first_match(candidate, after):
                return candidate
    return None


def proposal(e: Evidence, g: Golden, line: int, docs: list[Document]) -> Proposal | None:
    """One reviewable proposal for a golden out of date (or ambiguous), or None."""
    head = Proposal(id=g.id, line=line, status=e.status, evidence=e.message, accept=False, kind="")
    if e.status == "relocated" and e.remap is not None:
        return head | {"kind": "remap", "before": {"relevantDocIds": list(e.remap[0])},
                       "after": {"relevantDocIds": list(e.remap[1])}}
    if e.status == "ambiguous":
        return head | {"kind": "choose", "note": "several documents say it: edit relevantDocIds by hand"}
    if e.status != "gone":
        return None
    own = [d for d in docs if d.doc_id in g.relevant_doc_ids] or docs
    after = _successor(e.quote, own) if e.quote else None
    patterns = [(p, _new_pattern(p, e.quote, after) if after else None) for p in g.must_include]
    if after and any(new for _, new in patterns):
        return head | {"kind": "pattern", "before": {"sentence": e.quote, "mustInclude": g.must_include},
                       "after": {"sentence": after, "mustInclude": [new or p for p, new in patterns]}}
    return head | {"kind": "retire", "note": "no sentence of the corpus says it any more: retire the golden, or "
                   "rewrite it for what the documents now say"}


def review(config: RunConfig, rt: Runtime) -> int:
    tier = config.tier_of(CorpusTier)
    target = Path(tier.review_file)
    if tier.accept:
        return accept(rt.suite_path, target)
    where, base = _baseline(config, rt)
    docs = [d for d in rt.corpus_documents if not d.distractor]
    run = anchor_goldens(rt.all_goldens, docs)
    subject = base.report.subject
    found = reanchor_all(subject.anchors if subject else None, run, subject.documents if subject else None,
                         {d.doc_id: doc_hash(d.text) for d in docs})
    lines = _lines_by_id(rt.suite_path)
    by_id = {g.id: g for g in rt.all_goldens}
    proposals = [p for gid, e in found.items() if (p := proposal(e, by_id[gid], lines[gid], docs)) is not None]
    write_atomic(target, json.dumps({"suite": str(rt.suite_path), "baseline": where, "proposals": proposals},
                                    indent=1, ensure_ascii=False) + "\n")
    for p in proposals:
        console.print(f"{p['kind']}: {escape(p['evidence'])}")
    console.print(f"review: {len(proposals)} proposal(s) for {len(found)} anchored golden(s) against {where}, "
                  f"written to {target}; set \"accept\": true on those you agree with, then run "
                  "tier=corpus action=review tier.accept=true", markup=False)
    return 0


def _lines_by_id(path: Path) -> dict[str, int]:
    out: dict[str, int] = {}
    for n, line in enumerate(json_lines(path.read_bytes(), str(path), 2), 1):
        obj = _object(line)
        if obj is not None and isinstance(obj.get("id"), str):
            out.setdefault(obj["id"], n)
    return out


def accept(suite: Path, review_file: Path) -> int:
    """Write the accepted proposals into the suite: each accepted golden's line rewritten (a retired one removed),
    every other line byte for byte. A proposal whose golden no longer reads as it did is refused (exit 2)."""
    proposals = _accepted(review_file)
    raw = suite.read_bytes()
    bom = "\ufeff" if raw.startswith(b"\xef\xbb\xbf") else ""
    wanted = {p["id"]: p for p in proposals if p.get("kind") in ("remap", "pattern", "retire")}
    out, defects = _rewritten(raw.decode("utf-8-sig").split("\n"), wanted, suite)
    defects += [Defect(str(review_file), None, "no golden with this id in the suite", gid) for gid in wanted]
    if defects:
        raise InvalidInput(defects, 2)
    write_atomic(suite, bom + "\n".join(out))
    console.print(f"accepted {len(proposals)} proposal(s) into {suite}; every other line unchanged", markup=False)
    return 0


def _accepted(review_file: Path) -> list[JsonObject]:
    """The proposals of a review file a person set `"accept": true` on, as the file holds them."""
    try:
        return [p for p in json.loads(review_file.read_bytes())["proposals"] if p.get("accept") is True]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise NomadError(f"{review_file}: not a review file ({exc}); write one with tier=corpus action=review", 2) \
            from None


def _rewritten(lines: list[str], wanted: dict[str, JsonObject], suite: Path) -> tuple[list[str], list[Defect]]:
    """The suite's lines with the wanted proposals applied (each taken out of `wanted`), and the stale ones."""
    defects: list[Defect] = []
    out: list[str] = []
    for n, line in enumerate(lines, 1):
        obj = _object(line)
        p = wanted.pop(str(obj.get("id")), None) if obj is not None else None
        if p is None or obj is None:
            out.append(line)
            continue
        stale = [k for k, v in (p.get("before") or {}).items() if k != "sentence" and obj.get(k) != v]
        if stale:
            defects.append(Defect(str(suite), n, f"{', '.join(stale)} changed since the review: run it again", p["id"]))
            out.append(line)
        elif p["kind"] != "retire":
            after = {k: v for k, v in p["after"].items() if k != "sentence"}
            out.append(json.dumps({**obj, **after}, ensure_ascii=False) + ("\r" if line.endswith("\r") else ""))
    return out, defects


def _object(line: str) -> JsonObject | None:
    try:
        obj = json.loads(line) if line.strip() and not line.lstrip().startswith("//") else None
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None
