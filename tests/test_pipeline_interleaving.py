"""Tests for course_lib.pipeline.interleaving (pipe04): placement, crossings, the interleaved
step's closed forms against the simulator, the best v, and the frameworks' acceptance rules."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course_lib.pipeline import (
    boundary_crossings,
    interleaved_1f1b,
    interleaved_overhead,
    one_f_one_b,
    simulate,
)
from course_lib.pipeline.interleaving import (
    Acceptance,
    Crossings,
    acceptance,
    best_chunks_per_rank,
    crossings_per_microbatch,
    interleaved_makespan,
    layer_ranks,
    peak_rank_stash,
    rank_layers,
    rank_stash,
    stage_ranks,
    stash_rule_holds,
    step_times,
)
from tests.test_pipeline_schedule import interleaved_shapes  # (p, m, v) the generator accepts


def accepted(p: int, m: int, v: int) -> bool:
    """Whether the course's generator accepts (p, m, v) (it raises ValueError otherwise)."""
    try:
        interleaved_1f1b(p, m, v)
    except ValueError:
        return False
    return True


#: Stage times on a grid of binary fractions, so sums are exact and comparisons can be tight.
GRID_TIMES = st.integers(1, 16).map(lambda k: k / 8)


# --- placement: chunks and layers on ranks --------------------------------------------------


def test_megatron_example_16_layers_4_ranks_2_chunks():
    """Narayanan et al. 2021, Sec. 2.2.2: device 1 holds layers 1, 2, 9, 10 (1-based), device 2
    holds 3, 4, 11, 12, and so on — 0-based: rank 0 has 0, 1, 8, 9."""
    assert rank_layers(16, 4, 2, 0).tolist() == [0, 1, 8, 9]
    assert rank_layers(16, 4, 2, 1).tolist() == [2, 3, 10, 11]
    assert rank_layers(16, 4, 2, 3).tolist() == [6, 7, 14, 15]
    assert layer_ranks(16, 4, 2).tolist() == [0, 0, 1, 1, 2, 2, 3, 3] * 2


@given(st.integers(1, 6), st.integers(1, 4), st.integers(1, 3))
def test_layer_ranks_equal_cutting_into_chunks_by_hand(p, v, per_chunk):
    """Brute force: cut the layers into v·p consecutive chunks, give chunk k to rank k % p; every
    rank then holds L/p layers in v runs, each layer exactly once."""
    layers = v * p * per_chunk
    chunks = np.split(np.arange(layers), v * p)
    expected = np.empty(layers, dtype=int)
    for k, chunk in enumerate(chunks):
        expected[chunk] = k % p
    got = layer_ranks(layers, p, v)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, expected)
    held = [rank_layers(layers, p, v, r) for r in range(p)]
    assert sorted(np.concatenate(held).tolist()) == list(range(layers))
    for r, mine in enumerate(held):
        assert len(mine) == layers // p
        runs = np.split(mine, np.flatnonzero(np.diff(mine) != 1) + 1)
        assert len(runs) == (v if p > 1 else 1)
        assert all(chunk_rank == r for chunk_rank in got[mine])


@given(interleaved_shapes())
@settings(deadline=None, max_examples=40)
def test_stage_ranks_are_where_the_schedule_runs_each_stage(shape):
    """Every action of interleaved_1f1b(p, m, v) runs on stage_ranks(p, v)[stage], and each rank
    runs exactly v stages."""
    p, m, v = shape
    ranks = stage_ranks(p, v)
    schedule = interleaved_1f1b(p, m, v)
    for rank, actions in enumerate(schedule.actions):
        stages = {a.stage for a in actions}
        assert all(ranks[s] == rank for s in stages)
        assert len(stages) == v


# --- crossings per microbatch ---------------------------------------------------------------


@given(st.integers(1, 8), st.integers(1, 5), st.data())
def test_crossings_closed_forms(p, v, data):
    """v·p - 1 rank crossings for p > 1 (0 for p = 1), as formulas.boundary_crossings says;
    v - 1 wrap-arounds; with n = p/g nodes, v(n - 1) node crossings inside the loops plus the
    v - 1 wrap-arounds when n > 1."""
    g = data.draw(st.sampled_from([d for d in range(1, p + 1) if p % d == 0]))
    n = p // g
    got = crossings_per_microbatch(p, v, g)
    assert isinstance(got, Crossings)
    assert got.between_ranks == (v * p - 1 if p > 1 else 0) == boundary_crossings(p, v)
    assert got.wrap_arounds == (v - 1 if p > 1 else 0)
    assert got.between_nodes == v * (n - 1) + (v - 1) * (n > 1)
    assert crossings_per_microbatch(p, v) == crossings_per_microbatch(p, v, p)


