"""tier=position with the mock ceiling, real MiniLM and the embedded store on the mini fixture corpus."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from omegaconf import DictConfig, OmegaConf

from nomad_eval.base.errors import NomadError
from nomad_eval.base.paths import REPO
from nomad_eval.cli.config_check import check_config
from nomad_eval.cli.entry import run_tier
from nomad_eval.tiers import position_curve
from tests.conftest import MINI
from tests.typed_config import typed

# No cosine cutoff: the five-document fixture then retrieves every other document as a distractor.
POSITION = (*MINI, "tier=position", "model=mock", "repeats=1", "threshold=null")


def run(cfg: DictConfig) -> tuple[dict[str, Any], list[dict[str, Any]], Path]:
    assert run_tier(cfg) == 0
    out = Path(cfg.paths.run_dir)
    return (json.loads((out / "report.json").read_text()),
            [json.loads(x) for x in (out / "cases.jsonl").read_text().splitlines()], out)


def test_mock_is_flat_and_only_the_order_changes(make_cfg: Callable[..., DictConfig]) -> None:
    report, cases, out = run(make_cfg(*POSITION, "repeats=2"))
    curve = report["details"]["curve"]
    assert curve["passages"] == 5 and [p["position"] for p in curve["points"]] == [1, 2, 3, 4, 5]
    # mini-06 expects a refusal; mini-08 has two relevant documents, so only three others are left to distract.
    assert curve["skipped"] == {"expects a refusal": ["mini-06"],
                                "fewer than N-1 distractors retrieved": ["mini-08"]}
    assert curve["questions"] == 6 and all(p["n"] == 6 for p in curve["points"])
    values = {p["correctness"] for p in curve["points"]}
    assert len(values) == 1 and values.pop() > 0.5  # the ceiling extracts from anywhere: the same everywhere
    assert all(p["mock"] == p["correctness"] for p in curve["points"])
    assert curve["delta"] == 0.0 and curve["p_value"] == 1.0
    for p in curve["points"]:
        assert p["low"] < p["correctness"] <= p["high"] and p["method"] == "wilson"
        assert report["metrics"][f"position_{p['position']}.correctness"] == p["correctness"]
        assert report["intervals"][f"position_{p['position']}.correctness"]["n"] == 6
    assert len(cases) == 6 * 5 * 2
    by_q: dict[str, dict[int, list[str]]] = defaultdict(dict)
    for c in cases:
        assert c["dropped_chunks"] == 0 and c["relevant_at"] == c["position"]
        assert c["injected"][c["position"] - 1] == c["relevant_chunk"]
        assert c["relevant_chunk"].split("#")[0] in c["relevant_doc_ids"]
        assert not {i.split("#")[0] for i in c["injected"] if i != c["relevant_chunk"]} & set(c["relevant_doc_ids"])
        by_q[c["id"]][c["position"]] = c["injected"]
    for q, orders in by_q.items():
        assert len({tuple(sorted(o)) for o in orders.values()}) == 1, q  # the same passages at every position
        assert len({tuple(o) for o in orders.values()}) == 5, q          # in five different orders
    assert report["counts"]["skipped: expects a refusal"] == 1
    html = (out / "report.html").read_text()
    assert "chart-position-curve" in html and "mock ceiling" in html
    md = (out / "report.md").read_text()
    assert "| 3 | " in md and "flat: every position has the same correctness" in md


def test_a_budget_that_drops_a_passage_takes_the_question_out(make_cfg: Callable[..., DictConfig]) -> None:
    report, cases, _ = run(make_cfg(*POSITION, "model.num_ctx=700", "tier.positions=[1,5]"))
    curve = report["details"]["curve"]
    assert [p["position"] for p in curve["points"]] == [1, 5]
    dropped = curve["skipped"]["the budget dropped a passage"]
    assert dropped and dropped == sorted({c["id"] for c in cases if c["dropped_chunks"]})
    assert curve["questions"] == 6 - len(dropped)
    assert report["counts"]["skipped: the budget dropped a passage"] == len(dropped)
    assert any("not a clean experiment" in w for w in report["warnings"])
    # Where the budget cut, the relevant passage no longer sits where it was put (or is gone).
    assert any(c["relevant_at"] != c["position"] for c in cases if c["id"] in dropped)


def test_too_few_distractors_and_bad_positions(make_cfg: Callable[..., DictConfig]) -> None:
    report, cases, _ = run(make_cfg(*POSITION, "tier.passages=6"))
    curve = report["details"]["curve"]
    assert curve["questions"] == 0 and cases == []
    assert len(curve["skipped"]["fewer than N-1 distractors retrieved"]) == 7
    assert report["metrics"]["position.worst_minus_best"] is None
    with pytest.raises(NomadError, match=r"tier.positions: positions \[9\] are outside 1..5") as exc:
        position_curve.measure(typed(make_cfg(*POSITION, "tier.positions=[1,9]")), REPO)  # refused before writing
    assert exc.value.exit_code == 2
    with pytest.raises(NomadError, match="tier.passages=0"):
        check_config(make_cfg(*POSITION, "tier.passages=0"))


def test_shipped_sweep_composes(make_cfg: Callable[..., DictConfig]) -> None:
    """Every job this repository's `+experiment=position -m` sweep launches composes and passes the config checks."""
    params = OmegaConf.load(REPO / "conf" / "experiment" / "position.yaml").hydra.sweeper.params
    assert list(params) == ["tier.passages"]
    jobs = str(params["tier.passages"]).split(",")
    assert jobs == ["3", "5", "7"]
    for n in jobs:
        cfg = make_cfg("+experiment=position", "model.threads=1", f"tier.passages={n}")
        check_config(cfg)
        assert cfg.tier.name == "position" and cfg.tier._target_ == "nomad_eval.tiers.position_curve.measure"
        assert cfg.model.name == "smollm2-135m-instruct" and cfg.model.threads == 1
        assert cfg.suite == "core" and cfg.limit >= 10 and cfg.tier.passages == int(n)
