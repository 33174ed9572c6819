"""A run owns its folder: default folders are one per run even when runs start together, a run holds its folder's
lock for its lifetime, and the manifest lists what the run wrote (hashed as written), not what is on disk. A folder
is complete or refused: marked while written, and only the seal replaces the mark."""

from __future__ import annotations

import json
import multiprocessing
import os
import threading
import time
from pathlib import Path

import pytest

from nomad_eval.base.atomic import WRITING, write_atomic
from nomad_eval.base.errors import NomadError
from nomad_eval.base.locking import run_folder_lock
from nomad_eval.base.runfolder import MANIFEST, DamagedRun, begin, check, problem, seal, settle
from nomad_eval.harness.rundir import default_run_dir
from nomad_eval.report.baseline import load_run


def _make_dir(cwd: str, start: float, q: multiprocessing.Queue[str]) -> None:
    os.chdir(cwd)
    while time.time() < start:  # every process asks at the same moment
        pass
    q.put(str(Path(default_run_dir(None, "retrieval")).resolve()))


def test_runs_started_together_get_a_folder_each(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    q: multiprocessing.Queue[str] = ctx.Queue()
    start = time.time() + 0.5
    procs = [ctx.Process(target=_make_dir, args=(str(tmp_path), start, q)) for _ in range(8)]
    for p in procs:
        p.start()
    folders = [q.get(timeout=20) for _ in procs]
    for p in procs:
        p.join(20)
    assert len(set(folders)) == 8, folders
    assert all(Path(f).is_dir() and Path(f).parent.parent == tmp_path / "outputs" for f in folders)


def test_an_explicit_folder_is_taken_as_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert default_run_dir("elsewhere", "app") == "elsewhere"  # made by the run that holds it, not here
    assert not Path("elsewhere").exists() and not Path("outputs").exists()


def test_a_second_run_into_a_held_folder_waits_then_refuses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with run_folder_lock(tmp_path, 5):
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(5)
    with pytest.raises(NomadError) as exc:
        with run_folder_lock(tmp_path, 0.3):
            pass
    assert exc.value.exit_code == 2 and f"the run folder {tmp_path} has been in use by process" in str(exc.value)
    assert capsys.readouterr().err.count(f"waiting for the run folder {tmp_path}") == 1
    release.set()
    holder.join()
    with run_folder_lock(tmp_path, 1):  # free again
        pass


def test_the_manifest_lists_what_the_run_wrote_not_what_is_on_disk(tmp_path: Path) -> None:
    begin(tmp_path)
    write_atomic(tmp_path / "report.json", '{"status": "ok"}')
    write_atomic(tmp_path / "cases.jsonl", '{"id": "a"}\n')
    (tmp_path / "cases.jsonl").write_text('{"id": "b"}\n')  # another process's file, same size, after ours
    seal(tmp_path)
    assert not (tmp_path / WRITING).exists()
    assert problem(tmp_path) == (f"{tmp_path / 'cases.jsonl'}: does not match the run's manifest "
                                 f"({tmp_path / MANIFEST}): changed after the run finished, or written by a later run "
                                 "that did not finish; re-run into a fresh folder")


def test_the_seal_removes_the_earlier_runs_files_this_run_did_not_write(tmp_path: Path) -> None:
    begin(tmp_path)
    write_atomic(tmp_path / "report.json", "{}")
    write_atomic(tmp_path / "app_outputs.jsonl", "{}\n")
    seal(tmp_path)
    (tmp_path / "notes.txt").write_text("mine")  # not a run's: kept
    begin(tmp_path)
    write_atomic(tmp_path / "report.json", '{"a": 1}')
    seal(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == [
        MANIFEST, "notes.txt", "report.json"]
    assert list(json.loads((tmp_path / MANIFEST).read_text())["files"]) == ["report.json"]


def _report(created: str) -> str:
    return json.dumps({"tier": "retrieval", "status": "ok", "provenance": {"created": created}})


def test_a_marked_folder_is_refused_by_every_reader_naming_it(tmp_path: Path) -> None:
    """The kill sequence: a fresh run killed between report.json and its manifest, then a re-run killed after
    cases.jsonl."""
    run = tmp_path / "run"
    run.mkdir()
    begin(run)
    write_atomic(run / "report.json", _report("2026-12-03T10:00:00+00:00"))
    begin(run)  # the re-run
    write_atomic(run / "cases.jsonl", '{"id": "a"}\n')
    why = problem(run)
    assert why is not None and why.startswith(f"{run}: incomplete: a run began writing it (cases.jsonl)")
    for read in (lambda: check(run), lambda: load_run(run)):
        with pytest.raises(DamagedRun) as exc:
            read()
        assert exc.value.exit_code == 2 and str(exc.value) == why


def test_a_mark_listing_nothing_leaves_the_earlier_run_readable(tmp_path: Path) -> None:
    write_atomic(tmp_path / "report.json", "{}")
    seal(tmp_path)
    begin(tmp_path)  # a re-run that failed before writing a result
    assert problem(tmp_path) is None
    settle(tmp_path)
    assert not (tmp_path / WRITING).exists() and problem(tmp_path) is None


def test_a_report_of_a_sealing_version_without_its_manifest_is_refused(tmp_path: Path) -> None:
    (tmp_path / "report.json").write_text(_report("2026-12-02T15:00:00+00:00"))
    why = problem(tmp_path)
    assert why is not None and why.startswith(f"{tmp_path}: incomplete: no {MANIFEST}, though the run that wrote")
    (tmp_path / "report.json").write_text(_report("2026-11-30T15:00:00+00:00"))  # from before manifests
    assert problem(tmp_path) is None


def test_a_sweep_makes_no_single_run_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Hydra reads hydra.run.dir in a sweep too, whose jobs write under hydra.sweep.dir: nothing is made then."""
    monkeypatch.chdir(tmp_path)
    default_run_dir(None, "retrieval", "RunMode.MULTIRUN")
    assert not (tmp_path / "outputs").exists()
    assert Path(default_run_dir(None, "retrieval", "RunMode.RUN")).is_dir()
