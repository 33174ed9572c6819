"""Upstream NOMAD's harness: its metric names against ours, and its report and baseline files read as ours.

NOMAD's harness writes `baselines/<fingerprint>/retrieval.json` as `meta` {kind, createdAt, corpusFingerprint,
gitSha, gitBranch, gitDirty, nomadVersion, platform, params {topK, scoreThreshold, kValues, tag}}, `metrics`,
`byTag` and `cases` (per question: recall/hitRate/precision/ndcg as {k: value}, reciprocalRank, empty); its
reports have the same shape. This module converts such a file into a report and case records whose values are
upstream's own, in the upstream view (`upstream.<name>`, report/upstream_view.py), so compare pairs questions by
id as it does for our own runs and baselines. Its corpus fingerprint comes from NOMAD's own chunker
and embedder and never equals ours: compare reports it (with topK, threshold and cutoffs) as a difference of the
system under test instead of refusing (see `upstream_refusals` and `upstream_differences`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from nomad_eval.base.errors import NomadError, first_error
from nomad_eval.metrics.upstream.retrieval import PREFIX
from nomad_eval.records import Case, RetrievalCase
from nomad_eval.records import values as as_values
from nomad_eval.report.schema import Identity, Provenance, Report, UpstreamView

# Upstream metric family -> ours, in one place (docs/upstream-nomad.md mirrors it). A family that
# takes a cutoff keeps it: upstream `hitRate@5` is our `hit@5`.
UPSTREAM_TO_OURS: dict[str, str] = {
    # retrieval
    "recall": "recall",
    "hitRate": "hit",
    "precision": "precision",
    "ndcg": "ndcg",
    "mrr": "rr",
    "emptyRateOnAnswerable": "emptyRateOnAnswerable",
    "nonEmptyRateOnRefusal": "nonEmptyRateOnRefusal",
    # generation
    "correctness": "correctness",
    "refusalCorrectness": "refusal_recall",
    "leakageRate": "leakage_rate",
    "thinkTagLeakRate": "think_leak_rate",
    "markdownRate": "markdownRate",
    "groundedness": "groundedness",
    "historyElidedRate": "history_elided_rate",
    "chunksDroppedRate": "chunks_dropped_rate",
    "promptTokenError": "prompt_token_error",
}
# Upstream case fields holding {k: value}.
_BY_K_FIELDS = ("recall", "hitRate", "precision", "ndcg")
SOURCE = "nomad-upstream"  # report.config["source"] of a converted upstream baseline


def ours(upstream_name: str) -> str | None:
    """Our reported name for an upstream metric name (`hitRate@5` -> `hit@5`, `mrr` -> `rr`); None if unknown."""
    family, at, k = upstream_name.partition("@")  # upstream's grammar, not ours: its cut-off text passes through
    mapped = UPSTREAM_TO_OURS.get(family)
    return None if mapped is None else f"{mapped}{at}{k}"


class UpstreamParams(BaseModel):
    model_config = ConfigDict(extra="allow")
    topK: int | None = None
    scoreThreshold: float | None = None
    kValues: list[int] = Field(default_factory=list)
    tag: str | None = None


class UpstreamMeta(BaseModel):
    model_config = ConfigDict(extra="allow")
    kind: str
    createdAt: str | None = None
    corpusFingerprint: str
    gitSha: str | None = None
    gitBranch: str | None = None
    gitDirty: bool | None = None
    nomadVersion: str | None = None
    platform: Any = None
    params: UpstreamParams = Field(default_factory=UpstreamParams)


class UpstreamCase(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str
    tags: list[str] = Field(default_factory=list)
    retrievedCount: int | None = None
    relevantDocIds: list[str] = Field(default_factory=list)
    retrievedDocIds: list[str] = Field(default_factory=list)
    expectRefusal: bool = False
    recall: dict[int, float | None] = Field(default_factory=dict)
    hitRate: dict[int, float | None] = Field(default_factory=dict)
    precision: dict[int, float | None] = Field(default_factory=dict)
    ndcg: dict[int, float | None] = Field(default_factory=dict)
    reciprocalRank: float | None = None
    empty: bool | None = None


class UpstreamBaseline(BaseModel):
    model_config = ConfigDict(extra="allow")
    meta: UpstreamMeta
    metrics: dict[str, float | None]
    byTag: dict[str, dict[str, float | None]] = Field(default_factory=dict)
    cases: list[UpstreamCase]


def looks_upstream(raw: object) -> bool:
    """Upstream's file has `meta` at the top; ours has `report` and `promoted_from`."""
    return isinstance(raw, dict) and "meta" in raw and "report" not in raw


