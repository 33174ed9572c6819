"""What the runtime needs from a run's config, typed: the tiers build it once from the composed config
(tiers/settings.py), and nothing below them reads the config itself."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from nomad_eval.rag.chunking import ChunkerParams


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
    embedder: Mapping[str, Any]              # the embedder's `_target_` and arguments
    data: DataSettings
    store: StoreSettings
    distractor_sets: Mapping[str, Any]
    suite: str
    tags: tuple[str, ...]
    limit: int | None
    quiet: bool
    config: Mapping[str, Any]                # the resolved config with secrets redacted, as reports record it
