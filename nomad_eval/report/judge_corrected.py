"""How a judge mean and its prediction-powered correction read in every report view."""

from __future__ import annotations

from collections.abc import Mapping

from nomad_eval.records.sections import JudgeEntry, JudgeSection


def describe(metric: str, r: Mapping[str, object]) -> str:
    """One line: the judge mean, and either the corrected estimate with its interval and n, or why there is none."""
    mean = "none" if r["judge_mean"] is None else f"{r['judge_mean']:.3f}"
    head = f"{metric}: judge mean {mean}"
    if r["status"] != "corrected":
        return f"{head}; {r['reason']}"
    nulls = f"; {r['null_verdicts']} null verdict(s) scored {r['null_score']}" if r["null_verdicts"] else ""
    if r.get("adjusted_low") is not None and r.get("adjusted_high") is not None:
        # The adjusted interval leads: ppi-python's own undercovers when the judge's few errors go one way.
        interval = (f"[{r['adjusted_low']:.3f}, {r['adjusted_high']:.3f}] ({r['method']}, {r['level']:.0%}, "
                    f"small-sample adjusted; ppi-python's unadjusted [{r['low']:.3f}, {r['high']:.3f}])")
    else:
        interval = f"[{r['low']:.3f}, {r['high']:.3f}] ({r['method']}, {r['level']:.0%})"
    return (f"{head}; corrected by {r['n']} of {r['N']} questions labelled: {r['estimate']:.3f} {interval}; "
            f"the judge disagreed with {r['disagreements']} label(s){nulls}")


def _with_interval(mean: float | None, low: float | None, high: float | None) -> str:
    if mean is None:
        return "none"
    return f"{mean:.3f}" + (f" [{low:.3f}, {high:.3f}]" if low is not None and high is not None else " [no interval]")


def judge_mean_text(v: JudgeEntry) -> str:
    """A judge section entry's mean with its 95% interval (questions resampled whole) and n."""
    return f"{_with_interval(v.get('mean'), v.get('low'), v.get('high'))} (n={v['n']} cases, " \
           f"{v.get('questions', '?')} questions)"


def judge_weighted_text(v: JudgeEntry) -> str:
    if v.get("mean_weighted") is None:
        return "none"
    return f"{_with_interval(v['mean_weighted'], v.get('low_weighted'), v.get('high_weighted'))} " \
           f"(n={v.get('n_weighted', '?')})"


def judge_lines(judges: JudgeSection) -> list[str]:
    """One line per judge metric: the uncorrected mean with its interval and n, and the weighted mean if any."""
    out = []
    for key, v in judges.items():
        weighted = f"; probability-weighted {judge_weighted_text(v)}" if v.get("mean_weighted") is not None else ""
        out.append(f"{key} ({v['rubric']}): judge mean {judge_mean_text(v)}{weighted}; {v['unparseable']} "
                   f"unparseable, {v.get('rejected', 0)} refused by the judge's server, {v['by_rule']} by rule")
    return out


def corrected_lines(judge_corrected: Mapping[str, Mapping[str, object]]) -> list[str]:
    return [describe(k, v) for k, v in judge_corrected.items()]
