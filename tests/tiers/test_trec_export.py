"""run.trec + qrels.trec read by pytrec_eval reproduce every case's metrics in cases.jsonl, ties included.

Real runs on the fixture corpus (default pipeline with the embedded store and MiniLM, and the BM25 example), a
pure property over random retrievals with tied scores and graded relevance, and the k rules of tier.ks.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st
from omegaconf import DictConfig
from pydantic import ValidationError

from nomad_eval.base.errors import NomadError
from nomad_eval.base.paths import REPO
from nomad_eval.cli.config_check import check_config, ks_rule
from nomad_eval.cli.entry import run_tier
from nomad_eval.core.runs import scores_from_order
from nomad_eval.data.beir import load_beir_goldens
from nomad_eval.data.golden import Golden, goldens_hash
from nomad_eval.examples.keyword_retriever import retrieve
from nomad_eval.rag.pipeline import RetrievedChunk
from nomad_eval.rag.rerank import Candidate, order
from nomad_eval.records import RetrievalCase, encode, values
from nomad_eval.report.exports import trec_qrels, trec_run
from nomad_eval.run.custom_retrieval import CUSTOM_ORDER_WARNING, custom_order_warning, custom_retrieve
from nomad_eval.run.retrieval_cases import case_metrics, check_ks, ranked_documents, retrieved_rows
from tests.conftest import MINI
from tests.written import records


def trec_names(ks: list[int]) -> dict[str, str]:
    """Our per-case name -> pytrec_eval's key."""
    out = {"rprec": "Rprec", "rr": "recip_rank"}
    for k in ks:
        out |= {f"recall@{k}": f"recall_{k}", f"ndcg@{k}": f"ndcg_cut_{k}", f"precision@{k}": f"P_{k}",
                f"map@{k}": f"map_cut_{k}", f"hit@{k}": f"success_{k}"}
    return out


def parse_run(text: str) -> dict[str, dict[str, float]]:
    run: dict[str, dict[str, float]] = {}
    for line in text.splitlines():
        qid, _q0, doc, _rank, score, _tag = line.split()
        assert doc not in run.get(qid, {}), line
        run.setdefault(qid, {})[doc] = float(score)
    return run


def parse_qrels(text: str) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for line in text.splitlines():
        qid, _zero, doc, grade = line.split()
        qrels.setdefault(qid, {})[doc] = int(grade)
    return qrels


def assert_trec_reproduces(cases: list[dict[str, Any]], run_text: str, qrels_text: str, ks: list[int]) -> int:
    """Every answerable case's ranking metrics, exactly as pytrec_eval computes them from the two exports."""
    names = trec_names(ks)
    run, qrels = parse_run(run_text), parse_qrels(qrels_text)
    measures = {f"{m}.{','.join(map(str, ks))}" for m in ("recall", "ndcg_cut", "P", "map_cut", "success")}
    res = pytrec_eval.RelevanceEvaluator(qrels, measures | {"Rprec", "recip_rank"}).evaluate(run)
    checked = 0
    for c in cases:
        if c["expect_refusal"]:
            assert c["id"] not in qrels
            continue
        best: dict[str, float] = {}
        for r in c["retrieved"]:
            best[r["doc_id"]] = max(best.get(r["doc_id"], -math.inf), r["final_score"])
        assert run.get(c["id"], {}) == best  # full precision: every score round-trips exactly
        for ours, theirs in names.items():
            # pytrec_eval leaves out a query with nothing retrieved; every measure of it is then 0.
            expected = res[c["id"]][theirs] if c["id"] in res else 0.0
            assert c["metrics"][ours] == pytest.approx(expected, abs=1e-12), (c["id"], ours)
            checked += 1
    return checked


def tier_run(cfg: DictConfig) -> tuple[dict[str, Any], list[dict[str, Any]], Path]:
    assert run_tier(cfg) == 0
    out = Path(cfg.paths.run_dir)
    cases = [json.loads(x) for x in (out / "cases.jsonl").read_text().splitlines()]
    return json.loads((out / "report.json").read_text()), cases, out


@pytest.mark.parametrize("pipeline", ["default", "custom_example"])
def test_trec_exports_reproduce_case_metrics(make_cfg: Callable[..., DictConfig], pipeline: str) -> None:
    cfg = make_cfg(*MINI, f"pipeline={pipeline}")
    report, cases, out = tier_run(cfg)
    ks = [int(k) for k in cfg.tier.ks]
    assert ks == [1, 3, 5]
    checked = assert_trec_reproduces(cases, (out / "run.trec").read_text(), (out / "qrels.trec").read_text(), ks)
    assert checked == 7 * len(trec_names(ks))  # seven answerable goldens in the mini suite
    assert all(CUSTOM_ORDER_WARNING not in w for w in report["warnings"])
    for c in cases:
        if not c["expect_refusal"]:
            assert c["metrics"]["returned"] == len(c["retrieved"])
            assert c["metrics"]["chunk_precision@5"] * 5 == pytest.approx(
                sum(r["doc_id"] in c["relevant_doc_ids"] for r in c["retrieved"][:5]))


