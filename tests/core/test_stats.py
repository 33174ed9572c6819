from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats

from nomad_eval.core.questions import Question
from nomad_eval.core.ranking import rank_against_reference
from nomad_eval.core.stats import (
    Interval,
    adjust,
    mean_interval,
    mean_intervals,
    minimum_detectable_effect,
    paired_interval,
    paired_p_value,
    paired_p_values,
    planning_sd,
    questions_needed,
    sign_flip_p_value,
)
from nomad_eval.core.summary import Summary, summarize


def recall_like(seed: int, n: int = 200) -> list[float]:
    rng = np.random.default_rng(seed)
    return [float(v) for v in rng.choice([0.0, 1 / 3, 0.5, 2 / 3, 1.0], size=n, p=[0.15, 0.1, 0.1, 0.15, 0.5])]


def test_identical_runs_give_a_zero_width_interval_and_p_one() -> None:
    base = recall_like(1)
    assert paired_interval(base, list(base)) == Interval(0.0, 0.0)
    assert paired_p_value(base, list(base), binary=False) == 1.0
    passes = [float(v == 1.0) for v in base]
    assert paired_p_value(passes, list(passes), binary=True, alternative="worse_if_lower") == 1.0


def test_a_clear_shift_is_an_interval_excluding_zero_and_a_small_p() -> None:
    base = recall_like(2)
    noise = np.random.default_rng(3).normal(0.0, 0.1, len(base))
    current = [b + 0.1 + e for b, e in zip(base, noise, strict=True)]
    iv = paired_interval(base, current)
    assert iv is not None and 0.0 < iv.low < 0.1 < iv.high and iv.width < 0.05
    assert paired_p_value(base, current, binary=False) < 0.01
    assert paired_p_value(base, current, binary=False, alternative="worse_if_higher") < 0.01
    # An improvement is no evidence of a regression.
    assert paired_p_value(base, current, binary=False, alternative="worse_if_lower") > 0.5
    assert paired_p_value(current, base, binary=False, alternative="worse_if_lower") < 0.01


def test_binary_p_value_is_mcnemar_on_the_discordant_pairs() -> None:
    # 12 questions lost, 4 gained, 30 passing in both and 10 failing in both.
    base = [1.0] * 12 + [0.0] * 4 + [1.0] * 30 + [0.0] * 10
    current = [0.0] * 12 + [1.0] * 4 + [1.0] * 30 + [0.0] * 10
    assert paired_p_value(base, current, binary=True) == pytest.approx(stats.binomtest(4, 16).pvalue, rel=1e-12)
    lower = paired_p_value(base, current, binary=True, alternative="worse_if_lower")
    assert lower == pytest.approx(stats.binomtest(4, 16, alternative="less").pvalue, rel=1e-12)
    higher = paired_p_value(base, current, binary=True, alternative="worse_if_higher")
    assert higher == pytest.approx(stats.binomtest(4, 16, alternative="greater").pvalue, rel=1e-12)
    assert lower < 0.05 < higher
    with pytest.raises(ValueError, match="0 or 1"):
        paired_p_value([0.5, 1.0], [1.0, 1.0], binary=True)


def test_small_samples_get_the_exact_sign_flip_p_value() -> None:
    assert paired_p_value([0.0] * 5, [1.0] * 5, binary=False) == pytest.approx(2 / 32)
    assert paired_p_value([0.0] * 5, [1.0] * 5, binary=False, alternative="worse_if_higher") == pytest.approx(1 / 32)


def correlated_clusters(seed: int) -> tuple[list[float], list[float], list[str]]:
    rng = np.random.default_rng(seed)
    docs = np.repeat(np.arange(20), 10)
    effect = rng.normal(0.0, 0.3, 20)[docs] + rng.normal(0.0, 0.05, len(docs))
    base = rng.random(len(docs))
    return base.tolist(), (base + effect).tolist(), [f"doc{d}" for d in docs]


def test_clustered_interval_is_wider_when_documents_move_together() -> None:
    base, current, docs = correlated_clusters(4)
    plain, clustered = paired_interval(base, current), paired_interval(base, current, docs)
    assert plain is not None and clustered is not None
    # Ten nearly identical questions per document carry about one question's worth of information.
    assert clustered.width > 2 * plain.width
    assert paired_p_value(base, current, binary=False, clusters=docs) > paired_p_value(base, current, binary=False)


def test_too_few_questions_or_clusters_give_none() -> None:
    assert mean_interval([0.5]) is None
    assert mean_interval([]) is None
    assert mean_interval([0.1, 0.9, 0.4], ["a", "a", "a"]) is None
    assert paired_interval([1.0], [0.0]) is None
    assert mean_interval([0.7] * 10) == Interval(0.7, 0.7)


