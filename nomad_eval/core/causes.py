"""Why each failed question failed: one cause label per question, from evidence the run already holds.

A question is one golden in one mode (`<mode>:<id>`, as in core/questions.py); every case (repeat) of a failed
question carries the question's label. Each rule is a pure function of a question's `Facts`: it returns a
`Finding` (label and the evidence that decided it) or None, and the first rule in `RULES` that fires wins. The
order follows the pipeline, so a label names the earliest stage that lost the answer:

    unstable > missed_refusal > retrieval_miss > dropped_by_budget > wrong_refusal > unsupported_claim
    > retrieved_but_ignored | beyond_the_model | injected_not_used > no_context

Evidence that is missing is said, never guessed: with no oracle run (mode=e2e), or an oracle that itself lost
passages to the budget, flipped or was not judged, a failure with the relevant passage injected is
`injected_not_used`, not "ignored" or "beyond the model".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TypedDict, TypeVar

from nomad_eval.metrics.aggregate import wilson
from nomad_eval.metrics.answer.measures import numbers
from nomad_eval.records import AnswerCase, CaseBase

# Label id → the name a report shows, in precedence order (the first rule that fires wins).
LABELS: dict[str, str] = {
    "unstable": "unstable",
    "missed_refusal": "missed refusal",
    "retrieval_miss": "retrieval miss",
    "dropped_by_budget": "dropped by the budget",
    "wrong_refusal": "wrong refusal",
    "unsupported_claim": "unsupported claim",
    "retrieved_but_ignored": "retrieved but ignored",
    "beyond_the_model": "beyond the model",
    "injected_not_used": "injected, not used (oracle cannot tell)",
    "no_context": "no context (noretrieval)",
}
# Numbers above this count as claims, as groundedness counts them: small ones ("2 cups", step 3) are too
# common in any text to tell invention from paraphrase.
NUMBER_FLOOR = 10.0


@dataclass(frozen=True)
class Oracle:
    """The same golden's oracle question, as evidence for an e2e failure."""

    outcome: str        # "pass" | "fail" | "unstable" | "not judged"
    complete: bool      # every oracle passage was injected (none lost to the budget)


@dataclass(frozen=True)
class Facts:
    key: str
    id: str
    mode: str
    expect_refusal: bool
    outcome: str                                     # "pass" | "fail" | "unstable" | "not judged"
    passes: int
    repeats: int
    relevant: list[str] = field(default_factory=list)
    retrieved: list[tuple[int, str, str]] = field(default_factory=list)  # (rank, doc_id, chunk_id)
    injected: list[str] = field(default_factory=list)                    # chunk ids, in prompt order
    dropped: int = 0                                 # passages the budget planner left out
    refusals: int = 0                                # repeats that declined
    unsupported: list[float] = field(default_factory=list)  # numbers stated in no repeat's context
    unfaithful: int = 0                              # repeats a faithfulness judge flagged
    judged: int = 0                                  # repeats a faithfulness judge gave a verdict on
    oracle: Oracle | None = None                     # e2e only; None: oracle not run
    noretrieval: str | None = None                   # e2e only: the noretrieval outcome, when run
    retrieval_known: bool = True                     # False: an app that exposed no document ids (tier=app)


@dataclass(frozen=True)
class Finding:
    label: str
    evidence: str


def _others(f: Facts) -> str:
    """The same golden's other modes, for e2e evidence: an oracle pass says the model could have answered."""
    if f.mode != "e2e":
        return ""
    oracle = "oracle not run" if f.oracle is None else f"oracle {f.oracle.outcome}"
    return f"; {oracle}" + (f", noretrieval {f.noretrieval}" if f.noretrieval else "")


def _injected_relevant(f: Facts) -> list[tuple[int, str]]:
    rel = set(f.relevant)
    return [(i, c) for i, c in enumerate(f.injected, 1) if c.split("#", 1)[0] in rel]


# --- the rules, each a pure function of one question's facts ---------------------------------------------


def unstable(f: Facts) -> Finding | None:
    if f.outcome != "unstable":
        return None
    return Finding("unstable", f"passed {f.passes} of {f.repeats} repeats: the outcome flips, so no one cause holds")


