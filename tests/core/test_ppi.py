"""The prediction-powered judge estimate: equal to ppi-python's on a loopback judge, and its edge cases."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import ppi_py
import pytest
from omegaconf import DictConfig

from nomad_eval.core.ppi import MIN_LABELS, NULL_SCORE, corrected_mean
from nomad_eval.judges.run_judges import judge_cases, judge_chat
from nomad_eval.records import AnswerCase
from tests.conftest import FIXTURES
from tests.servers import openai_compat
from tests.typed_config import judge_settings

PASSAGES = [p.read_text() for p in sorted((FIXTURES / "corpus").glob("*.md"))]


def scripted_judge(verdicts: dict[str, int | None]) -> Callable[[dict[str, Any]], str]:
    """A judge whose verdict is chosen per question; None answers garbage every time (an unparseable verdict)."""

    def answer(body: dict[str, Any]) -> str:
        user = body["messages"][-1]["content"]
        question = re.search(r"<question>\n(.*?)\n</question>", user, re.DOTALL).group(1)  # type: ignore[union-attr]
        v = verdicts[question]
        return "it looks fine to me" if v is None else json.dumps({"verdict": v, "reason": "scripted"})

    return answer


def test_loopback_judge_corrected_estimate_equals_ppi_python(make_cfg: Callable[..., DictConfig]) -> None:
    rng = np.random.default_rng(7)
    n_cases = 40
    questions = [f"question {i}?" for i in range(n_cases)]
    truth = (rng.random(n_cases) < 0.6).astype(int)
    # A judge that passes too much: right on most answers, a false pass on a third of the failing ones, and two
    # questions it never answers parseably.
    verdicts: dict[str, int | None] = {q: int(t or rng.random() < 0.35) for q, t in zip(questions, truth, strict=True)}
    verdicts[questions[3]] = verdicts[questions[11]] = None
    cases = [AnswerCase(id=f"q{i:02d}", mode="e2e", repeat=0, query=q, answer=f"answer {i}", refused=False,
                        expect_refusal=False) for i, q in enumerate(questions)]
    with openai_compat.serve("judge", scripted_judge(verdicts)) as url:
        cfg = make_cfg("judge=faithfulness", "model@judge.model=openai", "judge.model.name=judge",
                       f"judge.model.base_url={url}", "cache=false")
        chat = judge_chat(judge_settings(cfg), None)
        section = judge_cases(judge_settings(cfg), cases, [[PASSAGES[i % len(PASSAGES)]] for i in range(n_cases)], chat)
        chat.model.close()
    assert section["e2e.faithfulness"]["unparseable"] == 2
    scores: dict[str, float | None] = {c.id: c.judges["faithfulness"] for c in cases}
    assert [scores[f"q{i:02d}"] for i in range(n_cases)] == [verdicts[q] for q in questions]  # the judge ran

    labelled = sorted(int(i) for i in rng.choice(n_cases, size=15, replace=False))
    labels = {f"q{i:02d}": float(truth[i]) for i in labelled}
    got = corrected_mean(scores, labels)

    # ppi-python on the same arrays: labelled cases, and the others; a null verdict is the middle of the scale.
    y_hat_all = np.array([NULL_SCORE if verdicts[q] is None else float(verdicts[q] or 0) for q in questions])
    rest = np.array([y_hat_all[i] for i in range(n_cases) if i not in labelled])
    y, y_hat = truth[labelled].astype(float), y_hat_all[labelled]
    low, high = ppi_py.ppi_mean_ci(y, y_hat, rest, alpha=0.05, lam=1)
    point = ppi_py.ppi_mean_pointestimate(y, y_hat, rest, lam=1)
    assert got.status == "corrected" and got.method == "ppi"
    assert got.estimate == pytest.approx(float(np.squeeze(point)), abs=1e-12)
    assert got.low == pytest.approx(float(np.squeeze(low)), abs=1e-12)
    assert got.high == pytest.approx(float(np.squeeze(high)), abs=1e-12)
    assert (got.n, got.N, got.null_verdicts) == (15, 40, 2)
    parsed = [v for v in verdicts.values() if v is not None]
    assert got.judge_mean == pytest.approx(sum(parsed) / len(parsed))


def test_the_adjusted_interval_keeps_the_estimate_and_widens_most_when_disagreements_are_rare() -> None:
    # A 90%-accurate judge that only ever passes failing answers, 50 labels, 2 disagreements among them: the rarely
    # seen one-way error is where ppi-python's normal interval is too narrow (bench/results/ppi.json).
    judge = _judge([1.0] * 900 + [0.0] * 100)
    rare = {f"c{i}": 0.0 if i in (0, 1) else 1.0 for i in range(48)} | {"c950": 0.0, "c951": 0.0}
    r = corrected_mean(judge, rare)
    assert r.disagreements == 2 and r.estimate is not None and r.low is not None and r.high is not None
    assert r.adjusted_low is not None and r.adjusted_high is not None
    # Same centre as ppi-python's; its own interval is kept beside (low, high) and lies inside the adjusted one.
    assert (r.adjusted_low + r.adjusted_high) / 2 == pytest.approx(r.estimate, abs=1e-12)
    assert r.adjusted_low < r.low and r.high < r.adjusted_high
    rare_ratio = (r.adjusted_high - r.adjusted_low) / (r.high - r.low)
    # Many disagreements both ways: the half pseudo-disagreements change almost nothing.
    many = {f"c{i}": float(i % 2) for i in range(50)}
    m = corrected_mean(_judge([float(i % 3 == 0) for i in range(1000)]), many)
    assert m.adjusted_low is not None and m.adjusted_high is not None and m.low is not None and m.high is not None
    many_ratio = (m.adjusted_high - m.adjusted_low) / (m.high - m.low)
    assert 1.0 < many_ratio < 1.02 < 1.1 < rare_ratio


def test_the_adjustment_is_one_step_of_the_scale() -> None:
    # On a 0/1/2 scale the pseudo-disagreements are half as far apart as on pass/fail: a smaller widening.
    judge = _judge([1.0] * 400 + [0.5] * 100)
    labels = {f"c{i}": 1.0 if i else 0.5 for i in range(40)}
    binary, graded = corrected_mean(judge, labels), corrected_mean(judge, labels, step=0.5)
    assert (binary.low, binary.high) == (graded.low, graded.high)
    assert binary.adjusted_high is not None and graded.adjusted_high is not None
    assert binary.adjusted_high > graded.adjusted_high > graded.high
    with pytest.raises(ValueError, match="step"):
        corrected_mean(judge, labels, step=0.0)


def _judge(values: list[float | None]) -> dict[str, float | None]:
    return {f"c{i}": v for i, v in enumerate(values)}


def test_no_labels_means_uncorrected() -> None:
    r = corrected_mean(_judge([1.0, 0.0, 1.0, None]), {})
    assert r.status == "uncorrected" and r.estimate is None and r.low is None
    assert "uncorrected" in r.reason and r.judge_mean == pytest.approx(2 / 3) and r.null_verdicts == 1


def test_too_few_labels_are_refused_with_the_reason() -> None:
    judge = _judge([float(i % 2) for i in range(30)])
    few = {f"c{i}": 1.0 for i in range(MIN_LABELS - 1)}
    r = corrected_mean(judge, few)
    assert r.status == "refused" and r.estimate is None
    assert f"{MIN_LABELS - 1} labelled case(s) of the {MIN_LABELS}" in r.reason
    enough = corrected_mean(judge, {**few, f"c{MIN_LABELS - 1}": 0.0})
    assert enough.status == "corrected" and enough.estimate is not None


def test_a_biased_judge_is_corrected_towards_the_labels() -> None:
    # The judge passes everything; the people fail every answer they label. The estimate must follow the people.
    judge = _judge([1.0] * 100)
    labels = {f"c{i}": 0.0 for i in range(20)}
    r = corrected_mean(judge, labels)
    assert r.judge_mean == 1.0
    assert r.estimate == pytest.approx(0.0, abs=1e-12)


def test_null_verdicts_are_scored_as_the_middle_and_counted() -> None:
    values: list[float | None] = [None if i % 5 == 0 else float(i % 2) for i in range(60)]
    labels = {f"c{i}": float((i // 2) % 2) for i in range(0, 24)}
    r = corrected_mean(_judge(values), labels)
    scored = np.array([NULL_SCORE if v is None else v for v in values])
    y = np.array(list(labels.values()))
    low, high = ppi_py.ppi_mean_ci(y, scored[:24], scored[24:], alpha=0.05, lam=1)
    assert r.null_verdicts == 12
    assert (r.low, r.high) == pytest.approx((float(low[0]), float(high[0])), abs=1e-12)
    parsed = [v for v in values if v is not None]
    assert r.judge_mean == pytest.approx(sum(parsed) / len(parsed))


def test_repeats_are_grouped_by_question() -> None:
    # 12 questions with 2 repeats each; questions 0-9 labelled on one repeat. The unit is the question: a labelled
    # question's rectifier uses its labelled repeat only, an unlabelled question's judge score is its repeats' mean.
    judge = {f"q{q}#{r}": float((q + r) % 2) for q in range(12) for r in range(2)}
    groups = {k: k.split("#")[0] for k in judge}
    labels = {f"q{q}#{q % 2}": 1.0 for q in range(10)}
    r = corrected_mean(judge, labels, groups)
    y = np.ones(10)
    y_hat = np.array([judge[f"q{q}#{q % 2}"] for q in range(10)])
    rest = np.array([0.5, 0.5])  # questions 10 and 11: verdicts 0 and 1 on their two repeats
    low, high = ppi_py.ppi_mean_ci(y, y_hat, rest, alpha=0.05, lam=1)
    assert (r.n, r.N) == (10, 12)
    assert (r.low, r.high) == pytest.approx((float(low[0]), float(high[0])), abs=1e-12)
    assert r.estimate == pytest.approx(0.5 + float(np.mean(y - y_hat)), abs=1e-12)


def test_every_unit_labelled_is_the_classical_interval_of_the_labels() -> None:
    judge = _judge([1.0] * 12)
    labels = {f"c{i}": float(i % 3 == 0) for i in range(12)}
    r = corrected_mean(judge, labels)
    low, high = ppi_py.classical_mean_ci(np.array(list(labels.values())), alpha=0.05)
    assert r.method == "classical" and r.estimate == pytest.approx(4 / 12)
    assert (r.low, r.high) == pytest.approx((float(low), float(high)), abs=1e-12)


def test_power_tuning_is_ppi_pythons_default() -> None:
    rng = np.random.default_rng(3)
    truth = (rng.random(80) < 0.5).astype(float)
    judge_v = np.where(rng.random(80) < 0.7, truth, 1 - truth)
    labels = {f"c{i}": float(truth[i]) for i in range(30)}
    r = corrected_mean(_judge([float(v) for v in judge_v]), labels, power_tuning=True)
    low, high = ppi_py.ppi_mean_ci(truth[:30], judge_v[:30], judge_v[30:], alpha=0.05)
    assert r.method == "ppi++"
    assert (r.low, r.high) == pytest.approx((float(low[0]), float(high[0])), abs=1e-12)


def test_inputs_that_cannot_be_right_are_refused() -> None:
    with pytest.raises(ValueError, match="not judged"):
        corrected_mean(_judge([1.0]), {"elsewhere": 1.0})
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        corrected_mean(_judge([2.0]), {})  # a raw 0/1/2 verdict not divided by the scale's maximum
    with pytest.raises(ValueError, match="no group"):
        corrected_mean(_judge([1.0, 0.0]), {}, {"c0": "q0"})


def test_the_result_is_plain_data(tmp_path: Path) -> None:
    r = corrected_mean(_judge([1.0, 0.0]), {})
    path = tmp_path / "r.json"
    path.write_text(json.dumps(r.as_dict()))
    assert json.loads(path.read_text())["status"] == "uncorrected"
