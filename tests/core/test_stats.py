from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from nomad_eval.core.stats import (
    Interval,
    adjust,
    mean_interval,
    minimum_detectable_effect,
    paired_interval,
    paired_p_value,
    planning_sd,
    questions_needed,
    rank_against_reference,
)


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


@pytest.mark.parametrize("method", ["holm", "fdr_bh"])
def test_adjust_is_multipletests(method: str) -> None:
    p = [0.001, 0.04, 0.03, 0.2, 0.012]
    expected = multipletests(p, method=method)[1]
    assert adjust(p, method) == pytest.approx(list(expected))  # type: ignore[arg-type]
    assert adjust(p, method) != p  # type: ignore[arg-type]
    assert adjust([], method) == []  # type: ignore[arg-type]
    # Ties, ones, a single p, and many random families: the hand-written Holm must stay statsmodels' Holm.
    rng = np.random.default_rng(7)
    families = [[0.01, 0.01, 0.5, 1.0, 0.01], [0.3], *[list(rng.random(int(rng.integers(2, 30))) ** 3)
                                                         for _ in range(200)]]
    for fam in families:
        assert adjust(fam, method) == pytest.approx(list(multipletests(fam, method=method)[1]), abs=1e-12)  # type: ignore[arg-type]


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


@pytest.mark.parametrize("kind", ["uniform", "rare_binary", "three_level"])
def test_large_suites_get_scipys_bca_interval_with_the_jackknife_in_closed_form(kind: str) -> None:
    from nomad_eval.core.stats import BCA_JACKKNIFE_MAX

    rng = np.random.default_rng(9)
    n = BCA_JACKKNIFE_MAX + 500
    x = {"uniform": rng.random(n), "rare_binary": (rng.random(n) < 0.08).astype(float),
         "three_level": rng.integers(0, 3, n) / 2}[kind]
    ours = mean_interval(x, seed=4)
    ref = stats.bootstrap((x,), lambda v, axis=-1: np.mean(v, axis=axis), n_resamples=2000, vectorized=True,
                          paired=True, rng=np.random.default_rng(4), method="BCa").confidence_interval
    assert ours is not None
    assert ours.low == pytest.approx(float(ref.low), abs=1e-12)
    assert ours.high == pytest.approx(float(ref.high), abs=1e-12)
    # Not the percentile interval in disguise: BCa moves the ends when the distribution is skewed.
    pct = stats.bootstrap((x,), lambda v, axis=-1: np.mean(v, axis=axis), n_resamples=2000, vectorized=True,
                          rng=np.random.default_rng(4), method="percentile").confidence_interval
    assert (ours.low, ours.high) != (float(pct.low), float(pct.high))


@pytest.mark.parametrize("method", ["BCa", "percentile", "basic"])
def test_shared_resamples_give_scipys_interval_bit_for_bit(method: str) -> None:
    # The resample indices are drawn once per (n, resamples, seed) and reused across metrics; the interval must
    # be exactly what scipy gives when it draws them itself, on the first call and on a cached one.
    rng = np.random.default_rng(3)
    # Whole numbers (0/1, and -1/0/1 deltas) take the draw-count product; fractions numpy's own summation.
    # BCa's own steps (core/resampling.py bca_from) are checked against scipy's here too, degenerate samples included.
    # Halves and quarters (recall over 2 or 4 relevant documents, and their deltas) take the product too.
    samples = [rng.integers(0, 2, 230).astype(float), rng.integers(-1, 2, 120).astype(float),
               rng.choice([0, 1 / 3, 0.5, 2 / 3, 1], 230), rng.random(57), np.r_[1.0, np.zeros(229)],
               rng.random(3), rng.choice([0, 0.25, 0.5, 0.75, 1], 230), rng.choice([-1, -0.5, 0, 0.5, 1], 230),
               rng.choice([0, 0.5, 1], 230) * 1e13]
    for x in samples:
        ref = stats.bootstrap((x,), lambda v, axis=-1: np.mean(v, axis=axis), n_resamples=2000, vectorized=True,
                              rng=np.random.default_rng(7), method=method).confidence_interval
        for _ in range(2):
            ours = mean_interval(x, seed=7, method=method)  # type: ignore[arg-type]
            assert ours is not None
            assert (ours.low, ours.high) == (float(ref.low), float(ref.high))
    # Another seed draws other resamples: the cache is keyed by it.
    other = mean_interval(samples[2], seed=8)
    assert other is not None and (other.low, other.high) != (float(ref.low), float(ref.high))


def test_shared_sign_flips_give_the_seeded_tests_p_value_exactly() -> None:
    # The sign flips are drawn once per (n, resamples, seed) and reused; the p-value must be the one the test
    # gets drawing them itself from default_rng(seed), as it did before.
    from nomad_eval.core.stats import paired_p_value

    rng = np.random.default_rng(12)
    # Fractions take the flipped deltas' own means; whole numbers and halves one product with the flips.
    for n, kind in [(40, "fractions"), (230, "fractions"), (40, "halves"), (230, "halves"), (230, "whole")]:
        base, cur = {"fractions": (rng.random(n), rng.random(n) + 0.05),
                     "halves": (rng.choice([0, 0.5, 1], n), rng.choice([0, 0.5, 1], n, p=[0.2, 0.3, 0.5])),
                     "whole": (rng.choice([0.0, 1.0], n), rng.choice([0.0, 1.0], n, p=[0.3, 0.7]))}[kind]
        for alternative, side in [("two-sided", "two-sided"), ("worse_if_lower", "less")]:
            flips = np.random.default_rng(3)
            d = cur - base
            ref = stats.monte_carlo_test(d, lambda size, d=d, f=flips: d * (f.integers(0, 2, size=size, dtype=np.int8)
                                                                             * 2 - 1),
                                         lambda v, axis=-1: np.mean(v, axis=axis), vectorized=True,
                                         n_resamples=10000, alternative=side).pvalue
            for _ in range(2):
                assert paired_p_value(base, cur, binary=False, alternative=alternative, seed=3) == min(1.0, ref)


def test_quantiles_are_scipys_to_the_bit() -> None:
    # The BCa ends are read off the bootstrap distribution in scipy's own quantile steps (resampling.quantiles).
    from nomad_eval.core.resampling import quantiles

    rng = np.random.default_rng(21)
    dists = [rng.random(2000), rng.choice([0.0, 0.25, 0.5, 1.0], 2000), rng.normal(size=7), np.array([3.0]),
             np.full(50, 0.125), np.r_[rng.random(20), np.nan]]
    ps = [np.array([0.025, 0.975]), np.array([0.0, 1.0]), np.array([np.nan, 0.5]), np.array([-0.1, 1.1]),
          rng.random(5), np.array([1e-12, 1 - 1e-12])]
    for dist in dists:
        for p in ps:
            ref = np.asarray(stats.quantile(dist, p))
            np.testing.assert_array_equal(quantiles(dist, p), ref)
