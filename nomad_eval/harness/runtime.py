"""Builds the run's objects from the composed config: the one place config meets code; and the one hash that names
everything the store's contents depend on (corpus_fingerprint)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, nullcontext
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from hydra.utils import instantiate

from nomad_eval.backends.base import Embedder, Store
from nomad_eval.base.errors import Defect, NomadError
from nomad_eval.base.locking import data_dir_lock
from nomad_eval.base.space import require_room, store_room
from nomad_eval.data.corpus import Document, load_markdown_dirs
from nomad_eval.data.golden import Golden, goldens_hash, load_goldens, select_or_refuse, suite_file
from nomad_eval.rag.chunking import CHUNKER_VERSION, Chunk, ChunkerParams, chunk_corpus

if TYPE_CHECKING:
    from nomad_eval.backends.cache import CachedEmbedder


# What the runtime needs from a run's config, typed: the tiers build it once from the composed config
# (config/settings.py), and nothing below them reads the config itself.
@dataclass(frozen=True)
class DataSettings:
    kind: Literal["markdown", "beir"]
    corpus_dir: Path
    goldens_dir: Path
    extra_corpus_dirs: tuple[Path, ...] = ()  # more folders read into the same corpus (an attack variant's)
    path: Path | None = None                  # beir: the dataset folder
    split: str = "test"                       # beir: the qrels split
    follow_links: bool = False                # markdown: read *.md links that resolve outside their folder


@dataclass(frozen=True)
class StoreSettings:
    spec: Mapping[str, Any]   # the store's `_target_` and its arguments, as instantiate takes them
    single_process: bool      # the engine admits one process per folder: runs take turns under a lock
    lock_timeout: float
    distractors: str | None
    distractor_chunking: str  # "whole": one passage per distractor document; else chunked like the corpus


@dataclass(frozen=True)
class RunSettings:
    data_dir: Path
    pipeline_target: str
    chunker: ChunkerParams
    embedder: Mapping[str, object]           # the embedder's `_target_` and arguments
    data: DataSettings
    store: StoreSettings
    distractor_sets: Mapping[str, object]
    suite: str
    tags: tuple[str, ...]
    limit: int | None
    quiet: bool
    config: Mapping[str, Any]                # the resolved config with secrets redacted, as reports record it
    baseline_doc_ids: frozenset[str] = frozenset()  # documents the project's baselines measured (data/golden.py)


def corpus_fingerprint(
    docs: list[Document], chunker: ChunkerParams | None, embedder_identity: Mapping[str, object] | None,
    extra: dict[str, object] | None = None,
) -> str:
    """The documents, and when the harness chunks and embeds them, every setting that changes a stored vector.

    A user's own pipeline (chunker and embedder None) reads only the documents: its unused embedder's settings
    must not make two identical corpora look different.
    """
    h = hashlib.sha256()
    chunking = None if chunker is None else {**asdict(chunker), "version": CHUNKER_VERSION}
    head = {"chunker": chunking, "embedder": embedder_identity, "extra": extra or {}}
    h.update(json.dumps(head, sort_keys=True).encode())
    for doc in sorted(docs, key=lambda d: d.doc_id):
        # Length-prefixed so no two different corpora can concatenate to the same bytes.
        for part in (doc.doc_id, doc.text):
            raw = part.encode()
            h.update(len(raw).to_bytes(8, "little"))
            h.update(raw)
    return h.hexdigest()[:16]  # the form base/safe_names.FINGERPRINT checks before a fingerprint becomes a path


@dataclass
class Runtime:
    settings: RunSettings
    golden_warnings: list[str] = field(default_factory=list, init=False)  # the suite's non-fatal findings
    # (vectors compared, chunks) when the store was readied: its vectors against the embedding cache's (index.py)
    vector_check: tuple[int, int] | None = field(default=None, init=False)

    @property
    def data_dir(self) -> Path:
        return self.settings.data_dir

    @property
    def chunker(self) -> ChunkerParams:
        return self.settings.chunker

    @cached_property
    def embedder(self) -> Embedder:
        # Constructing an embedder is cheap; its model loads on the first uncached text.
        return instantiate(dict(self.settings.embedder))  # type: ignore[no-any-return]

    @cached_property
    def cached_embedder(self) -> CachedEmbedder:
        from nomad_eval.backends.cache import CachedEmbedder, EmbeddingCache  # numpy: not for a corpus check

        return CachedEmbedder(self.embedder, EmbeddingCache(self.data_dir / "embeddings.sqlite"))

    @cached_property
    def corpus_documents(self) -> list[Document]:
        data = self.settings.data
        if data.kind == "beir" and data.path is not None:
            from nomad_eval.data.beir import load_beir_corpus

            return load_beir_corpus(data.path)
        # `data.extra_corpus_dirs`: more folders read into the same corpus (an attack variant's planted
        # documents); they enter the fingerprint like any document, so each variant is its own store content.
        return load_markdown_dirs([data.corpus_dir, *data.extra_corpus_dirs], follow_links=data.follow_links)

    @cached_property
    def documents(self) -> list[Document]:
        return self.corpus_documents + self.distractors

    @property
    def distractor_name(self) -> str | None:
        return self.settings.store.distractors

    @cached_property
    def distractors(self) -> list[Document]:
        from nomad_eval.data.distractors import distractor_set

        name = self.distractor_name
        return distractor_set(name, self.corpus_documents, self.settings.distractor_sets) if name else []

    @cached_property
    def doc_ids(self) -> set[str]:
        return {d.doc_id for d in self.documents}

    @cached_property
    def chunks(self) -> list[Chunk]:
        own = [d for d in self.documents if not d.distractor]
        # Distractors are chunked like the corpus (as a real mixed store would be), or put in whole,
        # one passage each, the way BEIR corpora are embedded.
        whole = self.settings.store.distractor_chunking == "whole"
        params = ChunkerParams(self.chunker.chunk_size, self.chunker.overlap, whole_document=True) if whole \
            else self.chunker
        return chunk_corpus(own, self.chunker) + chunk_corpus(self.distractors, params)

    @cached_property
    def fingerprint(self) -> str:
        extra: dict[str, object] | None = {"distractors": self.distractor_name,
                 "distractor_chunking": self.settings.store.distractor_chunking} \
            if self.distractor_name else None
        chunker, embedder = (self.chunker, self.embedder.identity()) if self.uses_store else (None, None)
        return corpus_fingerprint(self.documents, chunker, embedder, extra)

    @cached_property
    def uses_store(self) -> bool:
        """True when the pipeline under test is the harness's own (it chunks, embeds and searches the store); a
        user's callable pipeline brings its own retrieval and leaves the chunker and embedder unused."""
        if self.settings.pipeline_target == "nomad_eval.rag.pipeline.Pipeline":
            return True  # the shipped one, known without importing it (numpy): the corpus check prints the fingerprint
        from hydra.utils import get_object

        from nomad_eval.rag.pipeline import Pipeline

        target = get_object(self.settings.pipeline_target)
        return isinstance(target, type) and issubclass(target, Pipeline)

    @property
    def suite_path(self) -> Path:
        """The suite's file; an unknown suite name is refused with the nearest one (exit 2), and so is a link that
        resolves outside the goldens folder (its questions would enter the run's files, which CI uploads), unless
        `data.follow_links`."""
        path = suite_file(self.settings.data.goldens_dir, self.settings.suite)
        if (why := self.outside_link(path)) is not None:
            raise NomadError(f"{path}: {why}", 2)
        return path

    def outside_link(self, path: Path) -> str | None:
        """Why a suite file is refused as a link out of the goldens folder, or None (also with data.follow_links)."""
        data = self.settings.data
        if data.follow_links or path.resolve().is_relative_to(data.goldens_dir.resolve()):
            return None
        return (f"a link to {path.resolve()}, outside the goldens folder {data.goldens_dir}: refused, since its "
                "questions would enter the run's files (data.follow_links=true reads it)")

    @cached_property
    def all_goldens(self) -> list[Golden]:
        data = self.settings.data
        if data.kind == "beir" and data.path is not None:
            from nomad_eval.data.beir import load_beir_goldens

            return load_beir_goldens(data.path, data.split, self.doc_ids)
        found: list[Defect] = []
        # A document id neither the corpus nor a baseline knows is a typo, refused; one a baseline knew is a change.
        goldens = load_goldens(self.suite_path, self.doc_ids, found, known_doc_ids=self.settings.baseline_doc_ids)
        # Printed now, and kept for the report: a warning seen only on a terminal is lost in CI logs.
        from nomad_eval.base.console import err_console

        for w in found:
            err_console.print(str(w), markup=False)
        self.golden_warnings = [str(w) for w in found]
        return goldens

    @cached_property
    def goldens(self) -> list[Golden]:
        s = self.settings
        return select_or_refuse(self.all_goldens, list(s.tags), s.limit, f"suite {s.suite!r}")

    @cached_property
    def goldens_hash(self) -> str:
        return goldens_hash(self.all_goldens)

    @contextmanager
    def store(self) -> Iterator[Store]:
        """The store, opened under a lock on the data dir.

        The embedded engine admits one process per shard; parallel sweep jobs (joblib, submitit) take
        turns here instead of failing, and each holds the store only while it ingests or searches.
        """
        st = self.settings.store
        with data_dir_lock(self.data_dir, st.lock_timeout, self.settings.quiet) if st.single_process \
                else nullcontext():
            if st.spec.get("path"):  # a store folder of its own (the embedded engine's, memory-mapped: base/space)
                where = Path(str(st.spec["path"]))
                require_room(where, store_room(where), "the embedded store")
            store: Store = instantiate(dict(st.spec), dim=self.embedder.dim)
            try:
                yield store
            finally:
                store.close()

    def resolved_config(self) -> dict[str, Any]:
        """The config as a report records it: resolved, with secrets redacted (config/settings.py)."""
        return dict(self.settings.config)
