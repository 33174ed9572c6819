"""The retrieval tier on the fixture corpus with the real store and MiniLM; sweeps through the real CLI."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from omegaconf import DictConfig

from nomad_eval.base.shipped import build
from nomad_eval.cli.entry import run_tier
from nomad_eval.harness.search import LeakError, StoreSearcher
from tests.conftest import MINI, run_cli
from tests.tiers.trec_check import trec_metrics
from tests.typed_config import runtime


def run(cfg: DictConfig) -> dict:  # type: ignore[type-arg]
    assert run_tier(cfg) == 0
    return json.loads((Path(cfg.paths.run_dir) / "report.json").read_text())


def test_report_matches_pytrec_eval_and_cases(make_cfg: Callable[..., DictConfig], tmp_path: Path) -> None:
    cfg = make_cfg(*MINI, "ablate=true")
    report = run(cfg)
    out = Path(cfg.paths.run_dir)
    for name, value in trec_metrics(out).items():
        assert report["metrics"][name] == pytest.approx(value, abs=1e-6), name
    cases = [json.loads(x) for x in (out / "cases.jsonl").read_text().splitlines()]
    assert [c["id"] for c in cases] == [f"mini-0{i}" for i in range(1, 9)]
    for c in cases:
        scores = [r["final_score"] for r in c["retrieved"]]
        assert scores == sorted(scores, reverse=True) and len(scores) <= 5
        assert [r["rank"] for r in c["retrieved"]] == list(range(1, len(scores) + 1))
    refusal = [c for c in cases if c["expect_refusal"]]
    assert refusal and all(v is None for k, v in refusal[0]["metrics"].items() if k != "nonEmptyRateOnRefusal")
    assert report["metrics"]["nonEmptyRateOnRefusal"] == refusal[0]["metrics"]["nonEmptyRateOnRefusal"]
    # The ablation's full pipeline (its queries embedded in one batch) scores what the run itself scored.
    on = report["details"]["ablation"]["glossary on"]
    assert on and all(v == pytest.approx(report["metrics"][k], abs=1e-9) for k, v in on.items())
    assert report["counts"] == report["counts"] | {"goldens": 8, "answerable": 7, "refusal": 1}
    ident = report["identity"]
    assert ident["suite"] == "mini" and ident["top_k"] == 5 and len(ident["fingerprint"]) == 16
    assert {r["flag"] for r in report["details"]["separation"]} == {"threshold", "pipeline.min_final_score"}
    assert set(report["details"]["ablation"]) == {"raw cosine", "+ boosts", "+ same-doc penalty", "glossary off",
                                                  "glossary on"}
    assert report["details"]["ablation"]["+ same-doc penalty"] == report["details"]["ablation"]["glossary on"]
    assert "multi-hop" in report["metrics_by_tag"]
    assert "## Score separation" in (out / "report.md").read_text()


def test_two_runs_identical_and_warm_run_loads_no_model(make_cfg: Callable[..., DictConfig]) -> None:
    first = run(make_cfg(*MINI))
    second = run(make_cfg(*MINI))
    assert first["metrics"] == second["metrics"]
    assert second["counts"]["embedding_model_calls"] == 0


@pytest.mark.slow
def test_distractors_compete_and_are_named(make_cfg: Callable[..., DictConfig], tmp_path: Path) -> None:
    plain = run(make_cfg(*MINI))
    cfg = make_cfg(*MINI, "store.distractors=revisions", f"paths.run_dir={tmp_path / 'hard'}")
    hard = run(cfg)
    assert hard["identity"]["distractors"] == "revisions" and plain["identity"]["distractors"] is None
    assert hard["identity"]["fingerprint"] != plain["identity"]["fingerprint"]
    assert hard["counts"]["documents"] == 4 * plain["counts"]["documents"]  # three drafts of each
    cases = [json.loads(x) for x in (tmp_path / "hard" / "cases.jsonl").read_text().splitlines()]
    drafts = [r for c in cases for r in c["retrieved"] if r["doc_id"].startswith("revisions:")]
    assert drafts  # the drafts do reach the top 5 ...
    assert all(r["doc_id"] not in c["relevant_doc_ids"] for c in cases for r in c["retrieved"]
               if r["doc_id"].startswith("revisions:"))  # ... and never count as relevant
    assert hard["metrics"]["mrr@5"] < plain["metrics"]["mrr@5"]
    with runtime(cfg).store() as store:
        assert store.count(hard["identity"]["fingerprint"]) == hard["counts"]["chunks"]


def test_subset_by_tags_and_limit_is_part_of_identity(make_cfg: Callable[..., DictConfig]) -> None:
    r = run(make_cfg(*MINI, "tags=[numeric]", "limit=2"))
    assert r["counts"]["goldens"] == 2 and r["identity"]["tags"] == ["numeric"] and r["identity"]["limit"] == 2


def test_threshold_cuts_inside_the_search(make_cfg: Callable[..., DictConfig]) -> None:
    r = run(make_cfg(*MINI, "threshold=0.99"))
    assert r["metrics"]["recall@5"] == 0.0 and r["metrics"]["nonEmptyRateOnRefusal"] == 0.0


def test_leak_guard_names_the_foreign_source(make_cfg: Callable[..., DictConfig], data_dir: Path) -> None:
    """A point under the eval tag that is no chunk of the corpus (another writer, a stale tool) stops the run."""
    cfg = make_cfg(*MINI)
    rt = runtime(cfg)
    assert run_tier(cfg) == 0  # ingests
    store = build("store", "edge", path=str(data_dir / "qdrant-edge"), dim=384)
    vec = rt.cached_embedder.embed_queries(["How many AA cells does the Osprey L9 lantern take?"])[0]
    qe = store._qe
    payload = {"collection": "__nomad_eval__", "fingerprint": rt.fingerprint, "doc_id": "secret-notes",
               "chunk_id": "secret-notes#0", "path": "/home/user/secret-notes.md", "text": "x", "heading": ""}
    store._shard.update(qe.UpdateOperation.upsert_points([qe.Point(str(uuid.uuid4()), vec, payload)]))
    searcher = StoreSearcher(rt.cached_embedder, store, None, rt.doc_ids, rt.fingerprint)
    with pytest.raises(LeakError, match="/home/user/secret-notes.md"):
        searcher.search(vec, 5)
    store.close()


def leaky_retriever(query: str, **_: object) -> list[dict[str, object]]:
    return [{"doc_id": "not-in-corpus", "chunk_id": "x#0", "score": 1.0}]


def test_leak_guard_exits_1_for_a_custom_pipeline(make_cfg: Callable[..., DictConfig]) -> None:
    cfg = make_cfg(*MINI, "pipeline=custom_example",
                   "pipeline._target_=tests.tiers.test_retrieval_tier.leaky_retriever")
    with pytest.raises(SystemExit) as exc:
        run_tier(cfg)
    assert exc.value.code == 1


def scoreless_retriever(query: str, **_: object) -> list[dict[str, object]]:
    return [{"doc_id": "kettle-descaling", "chunk_id": "k#0", "score": "high"}]


def test_a_custom_pipeline_without_numeric_scores_is_named(make_cfg: Callable[..., DictConfig],
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    cfg = make_cfg(*MINI, "pipeline=custom_example",
                   "pipeline._target_=tests.tiers.test_retrieval_tier.scoreless_retriever")
    with pytest.raises(SystemExit) as exc:
        run_tier(cfg)
    assert exc.value.code == 2  # the pipeline's contract (its input to the gate) is wrong, not a verdict
    err = capsys.readouterr().err
    assert "item 1" in err and "score 'high'" in err


def my_retriever(query: str, **_: object) -> list[dict[str, object]]:
    """A user's own pipeline: always answers the kettle document first."""
    return [{"doc_id": "kettle-descaling", "chunk_id": "k#0", "score": 0.9},
            {"doc_id": "rope-storage", "chunk_id": "r#0", "score": 0.5}]


