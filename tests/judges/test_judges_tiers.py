"""Judges, calibration and judge gates through the real entrypoint, with judge models on loopback."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from sklearn.metrics import cohen_kappa_score

from tests.conftest import FIXTURES, MINI, run_cli, run_in_process
from tests.servers import openai_compat

pytestmark = pytest.mark.slow  # every test runs the tool in subprocesses, one with the real SmolLM2 as judge

CHUNKS = {p.stem: p.read_text() for p in (FIXTURES / "corpus").glob("*.md")}


def labels_file(tmp_path: Path, n: int = 30, miss_every: int = 7) -> tuple[Path, dict[str, int]]:
    """n labelled examples; the known judge agrees on all but every `miss_every`-th."""
    rows, verdicts = [], {}
    docs = sorted(CHUNKS)
    for i in range(n):
        label = i % 2
        answer = f"answer number {i}"
        rows.append({"id": f"ex-{i:02d}", "question": f"question {i}?", "chunks": [CHUNKS[docs[i % len(docs)]]],
                     "answer": answer, "label": label})
        verdicts[answer] = label if i % miss_every else 1 - label
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path, verdicts


def known_judge(verdicts: dict[str, int], garbage_first: bool = False) -> Any:
    calls: dict[str, int] = {}

    def answer(body: dict[str, Any]) -> str:
        user = body["messages"][-1]["content"]
        if "Reply with JSON only" not in user:
            return "Let it stand for 40 minutes."
        ans = re.search(r"<answer>\n(.*?)\n</answer>", user, re.DOTALL).group(1)  # type: ignore[union-attr]
        calls[ans] = calls.get(ans, 0) + 1
        if garbage_first and calls[ans] == 1:
            return "I think it is fine"  # unparseable: the judge must retry, never guess
        return json.dumps({"verdict": verdicts.get(ans, 0), "reason": "known"})

    return answer


def test_calibrate_reports_independently_computable_agreement(tmp_path: Path, data_dir: Path) -> None:
    labels, verdicts = labels_file(tmp_path)
    cal_dir = tmp_path / "calibration"
    with openai_compat.serve("judge", known_judge(verdicts, garbage_first=True)) as url:
        r = run_cli("tier=calibrate", "judge=faithfulness", f"calibrate.labels={labels}", "model@judge.model=openai",
                    "judge.model.name=judge", f"judge.model.base_url={url}", f"judging.calibration_dir={cal_dir}",
                    f"paths.data_dir={data_dir}", f"paths.run_dir={tmp_path / 'run'}", "cache=false")
    assert r.returncode == 0, r.stderr
    result = json.loads((tmp_path / "run" / "calibration.json").read_text())
    cases = [json.loads(x) for x in (tmp_path / "run" / "calibration_cases.jsonl").read_text().splitlines()]
    human = [c["label"] for c in cases]
    judge = [c["verdict"] for c in cases]
    assert result["n"] == 30 and result["unparseable"] == 0  # the garbage first answers were retried
    assert result["agreement"]["value"] == sum(h == j for h, j in zip(human, judge, strict=True)) / 30
    assert abs(result["kappa"]["value"] - cohen_kappa_score(human, judge)) < 1e-9
    assert result["flip_rate"]["value"] == 0.0
    assert not cal_dir.exists()  # a run files nothing by itself: the default calibration_dir is calibration/
    filed = run_cli("tier=calibrate", f"calibrate.file={tmp_path / 'run'}", f"judging.calibration_dir={cal_dir}",
                    f"paths.run_dir={tmp_path / 'file'}")
    assert filed.returncode == 0, filed.stderr
    assert result["filed_as"].startswith("faithfulness-v2--openai--judge--labels-")  # rubric, judge, labels hash
    assert json.loads((cal_dir / result["filed_as"]).read_text())["agreement"] == result["agreement"]


def test_judge_gate_refused_until_calibrated(tmp_path: Path, data_dir: Path) -> None:
    cal_dir = tmp_path / "calibration"
    common = ("tier=generation", "model=mock", "mode=e2e", "repeats=1", *MINI, "judge=faithfulness",
              "model@judge.model=openai", "judge.model.name=judge", f"judging.calibration_dir={cal_dir}",
              f"paths.data_dir={data_dir}", "gate.fail_under={judge.e2e.faithfulness:0.5}")
    refused = run_cli(*common, "judge.model.base_url=http://127.0.0.1:9/v1", f"paths.run_dir={tmp_path / 'a'}")
    assert refused.returncode == 2
    assert "not calibrated" in refused.stderr and "no calibration report" in refused.stderr

    def calibrate(miss_every: int, url: str) -> None:
        labels, _ = labels_file(tmp_path, miss_every=miss_every)
        # The calibration the gate reads, made in this process (the command line is tested above).
        assert run_in_process("tier=calibrate", "judge=faithfulness", f"calibrate.labels={labels}",
                              "model@judge.model=openai", "judge.model.name=judge", f"judge.model.base_url={url}",
                              f"judging.calibration_dir={cal_dir}", f"paths.data_dir={data_dir}", "cache=false",
                              f"paths.run_dir={tmp_path / 'cal'}", "quiet=true") == 0
        assert run_in_process("tier=calibrate", f"calibrate.file={tmp_path / 'cal'}",
                              f"judging.calibration_dir={cal_dir}", f"paths.run_dir={tmp_path / 'file'}",
                              "quiet=true") == 0

    _, weak = labels_file(tmp_path, miss_every=7)  # agreement 25/30 = 0.833: not enough
    with openai_compat.serve("judge", known_judge(weak)) as url:
        calibrate(7, url)
        low = run_cli(*common, f"judge.model.base_url={url}", f"paths.run_dir={tmp_path / 'a2'}")
    assert low.returncode == 2 and "agreement 0.833" in low.stderr

    _, good = labels_file(tmp_path, miss_every=10)  # agreement 27/30 = 0.9: enough to gate
    with openai_compat.serve("judge", known_judge(good)) as url:
        calibrate(10, url)
        ok = run_cli(*common, f"judge.model.base_url={url}", f"paths.run_dir={tmp_path / 'b'}")
    # Calibrated, so the gate is applied rather than refused (2): the loopback judge gives 0 to every answer it was
    # not given a verdict for (all of the mock's), so the judge mean sits below the 0.5 floor and the run fails it.
    assert ok.returncode == 1, ok.stderr
    assert "judge.e2e.faithfulness" in ok.stderr  # the broken floor is named
    report = json.loads((tmp_path / "b" / "report.json").read_text())
    section = report["details"]["judges"]["e2e.faithfulness"]
    assert section["calibration"]["calibrated"] and section["rubric"] == "faithfulness-v2"
    assert section["mean"] == 0.0
    assert not any("faithfulness" in k for k in report["metrics"])  # judges never enter the deterministic means
    assert report["identity"]["judges"] == ["faithfulness-v2"]
    cases = [json.loads(x) for x in (tmp_path / "b" / "cases.jsonl").read_text().splitlines()]
    refusal = next(c for c in cases if c["expect_refusal"])
    # The mock answers from whatever e2e retrieved, the refusal golden's passages too, so its answer declines nothing
    # and goes to the judge like any other (only a declining answer is faithful by rule): the judge gives it 0.
    assert not refusal["refused"] and refusal["judges"]["faithfulness"] == 0
    assert section["by_rule"] == sum(1 for c in cases if c["refused"])


def test_a_judge_prompt_longer_than_the_judge_context_costs_verdicts_not_the_run(tmp_path: Path,
                                                                                  data_dir: Path) -> None:
    # The real SmolLM2 judge with a context too small for any judge prompt: llama.cpp refuses each request.
    out = tmp_path / "run"
    r = run_cli("tier=generation", "model=mock", "mode=e2e", "repeats=1", *MINI, "judge=faithfulness",
                "judge.model.num_ctx=256", f"paths.data_dir={data_dir}", f"paths.run_dir={out}",
                "quiet=true")
    assert r.returncode == 0, r.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["status"] == "ok" and report["metrics"]["e2e.correctness"] is not None
    section = report["details"]["judges"]["e2e.faithfulness"]
    cases = [json.loads(x) for x in (out / "cases.jsonl").read_text().splitlines()]
    sent = [c for c in cases if not c["refused"]]
    assert sent and section["rejected"] == len(sent) and section["unparseable"] == 0
    assert all(c["judges"]["faithfulness"] is None for c in sent)
