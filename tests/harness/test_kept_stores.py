"""An in-process sweep's jobs share the opened store; it is closed when the sweep ends, and only then."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from omegaconf import DictConfig

from nomad_eval.backends.edge import EdgeStore
from nomad_eval.base.errors import NomadError
from nomad_eval.harness.runtime import Runtime, keep_stores_open
from tests.conftest import MINI


def _reopen(cfg: DictConfig) -> None:
    """Open the shard directly: fails (WouldBlock) while this process still holds it open."""
    EdgeStore(str(cfg.store.path), dim=384).close()


def test_jobs_share_one_open_store_until_the_sweep_ends(make_cfg: Callable[..., DictConfig]) -> None:
    cfg_a, cfg_b = make_cfg(*MINI, "threshold=0.2"), make_cfg(*MINI, "threshold=0.4")
    with keep_stores_open():
        with Runtime(cfg_a).store() as first:
            pass
        with Runtime(cfg_b).store() as second:
            assert second is first  # the next job got the same open store
        with pytest.raises(NomadError, match="open in another process"):
            _reopen(cfg_a)  # still open between jobs
        # Another store setting in the same data dir: the kept store is closed and this one opened instead.
        with Runtime(make_cfg(*MINI, "store.tag=__other__")).store() as third:
            assert third is not first
    _reopen(cfg_a)  # closed when the sweep ended
    # Outside a sweep each run opens and closes its own.
    with Runtime(cfg_a).store() as one:
        pass
    with Runtime(cfg_a).store() as two:
        assert two is not one


def test_the_store_is_closed_even_when_a_job_fails(make_cfg: Callable[..., DictConfig], tmp_path: Path) -> None:
    cfg = make_cfg(*MINI)
    with pytest.raises(RuntimeError, match="job failed"):
        with keep_stores_open():
            with Runtime(cfg).store():
                raise RuntimeError("job failed")
    _reopen(cfg)
