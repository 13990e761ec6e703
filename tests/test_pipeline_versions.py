"""course_lib.pipeline.versions (pipe07): the vectorized replay against a plain per-action replay
(random schedules of every shape, split backwards included), the closed forms for 1F1B against
the replay (PipeDream's j - (p - 1 - s) and p - s versions, 2BW's max(⌊j/m⌋ - 1, 0) and 2, one
version when flushed), bad input, and delayed gradient descent against its closed form and the
stability bound."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from course_lib.pipeline import (
    Action,
    Schedule,
    gpipe,
    interleaved_1f1b,
    one_f_one_b,
    simulate,
    zero_bubble_h1,
)
from course_lib.pipeline.versions import (
    POLICIES,
    delayed_gradient_descent,
    delayed_rate,
    max_stable_step,
    quadratic_loss,
    random_quadratic,
    scalar_delayed_closed_form,
    stage_order,
    stashing_version,
    stashing_versions_held,
    two_bw_version,
    weight_versions,
)
from tests.strategies import random_pipeline_schedules


def _reference(schedule: Schedule, policy: str, m: int | None = None) -> dict[str, np.ndarray]:
    """A plain replay, one action at a time, of each stage's order in the simulated timeline.

    Walks stage 0 first (2BW fixes a batch's version there), keeps a current version counter, a
    stash per microbatch and the gradients completed per batch; versions held while an action
    runs are the current version plus every version a later action of the stage still uses.
    """
    order = stage_order(simulate(schedule, 1.0, 1.0, 1.0))
    p, num_mb = schedule.num_stages, schedule.num_microbatches
    release = "W" if schedule.has_weight_actions else "B"
    forward = np.full((p, num_mb), -1)
    latest = np.full((p, num_mb), -1)
    held = np.zeros(p, dtype=int)
    batch_version: dict[int, int] = {}
    for s in range(p):
        current, done = 0, set()
        versions_at: list[int] = []  # version each action of the stage runs on, in order
        currents: list[int] = []
        for action in order[s]:
            j = action.microbatch
            if action.kind == "F":
                if policy == "2bw":
                    batch_version.setdefault(j // m, current)  # stage 0 sees the batch first
                    assert batch_version[j // m] <= current  # the version exists on stage s
                    forward[s, j] = batch_version[j // m]
                else:
                    forward[s, j] = current
            versions_at.append(int(forward[s, j]))
            currents.append(current)
            if action.kind == release:
                latest[s, j] = current
                done.add(j)
                if policy == "stashing":
                    current += 1
                elif policy == "2bw":
                    while all(k in done for k in range(current * m, (current + 1) * m)):
                        current += 1
                        if current * m >= num_mb:
                            break
        if policy == "flushed":
            current += 1
        for i in range(len(order[s])):
            alive = {currents[i]} | {v for v in versions_at[i:] if v <= currents[i]}
            held[s] = max(held[s], len(alive))
    return {"forward": forward, "latest": latest, "held": held}


def _check_against_reference(schedule: Schedule, policy: str, m: int | None = None) -> None:
    result = weight_versions(schedule, policy, m)
    expected = _reference(schedule, policy, m)
    np.testing.assert_array_equal(result.forward, expected["forward"])
    np.testing.assert_array_equal(result.backward, expected["forward"])
    np.testing.assert_array_equal(result.latest, expected["latest"])
    np.testing.assert_array_equal(result.held, expected["held"])
    assert [int(h.max()) for h in result.held_per_action] == result.held.tolist()


@pytest.mark.parametrize("policy", ["flushed", "stashing"])
@pytest.mark.parametrize(
    "schedule",
    [gpipe(3, 5), one_f_one_b(4, 9), interleaved_1f1b(2, 4, 2), zero_bubble_h1(3, 7)],
    ids=["gpipe", "1f1b", "interleaved", "zb-h1"],
)
def test_replay_matches_a_plain_replay_on_every_generator(schedule, policy):
    """Versions used, newest at the gradient and peak versions held equal the per-action replay."""
    _check_against_reference(schedule, policy)


@pytest.mark.parametrize(
    "schedule,m",
    [(one_f_one_b(4, 12), 4), (one_f_one_b(3, 12), 6), (gpipe(3, 6), 3), (zero_bubble_h1(3, 9), 3)],
    ids=["1f1b-m=p", "1f1b-m=2p", "gpipe", "zb-h1"],
)
def test_2bw_replay_matches_a_plain_replay(schedule, m):
    _check_against_reference(schedule, "2bw", m)


@settings(max_examples=40, deadline=None)
@given(random_pipeline_schedules(max_ranks=3, max_chunks=2, max_microbatches=6), st.data())
def test_replay_matches_a_plain_replay_on_random_orders(schedule, data):
    """Any deadlock-free per-rank order (random topological orders, with or without W)."""
    policy = data.draw(st.sampled_from(POLICIES))
    m = None
    if policy == "2bw":
        divisors = [
            d for d in range(schedule.num_stages, schedule.num_microbatches + 1)
            if schedule.num_microbatches % d == 0
        ]  # fmt: skip
        assume(divisors)
        m = data.draw(st.sampled_from(divisors))
    _check_against_reference(schedule, policy, m)


def test_a_timeline_and_its_schedule_give_the_same_versions():
    """Only each stage's order matters: unequal costs and latency leave the versions unchanged."""
    schedule = one_f_one_b(4, 10)
    timeline = simulate(schedule, [1.0, 3.0, 0.5, 2.0], [2.0, 1.0, 4.0, 1.0], p2p_latency=0.7)
    a, b = weight_versions(schedule, "stashing"), weight_versions(timeline, "stashing")
    np.testing.assert_array_equal(a.forward, b.forward)
    np.testing.assert_array_equal(a.held, b.held)


# --- closed forms against the replay ----------------------------------------------------------


@pytest.mark.parametrize("p,num_mb", [(1, 5), (2, 3), (4, 16), (5, 9), (6, 4), (8, 20)])
def test_pipedream_versions_are_j_minus_the_warmup(p, num_mb):
    """F(s, j) of 1F1B runs on version max(0, j - min(m, p - s - 1)); staleness min(j, w)."""
    result = weight_versions(one_f_one_b(p, num_mb), "stashing")
    for s in range(p):
        w = min(num_mb, p - s - 1)
        for j in range(num_mb):
            assert result.forward[s, j] == stashing_version(s, j, p, num_mb)
            assert result.staleness[s, j] == min(j, w)
    assert (result.updates == num_mb).all()


@pytest.mark.parametrize("p", [1, 2, 3, 4, 6, 8])
def test_pipedream_holds_p_minus_s_versions_in_steady_state(p):
    """Stage s holds p - s versions once the stream is long enough; staleness p - 1 - s there, and
    a microbatch's versions span p - 1 across stages (no consistent model)."""
    num_mb = 2 * p + 3
    result = weight_versions(one_f_one_b(p, num_mb), "stashing")
    np.testing.assert_array_equal(result.held, stashing_versions_held(p))
    np.testing.assert_array_equal(result.staleness[:, -1], p - 1 - np.arange(p))
    assert result.spread[p - 1] == p - 1  # microbatch p - 1 meets stage 0 at version 0
    assert result.synchronous == (p == 1)


@pytest.mark.parametrize("p,m,batches", [(2, 2, 3), (4, 4, 4), (4, 7, 3), (3, 9, 2)])
def test_2bw_versions_are_one_batch_stale_and_two_are_held(p, m, batches):
    """Every stage runs microbatch j on max(⌊j/m⌋ - 1, 0), holds at most 2 versions (exactly 2 once
    a second batch runs), and each batch after the first gets a gradient one version stale."""
    result = weight_versions(one_f_one_b(p, m * batches), "2bw", microbatches_per_batch=m)
    for j in range(m * batches):
        assert (result.forward[:, j] == two_bw_version(j, m)).all()
    np.testing.assert_array_equal(result.held, np.full(p, 2 if batches >= 2 else 1))
    expected = (np.arange(m * batches) >= m).astype(int)
    np.testing.assert_array_equal(result.staleness, np.broadcast_to(expected, (p, m * batches)))
    assert (result.spread == 0).all()
    assert (result.updates == batches).all()


def test_2bw_on_one_stage_is_synchronous():
    """With p = 1 a batch enters after the previous one's update: version b, nothing stale (the
    paper's formula assumes a pipeline, where the next batch enters before the update)."""
    result = weight_versions(one_f_one_b(1, 12), "2bw", microbatches_per_batch=3)
    np.testing.assert_array_equal(result.forward[0], np.arange(12) // 3)
    assert result.synchronous and result.held.tolist() == [1]


@pytest.mark.parametrize(
    "schedule",
    [gpipe(4, 8), one_f_one_b(4, 8), interleaved_1f1b(4, 8, 2), zero_bubble_h1(4, 8)],
    ids=["gpipe", "1f1b", "interleaved", "zb-h1"],
)
def test_flushed_schedules_hold_one_version_and_are_synchronous(schedule):
    result = weight_versions(schedule, "flushed")
    assert (result.forward == 0).all() and (result.held == 1).all() and (result.updates == 1).all()
    assert result.synchronous


def test_stashing_without_a_flush_on_gpipe_order_lets_staleness_grow():
    """All forwards run before the first update: backward j is j updates stale, 2 versions held."""
    result = weight_versions(gpipe(3, 6), "stashing")
    assert (result.forward == 0).all()
    np.testing.assert_array_equal(result.staleness, np.tile(np.arange(6), (3, 1)))
    assert (result.held == 2).all()


# --- bad input --------------------------------------------------------------------------------


def test_bad_policy_and_batch_size_are_named():
    schedule = one_f_one_b(4, 8)
    with pytest.raises(ValueError, match="policy must be one of"):
        weight_versions(schedule, "async")
    with pytest.raises(TypeError, match="policy"):
        weight_versions(schedule, 2)
    with pytest.raises(ValueError, match=r"microbatches_per_batch=2 is below num_stages=4"):
        weight_versions(schedule, "2bw", microbatches_per_batch=2)
    with pytest.raises(ValueError, match="microbatches_per_batch is required"):
        weight_versions(schedule, "2bw")
    with pytest.raises(ValueError, match="must divide num_microbatches=8"):
        weight_versions(schedule, "2bw", microbatches_per_batch=5)
    with pytest.raises(ValueError, match="applies to policy '2bw' only"):
        weight_versions(schedule, "stashing", microbatches_per_batch=4)
    with pytest.raises(TypeError, match="microbatches_per_batch"):
        weight_versions(schedule, "2bw", microbatches_per_batch=4.0)
    with pytest.raises(TypeError, match="timeline must be a Timeline or a Schedule"):
        weight_versions([[Action("F", 0, 0)]], "flushed")


def test_a_missing_backward_is_named():
    """B(0, 1) is not listed (nothing waits for it, so the simulation completes)."""
    actions = [Action("F", 0, 0), Action("B", 0, 0), Action("F", 0, 1)]
    schedule = Schedule(1, 2, 1, (tuple(actions),))
    with pytest.raises(ValueError, match=r"B\(s0,m1\) is not in the timeline"):
        weight_versions(schedule, "stashing")


def test_closed_forms_reject_bad_input():
    with pytest.raises(ValueError, match="outside"):
        stashing_version(4, 0, 4, 8)
    with pytest.raises(ValueError, match="microbatches_per_batch"):
        two_bw_version(3, 0)
    with pytest.raises(ValueError, match="delay"):
        max_stable_step(-1)
    with pytest.raises(ValueError, match="step must be a finite number > 0"):
        delayed_rate(0.0, 1)
    a = random_quadratic(3, 10.0, seed=0)
    with pytest.raises(ValueError, match="delay has 2 entries"):
        delayed_gradient_descent(a, np.ones(3), 0.1, [0, 1], 5)
    with pytest.raises(ValueError, match="positive definite"):
        delayed_gradient_descent(-a, np.ones(3), 0.1, 0, 5)
    with pytest.raises(ValueError, match="w0 must be"):
        delayed_gradient_descent(a, np.ones(2), 0.1, 0, 5)


# --- delayed gradient descent -----------------------------------------------------------------


@pytest.mark.parametrize("d", [0, 1, 2, 3, 5])
@pytest.mark.parametrize("q", [0.05, 0.3, 0.9])
def test_scalar_closed_form_equals_the_iteration(d, q):
    closed = scalar_delayed_closed_form(q, d, 1.5, 60)
    iterated = delayed_gradient_descent(np.array([[q]]), [1.5], 1.0, d, 60)[:, 0]
    np.testing.assert_allclose(closed, iterated, rtol=1e-7, atol=1e-10)


@pytest.mark.parametrize("d", [1, 2, 4])
def test_scalar_closed_form_at_the_double_root(d):
    """At q* = d^d/(d + 1)^(d + 1) the root d/(d + 1) is double: the t·z^t basis takes over."""
    q_star = d**d / (d + 1) ** (d + 1)
    closed = scalar_delayed_closed_form(q_star, d, 1.0, 40)
    iterated = delayed_gradient_descent(np.array([[q_star]]), [1.0], 1.0, d, 40)[:, 0]
    np.testing.assert_allclose(closed, iterated, rtol=1e-7, atol=1e-10)


@pytest.mark.parametrize("d", range(6))
def test_stability_bound_is_where_the_largest_root_crosses_one(d):
    """Brute force over a grid of q: the rate is below 1 exactly for q < 2cos(dπ/(2d + 1))."""
    bound = max_stable_step(d)
    grid = np.linspace(0.01, 2.5, 500)
    stable = np.array([delayed_rate(q, d) < 1 - 1e-12 for q in grid])
    np.testing.assert_array_equal(stable, grid < bound)
    assert delayed_rate(bound, d) == pytest.approx(1.0, abs=1e-9)
    assert max_stable_step(0) == 2.0 and max_stable_step(1) == pytest.approx(1.0)


def test_rate_is_the_iterations_decay():
    """|x(t)| decays like rate^t: the envelope over [700, 800) against [100, 200), per step."""
    for d, q in [(0, 0.4), (1, 0.1), (1, 0.5), (2, 0.2), (3, 0.05)]:
        x = delayed_gradient_descent(np.array([[q]]), [1.0], 1.0, d, 800)[:, 0]
        envelope = np.abs(x[700:]).max() / np.abs(x[100:200]).max()
        assert envelope ** (1 / 600) == pytest.approx(delayed_rate(q, d), rel=1e-3)


def test_vector_descent_is_the_scalar_closed_form_in_the_eigenbasis():
    a = random_quadratic(5, 20.0, seed=3)
    w0 = np.random.default_rng(4).standard_normal(5)
    nu, d, steps = 0.04, 2, 50
    iterates = delayed_gradient_descent(a, w0, nu, d, steps)
    lam, q = np.linalg.eigh(a)
    coords = q.T @ w0
    closed = np.stack(
        [scalar_delayed_closed_form(nu * lam[i], d, coords[i], steps) for i in range(5)], axis=1
    )
    np.testing.assert_allclose(iterates, closed @ q.T, rtol=1e-7, atol=1e-10)


def test_a_one_step_delay_halves_the_stable_step_and_loses_when_both_are_tuned():
    """At ν = 1.5/λ_max plain descent converges and 2BW's one-step delay diverges (q = 1.5 > 1).
    At a small step the delay costs nearly nothing (rate 1 - q - q² + ... against 1 - q, even a
    little faster); with each run's step tuned on a grid, the synchronous run reaches a lower loss.
    Per-coordinate delays all 1 equal delay 1."""
    a = random_quadratic(6, 10.0, seed=1)
    w0 = np.ones(6)
    top = np.linalg.eigvalsh(a).max()
    sync = quadratic_loss(a, delayed_gradient_descent(a, w0, 1.5 / top, 0, 200))
    stale = quadratic_loss(a, delayed_gradient_descent(a, w0, 1.5 / top, 1, 200))
    assert sync[-1] < 1e-6 * sync[0] and stale[-1] > stale[0]
    assert delayed_rate(0.01, 1) < delayed_rate(0.01, 0) < delayed_rate(0.01, 1) + 2e-4

    def best(delay: int) -> float:
        grid = np.linspace(0.05, 2.0, 40) / top
        return min(
            quadratic_loss(a, delayed_gradient_descent(a, w0, nu, delay, 60))[-1] for nu in grid
        )

    assert best(0) < 1e-3 * best(1)
    stale = delayed_gradient_descent(a, w0, 0.5 / top, 1, 100)
    np.testing.assert_array_equal(stale, delayed_gradient_descent(a, w0, 0.5 / top, [1] * 6, 100))


def test_per_coordinate_delays_read_each_coordinate_from_its_own_past():
    """One step by hand: the gradient is A·w̃ with w̃_i = w_i(t - d_i)."""
    a = random_quadratic(3, 5.0, seed=2)
    w = delayed_gradient_descent(a, np.array([1.0, -2.0, 0.5]), 0.1, [0, 1, 2], 4)
    t = 3
    mixed = np.array([w[t, 0], w[t - 1, 1], w[t - 2, 2]])
    np.testing.assert_allclose(w[t + 1], w[t] - 0.1 * a @ mixed)


def test_random_quadratic_is_seeded_spd_with_its_condition_number():
    a = random_quadratic(8, 100.0, seed=5)
    np.testing.assert_array_equal(a, random_quadratic(8, 100.0, seed=5))
    lam = np.linalg.eigvalsh(a)
    np.testing.assert_allclose(lam, np.geomspace(1.0, 100.0, 8), rtol=1e-9)
    w = np.arange(8.0)
    assert quadratic_loss(a, w) == pytest.approx(0.5 * w @ a @ w)
    assert math.isclose(float(quadratic_loss(a, w[None, :])[0]), 0.5 * w @ a @ w)
