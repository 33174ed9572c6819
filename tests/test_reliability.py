"""Every way a run can go wrong ends in a clear message, the right exit code, and nothing lost or corrupted."""

from __future__ import annotations

import copy
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from omegaconf import DictConfig

from nomad_eval.base.errors import InvalidInput, NomadError
from nomad_eval.base.paths import REPO
from nomad_eval.base.shipped import build
from nomad_eval.cli.entry import run_tier
from nomad_eval.data.beir import load_beir_corpus, load_beir_goldens
from nomad_eval.data.corpus import load_markdown_dir
from nomad_eval.data.golden import load_goldens
from nomad_eval.harness.index import ready_store, store_state
from nomad_eval.metrics.answer.measures import correctness
from nomad_eval.report.baseline import load_baseline
from nomad_eval.report.io import read_report, write_atomic
from tests.conftest import FIXTURES, MINI, compose_cfg, run_cli
from tests.servers import openai_compat
from tests.typed_config import runtime

FUZZ = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                           lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=8), c, max_size=4),
                           max_leaves=10)
golden_like = st.fixed_dictionaries({}, optional={
    "id": st.text(max_size=5) | st.integers(), "query": st.text(max_size=20), "turns": json_values,
    "relevantDocIds": st.lists(st.sampled_from(["kettle-descaling", "x", ""]), max_size=2) | json_values,
    "mustInclude": st.lists(st.sampled_from(["ok", "(", "a+", "[z"]), max_size=2),
    "mustNotInclude": st.lists(st.text(max_size=4), max_size=2), "expectRefusal": st.booleans() | json_values,
    "tags": st.lists(st.text(max_size=4), max_size=2) | json_values,
})


# 1. Bad input never gives a traceback ------------------------------------------------------------------------

@FUZZ
@given(st.lists(golden_like.map(json.dumps) | st.text(max_size=40) | st.binary(max_size=30).map(
    lambda b: b.decode("latin-1")), min_size=1, max_size=5))
def test_fuzzed_golden_files_load_or_name_file_and_line(tmp_path: Path, lines: list[str]) -> None:
    p = tmp_path / "fuzz.jsonl"
    p.write_text("\n".join(lines), encoding="utf-8")
    try:
        load_goldens(p, {"kettle-descaling"})
    except InvalidInput as exc:
        assert exc.defects and all(d.file == str(p) for d in exc.defects)
        assert all(d.line is not None for d in exc.defects if "line" not in d.message)


@FUZZ
@given(st.lists(st.binary(max_size=200), min_size=0, max_size=4))
def test_fuzzed_markdown_corpus_loads_or_names_file(tmp_path: Path, blobs: list[bytes]) -> None:
    folder = tmp_path / f"c{uuid.uuid4().hex}"
    folder.mkdir()
    for i, b in enumerate(blobs):
        (folder / f"doc{i}.md").write_bytes(b)
    try:
        docs = load_markdown_dir(folder)
        assert len(docs) == len(blobs)
    except InvalidInput as exc:
        assert all(str(folder) in d.file for d in exc.defects)


@FUZZ
@given(st.lists(json_values.map(json.dumps) | st.text(max_size=30), max_size=4),
       st.lists(st.text(alphabet="q1d2\t ", max_size=12), max_size=4))
def test_fuzzed_beir_folder_loads_or_names_file(tmp_path: Path, corpus: list[str], qrels: list[str]) -> None:
    folder = tmp_path / f"b{uuid.uuid4().hex}"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("\n".join(corpus))
    (folder / "queries.jsonl").write_text('{"_id": "q1", "text": "a question"}\n')
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(qrels))
    try:
        docs = load_beir_corpus(folder)
        load_beir_goldens(folder, "test", {d.doc_id for d in docs})
    except InvalidInput as exc:
        assert all(str(folder) in d.file for d in exc.defects)


