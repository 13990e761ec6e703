"""Tests for course_lib.collectives (cost07): nccl-tests bandwidths, the ring and binomial-tree
alpha-beta models against step-by-step simulations, the crossover, the fits, the loopback
benchmark on tiny sizes, and every bad-input error."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course_lib.collectives import (
    COLLECTIVES,
    AlphaBeta,
    algorithm_bandwidth,
    bus_bandwidth,
    busbw_factor,
    fit_alpha_beta,
    pingpong_sweep,
    ring_all_reduce_time,
    ring_allreduce_measure,
    ring_tree_crossover,
    simulate_ring_all_reduce,
    synthetic_sweep,
    tree_all_reduce_time,
)

# --- nccl-tests bandwidths -------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 3, 8, 64, 1000])
def test_busbw_factors_are_the_nccl_tests_table(n):
    """doc/PERFORMANCE.md, Summary: 2(n-1)/n, (n-1)/n ×3, 1 ×2."""
    expected = {
        "all_reduce": 2 * (n - 1) / n,
        "all_gather": (n - 1) / n,
        "reduce_scatter": (n - 1) / n,
        "all_to_all": (n - 1) / n,
        "broadcast": 1.0,
        "reduce": 1.0,
    }
    assert set(COLLECTIVES) == set(expected)
    for c, f in expected.items():
        assert busbw_factor(c, n) == pytest.approx(f, rel=1e-15)


def test_algbw_and_busbw_of_an_nccl_tests_row():
    """A 1 GiB all-reduce on 8 ranks in 10 ms: algbw 107.37 GB/s, busbw 7/4 of it."""
    algbw = algorithm_bandwidth(2**30, 10e-3)
    assert algbw == pytest.approx(2**30 / 10e-3)
    assert bus_bandwidth(algbw, "all_reduce", 8) == pytest.approx(algbw * 1.75)
    arr = bus_bandwidth(np.array([1e9, 2e9]), "all_gather", 4)
    np.testing.assert_allclose(arr, [0.75e9, 1.5e9])


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8, 13])
def test_ring_busbw_equals_the_link_bandwidth(n):
    """Brute force behind the factor: in a simulated ring (α = 0), each rank sends 2(n-1)/n·S
    bytes, and algbw × 2(n-1)/n is exactly the link bandwidth 1/β."""
    count = 60 * n
    buffers = np.random.default_rng(n).random((n, count))
    beta = 1 / 50e9
    reduced, elapsed, sent = simulate_ring_all_reduce(buffers, beta=beta)
    size = count * 8
    np.testing.assert_allclose(reduced, np.broadcast_to(buffers.sum(axis=0), (n, count)))
    np.testing.assert_allclose(sent, 2 * (n - 1) / n * size)
    busbw = bus_bandwidth(algorithm_bandwidth(size, elapsed), "all_reduce", n)
    assert busbw == pytest.approx(1 / beta, rel=1e-12)


# --- alpha-beta models -----------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 24),
    chunks=st.integers(1, 40),
    alpha=st.floats(0, 1e-4),
    beta=st.floats(0, 1e-8),
    gamma=st.floats(0, 1e-9),
)
def test_ring_formula_matches_the_step_by_step_ring(n, chunks, alpha, beta, gamma):
    """2(n-1)α + 2((n-1)/n)Sβ + ((n-1)/n)Sγ is the simulated ring's time (S divisible by n)."""
    count = n * chunks
    _, elapsed, _ = simulate_ring_all_reduce(np.ones((n, count)), alpha, beta, gamma)
    expected = ring_all_reduce_time(count * 8, n, alpha, beta, gamma)
    assert elapsed == pytest.approx(expected, rel=1e-12, abs=1e-18)


def _binomial_tree_time(n, size, alpha, beta, gamma):
    """Round-by-round binomial tree: reduce to rank 0 (in round k, rank r with r mod 2^(k+1) =
    2^k sends its partial sum to r - 2^k, which adds it), then broadcast from rank 0 (in round
    k, each rank r < 2^k sends to r + 2^k); a round costs α + Sβ (+ Sγ in the reduce) when at least one message moves."""
    have = [{r} for r in range(n)]
    t, k = 0.0, 0
    while len(have[0]) < n:
        step = 2**k
        moved = False
        for r in range(n):
            if r % (2 * step) == step:
                have[r - step] |= have[r]
                moved = True
        if moved:
            t += alpha + size * beta + size * gamma
        k += 1
    reached, rounds = {0}, 0
    while len(reached) < n:  # round k: every rank r < 2^k that has the result sends to r + 2^k
        reached |= {r + 2**rounds for r in reached if r + 2**rounds < n}
        rounds += 1
    return t + rounds * (alpha + size * beta)


