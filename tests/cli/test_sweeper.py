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


def _compose_both(batch: list[list[str]]) -> list[tuple[object, object]]:
    """Each job's config as Hydra composes it, beside the one the sweeper derives from the batch's first job."""
    from omegaconf import OmegaConf

    register_resolvers()
    pairs = []
    with initialize_config_dir(config_dir=str(REPO / "nomad_eval" / "conf"), version_base="1.3"):
        master = compose("config", return_hydra_config=True)
        loader = GlobalHydra.instance().config_loader()
        once = ComposedOnce(loader)
        for overrides in batch:
            once.validate(master, overrides)
        for overrides in batch:
            ours = once.load_sweep_config(master, overrides)
            hydras = loader.load_sweep_config(master, overrides)
            pairs.append((ours, hydras))
            assert OmegaConf.is_struct(ours) and not OmegaConf.is_readonly(ours.hydra)
        return [(OmegaConf.to_yaml(a), OmegaConf.to_yaml(b)) for a, b in pairs]


def test_jobs_that_differ_in_plain_values_get_hydras_own_config() -> None:
    from hydra_plugins.nomad_eval_sweeper.sweeper import derive

    common = ["quiet=true", "pipeline=nomad", "stats.resamples=500"]
    batch = [[*common, f"threshold={t}", f"pipeline.top_k={k}", f"limit={lim}", f"verbose={v}", f"suite={s}",
              f"compare.reference={r}"]
             for t, k, lim, v, s, r in [(0.2, 5, "null", "false", "core", "null"),
                                        (0.35, 3, "7", "true", "hard", "'0'"),
                                        (0.5, 10, "null", "false", "core", "'${suite}'")]]
    for ours, hydras in _compose_both(batch):
        assert ours == hydras
    register_resolvers()
    with initialize_config_dir(config_dir=str(REPO / "nomad_eval" / "conf"), version_base="1.3"):
        loader = GlobalHydra.instance().config_loader()
        master = compose("config", return_hydra_config=True)
        first = loader.load_sweep_config(master, batch[0])
        assert derive(first, batch[0], batch[1]) is not None  # the equality above was the derived path's
        # Everything else is composed in full: a group's choice, an addition, a list value, a hydra key.
        for old, new in [("pipeline=nomad", "pipeline=default"), ("quiet=true", "+quiet=true"),
                         ("stats.resamples=500", "stats.resamples=[1,2]"), ("threshold=0.2", "hydra.job.chdir=true")]:
            changed = [new if o == old else o for o in batch[0]]
            base = ["hydra.job.chdir=false" if o == old and new.startswith("hydra.") else o for o in batch[0]]
            assert derive(first, base, changed) is None, new


def test_the_first_job_from_the_sweeps_own_config_is_hydras_composition() -> None:
    """The sweep's config is composed without the swept value (Hydra skips a sweep override): the first job is
    derived from it, and must equal what Hydra composes for the job."""
    from hydra.types import RunMode
    from omegaconf import OmegaConf

    register_resolvers()
    with initialize_config_dir(config_dir=str(REPO / "nomad_eval" / "conf"), version_base="1.3"):
        loader = GlobalHydra.instance().config_loader()
        common = ["quiet=true", "pipeline.top_k=3"]
        for sweep, jobs in [("threshold=0.2,0.3", ["threshold=0.2", "threshold=0.3"]),
                            ("threshold=range(0.1,0.3,0.1)", ["threshold=0.1", "threshold=0.2"])]:
            master = loader.load_configuration("config", ["hydra.mode=MULTIRUN", *common, sweep], RunMode.MULTIRUN)
            counted = _Counting(loader)
            once = ComposedOnce(counted)
            batch = [[*common, j] for j in jobs]
            for overrides in batch:
                once.validate(master, overrides)
            assert counted.composed == 0  # every job derived, the first from the sweep's own config
            for overrides in batch:
                ours, hydras = once.load_sweep_config(master, overrides), loader.load_sweep_config(master, overrides)
                assert OmegaConf.to_yaml(ours) == OmegaConf.to_yaml(hydras)
        # A swept group is composed in full: the sweep's config has no such value to assign.
        master = loader.load_configuration("config", ["hydra.mode=MULTIRUN", "pipeline=default,nomad"],
                                           RunMode.MULTIRUN)
        counted = _Counting(loader)
        once = ComposedOnce(counted)
        once.validate(master, ["pipeline=nomad"])
        assert counted.composed == 1
        assert OmegaConf.to_yaml(once.load_sweep_config(master, ["pipeline=nomad"])) == OmegaConf.to_yaml(
            loader.load_sweep_config(master, ["pipeline=nomad"]))


class _Counting:
    """A config loader that counts the compositions asked of it."""

    def __init__(self, loader: object) -> None:
        self._loader, self.composed = loader, 0

    def load_sweep_config(self, master: object, overrides: list[str]) -> object:
        self.composed += 1
        return self._loader.load_sweep_config(master, overrides)  # type: ignore[attr-defined]


def test_in_process_jobs_freeze_their_survivors_until_the_sweep_ends() -> None:
    import gc

    from hydra_plugins.nomad_eval_sweeper.sweeper import _settling

    gc.unfreeze()
    ran: list[int] = []
    task = _settling(lambda cfg: ran.append(1) or 0)
    assert task(None) == 0 and ran == [1]  # type: ignore[arg-type]
    try:
        assert gc.get_freeze_count() > 0  # what outlived the job is skipped by the next jobs' collections
    finally:
        gc.unfreeze()
    assert gc.get_freeze_count() == 0