def view_name(name: str) -> str:
    """An upstream metric name in the upstream view: `hitRate@5` -> `upstream.hitRate@5`."""
    return f"{PREFIX}{name}"


def view_metrics(metrics: Mapping[str, float | None]) -> dict[str, float | None]:
    """Upstream's own metrics under the view's names, values as upstream stored them."""
    return {view_name(name): value for name, value in metrics.items()}


def case_record(c: UpstreamCase, top_k: int | None) -> Case:
    """One upstream case as our case record: its stored values under the upstream view's names, as `metrics`
    and as `upstream` (compare reads the view from either side), never re-read under this project's names."""
    values: dict[str, float | None] = {}
    for field in _BY_K_FIELDS:
        for k, value in sorted(getattr(c, field).items()):
            values[view_name(f"{field}@{k}")] = value
    values[view_name("mrr")] = c.reciprocalRank
    empty = c.empty if c.empty is not None else (c.retrievedCount == 0 if c.retrievedCount is not None else None)
    if empty is not None:
        values[view_name("emptyRateOnAnswerable")] = None if c.expectRefusal else float(empty)
        values[view_name("nonEmptyRateOnRefusal")] = float(not empty) if c.expectRefusal else None
    recall_ks = [k for k in c.recall if top_k is None or k <= top_k]
    at = max(recall_ks) if recall_ks else None
    passed = None if c.expectRefusal or at is None or c.recall[at] is None else c.recall[at] == 1.0
    return RetrievalCase(id=c.id, tags=tuple(c.tags), relevant_doc_ids=tuple(c.relevantDocIds),
                         expect_refusal=c.expectRefusal, passed=passed, metrics=as_values(values),
                         upstream=as_values(values))


def _refuse(path: Path, why: str) -> NomadError:
    return NomadError(f"{path}: not a readable NOMAD (upstream) baseline: {why}", 2)


def parse_upstream(raw: object, path: Path) -> UpstreamBaseline:
    """The validated upstream file, or NomadError (exit 2: not comparable) naming the file and the first defect."""
    if not isinstance(raw, dict):
        raise _refuse(path, "the top level is not an object")
    missing = [k for k in ("meta", "metrics", "cases") if k not in raw]
    if missing:
        raise _refuse(path, f"missing {', '.join(repr(k) for k in missing)}")
    try:
        return UpstreamBaseline.model_validate(raw)
    except ValidationError as exc:
        raise _refuse(path, first_error(exc)) from None


