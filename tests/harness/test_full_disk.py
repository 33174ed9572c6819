"""A full disk anywhere ends with "no space left on <path>" and exit 1, leaving no partial file; a read-only
project can still check its corpus and show its status.

A real full disk is a small tmpfs, which needs root (or passwordless sudo, as on GitHub's runners); without either
these tests skip. The run folder's half is also covered without root by tests/harness/test_run_folder.py, through a
file size limit.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import MINI, run_cli

pytestmark = pytest.mark.slow  # the tool in a subprocess: today's failure is a SIGBUS, which would end pytest


def _mount_command() -> list[str] | None:
    if os.geteuid() == 0:
        return []
    if shutil.which("sudo") and subprocess.run(["sudo", "-n", "true"], capture_output=True).returncode == 0:
        return ["sudo", "-n"]
    return None


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Callable[[str, str], Path]]:
    """mount(name, size): an empty tmpfs of `size` (e.g. "8m") at tmp_path/name, unmounted after the test."""
    prefix = _mount_command()
    mounted: list[Path] = []

    def mount(name: str, size: str) -> Path:
        where = tmp_path / name
        where.mkdir()
        r = subprocess.run([*(prefix or []), "mount", "-t", "tmpfs", "-o", f"size={size},mode=0777", "tmpfs",
                            str(where)], capture_output=True, text=True)
        if prefix is None or r.returncode != 0:
            pytest.skip(f"cannot mount a small tmpfs here (root or passwordless sudo needed): {r.stderr.strip()}")
        mounted.append(where)
        return where

    yield mount
    for where in mounted:
        subprocess.run([*(prefix or []), "umount", "-l", str(where)], capture_output=True)


def _no_partial_file(folder: Path) -> None:
    """No temporary file left; the run folder's lock and (a run that did not finish) its mark are the folder's own."""
    left = [p.name for p in folder.rglob("*") if p.name.startswith(".") and p.is_file() or p.suffix == ".tmp"]
    assert set(left) <= {".lock", ".incomplete"}, left


def test_a_full_data_dir_is_named_not_a_sigbus(small_disk: Callable[[str, str], Path], tmp_path: Path) -> None:
    data = small_disk("data", "8m")
    r = run_cli("tier=retrieval", *MINI, f"paths.data_dir={data}", f"paths.run_dir={tmp_path / 'run'}",
                "quiet=true")
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    assert f"no space left on {data / 'qdrant-edge'}: the embedded store may need up to" in r.stderr
    assert "Traceback" not in r.stderr
    _no_partial_file(data)


def test_a_data_dir_too_full_for_the_embedding_cache_is_named(small_disk: Callable[[str, str], Path],
                                                              tmp_path: Path) -> None:
    data = small_disk("tiny", "24k")  # not even room for SQLite's shared-memory file
    r = run_cli("tier=retrieval", *MINI, f"paths.data_dir={data}", f"paths.run_dir={tmp_path / 'run'}",
                "quiet=true")
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    assert f"no space left on {data} (opening the embedding cache: " in r.stderr and "Traceback" not in r.stderr


def test_a_full_run_folder_is_named_and_leaves_no_partial_file(small_disk: Callable[[str, str], Path],
                                                                data_dir: Path) -> None:
    # Room for Hydra's own files and the first results, not for all of them.
    run = small_disk("run", "60k")
    r = run_cli("tier=retrieval", *MINI, f"paths.data_dir={data_dir}", f"paths.run_dir={run}", "quiet=true")
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    assert f"no space left on {run} (writing " in r.stderr
    assert "Traceback" not in r.stderr and "polars" not in r.stderr
    _no_partial_file(run)
    # Sealed as the failed run it is (the failure record fitted), or still marked incomplete: never taken for a run
    # that finished.
    assert (run / "manifest.json").exists() != (run / ".incomplete").exists()
    assert json.loads((run / "report.json").read_text())["status"] == "failed"


def test_a_read_only_project_can_check_and_show_status(small_disk: Callable[[str, str], Path], tmp_path: Path) -> None:
    project = small_disk("project", "8m")
    init = run_cli("init", str(project), cwd=tmp_path)
    assert init.returncode == 0, init.stderr
    r = subprocess.run([*(_mount_command() or []), "mount", "-o", "remount,ro", str(project)], capture_output=True)
    assert r.returncode == 0, r.stderr
    check = run_cli("tier=corpus", "action=check", cwd=project)
    assert check.returncode == 0, check.stderr[-2000:]
    assert "suite core: 3 goldens — ok" in check.stdout and "Traceback" not in check.stderr
    status = run_cli("tier=corpus", "action=status", cwd=project)
    assert status.returncode == 0, status.stderr[-2000:]
    assert f"not opened: {project} cannot be written (read-only)" in status.stdout
    assert "Traceback" not in status.stderr


def test_a_rerun_into_a_good_run_on_a_full_disk_leaves_one_run(small_disk: Callable[[str, str], Path],
                                                                data_dir: Path, tmp_path: Path) -> None:
    """Issue 32's case: the disk fills during a re-run into a folder holding a good run; the folder must not end
    as new results beside the old report, which promote accepted."""
    run = small_disk("run", "1m")
    common = ("tier=retrieval", *MINI, f"paths.data_dir={data_dir}", f"paths.run_dir={run}", "quiet=true")
    assert run_cli(*common).returncode == 0
    # Room for the re-run's first results, not for all of them.
    room = (run / "cases.jsonl").stat().st_size + 8 * 1024
    with (run / ".filler").open("wb") as f:
        f.write(b"\0" * max(0, shutil.disk_usage(run).free - room))
    r = run_cli(*common, "threshold=0.5")
    (run / ".filler").unlink()
    assert r.returncode == 2 and f"no space left on {run} (writing " in r.stderr, r.stderr[-2000:]
    assert json.loads((run / "report.json").read_text())["status"] == "failed"
    assert not (run / "report.html").exists()  # the earlier run's
    # The manifest, when the failure record and it fitted, lists the failed run's own files only.
    if (run / "manifest.json").exists():
        assert set(json.loads((run / "manifest.json").read_text())["files"]) <= {
            p.name for p in run.iterdir() if p.is_file()} - {"report.html", "report.md", "trace.jsonl"}
    promote = run_cli("tier=promote", f"promote.run={run}", f"paths.baselines_dir={tmp_path / 'b'}")
    assert promote.returncode == 2 and "a failed run cannot become a baseline" in promote.stderr
    assert not (tmp_path / "b").exists()


def test_a_read_only_project_names_what_browse_and_promote_cannot_write(
        small_disk: Callable[[str, str], Path], data_dir: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert run_cli("tier=retrieval", *MINI, f"paths.data_dir={data_dir}", f"paths.run_dir={run}",
                   "quiet=true").returncode == 0
    project = small_disk("project", "8m")
    assert run_cli("init", str(project), cwd=tmp_path).returncode == 0
    r = subprocess.run([*(_mount_command() or []), "mount", "-o", "remount,ro", str(project)], capture_output=True)
    assert r.returncode == 0, r.stderr
    browse = run_cli("tier=browse", cwd=project)
    assert browse.returncode == 2 and f"cannot write {project / 'runs.html'}: Read-only file system" in browse.stderr
    promote = run_cli("tier=promote", f"promote.run={run}", f"paths.data_dir={data_dir}", cwd=project)
    assert promote.returncode == 2, promote.stderr[-2000:]
    assert f"cannot write {project / 'baselines'}" in promote.stderr
    assert "promoted" not in promote.stdout  # nothing was promoted, and nothing says so
    assert "Traceback" not in browse.stderr + promote.stderr
