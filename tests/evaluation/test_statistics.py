"""Paired statistics against cases small enough to work out by hand."""

from __future__ import annotations

import pytest

from modrag_studio.evaluation.statistics import (
    bootstrap_ci,
    compare_paired,
    randomization_p_value,
    wins_losses_ties,
)


def test_exact_sign_flip_p_value_of_three_deltas():
    # deltas 1, 2, 3: the 8 sign patterns sum to 6, 4, 2, 0, 0, -2, -4, -6; |sum| >= 6 twice.
    p, exact = randomization_p_value([0, 0, 0], [1, 2, 3])
    assert exact
    assert p == pytest.approx(2 / 8)


def test_zero_deltas_do_not_count_and_ties_reach_the_observed_sum():
    # non-zero deltas 1, -1, 2 (observed sum 2): sums 4, 2, 2, 0, 0, -2, -2, -4; six reach 2.
    p, exact = randomization_p_value([1, 1, 0, 5], [2, 0, 2, 5])
    assert exact
    assert p == pytest.approx(6 / 8)


def test_identical_variants_give_p_one_and_a_zero_interval():
    result = compare_paired([0.2, 0.5, 0.9], [0.2, 0.5, 0.9])
    assert (result.p_value, result.delta, result.ci95) == (1.0, 0.0, (0.0, 0.0))


def test_bootstrap_interval_of_two_deltas():
    # Resampled means of deltas (0, 1) are 0 (p 1/4), 0.5 (1/2) or 1 (1/4): the 2.5 % and
    # 97.5 % quantiles are 0 and 1.
    assert bootstrap_ci([0, 0], [0, 1]) == (0.0, 1.0)


def test_sampled_test_when_many_queries_and_seed_fixed():
    a = [0.0] * 40
    b = [0.1 * ((i % 5) - 1) for i in range(40)]  # mean delta 0.1, mostly positive
    first = compare_paired(a, b)
    assert not first.exact
    assert first == compare_paired(a, b)  # fixed seed: same numbers every time
    assert first.p_value < 0.01
    assert first.ci95[0] < first.delta < first.ci95[1]
    assert first.ci95[0] > 0


def test_wins_losses_ties_and_length_check():
    assert wins_losses_ties([0.5, 0.5, 0.5, 0.1], [0.7, 0.2, 0.5, 0.1]) == {
        "wins": 1, "losses": 1, "ties": 2}
    with pytest.raises(ValueError, match="differ in length"):
        compare_paired([1.0], [1.0, 2.0])


def test_the_sampled_p_value_is_calibrated_under_no_effect():
    """Deltas with no effect (symmetric noise): about 5 % of data sets reach p < 0.05."""
    import numpy as np

    rng = np.random.default_rng(7)
    p_values = []
    for _ in range(500):
        noise = rng.normal(0.0, 0.1, size=30)
        p, exact = randomization_p_value([0.0] * 30, list(noise), permutations=2000, seed=1)
        assert not exact
        p_values.append(p)
    rejected = sum(p < 0.05 for p in p_values) / len(p_values)
    assert 0.025 <= rejected <= 0.08, rejected  # 0.05 +- 2.5 standard errors
    assert 0.35 <= float(np.median(p_values)) <= 0.65  # uniform under the null


def test_the_switch_from_exact_to_sampled_is_at_sixteen_non_zero_deltas():
    from modrag_studio.evaluation.statistics import EXACT_UP_TO

    assert EXACT_UP_TO == 16
    ties = [0.0] * 10  # zero deltas do not count towards the switch
    deltas = [0.1 * (1 + i % 3) for i in range(16)]
    p16, exact16 = randomization_p_value([0.0] * 26, deltas + ties)
    p17, exact17 = randomization_p_value([0.0] * 27, [*deltas, 0.2] + ties)
    assert exact16 and not exact17
    # all positive: the exact p-value is 2 / 2**16 (all + and all -); sampled, it is tiny
    assert p16 == 2 / 2**16
    assert p17 < 0.001
