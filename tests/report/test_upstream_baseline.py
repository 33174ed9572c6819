"""Upstream NOMAD's baseline file (baselines/<fingerprint>/retrieval.json) read by compare, by hand-built fixture."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from omegaconf import DictConfig

from nomad_eval.base.errors import NomadError
from nomad_eval.base.runfolder import seal
from nomad_eval.cli.entry import run_tier
from nomad_eval.gate.outcome import Verdict
from nomad_eval.gate.verdict import verdict_for
from nomad_eval.records import by_name, decode, encode
from nomad_eval.report.baseline import load_baseline, load_run
from nomad_eval.report.upstream import is_upstream
from tests.conftest import MINI, run_cli, run_in_process
from tests.typed_config import compare_settings

KS = (1, 3, 5, 10)


def upstream_case(cid: str, relevant: list[str], chunks: list[str], refusal: bool = False,
                  tags: list[str] | None = None) -> dict[str, Any]:
    """One case as upstream's scoreCase writes it, worked by hand from its definitions: the first k *chunks*
    (`chunks`: each retrieved chunk's document, in rank order), precision over min(k, chunks returned), binary
    nDCG over distinct documents; keys of {k: v} as strings, as JSON has them."""
    def by_k(fn: Any) -> dict[str, float | None]:
        return {str(k): None if refusal else fn(k) for k in KS}
    rel = set(relevant)
    docs = list(dict.fromkeys(chunks))
    first = next((i for i, d in enumerate(chunks) if d in rel), None)

    def ndcg(k: int) -> float:
        ideal = sum(1 / math.log2(i + 2) for i in range(min(len(rel), k)))
        return sum(1 / math.log2(i + 2) for i, d in enumerate(docs[:k]) if d in rel) / ideal

    return {
        "id": cid, "tags": tags or [], "retrievedCount": len(chunks), "relevantDocIds": relevant,
        "retrievedDocIds": docs, "expectRefusal": refusal,
        "recall": by_k(lambda k: len(rel & set(chunks[:k])) / len(rel)),
        "hitRate": by_k(lambda k: float(bool(rel & set(chunks[:k])))),
        "precision": by_k(lambda k: sum(d in rel for d in chunks[:k]) / len(chunks[:k]) if chunks else 0.0),
        "ndcg": by_k(ndcg),
        "reciprocalRank": None if refusal else (0.0 if first is None else 1 / (first + 1)),
        "empty": not chunks,
    }


def upstream_file(cases: list[dict[str, Any]], **params: Any) -> dict[str, Any]:
    answerable = [c for c in cases if not c["expectRefusal"]]
    refusals = [c for c in cases if c["expectRefusal"]]

    def mean(field: str, k: int) -> float:
        return sum(c[field][str(k)] for c in answerable) / len(answerable)

    metrics: dict[str, float | None] = {}
    for field in ("recall", "hitRate", "precision", "ndcg"):
        metrics |= {f"{field}@{k}": mean(field, k) for k in KS}
    metrics |= {
        "mrr": sum(c["reciprocalRank"] for c in answerable) / len(answerable),
        "emptyRateOnAnswerable": sum(c["empty"] for c in answerable) / len(answerable),
        "nonEmptyRateOnRefusal": sum(not c["empty"] for c in refusals) / len(refusals) if refusals else None,
    }
    return {
        "meta": {"kind": "retrieval", "createdAt": "2026-01-12T09:30:00.000Z", "corpusFingerprint": "a1b2c3d4e5f60718",
                 "gitSha": "0123456789abcdef0123456789abcdef01234567", "gitBranch": "main", "gitDirty": False,
                 "nomadVersion": "1.14.2", "platform": "linux-x64",
                 "params": {"topK": 5, "scoreThreshold": 0.3, "kValues": list(KS), "tag": None} | params},
        "metrics": metrics,
        "byTag": {"numeric": metrics},
        "cases": cases,
    }


FIXTURE = [
    upstream_case("mini-01", ["kettle-descaling"], ["kettle-descaling", "rope-storage"], tags=["numeric"]),
    upstream_case("mini-02", ["lantern-batteries"], ["garden-compost", "lantern-batteries"], tags=["numeric"]),
    upstream_case("mini-03", ["garden-compost"], []),  # the threshold cut a real answer
    upstream_case("mini-06", [], ["bread-starter"], refusal=True),
    upstream_case("upstream-only-01", ["rope-storage"], ["rope-storage"]),
]


def write(tmp_path: Path, data: Any, name: str = "retrieval.json") -> Path:
    p = tmp_path / "a1b2c3d4e5f60718" / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(data if isinstance(data, str) else json.dumps(data))
    return p


def test_an_upstream_baseline_loads_in_the_upstream_view(tmp_path: Path) -> None:
    path = write(tmp_path, upstream_file(FIXTURE))
    base = load_baseline(path)
    assert is_upstream(base.report) and "upstream NOMAD" in base.promoted_from
    assert base.promoted_at == "2026-01-12T09:30:00.000Z"
    ident = base.report.identity
    assert ident is not None
    assert (ident.fingerprint, ident.top_k, ident.threshold, ident.measures) == (
        "a1b2c3d4e5f60718", 5, 0.3, ["@1", "@3", "@5", "@10"])
    m = base.report.metrics
    assert not {"mrr", "hitRate@5", "hit@5", "rr"} & m.keys()  # upstream's numbers never under our names
    assert m["upstream.hitRate@5"] == 0.75 and m["upstream.mrr"] == pytest.approx((1 + 0.5 + 0 + 1) / 4)
    assert m["upstream.emptyRateOnAnswerable"] == 0.25 and m["upstream.nonEmptyRateOnRefusal"] == 1.0
    assert base.report.upstream is not None and base.report.upstream.metrics == m
    assert base.report.metrics_by_tag["numeric"]["upstream.hitRate@1"] == m["upstream.hitRate@1"]
    assert base.report.provenance is not None and base.report.provenance.git_commit.startswith("0123")
    assert base.report.provenance.git_branch == "main"
    real = upstream_file(FIXTURE)  # upstream writes platform as an object
    real["meta"]["platform"] = {"cpuArchitecture": "x64", "osName": "Linux 7.0.0-28-generic", "nodeVersion": "v24"}
    prov = load_baseline(write(tmp_path / "real", real)).report.provenance
    assert prov is not None and prov.platform == {"os": "Linux 7.0.0-28-generic", "cpu_architecture": "x64",
                                                  "node": "v24"}
    by_id = {c.id: c for c in base.cases}
    two = by_name(by_id["mini-02"].metrics)
    assert (two["upstream.hitRate@1"], two["upstream.hitRate@3"], two["upstream.mrr"]) == (0.0, 1.0, 0.5)
    assert two["upstream.precision@5"] == 0.5 and two["upstream.precision@10"] == 0.5  # over the 2 returned
    assert two["upstream.emptyRateOnAnswerable"] == 0.0 and two["upstream.nonEmptyRateOnRefusal"] is None
    assert by_name(by_id["mini-02"].upstream) == two
    assert by_name(by_id["mini-03"].metrics)["upstream.emptyRateOnAnswerable"] == 1.0
    assert by_id["mini-03"].passed is False
    refusal, held = by_id["mini-06"], by_name(by_id["mini-06"].metrics)
    assert refusal.passed is None and held["upstream.nonEmptyRateOnRefusal"] == 1.0
    assert held["upstream.emptyRateOnAnswerable"] is None
    assert held["upstream.recall@5"] is None
    assert by_id["mini-01"].relevant_doc_ids == ("kettle-descaling",) and by_id["mini-01"].passed is True


@pytest.mark.parametrize(("data", "why"), [
    ("{not json", "not JSON"),
    ([1, 2], "not a valid baseline"),
    ({"meta": {"kind": "retrieval", "corpusFingerprint": "x"}, "cases": []}, "missing 'metrics'"),
    ({"meta": {"kind": "retrieval", "corpusFingerprint": "x"}, "metrics": {}}, "missing 'cases'"),
    ({"meta": {"kind": "retrieval", "corpusFingerprint": "x"}, "metrics": {"mrr": "high"}, "cases": []}, "metrics.mrr"),
    ({"meta": {"kind": "retrieval", "corpusFingerprint": "x"}, "metrics": {}, "cases": "all"}, "cases"),
    ({"meta": {"kind": "retrieval", "corpusFingerprint": "x"}, "metrics": {},
      "cases": [{"id": "q", "recall": {"five": 1.0}}]}, "cases.0.recall.five"),
    ({"meta": {"kind": "retrieval"}, "metrics": {}, "cases": []}, "meta.corpusFingerprint"),
    ({"meta": {"kind": "generation", "corpusFingerprint": "x"}, "metrics": {}, "cases": []}, "generation"),
    ({"meta": {"kind": "retrieval", "corpusFingerprint": "x"}, "metrics": {}, "cases": [{"id": "q"}, {"id": "q"}]},
     "more than once"),
])
def test_a_malformed_upstream_baseline_is_not_comparable(tmp_path: Path, data: Any, why: str) -> None:
    path = write(tmp_path, data)
    with pytest.raises(NomadError) as exc:
        load_baseline(path)
    assert exc.value.exit_code == 2 and str(path) in str(exc.value) and why in str(exc.value)


def _retrieval_run(tmp_path: Path, data_dir: Path, name: str) -> Path:
    """The run compared, made in-process: the compare commands are what is under test."""
    out = tmp_path / name
    assert run_in_process("tier=retrieval", *MINI, f"paths.data_dir={data_dir}", f"paths.run_dir={out}",
                          "quiet=true") == 0
    return out


def _from_run(run: Path, keep: set[str]) -> list[dict[str, Any]]:
    """Upstream cases with the run's own chunk rankings: the same questions, answered the same way."""
    cases = [json.loads(x) for x in (run / "cases.jsonl").read_text().splitlines()]
    out = []
    for c in cases:
        if c["id"] in keep:
            chunks = [r["doc_id"] for r in sorted(c["retrieved"], key=lambda r: r["rank"])]
            out.append(upstream_case(c["id"], c["relevant_doc_ids"], chunks, refusal=c["expect_refusal"]))
    return out


KEEP = {"mini-01", "mini-02", "mini-03", "mini-04", "mini-05", "mini-06"}
GATED = ("upstream.recall@5", "upstream.ndcg@5", "upstream.mrr", "upstream.nonEmptyRateOnRefusal")


@pytest.mark.slow
def test_compare_accepts_an_upstream_baseline_and_reports_what_differs(tmp_path: Path, data_dir: Path) -> None:
    run = _retrieval_run(tmp_path, data_dir, "run")
    cases = _from_run(run, KEEP) + [upstream_case("upstream-only-01", ["rope-storage"], ["rope-storage"])]
    path = write(tmp_path, upstream_file(cases))
    r = run_cli("tier=compare", f"compare.run={run}", f"compare.baseline={path}")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "not comparable" not in r.stdout
    assert "corpus fingerprint a1b2c3d4e5f60718 →" in r.stdout and "DIFFERS" in r.stdout
    assert "threshold 0.3 → 0.25" in r.stdout and "measured cutoffs @1,@3,@5,@10 → @1,@3,@5" in r.stdout
    assert "6 questions in common" in r.stdout
    assert "questions removed (1; no longer in the suite): upstream-only-01" in r.stdout
    assert "questions added (2; scored, not gated): mini-07, mini-08" in r.stdout
    for name in GATED:  # gated, in the upstream view; the rest only when they moved
        assert name in r.stdout, name
    assert "recall@5 " not in r.stdout.replace("upstream.recall@5", "")  # not this project's recall@5

    # Paired per question: the run losing every document against upstream's is a regression (exit 1). Five
    # answerable questions in common: one gated metric, so no Holm correction dilutes the exact test.
    lost = [json.loads(x) for x in (run / "cases.jsonl").read_text().splitlines()]
    for c in lost:
        if not c["expect_refusal"]:
            c["upstream"].update({"upstream.recall@5": 0.0})
    (run / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in lost))
    seal(run)  # as a run that lost them would have left it (an edited folder is refused)
    bad = run_cli("tier=compare", f"compare.run={run}", f"compare.baseline={path}",
                  "compare.metrics=[upstream.recall@5]")
    assert bad.returncode == 1 and "regression: upstream.recall@5" in bad.stdout, bad.stdout
    ours = run_cli("tier=compare", f"compare.run={run}", f"compare.baseline={path}", "compare.metrics=[recall@5]")
    assert ours.returncode == 2 and "upstream.<name>" in ours.stderr, ours.stderr

    broken = write(tmp_path, {"meta": {"kind": "retrieval", "corpusFingerprint": "x"}, "cases": []}, "broken.json")
    refused = run_cli("tier=compare", f"compare.run={run}", f"compare.baseline={broken}")
    assert refused.returncode == 2 and str(broken) in refused.stderr and "missing 'metrics'" in refused.stderr


