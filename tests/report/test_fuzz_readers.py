"""Fuzzed report.json, cases.jsonl, baselines and sweep folders: each is read and compared, or refused by name.

Refused means NomadError (exit 2: not comparable, never a regression) whose message names the file, and the line
or key where one applies. What loads must also survive what compare and merge do with it.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nomad_eval.base.errors import NomadError
from nomad_eval.base.runfolder import MANIFEST, seal
from nomad_eval.core.questions import questions_from_cases
from nomad_eval.gate.verdict import verdict_for
from nomad_eval.report.baseline import load_baseline, load_run
from nomad_eval.report.io import read_report
from nomad_eval.report.merge import collect, merge, sweep_id, write_summary
from nomad_eval.report.schema import Identity, Report
from tests.conftest import compose_cfg
from tests.fuzz_support import fuzz_settings, run, tried
from tests.typed_config import compare_settings
from tests.written import records

# The shipped config, as a run composes it (a hand-built one breaks whenever compare reads a new key), with fewer
# resamples: each fuzzed example runs a whole compare.
CFG = compose_cfg("stats.resamples=50")
IDENTITY = Identity(fingerprint="f" * 16, goldens_hash="h", suite="core", embedder="e", pipeline="p",
                    measures=["@5"])
REPORT = Report(tier="retrieval", identity=IDENTITY, metrics={"recall@5": 0.5, "ndcg@5": 0.5, "mrr@5": 0.5})
CASES = [{"id": f"q{i}", "relevant_doc_ids": ["d"], "expect_refusal": False, "passed": i % 2 == 0,
          "metrics": {"recall@5": float(i % 2), "ndcg@5": 0.5, "mrr@5": 1.0}} for i in range(4)]

TEXT = st.text(max_size=8) | st.sampled_from(["\ud800", "recall@5", "ok", "failed", "e2e", "q1"])
NUMBER = st.integers(-3, 3) | st.floats() | st.sampled_from([0.0, 1.0, 0.5])
SCALAR = st.none() | st.booleans() | NUMBER | TEXT
JSON = st.recursive(SCALAR, lambda c: st.lists(c, max_size=3) | st.dictionaries(TEXT, c, max_size=3), max_leaves=8)
METRICS = st.dictionaries(st.sampled_from(["recall@5", "ndcg@5", "mrr@5", "x"]) | TEXT, NUMBER | st.none() | JSON,
                          max_size=4)


def _mutated(base: dict[str, Any], values: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    """`base` with some keys replaced by fuzzed values and some removed."""
    return st.builds(lambda repl, drop: {k: v for k, v in {**base, **repl}.items() if k not in drop},
                     st.dictionaries(st.sampled_from(sorted(base)), values, max_size=3),
                     st.sets(st.sampled_from(sorted(base)), max_size=2))


REPORT_DICT = REPORT.model_dump(mode="json")
REPORT_LIKE = _mutated(REPORT_DICT, JSON | METRICS) | st.builds(
    lambda ident: {**REPORT_DICT, "identity": ident}, _mutated(REPORT_DICT["identity"], JSON))
CASE_LIKE = st.builds(lambda base, repl: {**base, **repl}, st.sampled_from(CASES), st.fixed_dictionaries({}, optional={
    "id": TEXT | JSON, "mode": st.sampled_from(["e2e", None]) | JSON, "passed": st.booleans() | JSON,
    "metrics": METRICS | JSON, "relevant_doc_ids": st.lists(TEXT, max_size=2) | JSON, "tags": JSON,
    "repeat": st.integers(0, 2) | JSON,
}))


def _deep(n: int) -> bytes:
    return ("[" * n + "]" * n).encode()


def _blob(likes: st.SearchStrategy[Any]) -> st.SearchStrategy[bytes]:
    """Bytes of a file: mostly near-valid JSON, sometimes any JSON, raw bytes, or nesting past the parser."""
    return (likes.map(lambda v: json.dumps(v).encode()) | JSON.map(lambda v: json.dumps(v).encode())
            | st.binary(max_size=80) | st.integers(1, 20_000).map(_deep))


def _refused_by_name(exc: NomadError, path: Path) -> None:
    assert exc.exit_code == 2, str(exc)
    assert str(path) in str(exc), f"{path} not named in: {exc}"
    str(exc).encode("utf-8")


# The run-folder readers also run at ten times their count, as the slow suite (issue 32's fuzz run).
TENFOLD = pytest.param(10, marks=pytest.mark.slow, id="x10")


@pytest.mark.parametrize("times", [1, TENFOLD])
def test_fuzzed_report_files_are_read_or_refused_by_name(tmp_path: Path, times: int) -> None:
    @fuzz_settings(300 * times)
    @given(_blob(REPORT_LIKE))
    def prop(blob: bytes) -> None:
        tried("report.json reader")
        path = tmp_path / uuid.uuid4().hex / "report.json"
        path.parent.mkdir()
        path.write_bytes(blob)
        try:
            read_report(path)
        except NomadError as exc:
            _refused_by_name(exc, path)

    assert run("report.json reader", prop) >= 300 * times


@pytest.mark.slow  # each example also runs a compare: only the tenfold count runs, in the slow lane
@pytest.mark.parametrize("times", [10])
def test_fuzzed_case_files_are_compared_or_refused_by_line(tmp_path: Path, times: int) -> None:
    @fuzz_settings(120 * times)  # each example also runs a compare (bootstrap and tests), ~30 ms
    @given(st.lists(CASE_LIKE.map(json.dumps) | TEXT | st.integers(1, 20_000).map(lambda n: _deep(n).decode()),
                    max_size=5), st.booleans())
    def prop(lines: list[str], surrogates_as_bytes: bool) -> None:
        tried("cases.jsonl reader + compare")
        folder = tmp_path / uuid.uuid4().hex
        folder.mkdir()
        (folder / "report.json").write_text(REPORT.model_dump_json())
        errors = "surrogatepass" if surrogates_as_bytes else "replace"
        (folder / "cases.jsonl").write_bytes("\n".join(lines).encode("utf-8", errors))
        try:
            report, cases = load_run(folder)
        except NomadError as exc:
            _refused_by_name(exc, folder / "cases.jsonl")
            return
        assert cases is not None
        questions_from_cases(cases)
        verdict_for(report, cases, load_baseline(folder), compare_settings(CFG))  # a run against itself as the baseline

    assert run("cases.jsonl reader + compare", prop) >= 120 * times


MANIFEST_LIKE = st.builds(lambda files: {"version": 1, "files": files}, st.dictionaries(
    st.sampled_from(["report.json", "cases.jsonl", "../report.json", "", "x/y", ".."]) | TEXT,
    st.fixed_dictionaries({"bytes": st.integers(-1, 10**6) | JSON, "sha256": st.sampled_from(["", "0" * 64]) | JSON})
    | JSON, max_size=3))
DAMAGE = st.sampled_from(["none", "truncate", "append", "delete", "fifo", "folder"])


@pytest.mark.parametrize("times", [1, TENFOLD])
def test_fuzzed_run_folders_are_read_or_refused_by_file(tmp_path: Path, times: int) -> None:
    """A sealed run folder with its manifest fuzzed or one of its files damaged: read when whole, else refused
    naming a file of the folder; never a traceback, never a hang on a special file."""
    @fuzz_settings(100 * times)
    @given(st.none() | _blob(MANIFEST_LIKE), st.sampled_from(["report.json", "cases.jsonl"]), DAMAGE)
    def prop(manifest: bytes | None, victim: str, damage: str) -> None:
        tried("run folder reader")
        folder = tmp_path / uuid.uuid4().hex
        folder.mkdir()
        (folder / "report.json").write_text(REPORT.model_dump_json())
        (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES))
        seal(folder)
        if manifest is not None:
            (folder / MANIFEST).write_bytes(manifest)
        _damage(folder / victim, damage)
        try:
            load_run(folder)
        except NomadError as exc:
            assert exc.exit_code == 2 and str(folder) in str(exc), str(exc)
            return
        assert manifest is None and damage == "none"  # anything else must have been refused

    assert run("run folder reader", prop) >= 100 * times


def _damage(path: Path, how: str) -> None:
    if how in ("truncate", "append"):
        text = path.read_bytes()
        path.write_bytes(text[: len(text) // 2] if how == "truncate" else text + b"\n")
    elif how in ("delete", "fifo", "folder"):
        path.unlink()
        if how == "fifo":
            os.mkfifo(path)
        elif how == "folder":
            path.mkdir()


BASELINE_DICT = {"schema_version": 2, "promoted_from": "runs/x", "promoted_at": "2026-01-01T00:00:00", "report":
                 REPORT_DICT, "cases": CASES}
UPSTREAM_DICT = {"meta": {"kind": "retrieval", "corpusFingerprint": "abc", "params": {"topK": 5, "kValues": [5]}},
                 "metrics": {"recall@5": 0.5, "hitRate@5": 0.5}, "cases": [
                     {"id": c["id"], "relevantDocIds": ["d"], "recall": {"5": c["metrics"]["recall@5"]},
                      "reciprocalRank": 1.0} for c in CASES]}
BASELINE_LIKE = (_mutated(BASELINE_DICT, JSON)
                 | st.builds(lambda cases: {**BASELINE_DICT, "cases": cases}, st.lists(CASE_LIKE, max_size=4))
                 | st.builds(lambda rep: {**BASELINE_DICT, "report": rep}, REPORT_LIKE)
                 | _mutated(UPSTREAM_DICT, JSON)
                 | st.builds(lambda meta: {**UPSTREAM_DICT, "meta": meta}, _mutated(UPSTREAM_DICT["meta"], JSON)))


@pytest.mark.slow
def test_fuzzed_baselines_are_compared_or_refused_by_name(tmp_path: Path) -> None:
    @fuzz_settings(150)  # each loaded baseline is also compared, ~30 ms
    @given(_blob(BASELINE_LIKE))
    def prop(blob: bytes) -> None:
        tried("baseline reader + compare")
        path = tmp_path / f"{uuid.uuid4().hex}.json"
        path.write_bytes(blob)
        try:
            base = load_baseline(path)
        except NomadError as exc:
            _refused_by_name(exc, path)
            return
        verdict_for(REPORT, records(CASES), base, compare_settings(CFG))

    assert run("baseline reader + compare", prop) >= 150


def test_fuzzed_sweeps_merge_or_refuse_by_name(tmp_path: Path) -> None:
    job_report = REPORT_DICT | {"overrides": ["threshold=0.5"], "sweep_id": "s1"}

    @fuzz_settings(100)
    @given(st.lists(_blob(_mutated(job_report, JSON | METRICS)), min_size=1, max_size=3),
           st.none() | _blob(st.just({"sweep_id": "s1"})))
    def prop(reports: list[bytes], sweep: bytes | None) -> None:
        tried("sweep merge")
        folder = tmp_path / uuid.uuid4().hex
        for i, blob in enumerate(reports):
            (folder / f"{i}_job").mkdir(parents=True)
            (folder / f"{i}_job" / "report.json").write_bytes(blob)
        if sweep is not None:
            (folder / "sweep.json").write_bytes(sweep)
        try:
            chosen = collect([d for d in folder.iterdir() if d.is_dir()], sweep_id(folder))
            write_summary(merge(chosen), folder / "summary", quiet=True)
        except NomadError as exc:
            assert exc.exit_code == 2 and str(folder) in str(exc), str(exc)

    assert run("sweep merge", prop) >= 100


@pytest.mark.parametrize(("line", "message"), [
    ('{"id": "q1", "metrics": {"recall@5": NaN}}', "'metrics.recall@5': Input should be a finite number"),
    ('{"id": 7}', "'id': Input should be a valid string"),
    ('{"id": "q1", "mode": {"e2e": 1}}', "'mode': Input should be a valid string"),
    ("[1, 2]", "Input should be a valid dictionary"),
    ('{"id": "q1", "passed": "yes"}', "'passed': Input should be a valid boolean"),
    ('{"id": "q1", "metrics": {"recall@5": "0.5"}}', "'metrics.recall@5': Input should be a valid number"),
])
def test_a_bad_case_line_is_named_by_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    (tmp_path / "report.json").write_text(REPORT.model_dump_json())
    (tmp_path / "cases.jsonl").write_text(json.dumps(CASES[0]) + "\n\n" + line + "\n")
    with pytest.raises(NomadError) as exc:
        load_run(tmp_path)
    assert exc.value.exit_code == 2
    assert f"{tmp_path / 'cases.jsonl'}:3: not a valid case record: " in str(exc.value) and message in str(exc.value)


def test_a_folder_named_report_json_is_refused_by_name(tmp_path: Path) -> None:
    (tmp_path / "run" / "report.json").mkdir(parents=True)
    with pytest.raises(NomadError) as exc:
        read_report(tmp_path / "run")
    assert exc.value.exit_code == 2 and f"{tmp_path / 'run' / 'report.json'}: cannot read the report" in str(exc.value)
