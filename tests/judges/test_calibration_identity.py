"""A calibration speaks for one rubric version, one judge (backend, model, weights) and one labels file: a gate
finds only a calibration matching all of them, and says why when none does."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from omegaconf import DictConfig

from nomad_eval.base.errors import NomadError
from nomad_eval.base.shipped import build
from nomad_eval.cli.entry import run_tier
from nomad_eval.judges.calibration import (
    filed_name,
    find_calibration,
    gate_rule,
    judge_identity,
    labels_ref,
    status_line,
)
from nomad_eval.judges.judge import load_rubric
from nomad_eval.judges.run_judges import calibration_status, check_judge_gates
from nomad_eval.tiers.calibrate import file_result
from tests.conftest import REPO
from tests.servers import openai_compat
from tests.typed_config import judge_settings, judging_rules

N = 30


def write_labels(path: Path, flip: int | None = None) -> None:
    rows = [{"id": f"ex-{i:02d}", "question": f"question {i}?", "chunks": [f"Passage {i}: soak for {i} hours."],
             "answer": f"answer number {i}", "label": (1 - i % 2) if i == flip else i % 2} for i in range(N)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def scripted(body: dict[str, Any]) -> str:
    """Agrees with the labels on 27 of 30 (0.9): enough for the point rule, not for the interval's lower end."""
    user = body["messages"][-1]["content"]
    i = int(re.search(r"<question>\nquestion (\d+)\?", user).group(1))  # type: ignore[union-attr]
    return json.dumps({"verdict": (i % 2) if i % 10 else 1 - i % 2, "reason": "scripted"})


@pytest.fixture
def filed(tmp_path: Path, make_cfg: Callable[..., DictConfig]) -> Any:
    """A calibration of the loopback judge on a labels file, filed where gates read it; yields (labels, dir, url)."""
    labels, cal_dir = tmp_path / "labels.jsonl", tmp_path / "calibration"
    write_labels(labels)
    with openai_compat.serve("judge", scripted) as url:
        judge = ("judge=faithfulness", "model@judge.model=openai", "judge.model.name=judge",
                 f"judge.model.base_url={url}", f"judging.calibration_dir={cal_dir}")
        assert run_tier(make_cfg("tier=calibrate", *judge, f"calibrate.labels={labels}", "calibrate.repeats=1",
                                 "calibrate.battery_size=0", "stats.resamples=200", "cache=false")) == 0
        file_result(tmp_path / "run", cal_dir)
        yield labels, cal_dir, judge


def gate(make_cfg: Callable[..., DictConfig], judge: tuple[str, ...], *more: str) -> DictConfig:
    return make_cfg(*judge, "gate.fail_under={judge.e2e.faithfulness:0.5}", *more)


def test_a_gate_is_refused_when_the_labels_file_changes(filed: Any, make_cfg: Callable[..., DictConfig]) -> None:
    labels, cal_dir, judge = filed
    [path] = cal_dir.iterdir()
    result = json.loads(path.read_text())
    assert result["labels"]["sha256"] == labels_ref(labels)["sha256"] and result["labels"]["file"] == str(labels)
    assert path.name == filed_name("faithfulness-v2", result["judge"], result["labels"]["sha256"])
    check_judge_gates(judge_settings(gate(make_cfg, judge)))  # calibrated on these labels: the gate stands

    write_labels(labels, flip=3)  # one example relabelled
    with pytest.raises(NomadError) as exc:
        check_judge_gates(judge_settings(gate(make_cfg, judge)))
    assert exc.value.exit_code == 2
    assert f"the labels file {labels} has changed since {path.name} was calibrated on it" in str(exc.value)
    assert "not calibrated" in str(exc.value)

    write_labels(labels)  # the same bytes again: the same hash, the calibration holds again
    check_judge_gates(judge_settings(gate(make_cfg, judge)))
    labels.unlink()
    with pytest.raises(NomadError, match="its labels file .* is gone"):
        check_judge_gates(judge_settings(gate(make_cfg, judge)))


def test_a_gate_finds_only_its_own_judge_and_can_be_stricter(filed: Any,
                                                              make_cfg: Callable[..., DictConfig]) -> None:
    _, _, judge = filed
    rubric = load_rubric(REPO / "nomad_eval" / "conf" / "rubrics", "faithfulness")
    ok = calibration_status(judge_settings(gate(make_cfg, judge)), rubric)
    assert ok["calibrated"] and ok["n"] == N and ok["agreement"]["value"] == pytest.approx(0.9)
    assert status_line(ok).startswith("yes (agreement 0.90 [0.74, 0.97] on 30 labels, coverage 1.00 [0.89, 1.00]")
    other = gate(make_cfg, judge, "judge.model.name=judge-2")
    with pytest.raises(NomadError, match=r"no calibration of faithfulness-v2 for judge openai judge-2 .*calibrated "
                                         r"there: openai judge \(no weights digest\)"):
        check_judge_gates(judge_settings(other))
    # gate_on=lower_bound: 27/30 has a Wilson lower end of 0.74, under 0.85.
    with pytest.raises(NomadError, match=r"the lower end of the 95% interval of agreement 0\.744 on 30 labels"):
        check_judge_gates(judge_settings(gate(make_cfg, judge, "judging.gate_on=lower_bound")))


