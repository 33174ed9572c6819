"""The typed settings the layers below take (harness/runtime.py, judges/calibration.py, gate/settings.py), built
from the run's config: those layers never see a config."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nomad_eval.base.errors import NomadError
from nomad_eval.base.shipped import RUNTIME_KEYS, option
from nomad_eval.config.groups import Data, Pipeline, Store
from nomad_eval.config.run_config import RunConfig, RunPart, saved_part
from nomad_eval.config.sections import JudgingKeys
from nomad_eval.gate.settings import CompareSettings, GateSettings, configured_floors
from nomad_eval.harness.runtime import DataSettings, RunSettings, Runtime, StoreSettings
from nomad_eval.judges.calibration import JudgeSettings, JudgingRules
from nomad_eval.rag.chunking import ChunkerParams

if TYPE_CHECKING:  # its module loads numpy and scipy, which a corpus check and `--help` never need
    from nomad_eval.report.intervals import Bootstrap


def _chunker(pipeline: Pipeline) -> ChunkerParams:
    # A user's own pipeline may carry no chunker keys: the shipped default pipeline's then name the chunker
    # (the generation tier still chunks the corpus, for its token probes).
    keys = ("chunk_size", "chunk_overlap", "whole_document")
    values: dict[str, Any] = pipeline.spec()
    shipped = option("pipeline", "default") if any(k not in values for k in keys) else {}
    size, overlap, whole = (values[k] if k in values else shipped[k] for k in keys)
    return ChunkerParams(int(size), int(overlap), bool(whole))


def _store(store: Store) -> StoreSettings:
    values: dict[str, Any] = store.spec()
    spec = {k: v for k, v in values.items() if k not in RUNTIME_KEYS["store"]}
    # `single_process`, from the store's YAML: its engine admits one process per folder, so concurrent sweep
    # jobs take turns under the data dir's lock. Unset, a store is taken as one when its url is not a server's
    # (qdrant-client's local mode holds a folder the same way), and always when it names no url.
    single = values.get("single_process")
    if single is None:
        single = not str(values.get("url") or "").startswith(("http://", "https://"))
    return StoreSettings(spec, bool(single), store.lock_timeout, values.get("distractors") or None,
                         str(values["distractor_chunking"]))


def _data(data: Data) -> DataSettings:
    values: dict[str, Any] = data.spec()
    path = values.get("path")
    return DataSettings(kind=data.kind, corpus_dir=Path(str(values["corpus_dir"])), goldens_dir=data.goldens_dir,
                        extra_corpus_dirs=tuple(Path(str(p)) for p in values.get("extra_corpus_dirs") or []),
                        path=Path(str(path)) if path else None, split=str(values.get("split") or "test"),
                        follow_links=bool(values["follow_links"]))


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


def judging_rules(judging: JudgingKeys) -> JudgingRules:
    return JudgingRules(judging.min_agreement, judging.gate_on, judging.max_order_flip_rate,
                        judging.max_verbosity_shift, judging.min_abstention_faithful)


def judge_settings(config: RunConfig) -> JudgeSettings:
    resolved(config)
    j = config.judging
    return JudgeSettings(
        model=config.judge.model.spec(), model_name=config.judge.model.name, rubrics=config.judge.rubrics,
        rubrics_dir=Path(j.rubrics_dir), calibration_dir=Path(j.calibration_dir), rules=judging_rules(j),
        seed=config.seed, retries=j.retries, max_tokens=j.max_tokens, quiet=config.quiet,
        generator=config.model.text("name") or None, fail_under=dict(config.gate.fail_under or {}))


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


def compare_settings(config: RunConfig) -> CompareSettings:
    c = config.compare
    return CompareSettings(
        metrics=tuple(c.metrics) if c.metrics else None, headline_k=c.headline_k, view=c.view, stale=c.stale,
        exclude_unstable=c.exclude_unstable, strict=c.strict, tolerance=c.tolerance, cluster=config.stats.cluster,
        resamples=config.stats.resamples, seed=config.seed, correlation=config.plan.correlation,
        max_infra=config.gate.max_infra,
        quarantine_dir=None if config.data.kind == "beir" else config.data.goldens_dir)


def gate_settings(config: RunConfig) -> GateSettings:
    """The gate's settings from the run's config (nomad_eval/gate/settings.py)."""
    c = config.compare
    return GateSettings(
        floors=configured_floors({"fail_under": config.gate.fail_under}), after_run=c.after_run,
        baseline=Path(c.baseline) if c.baseline else None, variant=c.variant or None,
        baselines_dir=Path(config.paths.baselines_dir), junit=Path(c.junit) if c.junit else None,
        compare=compare_settings(config))
