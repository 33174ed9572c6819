"""The corpus tier: check inputs, ingest, show status, reset. `check` needs no model and no store."""

from __future__ import annotations

import datetime
import os
from collections import Counter

from rich.markup import escape

from nomad_eval.base.console import console, err_console
from nomad_eval.base.errors import Defect, InvalidInput, NomadError
from nomad_eval.config import RunConfig
from nomad_eval.config.settings import runtime
from nomad_eval.config.tiers import CorpusTier
from nomad_eval.data.golden import Golden, load_goldens
from nomad_eval.harness.runtime import Runtime

ACTIONS = ("check", "lint", "ingest", "status", "reset", "audit", "review")


def check(rt: Runtime) -> int:
    docs = rt.documents
    ids = rt.doc_ids
    defects: list[Defect] = []
    counts: dict[str, int] = {}
    goldens: list[Golden] = []
    if rt.settings.data.kind == "beir":
        counts[rt.settings.suite] = len(rt.all_goldens)
    else:
        folder = rt.settings.data.goldens_dir
        suites = sorted(folder.glob("*.jsonl"))
        rt.suite_path  # noqa: B018 -- an unknown suite name is refused here, with the nearest one
        for path in suites:
            if (why := rt.outside_link(path)) is not None:
                defects.append(Defect(str(path), None, why))
                continue
            try:
                goldens += load_goldens(path, ids, known_doc_ids=rt.settings.baseline_doc_ids)
                counts[path.stem] = len(goldens) - sum(counts.values())
            except InvalidInput as exc:
                defects.extend(exc.defects)
            if counts.get(path.stem) == 0:  # a suite that measures nothing would pass every gate
                defects.append(Defect(str(path), None, "an empty suite: no goldens; add questions or remove it"))
    if rt.settings.data.kind != "beir":  # known-flaky questions: each with an owner, and none past its expiry
        from nomad_eval.data.quarantine import expiry_defects, load_quarantine

        folder = rt.settings.data.goldens_dir
        try:
            held = load_quarantine(folder)
            defects += expiry_defects(folder, held, {g.id for g in goldens}, datetime.date.today())
        except InvalidInput as exc:
            defects.extend(exc.defects)
    if defects:
        raise InvalidInput(defects)
    folders = [rt.settings.data.corpus_dir, *rt.settings.data.extra_corpus_dirs]  # a variant's added folders
    console.print(f"corpus: {len(docs)} documents in {', '.join(map(str, folders))} — ok")
    for name, n in counts.items():
        console.print(f"suite {name}: {n} goldens — ok")
    if goldens:
        _suite_summary(rt, goldens)
    return 0


UNUSED_SHOWN = 20  # documents no golden refers to, named in the warning; the rest counted (a BEIR corpus has 5,000)


def _suite_summary(rt: Runtime, goldens: list[Golden]) -> None:
    """What upstream's check prints beside "ok", over every suite: the fingerprint, each tag's question count,
    the refusal questions, and the documents no question asks about (ingested for nothing, and distractors nobody
    chose deliberately)."""
    console.print(f"fingerprint: {rt.fingerprint}")
    tags = Counter(t for g in goldens for t in g.tags)
    console.print("tags: " + (" ".join(f"{t}={n}" for t, n in sorted(tags.items(), key=lambda tn: (-tn[1], tn[0])))
                              or "none"), markup=False)
    console.print(f"refusal questions: {sum(g.expect_refusal for g in goldens)} of {len(goldens)}")
    referenced = {d for g in goldens for d in g.relevant_doc_ids}
    unused = [d.doc_id for d in rt.corpus_documents if d.doc_id not in referenced]
    if unused:
        shown = ", ".join(unused[:UNUSED_SHOWN]) + (f", … and {len(unused) - UNUSED_SHOWN} more"
                                                     if len(unused) > UNUSED_SHOWN else "")
        err_console.print(f"warning: {len(unused)} document(s) no golden refers to: {shown}", markup=False)


def lint_suites(rt: Runtime, fail_unsourced: bool = False) -> int:
    """Every finding names file and line. Warnings only (exit 0), unless `fail_unsourced`: then a mustInclude that
    none of its relevant documents holds exits 1, as a golden out of date does in a run (the fact was deleted or
    changed in its document, or the golden is wrong). A suite that does not load is the input's fault (exit 2)."""
    from nomad_eval.data.lint import UNSOURCED, lint

    folder = rt.settings.data.goldens_dir
    findings = []
    defects: list[Defect] = []
    for path in sorted(folder.glob("*.jsonl")):
        if (why := rt.outside_link(path)) is not None:
            defects.append(Defect(str(path), None, why))
            continue
        try:
            findings += lint(load_goldens(path, rt.doc_ids), rt.documents, path)
        except InvalidInput as exc:  # every suite's defects in one message, as action=check gives them
            defects.extend(exc.defects)
    if defects:
        raise InvalidInput(defects)
    for f in findings:
        console.print(f"[yellow]warning:[/] {escape(str(f))}")
    console.print(f"lint: {len(findings)} warning(s) in {folder}")
    unsourced = sum(f.kind == UNSOURCED for f in findings)
    if not fail_unsourced or not unsourced:
        return 0
    err_console.print(f"lint failed: {unsourced} mustInclude pattern(s) match none of their relevant documents "
                      "(tier.fail_unsourced=true): update the golden or restore the fact in its document",
                      markup=False, highlight=False)
    return 1


