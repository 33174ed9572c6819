"""The gate: compare a run's questions with a baseline's, metric by metric, and say what the difference means.

Pure logic over per-question records (no files, no reports). Two uncertainties, each for its own question:
- *run-to-run noise* (from the repeats; zero for retrieval and for answers whose repeats agree) decides the gate:
  a drop past the tolerance that this noise does not explain is a regression, Holm across every gated metric
  whose noise is measured (core/noise.py). A deterministic metric that drops past its tolerance has regressed:
  the questions that flipped did flip. Noise nobody measured (one repeat a side on a backend that is not
  deterministic by construction, and no earlier draws in the questions' history) is never taken for zero: such a
  drop is "not measured" (cannot tell).
- *question sampling* (resampling whole questions, a paired test, Holm across the gated metrics) says how far the
  change would generalise to questions like these. It is shown beside the verdict, and a suite too small to see
  a tolerance-sized change in general gets a warning with the detectable change (tier=plan's figure).
Nulls never pass: a gated metric (or question) the baseline measured and the run did not is "not measured".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from statistics import NormalDist

from nomad_eval.core.fresh import fresh_in_mode, fresh_text
from nomad_eval.core.noise import HISTORY, INSTABILITY, History, delta_noise, noise_p, repeats_for_noise
from nomad_eval.core.power import ALPHA, detectable_change, mostly_zero_one
from nomad_eval.core.questions import Question
from nomad_eval.core.stats import (
    Alternative,
    adjust,
    paired_interval,
    paired_p_value,
)
from nomad_eval.gate.outcome import MetricVerdict, Outcome, Verdict
from nomad_eval.gate.pairing import pair_questions
from nomad_eval.metrics.registry import EPS, MetricSpec, spec_for

# One-sided 95%: a drop this many run-to-run standard errors past the tolerance is not noise.
Z_NOISE = NormalDist().inv_cdf(1 - ALPHA)


def compare_questions(
    base: Sequence[Question], run: Sequence[Question], gated: Sequence[str], *,
    base_metrics: Mapping[str, float | None], run_metrics: Mapping[str, float | None],
    informational: Sequence[str] = (), base_goldens: Mapping[str, str] | None = None,
    run_goldens: Mapping[str, str] | None = None, exclude_unstable: bool = False, cluster: bool = False,
    resamples: int = 2000, seed: int = 0, strict: bool = False, correlation: float = 0.5,
    tolerance: float | None = None, deterministic: bool = False, infra: Sequence[str] = (),
    infra_share: float = 0.0, max_infra: float = 1.0, quarantined: Callable[[str], bool] | None = None,
    history: History | None = None,
) -> Verdict:
    """`tolerance`, when given, replaces every metric's own (compare.tolerance, upstream's `--tolerance`).
    `deterministic`: both sides' answers come from a backend deterministic by construction (the mock, replays),
    so answers neither side repeated carry no run-to-run noise. `infra`: keys of the run's questions with a call
    the infrastructure failed, `infra_share` the share of the run's calls that did: past `max_infra` the run is
    "not measured"; within it, a question left with no answer is listed apart and not gated. `quarantined(key)`:
    a known-flaky question (goldens/quarantine.yaml), compared and listed, not gated. `history`: earlier draws of
    the questions (earlier runs of the same goldens and system), the noise of those asked once on both sides."""
    v = Verdict(clustered=cluster, strict=strict)
    v.questions = pair_questions(base, run, base_goldens=base_goldens, run_goldens=run_goldens,
                                 exclude_unstable=exclude_unstable, infra=infra, quarantined=quarantined)
    _infrastructure(v, infra_share, max_infra)
    if not v.questions.common:
        v.refused.append("no questions in common with the same judgement; a gate over nothing cannot pass; check "
                         "that the run used the baseline's suite, or promote a baseline of this suite")
        return v
    b_by, r_by = {q.key: q for q in base}, {q.key: q for q in run}
    pairs = [(b_by[k], r_by[k]) for k in v.questions.common]
    how = Sampling(cluster, resamples, seed, correlation, len(gated), tolerance, deterministic, frozenset(infra),
                   history)
    names = [*gated, *(n for n in informational if n not in gated)]
    rows = v.metrics = _rows(names, set(gated), pairs, (base_metrics, run_metrics), how, strict)
    v.newly_failing = [b.key for b, r in pairs if b.passed == 1.0 and r.passed is not None and r.passed < 1.0]
    v.warnings += _warnings(rows, tolerance) + [m.reason for m in rows if m.reason.endswith("(instability needs "
                                                                                          "2+ repeats)")]
    if history is not None and any(HISTORY in m.noise_source for m in rows if m.gated):
        v.warnings.append(f"run-to-run noise of the questions asked once on both sides {HISTORY}: {history.runs} "
                          "earlier sealed run(s) of the same goldens and system (compare.history)")
    return v


def _infrastructure(v: Verdict, share: float, max_infra: float) -> None:
    """The share of the run's model calls the infrastructure failed: said, and past `max_infra` not measured."""
    if share > 0:
        v.warnings.append(f"{share:.1%} of the run's model calls failed in the infrastructure, listed in "
                          "report.json's infra; those answers are neither failed nor passed")
    if share > max_infra + EPS:
        v.infra_over = (f"{share:.1%} of the run's model calls failed in the infrastructure (timeouts, "
                        f"connection or HTTP errors, malformed answers), more than gate.max_infra={max_infra:g}")


