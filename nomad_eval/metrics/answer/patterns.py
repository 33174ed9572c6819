"""Golden patterns matched with a guard: a pattern that would take exponential time gives None, not a hang.

The engine, flags and time limit live in nomad_eval/base/patterns.py, shared with the golden loader's check.
"""

from __future__ import annotations

from nomad_eval.base.patterns import TIMEOUT_S, search

__all__ = ["TIMEOUT_S", "search"]