def contradicting(query: str, corpus_dir: str, top_k: int = 5) -> list[dict[str, object]]:
    """BM25's list with scores that rise down the list: the order is what it means, the scores contradict it."""
    return [{**it, "score": float(i)} for i, it in enumerate(retrieve(query, corpus_dir, top_k))]


def test_a_custom_pipeline_whose_scores_contradict_its_order_is_scored_by_order(
        make_cfg: Callable[..., DictConfig]) -> None:
    cfg = make_cfg(*MINI, "pipeline=custom_example",
                   "pipeline._target_=tests.tiers.test_trec_export.contradicting")
    corpus_dir = str(cfg.data.corpus_dir)
    query = "How long should the vinegar mix stand in the Brindle K2 kettle?"
    items = retrieve(query, corpus_dir, 5)
    assert len(items) >= 2
    rescored: list[str] = []
    r = custom_retrieve(lambda q: contradicting(q, corpus_dir), query, {str(it["doc_id"]) for it in items},
                         rescored)
    assert rescored == [query]
    assert [c.doc_id for c in r.chunks] == [it["doc_id"] for it in items]  # the list order is kept ...
    assert [c.final_score for c in r.chunks] == scores_from_order([c.chunk_id for c in r.chunks])  # ... scored by it
    assert ranked_documents(r.chunks) == [it["doc_id"] for it in items]
    warning = custom_order_warning(rescored, 8)
    assert warning is not None and warning.startswith(CUSTOM_ORDER_WARNING) and "1 of 8" in warning
    # BM25 itself breaks ties as trec_eval does, so its scores are kept as they are.
    kept: list[str] = []
    plain = custom_retrieve(lambda q: retrieve(q, corpus_dir, 5), query, {str(it["doc_id"]) for it in items}, kept)
    assert kept == [] and custom_order_warning(kept, 8) is None
    assert [c.final_score for c in plain.chunks] == [it["score"] for it in items]
    # Through the tier: cases carry the order's scores, and run.trec still reproduces them.
    _report, cases, out = tier_run(cfg)
    answerable = [c for c in cases if not c["expect_refusal"] and c["retrieved"]]
    assert answerable and all([r["final_score"] for r in c["retrieved"]]
                              == scores_from_order([r["chunk_id"] for r in c["retrieved"]]) for c in answerable)
    assert assert_trec_reproduces(cases, (out / "run.trec").read_text(), (out / "qrels.trec").read_text(), [1, 3, 5])


def test_bm25_breaks_ties_like_trec_eval(tmp_path: Path) -> None:
    for name in ("a", "b", "c"):  # three identical documents: every query ties them
        (tmp_path / f"{name}.md").write_text("# Lamp\n\nThe lamp oil burns for nine hours.\n")
    assert [it["doc_id"] for it in retrieve("lamp oil", str(tmp_path), 5)] == ["c", "b", "a"]


def _case(golden: Golden, chunks: list[RetrievedChunk], ks: list[int]) -> dict[str, Any]:
    """A case as the tier writes it, with the golden's grades for qrels.trec."""
    return encode(RetrievalCase(id=golden.id, expect_refusal=golden.expect_refusal,
                                relevant_doc_ids=tuple(golden.relevant_doc_ids), grades=golden.grades,
                                retrieved=retrieved_rows(chunks), metrics=values(case_metrics(golden, chunks, ks))))


def _golden(gid: str, grades: dict[str, int]) -> Golden:
    return Golden(id=gid, query="q", turns=[], relevantDocIds=list(grades), mustInclude=[], mustNotInclude=[],
                  expectRefusal=False, tags=[]).with_grades(grades)


def _pipeline_chunks(scored: list[tuple[str, str, float]]) -> list[RetrievedChunk]:
    """(chunk_id, doc_id, score) ordered as the reranker orders them (score desc, chunk id desc)."""
    ranked = order([(Candidate(cid, doc, "", "", s), s) for cid, doc, s in scored])
    return [RetrievedChunk(i, c.chunk_id, c.doc_id, c.score, s) for i, (c, s) in enumerate(ranked, 1)]


def test_first_appearance_and_trec_order_can_disagree_and_the_metrics_follow_trec() -> None:
    # Tied chunks: "a#0" > "a!#0", so the reranker returns document a first; but trec_eval ranks tied documents
    # by id descending and "a!" > "a". The metrics rank documents the trec way, so run.trec agrees with them.
    chunks = _pipeline_chunks([("a#0", "a", 0.5), ("a!#0", "a!", 0.5)])
    assert [c.doc_id for c in chunks] == ["a", "a!"]
    assert ranked_documents(chunks) == ["a!", "a"]
    golden = _golden("q", {"a": 1})
    case = _case(golden, chunks, [1])
    assert case["metrics"]["hit@1"] == 0.0 and case["metrics"]["rr"] == 0.5
    assert_trec_reproduces([case], trec_run(records([case])), trec_qrels(records([case])), [1])