def test_degenerate_bca_falls_back_to_percentile() -> None:
    # Every resample of these two documents has mean 0.5, which BCa cannot work with.
    assert mean_interval([0.0, 1.0, 1.0, 0.0], ["a", "a", "b", "b"]) == Interval(0.5, 0.5)


def test_same_seed_same_interval() -> None:
    values = recall_like(5)
    assert mean_interval(values, seed=7) == mean_interval(values, seed=7)
    assert mean_interval(values, seed=7) != mean_interval(values, seed=8)
    current = recall_like(6)
    assert paired_p_value(values, current, binary=False, seed=3) == paired_p_value(
        values, current, binary=False, seed=3
    )


def test_mismatched_lengths_are_refused() -> None:
    with pytest.raises(ValueError, match="aligned"):
        paired_interval([0.0, 1.0], [0.0])
    with pytest.raises(ValueError, match="aligned"):
        paired_p_value([0.0, 1.0], [0.0], binary=True)
    with pytest.raises(ValueError, match="aligned"):
        rank_against_reference([0.0, 1.0], {"a": [1.0]}, binary=True)
    with pytest.raises(ValueError, match="cluster labels"):
        mean_interval([0.0, 1.0, 0.5], ["a", "b"])


def test_adjust_gives_holm_and_benjamini_hochberg() -> None:
    p = [0.001, 0.04, 0.03, 0.2, 0.012]
    # Holm by hand: sorted 0.001, 0.012, 0.03, 0.04, 0.2 times 5, 4, 3, 2, 1, made non-decreasing.
    assert adjust(p, "holm") == pytest.approx([0.005, 0.09, 0.09, 0.2, 0.048])
    # Benjamini-Hochberg: p * 5 / rank, made non-increasing from the top.
    assert adjust(p, "fdr_bh") == pytest.approx([0.005, 0.05, 0.05, 0.2, 0.03])
    assert adjust([], "holm") == [] and adjust([0.3], "holm") == [0.3]
    assert adjust([0.01, 0.01, 0.5, 1.0], "holm") == pytest.approx([0.04, 0.04, 1.0, 1.0])


def test_adjust_equals_statsmodels_on_a_few_families() -> None:
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(11)
    families = [rng.uniform(0, 0.2, size=m) for m in (2, 4, 7, 20)] + [np.array([0.03, 0.03, 0.03, 0.5])]
    for p in families:
        for method in ("holm", "fdr_bh"):
            assert adjust(list(p), method) == pytest.approx(list(multipletests(p, method=method)[1]), abs=1e-12)


def test_mde_matches_the_normal_approximation() -> None:
    sd, n = 0.3, 200
    textbook = (stats.norm.ppf(0.95) + stats.norm.ppf(0.8)) * sd / math.sqrt(n)
    mde = minimum_detectable_effect(sd, n)
    assert mde is not None and mde == pytest.approx(textbook, rel=0.05)
    two_sided = minimum_detectable_effect(sd, n, one_sided=False)
    assert two_sided is not None and two_sided > mde
    assert minimum_detectable_effect(0.0, n) == 0.0
    assert minimum_detectable_effect(sd, 1) is None


@pytest.mark.parametrize(("effect", "sd"), [(0.05, 0.3), (0.02, 0.35), (0.1, 0.1), (5.0, 0.1)])
def test_questions_needed_round_trips(effect: float, sd: float) -> None:
    n = questions_needed(effect, sd)
    assert n is not None and n >= 2
    at_n = minimum_detectable_effect(sd, n)
    assert at_n is not None and at_n <= effect
    if n > 2:
        one_fewer = minimum_detectable_effect(sd, n - 1)
        assert one_fewer is not None and one_fewer > effect


def test_questions_needed_edges() -> None:
    assert questions_needed(0.05, 0.0) == 2
    assert questions_needed(0.0, 0.3) is None
    assert questions_needed(-0.1, 0.3) is None


def test_planning_sd_assumes_correlated_runs() -> None:
    values = [0.0, 1.0, 1.0, 1.0]
    assert planning_sd(values) == pytest.approx(0.5)  # sd 0.5, sqrt(2 * (1 - 0.5)) = 1
    assert planning_sd(values, correlation=0.0) == pytest.approx(0.5 * math.sqrt(2))
    assert planning_sd(values, correlation=1.0) == 0.0
    assert math.isnan(planning_sd([1.0]))
    assert minimum_detectable_effect(planning_sd([1.0]), 1) is None


