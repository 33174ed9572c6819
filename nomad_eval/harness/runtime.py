"""Builds the run's objects from the composed config: the one place config meets code."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hydra.utils import instantiate
from omegaconf import DictConfig

from nomad_eval.backends.base import Embedder, Store
from nomad_eval.base.errors import Defect
from nomad_eval.base.locking import data_dir_lock
from nomad_eval.base.shipped import RUNTIME_KEYS, option
from nomad_eval.data.corpus import Document, load_markdown_dirs
from nomad_eval.data.golden import Golden, goldens_hash, load_goldens, select_or_refuse, suite_file
from nomad_eval.harness.config_trees import config_trees
from nomad_eval.harness.fingerprint import corpus_fingerprint
from nomad_eval.rag.chunking import Chunk, ChunkerParams, chunk_corpus

if TYPE_CHECKING:
    from nomad_eval.backends.cache import CachedEmbedder


@dataclass
class Runtime:
    cfg: DictConfig
    golden_warnings: list[str] = field(default_factory=list, init=False)  # the suite's non-fatal findings

    @property
    def data_dir(self) -> Path:
        return Path(self.cfg.paths.data_dir)

    @cached_property
    def chunker(self) -> ChunkerParams:
        p = self.cfg.pipeline
        # A user's own pipeline may carry no chunker keys: the shipped default pipeline's then name the chunker
        # (the generation tier still chunks the corpus, for its token probes).
        shipped = option("pipeline", "default")
        keys = ("chunk_size", "chunk_overlap", "whole_document")
        size, overlap, whole = (p[k] if k in p else shipped[k] for k in keys)
        return ChunkerParams(int(size), int(overlap), bool(whole))

    @cached_property
    def embedder(self) -> Embedder:
        # Constructing an embedder is cheap; its model loads on the first uncached text.
        return instantiate(self.cfg.embedder)  # type: ignore[no-any-return]

    @cached_property
    def cached_embedder(self) -> CachedEmbedder:
        from nomad_eval.backends.cache import CachedEmbedder, EmbeddingCache  # numpy: not for a corpus check

        return CachedEmbedder(self.embedder, EmbeddingCache(self.data_dir / "embeddings.sqlite"))

    @cached_property
    def corpus_documents(self) -> list[Document]:
        if self.cfg.data.kind == "beir":
            from nomad_eval.data.beir import load_beir_corpus

            return load_beir_corpus(Path(self.cfg.data.path))
        # `data.extra_corpus_dirs`: more folders read into the same corpus (an attack variant's planted
        # documents); they enter the fingerprint like any document, so each variant is its own store content.
        extra = [Path(str(p)) for p in (self.cfg.data.get("extra_corpus_dirs") or [])]
        return load_markdown_dirs([Path(self.cfg.data.corpus_dir), *extra])

    @cached_property
    def documents(self) -> list[Document]:
        return self.corpus_documents + self.distractors

    @property
    def distractor_name(self) -> str | None:
        d = self.cfg.store.get("distractors")
        return str(d) if d else None

    @cached_property
    def distractors(self) -> list[Document]:
        from nomad_eval.data.distractors import distractor_set

        name = self.distractor_name
        return distractor_set(name, self.corpus_documents, self.cfg.distractor_sets) if name else []

    @cached_property
    def doc_ids(self) -> set[str]:
        return {d.doc_id for d in self.documents}

    @cached_property
    def chunks(self) -> list[Chunk]:
        own = [d for d in self.documents if not d.distractor]
        # Distractors are chunked like the corpus (as a real mixed store would be), or put in whole,
        # one passage each, the way BEIR corpora are embedded.
        whole = str(self.cfg.store.distractor_chunking) == "whole"
        params = ChunkerParams(self.chunker.chunk_size, self.chunker.overlap, whole_document=True) if whole \
            else self.chunker
        return chunk_corpus(own, self.chunker) + chunk_corpus(self.distractors, params)

    @cached_property
    def fingerprint(self) -> str:
        extra: dict[str, object] | None = {"distractors": self.distractor_name,
                 "distractor_chunking": str(self.cfg.store.distractor_chunking)} \
            if self.distractor_name else None
        chunker, embedder = (self.chunker, self.embedder.identity()) if self.uses_store else (None, None)
        return corpus_fingerprint(self.documents, chunker, embedder, extra)

    @cached_property
    def uses_store(self) -> bool:
        """True when the pipeline under test is the harness's own (it chunks, embeds and searches the store); a
        user's callable pipeline brings its own retrieval and leaves the chunker and embedder unused."""
        from hydra.utils import get_object

        from nomad_eval.rag.pipeline import Pipeline

        target = get_object(str(self.cfg.pipeline._target_))
        return isinstance(target, type) and issubclass(target, Pipeline)

    @property
    def suite_path(self) -> Path:
        """The suite's file; an unknown suite name is refused with the nearest one (exit 2)."""
        return suite_file(Path(self.cfg.data.goldens_dir), str(self.cfg.suite))

    @cached_property
    def all_goldens(self) -> list[Golden]:
        if self.cfg.data.kind == "beir":
            from nomad_eval.data.beir import load_beir_goldens

            return load_beir_goldens(Path(self.cfg.data.path), str(self.cfg.data.split), self.doc_ids)
        found: list[Defect] = []
        goldens = load_goldens(self.suite_path, self.doc_ids, found, missing_docs_fatal=False)
        # Printed now, and kept for the report: a warning seen only on a terminal is lost in CI logs.
        from nomad_eval.base.console import err_console

        for w in found:
            err_console.print(str(w), markup=False)
        self.golden_warnings = [str(w) for w in found]
        return goldens

    @cached_property
    def goldens(self) -> list[Golden]:
        tags = [str(t) for t in self.cfg.tags]
        limit = self.cfg.limit
        return select_or_refuse(self.all_goldens, tags, None if limit is None else int(limit),
                                f"suite {self.cfg.suite!r}")

    @cached_property
    def goldens_hash(self) -> str:
        return goldens_hash(self.all_goldens)

    @contextmanager
    def store(self) -> Iterator[Store]:
        """The store, opened under a lock on the data dir.

        The embedded engine admits one process per shard; parallel sweep jobs (joblib, submitit) take
        turns here instead of failing, and each holds the store only while it ingests or searches.
        """
        kwargs = {k: v for k, v in self.cfg.store.items() if k not in RUNTIME_KEYS["store"]}
        # qdrant-client's local mode (store=server with a folder, not an http(s) URL, as store.url) also admits one
        # process per folder: concurrent sweep jobs failed with "already accessed by another instance".
        url = str(self.cfg.store.get("url") or "")
        local = str(self.cfg.store._target_).endswith("EdgeStore") or (
            str(self.cfg.store._target_).endswith("ServerStore") and not url.startswith(("http://", "https://")))
        with data_dir_lock(self.data_dir, float(self.cfg.store.lock_timeout), bool(self.cfg.quiet)) if local \
                else nullcontext():
            store: Store = instantiate(kwargs, dim=self.embedder.dim)
            try:
                yield store
            finally:
                store.close()

    def resolved_config(self) -> dict[str, Any]:
        """The config as a report records it: resolved, with secrets redacted (base/secrets.py), because reports
        and baselines are shared and committed."""
        from nomad_eval.base.secrets import redact

        raw, resolved = config_trees(self.cfg)
        if isinstance(resolved, Exception):
            raise resolved
        return redact(raw, resolved)  # type: ignore[no-any-return]