def test_filing_refuses_a_result_whose_labels_changed(tmp_path: Path, filed: Any) -> None:
    labels, cal_dir, _ = filed
    write_labels(labels, flip=0)
    with pytest.raises(NomadError, match="has changed since the calibration") as exc:
        file_result(tmp_path / "run", cal_dir)
    assert exc.value.exit_code == 2


def _calibration(judge: dict[str, Any], labels: Path, agreement: float = 0.9) -> dict[str, Any]:
    return {"rubric": "faithfulness-v2", "judge": judge, "labels": labels_ref(labels), "n": 40,
            "agreement": {"value": agreement, "low": agreement - 0.1, "high": agreement + 0.05, "n": 40},
            "battery": {"order_flip": {"value": 0.2, "low": 0.1, "high": 0.35, "n": 40},
                        "verbosity_shift": {"value": 0.05, "low": -0.02, "high": 0.12, "n": 40},
                        "abstention_faithful": {"value": 0.75, "low": 0.6, "high": 0.86, "n": 40}}}


def test_weights_are_part_of_a_judges_identity(tmp_path: Path) -> None:
    smollm = judge_identity(build("model", "smollm2").identity())  # no model load: identity hashes the file
    assert smollm["backend"] == "llamacpp" and smollm["file"].endswith(".gguf") and len(smollm["sha256"]) == 64
    labels = tmp_path / "labels.jsonl"
    write_labels(labels)
    cal = _calibration(smollm, labels)
    name = filed_name("faithfulness-v2", smollm, cal["labels"]["sha256"])
    assert smollm["sha256"][:12] in name and cal["labels"]["sha256"][:12] in name
    (tmp_path / name).write_text(json.dumps(cal))
    assert find_calibration(tmp_path, "faithfulness-v2", smollm)[0] is not None
    swapped = {**smollm, "sha256": "0" * 64}  # another GGUF under the same model name
    found, why = find_calibration(tmp_path, "faithfulness-v2", swapped)
    assert found is None and f"sha256 {smollm['sha256'][:12]}" in why and "sha256 000000000000" in why
    assert find_calibration(tmp_path, "relevance-v2", smollm) == (None, f"no calibration of relevance-v2 in {tmp_path}")


@pytest.mark.parametrize(("setting", "passes", "why"), [
    ("judging.max_order_flip_rate=0.25", True, ""),
    ("judging.max_order_flip_rate=0.1", False, "order flip rate 0.200 exceeds judging.max_order_flip_rate=0.1"),
    ("judging.min_abstention_faithful=0.9", False, "abstention judged faithful 0.750 is below"),
    ("judging.max_verbosity_shift=0.1", True, ""),
])
def test_battery_thresholds_gate_only_when_set(tmp_path: Path, make_cfg: Callable[..., DictConfig], setting: str,
                                               passes: bool, why: str) -> None:
    labels = tmp_path / "labels.jsonl"
    write_labels(labels)
    cal = _calibration({"backend": "mock", "model": "mock"}, labels)
    assert gate_rule(cal, judging_rules(make_cfg().judging)) == (True, "")  # defaults: reported, not gated
    ok, reason = gate_rule(cal, judging_rules(make_cfg(setting).judging))
    assert ok is passes and why in reason
    # Under gate_on=lower_bound a threshold reads the interval's worse end: flips 0.35, |shift| 0.12.
    strict = judging_rules(make_cfg(setting, "judging.gate_on=lower_bound").judging)
    assert gate_rule({**cal, "agreement": {**cal["agreement"], "low": 0.86}}, strict)[0] is False


def test_same_family_judge_and_generator_is_a_warning(tmp_path: Path, make_cfg: Callable[..., DictConfig]) -> None:
    rubric = load_rubric(REPO / "nomad_eval" / "conf" / "rubrics", "faithfulness")
    same = calibration_status(judge_settings(make_cfg("model=smollm2", f"judging.calibration_dir={tmp_path}")), rubric)
    assert same["warnings"] == ["judge smollm2-135m-instruct and generator smollm2-135m-instruct are the same model "
                                "family (smollm): a judge tends to prefer its own family's answers"]
    assert "warning: judge smollm2" in status_line(same)
    mock = judge_settings(make_cfg(f"judging.calibration_dir={tmp_path}"))
    assert calibration_status(mock, rubric)["warnings"] == []  # mock


def test_gate_on_is_checked_before_any_work(make_cfg: Callable[..., DictConfig],
                                            capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        run_tier(make_cfg("tier=calibrate", "judging.gate_on=upper", "calibrate.battery_size=-1"))
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "judging.gate_on='upper'" in err and "calibrate.battery_size=-1" in err
