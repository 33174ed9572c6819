"""The measuring core, usable from a notebook: evaluate runs against qrels, and compare per-question records.

Qrels and runs follow pytrec_eval: `{query_id: {doc_id: relevance}}` and `{query_id: {doc_id: score}}` (or a
ranked list). Every measure's name, kernel, direction and tolerance come from `nomad_eval.metrics.registry`.
Names load on first use: `core.evaluate` must not pull in scipy, which only the statistics need.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

# Light, and bound here so the function `evaluate` (not its module of the same name) is what `core.evaluate` is.
from nomad_eval.core.evaluate import Qrels, Run, evaluate, ranking
from nomad_eval.core.questions import Question, questions_from_cases

_WHERE = {
    "Interval": "stats", "mean_interval": "stats", "minimum_detectable_effect": "stats", "paired_interval": "stats",
    "Summary": "summary", "summarize": "summary",
}
# The verdict over these records is the gate's (nomad_eval.gate.compare), a floor above: see nomad_eval's API.
__all__ = ["Interval", "Qrels", "Question", "Run", "Summary", "evaluate", "mean_interval",
           "minimum_detectable_effect", "paired_interval", "questions_from_cases", "ranking", "summarize"]


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(import_module(f"nomad_eval.core.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'nomad_eval.core' has no attribute {name!r}")
