"""Instability: the share of questions whose repeats disagree on pass or fail.

A question value of 1 when its outcome flips between repeats, 0 when they agree; measured only with two or more
judged repeats. Gated, so a change that makes answers flaky fails by name instead of vanishing from the means.
"""

from __future__ import annotations

from nomad_eval.metrics.registry import MetricSpec, register

SPEC = register(MetricSpec(
    "instability", "share of questions whose pass/fail outcome differs between repeats (2+ repeats)",
    direction="lower", tolerance=0.05, tier="generation", binary=True, headline=True,
))
