"""The collection an app searches, accounted point by point against the corpus (`tier=corpus action=audit`).

Each point is read by its document id and chunk text (payload keys `audit.doc_id_key`, `audit.text_key`) and
counted against the current documents (texts compared with whitespace collapsed, as harness/served.py does):

- `ghost`: the document exists, but the point's text is in no current version of it (an old version's chunk);
- `orphan`: the point's document is not in the corpus (deleted, renamed, or no id at all);
- `missing`: a corpus document no point holds; `partial`: one whose current text the points cover only in part;
- `duplicated`: the same text of the same document stored more than once;
- `drift`: a stratified sample of stored chunks re-embedded with the configured embedder, and a stored vector whose
  cosine with that falls below `audit.min_cosine` (another model, another prefix, a damaged vector).

Every finding is named by document id; a kind is over its limit when more documents have it than `audit.max_<kind>`.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypedDict

import numpy as np

from nomad_eval.backends.base import Payload
from nomad_eval.backends.server import CollectionReader
from nomad_eval.base.errors import NomadError
from nomad_eval.base.locking import data_dir_lock
from nomad_eval.data.corpus import Document
from nomad_eval.harness.runtime import Runtime
from nomad_eval.harness.served import CorpusText, normalized

KINDS = ("ghost", "orphan", "missing", "partial", "duplicated", "drift")
MEANING = MappingProxyType({
    "ghost": "points of a version no longer in the corpus",
    "orphan": "points of documents the corpus does not hold",
    "missing": "documents no point holds",
    "partial": "documents only partly held (share of their text held)",
    "duplicated": "documents with the same chunk stored more than once (extra points)",
    "drift": "documents whose stored vectors are not what the embedder makes of their text (sampled points below "
             "the cosine floor)",
})
NO_ID = "(no id)"


@dataclass(frozen=True)
class ServedPoint:
    point_id: str
    payload: Payload  # as the store holds it
    vector: Any  # a list of floats as the server sends it, or None when not asked for


@dataclass(frozen=True)
class AuditSettings:
    doc_id_key: str
    text_key: str
    sample: int          # stored chunks re-embedded for the drift check
    min_cosine: float
    seed: int
    limits: Mapping[str, int]  # kind -> the most documents that may have it


class AuditSummary(TypedDict):
    points: int
    documents: int
    sampled: int
    sampled_documents: int
    from_cache: int
    lowest_cosine: float | None
    findings: dict[str, dict[str, float]]   # kind -> doc id -> its figure (points, share or cosine)


@dataclass
class Audit:
    points: int = 0
    documents: int = 0
    findings: dict[str, dict[str, float]] = field(default_factory=lambda: {k: {} for k in KINDS})
    sampled: int = 0
    sampled_documents: int = 0  # a drifted document outside the sample is not seen: the line says how many were
    from_cache: int = 0  # stored points compared with the embedding cache's vector of their text: no model call
    lowest_cosine: float | None = None

    def over(self, limits: Mapping[str, int]) -> list[str]:
        """The kinds with more documents than their limit allows."""
        return [k for k in KINDS if len(self.findings[k]) > int(limits.get(k, 0))]

    def summary(self) -> AuditSummary:
        return AuditSummary(points=self.points, documents=self.documents, sampled=self.sampled,
                            sampled_documents=self.sampled_documents, from_cache=self.from_cache,
                            lowest_cosine=self.lowest_cosine, findings=self.findings)


@dataclass
class _Held:
    """What the points hold of one document: spans of its normalised text, and each chunk text's count."""

    spans: list[tuple[int, int]] = field(default_factory=list)
    texts: Counter[str] = field(default_factory=Counter)


def audit(points: Iterable[ServedPoint], documents: list[Document], s: AuditSettings,
          embed: Callable[[list[str]], np.ndarray],
          cached: Callable[[list[str]], list[np.ndarray | None]] = lambda texts: [None] * len(texts)) -> Audit:
    """The collection's points accounted against `documents`. Drift: every point whose text `cached` holds a vector
    for is compared with it (the embedding cache: no model call), and a stratified sample of the rest is re-embedded
    with `embed`, so a warm cache checks every point and a cold one `s.sample` of them."""
    corpus = CorpusText.of(documents)
    out = Audit(documents=len(corpus.docs))
    held: dict[str, _Held] = defaultdict(_Held)
    ghost: Counter[str] = Counter()
    orphan: Counter[str] = Counter()
    drift_pool: dict[str, list[ServedPoint]] = defaultdict(list)
    for p in points:
        out.points += 1
        doc, text = _field(p, s.doc_id_key), _field(p, s.text_key)
        if doc is None or doc not in corpus.docs:
            orphan[doc or NO_ID] += 1
            continue
        t = normalized(text or "")
        if text is not None and p.vector is not None:
            drift_pool[doc].append(p)
        if not t or not corpus.in_document(doc, t):
            ghost[doc] += 1
            continue
        h = held[doc]
        h.texts[hashlib.sha256(t.encode()).hexdigest()] += 1
        h.spans.append((corpus.docs[doc].find(t), len(t)))
    out.findings["ghost"] = dict(sorted(ghost.items()))
    out.findings["orphan"] = dict(sorted(orphan.items()))
    out.findings["duplicated"] = {d: sum(n - 1 for n in h.texts.values()) for d, h in sorted(held.items())
                                  if any(n > 1 for n in h.texts.values())}
    out.findings["missing"] = {d: 0.0 for d in sorted(corpus.docs) if d not in held}
    shares = {d: _covered(corpus.docs[d], h.spans) for d, h in held.items()}
    out.findings["partial"] = {d: round(v, 4) for d, v in sorted(shares.items()) if v < 1.0}
    _drift(out, drift_pool, s, embed, cached)
    return out


