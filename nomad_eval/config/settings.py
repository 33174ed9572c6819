"""The typed settings the layers below take, built from the run's config: those layers never see a config. Here
the run's data, store and chunker (harness/runtime.py) and its bootstrap; the judges' in config/judging.py, the
gate's in config/gating.py, so a retrieval run imports neither the judges nor the gate."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import JsonValue

from nomad_eval.base.errors import NomadError
from nomad_eval.base.shipped import RUNTIME_KEYS, option
from nomad_eval.config.groups import Data, Pipeline, Store
from nomad_eval.config.run_config import RunConfig, RunPart, saved_part
from nomad_eval.harness.runtime import DataSettings, RunSettings, Runtime, StoreSettings
from nomad_eval.rag.chunking import ChunkerParams

if TYPE_CHECKING:  # its module loads numpy and scipy, which a corpus check and `--help` never need
    from nomad_eval.report.intervals import Bootstrap


def _chunker(pipeline: Pipeline) -> ChunkerParams:
    # A user's own pipeline may carry no chunker keys: the shipped default pipeline's then name the chunker
    # (the generation tier still chunks the corpus, for its token probes).
    keys = ("chunk_size", "chunk_overlap", "whole_document")
    values = pipeline.spec()
    shipped = option("pipeline", "default") if any(k not in values for k in keys) else {}
    return ChunkerParams.of({k: values[k] if k in values else shipped[k] for k in keys})


def _store(store: Store) -> StoreSettings:
    values = store.spec()
    spec = {k: v for k, v in values.items() if k not in RUNTIME_KEYS["store"]}
    # `single_process`, from the store's YAML: its engine admits one process per folder, so concurrent sweep
    # jobs take turns under the data dir's lock. Unset, a store is taken as one when its url is not a server's
    # (qdrant-client's local mode holds a folder the same way), and always when it names no url.
    single = values.get("single_process")
    if single is None:
        single = not str(values.get("url") or "").startswith(("http://", "https://"))
    distractors = values.get("distractors")
    return StoreSettings(spec, bool(single), store.lock_timeout, str(distractors) if distractors else None,
                         str(values["distractor_chunking"]))


def _data(data: Data) -> DataSettings:
    values = data.spec()
    path = values.get("path")
    return DataSettings(kind=data.kind, corpus_dir=Path(str(values["corpus_dir"])), goldens_dir=data.goldens_dir,
                        extra_corpus_dirs=tuple(Path(str(p)) for p in _listed(values.get("extra_corpus_dirs"))),
                        path=Path(str(path)) if path else None, split=str(values.get("split") or "test"),
                        follow_links=bool(values["follow_links"]))


def _listed(v: JsonValue) -> list[JsonValue] | list[str]:
    """The items of a setting that holds a list (unset or empty: none), as iterating the value gives them."""
    if not v:
        return []
    if isinstance(v, list | dict | str):
        return list(v)
    raise TypeError(f"'{type(v).__name__}' object is not iterable")


def run_settings(config: RunConfig | RunPart, recorded: Mapping[str, Any] | None = None) -> RunSettings:
    """`recorded`: the config as the report records it; the run's own (RunConfig.recorded) when None."""
    named = config.compare.baseline
    if recorded is None:
        assert isinstance(config, RunConfig)
        resolved(config)
        recorded = config.recorded
    return RunSettings(
        data_dir=Path(config.paths.data_dir), pipeline_target=config.pipeline.target,
        chunker=_chunker(config.pipeline), embedder=config.embedder.spec(), data=_data(config.data),
        store=_store(config.store), distractor_sets=dict(config.distractor_sets), suite=config.suite,
        tags=tuple(config.tags), limit=config.limit, quiet=config.quiet, config=recorded,
        baseline_doc_ids=baseline_documents(Path(config.paths.baselines_dir), Path(named) if named else None))


def resolved(config: RunConfig) -> None:
    """Refuse (exit 2) a config with a value that could not be resolved, for a tier that reads the whole of it."""
    if config.unresolved:
        key, why = next(iter(config.unresolved.items()))
        raise NomadError(f"{key} cannot be resolved: {why}", 2)


def runtime(config: RunConfig) -> Runtime:
    return Runtime(run_settings(config))


def saved_runtime(saved: Mapping[str, Any]) -> Runtime:
    """The runtime a saved report's config describes (its corpus, store and suite as that run read them)."""
    return Runtime(run_settings(saved_part(saved), saved))


def bootstrap(config: RunConfig) -> Bootstrap:
    from nomad_eval.report.intervals import Bootstrap

    return Bootstrap(cluster=config.stats.cluster, seed=config.seed, resamples=config.stats.resamples)


def baseline_documents(root: Path, named: Path | None = None) -> frozenset[str]:
    """The document ids the baselines under `root` (and a baseline named by compare.baseline) measured: a golden
    naming one the corpus lost names a change, not a typo. Read leniently: an unreadable file adds nothing, and is
    reported by the compare that reads it. Plain JSON, not the report model: the corpus check stays light."""
    found: set[str] = set()
    paths = [*sorted(root.glob("*/*.json")), *([named] if named is not None and named.is_file() else [])]
    for path in paths:
        try:
            raw = json.loads(path.read_bytes())
        except (OSError, ValueError, RecursionError):
            continue
        report = raw.get("report") if isinstance(raw, dict) else None
        subject = report.get("subject") if isinstance(report, dict) else None
        docs = subject.get("documents") if isinstance(subject, dict) else None
        if isinstance(docs, dict):
            found.update(str(d) for d in docs)
    return frozenset(found)
