"""trec_eval-equivalent scoring of any run against any qrels, through the registry's ranking kernels.

`evaluate(qrels, run, ["ndcg@10", "recall@10", "rr"])` gives, per query, what pytrec_eval gives for ndcg_cut_10,
recall_10 and recip_rank: the same ordering of a scored run (score descending, ties by document id descending),
the same relevance (grade > 0) and graded nDCG gain.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import nomad_eval.metrics  # noqa: F401  (imports every metric module, so the registry is complete)
from nomad_eval.metrics.registry import REGISTRY, MetricName, MetricSpec, RankingKernel

Qrels = Mapping[str, Mapping[str, int]]
Run = Mapping[str, Mapping[str, float] | Sequence[str]]


def ranking(scored: Mapping[str, float]) -> list[str]:
    """Document ids in trec_eval's order: score descending, ties by id descending (string compare)."""
    return sorted(scored, key=lambda d: (scored[d], d), reverse=True)


def measure(name: str) -> tuple[MetricSpec, RankingKernel, int | None]:
    """The spec, kernel and cut-off of a reported ranking measure name such as `ndcg@10` or `rr`."""
    parsed = MetricName.parse(name)  # a cut-off that is not a whole number from 1 is refused here
    family = parsed.family
    spec = REGISTRY.get(family) if parsed.mode is None else None
    if spec is None or spec.kernel is None or spec.level != "document":
        known = ", ".join(s.family + ("@k" if s.parametrized else "") for s in REGISTRY.values()
                          if s.kernel is not None and s.level == "document")
        raise ValueError(f"unknown measure {name!r}: not a document ranking measure (known: {known})")
    if not spec.parametrized:
        if parsed.k is not None:
            raise ValueError(f"measure {name!r}: {family} takes no @k")
        return spec, spec.kernel, None
    if parsed.k is None:
        raise ValueError(f"measure {name!r}: {family} needs a cut-off, e.g. {family}@10")
    return spec, spec.kernel, parsed.k


def _ranked(qid: str, entry: Mapping[str, float] | Sequence[str] | None) -> list[str]:
    if entry is None:
        return []
    if isinstance(entry, Mapping):
        return ranking(entry)
    if isinstance(entry, str):
        raise ValueError(f"run for query {qid!r} is a string; expected a ranked list of ids or {{id: score}}")
    ranked = list(entry)
    if len(set(ranked)) != len(ranked):
        raise ValueError(f"run for query {qid!r} lists a document more than once")
    return ranked


def evaluate(qrels: Qrels, run: Run, measures: Iterable[str]) -> dict[str, dict[str, float | None]]:
    """Per query of `qrels` with at least one relevant document (grade > 0), each measure by its reported name.

    A scored run (`{doc: score}`) is ordered as trec_eval orders it; a list run is taken in its order. A query
    the run does not hold is scored on an empty ranking. Unknown measures and cut-offs below 1 raise ValueError.
    """
    parsed = [(name, *measure(name)) for name in dict.fromkeys(measures)]
    out: dict[str, dict[str, float | None]] = {}
    for qid, judged in qrels.items():
        if not any(g > 0 for g in judged.values()):
            continue
        ranked = _ranked(qid, run.get(qid))
        out[qid] = {name: kernel(ranked, judged, k) for name, _spec, kernel, k in parsed}
    return out
