"""course_lib.pipeline.stash (pipe05): the MLP's hand-written gradient against finite differences,
the stash's identity rules, recomputation and its random state, side effects counted, and the
accounting (bytes, time, best plan) against Table 2, the simulator and brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course_lib.memory import activation_bytes_per_layer
from course_lib.pipeline import gpipe, one_f_one_b, simulate
from course_lib.pipeline.stash import (
    PARAM_NAMES,
    RNG_MODES,
    Stash,
    best_recompute_plan,
    gradient_error,
    init_mlp,
    layer_forward_times,
    layer_options,
    mlp_backward,
    mlp_forward,
    mlp_loss,
    new_stats,
    plan_cost,
    recompute_frontier,
    recompute_step_time,
    recompute_time,
    running_mean_after,
    stage_gradients,
    stage_stash_bytes,
)
from tests.strategies import pipeline_shapes

DROP = 0.25


def _data(m: int, seed: int = 3, batch: int = 4) -> tuple[list, list]:
    g = np.random.default_rng(seed)
    return (
        [g.normal(size=(batch, 6)) for _ in range(m)],
        [g.normal(size=(batch, 3)) for _ in range(m)],
    )


def _stage_order(schedule, stage: int) -> list[tuple[str, int]]:
    return [(a.kind, a.microbatch) for a in schedule.actions[stage] if a.stage == stage]


# --- the MLP ---------------------------------------------------------------------------------


@pytest.mark.parametrize("drop_prob", [0.0, 0.3])
def test_backward_matches_finite_differences(drop_prob):
    """Every parameter's gradient equals the central difference of the loss (same dropout mask:
    each evaluation restores the generator state), to 1e-6 relative."""
    params = init_mlp(seed=1)
    x, t = (a[0] for a in _data(1, seed=2))
    state = np.random.default_rng(9).bit_generator.state

    def loss(p):
        g = np.random.default_rng()
        g.bit_generator.state = state
        y, _ = mlp_forward(p, x, g, drop_prob)
        return mlp_loss(y, t)

    g = np.random.default_rng()
    g.bit_generator.state = state
    _, cache = mlp_forward(params, x, g, drop_prob)
    grads = mlp_backward(params, cache, t)
    eps = 1e-6
    for name in PARAM_NAMES:
        numeric = np.zeros_like(params[name])
        for idx in np.ndindex(params[name].shape):
            up = {k: v.copy() for k, v in params.items()}
            down = {k: v.copy() for k, v in params.items()}
            up[name][idx] += eps
            down[name][idx] -= eps
            numeric[idx] = (loss(up) - loss(down)) / (2 * eps)
        np.testing.assert_allclose(grads[name], numeric, rtol=1e-6, atol=1e-9)


def test_dropout_is_inverted_and_draws_from_the_generator():
    """Kept units are scaled by 1/(1 - q), dropped ones are 0; the mask is rng.random(...) >= q,
    so two generators in the same state give the same output and one call advances the state."""
    params = init_mlp(seed=0)
    x = np.ones((5, 6))
    a, b = np.random.default_rng(4), np.random.default_rng(4)
    ya, ca = mlp_forward(params, x, a, 0.5)
    yb, _ = mlp_forward(params, x, b, 0.5)
    assert np.array_equal(ya, yb)
    hidden = np.maximum(x @ params["W1"] + params["b1"], 0.0)
    expected_keep = np.random.default_rng(4).random(hidden.shape) >= 0.5
    assert np.array_equal(ca["keep"], expected_keep)
    assert np.allclose(ca["dropped"], hidden * expected_keep * 2.0)
    y2, _ = mlp_forward(params, x, a, 0.5)  # a has advanced: another mask
    assert not np.array_equal(ya, y2)


def test_stats_are_a_side_effect_updated_per_call():
    """A forward with stats updates the running mean with momentum 0.1 (new value weighted by
    momentum) and counts the call; the output does not depend on it."""
    params = init_mlp(seed=0)
    x = np.random.default_rng(1).normal(size=(4, 6))
    stats = new_stats(12)
    y_with, cache = mlp_forward(params, x, np.random.default_rng(2), 0.1, stats)
    y_without, _ = mlp_forward(params, x, np.random.default_rng(2), 0.1)
    assert np.array_equal(y_with, y_without)
    hidden_mean = np.maximum(cache["pre"], 0).mean(axis=0)
    assert np.allclose(stats["running_mean"], 0.1 * hidden_mean)
    assert stats["num_batches_tracked"] == 1
    mlp_forward(params, x, np.random.default_rng(2), 0.1, stats, momentum=0.5)
    assert np.allclose(stats["running_mean"], 0.5 * 0.1 * hidden_mean + 0.5 * hidden_mean)
    assert stats["num_batches_tracked"] == 2


# --- the stash -------------------------------------------------------------------------------


def test_stash_returns_the_value_of_the_same_key_and_consumes_it():
    s = Stash()
    s.put(0, 0, "a00")
    s.put(1, 0, "a10")  # another stage, same microbatch: another key
    s.put(0, 1, "a01")
    assert s.keys() == [(0, 0), (1, 0), (0, 1)]
    assert s.get(0, 1) == "a01"  # not the oldest, not the newest of stage 0 by accident
    assert s.get(0, 0) == "a00"
    assert len(s) == 1
    with pytest.raises(KeyError, match="stage 0, microbatch 0"):
        s.get(0, 0)  # consumed: a second backward gets nothing
    with pytest.raises(KeyError, match="stage 2, microbatch 0"):
        s.get(2, 0)
    with pytest.raises(ValueError, match="already holds"):
        s.put(1, 0, "again")
    with pytest.raises(TypeError, match="stage"):
        s.put(0.5, 0, "x")


def test_another_microbatchs_activation_gives_a_wrong_gradient_without_an_error():
    """The lesson's claim: the cache of microbatch 1 used for microbatch 0's backward has the
    right shapes, raises nothing and gives another gradient."""
    params = init_mlp(seed=0)
    (x0, x1), (t0, _) = _data(2)
    g = np.random.default_rng(0)
    _, c0 = mlp_forward(params, x0, g, DROP)
    _, c1 = mlp_forward(params, x1, g, DROP)
    right, wrong = mlp_backward(params, c0, t0), mlp_backward(params, c1, t0)
    for name in PARAM_NAMES:
        assert right[name].shape == wrong[name].shape
    assert max(np.abs(right[n] - wrong[n]).max() for n in PARAM_NAMES) > 0.01


def test_gradient_error_is_the_relative_frobenius_norm_over_all_parameters():
    """By hand: one entry of W1 off by 3 and one of b2 off by 4 give 5 / ‖g_ref‖; identical
    gradients give exactly 0; a missing or misshapen array and a zero reference are refused."""
    ref = {"W1": np.full((2, 2), 1.0), "b1": np.zeros(2), "W2": np.zeros((2, 1)), "b2": np.zeros(1)}
    ref["b2"][0] = 3.0  # ‖ref‖ = sqrt(4 + 9) = sqrt(13)
    off = {k: v.copy() for k, v in ref.items()}
    off["W1"][0, 1] += 3.0
    off["b2"][0] += 4.0
    assert gradient_error(off, ref) == pytest.approx(5.0 / np.sqrt(13.0), rel=1e-15)
    assert gradient_error(ref, {k: v.copy() for k, v in ref.items()}) == 0.0
    with pytest.raises(ValueError, match="'b1' is missing"):
        gradient_error({k: v for k, v in ref.items() if k != "b1"}, ref)
    with pytest.raises(ValueError, match="shape"):
        gradient_error({**ref, "W2": np.zeros((1, 2))}, ref)
    with pytest.raises(ValueError, match="all zeros"):
        gradient_error(ref, {k: np.zeros_like(v) for k, v in ref.items()})


# --- recomputation and its random state -----------------------------------------------------


@pytest.mark.parametrize("make", [one_f_one_b, gpipe])
@pytest.mark.parametrize("stage", [0, 2])
def test_restored_state_reproduces_the_stored_gradients_exactly(make, stage):
    """Recomputing with the generator state saved at the forward gives bit-identical gradients;
    the stage generator as it is at the backward gives different ones for every microbatch."""
    m = 6
    order = _stage_order(make(4, m), stage)
    xs, ts = _data(m)
    params = init_mlp(seed=0)
    stored = stage_gradients(params, xs, ts, order, 11, DROP, mode="stored")
    restored = stage_gradients(params, xs, ts, order, 11, DROP, mode="restore")
    advanced = stage_gradients(params, xs, ts, order, 11, DROP, mode="advance")
    for j in range(m):
        for name in PARAM_NAMES:
            assert np.array_equal(stored[j][name], restored[j][name])
        assert any(not np.allclose(stored[j][n], advanced[j][n]) for n in PARAM_NAMES)


def test_reseeding_reproduces_only_the_first_forward():
    """default_rng(seed) again replays the first forward's draws: right for microbatch 0, wrong
    for every later one (their draws started further along the stream)."""
    m = 5
    order = _stage_order(one_f_one_b(3, m), 0)
    xs, ts = _data(m)
    params = init_mlp(seed=0)
    stored = stage_gradients(params, xs, ts, order, 11, DROP)
    reseeded = stage_gradients(params, xs, ts, order, 11, DROP, mode="reseed")
    same = [
        all(np.array_equal(stored[j][n], reseeded[j][n]) for n in PARAM_NAMES) for j in range(m)
    ]
    assert same == [True] + [False] * (m - 1)


@pytest.mark.parametrize("mode", RNG_MODES)
def test_side_effects_run_once_per_forward_run(mode):
    """num_batches_tracked is m when activations are stored, 2m when every backward recomputes;
    the running mean equals running_mean_after over the same order."""
    m = 6
    order = _stage_order(one_f_one_b(4, m), 1)
    xs, ts = _data(m)
    params = init_mlp(seed=0)
    stats = new_stats(12)
    stage_gradients(params, xs, ts, order, 11, DROP, mode=mode, stats=stats)
    recompute = mode != "stored"
    assert stats["num_batches_tracked"] == (2 * m if recompute else m)
    means = [np.maximum(x @ params["W1"] + params["b1"], 0).mean(axis=0) for x in xs]
    expected = running_mean_after(order, means, 0.1, recompute)
    np.testing.assert_allclose(stats["running_mean"], expected, rtol=1e-12, atol=1e-15)


def test_running_mean_after_by_hand():
    """Two microbatches, F0 F1 B0 B1, μ = 0.5: without recomputation r = 0.25·a + 0.5·b; with it
    the order F0 F1 R0 R1 gives ((a/2 + b)/2 + a)/2 ... computed step by step."""
    order = [("F", 0), ("F", 1), ("B", 0), ("B", 1)]
    a, b = 4.0, 8.0
    assert running_mean_after(order, [a, b], 0.5, False) == pytest.approx(0.25 * a + 0.5 * b)
    r = 0.0
    for x in (a, b, a, b):
        r = 0.5 * r + 0.5 * x
    assert running_mean_after(order, [a, b], 0.5, True) == pytest.approx(r)
    assert isinstance(running_mean_after(order, [a, b], 0.5, True), float)


# --- accounting ------------------------------------------------------------------------------


@pytest.mark.parametrize("policy", ["none", "selective", "full"])
def test_stage_stash_bytes_is_table_2_times_layers_times_in_flight(policy):
    """stage_stash_bytes = simulated peak in-flight count on the stage × L × Table 2's row."""
    s, b, h, a, layers = 2048, 1, 4096, 32, 8
    per_layer = {
        "none": s * b * h * (34 + 5 * a * s / h),
        "selective": 34 * s * b * h,
        "full": 2 * s * b * h,
    }[policy]
    assert activation_bytes_per_layer(s, b, h, a, recompute=policy) == per_layer
    for p, m in [(4, 8), (4, 2), (8, 32), (1, 3)]:
        peaks = simulate(one_f_one_b(p, m), 1.0, 2.0).peak_in_flight
        for stage in range(p):
            got = stage_stash_bytes(policy, stage, p, m, layers, s, b, h, a)
            assert got == peaks[stage] * layers * per_layer