Means = tuple[Mapping[str, float | None], Mapping[str, float | None]]  # the baseline's and the run's metrics


def _rows(names: Sequence[str], gated: set[str], pairs: Pairs, means: Means, how: Sampling, strict: bool
          ) -> list[MetricVerdict]:
    """Each metric's row, the gated ones decided after Holm across them (question sampling) and across the
    varying ones (run-to-run noise)."""
    rows: list[MetricVerdict] = []
    tests: list[tuple[int, float]] = []
    for name in names:
        row, p = _measure(name, name in gated, pairs, *means, how)
        if p is not None:
            tests.append((len(rows), p))
        rows += [row] if row is not None else []
    rows = [_with_fresh(m, pairs) for m in rows]
    family = _noise_family(rows, how.tolerance)
    size = max(1, len(family) + sum(m.fresh is not None for m in rows), sum(m.gated and m.noise is None for m in rows))
    for (i, _), p_adj in zip(tests, adjust([p for _, p in tests], "holm"), strict=True):
        rows[i] = _decide(replace(rows[i], noise_p=family.get(i)), p_adj, strict, how.tolerance, size, pairs)
    return rows


def _with_fresh(m: MetricVerdict, pairs: Pairs) -> MetricVerdict:
    """A gated pass rate whose noise is measured, with its mode's fresh failures: where steady questions made
    flaky show, which the noise of the questions that always varied hides from the mean."""
    mode, _, last = m.name.rpartition(".")
    if not (m.gated and m.noise and mode and last == "pass_rate"):
        return m
    fresh = fresh_in_mode(pairs, mode)
    # One draw a side (noise from the questions' history): a fresh failure is a single flip, which that noise
    # already weighs question by question.
    return m if max(fresh.draws) < 2 else replace(m, fresh=fresh)


def _spec(name: str, tolerance: float | None) -> MetricSpec | None:
    """The metric's spec, its tolerance replaced by one given for every metric (its kind, absolute or relative,
    stays the metric's own)."""
    spec = spec_for(name)
    return spec if spec is None or tolerance is None else replace(spec, tolerance=tolerance)


def _warnings(rows: Sequence[MetricVerdict], tolerance: float | None) -> list[str]:
    small = [m for m in rows if _too_small(m, tolerance)]
    if not small:
        return []
    n = max(m.n for m in small)
    return [f"{SMALL_SUITE} ({n} questions): too small to tell a tolerance-sized change in general in "
            f"{', '.join(m.name for m in small)} (80% power, Holm); the verdict holds for these questions; "
            "tier=plan says how many would tell"]


SMALL_SUITE = "small suite"  # the start of the warning above, which the console shows once per project state


def _too_small(m: MetricVerdict, tolerance: float | None) -> bool:
    """Question sampling cannot see a tolerance-sized change in general (None: it cannot see any)."""
    allowed = _allowed(m, tolerance)
    if not m.gated or m.outcome == "not measured" or allowed is None:
        return False
    return m.mde is None or m.mde > allowed + EPS


def _allowed(m: MetricVerdict, tolerance: float | None) -> float | None:
    spec = _spec(m.name, tolerance)
    return None if spec is None or m.baseline is None else spec.allowed(m.baseline)


@dataclass(frozen=True)
class Sampling:
    """How question sampling is done: resampling whole questions (or source documents) with a seeded generator."""

    cluster: bool = False
    resamples: int = 2000
    seed: int = 0
    correlation: float = 0.5
    gated: int = 1
    tolerance: float | None = None  # one for every metric (compare.tolerance); None: each metric's own
    deterministic: bool = False     # answers from the mock or replays: no run-to-run noise where none is measured
    infra: frozenset[str] = frozenset()  # the run's questions with a call the infrastructure failed
    history: History | None = None  # earlier draws of the questions (core/noise.py), for those asked once a side


Pairs = list[tuple[Question, Question]]


