"""nomad-eval: tells a RAG code regression from a small local model asked too much.

The command line (`python -m nomad_eval`) is the main interface. For code, this is the curated API; the
modules behind it may move.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from nomad_eval.base.errors import InvalidInput, NomadError

if TYPE_CHECKING:  # the measuring core's names stay untyped here, as nomad_eval.core loads them lazily too
    from nomad_eval.data.golden import Golden, load_goldens
    from nomad_eval.metrics.registry import REGISTRY, MetricSpec, spec_for
    from nomad_eval.rag.pipeline import Pipeline, RetrievedChunk
    from nomad_eval.report.schema import Identity, Report

__version__ = "0.1.0"

# Every `nomad_eval.*` import runs this file first, so the API loads on first use: `nomad-eval --help` and the
# corpus check then import neither numpy, pydantic's models nor scipy.
_LAZY = {
    **dict.fromkeys(["Interval", "Qrels", "Question", "Run", "evaluate", "questions_from_cases", "summarize"],
                    "nomad_eval.core"),
    "Verdict": "nomad_eval.gate.outcome",
    "compare_questions": "nomad_eval.gate.compare",
    "read_cases": "nomad_eval.report.baseline",
    **dict.fromkeys(["Golden", "load_goldens"], "nomad_eval.data.golden"),
    **dict.fromkeys(["REGISTRY", "MetricSpec", "spec_for"], "nomad_eval.metrics.registry"),
    **dict.fromkeys(["Pipeline", "RetrievedChunk"], "nomad_eval.rag.pipeline"),
    **dict.fromkeys(["Identity", "Report"], "nomad_eval.report.schema"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'nomad_eval' has no attribute {name!r}")


__all__ = ["REGISTRY", "Golden", "Identity", "Interval", "InvalidInput", "MetricSpec", "NomadError", "Pipeline",
           "Qrels", "Question", "Report", "RetrievedChunk", "Run", "Verdict", "__version__", "compare_questions",
           "evaluate", "load_goldens", "questions_from_cases", "read_cases", "spec_for", "summarize"]
