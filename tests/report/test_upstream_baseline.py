"""Upstream NOMAD's baseline file (baselines/<fingerprint>/retrieval.json) read by compare, by hand-built fixture."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from nomad_eval.base.errors import NomadError
from nomad_eval.report.baseline import load_baseline
from nomad_eval.report.upstream import is_upstream
from tests.conftest import MINI, run_cli

KS = (1, 3, 5, 10)


def upstream_case(cid: str, relevant: list[str], retrieved: list[str], refusal: bool = False,
                  tags: list[str] | None = None) -> dict[str, Any]:
    """One case as upstream's scoreCase writes it (binary gain, document ranking, keys of {k: v} as strings)."""
    def by_k(fn: Any) -> dict[str, float | None]:
        return {str(k): None if refusal else fn(k) for k in KS}
    rel = set(relevant)
    first = next((i for i, d in enumerate(retrieved) if d in rel), None)
    return {
        "id": cid, "tags": tags or [], "retrievedCount": len(retrieved), "relevantDocIds": relevant,
        "retrievedDocIds": retrieved, "expectRefusal": refusal,
        "recall": by_k(lambda k: len(rel & set(retrieved[:k])) / len(rel)),
        "hitRate": by_k(lambda k: float(bool(rel & set(retrieved[:k])))),
        "precision": by_k(lambda k: len(rel & set(retrieved[:k])) / k),
        # one relevant document in these fixtures: ideal DCG is 1, so nDCG is 1/log2(rank + 1) within k
        "ndcg": by_k(lambda k: 0.0 if first is None or first >= k else 1 / math.log2(first + 2)),
        "reciprocalRank": None if refusal else (0.0 if first is None else 1 / (first + 1)),
        "empty": not retrieved,
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


def test_an_upstream_baseline_loads_with_our_names(tmp_path: Path) -> None:
    path = write(tmp_path, upstream_file(FIXTURE))
    base = load_baseline(path)
    assert is_upstream(base.report) and "upstream NOMAD" in base.promoted_from
    assert base.promoted_at == "2026-01-12T09:30:00.000Z"
    ident = base.report.identity
    assert ident is not None
    assert (ident.fingerprint, ident.top_k, ident.threshold, ident.measures) == (
        "a1b2c3d4e5f60718", 5, 0.3, ["@1", "@3", "@5", "@10"])
    m = base.report.metrics
    assert not {"mrr", "hitRate@5"} & m.keys()
    assert m["hit@5"] == 0.75 and m["rr"] == pytest.approx((1 + 0.5 + 0 + 1) / 4)
    assert m["emptyRateOnAnswerable"] == 0.25 and m["nonEmptyRateOnRefusal"] == 1.0
    assert base.report.metrics_by_tag["numeric"]["hit@1"] == m["hit@1"]
    assert base.report.provenance is not None and base.report.provenance.git_commit.startswith("0123")
    by_id = {c["id"]: c for c in base.cases}
    two = by_id["mini-02"]["metrics"]
    assert (two["hit@1"], two["hit@3"], two["rr"], two["precision@5"], two["returned"]) == (0.0, 1.0, 0.5, 0.2, 2.0)
    assert two["emptyRateOnAnswerable"] == 0.0 and two["nonEmptyRateOnRefusal"] is None
    assert by_id["mini-03"]["metrics"]["emptyRateOnAnswerable"] == 1.0 and by_id["mini-03"]["passed"] is False
    refusal = by_id["mini-06"]
    assert refusal["passed"] is None and refusal["metrics"]["nonEmptyRateOnRefusal"] == 1.0
    assert refusal["metrics"]["emptyRateOnAnswerable"] is None and refusal["metrics"]["recall@5"] is None
    assert by_id["mini-01"]["relevant_doc_ids"] == ["kettle-descaling"] and by_id["mini-01"]["passed"] is True


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
    out = tmp_path / name
    r = run_cli("tier=retrieval", *MINI, f"paths.data_dir={data_dir}", f"paths.run_dir={out}", "quiet=true")
    assert r.returncode == 0, r.stderr
    return out


def _from_run(run: Path, keep: set[str]) -> list[dict[str, Any]]:
    """Upstream cases with the run's own rankings: the same questions, answered the same way."""
    cases = [json.loads(x) for x in (run / "cases.jsonl").read_text().splitlines()]
    out = []
    for c in cases:
        if c["id"] in keep:
            docs = list(dict.fromkeys(r["doc_id"] for r in c["retrieved"]))
            out.append(upstream_case(c["id"], c["relevant_doc_ids"], docs, refusal=c["expect_refusal"]))
    return out


@pytest.mark.slow
def test_compare_accepts_an_upstream_baseline_and_reports_what_differs(tmp_path: Path, data_dir: Path) -> None:
    run = _retrieval_run(tmp_path, data_dir, "run")
    keep = {"mini-01", "mini-02", "mini-03", "mini-04", "mini-05", "mini-06"}
    cases = _from_run(run, keep) + [upstream_case("upstream-only-01", ["rope-storage"], ["rope-storage"])]
    path = write(tmp_path, upstream_file(cases))
    r = run_cli("tier=compare", f"compare.run={run}", f"compare.baseline={path}")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "not comparable" not in r.stdout
    assert "corpus fingerprint a1b2c3d4e5f60718 →" in r.stdout and "DIFFERS" in r.stdout
    assert "threshold 0.3 → 0.25" in r.stdout and "measured cutoffs @1,@3,@5,@10 → @1,@3,@5" in r.stdout
    assert "6 questions in common" in r.stdout
    assert "questions removed (1; no longer in the suite): upstream-only-01" in r.stdout
    assert "questions added (2; scored, not gated): mini-07, mini-08" in r.stdout
    for name in ("recall@5", "ndcg@5", "mrr@5", "nonEmptyRateOnRefusal"):  # gated; the rest only when they moved
        assert name in r.stdout, name

    # Paired per question: the run losing every document against upstream's is a regression (exit 1). Five
    # answerable questions in common: one gated metric, so no Holm correction dilutes the exact test.
    lost = [json.loads(x) for x in (run / "cases.jsonl").read_text().splitlines()]
    for c in lost:
        if not c["expect_refusal"]:
            c["metrics"].update({"recall@5": 0.0})
    (run / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in lost))
    bad = run_cli("tier=compare", f"compare.run={run}", f"compare.baseline={path}", "compare.metrics=[recall@5]")
    assert bad.returncode == 1 and "regression: recall@5" in bad.stdout, bad.stdout

    broken = write(tmp_path, {"meta": {"kind": "retrieval", "corpusFingerprint": "x"}, "cases": []}, "broken.json")
    refused = run_cli("tier=compare", f"compare.run={run}", f"compare.baseline={broken}")
    assert refused.returncode == 2 and str(broken) in refused.stderr and "missing 'metrics'" in refused.stderr