def test_rank_marks_a_large_improvement_as_real_and_equal_configs_as_not() -> None:
    rng = np.random.default_rng(9)
    difficulty = rng.random(200)
    reference = [float(v) for v in rng.random(200) < difficulty]

    def run(shift: float) -> list[float]:
        return [float(v) for v in rng.random(200) < np.clip(difficulty + shift, 0, 1)]

    configs = {"same_a": run(0.0), "better": run(0.25), "same_b": run(0.0), "copy": list(reference)}
    for binary in (True, False):
        ranked = rank_against_reference(reference, configs, binary=binary)
        assert [r.name for r in ranked][0] == "better"
        assert [r.delta for r in ranked] == sorted((r.delta for r in ranked), reverse=True)
        by_name = {r.name: r for r in ranked}
        assert by_name["better"].real and by_name["better"].p_adjusted < 0.001
        assert by_name["better"].interval is not None and by_name["better"].interval.low > 0
        assert not by_name["same_a"].real and not by_name["same_b"].real and not by_name["copy"].real
        assert by_name["copy"].p_value == 1.0 and by_name["copy"].interval == Interval(0.0, 0.0)
        assert all(r.p_adjusted >= r.p_value for r in ranked)


def _scipy_bca(x: np.ndarray, seed: int) -> tuple[float, float]:
    ci = stats.bootstrap((x,), np.mean, n_resamples=2000, rng=np.random.default_rng(seed), method="BCa")
    return float(ci.confidence_interval.low), float(ci.confidence_interval.high)


@pytest.mark.parametrize("kind", ["uniform", "rare_binary", "three_level", "large"])
def test_intervals_agree_with_scipys_bca_within_resampling_error(kind: str) -> None:
    rng = np.random.default_rng(9)
    n = 3000 if kind == "large" else 230
    x = {"uniform": rng.random(n), "rare_binary": (rng.random(n) < 0.08).astype(float),
         "three_level": rng.integers(0, 3, n) / 2, "large": rng.random(n)}[kind]
    ours = mean_interval(x, seed=4)
    low, high = _scipy_bca(x, seed=99)  # other resamples: the ends agree to the resampling error, not the bit
    se = float(np.std(x, ddof=1)) / math.sqrt(n)
    assert ours is not None
    # 2,000 resamples put a 2.5% quantile within about 0.1 standard errors of its limit; 0.4 is four of those.
    assert abs(ours.low - low) < 0.4 * se and abs(ours.high - high) < 0.4 * se, (ours, low, high, se)
    # BCa, not the percentile interval: on skewed 0/1 values it moves both ends up.
    if kind == "rare_binary":
        pct = stats.bootstrap((x,), np.mean, n_resamples=2000, rng=np.random.default_rng(4),
                              method="percentile").confidence_interval
        assert ours.low > float(pct.low) and ours.high > float(pct.high)


def test_rows_resampled_together_get_the_interval_each_gets_alone() -> None:
    rng = np.random.default_rng(2)
    rows = [rng.random(120), (rng.random(120) < 0.3).astype(float), np.full(120, 0.25), np.r_[1.0, np.zeros(119)]]
    together = mean_intervals(rows, seed=5)
    for row, iv in zip(rows, together, strict=True):
        alone = mean_interval(row, seed=5)
        assert iv is not None and alone is not None
        assert iv.low == pytest.approx(alone.low, abs=1e-12) and iv.high == pytest.approx(alone.high, abs=1e-12)
    assert together[2] == Interval(0.25, 0.25)
    # One 1 among zeros: BCa is undefined there, the percentile interval of the same resamples stands in.
    assert together[3] is not None and together[3].low == 0.0 < together[3].high < 0.05
    assert mean_intervals([[1.0], [0.0]]) == [None, None]


def test_summary_resamples_each_metric_over_the_questions_that_measured_it() -> None:
    rng = np.random.default_rng(4)
    values = {"a": rng.random(80), "b": rng.random(80), "c": (rng.random(80) < 0.5).astype(float)}
    questions = [Question(key=f"q{i}", id=f"q{i}", mode=None, cluster=f"d{i // 3}", passed=None, repeats=1,
                          unstable=False, values={"a": values["a"][i], "b": values["b"][i],
                                                  "c": None if i % 4 == 0 else values["c"][i]})
                 for i in range(80)]
    got = summarize(questions, ["a", "b", "c", "never"], seed=6)
    for name in ("a", "b", "c"):
        kept = [v for i, v in enumerate(values[name]) if name != "c" or i % 4]
        iv = mean_interval(kept, seed=6)
        assert iv is not None and got[name].n == len(kept) and got[name].mean == sum(kept) / len(kept)
        assert (got[name].low, got[name].high) == (pytest.approx(iv.low, abs=1e-12), pytest.approx(iv.high, abs=1e-12))
    assert got["never"] == Summary(None, 0, None, None, None)
    clustered = summarize(questions, ["a"], cluster=True, seed=6)["a"]
    by_doc = mean_interval(values["a"], [q.cluster for q in questions], seed=6)
    assert by_doc is not None and clustered.clusters == 27 and (clustered.low, clustered.high) == (by_doc.low,
                                                                                                  by_doc.high)
    assert (clustered.low, clustered.high) != (got["a"].low, got["a"].high)


