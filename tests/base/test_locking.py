"""A process waiting for the data-dir lock says whom it waits for, once; quiet says nothing; a timeout refuses."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from nomad_eval.base.errors import NomadError
from nomad_eval.base.locking import data_dir_lock


def _hold(data_dir: Path, seconds: float, held: threading.Event) -> None:
    with data_dir_lock(data_dir, 5):
        held.set()
        time.sleep(seconds)


def test_a_waiting_process_names_the_holder_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    held = threading.Event()
    holder = threading.Thread(target=_hold, args=(tmp_path, 0.6, held))
    holder.start()
    held.wait(5)
    with data_dir_lock(tmp_path, 10):
        pass
    holder.join()
    err = capsys.readouterr().err
    assert err.count("waiting for the store in") == 1
    assert f"held by process {os.getpid()}" in err  # a thread of this very process held it


def test_quiet_waits_silently_and_a_timeout_refuses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    held = threading.Event()
    holder = threading.Thread(target=_hold, args=(tmp_path, 1.0, held))
    holder.start()
    held.wait(5)
    with pytest.raises(NomadError, match="busy in another process"):
        with data_dir_lock(tmp_path, 0.3, quiet=True):
            pass
    holder.join()
    assert capsys.readouterr().err == ""