def missed_refusal(f: Facts) -> Finding | None:
    if not f.expect_refusal or f.refusals == f.repeats:
        return None
    given = f"; {len(f.injected)} passage(s) injected ({', '.join(f.injected)})" if f.injected else \
        "; no passage injected"
    return Finding("missed_refusal", f"answered in {f.repeats - f.refusals} of {f.repeats} repeats where a refusal "
                                     f"was expected{given}")


def retrieval_miss(f: Facts) -> Finding | None:
    if f.expect_refusal:
        return None
    if f.mode == "oracle" and not f.injected and not f.dropped and f.relevant:
        # The oracle injects every chunk of the relevant documents: none at all means the corpus holds none of
        # them (a golden naming a document the corpus lost), which no retriever could have found either.
        return Finding("retrieval_miss", f"the corpus holds no chunk of {', '.join(f.relevant)}: the oracle had "
                                         "nothing to inject")
    if f.mode != "e2e" or not f.retrieval_known:
        return None
    got = {d for _, d, _ in f.retrieved}
    missing = [d for d in f.relevant if d not in got]
    if not missing:
        return None
    top = ", ".join(f"{d} (rank {r})" for r, d, _ in f.retrieved[:5]) or "nothing"
    which = f"none of the relevant {', '.join(missing)}" if len(missing) == len(f.relevant) else \
        f"{len(missing)} of {len(f.relevant)} relevant documents missing ({', '.join(missing)})"
    return Finding("retrieval_miss", f"{which} among the {len(f.retrieved)} retrieved: {top}{_others(f)}")


def dropped_by_budget(f: Facts) -> Finding | None:
    if f.expect_refusal or f.mode == "noretrieval":
        return None
    if f.mode == "oracle":
        if not f.dropped:
            return None
        return Finding("dropped_by_budget", f"the budget planner left out {f.dropped} of the oracle's "
                                            f"{f.dropped + len(f.injected)} relevant passage(s)")
    rel = set(f.relevant)
    lost = [(r, c) for r, d, c in f.retrieved if d in rel and c not in set(f.injected)]
    if not lost:
        return None
    kept = _injected_relevant(f)
    also = f"; injected relevant: {', '.join(c for _, c in kept)}" if kept else "; no relevant passage injected"
    return Finding("dropped_by_budget", "retrieved but not injected (the budget planner dropped "
                                        f"{f.dropped} passage(s)): {', '.join(f'{c} (rank {r})' for r, c in lost)}"
                                        + also + _others(f))


def wrong_refusal(f: Facts) -> Finding | None:
    # Without passages a decline is the right answer, so noretrieval never has a wrong refusal.
    if f.expect_refusal or f.mode == "noretrieval" or f.refusals < f.repeats:
        return None
    kept = _injected_relevant(f)
    if not kept:
        return None
    return Finding("wrong_refusal", f"declined in all {f.repeats} repeat(s) with relevant passage(s) injected: "
                                    + ", ".join(f"{c} (position {i})" for i, c in kept))


def unsupported_claim(f: Facts) -> Finding | None:
    parts = []
    if f.unsupported:
        parts.append(f"states {', '.join(f'{n:g}' for n in f.unsupported)}, found in none of its context")
    if f.unfaithful:
        parts.append(f"judged unfaithful in {f.unfaithful} of {f.judged} judged repeat(s)")
    return Finding("unsupported_claim", "; ".join(parts)) if parts else None


def model_or_ignored(f: Facts) -> Finding | None:
    """A failure with the relevant passage in front of the model: the oracle decides whose failure it is."""
    if f.expect_refusal or f.mode == "noretrieval":
        return None
    kept = _injected_relevant(f)
    if not kept:
        return None
    where = ", ".join(f"{c} (position {i})" for i, c in kept)
    if f.mode == "oracle":
        return Finding("beyond_the_model", f"failed with the golden's own passages injected ({where})")
    o = f.oracle
    side = f"; noretrieval {f.noretrieval}" if f.noretrieval else ""
    if o is None:
        return Finding("injected_not_used", f"relevant injected ({where}); oracle not run, so 'beyond the model' "
                                            f"and 'retrieved but ignored' cannot be told apart{side}")
    if not o.complete:
        return Finding("injected_not_used", f"relevant injected ({where}); the oracle's own context lost passages "
                                            f"to the budget (oracle {o.outcome}), so it cannot decide{side}")
    if o.outcome == "pass":
        return Finding("retrieved_but_ignored", f"relevant injected ({where}); oracle passed{side}")
    if o.outcome == "fail":
        return Finding("beyond_the_model", f"relevant injected ({where}); oracle failed too, with every relevant "
                                           f"passage{side}")
    return Finding("injected_not_used", f"relevant injected ({where}); oracle {o.outcome}, so it cannot decide{side}")


