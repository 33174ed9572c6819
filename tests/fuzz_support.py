"""Bounded property-based fuzzing for the loaders, counting the inputs each fuzz test tried.

Each fuzz test runs its hypothesis property through `run`, which returns how many inputs the property saw; the
counts are printed at the end of the session (tests/conftest.py, `pytest_terminal_summary`), with or without -s.
In the suite the examples are derandomized, so a run is repeatable; NOMAD_FUZZ_SCALE=20 tries twenty times as
many inputs with a fresh random seed, to hunt for new crashes locally.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from hypothesis import HealthCheck, settings

SCALE = max(1, int(os.environ.get("NOMAD_FUZZ_SCALE", "1")))
TRIED: dict[str, int] = {}


def fuzz_settings(max_examples: int) -> settings:
    return settings(max_examples=max_examples * SCALE, deadline=None, derandomize=SCALE == 1, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


def tried(name: str) -> None:
    """Count one input seen by the property named `name` (call it first thing in the property)."""
    TRIED[name] = TRIED.get(name, 0) + 1


def run(name: str, prop: Callable[[], None]) -> int:
    """Run a @given property and return how many inputs it tried."""
    TRIED[name] = 0
    prop()
    return TRIED[name]
