"""store=server when no Qdrant server answers: one clear line and exit 1, not Hydra's wrapped traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import MINI, run_cli

pytestmark = pytest.mark.slow  # runs the tool in a subprocess


def test_an_unreachable_qdrant_server_is_one_clear_line(tmp_path: Path, data_dir: Path) -> None:
    r = run_cli("tier=retrieval", *MINI, "store=server", "store.url=http://127.0.0.1:9", "store.timeout=2",
                f"paths.data_dir={data_dir}", f"paths.run_dir={tmp_path / 'run'}", "quiet=true")
    assert r.returncode == 2
    assert "error: Qdrant server at http://127.0.0.1:9 is not usable" in r.stderr
    assert "Error executing job" not in r.stderr and "UserWarning" not in r.stderr
