"""Each flipped question named with the change that flipped it: the changes compare lists (documents added, removed
and edited, each pipeline setting and the threshold, the glossary), replayed on the run's side one reverted at a
time (core/attribution.py), retrieval in memory over cached vectors (harness/replay.py).

The baseline's version of an edited or removed document, and its glossary, come from the baseline's stored texts
(baselines/objects/<hash>, kept at promote). A change the replay cannot revert (another embedder, a store setting,
a text the baseline did not keep) is named, and what it moved shows as "not reproduced by the replay".
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hydra.utils import instantiate

from nomad_eval.config import RunConfig
from nomad_eval.core.attribution import Attribution, Values, attribute
from nomad_eval.core.questions import questions_from_cases
from nomad_eval.data.anchors import doc_hash
from nomad_eval.data.corpus import Document
from nomad_eval.gate.changes import system_of
from nomad_eval.gate.outcome import Verdict
from nomad_eval.gate.store import OBJECTS
from nomad_eval.harness.replay import World, replay
from nomad_eval.harness.runtime import Runtime
from nomad_eval.harness.system import system_settings
from nomad_eval.rag.chunking import ChunkerParams
from nomad_eval.rag.pipeline import Pipeline, load_glossary
from nomad_eval.records import Case, hits
from nomad_eval.report.baseline import Baseline
from nomad_eval.report.schema import Report
from nomad_eval.run.queries import formed_queries
from nomad_eval.run.retrieval_cases import case_metrics

GLOSSARY = "the glossary"
CHUNKER = ("chunk_size", "chunk_overlap", "whole_document")  # ChunkerParams' fields, in order


@dataclass(frozen=True)
class Change:
    name: str      # what the output calls it: a document id, a setting key, "the glossary"
    kind: str      # added | removed | edited | setting | glossary
    text: str      # "water-boiling was edited", "pipeline.chunk_size 800 → 300"
    value: str = ""  # the baseline's stored text's hash (documents, glossary)


def listed_changes(base: Report, run: Report) -> tuple[list[Change], list[str]]:
    """The changes a replay can revert, and a note for each it cannot."""
    out: list[Change] = []
    notes: list[str] = []
    b = base.subject.documents if base.subject else {}
    r = run.subject.documents if run.subject else {}
    out += [Change(d, "added", f"{d} was added") for d in sorted(r.keys() - b.keys())]
    out += [Change(d, "removed", f"{d} was removed", b[d]) for d in sorted(b.keys() - r.keys())]
    out += [Change(d, "edited", f"{d} was edited", b[d]) for d in sorted(b.keys() & r.keys()) if b[d] != r[d]]
    bs, rs = system_of(base), system_of(run)
    for key in sorted(bs.keys() | rs.keys()):
        if bs.get(key) == rs.get(key):
            continue
        text = f"{key} {bs.get(key, '(unset)')} → {rs.get(key, '(unset)')}"
        if key == "pipeline.glossary_file":
            out.append(Change(GLOSSARY, "glossary", "the glossary changed", bs.get(key, "").rsplit("sha256:", 1)[-1]))
        elif key.startswith("pipeline.") or key == "threshold":
            out.append(Change(key, "setting", text))
        else:
            notes.append(f"not replayed: {text}")
    return out, notes


class Replayer:
    """The run's world with a set of changes reverted, measured on the run's questions."""

    def __init__(self, config: RunConfig, rt: Runtime, base: Report, objects: Path, changes: list[Change],
                 metrics: list[str], run_measures: list[str] | None) -> None:
        self.config, self.rt, self.base, self.objects = config, rt, base, objects
        self.changes = {c.name: c for c in changes}
        self.metrics = metrics
        # The run's own cutoffs (a compare's config has none), so the replay scores what the run scored.
        self.ks = sorted({int(m.removeprefix("@")) for m in (run_measures or [])})

    def stored(self, digest: str) -> Path:
        return self.objects / digest

    def world(self, reverted: frozenset[str]) -> World:
        docs = {d.doc_id: d for d in self.rt.corpus_documents}
        pipe = self.config.pipeline.spec()
        threshold = self.config.threshold
        glossary: dict[str, str] | None = None
        for name in sorted(reverted):
            c = self.changes[name]
            if c.kind == "added":
                docs.pop(name, None)
            elif c.kind in ("removed", "edited"):
                text = self.stored(c.value).read_bytes().decode("utf-8-sig")
                docs[name] = Document(name, str(self.stored(c.value)), text, name)
            elif c.kind == "glossary":
                glossary = load_glossary(self.stored(c.value)) if c.value else {}
            elif name == "threshold":
                threshold = self.base.config.get("threshold")
            else:
                key = name.removeprefix("pipeline.")
                pipe[key] = self.base.config["pipeline"].get(key)
        pipeline: Pipeline = instantiate(pipe)
        if glossary is not None:
            pipeline.glossary_terms = glossary
        chunker = ChunkerParams.of(pipe)
        return World(tuple(docs[d] for d in sorted(docs)), chunker, pipeline,
                     None if threshold is None else float(threshold))

    def measure(self, reverted: frozenset[str]) -> Values:
        w = self.world(reverted)
        goldens = self.rt.goldens
        queries = [q.text for q in formed_queries(goldens, w.pipeline, None, int(self.config.seed))]
        out: dict[str, dict[str, float | None]] = {}
        for g, r in zip(goldens, replay(w, self.rt.cached_embedder, queries), strict=True):
            values = case_metrics(g, r.chunks, self.ks)
            out[g.id] = {m: values.get(m) for m in self.metrics}
        return out


def _values(cases: list[Case], ids: set[str], metrics: list[str]) -> dict[str, dict[str, float | None]]:
    return {q.id: {m: q.values.get(m) for m in metrics} for q in questions_from_cases(cases) if q.key in ids}


def replayable(config: RunConfig, rt: Runtime, run: Report) -> str | None:
    """Why this run's retrieval cannot be replayed, or None."""
    if run.tier != "retrieval":
        return f"a {run.tier} run: attribution replays retrieval runs"
    if not rt.uses_store:
        return "a custom pipeline: its retrieval cannot be replayed here"
    if str(config.pipeline.history) == "rewrite":
        return "pipeline.history=rewrite asks a chat model for every query"
    docs = {d.doc_id: doc_hash(d.text) for d in rt.corpus_documents}
    if system_settings(rt.resolved_config(), "retrieval") != system_of(run) or (
            run.subject is not None and docs != run.subject.documents):
        return ("this config or corpus is not the run's (attribution replays the run's own settings: it runs at the "
                "end of a run with compare.after_run=true)")
    return None


