"""Every page type with a `<script>` planted in each field that comes from data: each one reaches the page as
text (or as an attribute value, or inside runs.html's JSON data), and the only script elements are the page's own."""

from __future__ import annotations

import json
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from nomad_eval.metrics.separation import rounded
from nomad_eval.records import AnswerCase, Hit, PositionCase, RetrievalCase, decode
from nomad_eval.report.browser import build_page, questions, run_entry
from nomad_eval.report.details import (
    AttackRate,
    CauseCounts,
    GenerationDetails,
    PositionCurve,
    PositionDetails,
    PositionPoint,
)
from nomad_eval.report.html_sweep import write_sweep_html
from nomad_eval.report.html_writer import generation_page, position_page, retrieval_page
from nomad_eval.report.schema import (
    Gate,
    GateFloor,
    GateMetric,
    Identity,
    MetricInterval,
    Report,
)


def planted(field: str) -> str:
    return f"<script>alert('{field}')</script>"


class Page(HTMLParser):
    """The parsed page: its tags, its text, its attribute values and the contents of its script elements."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.text: list[str] = []
        self.attrs: list[str] = []
        self.scripts: list[str] = []
        self._in_script = False
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs += [v for _, v in attrs if v is not None]
        self._in_script = tag == "script"
        if tag == "script":
            self.scripts.append("")

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts[-1] += data
        else:
            self.text.append(data)


def _check(text: str, fields: list[str], scripts: int, in_data: Callable[[Page], str] = lambda p: "",
           also: tuple[str, ...] = ()) -> None:
    page = Page(text)
    assert page.tags.count("script") == scripts and "img" not in page.tags
    shown = "".join(page.text) + "\n".join(page.attrs) + in_data(page)
    for value in [*map(planted, fields), *also]:
        assert value in shown, value
        assert value not in text, value  # never as markup


def _gate() -> Gate:
    return Gate(verdict="regression", cause=planted("gate.cause"), exit_code=1, baseline=planted("gate.baseline"),
                baseline_reason=planted("gate.baseline_reason"), changes=[planted("gate.changes")],
                questions={"removed": [planted("gate.questions")]},
                floors=[GateFloor(metric="recall@5", floor=0.8, value=0.7, broken=True,
                                  reason=planted("floor.reason"))],
                warnings=[planted("gate.warnings")],
                metrics=[GateMetric(name="recall@5", outcome=planted("gate.outcome"), baseline=0.9, run=0.7,
                                    delta=-0.2, n=8, tolerance=planted("gate.tolerance"))])


def _identity(model: str | None = None) -> Identity:
    return Identity(fingerprint=planted("fingerprint"), goldens_hash=planted("goldens_hash"), suite=planted("suite"),
                    embedder=planted("embedder"), pipeline="p", model=model, distractors=planted("distractors"))


IDENTITY_FIELDS = ["fingerprint", "goldens_hash", "suite", "embedder", "distractors"]


def test_retrieval_page() -> None:
    report = Report(tier="retrieval", identity=_identity(), gate=_gate(), warnings=[planted("warnings")],
                    metrics={"recall@5": 0.7}, intervals={"recall@5": MetricInterval(n=8, low=0.5, high=0.9)},
                    metrics_by_tag={planted("tag chart"): {"recall@5": 0.5}})
    cases = [RetrievalCase(id=planted("id"), tags=(planted("tags"),), relevant_doc_ids=(planted("relevant"),),
                           retrieved=(Hit(rank=1, doc_id=planted("retrieved"), chunk_id="c", score=None,
                                          final_score=0.5),), why=planted("why"), passed=False)]
    scores = {k: {"relevant": rounded([0.6]), "irrelevant": rounded([0.2])} for k in ("raw", "final")}
    text = retrieval_page(report, cases, scores, None)
    _check(text, [*IDENTITY_FIELDS, "id", "tags", "relevant", "retrieved", "why", "warnings", "tag chart",
                  "gate.cause", "gate.baseline", "gate.baseline_reason", "gate.changes", "gate.questions",
                  "floor.reason", "gate.warnings", "gate.outcome", "gate.tolerance"], scripts=1)


def test_generation_page() -> None:
    mode = planted("mode")
    causes = {"precedence": ["retrieval_miss"], "names": {"retrieval_miss": planted("cause name")},
              "by_mode": {mode: {"failed": 1, "questions": 1, "labels": {
                  "retrieval_miss": {"count": 1, "share": 1.0, "low": 0.2, "high": 1.0}}}}}
    report = Report(tier="generation", identity=_identity(planted("model")), warnings=[planted("warnings")],
                    metrics={"e2e.correctness": 0.5}, details=GenerationDetails(
                        causes=CauseCounts.model_validate(causes),
                        attacks=[AttackRate(family=planted("family"), mode=planted("attack mode"), n=2, successes=1,
                                            rate=0.5, low=0.1, high=0.9)],
                        judges={planted("judge"): {"rubric": planted("rubric"), "n": 2, "mean": 0.5,
                                                   "unparseable": 0, "by_rule": 0}},
                        judge_corrected={planted("corrected"): {"judge_mean": 0.5, "status": "none",
                                                                "reason": planted("corrected reason")}}))
    cases = [AnswerCase(id=planted("id"), mode=mode, repeat=0, tags=(planted("tags"),), answer=planted("answer"),
                        why=planted("why"), passed=False, cause="retrieval_miss", cause_evidence=planted("evidence"))]
    text = generation_page(report, cases, None)
    _check(text, ["suite", "model", "mode", "id", "tags", "answer", "why", "evidence", "cause name", "family",
                  "attack mode", "judge", "rubric", "corrected", "corrected reason", "warnings"], scripts=1)


def test_position_page() -> None:
    curve = PositionCurve(passages=2, questions=1, best=1, worst=2, delta=-0.5, test="mcnemar", p_value=0.5,
                          points=[PositionPoint(position=p, n=1, correctness=0.5, low=0.1, high=0.9, method="wilson")
                                  for p in (1, 2)],
                          skipped={planted("skip why"): [planted("skip id")]})
    report = Report(tier="position", identity=_identity(planted("model")), details=PositionDetails(curve=curve),
                    metrics={"position.delta": -0.5}, warnings=[planted("warnings")])
    cases = [PositionCase(id=planted("id"), position=1, relevant_at=1, repeat=0, answer=planted("answer"),
                          why=planted("why"), passed=True)]
    _check(position_page(report, cases), ["suite", "model", "id", "answer", "why", "skip why", "skip id",
                                          "warnings"], scripts=1)


def test_sweep_page(tmp_path: Path) -> None:
    sweep = tmp_path / "<img src=x onerror=alert(1)>"  # a folder name cannot hold the `/` of a closing tag
    sweep.mkdir()
    rows = [{"job": f"1_{planted('job')}", "status": planted("status"), planted("param"): planted("value"),
             "recall@5": 0.5, "error": planted("error")},
            {"job": "2_b", "status": "ok", planted("param"): "b", "recall@5": 0.6}]
    predictors = {"answer": planted("answer metric"), "groups": [{"rows": [
        {"metric": planted("predictor"), "tau": None, "reason": planted("reason"), "n_jobs": 2, "n_questions": 3}]}]}
    write_sweep_html(sweep, rows, [{"model": planted("model"), "e2e": 0.5}], predictors)
    text = (sweep / "report.html").read_text()
    _check(text, ["status", "param", "value", "error", "model", "answer metric",
                  "predictor", "reason"], scripts=1,
           also=(str(sweep),))


def test_runs_page() -> None:
    report: dict[str, Any] = {
        "tier": "retrieval", "status": "failed", "error": planted("error"), "overrides": [planted("override")],
        "identity": {"suite": planted("suite"), "fingerprint": planted("fingerprint"), "model": planted("model")},
        "metrics": {"recall@5": 0.5}, "gate": {"verdict": "regression", "cause": planted("verdict")},
        "provenance": {"created": "2026-01-01T00:00:00+00:00"}}
    case = {"id": planted("question id"), "query": planted("query"), "passed": True,
            "metrics": {"hit@5": 1.0, "recall@5": 1.0},
            "retrieved": [{"rank": 1, "doc_id": planted("doc"), "chunk_id": "c", "score": 0.5, "final_score": 0.5}]}
    entry = run_entry(report, planted("link"), planted("folder"), 0.0)
    entry.questions = questions([decode(case)], "retrieval")
    entry.why_no_questions = planted("why none")

    def data(p: Page) -> str:
        (blob,) = [s for s in p.scripts if s.lstrip().startswith("[")]
        return json.dumps(json.loads(blob), ensure_ascii=False)

    text = build_page([entry, entry], title=planted("title"), note=planted("note"))
    _check(text, ["error", "override", "suite", "fingerprint", "model", "verdict", "folder", "title", "note",
                  "question id", "query", "doc", "why none"], scripts=2, in_data=data)
    assert 'href="%3Cscript%3Ealert%28%27link%27%29%3C/script%3E"' in text  # the link is quoted as a URL


@pytest.mark.parametrize("field", ["id", "answer"])
def test_a_planted_end_of_script_stays_inside_the_data(field: str) -> None:
    """runs.html carries questions as JSON in a script element: a value holding `</script>` cannot end it."""
    case = {"id": "q", "query": "x", "answer": "y", "mode": "e2e", "passed": True, field: "</script><b>bold</b>"}
    report = {"tier": "generation", "status": "ok", "metrics": {}, "identity": {"suite": "s", "fingerprint": "f"}}
    entry = run_entry(report, "", "f", 0.0)
    entry.questions = questions([decode(case)], "generation")
    page = Page(build_page([entry]))
    assert "b" not in page.tags and any("</script><b>bold</b>" in json.dumps(json.loads(s), ensure_ascii=False)
                                        for s in page.scripts if s.lstrip().startswith("["))