def status(rt: Runtime) -> int:
    from rich.table import Table  # a check prints no table

    from nomad_eval.harness.index import truncated_chunks

    cut = truncated_chunks(rt)
    table = Table(title="corpus status", show_header=False)
    table.add_row("fingerprint", rt.fingerprint)
    table.add_row("documents", str(len(rt.documents)))
    table.add_row("chunks", str(len(rt.chunks)))
    table.add_row("goldens hash", f"{rt.goldens_hash} ({rt.settings.suite}, {len(rt.all_goldens)} goldens)")
    for row in _store_rows(rt):
        table.add_row(*row)
    table.add_row("chunks cut short by the embedder", str(len(cut)))
    console.print(table)
    for chunk, n in cut:
        console.print(f"  truncated: {chunk.chunk_id} ({n} tokens > {rt.embedder.max_input_tokens})")
    return 0


def _store_rows(rt: Runtime) -> list[tuple[str, str]]:
    from nomad_eval.harness.index import check_vectors, store_state

    d = rt.data_dir.resolve()
    where = d if d.exists() else next(p for p in d.parents if p.exists())
    if not os.access(where, os.W_OK):  # the engine writes its log even to read: a read-only project says so
        return [("store", f"not opened: {where} cannot be written (read-only); status of the store needs a "
                          "writable paths.data_dir")]
    with rt.store() as store:
        state = store_state(rt, store)
        health = store.health()  # reads a sample of the stored vectors: a store that opens may not search
        # The check a run makes when it readies the store: this fingerprint's vectors against the cache's.
        vectors = check_vectors(rt, store) if state.current else None
    return [("store", f"{state.tagged_points} tagged points, {state.matching_points} with this fingerprint"),
            ("store health", f"{health}; the next run or action=ingest rebuilds it" if health
             else "sound (a sample of stored vectors read back, one search)"),
            ("stored vectors", "not compared (" + ("the store does not hold this fingerprint" if not state.current
                               else "only the embedded store's vectors are compared with the cache") + ")"
             if vectors is None else vectors.describe()
             + ("; the next run moves the store aside and rebuilds it" if vectors.problem else "")),
            ("store holds this fingerprint", "yes" if state.current else "no — run action=ingest")]


def reset(rt: Runtime, which: str) -> int:
    """Delete this configuration's points (`tier.reset=this`) or every fingerprint's (`all`), never a point the
    eval did not write."""
    if which not in ("this", "all"):
        raise NomadError(f"tier.reset={which!r}: choose this (this config's fingerprint) or all", 2)
    fingerprint = rt.fingerprint if which == "this" else None
    with rt.store() as store:
        before = store.count(fingerprint)
        store.delete_tagged(fingerprint)
        scope = f"of fingerprint {fingerprint}" if fingerprint else "of every fingerprint"
        console.print(f"reset: deleted {before} tagged points {scope}; {store.count()} tagged points of other "
                      f"fingerprints and {store.count(tagged=False) - store.count()} untagged points untouched")
    return 0


def audit_collection(rt: Runtime, config: RunConfig) -> int:
    """The collection the app searches (store=server) accounted against the corpus: exit 1 when any kind of
    finding is on more documents than its audit.max_<kind>, 0 when the collection matches."""
    from nomad_eval.harness.audit import KINDS, AuditSettings, ServedPoint, audit, audit_lines, served_collection

    a = config.audit
    s = AuditSettings(str(a.doc_id_key), str(a.text_key), int(a.sample), float(a.min_cosine), int(config.seed),
                      {k: int(getattr(a, f"max_{k}")) for k in KINDS})
    with served_collection(rt) as reader:
        reader.count()  # an absent collection is named before anything is read
        points = (ServedPoint(*p) for p in reader.points())
        result = audit(points, rt.corpus_documents, s, rt.cached_embedder.embed_documents,
                       rt.cached_embedder.cached_documents)
    for line in audit_lines(result, s):
        console.print(line, markup=False)
    over = result.over(s.limits)
    console.print(f"audit: {'over the limit: ' + ', '.join(over) if over else 'the collection matches the corpus'}")
    return 1 if over else 0


def run(config: RunConfig) -> int:
    action = config.action or "status"
    if action not in ACTIONS:
        raise NomadError(f"unknown action {action!r} for tier=corpus; choose one of {', '.join(ACTIONS)}", 2)
    rt = runtime(config)
    if action == "reset":
        return reset(rt, config.tier_of(CorpusTier).reset)
    if action == "audit":
        return audit_collection(rt, config)
    if action == "lint":
        return lint_suites(rt, config.tier_of(CorpusTier).fail_unsourced)
    if action == "review":
        from nomad_eval.run.review import review  # reads baselines (pydantic models, numpy): not for a check

        return review(config, rt)
    if action != "ingest":
        return {"check": check, "status": status}[action](rt)
    # Here, not at the top: `check` (the one action that must start fast) needs no numpy and no store.
    from nomad_eval.harness.index import embed_chunks, ingest

    vecs = embed_chunks(rt, bool(config.quiet))  # before taking the store: the lock is held only to write
    with rt.store() as store:
        n = ingest(rt, store, bool(config.quiet), vecs)
    console.print(f"ingested {n} chunks of {len(rt.documents)} documents, fingerprint {rt.fingerprint}")
    err_console.print(f"embedding model calls: {rt.cached_embedder.model_calls}")
    return 0