@settings(max_examples=40, deadline=None)
@given(
    shape=pipeline_shapes(),
    t_f=st.integers(1, 16).map(lambda k: k / 8),
    t_b=st.integers(0, 32).map(lambda k: k / 8),
    core=st.integers(0, 8).map(lambda k: k / 8),
    policy=st.sampled_from(["none", "selective", "full"]),
)
def test_recompute_step_time_matches_the_simulator(shape, t_f, t_b, core, policy):
    """(m + p - 1)(t_f + t_b + t_r) is the simulated 1F1B makespan with backward cost t_b + t_r."""
    p, m = shape
    core = min(core, t_f)
    t_r = recompute_time(policy, t_f, core)
    run = simulate(one_f_one_b(p, m), t_f, t_b + t_r)
    assert recompute_step_time(policy, p, m, t_f, t_b, core) == pytest.approx(run.makespan)
    assert t_r == {"none": 0.0, "selective": core, "full": t_f}[policy]


def test_full_recompute_costs_a_third_more_with_backward_twice_forward():
    """t_b = 2 t_f: full recomputation turns 3 t_f per slot into 4 t_f, +33.3 % per step."""
    base = recompute_step_time("none", 4, 8, 1e-3, 2e-3, 0.1e-3)
    full = recompute_step_time("full", 4, 8, 1e-3, 2e-3, 0.1e-3)
    assert full / base - 1 == pytest.approx(1 / 3)