def test_the_95_percent_interval_covers_the_true_mean_95_percent_of_the_time() -> None:
    # 1,000 samples of 200 skewed values (exponential, true mean 1), each a row of one call. BCa on such data
    # covers a point or so under 95% at this n, and the share from 1,000 samples has a binomial sd near 0.7%:
    # a 90% or a badly centred interval falls outside these bounds.
    rng = np.random.default_rng(17)
    ivs = mean_intervals(rng.exponential(1.0, (1000, 200)), seed=1, resamples=1000)
    covered = np.mean([iv is not None and iv.low <= 1.0 <= iv.high for iv in ivs])
    assert 0.915 <= covered <= 0.97, covered


@pytest.mark.parametrize(("n", "alternative", "side"), [(10, "two-sided", "two-sided"), (10, "worse_if_lower", "less"),
                                                         (230, "two-sided", "two-sided"),
                                                         (230, "worse_if_higher", "greater")])
def test_sign_flip_p_value_agrees_with_scipys_permutation_test(n: int, alternative: str, side: str) -> None:
    rng = np.random.default_rng(12)
    base, cur = rng.random(n), rng.random(n) + 0.06
    ours = paired_p_value(base, cur, binary=False, alternative=alternative, seed=3)  # type: ignore[arg-type]
    ref = stats.permutation_test((cur - base,), np.mean, permutation_type="samples", n_resamples=10000,
                                 alternative=side, rng=np.random.default_rng(8)).pvalue  # type: ignore[call-arg]
    if 2**n <= 10000:
        assert ours == pytest.approx(ref, rel=1e-9)  # every sign pattern on both sides: the exact p
    else:  # two draws of 10,000 flips: within four of their joint binomial sds
        assert abs(ours - ref) < 4 * math.sqrt(2 * ref * (1 - ref) / 10000) + 1e-4, (ours, ref)


def test_sign_flip_rejects_a_true_null_at_its_level() -> None:
    # Deltas symmetric about 0: p < 0.05 in about 5% of 400 suites (sd 1.1%).
    rng = np.random.default_rng(23)
    deltas = rng.choice([-1.0, -0.5, 0.5, 1.0], size=(400, 40)) * rng.random((400, 1))
    rejected = np.mean([sign_flip_p_value(d, "two-sided", 999, seed) < 0.05 for seed, d in enumerate(deltas)])
    assert 0.02 <= rejected <= 0.085, rejected


def test_every_row_of_a_joint_bootstrap_gets_what_scipy_gives_it() -> None:
    rng = np.random.default_rng(8)
    distinct = [(rng.random(150) < 0.9).astype(float), rng.random(150).round(2), (rng.random(150) < 0.5).astype(float)]
    rows = [distinct[i % 3] for i in range(10)] + [np.full(150, 1.0)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        ci = stats.bootstrap((np.asarray(rows[:10]),), np.mean, axis=-1, vectorized=True, method="BCa",
                             n_resamples=2000, rng=np.random.default_rng(6)).confidence_interval
    got = mean_intervals(rows, seed=6)
    assert got[:10] == [Interval(float(lo), float(hi)) for lo, hi in zip(ci.low, ci.high, strict=True)]
    assert got[10] == Interval(1.0, 1.0)
    # Rows all equal: still what scipy gives each of them resampled together.
    same = mean_intervals([distinct[1]] * 4, seed=6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        ci = stats.bootstrap((np.asarray([distinct[1]] * 4),), np.mean, axis=-1, vectorized=True, method="BCa",
                             n_resamples=2000, rng=np.random.default_rng(6)).confidence_interval
    assert same == [Interval(float(ci.low[0]), float(ci.high[0]))] * 4


@pytest.mark.parametrize("clusters", [None, [f"doc{i % 9}" for i in range(60)]])
def test_configurations_tested_together_get_the_p_each_gets_alone(clusters: list[str] | None) -> None:
    rng = np.random.default_rng(12)
    base = rng.choice([0.0, 0.5, 1.0], 60).tolist()
    currents = [base, [b if rng.random() < 0.6 else float(v) for b, v in zip(base, rng.choice([0.0, 0.5, 1.0], 60),
                                                                            strict=True)],
                [min(1.0, b + 0.5) for b in base], rng.random(60).round(2).tolist()]
    together = paired_p_values(base, currents, binary=False, clusters=clusters, seed=4)
    alone = [paired_p_value(base, c, binary=False, clusters=clusters, seed=4) for c in currents]
    assert together == alone and together[0] == 1.0 and together[2] < 0.01
    passes = rng.integers(0, 2, 60).astype(float).tolist()
    flipped = [[1.0 - p if i < 9 else p for i, p in enumerate(passes)], passes]
    assert paired_p_values(passes, flipped, binary=True) == [paired_p_value(passes, f, binary=True) for f in flipped]