def _verdict(make_cfg: Callable[..., DictConfig], run: Path, base: Path, *overrides: str) -> Verdict:
    report, cases = load_run(run)
    return verdict_for(report, cases, load_baseline(base), compare_settings(make_cfg(*MINI, *overrides)))


def test_identical_rankings_show_no_delta_and_precision_is_upstreams(make_cfg: Callable[..., DictConfig],
                                                                     tmp_path: Path) -> None:
    """Upstream's file holding the run's own chunk rankings: every upstream-view metric is equal per question,
    so no delta anywhere, though this project's precision@k (over k) would differ from upstream's."""
    cfg = make_cfg(*MINI)
    assert run_tier(cfg) == 0
    run = Path(cfg.paths.run_dir)
    path = write(tmp_path, upstream_file(_from_run(run, KEEP)))
    v = _verdict(make_cfg, run, path)
    assert not v.refused and v.common == len(KEEP) and v.outcome == "pass"
    assert {m.name for m in v.metrics if m.gated} == set(GATED)
    assert all(m.name.startswith("upstream.") for m in v.metrics)
    assert [m.name for m in v.metrics if m.delta != 0.0 and m.delta is not None] == []
    precision = next(m for m in v.metrics if m.name == "upstream.precision@5")
    report, _ = load_run(run)
    assert report.upstream is not None and precision.current == precision.baseline
    assert report.metrics["precision@5"] != report.upstream.metrics["upstream.precision@5"]
    md = (run / "report.md").read_text()
    assert "## Upstream view" in md and report.upstream.advice and report.upstream.advice[0] in md
    assert report.upstream.advice[0].startswith(("Clean separation: a threshold between ", "Overlapping: "))