def test_crossings_worked_example_two_nodes():
    """p = 8 on two nodes of 4, v = 4: 31 rank crossings (against 7), 3 wrap-arounds, and 7 node
    crossings (against 1): one per loop plus each wrap-around from rank 7 back to rank 0."""
    assert crossings_per_microbatch(8, 4, 4) == Crossings(31, 7, 3)
    assert crossings_per_microbatch(8, 1, 4) == Crossings(7, 1, 0)


@given(st.integers(1, 6), st.integers(1, 4), st.data())
@settings(deadline=None, max_examples=40)
def test_crossings_are_what_one_microbatch_pays_in_the_simulator(p, v, data):
    """One microbatch, zero compute: the simulator charges a hop's latency only when the
    dependency ran on another rank, so with latency 1 on every hop the step is 2·between_ranks
    (down and up); with latency 1 on the hops between nodes only, 2·between_nodes."""
    g = data.draw(st.sampled_from([d for d in range(1, p + 1) if p % d == 0]))
    crossings = crossings_per_microbatch(p, v, g)
    schedule = interleaved_1f1b(p, 1, v)
    assert simulate(schedule, 0.0, 0.0, p2p_latency=1.0).makespan == 2 * crossings.between_ranks
    ranks = stage_ranks(p, v)
    node_hops = (ranks[:-1] // g != ranks[1:] // g).astype(float)
    if len(node_hops):
        run = simulate(schedule, 0.0, 0.0, p2p_latency=node_hops)
        assert run.makespan == 2 * crossings.between_nodes


# --- the step without and with latency -----------------------------------------------------


@given(interleaved_shapes(), GRID_TIMES, GRID_TIMES)
@settings(deadline=None, max_examples=80)
def test_interleaved_makespan_equals_the_simulator(shape, t_f, t_b):
    """max(v·m + p - 1, m + v·p - 1)(t_f + t_b)/v is the simulated step with per-chunk costs
    t_f/v, t_b/v; for m >= p its overhead relative to ideal compute m(t_f + t_b) is
    (p - 1)/(v·m), Narayanan et al.'s form (formulas.interleaved_overhead)."""
    p, m, v = shape
    run = simulate(interleaved_1f1b(p, m, v), t_f / v, t_b / v)
    closed = interleaved_makespan(p, m, v, t_f, t_b)
    assert closed == pytest.approx(run.makespan, rel=1e-12)
    assert run.ideal_compute == pytest.approx(m * (t_f + t_b), rel=1e-12)
    if m >= p:
        assert run.overhead == pytest.approx(interleaved_overhead(p, m, v), rel=1e-9, abs=1e-12)
    else:  # PyTorch's m < p: the chain of v·p chunks sets the step, more than the formula
        assert run.overhead > interleaved_overhead(p, m, v) or v == 1


def test_fewer_microbatches_than_ranks_breaks_the_overhead_formula():
    """p = 4, m = 3 (PyTorch accepts it): v = 2 gives overhead 2/3, not (p - 1)/(v m) = 1/2."""
    run = simulate(interleaved_1f1b(4, 3, 2), 0.5, 1.0)
    assert run.overhead == pytest.approx(2 / 3)
    assert interleaved_makespan(4, 3, 2, 1.0, 2.0) == pytest.approx((3 + 8 - 1) * 3 / 2)


@given(interleaved_shapes(max_chunks=4), GRID_TIMES, GRID_TIMES, st.sampled_from([0.25, 0.5, 1]))
@settings(deadline=None, max_examples=80)
def test_latency_adds_two_per_crossing_while_it_hides(shape, t_f, t_b, fraction):
    """v >= 2 with m a multiple of p or m < p: a per-hop latency δ <= min(t_f, t_b)/v adds
    exactly 2(v·p - 1)δ to the simulated step — each crossing once down, once up (on one rank
    nothing crosses: 0); elsewhere the closed form refuses."""
    p, m, v = shape
    if p > 1 and (v == 1 or (m % p and m > p)):
        with pytest.raises(ValueError, match="simulate"):
            interleaved_makespan(p, m, v, t_f, t_b, p2p_latency=0.125 * min(t_f, t_b) / v)
        return
    delta = fraction * min(t_f, t_b) / v
    run = simulate(interleaved_1f1b(p, m, v), t_f / v, t_b / v, p2p_latency=delta)
    closed = interleaved_makespan(p, m, v, t_f, t_b, p2p_latency=delta)
    assert closed == pytest.approx(run.makespan, rel=1e-12)
    zero = interleaved_makespan(p, m, v, t_f, t_b)
    assert closed == pytest.approx(zero + 2 * boundary_crossings(p, v) * delta, rel=1e-12)


def test_latency_beyond_a_chunk_or_on_plain_1f1b_costs_more_than_the_crossings():
    """Past δ = t_f/v the latency lands on the steady state too; plain 1F1B (v = 1) pays it in
    its steady state at any δ > 0. The closed form refuses both."""
    p, m, t_f, t_b = 4, 8, 1.0, 2.0
    beyond = simulate(interleaved_1f1b(p, m, 4), t_f / 4, t_b / 4, p2p_latency=0.5).makespan
    assert beyond > interleaved_makespan(p, m, 4, t_f, t_b) + 2 * 15 * 0.5 + 1e-9
    plain = simulate(one_f_one_b(p, m), t_f, t_b, p2p_latency=0.1).makespan
    assert plain > interleaved_makespan(p, m, 1, t_f, t_b) + 2 * 3 * 0.1 + 1e-9
    with pytest.raises(ValueError, match=r"p2p_latency.*simulate"):
        interleaved_makespan(p, m, 4, t_f, t_b, p2p_latency=0.5)
    with pytest.raises(ValueError, match=r"chunks_per_rank.*simulate"):
        interleaved_makespan(p, m, 1, t_f, t_b, p2p_latency=0.1)


def test_single_rank_pays_no_latency():
    """p = 1: every chunk on one rank, no message crosses ranks; any δ leaves the step alone."""
    assert interleaved_makespan(1, 5, 3, 1.0, 2.0, p2p_latency=7.0) == 15.0
    run = simulate(interleaved_1f1b(1, 5, 3), 0.25, 0.5, p2p_latency=7.0)  # t_f = 0.75, t_b = 1.5
    assert run.makespan == interleaved_makespan(1, 5, 3, 0.75, 1.5) == 11.25


def test_step_times_are_the_simulated_makespans():
    """step_times(...)[v] is simulate(interleaved_1f1b(p, m, v), t_f/v, t_b/v, δ).makespan."""
    p, m, t_f, t_b, delta = 8, 16, 1e-3, 2e-3, 0.2e-3
    times = step_times(p, m, t_f, t_b, delta, chunks=(1, 2, 3, 4, 8))
    assert list(times) == [1, 2, 3, 4, 8]
    for v, t in times.items():
        expected = simulate(interleaved_1f1b(p, m, v), t_f / v, t_b / v, p2p_latency=delta)
        assert t == expected.makespan


def test_step_times_at_zero_latency_fall_with_v():
    """Without latency the step only shrinks with v: m(t_f + t_b) + (p - 1)(t_f + t_b)/v."""
    times = step_times(4, 8, 1.0, 2.0, 0.0, chunks=(1, 2, 4, 8))
    assert times == pytest.approx({1: 33.0, 2: 28.5, 4: 26.25, 8: 25.125})


def test_best_v_under_latency_is_interior():
    """p = 8, m = 16, t_f = 1 ms, t_b = 2 ms: best v is the largest candidate without latency,
    4 at δ = 0.1 ms, 3 at 0.2 ms, 2 at 0.5 ms — near sqrt((p - 1)(t_f + t_b)/(2 p δ)) while the
    latency hides (δ <= t_f/v)."""
    chunks = (1, 2, 3, 4, 6, 8)
    best = {
        delta: best_chunks_per_rank(8, 16, 1e-3, 2e-3, delta, chunks)
        for delta in (0.0, 0.1e-3, 0.2e-3, 0.5e-3)
    }
    assert best == {0.0: 8, 0.1e-3: 4, 0.2e-3: 3, 0.5e-3: 2}
    for delta in (0.1e-3, 0.2e-3):
        v_star = math.sqrt(7 * 3e-3 / (2 * 8 * delta))
        assert abs(best[delta] - v_star) < 1


def test_best_v_breaks_ties_towards_fewer_chunks():
    """One rank: every v gives the same step, so the smallest candidate is the best."""
    assert best_chunks_per_rank(1, 4, 1.0, 2.0, 0.5, chunks=(4, 2, 8)) == 2


def test_best_v_is_the_minimum_of_step_times():
    """best_chunks_per_rank returns a v whose step_times entry is the minimum."""
    args = (4, 12, 0.6e-3, 1.2e-3, 0.4e-3)
    times = step_times(*args, chunks=(1, 2, 3, 4))
    best = best_chunks_per_rank(*args, chunks=(1, 2, 3, 4))
    assert times[best] == min(times.values())


# --- stashes on a rank --------------------------------------------------------------------------


@given(interleaved_shapes(max_microbatches=24), GRID_TIMES, GRID_TIMES)
@settings(deadline=None, max_examples=60)
def test_peak_rank_stash_equals_the_simulated_peak(shape, t_f, t_b):
    """min(v·m, w + 1)/v with w rank 0's warm-up forwards is the simulated peak of rank 0's chunk
    stashes over v; rank_stash is the sum of in_flight over the rank's stages."""
    p, m, v = shape
    run = simulate(interleaved_1f1b(p, m, v), t_f / v, t_b / v)
    times, counts = rank_stash(run, 0)
    assert counts.max() / v == pytest.approx(peak_rank_stash(p, m, v))
    for rank in range(p):
        times, counts = rank_stash(run, rank)
        assert counts[-1] == 0 and (counts >= 0).all()
        # at any instant, the count is the number of the rank's stashes alive then
        for t, c in zip(times[:-1], counts[:-1], strict=True):
            alive = sum(
                run.lifetime(s, j)[0] <= t < run.lifetime(s, j)[1]
                for s in range(rank, v * p, p)
                for j in range(m)
            )
            assert c == alive


def test_interleaving_stashes_more_than_1f1b():
    """p = 8, m = 16: 1F1B stashes 8 microbatches on rank 0, v = 4 stashes p + (p - 1)/v = 9.75."""
    assert peak_rank_stash(8, 16, 1) == 8.0
    assert peak_rank_stash(8, 16, 4) == 9.75


@pytest.mark.parametrize(
    "p, m, v, peak",
    [
        (4, 4, 2, 4.0),  # m = p: every chunk forward is warm-up, not 4 + 3/2
        (4, 8, 2, 5.5),  # m = 2p: p + (p - 1)/v
        (8, 8, 4, 8.0),
        (8, 16, 4, 9.75),
        (2, 2, 3, 2.0),
        (2, 4, 3, 2 + 1 / 3),
        (1, 3, 2, 1.0),  # one rank: p + 0
    ],
)
def test_stash_rule_boundary_is_m_equal_2p(p, m, v, peak):
    """Rank 0's simulated peak is p + (p - 1)/v from m = 2p on, and p at m = p (the warm-up
    2(p - 1) + (v - 1)p reaches v·m): stash_rule_holds draws the line there."""
    run = simulate(interleaved_1f1b(p, m, v), 1.0 / v, 2.0 / v)
    simulated = rank_stash(run, 0)[1].max() / v
    assert simulated == pytest.approx(peak) == peak_rank_stash(p, m, v)
    assert stash_rule_holds(p, m, v) == (p == 1 or m >= 2 * p)
    assert (simulated == pytest.approx(p + (p - 1) / v)) == stash_rule_holds(p, m, v)


def test_stash_rule_holds_wherever_it_says_and_fails_for_every_m_equal_p():
    """Every accepted (p, m, v), p <= 6, m <= 4p + 2, v = 2..4: where stash_rule_holds, the
    simulated peak is p + (p - 1)/v; p | m with m = p > 1 peaks at p; v = 1 never uses the rule."""
    for p in range(1, 7):
        for m in range(1, 4 * p + 3):
            for v in range(1, 5):
                if not accepted(p, m, v):
                    continue
                run = simulate(interleaved_1f1b(p, m, v), 1.0 / v, 2.0 / v)
                simulated = rank_stash(run, 0)[1].max() / v
                if stash_rule_holds(p, m, v):
                    assert simulated == pytest.approx(p + (p - 1) / v), (p, m, v)
                if m == p > 1 and v > 1:
                    assert not stash_rule_holds(p, m, v) and simulated == p, (p, m, v)
                if m % p == 0 and v > 1:
                    assert stash_rule_holds(p, m, v) == (p == 1 or m >= 2 * p)
    assert not stash_rule_holds(4, 8, 1)


# --- which (p, m, v) run ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "p, m, megatron, pytorch",
    [
        (4, 8, True, True),
        (4, 10, False, True),  # PyTorch's docstring: 2 rounds of 5
        (4, 3, False, True),  # PyTorch's docstring: 1 round of 3
        (4, 9, False, False),  # 2 rounds, 9 odd
        (4, 4, True, True),
        (8, 12, False, True),  # 1 round
        (6, 15, False, False),
        (1, 7, True, True),
    ],
)
def test_acceptance_rules(p, m, megatron, pytorch):
    """Megatron-LM: m % p == 0 (v > 1); PyTorch 2.13 ScheduleInterleaved1F1B: rounds =
    max(1, m // p) divides m; the course's generator accepts PyTorch's set (and any m at v = 1)."""
    verdict = acceptance(p, m, 2)
    assert isinstance(verdict, Acceptance)
    assert (verdict.megatron, verdict.pytorch) == (megatron, pytorch)
    assert verdict.rounds == max(1, m // p)
    assert verdict.group_size == m // verdict.rounds
    assert accepted(p, m, 2) == pytorch
    assert ("accepts" if pytorch else "refuses") in verdict.reason.split("PyTorch")[1]
    assert acceptance(p, m, 1).megatron  # v = 1: the plain schedule, any m
    assert accepted(p, m, 1)


@given(st.integers(1, 8), st.integers(1, 30), st.integers(2, 4))
@settings(deadline=None, max_examples=60)
def test_overhead_formula_holds_exactly_where_acceptance_says(p, m, v):
    """For every accepted (p, m, v): the simulated overhead equals (p - 1)/(v m) exactly when
    acceptance(...).overhead_formula_holds (m >= p); the reason says why when it does not."""
    verdict = acceptance(p, m, v)
    assert verdict.pytorch == accepted(p, m, v)
    if not verdict.pytorch:
        return
    run = simulate(interleaved_1f1b(p, m, v), 1.0 / v, 2.0 / v)
    holds = math.isclose(run.overhead, (p - 1) / (v * m), rel_tol=1e-9, abs_tol=1e-12)
    assert holds == verdict.overhead_formula_holds
    if not holds:
        assert "m < p" in verdict.reason


# --- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, error, fragment",
    [
        (lambda: layer_ranks(10, 4, 2), ValueError, "num_layers=10 must be a multiple"),
        (lambda: layer_ranks(16, 0, 2), ValueError, "num_ranks"),
        (lambda: layer_ranks(16, 4, 0), ValueError, "chunks_per_rank"),
        (lambda: layer_ranks(16.0, 4, 2), TypeError, "num_layers"),
        (lambda: rank_layers(16, 4, 2, 4), ValueError, "rank must be in"),
        (lambda: rank_layers(16, 4, 2, -1), ValueError, "rank"),
        (lambda: stage_ranks(4, True), TypeError, "chunks_per_rank"),
        (lambda: crossings_per_microbatch(8, 2, 3), ValueError, "ranks_per_node=3 must divide"),
        (lambda: crossings_per_microbatch(8, 2, 0), ValueError, "ranks_per_node"),
        (lambda: interleaved_makespan(4, 9, 2, 1.0, 2.0), ValueError, "num_microbatches=9"),
        (lambda: interleaved_makespan(4, 8, 2, -1.0, 2.0), ValueError, "forward_time"),
        (lambda: interleaved_makespan(4, 8, 2, 1.0, 2.0, -0.1), ValueError, "p2p_latency"),
        (lambda: step_times(4, 8, 1.0, 2.0, 0.0, chunks=()), ValueError, "at least one"),
        (lambda: step_times(4, 8, 1.0, 2.0, 0.0, chunks=(2, 2)), ValueError, "repeats"),
        (lambda: step_times(4, 8, 1.0, 2.0, 0.0, chunks=2), TypeError, "chunks must be"),
        (lambda: step_times(4, 8, 1.0, 2.0, 0.0, chunks=(0,)), ValueError, "chunks"),
        (lambda: step_times(4, 9, 1.0, 2.0, 0.0, chunks=(2,)), ValueError, "num_microbatches=9"),
        (lambda: step_times(4, 8, 1.0, 2.0, [0.1] * 3, chunks=(2,)), ValueError, "p2p_latency"),
        (lambda: best_chunks_per_rank(4, 8, 1.0, "2", 0.0), TypeError, "backward_time"),
        (lambda: acceptance(4, 0, 2), ValueError, "num_microbatches"),
        (lambda: peak_rank_stash(4, 9, 2), ValueError, "num_microbatches=9"),
        (lambda: stash_rule_holds(4, 9, 2), ValueError, "num_microbatches=9"),
        (lambda: stash_rule_holds(4, 8, 0), ValueError, "chunks_per_rank"),
        (lambda: rank_stash(simulate(interleaved_1f1b(2, 2, 2), 1.0, 1.0), 2), ValueError, "rank"),
    ],
)
def test_bad_input_names_the_argument(call, error, fragment):
    """Each bad argument raises ValueError/TypeError with a message naming it."""
    with pytest.raises(error, match=fragment):
        call()
