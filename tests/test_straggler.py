"""Tests for course_lib.straggler (cost06): closed forms against brute force and seeded Monte
Carlo, the syllabus's numbers reproduced, and every bad input rejected with a clear error."""

from __future__ import annotations

import itertools
import math
import multiprocessing
import time

import numpy as np
import pytest

import course_lib.straggler as straggler
from course_lib.straggler import (
    MonteCarloMax,
    barrier_times,
    exercise_run,
    expected_max,
    expected_max_monte_carlo,
    expected_max_normal,
    measure_completion,
    normal_cdf,
    persistent_stragglers,
    prob_slow_step,
    prob_slow_step_hosts,
    rank_waits,
    simulate_slow_steps,
    slowest_counts,
    synthetic_completion,
)

SMALL = np.array([[1.0, 3.0, 2.0], [4.0, 1.0, 2.0], [1.0, 2.5, 2.0]])


# --- barrier times and waits ------------------------------------------------------------------


def test_barrier_is_the_row_maximum_by_brute_force():
    """The barrier of each step is the largest completion time, found by a Python loop."""
    c = synthetic_completion(25, 7, mean=0.1, rank_std=0.01, seed=1)
    loop = [max(row) for row in c.tolist()]
    np.testing.assert_array_equal(barrier_times(c), loop)
    assert barrier_times(SMALL).tolist() == [3.0, 4.0, 2.5]


def test_waits_are_barrier_minus_own_and_the_last_rank_waits_zero():
    w = rank_waits(SMALL)
    np.testing.assert_array_equal(w, [[2.0, 0.0, 1.0], [0.0, 3.0, 2.0], [1.5, 0.0, 0.5]])
    c = synthetic_completion(30, 5, mean=0.2, rank_std=0.02, seed=2)
    w = rank_waits(c)
    assert (w >= 0).all()
    assert np.all(w.min(axis=1) == 0)  # the slowest rank of every step waits for nobody
    np.testing.assert_allclose(w + c, np.repeat(barrier_times(c)[:, None], 5, axis=1))


def test_slowest_counts_and_persistent_stragglers():
    assert slowest_counts(SMALL).tolist() == [1, 2, 0]
    assert persistent_stragglers(SMALL) == (1,)
    half = np.array([[1.0, 3.0], [3.0, 1.0]])
    assert persistent_stragglers(half) == ()  # exactly half is not "more than half"
    c = synthetic_completion(
        40, 8, mean=0.1, rank_std=0.002, slow_ranks={3: 1.05}, spikes=[(17, 6, 0.3)], seed=61
    )
    assert persistent_stragglers(c) == (3,)
    assert int(c.mean(axis=0).argmax()) == 6  # the transient spike has the largest mean
    iid = synthetic_completion(200, 8, mean=0.1, rank_std=0.003, seed=6)
    assert persistent_stragglers(iid) == ()
    assert slowest_counts(iid).sum() == 200


# --- probability of a slow step -----------------------------------------------------------------


def test_tail_at_scale_number():
    """Dean & Barroso 2013: p = 0.01 at 100 servers gives 63 %; the syllabus says 0.634."""
    assert round(prob_slow_step(0.01, 100), 3) == 0.634
    assert prob_slow_step(0.0, 10) == 0.0
    assert prob_slow_step(1.0, 10) == 1.0
    assert prob_slow_step(0.3, 1) == pytest.approx(0.3)


def test_prob_slow_step_by_exhaustive_enumeration():
    """Sum over all 2^n slow/fast patterns of the probability of those with a slow rank."""
    p, n = 0.17, 6
    total = sum(
        math.prod(p if s else 1 - p for s in pattern)
        for pattern in itertools.product((0, 1), repeat=n)
        if any(pattern)
    )
    assert prob_slow_step(p, n) == pytest.approx(total, rel=1e-12)


