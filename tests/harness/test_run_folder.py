"""A run folder holds one run: a run that fails part-way through a folder holding an earlier run never leaves files
of both, and every reader refuses a folder whose files do not match its manifest, naming the file."""

from __future__ import annotations

import gc
import html
import json
import resource
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from omegaconf import DictConfig

from nomad_eval.base.errors import NomadError
from nomad_eval.base.runfolder import MANIFEST, problem, seal
from nomad_eval.cli.entry import _resumable, run_tier
from nomad_eval.report.baseline import load_baseline, load_run
from nomad_eval.run.runs_page import rebuild
from nomad_eval.tiers.compare import compare_run
from nomad_eval.tiers.promote import run as promote
from tests.conftest import FIXTURES
from tests.typed_config import typed

pytestmark = pytest.mark.slow  # real retrieval runs on the fixture corpus


@pytest.fixture
def own_data(tmp_path: Path) -> list[str]:
    shutil.copytree(FIXTURES / "corpus", tmp_path / "corpus")
    shutil.copytree(FIXTURES / "goldens", tmp_path / "goldens")
    return [f"data.corpus_dir={tmp_path / 'corpus'}", f"data.goldens_dir={tmp_path / 'goldens'}", "suite=mini",
            f"paths.baselines_dir={tmp_path / 'baselines'}"]


