"""Threads per job: the cores available shared by the jobs a parallel launcher runs at once."""

from __future__ import annotations

import os

from nomad_eval.base.cpus import available_cores, parallel_jobs, threads_per_job
from nomad_eval.cli.resolvers import register_resolvers


def test_cores_follow_the_affinity_mask() -> None:
    assert available_cores() == len(os.sched_getaffinity(0))


def test_joblib_counts_and_the_share() -> None:
    cores = available_cores()
    assert [parallel_jobs(n) for n in (None, 0, 1, 3)] == [1, 1, 1, 3]
    assert parallel_jobs(-1) == cores and parallel_jobs(-cores - 5) == 1
    assert threads_per_job(None) == cores
    assert threads_per_job(2) == max(1, cores // 2)
    assert threads_per_job(cores * 4) == 1  # never zero


def test_the_shipped_model_configs_resolve_to_the_machines_share(make_cfg) -> None:  # type: ignore[no-untyped-def]
    register_resolvers()
    cfg = make_cfg("model=smollm2")
    # Composed outside a launcher: one job, every core.
    assert cfg.model.threads == available_cores() and cfg.embedder.threads == available_cores()
    assert make_cfg("model=smollm2", "model.threads=1").model.threads == 1