def test_host_model_by_exhaustive_enumeration():
    """2 hosts of 2 ranks: enumerate host and rank events, compare with the closed form."""
    ph, pr, g, hosts = 0.2, 0.1, 2, 2
    n = g * hosts
    total = 0.0
    for host_events in itertools.product((0, 1), repeat=hosts):
        for rank_events in itertools.product((0, 1), repeat=n):
            prob = math.prod(ph if e else 1 - ph for e in host_events)
            prob *= math.prod(pr if e else 1 - pr for e in rank_events)
            slow = [rank_events[r] or host_events[r // g] for r in range(n)]
            total += prob * any(slow)
    assert prob_slow_step_hosts(pr, ph, n, g) == pytest.approx(total, rel=1e-12)


def test_host_model_reduces_to_iid():
    assert prob_slow_step_hosts(3e-3, 0.0, 1024, 8) == pytest.approx(prob_slow_step(3e-3, 1024))
    # one rank per host: host and rank draws are both independent per rank
    p = 1 - (1 - 2e-3) * (1 - 1e-3)
    assert prob_slow_step_hosts(1e-3, 2e-3, 512, 1) == pytest.approx(prob_slow_step(p, 512))
    # the lesson's numbers: 4096 ranks, p_rank = 1e-4, p_host = 4e-4, hosts of 8
    assert round(prob_slow_step_hosts(1e-4, 4e-4, 4096, 8), 3) == 0.459
    assert round(prob_slow_step(1 - (1 - 4e-4) * (1 - 1e-4), 4096), 3) == 0.871


def test_host_model_against_seeded_simulation():
    """Fraction of simulated steps with a slow rank, within 4 binomial standard errors."""
    pr, ph, steps, n, g = 2e-3, 6e-3, 40_000, 64, 8
    slow = simulate_slow_steps(pr, ph, steps, n, g, seed=7)
    assert slow.shape == (steps, n)
    expected = prob_slow_step_hosts(pr, ph, n, g)
    se = math.sqrt(expected * (1 - expected) / steps)
    assert abs(slow.any(axis=1).mean() - expected) < 4 * se
    marginal = 1 - (1 - ph) * (1 - pr)
    assert abs(slow.mean() - marginal) < 4 * math.sqrt(marginal / (steps * n / g))
    # a host's ranks are slow together: all 8 ranks of host 0 share the host draws
    assert slow[:, :8].all(axis=1).mean() > 0.5 * ph


# --- the expected maximum ------------------------------------------------------------------------


@pytest.mark.parametrize("n, value", [(8, 1.4236), (100, 2.5076), (1024, 3.2482)])
def test_syllabus_expected_max_of_normals(n, value):
    assert round(expected_max_normal(n), 4) == value
    assert round(expected_max(n, normal_cdf, -12.0, 12.0), 4) == value


def test_expected_max_closed_forms():
    """n = 1 and 2 normals (0 and 1/√π), exponential (harmonic numbers), uniform (n/(n+1))."""
    assert expected_max_normal(1) == pytest.approx(0.0, abs=1e-12)
    assert expected_max_normal(2) == pytest.approx(1 / math.sqrt(math.pi), rel=1e-10)
    assert expected_max_normal(8, mean=0.1, std=0.003) == pytest.approx(0.1 + 0.003 * 1.42360031)
    for n in (1, 3, 8, 50):
        harmonic = sum(1 / k for k in range(1, n + 1))
        assert expected_max(n, lambda x: -np.expm1(-x), 0.0, 60.0) == pytest.approx(harmonic)
        uniform = expected_max(n, lambda x: np.clip((x - 2) / 3, 0, 1), 2.0, 5.0)
        assert uniform == pytest.approx(2 + 3 * n / (n + 1), rel=1e-10)
    # a distribution entirely below zero: uniform on [-5, -2]
    below = expected_max(4, lambda x: np.clip((x + 5) / 3, 0, 1), -5.0, -2.0)
    assert below == pytest.approx(-5 + 3 * 4 / 5, rel=1e-10)


@pytest.mark.parametrize("n", [8, 100, 1024])
def test_expected_max_against_monte_carlo(n):
    est = expected_max_monte_carlo(n, lambda r, s: r.standard_normal(s), num_trials=20_000, seed=n)
    assert isinstance(est, MonteCarloMax) and est.num_trials == 20_000
    assert abs(est.mean - expected_max_normal(n)) < 4 * est.std_error
    # seeded: the same seed gives the same estimate
    again = expected_max_monte_carlo(
        n, lambda r, s: r.standard_normal(s), num_trials=20_000, seed=n
    )
    assert again == est


def test_monte_carlo_of_a_heavy_tail_exceeds_the_normal():
    """Lognormal times (σ = 1) against normal: the maximum grows faster with the heavier tail."""
    heavy = [
        expected_max_monte_carlo(n, lambda r, s: r.lognormal(0, 1, s), num_trials=4000, seed=3)
        for n in (8, 512)
    ]
    assert heavy[1].mean / heavy[0].mean > expected_max_normal(512) / expected_max_normal(8)


# --- synthetic and real completion matrices -----------------------------------------------------


def test_synthetic_completion_is_seeded_and_host_correlated():
    a = synthetic_completion(
        300, 16, mean=0.1, rank_std=0.001, host_std=0.003, ranks_per_host=8, seed=4
    )
    b = synthetic_completion(
        300, 16, mean=0.1, rank_std=0.001, host_std=0.003, ranks_per_host=8, seed=4
    )
    np.testing.assert_array_equal(a, b)
    corr = np.corrcoef(a.T)
    assert corr[0, 1] > 0.8 and abs(corr[0, 8]) < 0.2  # same host vs different hosts
    spiked = synthetic_completion(5, 2, mean=1.0, rank_std=0.0, spikes=[(2, 1, 0.5)], seed=0)
    assert spiked[2, 1] == 1.5 and spiked[1, 1] == 1.0


def test_measure_completion_tiny():
    """A real measurement on a tiny size: the right shape, non-negative, one rank starts at 0."""
    c = measure_completion(2, 3, work_size=1000, repeats=1, timeout=10.0)
    assert c.shape == (3, 2)
    assert np.isfinite(c).all() and (c >= 0).all()


_REAL_WORKER = straggler._measure_worker


def _stuck_rank_zero(rank, *args):
    """Rank 0 never reaches the barrier (as if SIGSTOPped); the others run the real worker."""
    if rank == 0:
        time.sleep(60)
    _REAL_WORKER(rank, *args)


def _all_stuck(rank, *args):
    time.sleep(60)


@pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="the patch reaches forked workers"
)
@pytest.mark.parametrize("worker", [_stuck_rank_zero, _all_stuck])
def test_measure_completion_gives_up_soon_on_a_stuck_worker(monkeypatch, worker):
    """One stuck worker: the others' barrier breaks after ``timeout`` and the parent stops at once;
    all stuck: the overall deadline (timeout + margin). No worker survives either way."""
    monkeypatch.setattr(straggler, "_measure_worker", worker)
    before = set(multiprocessing.active_children())
    t0 = time.monotonic()
    with pytest.raises(TimeoutError, match="did not finish"):
        measure_completion(3, 20, work_size=1000, repeats=1, timeout=1.0)
    assert time.monotonic() - t0 < 1.0 + straggler._MARGIN + 1.5
    assert not (set(multiprocessing.active_children()) - before)


def test_exercise_runs_are_seeded_matrices():
    assert exercise_run("ex1").shape == (40, 8)
    assert np.array_equal(exercise_run("run_b"), exercise_run("run_b"))
    with pytest.raises(ValueError, match="name must be one of"):
        exercise_run("run_z")


# --- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad, message",
    [
        (np.array([[0.1, np.nan], [0.1, 0.2]]), r"completion\[0, 1\] = nan: .* finite"),
        (np.array([[0.1, 0.2], [-0.1, 0.2]]), r"completion\[1, 0\] = -0.1: .* >= 0"),
        (np.array([0.1, 0.2]), r"2-D"),
        (np.zeros((0, 3)), r"non-empty"),
        ([["a", "b"]], r"array of seconds"),
    ],
)
def test_bad_completion_matrices(bad, message):
    for func in (barrier_times, rank_waits, slowest_counts, persistent_stragglers):
        with pytest.raises(ValueError, match=message):
            func(bad)