def _flipped(before: dict[str, dict[str, float | None]], after: dict[str, dict[str, float | None]],
             metrics: list[str]) -> bool:
    """Whether any gated metric of any question measured on both sides changed."""
    return any(b is not None and a is not None and abs(a - b) > 1e-9
               for q in before for m in metrics for b, a in [(before[q].get(m), (after.get(q) or {}).get(m))])


def _stored_changes(base: Report, run: Report, objects: Path) -> tuple[list[Change], list[str]]:
    """The changes between the baseline and this run that can be replayed (the baseline's text of each is stored
    in `objects`), and notes naming those that cannot."""
    changes, notes = listed_changes(base, run)
    missing = [c for c in changes if c.value and not (objects / c.value).is_file()]
    notes += [f"not replayed: {c.text} (the baseline's text is not stored in {objects}; re-promote the baseline)"
              for c in missing]
    return [c for c in changes if c not in missing], notes


def explain(config: RunConfig, rt: Runtime, run: Report, cases: list[Case], base: Baseline, verdict: Verdict
            ) -> tuple[Attribution | None, list[str]]:
    """The attribution of every flipped gated question, or None with the reason in the notes."""
    metrics = [m.name for m in verdict.metrics if m.gated]
    common = set(verdict.questions.common)
    before, after = _values(base.cases, common, metrics), _values(cases, common, metrics)
    if not _flipped(before, after, metrics):
        return None, []
    if (why := replayable(config, rt, run)) is not None:
        return None, [f"attribution not run: {why}"]
    objects = Path(str(config.paths.baselines_dir)) / OBJECTS
    changes, notes = _stored_changes(base.report, run, objects)
    limit = int(config.compare.replay_max)
    if not changes or len(changes) > limit:
        return None, [*notes, f"attribution stopped: {len(changes)} replayable change(s), "
                              f"compare.replay_max={limit}" if changes else "attribution: no change to replay"]
    measures = run.identity.measures if run.identity else None
    replayer = Replayer(config, rt, base.report, objects, changes, metrics, measures)
    top = {c.id: next((r.doc_id for r in hits(c)), None) for c in cases}
    by_name = {c.name: c for c in changes}

    def describe(name: str, q: str) -> str:
        c = by_name[name]
        return c.text + (" and now ranks first" if c.kind == "added" and top.get(q) == name else "")

    deltas = {m.name: m.delta for m in verdict.metrics if m.gated}
    found = attribute([c.name for c in changes], replayer.measure, before, after, metrics, describe, deltas)
    return found, notes