@FUZZ
@given(st.binary(max_size=300) | json_values.map(lambda v: json.dumps(v).encode()))
def test_fuzzed_report_and_baseline_files_are_refused_by_name(tmp_path: Path, blob: bytes) -> None:
    for name in ("report.json", "baseline.json"):
        p = tmp_path / name
        p.write_bytes(blob)
        with pytest.raises((InvalidInput, NomadError)) as exc:
            read_report(p) if name == "report.json" else load_baseline(p)
        assert name in str(exc.value)


def test_bad_config_values_name_key_and_value(tmp_path: Path) -> None:
    r = run_cli("threshold=abc", "repeats=0", "pipeline.top_k=-1", f"hydra.run.dir={tmp_path}")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    for needle in ("threshold='abc'", "repeats=0", "pipeline.top_k=-1"):
        assert needle in r.stderr


@pytest.mark.slow
def test_empty_suite_and_unknown_suite_are_clear(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_text("")
    r = run_cli(f"data.corpus_dir={FIXTURES / 'corpus'}", f"data.goldens_dir={tmp_path}", "suite=empty",
                f"hydra.run.dir={tmp_path / 'o'}")
    # An empty suite is bad input (exit 2), not a regression.
    assert r.returncode == 2 and "holds no goldens" in r.stderr and "Traceback" not in r.stderr


def test_suite_of_only_refusals_reports_nulls_not_zeros(make_cfg: Callable[..., DictConfig]) -> None:
    cfg = make_cfg(*MINI, "tags=[refusal]")
    assert run_tier(cfg) == 0
    report = json.loads((Path(cfg.paths.run_dir) / "report.json").read_text())
    assert report["metrics"]["recall@5"] is None and report["metrics"]["nonEmptyRateOnRefusal"] is not None


def test_enormous_line_loads(tmp_path: Path) -> None:
    p = tmp_path / "big.jsonl"
    p.write_text(json.dumps({"id": "big", "query": "x" * 5_000_000, "turns": [], "relevantDocIds": ["d"],
                             "mustInclude": [], "mustNotInclude": [], "expectRefusal": False, "tags": []}) + "\n")
    assert len(load_goldens(p, {"d"})[0].query) == 5_000_000


@pytest.mark.slow
def test_exponential_pattern_is_guarded_and_reported(make_cfg: Callable[..., DictConfig], tmp_path: Path) -> None:
    t = time.perf_counter()
    assert correctness("a" * 30 + "b", ["(a|a)+$"], []) is None  # not a hang, not a made-up verdict
    assert time.perf_counter() - t < 5
    suite = tmp_path / "goldens"
    suite.mkdir()
    (suite / "evil.jsonl").write_text(json.dumps({
        "id": "evil-1", "query": "What does the Brindle K2 need?", "turns": [], "relevantDocIds": ["kettle-descaling"],
        "mustInclude": ["(a|a)+$"], "mustNotInclude": [], "expectRefusal": False, "tags": []}) + "\n")
    with openai_compat.serve("aaa", lambda body: "a" * 30 + "b") as url:
        cfg = make_cfg(f"data.corpus_dir={FIXTURES / 'corpus'}", f"data.goldens_dir={suite}", "suite=evil",
                       "tier=generation", "model=openai", "model.name=aaa", f"model.base_url={url}",
                       "mode=noretrieval", "repeats=1")
        assert run_tier(cfg) == 0
    report = json.loads((Path(cfg.paths.run_dir) / "report.json").read_text())
    assert any("evil-1" in w for w in report["warnings"])


# 2. Backends that fail -----------------------------------------------------------------------------------------

def test_server_that_accepts_and_never_answers_times_out(make_cfg: Callable[..., DictConfig],
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        sock.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(sock.accept()[0])  # accept, read nothing, answer nothing
            except OSError:
                pass

    threading.Thread(target=accept, daemon=True).start()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    cfg = make_cfg(*MINI, "tier=generation", "model=openai", "model.name=x", f"model.base_url={url}",
                   "model.timeout=1", "mode=noretrieval", "repeats=1")
    t = time.perf_counter()
    with pytest.raises(SystemExit) as exc:
        run_tier(cfg)
    assert exc.value.code == 2 and time.perf_counter() - t < 10
    assert "did not answer within 1" in capsys.readouterr().err
    stop.set()
    sock.close()


@pytest.mark.slow
def test_transient_errors_are_retried_then_reported(make_cfg: Callable[..., DictConfig]) -> None:
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from nomad_eval.backends.chat import ChatOptions

    calls = {"n": 0}

    class Flaky(BaseHTTPRequestHandler):
        def log_message(self, *a: Any) -> None:
            pass

        def do_POST(self) -> None:
            calls["n"] += 1
            self.rfile.read(int(self.headers["Content-Length"]))
            if calls["n"] % 3:  # two 503s, then an answer
                self.send_response(503)
                self.end_headers()
                return
            body = json.dumps({"choices": [{"message": {"content": "fine"}}], "usage": {"prompt_tokens": 3}}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Flaky)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{srv.server_address[1]}/v1"
    hi = [{"role": "user", "content": "hi"}]
    assert build("model", "openai", name="m", base_url=url).chat(hi, ChatOptions()).text == "fine"
    assert calls["n"] == 3
    with pytest.raises(NomadError, match="kept failing after 2 tries"):
        build("model", "openai", name="m", base_url=url, retries=2).chat(hi, ChatOptions())
    srv.shutdown()


@pytest.mark.slow
def test_judge_invalid_json_is_null_and_counted(tmp_path: Path, data_dir: Path) -> None:
    rows = [{"id": f"x{i}", "question": "q?", "chunks": ["c"], "answer": f"a{i}", "label": i % 2} for i in range(25)]
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with openai_compat.serve("judge", lambda body: "not json at all") as url:
        r = run_cli("tier=calibrate", "judge=faithfulness", f"calibrate.labels={labels}", "model@judge.model=openai",
                    "judge.model.name=judge", f"judge.model.base_url={url}", "calibrate.repeats=1",
                    f"judging.calibration_dir={tmp_path / 'cal'}", f"paths.data_dir={data_dir}",
                    f"paths.run_dir={tmp_path / 'run'}")
    assert r.returncode == 0, r.stderr
    result = json.loads((tmp_path / "run" / "calibration.json").read_text())
    # Unparseable verdicts are misses, not dropped examples: agreement 0 with coverage 0, never "no agreement".
    assert result["unparseable"] == 25 and result["coverage"]["value"] == 0.0
    assert result["agreement"]["value"] == 0.0 and result["calibrated"] is False


# 3. Stores that fail ---------------------------------------------------------------------------------------------

def test_store_held_by_another_process_names_path(tmp_path: Path) -> None:
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from nomad_eval.base.shipped import build; "
        f"s = build('store', 'edge', path={str(tmp_path)!r}, dim=8); print('open', flush=True); time.sleep(30)")],
        stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        with pytest.raises(NomadError) as exc:
            build("store", "edge", path=str(tmp_path), dim=8)
        assert str(tmp_path / "dim-8") in str(exc.value) and "paths.data_dir" in str(exc.value)
    finally:
        holder.kill()
        holder.wait()


