"""tier=app: the user's own app evaluated from its HTTP endpoint (a loopback service started here) and from the
JSONL file of its outputs; promote, compare and the gate on its runs; the request cache, retries, the deadline and
secret headers."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from nomad_eval.base.paths import REPO
from nomad_eval.cli.entry import run_tier
from tests.conftest import FIXTURES, MINI, run_cli
from tests.servers.rag_app import Script, script_for, serve

HTTP = ["tier=app", "app=http", "app.answer_path=result.answer", "app.contexts_path=contexts",
        "app.prompt_tokens_path=usage.prompt_tokens", "app.completion_tokens_path=usage.completion_tokens",
        "repeats=1"]


def _cfg(tmp: Path, run: str, *overrides: str) -> DictConfig:
    with initialize_config_dir(config_dir=str(REPO / "nomad_eval" / "conf"), version_base="1.3"):
        return compose("config", overrides=[f"paths.data_dir={tmp / 'data'}", f"paths.run_dir={tmp / run}",
                                            f"paths.baselines_dir={tmp / 'baselines'}", "quiet=true", *MINI,
                                            *overrides])


def _code(cfg: DictConfig) -> int:
    """The run's exit code (run_tier exits the process on a non-zero one)."""
    try:
        return run_tier(cfg)
    except SystemExit as exc:
        return int(exc.code or 0)


def _script() -> Script:
    return script_for(FIXTURES / "goldens" / "mini.jsonl", FIXTURES / "corpus")


