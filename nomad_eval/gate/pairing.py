"""Which questions two runs compare on: the ones both hold with the same judgement, and what each side lacks.

A golden added since the baseline is scored but not gated; one removed is listed; one whose judgement changed
(its relevant documents, patterns or refusal flag) is listed and not gated, since its two values answer different
questions. A question the run's suite holds but the run did not measure is "not measured", which fails.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from nomad_eval.core.questions import Question


@dataclass(frozen=True)
class QuestionSets:
    common: list[str] = field(default_factory=list)       # keys compared (and gated)
    added: list[str] = field(default_factory=list)        # goldens the baseline did not have
    removed: list[str] = field(default_factory=list)      # goldens the run's suite no longer has
    changed: list[str] = field(default_factory=list)      # same id, different judgement
    missing: list[str] = field(default_factory=list)      # in the run's suite, absent from its records
    unstable: list[str] = field(default_factory=list)     # left out of both sides (compare.exclude_unstable)
    infra: list[str] = field(default_factory=list)        # every call of the run's failed in the infrastructure
    quarantined: list[str] = field(default_factory=list)  # known flaky (goldens/quarantine.yaml): run, not gated

    def listing(self) -> dict[str, list[str]]:
        """The non-empty sets by the names reports use."""
        named = {"added": self.added, "removed": self.removed, "changed": self.changed,
                 "not measured": self.missing, "unstable, left out": self.unstable,
                 "infrastructure failed, not gated": self.infra, "quarantined, not gated": self.quarantined}
        return {k: v for k, v in named.items() if v}


def _key(mode: str, qid: str) -> str:
    return f"{mode}:{qid}" if mode else qid


def pair_questions(base: Sequence[Question], run: Sequence[Question], *,
                   base_goldens: Mapping[str, str] | None = None, run_goldens: Mapping[str, str] | None = None,
                   exclude_unstable: bool = False, infra: Sequence[str] = (),
                   quarantined: Callable[[str], bool] | None = None) -> QuestionSets:
    """`*_goldens`: golden id -> judgement hash, as each side's report recorded its suite (None: not recorded,
    then the side's own records stand for its suite and judgements are taken as unchanged). `infra`: keys of the
    run's questions with a call the infrastructure failed; one left with no record is listed apart, not missing
    (whether the run measured enough is the gate's max_infra). `quarantined(key)`: a known-flaky question, left
    out of the gated ones and listed."""
    b_by, r_by = {q.key: q for q in base}, {q.key: q for q in run}
    modes = sorted({q.mode or "" for q in [*base, *run]})
    run_ids = list(run_goldens or dict.fromkeys(q.id for q in run))
    base_ids = set(base_goldens or {q.id for q in base})
    changed = _changed(base_goldens or {}, run_goldens or {})
    unstable = _unstable(b_by, r_by) if exclude_unstable else set()
    expected = _keys(run_ids, modes)
    common = _common(b_by, r_by, set(run_ids) - changed, unstable)
    held = _held(common, quarantined)
    return QuestionSets(
        common=[k for k in common if k not in set(held)],
        quarantined=held,
        added=_keys([i for i in run_ids if i not in base_ids], modes),
        removed=sorted(k for k, q in b_by.items() if q.id not in set(run_ids)),
        changed=sorted(_keys(sorted(changed), modes)),
        missing=_missing(expected, r_by, infra),
        unstable=sorted(unstable),
        infra=sorted({k for k in infra if k not in r_by}),
    )


def _held(common: Sequence[str], quarantined: Callable[[str], bool] | None) -> list[str]:
    """The common keys a known-flaky check sets apart."""
    return [k for k in common if quarantined is not None and quarantined(k)]


def _missing(expected: Sequence[str], run: Mapping[str, Question], infra: Sequence[str]) -> list[str]:
    """Keys the run's suite expects that it neither recorded nor lost to the infrastructure."""
    return [k for k in expected if k not in run and k not in set(infra)]


def _keys(ids: Sequence[str], modes: Sequence[str]) -> list[str]:
    return [_key(m, i) for i in ids for m in modes]


def _common(base: Mapping[str, Question], run: Mapping[str, Question], wanted: set[str], unstable: set[str]
            ) -> list[str]:
    """The baseline's questions, in its order, that the run holds with the same judgement."""
    return [k for k, q in base.items() if k in run and q.id in wanted and k not in unstable]


def _changed(base: Mapping[str, str], run: Mapping[str, str]) -> set[str]:
    """Ids on both sides whose judgement hash differs."""
    return {i for i in base.keys() & run.keys() if base[i] != run[i]}


def _unstable(base: Mapping[str, Question], run: Mapping[str, Question]) -> set[str]:
    return {k for side in (base, run) for k, q in side.items() if q.unstable}