@contextmanager
def file_size_limit(limit: int) -> Iterator[None]:
    """Writes past `limit` bytes fail with EFBIG, as a full disk fails them with ENOSPC (Python ignores SIGXFSZ);
    unlike a small tmpfs it needs no root, so it runs on any CI machine."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))


def test_a_rerun_that_fails_part_way_leaves_one_run_and_a_failure_record(
        tmp_path: Path, own_data: list[str], make_cfg: Callable[..., DictConfig],
        capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    assert run_tier(make_cfg(*own_data)) == 0
    assert (run / MANIFEST).exists() and problem(run) is None
    earlier_cases = (run / "cases.jsonl").read_bytes()
    capsys.readouterr()
    # Another setting, so the re-run's cases differ (a higher threshold: fewer passages, a smaller cases.jsonl);
    # its cases.jsonl, scores.json and run.trec fit under the limit, cases.parquet does not: the run dies
    # part-way, as on a disk that fills up.
    limit = len(earlier_cases) + 1024
    assert (run / "cases.parquet").stat().st_size > limit
    cfg = make_cfg(*own_data, "threshold=0.5")
    # The limit is for the run folder's files. The embedding cache is in WAL mode: a connection held open here keeps
    # its shared-memory index in place, so the re-run opens the cache without creating a file past the limit.
    gc.collect()
    keep = sqlite3.connect(Path(cfg.paths.data_dir) / "embeddings.sqlite")
    keep.execute("PRAGMA journal_mode=WAL")
    keep.execute("SELECT count(*) FROM vectors").fetchone()
    with file_size_limit(limit), pytest.raises(SystemExit) as exc:
        run_tier(cfg)
    keep.close()
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"file size limit reached in {run} (writing cases.parquet)" in err
    report = json.loads((run / "report.json").read_text())
    assert report["status"] == "failed" and "cases.parquet" in report["error"]
    assert (run / "cases.jsonl").read_bytes() != earlier_cases  # the re-run's, beside no file of the earlier run
    # The earlier run's report.md, report.html, trace.jsonl, cases.parquet are gone; what is left is what the
    # failed re-run wrote, and its manifest lists exactly that.
    left = {p.name for p in run.iterdir() if p.is_file() and not p.name.startswith(".")}
    assert left == {"report.json", "cases.jsonl", "scores.json", "run.trec", "qrels.trec", MANIFEST}, left
    assert set(json.loads((run / MANIFEST).read_text())["files"]) == left - {MANIFEST}
    assert problem(run) is None
    # no temporary file; the lock stays, the mark went with the seal
    assert [p.name for p in run.iterdir() if p.name.startswith(".") and p.is_file()] == [".lock"]
    with pytest.raises(NomadError) as refused:
        promote(typed(make_cfg(*own_data, f"promote.run={run}")))
    assert "a failed run cannot become a baseline" in str(refused.value)
    assert not (tmp_path / "baselines").exists()


def test_a_failure_that_wrote_nothing_leaves_the_earlier_run_whole(
        tmp_path: Path, own_data: list[str], make_cfg: Callable[..., DictConfig]) -> None:
    run = tmp_path / "run"
    assert run_tier(make_cfg(*own_data)) == 0
    (tmp_path / "goldens" / "mini.jsonl").write_text('{"id": "broken", "query": \n')
    with pytest.raises(SystemExit):
        run_tier(make_cfg(*own_data))
    assert problem(run) is None and json.loads((run / "report.json").read_text())["status"] == "ok"
    assert json.loads((run / "report.failed.json").read_text())["status"] == "failed"
    load_run(run)


def test_every_reader_refuses_a_folder_that_does_not_match_its_manifest(
        tmp_path: Path, own_data: list[str], make_cfg: Callable[..., DictConfig],
        capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    assert run_tier(make_cfg(*own_data)) == 0
    lines = (run / "cases.jsonl").read_text().splitlines()
    (run / "cases.jsonl").write_text("\n".join(lines[:-1]) + "\n")  # a case fewer: another run's, or damage
    named = f"{run / 'cases.jsonl'}: does not match the run's manifest"
    for read in (lambda: load_run(run), lambda: load_baseline(run),
                 lambda: compare_run(run, typed(make_cfg(*own_data))),
                 lambda: promote(typed(make_cfg(*own_data, f"promote.run={run}")))):
        with pytest.raises(NomadError) as exc:
            read()
        assert exc.value.exit_code == 2 and named in str(exc.value)
    capsys.readouterr()
    assert not _resumable(make_cfg(*own_data, "resume=true"))
    assert f"resume: re-running {run}: {named}" in capsys.readouterr().err
    page, n = rebuild([tmp_path], tmp_path / "runs.html", limit=10)
    assert n == 0 and html.escape(named).replace("&#x27;", "&#39;") in page.read_text()


def test_resume_reruns_a_job_whose_files_are_missing(
        tmp_path: Path, own_data: list[str], make_cfg: Callable[..., DictConfig],
        capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    assert run_tier(make_cfg(*own_data)) == 0
    (run / "trace.jsonl").unlink()
    capsys.readouterr()
    assert not _resumable(make_cfg(*own_data, "resume=true"))
    assert f"{run / 'trace.jsonl'}: listed in the run's manifest but missing" in capsys.readouterr().err
    # A folder from before manifests (its report older than them): cases.jsonl is the least it must hold.
    (run / MANIFEST).unlink()
    report = json.loads((run / "report.json").read_text())
    report["provenance"]["created"] = "2026-11-30T12:00:00+00:00"
    (run / "report.json").write_text(json.dumps(report))
    (run / "cases.jsonl").unlink()
    assert not _resumable(make_cfg(*own_data, "resume=true"))
    assert f"{run / 'cases.jsonl'} is missing" in capsys.readouterr().err
    assert run_tier(make_cfg(*own_data, "resume=true")) == 0
    assert problem(run) is None and (run / "cases.jsonl").exists()
    assert run_tier(make_cfg(*own_data, "resume=true")) == 0  # kept this time, and sealed again
    assert "kept the finished results" in capsys.readouterr().err and problem(run) is None


def test_a_manifest_is_checked_not_trusted(tmp_path: Path) -> None:
    (tmp_path / "report.json").write_text("{}")
    seal(tmp_path)
    assert problem(tmp_path) is None
    for bad in ('{"files": {"../x": {"bytes": 1, "sha256": "a"}}}', "[", '{"files": []}',
                '{"files": {"report.json": {"bytes": "2", "sha256": "a"}}}'):
        (tmp_path / MANIFEST).write_text(bad)
        why = problem(tmp_path)
        assert why is not None and str(tmp_path / MANIFEST) in why
    (tmp_path / MANIFEST).write_text(json.dumps({"files": {"report.json": {"bytes": 2, "sha256": "0" * 64}}}))
    assert f"{tmp_path / 'report.json'}: does not match" in (problem(tmp_path) or "")
