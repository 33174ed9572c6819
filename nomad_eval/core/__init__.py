"""The measuring core, usable from a notebook: evaluate runs against qrels, and compare per-question records.

Qrels and runs follow pytrec_eval: `{query_id: {doc_id: relevance}}` and `{query_id: {doc_id: score}}` (or a
ranked list). Every measure's name, kernel, direction and tolerance come from `nomad_eval.metrics.registry`.
"""

from nomad_eval.core.compare import MetricVerdict, Verdict, compare_questions
from nomad_eval.core.evaluate import Qrels, Run, evaluate, ranking
from nomad_eval.core.questions import Question, questions_from_cases
from nomad_eval.core.stats import Interval, mean_interval, minimum_detectable_effect, paired_interval
from nomad_eval.core.summary import Summary, summarize

__all__ = ["Interval", "MetricVerdict", "Qrels", "Question", "Run", "Summary", "Verdict", "compare_questions",
           "evaluate", "mean_interval", "minimum_detectable_effect", "paired_interval", "questions_from_cases",
           "ranking", "summarize"]
