"""How many threads a model may use: the cores this process may run on, shared by the jobs running at once.

llama.cpp's threads spin while they wait, so two jobs that each take every core run far slower than one after
the other (measured on 2 cores: about a call a minute with two jobs of 2 threads, seconds with 1 thread each).
"""

from __future__ import annotations

import os


def available_cores() -> int:
    """Cores this process may be scheduled on (the affinity mask, which containers and `taskset` narrow)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def parallel_jobs(n_jobs: int | None) -> int:
    """joblib's n_jobs as a count: None or 0 means one job; -1 all cores, -2 all but one, and so on."""
    if not n_jobs:
        return 1
    if n_jobs < 0:
        return max(1, available_cores() + 1 + n_jobs)
    return n_jobs


def threads_per_job(n_jobs: int | None) -> int:
    return max(1, available_cores() // parallel_jobs(n_jobs))