def _read(run: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    report = json.loads((run / "report.json").read_text())
    return report, [json.loads(x) for x in (run / "cases.jsonl").read_text().splitlines()]


def test_http_app_is_scored_promoted_compared_and_gated(tmp_path: Path) -> None:
    script = _script()
    with serve(script) as url:
        assert _code(_cfg(tmp_path, "first", *HTTP, f"app.url={url}")) == 0
        report, cases = _read(tmp_path / "first")
        m = report["metrics"]
        assert m["e2e.correctness"] == 1.0 and m["e2e.refusal_recall"] == 1.0 and m["e2e.false_refusal_rate"] == 0.0
        assert m["e2e.recall@5"] == 1.0 and report["intervals"]["e2e.recall@5"]["n"] == 7
        assert report["intervals"]["e2e.correctness"]["n"] == 7
        assert report["identity"]["pipeline"] == "app:http" and report["identity"]["mode"] == "e2e"
        follow_up = next(c for c in cases if c["id"] == "mini-07")
        assert follow_up["passed"] and follow_up["retrieved"][0]["doc_id"] == "lantern-batteries"
        sent = next(r for r in script.requests if r["query"] == follow_up["query"])
        assert sent["history"][0]["content"].startswith("I have an Osprey")  # the history was sent
        assert next(c for c in cases if c["id"] == "mini-01")["prompt_tokens"] > 100

        assert _code(_cfg(tmp_path, "promote", "tier=promote", f"promote.run={tmp_path / 'first'}")) == 0
        assert len(list((tmp_path / "baselines").glob("*/generation-e2e.json"))) == 1

        ci = [*HTTP, f"app.url={url}", "compare.after_run=true", "compare.junit=junit.xml"]
        assert _code(_cfg(tmp_path, "same", *ci)) == 0
        assert _read(tmp_path / "same")[0]["gate"]["verdict"] == "pass"

        script.wrong_topic = "kettle-descaling"  # planted: both kettle questions answered wrongly
        # One answer a question on both sides, from an app whose answers may vary: two flips could be chance.
        assert _code(_cfg(tmp_path, "once", *ci)) == 1
        gate = _read(tmp_path / "once")[0]["gate"]
        assert gate["verdict"] == "not measured" and "cannot tell: run-to-run noise not measured" in gate["cause"]
        # Two repeats in the run measure its noise (none: its answers agree), so the flips are a regression.
        ci = [*HTTP[:-1], "repeats=2", f"app.url={url}", "compare.after_run=true", "compare.junit=junit.xml"]
        assert _code(_cfg(tmp_path, "wrong", *ci)) == 1
        gate = _read(tmp_path / "wrong")[0]["gate"]
        assert gate["verdict"] == "regression"
        failed = next(x for x in gate["metrics"] if x["name"] == "e2e.correctness")
        assert failed["outcome"] == "regression" and "e2e:mini-01" in failed["reason"] and \
            "e2e:mini-08" in failed["reason"] and "mini-02" not in failed["reason"]
        assert "mini-01" in (tmp_path / "wrong" / "junit.xml").read_text()

        script.wrong_topic, script.drop_contexts = None, True  # planted: retrieval returns nothing
        assert _code(_cfg(tmp_path, "dropped", *ci)) == 1
        report, cases = _read(tmp_path / "dropped")
        assert report["gate"]["verdict"] == "regression"
        assert report["metrics"]["e2e.recall@5"] == 0.0
        assert {c["cause"] for c in cases if c["id"] != "mini-06"} == {"retrieval_miss"}


def test_the_outputs_file_of_an_http_run_reads_back_to_identical_metrics(tmp_path: Path) -> None:
    with serve(_script()) as url:
        assert _code(_cfg(tmp_path, "http", *HTTP[:-1], "repeats=2", f"app.url={url}")) == 0
    written = tmp_path / "http" / "app_outputs.jsonl"
    first = json.loads(written.read_text().splitlines()[0])
    assert set(first) == {"id", "answer", "contexts", "repeat", "latencyMs", "promptTokens", "completionTokens"}
    assert _code(_cfg(tmp_path, "file", "tier=app", "app=answers", f"app.file={written}")) == 0
    (a, a_cases), (b, b_cases) = _read(tmp_path / "http"), _read(tmp_path / "file")
    assert a["metrics"] == b["metrics"] and a["intervals"] == b["intervals"]
    assert a["details"]["causes"] == b["details"]["causes"]
    keep = ("id", "answer", "passed", "metrics", "retrieved", "cause")
    assert [{k: c[k] for k in keep} for c in a_cases] == [{k: c[k] for k in keep} for c in b_cases]
    assert a["identity"]["pipeline"] == "app:http" and b["identity"]["pipeline"] == "app:answers"
    assert len(a_cases) == 16 and a["counts"]["repeats"] == b["counts"]["repeats"] == 2


def test_every_run_asks_the_app_and_only_an_explicit_cache_true_reads_earlier_answers(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = _script()
    with serve(script) as url:
        assert _code(_cfg(tmp_path, "one", *HTTP, f"app.url={url}")) == 0
        assert len(script.requests) == 8
        assert _code(_cfg(tmp_path, "two", *HTTP, f"app.url={url}")) == 0
        assert len(script.requests) == 16  # the system under test is asked again, never replayed
        assert _read(tmp_path / "two")[0]["counts"]["cache_hits"] == 0
        capsys.readouterr()
        assert _code(_cfg(tmp_path, "three", *HTTP, f"app.url={url}", "cache=true")) == 0
        assert len(script.requests) == 16  # asked for: every answer from the cache, and said so
        report, cases = _read(tmp_path / "three")
        assert report["counts"]["cache_hits"] == 8 and {c["answered_from"] for c in cases} == {"cache"}
        err = capsys.readouterr().err
        assert "cache=true: answers of earlier runs are read" in err and "8 read from the response cache" in err
        assert "answered_from" not in _read(tmp_path / "two")[1][0]
        assert _read(tmp_path / "one")[0]["metrics"] == _read(tmp_path / "three")[0]["metrics"]


def test_a_redeployed_app_at_the_same_url_fails_the_default_gate(tmp_path: Path) -> None:
    script = _script()
    with serve(script) as url:
        assert _code(_cfg(tmp_path, "first", *HTTP, f"app.url={url}")) == 0
        assert _code(_cfg(tmp_path, "promote", "tier=promote", f"promote.run={tmp_path / 'first'}")) == 0
        script.wrong_topic = "kettle-descaling"  # redeployed: the kettle questions now answered wrongly
        assert _code(_cfg(tmp_path, "after", *HTTP, f"app.url={url}", "compare.after_run=true")) == 1
    failed = next(x for x in _read(tmp_path / "after")[0]["gate"]["metrics"] if x["name"] == "e2e.correctness")
    assert "e2e:mini-01" in failed["reason"] and "e2e:mini-08" in failed["reason"]


def test_a_resumed_run_asks_the_app_only_for_what_is_missing(tmp_path: Path) -> None:
    script = _script()
    script.delay = 0.4
    with serve(script) as url:
        # Interrupted by its deadline after some answers: the same run folder with resume=true asks only the rest.
        assert _code(_cfg(tmp_path, "run", *HTTP, f"app.url={url}", "app.concurrency=1", "app.deadline=1.5")) == 2
        asked = len(script.requests)
        assert 1 <= asked < 8
        script.delay = 0.0
        assert _code(_cfg(tmp_path, "run", *HTTP, f"app.url={url}", "resume=true")) == 0
        report, cases = _read(tmp_path / "run")
        kept = report["counts"]["cache_hits"]
        assert len(script.requests) - asked == report["counts"]["model_calls"] == 8 - kept  # only the missing
        assert sum(c.get("answered_from") == "resumed" for c in cases) == report["counts"]["cache_hits"] >= 1
        # Another run folder resumes nothing: every golden is asked.
        before = len(script.requests)
        assert _code(_cfg(tmp_path, "other", *HTTP, f"app.url={url}", "resume=true")) == 0
        assert len(script.requests) == before + 8


def test_a_null_answer_or_an_error_body_is_never_cached(tmp_path: Path) -> None:
    script = _script()
    with serve(script) as url:
        script.broken = "null"
        assert _code(_cfg(tmp_path, "null", *HTTP, f"app.url={url}", "cache=true")) == 2
        script.broken = "error"
        assert _code(_cfg(tmp_path, "error", *HTTP, f"app.url={url}", "cache=true")) == 2
        script.broken = None  # recovered: even with cache=true every golden is asked again, and passes
        before = len(script.requests)
        assert _code(_cfg(tmp_path, "healthy", *HTTP, f"app.url={url}", "cache=true")) == 0
    assert len(script.requests) - before == 8
    assert _read(tmp_path / "healthy")[0]["metrics"]["e2e.correctness"] == 1.0


def test_passages_of_an_old_index_are_named_stale_and_a_floor_holds_the_current_rate(tmp_path: Path) -> None:
    script = _script()
    old = ["Coil a wet rope tightly and hang it in the sun.", "Store rope in a sealed plastic bag.",
           "Nylon rope never needs inspecting."]  # an earlier version of rope-storage, no longer in the corpus
    script.served = {"rope-storage": old}
    script.foreign = ("bread-starter", "Our store opens at nine on Sundays.")
    floor = ["gate.fail_under={app.current_context_rate: 0.99}"]
    with serve(script) as url:
        assert _code(_cfg(tmp_path, "old", *HTTP, f"app.url={url}", *floor)) == 1
        script.served, script.foreign = {}, None  # re-indexed
        assert _code(_cfg(tmp_path, "new", *HTTP, f"app.url={url}", *floor)) == 0
    report, cases = _read(tmp_path / "old")
    served = report["details"]["served_index"]
    assert served["passages"] == 11 and served["stale"]["count"] == 3 and served["foreign"]["count"] == 1
    assert served["stale_documents"] == {"rope-storage": 3}
    assert report["metrics"]["app.current_context_rate"] == pytest.approx(7 / 11)
    interval = report["intervals"]["app.current_context_rate"]
    assert interval["n"] == 11 and interval["low"] < 7 / 11 < interval["high"] < 0.99
    assert any("old versions of: rope-storage (3)" in w for w in report["warnings"])
    broken = report["gate"]["floors"][0]
    assert broken["metric"] == "app.current_context_rate" and broken["broken"]
    after = _read(tmp_path / "new")[0]
    assert after["metrics"]["app.current_context_rate"] == 1.0
    assert after["details"]["served_index"]["stale_documents"] == {}


def test_secret_headers_reach_the_app_and_are_written_nowhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    secret = "sk-test-3f9a1c77b2e04d5e"
    monkeypatch.setenv("MY_APP_TOKEN", f"Bearer {secret}")
    script = _script()
    with serve(script) as url:
        assert _code(_cfg(tmp_path, "run", *HTTP, f"app.url={url}", "+app.headers_env.Authorization=MY_APP_TOKEN",
                             "+app.headers.X-Client=nomad-eval")) == 0
    assert script.headers[0]["Authorization"] == f"Bearer {secret}" and script.headers[0]["X-Client"] == "nomad-eval"
    for path in [*tmp_path.rglob("*")]:
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path


def test_requests_run_up_to_the_concurrency_and_land_in_golden_order(tmp_path: Path) -> None:
    script = _script()
    script.delay = 0.3
    with serve(script) as url:
        assert _code(_cfg(tmp_path, "par", *HTTP, f"app.url={url}", "app.concurrency=3")) == 0
    assert script.peak == 3
    assert [c["id"] for c in _read(tmp_path / "par")[1]] == [f"mini-0{i}" for i in range(1, 9)]


def test_transient_failures_are_retried_and_the_deadline_holds(tmp_path: Path) -> None:
    script = _script()
    script.fail_first = 2
    with serve(script) as url:
        assert _code(_cfg(tmp_path, "retried", *HTTP, f"app.url={url}", "app.concurrency=1")) == 0
        assert len(script.requests) == 10 and _read(tmp_path / "retried")[0]["metrics"]["e2e.correctness"] == 1.0
        script.fail_first, script.delay = 0, 0.6
        t = time.monotonic()
        assert _code(_cfg(tmp_path, "late", *HTTP, f"app.url={url}", "app.concurrency=1", "app.deadline=1",
                             "cache=false")) == 2
        assert time.monotonic() - t < 5
    report = json.loads((tmp_path / "late" / "report.json").read_text())
    assert report["status"] == "failed" and "app.deadline" in report["error"]


def test_an_app_without_contexts_is_scored_on_its_answers_only(tmp_path: Path) -> None:
    script = _script()
    script.wrong_topic = "rope-storage"
    with serve(script) as url:
        assert _code(_cfg(tmp_path, "bare", "tier=app", "app=http", "app.answer_path=result.answer",
                             f"app.url={url}", "repeats=1")) == 0
    report, cases = _read(tmp_path / "bare")
    assert report["metrics"]["e2e.correctness"] == pytest.approx(6 / 7)
    assert "e2e.recall@5" not in report["metrics"] and report["metrics"]["e2e.groundedness"] is None
    rope = next(c for c in cases if c["id"] == "mini-04")
    assert rope["passed"] is False and rope["retrieved"] is None
    assert rope["cause"] == "unexplained" and "exposed no document ids" in rope["cause_evidence"]


def test_tier_app_without_an_app_or_with_other_modes_is_refused(tmp_path: Path) -> None:
    assert _code(_cfg(tmp_path, "none", "tier=app")) == 2
    assert _code(_cfg(tmp_path, "modes", "tier=app", "app=answers", "app.file=x.jsonl", "mode=all")) == 2


@pytest.mark.slow  # four processes, each paying the CLI's start-up
def test_a_project_gates_its_app_with_its_own_ci_experiment(tmp_path: Path) -> None:
    """As a user runs it: `nomad-eval +experiment=ci` in a project whose experiment points at the app."""
    import shutil

    project = tmp_path / "kb"
    shutil.copytree(FIXTURES / "corpus", project / "corpus")
    (project / "goldens").mkdir()
    shutil.copy(FIXTURES / "goldens" / "mini.jsonl", project / "goldens" / "mini.jsonl")
    script = _script()
    with serve(script) as url:
        (project / "conf" / "experiment").mkdir(parents=True)
        (project / "conf" / "experiment" / "ci.yaml").write_text(
            "# @package _global_\ndefaults:\n  - override /tier: app\n  - override /app: http\n"
            f"suite: mini\nrepeats: 2\napp:\n  url: {url}\n  answer_path: result.answer\n  contexts_path: contexts\n"
            "compare:\n  after_run: true\n  junit: junit.xml\n")
        first = run_cli("+experiment=ci", "paths.run_dir=runs/first", cwd=project)
        assert first.returncode == 2 and "not comparable" in first.stdout + first.stderr  # no baseline yet
        promoted = run_cli("tier=promote", "promote.run=runs/first", cwd=project)
        assert promoted.returncode == 0, promoted.stderr
        same = run_cli("+experiment=ci", "paths.run_dir=runs/same", cwd=project)
        assert same.returncode == 0 and "verdict: pass" in same.stdout, same.stdout + same.stderr
        script.wrong_topic = "lantern-batteries"  # planted: the lantern questions answered wrongly
        wrong = run_cli("+experiment=ci", "paths.run_dir=runs/wrong", cwd=project)  # the default asks the app
    assert wrong.returncode == 1, wrong.stdout + wrong.stderr
    assert "regression" in wrong.stderr and "e2e:mini-02" in wrong.stderr and "e2e:mini-07" in wrong.stderr
    assert "mini-02" in (project / "runs" / "wrong" / "junit.xml").read_text()


def test_a_judge_reads_the_passages_the_app_exposed(tmp_path: Path) -> None:
    """faithfulness on an app run: the judge's prompt holds the app's own contexts, and its verdicts are the run's."""
    from tests.servers import openai_compat

    prompts: list[str] = []

    def judge(body: dict[str, Any]) -> str:
        prompt = body["messages"][-1]["content"]
        prompts.append(prompt)
        return json.dumps({"verdict": 0 if "Brindle" in prompt else 1, "reason": "scripted"})

    with serve(_script()) as url, openai_compat.serve("judge", judge) as judge_url:
        assert _code(_cfg(tmp_path, "judged", *HTTP, f"app.url={url}", "judge=faithfulness",
                          "model@judge.model=openai", "judge.model.name=judge",
                          f"judge.model.base_url={judge_url}")) == 0
    report, cases = _read(tmp_path / "judged")
    assert len(prompts) == 7  # the decline is judged by rule, without a call
    assert any("<passage" in p and "40 minutes" in p for p in prompts)
    assert report["details"]["judges"]["e2e.faithfulness"]["n"] == 8
    verdicts = {c["id"]: c["judges"]["faithfulness"] for c in cases}
    assert verdicts == {f"mini-0{i}": int(i not in (1, 8)) for i in range(1, 9)}  # the kettle passages: 0


def test_a_pattern_that_times_out_on_an_apps_answer_is_named_in_a_warning(tmp_path: Path) -> None:
    """Issue 44: the golden is left out of correctness (null, not a miss), and the report says which and why."""
    goldens = tmp_path / "goldens"
    goldens.mkdir()
    rows = [json.loads(x) for x in (FIXTURES / "goldens" / "mini.jsonl").read_text().splitlines() if x.strip()]
    slow = next(r for r in rows if not r.get("expectRefusal"))
    slow["mustInclude"] = ["(a|a)+$"]
    (goldens / "mini.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    answers = tmp_path / "outputs.jsonl"
    answers.write_text("".join(json.dumps({"id": r["id"], "answer": "a" * 30 + "b"}) + "\n" for r in rows))
    cfg = _cfg(tmp_path, "slow", "tier=app", "app=answers", f"app.file={answers}", f"data.goldens_dir={goldens}")
    _code(cfg)
    report, cases = _read(tmp_path / "slow")
    assert next(c for c in cases if c["id"] == slow["id"])["metrics"]["correctness"] is None
    assert any(w.startswith(f"golden {slow['id']}: a mustInclude/mustNotInclude pattern ran past its time limit")
               for w in report["warnings"]), report["warnings"]