def _unmeasured(name: str, gated: bool, pairs: Pairs, base_metrics: Mapping[str, float | None],
                run_metrics: Mapping[str, float | None], tol: str) -> MetricVerdict | None:
    """The row of a metric one side did not measure: for a gated metric "not measured", which fails."""
    def row(reason: str, n: int = 0, worse: tuple[str, ...] = ()) -> MetricVerdict:
        return MetricVerdict(name, gated, "not measured", base_metrics.get(name), run_metrics.get(name), n,
                             tolerance=tol, reason=reason, worse=worse)

    if gated and base_metrics.get(name) is not None and run_metrics.get(name) is None:
        why = "missing from the run" if name not in run_metrics else "null in the run (not measured)"
        return row(f"{name} is {why}; the baseline measured it")
    lost = tuple(r.key for _, r in pairs if r.values.get(name) is None)
    if gated and lost:
        return row(f"{name}: {len(lost)} question(s) the baseline measured are null in the run "
                   f"({', '.join(lost[:8])})", len(pairs), lost)
    if any(r.values.get(name) is not None for _, r in pairs):
        return None
    if gated:
        return row(f"{name}: no common question measured it on both sides")
    if (base_metrics.get(name) is None) != (run_metrics.get(name) is None):
        return row(f"{name}: the {'baseline' if base_metrics.get(name) is None else 'run'} did not measure it")
    return None


def _single_repeat(name: str, pairs: Pairs) -> str:
    """Why instability cannot be gated here: a side asked each question once has no repeats to disagree (its
    drop in pass rate is still gated, with the other side's noise)."""
    if not pairs or name.rsplit(".", 1)[-1] != INSTABILITY:
        return ""
    for side, i in (("baseline", 0), ("run", 1)):
        if all(p[i].repeats < 2 for p in pairs):
            return f"{name} is not gated: the {side} asked each question once (instability needs 2+ repeats)"
    if any(r.values.get(name) is None for _, r in pairs):
        # repeats=auto stops a question once more answers cannot move the verdict, so whether its answers
        # disagree depends on how many it was asked; its pass rate, which the rule measures, is gated.
        return f"{name} is not gated: repeats=auto asked some questions once (instability needs 2+ repeats)"
    return ""


def _measure(name: str, gated: bool, pairs: Pairs, base_metrics: Mapping[str, float | None],
             run_metrics: Mapping[str, float | None], how: Sampling) -> tuple[MetricVerdict | None, float | None]:
    """One metric's row before Holm, and its one-sided p-value when it is gated and measured on both sides."""
    spec = _spec(name, how.tolerance)
    tol = spec.tolerance_text() if spec else "—"
    # A value the infrastructure cost (instability with one repeat left) is not the system's null: left out.
    pairs = [(b, r) for b, r in pairs if b.values.get(name) is not None
             and (r.values.get(name) is not None or r.key not in how.infra)]
    if gated and (single := _single_repeat(name, pairs)):
        return MetricVerdict(name, False, "not gated", base_metrics.get(name), run_metrics.get(name), len(pairs),
                             tolerance=tol, reason=single), None
    missing = _unmeasured(name, gated, pairs, base_metrics, run_metrics, tol)
    pairs = [(b, r) for b, r in pairs if r.values.get(name) is not None]
    if missing is not None or not pairs:
        return missing, None
    return _measured(name, spec if gated else None, tol, pairs, how)


def _measured(name: str, spec: MetricSpec | None, tol: str, pairs: Pairs, how: Sampling
              ) -> tuple[MetricVerdict, float | None]:
    """The row of a metric both sides measured on `pairs`; gated when it has a `spec`."""
    b = [float(x.values[name] or 0.0) for x, _ in pairs]
    c = [float(y.values[name] or 0.0) for _, y in pairs]
    clusters = [x.cluster for x, _ in pairs] if how.cluster else None
    interval = paired_interval(b, c, clusters, resamples=how.resamples, seed=how.seed)
    bm, cm = sum(b) / len(b), sum(c) / len(c)
    if spec is None:
        return MetricVerdict(name, False, "not gated", bm, cm, len(b), interval, tolerance=tol), None
    noise = delta_noise(pairs, name, how.deterministic, rate=spec.unit == "rate", history=how.history)
    worse = tuple(y.key for (_, y), bv, cv in zip(pairs, b, c, strict=True) if spec.worsening(bv, cv) > EPS)
    p, mde = _question_sampling(spec, b, c, clusters, how)
    return MetricVerdict(name, True, "within tolerance", bm, cm, len(b), interval, p, None, mde, tol,
                         noise=noise.se, worse=worse, noise_source=noise.source, noise_df=noise.df,
                         noise_step=noise.step), p


