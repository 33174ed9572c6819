"""nomad-eval: tells a RAG code regression from a small local model asked too much.

The command line (`python -m nomad_eval`) is the main interface. For code, this is the curated API; the
modules behind it may move.
"""

from typing import Any

from nomad_eval.base.errors import InvalidInput, NomadError
from nomad_eval.data.golden import Golden, load_goldens
from nomad_eval.metrics.registry import REGISTRY, MetricSpec, spec_for
from nomad_eval.rag.pipeline import Pipeline, RetrievedChunk
from nomad_eval.report.schema import Identity, Report

__version__ = "0.1.0"

# The measuring core pulls in scipy; it loads on first use so `python -m nomad_eval --help` and the corpus
# check stay light.
_CORE = {"Interval", "Qrels", "Question", "Run", "Verdict", "compare_questions", "evaluate", "questions_from_cases",
         "summarize"}


def __getattr__(name: str) -> Any:
    if name in _CORE:
        import nomad_eval.core as core

        return getattr(core, name)
    raise AttributeError(f"module 'nomad_eval' has no attribute {name!r}")

__all__ = ["REGISTRY", "Golden", "Identity", "Interval", "InvalidInput", "MetricSpec", "NomadError", "Pipeline",
           "Qrels", "Question", "Report", "RetrievedChunk", "Run", "Verdict", "__version__", "compare_questions",
           "evaluate", "load_goldens", "questions_from_cases", "spec_for", "summarize"]
