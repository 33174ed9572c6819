"""nomad-eval: tells a RAG code regression from a small local model asked too much.

The command line (`python -m nomad_eval`) is the main interface. For code, this is the curated API; the
modules behind it may move.
"""

from nomad_eval.base.errors import InvalidInput, NomadError
from nomad_eval.data.golden import Golden, load_goldens
from nomad_eval.metrics.registry import REGISTRY, MetricSpec, spec_for
from nomad_eval.rag.pipeline import Pipeline, RetrievedChunk
from nomad_eval.report.schema import Identity, Report

__version__ = "0.1.0"

__all__ = ["REGISTRY", "Golden", "Identity", "InvalidInput", "MetricSpec", "NomadError", "Pipeline", "Report",
           "RetrievedChunk", "__version__", "load_goldens", "spec_for"]