def _brute_force(options, budget):
    best = None
    for plan in itertools.product(*(range(len(o)) for o in options)):
        b = sum(options[i][c][0] for i, c in enumerate(plan))
        t = sum(options[i][c][1] for i, c in enumerate(plan))
        if b <= budget and (best is None or t < best[0]):
            best = (t, b, plan)
    return best


OPTION = st.tuples(st.integers(0, 40).map(float), st.integers(0, 20).map(lambda k: k / 4))


@settings(max_examples=150, deadline=None)
@given(
    options=st.lists(st.lists(OPTION, min_size=1, max_size=3), min_size=1, max_size=6),
    budget=st.integers(0, 200).map(float),
)
def test_best_plan_matches_brute_force(options, budget):
    """The plan's recompute time is the least over all plans that fit; it fits; no plan fitting
    means a ValueError naming the smallest feasible budget."""
    best = _brute_force(options, budget)
    if best is None:
        smallest = sum(min(b for b, _ in o) for o in options)
        with pytest.raises(ValueError, match=f"needs {smallest:g}"):
            best_recompute_plan(options, budget)
        return
    plan = best_recompute_plan(options, budget)
    b, t = plan_cost(options, plan)
    assert b <= budget
    assert t == best[0]


@settings(max_examples=100, deadline=None)
@given(options=st.lists(st.lists(OPTION, min_size=1, max_size=3), min_size=1, max_size=5))
def test_frontier_is_exactly_the_pareto_set_of_all_plans(options):
    """recompute_frontier lists each non-dominated (bytes, seconds) pair of all plans once, fewest
    bytes first, each with a plan that costs exactly that."""
    costs = set()
    for plan in itertools.product(*(range(len(o)) for o in options)):
        costs.add(plan_cost(options, plan))
    pareto = sorted(
        (b, t)
        for b, t in costs
        if not any(b2 <= b and t2 <= t and (b2, t2) != (b, t) for b2, t2 in costs)
    )
    frontier = recompute_frontier(options)
    assert [(b, t) for b, t, _ in frontier] == pareto
    for b, t, plan in frontier:
        assert plan_cost(options, plan) == (b, t)