def test_bad_probabilities_and_counts():
    with pytest.raises(ValueError, match=r"p_slow must be in \[0, 1\]"):
        prob_slow_step(1.5, 10)
    with pytest.raises(ValueError, match=r"p_slow must be in \[0, 1\]"):
        prob_slow_step(float("nan"), 10)
    with pytest.raises(ValueError, match="num_ranks must be >= 1"):
        prob_slow_step(0.1, 0)
    with pytest.raises(ValueError, match="num_ranks must be an int"):
        prob_slow_step(0.1, 2.5)
    with pytest.raises(ValueError, match="p_host must be in"):
        prob_slow_step_hosts(0.1, -0.1, 8, 8)
    with pytest.raises(ValueError, match="not a whole number of hosts"):
        prob_slow_step_hosts(0.1, 0.1, 12, 8)
    with pytest.raises(ValueError, match="min_fraction must be in"):
        persistent_stragglers(SMALL, 2.0)


def test_bad_expected_max_inputs():
    with pytest.raises(ValueError, match="lower < upper"):
        expected_max(4, normal_cdf, 1.0, 1.0)
    with pytest.raises(ValueError, match="outside \\[0, 1\\]"):
        expected_max(4, lambda x: x, -1.0, 2.0)
    with pytest.raises(ValueError, match="cdf returned shape"):
        expected_max(4, lambda x: np.zeros(3), 0.0, 1.0)
    with pytest.raises(ValueError, match="std must be"):
        expected_max_normal(4, std=-1.0)
    with pytest.raises(ValueError, match="sample returned shape"):
        expected_max_monte_carlo(4, lambda r, s: r.standard_normal(3), num_trials=10)
    with pytest.raises(ValueError, match="NaN"):
        expected_max_monte_carlo(4, lambda r, s: np.full(s, np.nan), num_trials=10)


def test_bad_synthetic_and_measurement_inputs():
    with pytest.raises(ValueError, match="slow_ranks: rank 9"):
        synthetic_completion(3, 4, mean=1.0, rank_std=0.1, slow_ranks={9: 1.1}, seed=0)
    with pytest.raises(ValueError, match="spikes"):
        synthetic_completion(3, 4, mean=1.0, rank_std=0.1, spikes=[(5, 0, 1.0)], seed=0)
    with pytest.raises(ValueError, match="rank_std must be"):
        synthetic_completion(3, 4, mean=1.0, rank_std=-0.1, seed=0)
    with pytest.raises(ValueError, match="num_workers must be >= 1"):
        measure_completion(0)
    with pytest.raises(ValueError, match="timeout must be > 0"):
        measure_completion(1, timeout=0.0)