@pytest.mark.parametrize("n", list(range(1, 40)) + [64, 100, 1000])
def test_tree_formula_matches_round_by_round_binomial_tree(n):
    """2⌈log₂ n⌉(α + Sβ) + ⌈log₂ n⌉Sγ is the round count of a binomial reduce + broadcast."""
    a, b, g, s = 3e-6, 1 / 25e9, 1 / 80e9, 1e6
    assert tree_all_reduce_time(s, n, a, b, g) == pytest.approx(
        _binomial_tree_time(n, s, a, b, g), rel=1e-12
    )
    assert tree_all_reduce_time(s, n, a, b) == pytest.approx(
        2 * math.ceil(math.log2(n)) * (a + s * b), rel=1e-12
    )


def test_one_rank_costs_nothing_and_arrays_vectorise():
    assert ring_all_reduce_time(1e9, 1, 1e-5, 1e-9) == 0.0
    assert tree_all_reduce_time(1e9, 1, 1e-5, 1e-9) == 0.0
    sizes = np.array([0.0, 1e3, 1e6])
    np.testing.assert_allclose(
        ring_all_reduce_time(sizes, 8, 1e-5, 1e-9),
        [ring_all_reduce_time(float(s), 8, 1e-5, 1e-9) for s in sizes],
    )


@pytest.mark.parametrize("n", [4, 5, 7, 8, 12, 16, 33, 64, 256, 1024])
@pytest.mark.parametrize("gamma", [0.0, 1 / 100e9])
def test_crossover_is_where_the_models_meet(n, gamma):
    """At S* the two models agree; the tree is faster below, the ring above (dense grid)."""
    a, b = 5e-6, 1 / 40e9
    s_star = ring_tree_crossover(n, a, b, gamma)
    assert s_star > 0
    ring = ring_all_reduce_time(s_star, n, a, b, gamma)
    tree = tree_all_reduce_time(s_star, n, a, b, gamma)
    assert ring == pytest.approx(tree, rel=1e-9)
    grid = np.geomspace(s_star / 100, s_star * 100, 2001)
    diff = ring_all_reduce_time(grid, n, a, b, gamma) - tree_all_reduce_time(grid, n, a, b, gamma)
    below, above = grid < s_star * (1 - 1e-9), grid > s_star * (1 + 1e-9)
    assert (diff[below] > 0).all() and (diff[above] < 0).all()


@pytest.mark.parametrize("n", [1, 2, 3])
def test_no_crossover_when_the_ring_never_loses(n):
    """n <= 3: n - 1 <= ⌈log₂ n⌉, so the ring is never slower and S* = 0."""
    assert ring_tree_crossover(n, 5e-6, 1e-10) == 0.0
    sizes = np.geomspace(1, 1e9, 50)
    assert (
        ring_all_reduce_time(sizes, n, 5e-6, 1e-10)
        <= tree_all_reduce_time(sizes, n, 5e-6, 1e-10) + 1e-18
    ).all()


def test_crossover_without_bandwidth_cost_is_infinite():
    assert ring_tree_crossover(8, 5e-6, 0.0) == math.inf


# --- fitting ---------------------------------------------------------------------------------


def test_fit_recovers_a_noiseless_line_exactly():
    sizes = np.geomspace(8, 2**26, 12)
    fit = fit_alpha_beta(sizes, 7e-6 + sizes / 20e9)
    assert fit.alpha == pytest.approx(7e-6, rel=1e-9)
    assert fit.beta == pytest.approx(1 / 20e9, rel=1e-9)
    assert fit.bandwidth == pytest.approx(20e9, rel=1e-9)
    rel = fit_alpha_beta(sizes, 7e-6 + sizes / 20e9, relative=True)
    assert rel.alpha == pytest.approx(7e-6, rel=1e-9) and rel.beta == pytest.approx(1 / 20e9)