def test_store_without_the_fingerprint_is_ingested(make_cfg: Callable[..., DictConfig]) -> None:
    rt = runtime(make_cfg(*MINI))
    with rt.store() as store:
        assert not store_state(rt, store).current
    with ready_store(rt, quiet=True) as store:
        assert store_state(rt, store).current
        n = store.count()
    with ready_store(rt, quiet=True) as store:  # warm: nothing written again
        assert store_state(rt, store).current and store.count() == n


@pytest.mark.slow
def test_corrupted_shard_is_moved_aside_and_rebuilt(make_cfg: Callable[..., DictConfig], data_dir: Path) -> None:
    cfg = make_cfg(*MINI)
    assert run_tier(cfg) == 0
    shard = data_dir / "qdrant-edge" / "dim-384"
    (shard / "edge_config.json").write_text("{broken")
    assert run_tier(make_cfg(*MINI)) == 0  # re-ingests into a fresh shard
    aside = [p for p in shard.parent.iterdir() if p.name.startswith("dim-384.corrupt-")]
    assert len(aside) == 1 and (aside[0] / "edge_config.json").read_text() == "{broken"  # kept, not deleted
    rt = runtime(make_cfg(*MINI))
    with rt.store() as store:
        assert store_state(rt, store).current


# 4. Interrupted work ---------------------------------------------------------------------------------------------