def test_custom_pipeline_callable_is_scored(make_cfg: Callable[..., DictConfig]) -> None:
    r = run(make_cfg(*MINI, "pipeline=custom_example",
                     "pipeline._target_=tests.tiers.test_retrieval_tier.my_retriever"))
    assert r["metrics_by_tag"]["kettle"]["hit@1"] == 1.0
    assert r["identity"]["pipeline"] == "tests.tiers.test_retrieval_tier.my_retriever"


def test_the_shipped_example_pipeline_runs_on_any_corpus(make_cfg: Callable[..., DictConfig]) -> None:
    r = run(make_cfg(*MINI, "pipeline=custom_example"))
    assert r["identity"]["pipeline"] == "nomad_eval.examples.keyword_retriever.retrieve"
    assert r["metrics"]["hit@5"] is not None and r["metrics"]["hit@5"] > 0.5  # BM25 finds the fixture answers


@pytest.mark.slow
def test_sweep_writes_one_dir_per_config_without_collisions(tmp_path: Path, data_dir: Path) -> None:
    sweep = tmp_path / "sweep"
    r = run_cli("tier=retrieval", "threshold=0.3,0.5,0.6", "+note=nomic-embed-text:v1.5/x", *MINI,
                f"paths.data_dir={data_dir}", "quiet=true", f"hydra.sweep.dir={sweep}",
                "hydra.job.config.override_dirname.exclude_keys=[threshold]", "-m")
    assert r.returncode == 0, r.stderr
    jobs = sorted(p for p in sweep.iterdir() if p.is_dir() and (p / "report.json").exists())
    assert len(jobs) == 3, [p.name for p in sweep.iterdir()]
    assert all(":" not in p.name and p.name[0].isdigit() for p in jobs)
    thresholds = sorted(json.loads((p / "report.json").read_text())["identity"]["threshold"] for p in jobs)
    assert thresholds == [0.3, 0.5, 0.6]


@pytest.mark.slow
def test_core_suite_matches_pytrec_eval(make_cfg: Callable[..., DictConfig]) -> None:
    """The shipped corpus and core suite, scored by us and recomputed independently from cases.jsonl."""
    cfg = make_cfg("suite=core")
    report = run(cfg)
    assert report["counts"]["goldens"] >= 100 and report["counts"]["refusal"] >= 5
    for name, value in trec_metrics(Path(cfg.paths.run_dir)).items():
        assert report["metrics"][name] == pytest.approx(value, abs=1e-6), name