@pytest.mark.parametrize("seed", range(5))
def test_fit_is_numpy_least_squares(seed):
    """OLS equals numpy.polyfit; the relative fit equals polyfit weighted by 1/t."""
    sizes = np.geomspace(8, 2**24, 10)
    times = synthetic_sweep(sizes, 10e-6, 1 / 12e9, noise=0.05, seed=seed)
    beta, alpha = np.polyfit(sizes, times, 1)
    fit = fit_alpha_beta(sizes, times)
    assert (fit.alpha, fit.beta) == pytest.approx((alpha, beta), rel=1e-7)
    beta_w, alpha_w = np.polyfit(sizes, times, 1, w=1 / times)
    rel = fit_alpha_beta(sizes, times, relative=True)
    assert (rel.alpha, rel.beta) == pytest.approx((alpha_w, beta_w), rel=1e-7)


def test_fit_is_unbiased_over_seeded_sweeps():
    """Monte Carlo: over 400 seeded noisy sweeps the mean fitted α and β are within 2 % of the
    truth (the noise is multiplicative with E[exp(ε)] = exp(σ²/2) ≈ 1.0005)."""
    sizes = np.repeat(np.geomspace(8, 2**22, 12), 3)
    fits = [fit_alpha_beta(sizes, synthetic_sweep(sizes, 10e-6, 1e-10, seed=s)) for s in range(400)]
    assert np.mean([f.alpha for f in fits]) == pytest.approx(10e-6, rel=0.02)
    assert np.mean([f.beta for f in fits]) == pytest.approx(1e-10, rel=0.02)


def test_synthetic_sweep_is_seeded():
    a = synthetic_sweep([8, 1024], 1e-6, 1e-9, seed=3)
    np.testing.assert_array_equal(a, synthetic_sweep([8, 1024], 1e-6, 1e-9, seed=3))
    assert not np.array_equal(a, synthetic_sweep([8, 1024], 1e-6, 1e-9, seed=4))
    np.testing.assert_array_equal(
        synthetic_sweep([8, 1024], 1e-6, 1e-9, noise=0), [1e-6 + 8e-9, 1e-6 + 1024e-9]
    )


def test_alphabeta_is_a_frozen_dataclass():
    fit = AlphaBeta(1e-6, 0.0)
    assert fit.bandwidth == math.inf
    with pytest.raises(AttributeError):
        fit.alpha = 2.0  # type: ignore[misc]


# --- loopback benchmark (tiny sizes) ---------------------------------------------------------


def test_pingpong_sweep_measures_every_size():
    df = pingpong_sweep([8, 4096], repeats=3, timeout=5.0)
    assert isinstance(df, pd.DataFrame)
    assert list(df.columns) == ["size_bytes", "time", "p10", "p90", "repeats"]
    assert df.size_bytes.tolist() == [8, 4096]
    assert (df.time > 0).all() and (df.p10 <= df.time).all() and (df.time <= df.p90).all()


def test_pingpong_with_a_competitor_still_answers():
    df = pingpong_sweep([64], repeats=2, competitors=1, timeout=5.0)
    assert df.time.iloc[0] > 0


def test_ring_allreduce_measure_checks_its_sums():
    out = ring_allreduce_measure(3, 3 * 8 * 100, repeats=2, timeout=5.0)
    assert out["num_ranks"] == 3 and out["size_bytes"] == 2400
    assert 0 < out["p10"] <= out["time"] <= out["p90"]


def test_ring_allreduce_measure_large_chunks_use_the_sender_thread():
    """Chunks above the direct-send limit go through a thread (else the ring would deadlock)."""
    out = ring_allreduce_measure(2, 2 * 2**20, repeats=1, timeout=5.0)
    assert out["time"] > 0