def no_context(f: Facts) -> Finding | None:
    if f.mode != "noretrieval":
        return None
    return Finding("no_context", "noretrieval mode gives the model no passages: the answer needs the corpus")


def unexplained(f: Facts) -> Finding:
    """The catch-all, so no failed question goes unlabelled: an app exposing no document ids reaches it (tier=app);
    no known path of the harness's own pipeline does."""
    if not f.retrieval_known:
        return Finding("unexplained", "the app exposed no document ids with its contexts, so which stage lost the "
                                      f"answer cannot be told ({len(f.injected)} passage(s), {f.refusals} of "
                                      f"{f.repeats} declined)")
    return Finding("unexplained", f"no rule applies (mode {f.mode}, {len(f.injected)} injected, "
                                  f"{f.refusals} of {f.repeats} declined)")


RULES: tuple[Callable[[Facts], Finding | None], ...] = (
    unstable, missed_refusal, retrieval_miss, dropped_by_budget, wrong_refusal, unsupported_claim,
    model_or_ignored, no_context,
)


def diagnose(f: Facts) -> Finding | None:
    """The question's cause, or None when it did not fail (passed every repeat, or was never judged)."""
    if f.outcome in ("pass", "not judged"):
        return None
    for rule in RULES:
        if (found := rule(f)) is not None:
            return found
    return unexplained(f)


# --- from case records to facts --------------------------------------------------------------------------


def unsupported_numbers(answer: str, context: str) -> list[float]:
    """Numbers above NUMBER_FLOOR the answer states and its context does not, sorted."""
    known = numbers(context)
    return sorted(n for n in numbers(answer) if n > NUMBER_FLOOR and n not in known)


def _outcome(passed: Sequence[bool | None]) -> tuple[str, int]:
    judged = [p for p in passed if p is not None]
    wins = sum(1 for p in judged if p)
    if not judged:
        return "not judged", 0
    if 0 < wins < len(judged):
        return "unstable", wins
    return ("pass" if wins else "fail"), wins


def facts_of(group: Sequence[AnswerCase], faithful_max: int = 1) -> Facts:
    """One question's facts from its cases (the repeats of one golden in one mode). Retrieval and the plan are
    the same for every repeat; answers are not, so refusals and unsupported claims are counted over repeats."""
    first = group[0]
    outcome, wins = _outcome([c.passed for c in group])
    unsupported: set[float] = set()
    unfaithful = judged = 0
    for c in group:
        unsupported.update(float(n) for n in c.unsupported_numbers or [])
        verdict = c.judges.get("faithfulness")
        if verdict is not None:
            judged += 1
            unfaithful += int(verdict) < faithful_max
    return Facts(
        key=_key(first), id=first.id, mode=first.mode,
        expect_refusal=first.expect_refusal, outcome=outcome, passes=wins, repeats=len(group),
        relevant=list(first.relevant_doc_ids),
        retrieved=[(r.rank, r.doc_id, r.chunk_id) for r in first.retrieved or []],
        injected=list(first.injected), dropped=first.dropped_chunks,
        refusals=sum(1 for c in group if c.refused), unsupported=sorted(unsupported),
        unfaithful=unfaithful, judged=judged,
        retrieval_known=first.retrieved is not None,
    )


def _key(case: CaseBase) -> str:
    return f"{case.mode}:{case.id}"


C = TypeVar("C", bound=CaseBase)


def _groups(cases: Sequence[C]) -> dict[str, list[C]]:
    out: dict[str, list[C]] = {}
    for c in cases:
        out.setdefault(_key(c), []).append(c)
    return out


def question_facts(cases: Sequence[AnswerCase], faithful_max: int = 1) -> dict[str, Facts]:
    """Every question's facts, e2e ones joined with the same golden's oracle and noretrieval outcomes."""
    facts = {k: facts_of(g, faithful_max) for k, g in _groups(cases).items()}
    out = {}
    for key, f in facts.items():
        if f.mode == "e2e":
            o = facts.get(f"oracle:{f.id}")
            n = facts.get(f"noretrieval:{f.id}")
            f = replace(f, oracle=Oracle(o.outcome, o.dropped == 0 and bool(o.injected)) if o else None,
                        noretrieval=n.outcome if n else None)
        out[key] = f
    return out