def upstream_baseline(raw: object, path: Path) -> tuple[Report, list[Case]]:
    """An upstream retrieval baseline as our report and case records (compare and plan read these)."""
    up = parse_upstream(raw, path)
    meta, params = up.meta, up.meta.params
    if meta.kind != "retrieval":
        raise _refuse(path, f"meta.kind is {meta.kind!r}; only upstream retrieval baselines carry per-question "
                            "records compare can pair (re-run the generation tier here and promote it)")
    ids = [c.id for c in up.cases]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise _refuse(path, f"case id(s) {dupes} appear more than once")
    ks = params.kValues or sorted({k for c in up.cases for k in c.recall})
    identity = Identity(
        fingerprint=meta.corpusFingerprint, goldens_hash="", suite="", tags=[params.tag] if params.tag else [],
        top_k=params.topK, threshold=params.scoreThreshold, embedder="NOMAD (upstream)", pipeline="NOMAD (upstream)",
        measures=[f"@{k}" for k in ks],
    )
    metrics, by_tag = view_metrics(up.metrics), {tag: view_metrics(m) for tag, m in up.byTag.items()}
    report = Report(
        tier="retrieval", identity=identity,
        config={"source": SOURCE, "upstream_meta": meta.model_dump(), "path": str(path)},
        metrics=metrics, metrics_by_tag=by_tag,
        upstream=UpstreamView(ks=list(ks), metrics=metrics, metrics_by_tag=by_tag),
        counts={"goldens": len(up.cases), "refusal": sum(c.expectRefusal for c in up.cases)},
        provenance=Provenance(git_commit=meta.gitSha, git_dirty=meta.gitDirty,
                              versions={"nomad": meta.nomadVersion or "unknown"}, python="",
                              created=meta.createdAt or "", git_branch=meta.gitBranch,
                              platform=_platform(meta.platform)),
        warnings=[f"converted from upstream NOMAD report {path} (corpus fingerprint {meta.corpusFingerprint}); "
                  "its metrics are upstream's own, named upstream.<name>"],
    )
    return report, [case_record(c, params.topK) for c in up.cases]


def _platform(value: Any) -> dict[str, str]:
    """Upstream's `meta.platform` under this project's provenance keys (its Node version kept as `node`)."""
    if isinstance(value, str):
        return {"platform": value}
    keys = {"osName": "os", "cpuArchitecture": "cpu_architecture", "nodeVersion": "node"}
    given = value if isinstance(value, dict) else {}
    return {ours: str(given[theirs]) for theirs, ours in keys.items() if given.get(theirs) is not None}


def is_upstream(report: Report) -> bool:
    return report.config.get("source") == SOURCE


def upstream_refusals(run: Report, base: Report) -> list[str]:
    """With an upstream file on either side only the tier must match (exit 2 otherwise); goldens are paired by
    id."""
    if run.identity is None:
        return ["the run has no identity (a failed run?); re-run it"]
    if run.tier != base.tier:
        return [f"tier differs: run {run.tier}, baseline {base.tier}; an upstream NOMAD file compares with a "
                "retrieval run"]
    return []


def upstream_differences(run: Report, base: Report, run_cases: list[Case] | None = None,
                         base_cases: list[Case] | None = None) -> list[str]:
    """What differs from an upstream baseline, `key upstream → run`, the corpus fingerprint always first."""
    assert run.identity is not None and base.identity is not None
    r, b = run.identity, base.identity
    which = "the baseline" if is_upstream(base) else "the run"
    out = [f"corpus fingerprint {b.fingerprint} → {r.fingerprint} (DIFFERS: {which} is upstream NOMAD's, "
           "built by its own chunker and embedder; compared on the questions in common, not refused; both sides "
           "in the upstream view, upstream's own definitions)"
           if b.fingerprint != r.fingerprint else f"corpus fingerprint {b.fingerprint} (same)"]
    pairs = [("top_k", b.top_k, r.top_k), ("threshold", b.threshold, r.threshold),
             ("measured cutoffs", ",".join(b.measures), ",".join(r.measures)),
             ("tag filter", ",".join(b.tags) or "(none)", ",".join(r.tags) or "(none)")]
    out += [f"{name} {bv} → {rv}" for name, bv, rv in pairs if bv != rv]
    if base_cases is not None and run_cases is not None:
        theirs = {c.id: sorted(c.relevant_doc_ids) for c in base_cases}
        changed = sorted(c.id for c in run_cases if c.id in theirs and sorted(c.relevant_doc_ids) != theirs[c.id])
        if changed:
            out.append(f"relevant documents differ for {len(changed)} question(s) in common: "
                       f"{', '.join(changed[:5])}{' ...' if len(changed) > 5 else ''}")
    return out