def test_scores_are_exported_in_full_not_rounded_into_ties() -> None:
    # Six decimals would write both as 0.500000, a tie trec_eval breaks by id ("b" first): the wrong order.
    chunks = [RetrievedChunk(1, "a#0", "a", None, 0.5000004), RetrievedChunk(2, "b#0", "b", None, 0.5000001)]
    case = _case(_golden("q", {"a": 1}), chunks, [1])
    assert case["metrics"]["hit@1"] == 1.0
    assert "0.5000004 " in trec_run(records([case]))
    assert_trec_reproduces([case], trec_run(records([case])), trec_qrels(records([case])), [1])


def test_beir_grades_reach_the_golden_and_the_hash_only_when_graded(tmp_path: Path) -> None:
    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps({"_id": d, "text": d}) + "\n" for d in "abc"))
    (tmp_path / "queries.jsonl").write_text(json.dumps({"_id": "q", "text": "which"}) + "\n")
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq\ta\t2\nq\tb\t1\nq\tc\t0\n")
    [golden] = load_beir_goldens(tmp_path, "test", {"a", "b", "c"})
    assert golden.relevant_doc_ids == ["a", "b"] and golden.grades == {"a": 2, "b": 1}
    assert "grades" not in golden.wire()  # never on the wire: the JSONL format is unchanged
    ungraded = golden.model_copy(update={}).with_grades({"a": 1, "b": 1})
    assert goldens_hash([golden]) != goldens_hash([ungraded])
    plain = Golden.model_validate(ungraded.wire())
    assert plain.grades == {"a": 1, "b": 1} and goldens_hash([plain]) == goldens_hash([ungraded])
    with pytest.raises(ValueError, match="grade"):
        plain.with_grades({"a": 0, "b": 1})
    with pytest.raises(ValidationError):  # strict validation is unchanged: grades is not a wire key
        Golden.model_validate(ungraded.wire() | {"grades": {"a": 2}})


DOC_IDS = ["a", "a!", "a-b", "b", "b#", "c1", "c10", "c2"]


@st.composite
def retrievals(draw: st.DrawFn) -> tuple[Golden, list[RetrievedChunk]]:
    grades = draw(st.dictionaries(st.sampled_from(DOC_IDS), st.integers(1, 3), min_size=1, max_size=4))
    chunks = draw(st.lists(st.tuples(st.sampled_from(DOC_IDS), st.integers(0, 3), st.sampled_from([0.2, 0.5, 0.9])),
                           max_size=10, unique_by=lambda t: (t[0], t[1])))
    return _golden("q", grades), _pipeline_chunks([(f"{d}#{i}", d, s) for d, i, s in chunks])


@settings(max_examples=200, deadline=None)
@given(retrievals())
def test_exports_reproduce_metrics_on_random_tied_graded_retrievals(drawn: tuple[Golden, list[RetrievedChunk]]
                                                                   ) -> None:
    golden, chunks = drawn
    case = _case(golden, chunks, [1, 3, 5, 10])
    assert parse_qrels(trec_qrels(records([case])))["q"] == golden.grades  # graded in qrels.trec
    assert_trec_reproduces([case], trec_run(records([case])), trec_qrels(records([case])), [1, 3, 5, 10])


def test_ks_below_one_are_refused_before_any_work(make_cfg: Callable[..., DictConfig],
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    cfg = make_cfg(*MINI, "tier.ks=[0,5]")
    with pytest.raises(SystemExit) as exc:
        run_tier(cfg)
    assert exc.value.code == 2
    assert "tier.ks=[0, 5]" in capsys.readouterr().err
    assert not (Path(cfg.paths.run_dir) / "cases.jsonl").exists()
    with pytest.raises(NomadError, match=r"tier.ks=\[3, -1\]") as err:
        check_ks([3, -1], None)  # the tier's own check, for callers that skip the entrypoint
    assert err.value.exit_code == 2


def test_ks_above_top_k_are_refused_with_the_reason(make_cfg: Callable[..., DictConfig]) -> None:
    with pytest.raises(NomadError) as exc:
        check_config(make_cfg(*MINI, "tier.ks=[1,5,10]"))
    assert exc.value.exit_code == 2
    assert "pipeline.top_k=5" in str(exc.value) and "@10 would equal @5 by construction" in str(exc.value)
    check_config(make_cfg(*MINI, "tier.ks=[1,5,10]", "pipeline.top_k=10"))
    assert ks_rule(make_cfg(*MINI, "tier=generation")) == []  # the rule is the retrieval tier's
    with pytest.raises(NomadError, match="above pipeline.top_k=5"):
        check_ks([1, 10], 5)


# The shipped experiments and this repository's own (its conf/, on the search path before the shipped configs).
@pytest.mark.parametrize("experiment", sorted({p.stem for conf in (REPO / "nomad_eval" / "conf", REPO / "conf")
                                               for p in (conf / "experiment").glob("*.yaml")}))
def test_every_shipped_experiment_has_valid_ks(make_cfg: Callable[..., DictConfig], experiment: str) -> None:
    cfg = make_cfg(f"+experiment={experiment}")
    assert ks_rule(cfg) == []
    # A tier without cutoffs (tier=position) has none to check.
    assert "ks" not in cfg.tier or max(cfg.tier.ks) <= cfg.pipeline.top_k