def label_cases(cases: list[AnswerCase], faithful_max: int = 1) -> dict[str, Finding]:
    """Writes `cause` and `cause_evidence` on every case (None on a question that did not fail) and returns the
    findings by question key. `faithful_max`: the faithfulness rubric's top verdict (below it is a flag)."""
    findings = {k: d for k, f in question_facts(cases, faithful_max).items() if (d := diagnose(f)) is not None}
    for i, c in enumerate(cases):
        found = findings.get(_key(c))
        cases[i] = c.model_copy(update={"cause": found.label if found else None,
                                        "cause_evidence": found.evidence if found else None})
    return findings


# cause_counts' result, as report/details.py's CauseCounts validates it (keys in the order the report holds them).
class CauseRowJson(TypedDict):
    count: int
    n: int
    share: float | None
    low: float | None
    high: float | None
    cases: int


class ModeCausesJson(TypedDict):
    questions: int
    failed: int
    cases: int
    failed_cases: int
    labels: dict[str, CauseRowJson]


class CauseCountsJson(TypedDict):
    unit: str
    precedence: list[str]
    names: dict[str, str]
    by_mode: dict[str, ModeCausesJson]
    questions: dict[str, str]


def cause_counts(cases: Sequence[AnswerCase]) -> CauseCountsJson:
    """Per mode: questions, failed questions, and each label's count with its share of the failed questions and a
    95% Wilson interval (n = failed questions). Counted from the labels written on the cases, one per question;
    `cases` beside each count is how many case records (repeats) carry that label."""
    by_mode: dict[str, ModeCausesJson] = {}
    labelled: dict[str, Counter[str]] = {}       # mode -> label -> failed questions
    case_labels: dict[str, Counter[str]] = {}    # mode -> label -> their case records
    questions: dict[str, str] = {}
    for key, group in _groups(cases).items():
        mode = key.split(":", 1)[0]
        entry = by_mode.setdefault(mode, {"questions": 0, "failed": 0, "cases": 0, "failed_cases": 0, "labels": {}})
        entry["questions"] += 1
        entry["cases"] += len(group)
        label = group[0].cause
        if label:
            questions[key] = str(label)
            entry["failed"] += 1
            entry["failed_cases"] += len(group)
            labelled.setdefault(mode, Counter())[label] += 1
            case_labels.setdefault(mode, Counter())[label] += len(group)
    for mode, entry in by_mode.items():
        entry["labels"] = _label_rows(labelled.get(mode, Counter()), case_labels.get(mode, Counter()), entry["failed"])
    return {"unit": "question (mode:id); each of its cases (repeats) carries its label, counted under `cases`",
            "precedence": list(LABELS),
            "names": dict(LABELS), "by_mode": by_mode, "questions": questions}


def _label_rows(labelled: Counter[str], case_labels: Counter[str], n: int) -> dict[str, CauseRowJson]:
    rows: dict[str, CauseRowJson] = {}
    for label in [*LABELS, "unexplained"]:
        k = labelled.get(label, 0)
        if label == "unexplained" and not k:
            continue
        low, high = wilson(k, n)
        rows[label] = {"count": k, "n": n, "share": k / n if n else None, "low": low, "high": high,
                       "cases": case_labels.get(label, 0)}
    return rows


# --- compare: questions whose cause changed --------------------------------------------------------------


@dataclass(frozen=True)
class CauseChange:
    key: str
    before: str | None   # None: passed (or was not judged) on that side
    after: str | None


def cause_changes(base: Sequence[CaseBase], run: Sequence[CaseBase]
                  ) -> tuple[list[CauseChange], str | None]:
    """Questions in both runs whose cause differs, and a note when the baseline carries no causes (written before
    labels existed, or promoted without them): then nothing is listed, since a missing label is not "passed"."""
    if not any(c.labelled for c in base):
        return [], "the baseline carries no failure causes (made before they were recorded); no change is listed"
    if not any(c.labelled for c in run):
        return [], "the run carries no failure causes; no change is listed"
    before = {k: g[0].cause for k, g in _groups(base).items()}
    after = {k: g[0].cause for k, g in _groups(run).items()}
    changes = [CauseChange(k, before[k], after[k]) for k in after if k in before and before[k] != after[k]]
    return changes, None