def _question_sampling(spec: MetricSpec, b: list[float], c: list[float], clusters: list[str] | None,
                       how: Sampling) -> tuple[float, float | None]:
    """The one-sided paired test's p-value, and the change the suite detects in general."""
    alternative: Alternative = "worse_if_lower" if spec.direction == "higher" else "worse_if_higher"
    # 0/1 values: the sign-flip test on -1/0/1 deltas is the exact sign test, so both tests plan alike.
    zero_one = all(x in (0.0, 1.0) for x in b + c)
    p = paired_p_value(b, c, binary=spec.binary and zero_one, alternative=alternative, clusters=clusters,
                       seed=how.seed)
    return p, detectable_change(b, how.gated, how.correlation, binary=mostly_zero_one(b + c) and clusters is None)


def _noise_family(rows: Sequence[MetricVerdict], tolerance: float | None) -> dict[int, float]:
    """Row index -> Holm-adjusted noise p of each gated metric whose run-to-run noise is measured and not zero (how
    likely noise alone moves it this far the wrong way): the family whose chance of failing an unchanged system,
    all members together, is held at ALPHA. A mode's pass rate has a second member, its fresh failures
    (core/fresh.py), and keeps the smaller of its two adjusted p-values."""
    members: list[tuple[int, float]] = []
    for i, m in enumerate(rows):
        spec = _spec(m.name, tolerance)
        if m.gated and m.noise and spec is not None and m.baseline is not None and m.current is not None:
            members.append((i, noise_p(spec.worsening(m.baseline, m.current) - m.noise_step / 2, m.noise, m.noise_df)))
    members += [(i, f.p) for i, _ in list(members) if (f := rows[i].fresh) is not None and f.p is not None]
    out: dict[int, float] = {}
    for (i, _), p in zip(members, adjust([p for _, p in members], "holm"), strict=True):
        out[i] = min(out.get(i, 1.0), p)
    return out


def _decide(row: MetricVerdict, p_adj: float, strict: bool, tolerance: float | None, family: int,
            pairs: Pairs) -> MetricVerdict:
    spec = _spec(row.name, tolerance)
    assert spec is not None and row.baseline is not None and row.current is not None
    worse = spec.worsening(row.baseline, row.current)
    allowed = spec.allowed(row.baseline)
    general = f"in general: Holm p={p_adj:.3g}" + (", the drop generalises" if p_adj < ALPHA and worse > EPS else "")
    outcome, reason = _noise_rule(row, worse, allowed, family, pairs)
    if outcome == "within tolerance" and strict and worse > EPS and _too_small(row, tolerance) \
            and _clears_noise(row):
        outcome = "too small to tell"
        seen = "no change" if row.mde is None else f"only {row.mde:.4f}"
        reason = (f"worse by {worse:.4f} and the suite detects {seen} in general (n={row.n}), more than the "
                  f"tolerance {allowed:g} (compare.strict=true)")
    return replace(row, outcome=outcome, p_adjusted=p_adj, reason=f"{reason}; {general}")


def _noise_rule(row: MetricVerdict, worse: float, allowed: float, family: int, pairs: Pairs) -> tuple[Outcome, str]:
    """The verdict the run-to-run noise gives on a drop past the tolerance: exact for a deterministic metric; for
    one that varies, a regression when the family's Holm test says noise alone does not explain the drop (the
    same bar as the exact rule, a drop past the tolerance, plus proof that it is not chance); "not measured"
    (cannot tell) for one whose noise nobody measured."""
    if worse <= allowed + EPS:
        return "within tolerance", ("better" if worse < -EPS else "unchanged" if abs(worse) <= EPS
                                    else f"worse by {worse:.4f}, inside the tolerance {allowed:g}")
    head = f"worse by {worse:.4f} > tolerance {allowed:g}"
    if row.noise is None:
        reps = repeats_for_noise([p for p in pairs if p[0].values.get(row.name) is not None], allowed, family)
        return "not measured", (f"cannot tell: run-to-run noise not measured (repeats = 1); {head} on "
                                f"{len(row.worse)} question(s), which may be chance flips; next: repeats={reps} "
                                "(tier=plan for this suite)")
    if row.noise == 0:
        return "regression", (f"{head}, deterministic, so every flipped question did flip; {len(row.worse)} "
                              "question(s) worse")
    p = row.noise_p if row.noise_p is not None else 1.0
    noise = f"run-to-run noise {row.noise:.4f} {row.noise_source}, Holm p={p:.3g} over {family} varying test(s)"
    if row.fresh is not None and row.fresh.failures:
        noise += f"; {fresh_text(row.fresh)}"
    if p < ALPHA:
        return "regression", f"{head}, past {noise}; {len(row.worse)} question(s) worse"
    return "within tolerance", f"{head} but within {noise}; more repeats would tell"


def _clears_noise(row: MetricVerdict) -> bool:
    """compare.strict fails a small drop only when run-to-run noise does not explain it (the family's Holm p), so
    an unchanged system that varies does not fail on chance."""
    return not row.noise or (row.noise_p is not None and row.noise_p < ALPHA)
