"""The default sweeper composes each in-process job once, and still refuses a bad batch before any job runs."""

from __future__ import annotations

from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from hydra_plugins.nomad_eval_sweeper.sweeper import ComposedOnce
from nomad_eval.cli.resolvers import register_resolvers
from tests.conftest import MINI, REPO, run_cli


def test_the_launcher_gets_the_config_composed_at_validation_once() -> None:
    register_resolvers()
    with initialize_config_dir(config_dir=str(REPO / "nomad_eval" / "conf"), version_base="1.3"):
        master = compose("config", return_hydra_config=True)
        once = ComposedOnce(GlobalHydra.instance().config_loader())
        once.validate(master, ["threshold=0.3"])
        first = once.load_sweep_config(master, ["threshold=0.3"])
        assert first.threshold == 0.3 and list(first.hydra.overrides.task) == ["threshold=0.3"]
        # Handed over once: a second request composes anew, an equal config in a new object.
        second = once.load_sweep_config(master, ["threshold=0.3"])
        assert second is not first and second == first
        assert once.load_sweep_config(master, ["threshold=0.4"]).threshold == 0.4


def test_a_batch_with_a_bad_job_fails_before_any_job_runs(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    r = run_cli(f"paths.data_dir={tmp_path / 'data'}", *MINI, "quiet=true", "pipeline=default,no-such-pipeline",
                f"hydra.sweep.dir={sweep}", "-m")
    assert r.returncode == 1
    assert "no-such-pipeline" in r.stderr
    assert not [p for p in sweep.iterdir() if p.is_dir()]  # not even the first, valid job ran