def _field(p: ServedPoint, key: str) -> str | None:
    value = p.payload.get(key)
    return None if value is None else str(value)


def _covered(text: str, spans: list[tuple[int, int]]) -> float:
    """The share of the document's non-space characters inside the spans (chunks drop the whitespace between)."""
    total = len(text) - text.count(" ")
    if total == 0:
        return 1.0
    held, end = 0, 0
    for start, length in sorted(spans):
        lo, hi = max(start, end), start + length
        if hi > lo:
            part = text[lo:hi]
            held += len(part) - part.count(" ")
            end = hi
    return held / total


def _stratified(pool: Mapping[str, list[ServedPoint]], size: int, seed: int) -> list[tuple[str, ServedPoint]]:
    """Up to `size` points, taken a document at a time in a seeded order, so every document is sampled before any
    is sampled twice (when there are more documents than `size`, a seeded choice of them)."""
    rng = np.random.default_rng(seed)
    queues = {d: [pool[d][i] for i in rng.permutation(len(pool[d]))] for d in sorted(pool)}
    order = [sorted(pool)[i] for i in rng.permutation(len(pool))]
    picked: list[tuple[str, ServedPoint]] = []
    depth = 0
    while len(picked) < size and any(len(q) > depth for q in queues.values()):
        picked += [(d, queues[d][depth]) for d in order if len(queues[d]) > depth][: size - len(picked)]
        depth += 1
    return picked


def _drift(out: Audit, pool: Mapping[str, list[ServedPoint]], s: AuditSettings,
           embed: Callable[[list[str]], np.ndarray], cached: Callable[[list[str]], list[np.ndarray | None]]) -> None:
    held = [(doc, p) for doc, ps in pool.items() for p in ps]
    if not held:
        return
    known = cached([str(p.payload[s.text_key]) for _, p in held])
    pairs = [(doc, p, v) for (doc, p), v in zip(held, known, strict=True) if v is not None]
    rest: dict[str, list[ServedPoint]] = defaultdict(list)
    for (doc, p), v in zip(held, known, strict=True):
        if v is None:
            rest[doc].append(p)
    sample = _stratified(rest, s.sample, s.seed)
    if sample:
        fresh = np.asarray(embed([str(p.payload[s.text_key]) for _, p in sample]), dtype=np.float64)
        pairs += [(doc, p, f) for (doc, p), f in zip(sample, fresh, strict=True)]
    drifted: Counter[str] = Counter()
    lowest = 1.0
    for doc, p, f in pairs:
        cos = _cosine(np.asarray(p.vector, dtype=np.float64).ravel(), np.asarray(f, dtype=np.float64).ravel())
        lowest = min(lowest, cos)
        if cos < s.min_cosine:
            drifted[doc] += 1
    out.sampled, out.from_cache, out.lowest_cosine = len(sample), len(pairs) - len(sample), round(lowest, 6)
    out.sampled_documents = len({doc for doc, _, _ in pairs})
    out.findings["drift"] = dict(sorted(drifted.items()))


def _cosine(stored: np.ndarray, fresh: np.ndarray) -> float:
    """-1 for a stored vector that cannot be compared (another size, not finite, zero)."""
    if stored.shape != fresh.shape or not np.isfinite(stored).all():
        return -1.0
    norm = float(np.linalg.norm(stored) * np.linalg.norm(fresh))
    return float(stored @ fresh / norm) if norm > 0 else -1.0


@contextmanager
def served_collection(rt: Runtime) -> Iterator[CollectionReader]:
    """The configured server store's collection, open for reading only (a local folder under the data dir's lock)."""
    st = rt.settings.store
    if not str(st.spec.get("_target_", "")).endswith(".ServerStore"):
        raise NomadError("action=audit reads the collection an app searches on a Qdrant server: set store=server "
                         "store.url=<server> store.collection=<its collection>", 2)
    with data_dir_lock(rt.data_dir, st.lock_timeout, rt.settings.quiet) if st.single_process else nullcontext():
        reader = CollectionReader(**{k: v for k, v in st.spec.items() if k != "_target_"})
        try:
            yield reader
        finally:
            reader.close()


def audit_lines(result: Audit, s: AuditSettings) -> list[str]:
    """The audit as console lines: one per kind found, naming each document, and what was checked."""
    lines = [f"audit: {result.points} points against {result.documents} documents; drift: {result.from_cache} "
             f"stored chunks compared with the embedding cache and {result.sampled} re-embedded (audit.sample), "
             f"{result.sampled_documents} documents reached, lowest cosine {result.lowest_cosine} "
             f"(floor {s.min_cosine:g})"]
    for kind in KINDS:
        found = result.findings[kind]
        if found:
            named = ", ".join(d if kind == "missing" else f"{d} ({v:g})" for d, v in found.items())
            limit = int(s.limits.get(kind, 0))
            lines.append(f"{kind}: {len(found)} document(s) (audit.max_{kind}={limit}), {MEANING[kind]}: {named}")
    return lines