def test_an_upstream_report_is_the_run_side_and_can_be_promoted(make_cfg: Callable[..., DictConfig],
                                                               tmp_path: Path) -> None:
    cfg = make_cfg(*MINI)
    assert run_tier(cfg) == 0
    run = Path(cfg.paths.run_dir)
    upstream = write(tmp_path, upstream_file(FIXTURE), "retrieval-2026-01-12T09-30-00-000Z.json")
    report, cases = load_run(upstream)
    assert is_upstream(report) and cases is not None and len(cases) == len(FIXTURE)
    promoted = make_cfg(*MINI, "tier=promote", f"promote.run={upstream}", f"paths.baselines_dir={tmp_path / 'b'}")
    assert run_tier(promoted) == 0
    filed = tmp_path / "b" / "a1b2c3d4e5f60718" / "retrieval.json"
    base = load_baseline(filed)
    assert is_upstream(base.report) and by_name(base.cases[1].upstream)["upstream.mrr"] == 0.5
    # run side upstream, baseline ours: both in the upstream view, paired on the questions in common
    v = verdict_for(report, cases, load_baseline(run), compare_settings(make_cfg(*MINI)))
    assert not v.refused and v.common == 4, v.refused
    assert any("DIFFERS: the run is upstream NOMAD's" in d for d in v.differences)
    mrr = next(m for m in v.metrics if m.name == "upstream.mrr")
    assert mrr.gated and mrr.n == 3 and mrr.current == pytest.approx((1 + 0.5 + 0) / 3)