def test_greedy_by_bytes_per_second_is_not_optimal_but_the_search_is():
    """A knapsack case: recomputing the best bytes-saved-per-second layer first misses the
    optimum. Save at least 10 bytes: greedy takes layer 0 (9 bytes for 4.5 s) and then one more
    (7.5 s); layers 1 and 2 together save 10 for 6 s."""
    saves, times = [9.0, 5.0, 5.0], [4.5, 3.0, 3.0]
    options = [[(b, 0.0), (0.0, t)] for b, t in zip(saves, times, strict=True)]
    plan = best_recompute_plan(options, sum(saves) - 10.0)
    assert plan == (0, 1, 1)
    assert plan_cost(options, plan) == (9.0, 6.0)


def test_layer_options_are_table_2_and_recompute_time():
    opts = layer_options(2048, 1, 4096, 32, 2e-3, 0.3e-3)
    assert [b for b, _ in opts] == [
        activation_bytes_per_layer(2048, 1, 4096, 32, recompute=r)
        for r in ("none", "selective", "full")
    ]
    assert [t for _, t in opts] == [0.0, 0.3e-3, 2e-3]


# --- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: stage_stash_bytes("some", 0, 4, 8, 8, 2048, 1, 4096, 32), ValueError, "policy"),
        (lambda: stage_stash_bytes("full", 4, 4, 8, 8, 2048, 1, 4096, 32), ValueError, "stage"),
        (
            lambda: stage_stash_bytes("full", 0, 4, 8, 0, 2048, 1, 4096, 32),
            ValueError,
            "layers_per_stage",
        ),
        (lambda: stage_stash_bytes("full", 0, 4, 8, 8, 2048.0, 1, 4096, 32), ValueError, "seq_len"),
        (lambda: recompute_time("full", 1e-3, 2e-3), ValueError, "core_forward_time"),
        (lambda: recompute_time("full", -1e-3, 0.0), ValueError, "forward_time"),
        (lambda: recompute_step_time("full", 0, 8, 1e-3, 2e-3, 0.0), ValueError, "num_stages"),
        (lambda: best_recompute_plan([], 1.0), ValueError, "empty"),
        (lambda: best_recompute_plan([[(1.0, -1.0)]], 1.0), ValueError, r"options\[0\]"),
        (lambda: best_recompute_plan([[(1.0, 0.0)]], float("nan")), ValueError, "budget"),
        (lambda: best_recompute_plan([[(5.0, 0.0)]], 1.0), ValueError, "needs 5"),
        (lambda: plan_cost([[(1.0, 0.0)]], (1,)), ValueError, r"plan\[0\]"),
        (
            lambda: mlp_forward(init_mlp(), np.ones((2, 5)), np.random.default_rng(), 0.1),
            ValueError,
            "x must have shape",
        ),
        (lambda: mlp_forward(init_mlp(), np.ones((2, 6)), 7, 0.1), TypeError, "Generator"),
        (
            lambda: mlp_forward(init_mlp(), np.ones((2, 6)), np.random.default_rng(), 1.0),
            ValueError,
            "drop_prob",
        ),
        (
            lambda: mlp_forward(
                {"W1": np.ones((6, 2))}, np.ones((2, 6)), np.random.default_rng(), 0.1
            ),
            ValueError,
            "lacks",
        ),
        (lambda: mlp_backward(init_mlp(), {}, np.ones((2, 3))), ValueError, "cache"),
        (
            lambda: stage_gradients(init_mlp(), *_data(2), [("B", 0)], 0, 0.1),
            ValueError,
            r"actions\[0\].*before its F",
        ),
        (
            lambda: stage_gradients(init_mlp(), *_data(2), [("F", 0), ("F", 0)], 0, 0.1),
            ValueError,
            "second time",
        ),
        (
            lambda: stage_gradients(init_mlp(), *_data(2), [("F", 2)], 0, 0.1),
            ValueError,
            "no input",
        ),
        (
            lambda: stage_gradients(init_mlp(), *_data(2), [("F", 0)], 0, 0.1, mode="fresh"),
            ValueError,
            "mode",
        ),
        (lambda: running_mean_after([("F", 0)], [1.0], 1.5, False), ValueError, "momentum"),
        (lambda: running_mean_after([("X", 0)], [1.0], 0.1, False), ValueError, "kind"),
        (lambda: running_mean_after([("F", 0)], [1.0], 0.1, "yes"), TypeError, "recompute"),
        (lambda: running_mean_after([("F", 0)], [], 0.1, False), ValueError, "batch_means"),
    ],
)
def test_bad_input_is_named(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_layer_forward_times_are_matmul_flops_over_the_rate():
    """24bsh² + 4bs²h FLOPs per layer forward, 4bs²h of them the attention core."""
    s, b, h, rate = 2048, 2, 1024, 1e12
    t_f, t_core = layer_forward_times(s, b, h, rate)
    assert t_core == pytest.approx(4 * b * s * s * h / rate)
    assert t_f == pytest.approx((24 * b * s * h * h + 4 * b * s * s * h) / rate)
    with pytest.raises(ValueError, match="flops_per_second"):
        layer_forward_times(s, b, h, 0.0)
    with pytest.raises(ValueError, match="hidden"):
        layer_forward_times(s, b, 0, 1e12)


@pytest.mark.parametrize("layers, hidden, reported", [(96, 12288, 0.027), (105, 20480, 0.016)])
def test_selective_overhead_arithmetic_of_going_further(layers, hidden, reported):
    """pipe05's Going further: Korthikanti et al. 2022's 2.7 % (GPT-3 175B) and 1.6 % (MT-NLG
    530B) are their App. A Eq. 8 (hardware FLOPs, 72BLsh²(1 + s/3h + v/12hL)) over Eq. 7 (model
    FLOPs, 72BLsh²(1 + s/6h + v/12hL)), minus 1, at s = 2048, v = 51200. Eq. 8 − Eq. 7 is
    12Bs²h per layer, three times the 2Bs²h + 2Bs²h (QKᵀ and attention over V) that App. A's
    text says selective recomputation adds; that count gives 0.9 % (GPT-3) and 0.5 % (MT-NLG)."""
    s, v, b = 2048, 51200, 1
    eq7 = 72.0 * b * layers * s * hidden**2 * (1 + s / (6 * hidden) + v / (12 * hidden * layers))
    eq8 = 72.0 * b * layers * s * hidden**2 * (1 + s / (3 * hidden) + v / (12 * hidden * layers))
    assert round(eq8 / eq7 - 1, 3) == reported
    assert eq8 - eq7 == pytest.approx(12.0 * b * s * s * hidden * layers)
    text_count = (2.0 + 2.0) * b * s * s * hidden * layers  # App. A's words: QKᵀ + attention·V
    assert eq8 - eq7 == pytest.approx(3 * text_count)
    assert round(text_count / eq7, 3) == {12288: 0.009, 20480: 0.005}[hidden]


def test_full_recompute_is_a_third_more_megatron_flops():
    """Narayanan et al. 2021's Eq. 3 (96Bslh², with recomputation) against Korthikanti et al.
    2022's Eq. 7 (72, without), as course_lib.flops has them: about 33 % more for GPT-3 175B."""
    from course_lib.flops import megatron_flops_per_iteration

    args = (1, 2048, 96, 12288, 51200)
    ratio = megatron_flops_per_iteration(*args, recompute=True) / megatron_flops_per_iteration(
        *args, recompute=False
    )
    assert round(ratio - 1, 2) == 0.33
