"""The composed config read once into the typed settings the layers below take (harness/runtime.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from nomad_eval.base.shipped import RUNTIME_KEYS, option
from nomad_eval.gate.settings import CompareSettings, GateSettings, configured_floors
from nomad_eval.harness.runtime import DataSettings, RunSettings, Runtime, StoreSettings
from nomad_eval.judges.calibration import JudgeSettings, JudgingRules
from nomad_eval.rag.chunking import ChunkerParams


def config_trees(cfg: DictConfig) -> tuple[Any, Any]:
    """`cfg` as OmegaConf.to_container gives it unresolved, and resolved (the exception instead, when resolving
    fails): the config check and the report both read them."""
    raw = OmegaConf.to_container(cfg, resolve=False)
    try:
        return raw, OmegaConf.to_container(cfg, resolve=True)
    except OmegaConfBaseException as exc:  # OmegaConf wraps a resolver's own failure in one of its errors
        return raw, exc


def _chunker(pipeline: dict[str, Any]) -> ChunkerParams:
    # A user's own pipeline may carry no chunker keys: the shipped default pipeline's then name the chunker
    # (the generation tier still chunks the corpus, for its token probes).
    keys = ("chunk_size", "chunk_overlap", "whole_document")
    shipped = option("pipeline", "default") if any(k not in pipeline for k in keys) else {}
    size, overlap, whole = (pipeline[k] if k in pipeline else shipped[k] for k in keys)
    return ChunkerParams(int(size), int(overlap), bool(whole))


def _store(store: dict[str, Any]) -> StoreSettings:
    spec = {k: v for k, v in store.items() if k not in RUNTIME_KEYS["store"]}
    # `single_process`, from the store's YAML: its engine admits one process per folder, so concurrent sweep
    # jobs take turns under the data dir's lock. Unset, a store is taken as one when its url is not a server's
    # (qdrant-client's local mode holds a folder the same way), and always when it names no url.
    single = store.get("single_process")
    if single is None:
        single = not str(store.get("url") or "").startswith(("http://", "https://"))
    return StoreSettings(spec, bool(single), float(store["lock_timeout"]), store.get("distractors") or None,
                         str(store["distractor_chunking"]))


def _data(data: dict[str, Any]) -> DataSettings:
    path = data.get("path")
    return DataSettings(kind=data["kind"], corpus_dir=Path(str(data["corpus_dir"])),
                        goldens_dir=Path(str(data["goldens_dir"])),
                        extra_corpus_dirs=tuple(Path(str(p)) for p in data.get("extra_corpus_dirs") or []),
                        path=Path(str(path)) if path else None, split=str(data.get("split") or "test"),
                        follow_links=bool(data["follow_links"]))


def run_settings(cfg: DictConfig) -> RunSettings:
    from nomad_eval.base.secrets import redact

    raw, tree = config_trees(cfg)  # resolved once: each resolution parses every interpolation again
    if isinstance(tree, Exception):
        raise tree
    assert isinstance(tree, dict)
    # The config as reports record it: resolved, with secrets redacted, since reports and baselines are shared.
    config: dict[str, Any] = redact(raw, tree)
    c: dict[str, Any] = {str(k): v for k, v in tree.items()}
    limit = c.get("limit")
    return RunSettings(
        data_dir=Path(str(c["paths"]["data_dir"])), pipeline_target=str(c["pipeline"]["_target_"]),
        chunker=_chunker(c["pipeline"]), embedder=c["embedder"], data=_data(c["data"]), store=_store(c["store"]),
        distractor_sets=c["distractor_sets"], suite=str(c["suite"]),
        tags=tuple(str(t) for t in c.get("tags") or []), limit=None if limit is None else int(limit),
        quiet=bool(c.get("quiet")), config=config, baseline_doc_ids=_baseline_docs(c))


def _baseline_docs(c: dict[str, Any]) -> frozenset[str]:
    named = c["compare"]["baseline"]
    return baseline_documents(Path(str(c["paths"]["baselines_dir"])), Path(str(named)) if named else None)


def runtime(cfg: DictConfig) -> Runtime:
    return Runtime(run_settings(cfg))


def judging_rules(judging: DictConfig) -> JudgingRules:
    def opt(key: str) -> float | None:
        v = judging.get(key)
        return None if v is None else float(v)

    return JudgingRules(float(judging.min_agreement), str(judging.gate_on), opt("max_order_flip_rate"),
                        opt("max_verbosity_shift"), opt("min_abstention_faithful"))


def judge_settings(cfg: DictConfig) -> JudgeSettings:
    model = OmegaConf.to_container(cfg.judge.model, resolve=True)
    assert isinstance(model, dict)
    floors = cfg.gate.get("fail_under") or {}
    generator = (cfg.get("model") or {}).get("name")
    return JudgeSettings(
        model={str(k): v for k, v in model.items()}, model_name=str(cfg.judge.model.name),
        rubrics=tuple(str(r) for r in cfg.judge.rubrics), rubrics_dir=Path(str(cfg.judging.rubrics_dir)),
        calibration_dir=Path(str(cfg.judging.calibration_dir)), rules=judging_rules(cfg.judging),
        seed=int(cfg.seed), retries=int(cfg.judging.retries), max_tokens=int(cfg.judging.max_tokens),
        quiet=bool(cfg.quiet), generator=str(generator) if generator else None,
        fail_under={str(k): float(v) for k, v in floors.items()})


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


def compare_settings(cfg: DictConfig) -> CompareSettings:
    named = cfg.compare.get("metrics")
    tolerance = cfg.compare.get("tolerance")
    return CompareSettings(
        metrics=tuple(str(n) for n in named) if named else None, headline_k=int(cfg.compare.headline_k),
        view=str(cfg.compare.get("view")), stale=str(cfg.compare.stale),
        exclude_unstable=bool(cfg.compare.exclude_unstable), strict=bool(cfg.compare.strict),
        tolerance=None if tolerance is None else float(tolerance), cluster=bool(cfg.stats.cluster),
        resamples=int(cfg.stats.resamples), seed=int(cfg.seed), correlation=float(cfg.plan.correlation),
        max_infra=float(cfg.gate.max_infra),
        quarantine_dir=None if cfg.data.kind == "beir" else Path(str(cfg.data.goldens_dir)))


def gate_settings(cfg: DictConfig) -> GateSettings:
    """The gate's settings from the run's config (nomad_eval/gate/settings.py)."""
    named, variant, junit = (cfg.compare.get(k) for k in ("baseline", "variant", "junit"))
    return GateSettings(
        floors=configured_floors(cfg.gate), after_run=bool(cfg.compare.get("after_run")),
        baseline=Path(str(named)) if named else None, variant=str(variant) if variant else None,
        baselines_dir=Path(cfg.paths.baselines_dir), junit=Path(str(junit)) if junit else None,
        compare=compare_settings(cfg))