# --- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: busbw_factor("allreduce", 8), "unknown collective 'allreduce'"),
        (lambda: bus_bandwidth(1e9, "gather", 8), "unknown collective 'gather'"),
        (lambda: busbw_factor("all_reduce", 0), "num_ranks must be >= 1"),
        (lambda: busbw_factor("all_reduce", 2.0), "num_ranks must be an int"),
        (lambda: busbw_factor("all_reduce", True), "num_ranks must be an int"),
        (lambda: algorithm_bandwidth(1e6, 0.0), "time must be > 0"),
        (lambda: algorithm_bandwidth(-1.0, 1.0), r"size_bytes = -1.0 must be finite and >= 0"),
        (lambda: bus_bandwidth(float("nan"), "all_reduce", 8), "algbw = nan"),
        (lambda: ring_all_reduce_time([1.0, np.nan], 8, 1e-6, 1e-9), r"size_bytes\[1\] = nan"),
        (lambda: ring_all_reduce_time(1e6, 8, -1e-6, 1e-9), "alpha must be >= 0"),
        (lambda: tree_all_reduce_time(1e6, 8, 1e-6, float("inf")), "beta must be finite"),
        (lambda: tree_all_reduce_time(1e6, 8, 1e-6, 1e-9, "x"), "gamma must be a number"),
        (lambda: ring_tree_crossover(0, 1e-6, 1e-9), "num_ranks must be >= 1"),
        (lambda: fit_alpha_beta([1024] * 5, [1e-5] * 5), "at least two distinct message sizes"),
        (lambda: fit_alpha_beta([8], [1e-5]), "at least two distinct message sizes"),
        (lambda: fit_alpha_beta([8, 16], [1e-5]), "sizes and times differ in length: 2 vs 1"),
        (lambda: fit_alpha_beta([8, 16], [1e-5, np.nan]), r"times\[1\] = nan"),
        (lambda: fit_alpha_beta([8, -16], [1e-5, 1e-5]), r"sizes\[1\] = -16.0"),
        (lambda: fit_alpha_beta([8, 16], [1e-5, 0.0]), r"times\[1\] = 0"),
        (lambda: simulate_ring_all_reduce(np.ones(4)), "must be a 2-D"),
        (lambda: synthetic_sweep([8], 1e-6, 1e-9, noise=-1), "noise must be >= 0"),
        (lambda: pingpong_sweep([]), "non-empty list"),
        (lambda: pingpong_sweep([8], repeats=0), "repeats must be >= 1"),
        (lambda: ring_allreduce_measure(1), "num_ranks must be >= 2"),
        (lambda: ring_allreduce_measure(4, 16), "at least num_ranks float64s"),
    ],
)
def test_bad_input_is_named(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --- forbid: one exercise's routine never takes down another's -------------------------------


def test_forbidding_bus_bandwidth_leaves_algorithm_bandwidth_working():
    """Exercise 1 forbids bus_bandwidth and busbw_factor; algorithm_bandwidth (and the shared
    argument checks, in course_lib.validate) keep working, so a learner may use it."""
    from course_lib import collectives
    from course_lib.checks import DelegationError, forbid

    with forbid((collectives, "bus_bandwidth"), (collectives, "busbw_factor"), exercise="Ex 1"):
        assert algorithm_bandwidth(2**30, 10e-3) == pytest.approx(2**30 / 10e-3)
        with pytest.raises(DelegationError, match="collectives.bus_bandwidth"):
            bus_bandwidth(1e9, "all_reduce", 8)
    assert bus_bandwidth(1e9, "all_reduce", 8) == pytest.approx(1.75e9)


def test_forbidding_exercise_3s_models_leaves_bandwidths_and_the_crossover_working():
    """Exercise 3 forbids the ring, tree and simulated all-reduce; bus_bandwidth (a learner's
    route to algbw) and Exercise 5's neighbours still run."""
    from course_lib import collectives
    from course_lib.checks import forbid

    targets = [
        (collectives, n)
        for n in ("ring_all_reduce_time", "tree_all_reduce_time", "simulate_ring_all_reduce")
    ]
    with forbid(*targets, exercise="Ex 3"):
        assert bus_bandwidth(1e9, "all_reduce", 16) == pytest.approx(1e9 * 30 / 16)
        assert ring_tree_crossover(16, 5e-6, 1 / 25e9) > 0
        assert fit_alpha_beta([0, 1], [1.0, 2.0]).beta == pytest.approx(1.0)
    with forbid((collectives, "ring_tree_crossover"), exercise="Ex 5"):
        assert tree_all_reduce_time(1e6, 16, 1e-6, 1e-9) > 0
        assert ring_all_reduce_time(1e6, 16, 1e-6, 1e-9) > 0
