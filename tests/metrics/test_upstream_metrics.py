"""Upstream NOMAD's metrics under their names: emptyRateOnAnswerable, markdownRate, and the name mapping."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from omegaconf import DictConfig

from nomad_eval.base.paths import REPO
from nomad_eval.data.golden import Golden
from nomad_eval.metrics.answer.measures import has_markdown, markdown_features
from nomad_eval.metrics.registry import REGISTRY, spec_for
from nomad_eval.rag.pipeline import RetrievedChunk
from nomad_eval.report.upstream import UPSTREAM_TO_OURS, ours
from nomad_eval.run.generation_cases import CASE_METRICS, score_case
from nomad_eval.run.retrieval_cases import case_metrics, metric_names
from tests.conftest import MINI
from tests.tiers.test_trec_export import assert_trec_reproduces, parse_run, tier_run


def _golden(refusal: bool) -> Golden:
    return Golden(id="g", query="q", turns=[], relevantDocIds=[] if refusal else ["a"], mustInclude=["x"] if not refusal
                  else [], mustNotInclude=[], expectRefusal=refusal, tags=[])


def _chunk(doc: str) -> RetrievedChunk:
    return RetrievedChunk(rank=1, doc_id=doc, chunk_id=f"{doc}#0", text="t", heading="", score=0.9, final_score=0.9)


def test_empty_rate_on_answerable_is_per_case_and_none_on_refusals() -> None:
    spec = REGISTRY["emptyRateOnAnswerable"]
    assert (spec.direction, spec.binary, spec.gated, spec.headline, spec.tier) == ("lower", True, True, False,
                                                                                    "retrieval")
    assert "emptyRateOnAnswerable" in metric_names([1, 5])
    assert case_metrics(_golden(False), [], [1, 5])["emptyRateOnAnswerable"] == 1.0
    assert case_metrics(_golden(False), [_chunk("b")], [1, 5])["emptyRateOnAnswerable"] == 0.0
    refusal = case_metrics(_golden(True), [], [1, 5])
    assert refusal["emptyRateOnAnswerable"] is None and refusal["nonEmptyRateOnRefusal"] == 0.0


@pytest.mark.parametrize("threshold", ["0.25", "0.6"])
def test_every_retrieval_run_reports_empty_rate_and_trec_still_agrees(make_cfg: Callable[..., DictConfig],
                                                                      threshold: str) -> None:
    report, cases, out = tier_run(make_cfg(*MINI, f"threshold={threshold}"))
    assert_trec_reproduces(cases, (out / "run.trec").read_text(), (out / "qrels.trec").read_text(), [1, 3, 5])
    run = parse_run((out / "run.trec").read_text())
    answerable = [c for c in cases if not c["expect_refusal"]]
    for c in answerable:  # pytrec_eval's view: a query with nothing retrieved is absent from run.trec
        assert c["metrics"]["emptyRateOnAnswerable"] == (0.0 if c["id"] in run else 1.0)
    assert all(c["metrics"]["emptyRateOnAnswerable"] is None for c in cases if c["expect_refusal"])
    share = sum(c["id"] not in run for c in answerable) / len(answerable)
    assert report["metrics"]["emptyRateOnAnswerable"] == pytest.approx(share, abs=1e-12)
    assert report["intervals"]["emptyRateOnAnswerable"]["n"] == len(answerable)
    if threshold == "0.6":
        assert share > 0  # a tight threshold cuts real answers, which is what the metric is for


@pytest.mark.parametrize(("answer", "features"), [
    ("## Steps\nBoil the water.", ["heading"]),
    ("You need:\n- a kettle\n- vinegar", ["bullet list"]),
    ("  * indented bullet", ["bullet list"]),
    ("1. Fill the kettle\n2) Boil", ["numbered list"]),
    ("Use **two** cups.", ["bold"]),
    ("Use __two__ cups.", ["bold"]),
    ("Use *two* cups.", ["italics"]),
    ("Use _two_ cups.", ["italics"]),
    ("```\nboil()\n```", ["code"]),
    ("Run `descale` first.", ["code"]),
    ("| step | minutes |\n|---|:---:|\n| soak | 40 |", ["table"]),
    ("See [the manual](https://example.com/k2).", ["link"]),
    ("# Kettle\n**Note**: use 1. cup", ["heading", "bold"]),
])
def test_markdown_features(answer: str, features: list[str]) -> None:
    assert markdown_features(answer) == features and has_markdown(answer)


@pytest.mark.parametrize("answer", [
    "Let the vinegar mix stand for 40 minutes.", "A well-known brand.", "2 * 3 * 4 = 24", "Set snake_case_name.",
    "Room #4 is on the left.", "-5 degrees at night.", "It holds 1.5 litres.", "a*b*c", "Ratio 3:1 - that is all.",
    "", "I don't have information about that.",
])
def test_plain_answers_are_not_markdown(answer: str) -> None:
    assert markdown_features(answer) == [] and not has_markdown(answer)


def test_markdown_rate_is_a_generation_case_metric() -> None:
    spec = REGISTRY["markdownRate"]
    assert (spec.tier, spec.binary, spec.headline, spec.direction) == ("generation", True, False, "higher")
    assert "markdownRate" in CASE_METRICS and spec_for("e2e.markdownRate") is spec
    plain = score_case(_golden(False), "The answer is x.", "ctx", 0, 0, 10, None)
    formatted = score_case(_golden(False), "- The answer is **x**.", "ctx", 0, 0, 10, None)
    assert plain["metrics"]["markdownRate"] == 0.0 and formatted["metrics"]["markdownRate"] == 1.0
    assert formatted["passed"] is True  # formatting is measured, never a failure of correctness


def test_every_upstream_name_maps_to_a_registered_measure_and_the_readme_mirrors_the_table() -> None:
    assert ours("hitRate@5") == "hit@5" and ours("mrr") == "rr" and ours("precision@3") == "precision@3"
    assert ours("meanPromptTokens") is None
    readme = (REPO / "docs" / "upstream-nomad.md").read_text()
    for upstream, mine in UPSTREAM_TO_OURS.items():
        assert REGISTRY.get(mine) is not None, mine
        k = "@k" if REGISTRY[mine].parametrized else ""
        row = re.compile(rf"^\| `{re.escape(upstream + k)}` \| `{re.escape(mine + k)}` \|", re.MULTILINE)
        assert row.search(readme), f"docs/upstream-nomad.md mapping table lacks {upstream}{k} -> {mine}{k}"


def test_a_generation_run_reports_upstreams_correctness_over_every_golden(make_cfg: Callable[..., DictConfig]
                                                                          ) -> None:
    """noretrieval with the mock: nothing injected, so every answer is a refusal. Upstream counts each refusal
    golden (no patterns) correct and every answerable one wrong; this project's correctness is over answerable
    goldens only."""
    from nomad_eval.cli.entry import run_tier
    from nomad_eval.report.io import read_report

    cfg = make_cfg(*MINI, "tier=generation", "model=mock", "mode=noretrieval", "repeats=1")
    assert run_tier(cfg) == 0
    out = Path(cfg.paths.run_dir)
    report = read_report(out / "report.json")
    cases = [json.loads(x) for x in (out / "cases.jsonl").read_text().splitlines()]
    refusals = sum(c["expect_refusal"] for c in cases)
    assert 0 < refusals < len(cases) and all(c["refused"] for c in cases)
    assert report.upstream is not None
    up = report.upstream.metrics
    assert up["upstream.noretrieval.correctness"] == refusals / len(cases)
    assert up["upstream.noretrieval.refusalCorrectness"] == refusals / len(cases)
    assert report.metrics["noretrieval.correctness"] == 0.0  # ours: answerable goldens only
    assert report.upstream.intervals["upstream.noretrieval.correctness"].n == len(cases)
    assert "upstream.noretrieval.correctness" not in report.metrics  # kept apart