def test_a_baseline_without_the_upstream_view_is_not_comparable_with_an_upstream_run(
        make_cfg: Callable[..., DictConfig], tmp_path: Path) -> None:
    upstream = write(tmp_path, upstream_file(FIXTURE), "retrieval-report.json")
    report, cases = load_run(upstream)
    old = load_baseline(upstream)
    old.report = old.report.model_copy(update={"config": {}, "upstream": None, "metrics": {"recall@5": 1.0}})
    old.cases = [decode({k: v for k, v in encode(c).items() if k != "upstream"} | {"metrics": {"recall@5": 1.0}})
                 for c in old.cases]
    with pytest.raises(NomadError) as exc:
        verdict_for(report, cases, old, compare_settings(make_cfg(*MINI)))
    assert exc.value.exit_code == 2 and "no upstream view" in str(exc.value)


def test_plan_reads_an_upstream_baseline_in_the_upstream_view(make_cfg: Callable[..., DictConfig],
                                                              tmp_path: Path) -> None:
    path = write(tmp_path, upstream_file(FIXTURE))
    cfg = make_cfg("tier=plan", f"plan.baseline={path}")
    assert run_tier(cfg) == 0
    rows = json.loads((Path(cfg.paths.run_dir) / "plan.json").read_text())["rows"]
    # one refusal question: too few to plan nonEmptyRateOnRefusal from
    assert [r["metric"] for r in rows] == list(GATED[:3]) and [r["n"] for r in rows] == [4, 4, 4]


def test_compare_view_upstream_puts_two_runs_of_ours_in_the_upstream_view(make_cfg: Callable[..., DictConfig]
                                                                         ) -> None:
    cfg = make_cfg(*MINI)
    assert run_tier(cfg) == 0
    run = Path(cfg.paths.run_dir)
    ours = _verdict(make_cfg, run, run)
    assert {m.name for m in ours.metrics if m.gated} == {"recall@5", "ndcg@5", "mrr@5", "nonEmptyRateOnRefusal"}
    v = _verdict(make_cfg, run, run, "compare.view=upstream")
    assert {m.name for m in v.metrics if m.gated} == set(GATED) and v.outcome == "pass"
    assert "upstream.precision@10" in {m.name for m in v.metrics}  # @10 past top_k, as upstream reports it
    assert not any("DIFFERS" in d for d in v.differences)  # two runs of ours: this project's own differences