def _sweep(tmp_path: Path, data_dir: Path, sweep: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "nomad_eval", "tier=retrieval", "threshold=0.2,0.3,0.4,0.5", *MINI,
                             f"paths.data_dir={data_dir}", "quiet=true", "resume=true", f"hydra.sweep.dir={sweep}",
                             "-m"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def _reports(sweep: Path) -> list[Path]:
    return sorted(p for p in sweep.glob("*/report.json"))


@pytest.mark.slow
def test_killed_sweep_resumes_only_missing_jobs(tmp_path: Path, data_dir: Path) -> None:
    whole = tmp_path / "whole"
    p = _sweep(tmp_path, data_dir, whole)
    assert p.wait(timeout=300) == 0
    expected = pl.read_parquet(whole / "summary.parquet")

    cut = tmp_path / "cut"
    p = _sweep(tmp_path, data_dir, cut)
    deadline = time.time() + 300
    while len(_reports(cut)) < 2 and time.time() < deadline:
        time.sleep(0.05)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    done_before = {r.parent.name: r.stat().st_mtime_ns for r in _reports(cut)}
    assert 2 <= len(done_before) < 4 and not (cut / "summary.parquet").exists()
    # A job killed after its report.json but before its seal is still marked incomplete: resume re-runs it.
    sealed = [name for name in done_before if not (cut / name / ".incomplete").exists()]

    p = _sweep(tmp_path, data_dir, cut)
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    assert len(_reports(cut)) == 4 and err.count("resume: kept the finished results") == len(sealed)
    got = pl.read_parquet(cut / "summary.parquet")
    metric_cols = [c for c in expected.columns if "@" in c or c in ("job", "status", "threshold")]
    assert got.select(metric_cols).equals(expected.select(metric_cols))


def test_killed_generation_resumes_from_its_response_cache(make_cfg: Callable[..., DictConfig]) -> None:
    calls = {"n": 0, "answered": 0}

    def dies_after_five(body: dict[str, Any]) -> str:
        calls["n"] += 1
        if calls["n"] > 5:
            raise ConnectionResetError  # the handler thread dies: the client sees a dropped connection
        calls["answered"] += 1
        return "Let it stand for 40 minutes."

    args = (*MINI, "tier=generation", "model=openai", "model.name=m", "mode=noretrieval", "repeats=1",
            "model.retries=1")
    # One server for both runs: the base URL is part of the response cache's key, so a server on another port
    # would rightly be a different model as far as the cache can tell.
    with openai_compat.serve("m", dies_after_five) as url:
        # The calls the dead server dropped are listed apart and never scored (nor cached).
        try:
            run_tier(make_cfg(*args, f"model.base_url={url}"))
        except SystemExit:
            pass
        finished = calls["answered"]  # 3 calibration probes and 2 answers
        calls["n"], calls["answered"] = -1000, 0  # a healthy server now
        cfg = make_cfg(*args, f"model.base_url={url}")
        assert run_tier(cfg) == 0
    report = json.loads((Path(cfg.paths.run_dir) / "report.json").read_text())
    # Nothing finished is asked again, but the first answer: asked live, it says which model the server now serves.
    assert report["counts"]["cache_hits"] == finished - 1
    assert calls["answered"] == report["counts"]["model_calls"] == 8 + 3 - finished + 1


@pytest.mark.slow
def test_ctrl_c_leaves_a_short_message(tmp_path: Path, data_dir: Path) -> None:
    def slow(body: dict[str, Any]) -> str:
        time.sleep(3)
        return "x"

    with openai_compat.serve("slow", slow) as url:
        p = subprocess.Popen([sys.executable, "-m", "nomad_eval", "tier=generation", "model=openai", "model.name=slow",
                              f"model.base_url={url}", "mode=noretrieval", "repeats=1", *MINI, "cache=false",
                              f"paths.data_dir={data_dir}", f"paths.run_dir={tmp_path / 'r'}"], cwd=REPO,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(2.5)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=60)
    assert p.returncode == 130 and "interrupted" in err and "Traceback" not in err
    assert not (tmp_path / "r" / "report.json").exists()  # no half report


def test_atomic_write_never_leaves_half_a_file(tmp_path: Path) -> None:
    target = tmp_path / "out" / "report.json"
    write_atomic(target, "old and complete")

    with pytest.raises(UnicodeEncodeError):
        write_atomic(target, "new and half" + "\ud800")  # fails in the middle of writing
    assert target.read_text() == "old and complete"
    assert [p.name for p in target.parent.iterdir()] == ["report.json"]


# 5. Nothing of the user's is touched ----------------------------------------------------------------------------

@pytest.mark.slow
def test_ten_thousand_foreign_points_untouched(tmp_path: Path, make_cfg: Callable[..., DictConfig]) -> None:
    from nomad_eval.harness.index import ingest
    from tests.backends.test_store_isolation import seed_foreign

    store = build("store", "edge", path=str(tmp_path / "edge"), dim=384)
    seed_foreign(store, 10_000)
    before = sorted((i, json.dumps(p, sort_keys=True), np.asarray(v).round(6).tobytes())
                    for i, p, v in store.scroll(with_vector=True))
    rt = runtime(make_cfg(*MINI))
    ingest(rt, store, quiet=True)
    store.delete_tagged()
    ingest(rt, store, quiet=True)
    store.delete_tagged()
    after = sorted((i, json.dumps(p, sort_keys=True), np.asarray(v).round(6).tobytes())
                   for i, p, v in store.scroll(with_vector=True))
    assert after == before and len(after) == 10_000
    store.close()


# 6. Repeatability -----------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_retrieval_identical_in_two_fresh_processes(tmp_path: Path, data_dir: Path) -> None:
    metrics = []
    for name in ("a", "b"):
        r = run_cli("tier=retrieval", *MINI, f"paths.data_dir={data_dir}", f"paths.run_dir={tmp_path / name}",
                    "quiet=true")
        assert r.returncode == 0, r.stderr
        metrics.append(json.loads((tmp_path / name / "report.json").read_text())["metrics"])
    assert metrics[0] == metrics[1]


@pytest.fixture(scope="module")
def mini_cfg(tmp_path_factory: pytest.TempPathFactory) -> DictConfig:
    """The fixture suite's config, composed once: each fuzzed example changes a copy."""
    tmp = tmp_path_factory.mktemp("fuzz-config")
    return compose_cfg(*MINI, f"paths.data_dir={tmp / 'data'}", f"paths.run_dir={tmp / 'run'}", "quiet=true")


@pytest.mark.slow
@FUZZ
@given(st.dictionaries(st.sampled_from(["threshold", "repeats", "seed", "limit", "pipeline.top_k",
                                        "pipeline.min_final_score", "pipeline.chunk_size"]),
                       st.none() | st.booleans() | st.integers(-5, 10**6) | st.floats(allow_nan=True) |
                       st.text(max_size=6), min_size=1, max_size=4))
def test_fuzzed_config_values_pass_or_name_the_key(mini_cfg: DictConfig, values: dict[str, Any]) -> None:
    from omegaconf import OmegaConf

    from nomad_eval.cli.config_check import check_config

    cfg = copy.deepcopy(mini_cfg)
    for key, value in values.items():
        OmegaConf.update(cfg, key, value, force_add=True)
    try:
        check_config(cfg)
    except NomadError as exc:
        assert exc.exit_code == 2 and any(f"{k}=" in str(exc) for k in values)
