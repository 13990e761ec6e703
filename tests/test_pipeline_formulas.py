"""Closed forms of course_lib.pipeline.formulas checked against the simulator (balanced stages)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course_lib.pipeline import (
    boundary_crossings,
    fill_drain_idle_fraction,
    fill_drain_makespan,
    fill_drain_overhead,
    gpipe,
    interleaved_1f1b,
    interleaved_overhead,
    one_f_one_b,
    one_f_one_b_warmup,
    peak_in_flight_gpipe,
    peak_in_flight_one_f_one_b,
    peak_in_flight_zero_bubble_h1,
    simulate,
    zero_bubble_h1,
    zero_bubble_h1_bubble,
)
from tests.strategies import PIPE_GRID_TIMES, PIPE_TIMES, pipeline_shapes

#: Strictly positive stage times (the idle fraction and overhead need some compute).
POSITIVE_TIMES = st.floats(min_value=1e-3, max_value=10.0, allow_nan=False)


def test_worked_example_p4_m8():
    """p = 4, m = 8: idle 3/11 ≈ 0.2727 of rank-time, overhead 3/8 = 0.375 of ideal compute — by
    formula and by simulating GPipe and 1F1B (t_f = 1, t_b = 2: makespan 11 · 3 = 33)."""
    assert fill_drain_idle_fraction(4, 8) == pytest.approx(3 / 11)
    assert round(fill_drain_idle_fraction(4, 8), 4) == 0.2727
    assert fill_drain_overhead(4, 8) == 0.375
    assert fill_drain_makespan(4, 8, 1.0, 2.0) == 33.0
    for generator in (gpipe, one_f_one_b):
        timeline = simulate(generator(4, 8), 1.0, 2.0)
        assert timeline.makespan == 33.0
        assert timeline.idle_fraction == pytest.approx(3 / 11)
        assert timeline.overhead == pytest.approx(0.375)


@given(pipeline_shapes(max_stages=10, max_microbatches=24), PIPE_TIMES, PIPE_TIMES, PIPE_TIMES)
@settings(deadline=None)
def test_fill_drain_makespan_matches_simulated_gpipe(shape, t_f, t_b, latency):
    """(m + p - 1)(t_f + t_b) + 2(p - 1)·delta equals the simulated GPipe makespan."""
    p, m = shape
    simulated = simulate(gpipe(p, m), t_f, t_b, p2p_latency=latency).makespan
    assert fill_drain_makespan(p, m, t_f, t_b, latency) == pytest.approx(
        simulated, rel=1e-9, abs=1e-9
    )


@given(pipeline_shapes(max_stages=10, max_microbatches=24), POSITIVE_TIMES, POSITIVE_TIMES)
@settings(deadline=None)
def test_idle_fraction_and_overhead_match_simulation(shape, t_f, t_b):
    """Without latency, GPipe's simulated idle fraction is (p-1)/(m+p-1) and its overhead relative
    to ideal compute (p-1)/m, whatever t_f and t_b."""
    p, m = shape
    timeline = simulate(gpipe(p, m), t_f, t_b)
    assert timeline.idle_fraction == pytest.approx(fill_drain_idle_fraction(p, m), abs=1e-9)
    assert timeline.overhead == pytest.approx(fill_drain_overhead(p, m), rel=1e-9, abs=1e-9)


@given(pipeline_shapes(max_stages=10, max_microbatches=24))
def test_idle_fraction_and_overhead_are_different_measures(shape):
    """overhead = idle / (1 - idle): equal only for p = 1 (both 0); otherwise overhead > idle."""
    p, m = shape
    idle, overhead = fill_drain_idle_fraction(p, m), fill_drain_overhead(p, m)
    assert overhead == pytest.approx(idle / (1 - idle))
    assert (overhead > idle) == (p > 1)


@given(pipeline_shapes(max_stages=10, max_microbatches=24), PIPE_TIMES, PIPE_TIMES)
@settings(deadline=None)
def test_one_f_one_b_makespan_equals_gpipe_without_latency(shape, t_f, t_b):
    """Finding: with zero latency and balanced stages, 1F1B takes exactly as long as GPipe,
    (m + p - 1)(t_f + t_b) — the same idle time, for any t_f, t_b (pipe03)."""
    p, m = shape
    simulated = simulate(one_f_one_b(p, m), t_f, t_b).makespan
    assert simulated == pytest.approx(fill_drain_makespan(p, m, t_f, t_b), rel=1e-9, abs=1e-9)


@given(
    pipeline_shapes(max_stages=10, max_microbatches=24),
    PIPE_GRID_TIMES,
    PIPE_GRID_TIMES,
    PIPE_GRID_TIMES.filter(lambda d: d > 0),
)
@settings(deadline=None)
def test_one_f_one_b_pays_more_latency_than_gpipe(shape, t_f, t_b, latency):
    """Finding: with latency delta > 0, 1F1B is never faster than GPipe and is slower exactly when
    p > 1 and m > 2. In every case checked the excess is 2·delta·max(0, ceil((p-1)(m-2)/p)) — an
    empirical rule found with the simulator, not a published closed form."""
    p, m = shape
    one_f = simulate(one_f_one_b(p, m), t_f, t_b, p2p_latency=latency).makespan
    fill_drain = simulate(gpipe(p, m), t_f, t_b, p2p_latency=latency).makespan
    assert fill_drain == fill_drain_makespan(p, m, t_f, t_b, latency)
    assert one_f >= fill_drain
    assert (one_f > fill_drain) == (p > 1 and m > 2)
    assert one_f - fill_drain == 2 * latency * max(0, math.ceil((p - 1) * (m - 2) / p))


@given(pipeline_shapes(max_stages=10, max_microbatches=24), POSITIVE_TIMES, PIPE_TIMES, PIPE_TIMES)
@settings(deadline=None)
def test_peak_in_flight_matches_simulation(shape, t_f, t_b, latency):
    """Simulated peak stashed activations: m on every GPipe stage, min(m, p - s) on 1F1B stage s
    (any t_b, any latency, t_f > 0)."""
    p, m = shape
    gp = simulate(gpipe(p, m), t_f, t_b, p2p_latency=latency).peak_in_flight
    ofob = simulate(one_f_one_b(p, m), t_f, t_b, p2p_latency=latency).peak_in_flight
    np.testing.assert_array_equal(gp, [peak_in_flight_gpipe(p, m, s) for s in range(p)])
    assert peak_in_flight_gpipe(p, m) == m
    np.testing.assert_array_equal(ofob, [peak_in_flight_one_f_one_b(p, m, s) for s in range(p)])


@given(pipeline_shapes(max_stages=12, max_microbatches=24))
def test_warmup_matches_generated_schedule(shape):
    """Stage s of the generated 1F1B order starts with min(m, p - s - 1) forwards, followed (when
    microbatches remain) by the first steady pair F(w), B(0); and the simulated peak is
    min(m, warm-up + 1)."""
    p, m = shape
    timeline = simulate(one_f_one_b(p, m), 1.0, 2.0)
    for s, actions in enumerate(one_f_one_b(p, m).actions):
        w = one_f_one_b_warmup(p, m, s)
        assert [(a.kind, a.microbatch) for a in actions[:w]] == [("F", j) for j in range(w)]
        if w < m:
            assert [(a.kind, a.microbatch) for a in actions[w : w + 2]] == [("F", w), ("B", 0)]
        assert timeline.peak_in_flight[s] == min(m, w + 1)


def test_warmup_by_hand():
    """p = 4, m = 8: warm-ups 3, 2, 1, 0; p = 4, m = 2: 2, 2, 1, 0 (capped by m)."""
    assert [one_f_one_b_warmup(4, 8, s) for s in range(4)] == [3, 2, 1, 0]
    assert [one_f_one_b_warmup(4, 2, s) for s in range(4)] == [2, 2, 1, 0]
    assert [peak_in_flight_one_f_one_b(4, 8, s) for s in range(4)] == [4, 3, 2, 1]


FORMULAS = [
    lambda p, m: fill_drain_makespan(p, m, 1.0, 2.0),
    fill_drain_idle_fraction,
    fill_drain_overhead,
    lambda p, m: one_f_one_b_warmup(p, m, 0),
    peak_in_flight_gpipe,
    lambda p, m: peak_in_flight_one_f_one_b(p, m, 0),
]


@pytest.mark.parametrize("formula", FORMULAS)
@pytest.mark.parametrize("argument", ["num_stages", "num_microbatches"])
@pytest.mark.parametrize(
    "value, error", [(0, ValueError), (-1, ValueError), (False, TypeError), (2.0, TypeError)]
)
def test_formulas_reject_bad_counts(formula, argument, value, error):
    """The closed forms validate like the generators: message names the argument."""
    args = {"num_stages": 4, "num_microbatches": 8, argument: value}
    with pytest.raises(error, match=argument):
        formula(args["num_stages"], args["num_microbatches"])


@pytest.mark.parametrize(
    "call, error, fragment",
    [
        (lambda: one_f_one_b_warmup(4, 8, 4), ValueError, "stage must be in [0, 3]"),
        (lambda: peak_in_flight_one_f_one_b(4, 8, -1), ValueError, "stage must be an int >= 0"),
        (lambda: peak_in_flight_gpipe(4, 8, 9), ValueError, "stage must be in [0, 3]"),
        (lambda: one_f_one_b_warmup(4, 8, 1.0), TypeError, "stage"),
        (lambda: fill_drain_makespan(4, 8, -1.0, 2.0), ValueError, "forward_time must be >= 0"),
        (lambda: fill_drain_makespan(4, 8, 1.0, math.nan), ValueError, "backward_time must be"),
        (lambda: fill_drain_makespan(4, 8, 1.0, 2.0, math.inf), ValueError, "p2p_latency must be"),
        (lambda: fill_drain_makespan(4, 8, "1", 2.0), TypeError, "forward_time"),
    ],
)
def test_formulas_reject_bad_stage_and_times(call, error, fragment):
    """Bad stage indices and bad times raise errors naming the argument."""
    with pytest.raises(error) as info:
        call()
    assert fragment in str(info.value)


# --- interleaved 1F1B and ZB-H1 (pipe04) ------------------------------------------------------


@st.composite
def accepted_interleaved_shapes(draw, max_ranks=6, max_microbatches=24, max_chunks=4):
    """(p, m, v) that interleaved_1f1b accepts (v = 1 any m; else max(1, m // p) divides m)."""
    p = draw(st.integers(1, max_ranks))
    v = draw(st.integers(1, max_chunks))
    m = draw(st.integers(1, max_microbatches).filter(lambda m: v == 1 or m % max(1, m // p) == 0))
    return p, m, v


def test_interleaved_worked_example_p4_m8():
    """p = 4, m = 8, t_f = 1, t_b = 2 split into v = 2 chunks of 0.5 and 1: overhead 3/16 — half
    of 1F1B's 3/8 — by formula and simulator; makespan 24 + 3·3/2 = 28.5."""
    assert interleaved_overhead(4, 8, 2) == 3 / 16
    timeline = simulate(interleaved_1f1b(4, 8, 2), 0.5, 1.0)
    assert timeline.makespan == 28.5
    assert timeline.overhead == pytest.approx(3 / 16)
    assert interleaved_overhead(4, 8, 1) == fill_drain_overhead(4, 8)


@given(accepted_interleaved_shapes(), POSITIVE_TIMES, POSITIVE_TIMES)
@settings(deadline=None)
def test_interleaved_overhead_matches_simulation_when_m_at_least_p(shape, t_f, t_b):
    """Per-chunk costs t_f/v, t_b/v, zero latency, m >= p: the simulated overhead is
    (p - 1)/(v·m) for every accepted (p, m, v) — Megatron's m % p == 0 and PyTorch's extra m
    (e.g. p = 4, m = 10) alike (Narayanan et al. 2021, Sec. 2.2.2)."""
    p, m, v = shape
    if m < p:
        m = p * max(1, m // p)  # keep the case, moved into m >= p (a multiple of p is accepted)
    timeline = simulate(interleaved_1f1b(p, m, v), t_f / v, t_b / v)
    assert timeline.overhead == pytest.approx(interleaved_overhead(p, m, v), rel=1e-9, abs=1e-12)


@given(accepted_interleaved_shapes(), POSITIVE_TIMES, POSITIVE_TIMES)
@settings(deadline=None)
def test_interleaved_overhead_exceeds_the_form_when_m_below_p(shape, t_f, t_b):
    """Finding: for m < p (accepted by PyTorch's rule, one round of m microbatches) and v > 1 the
    simulated overhead is (p - 1 + (v - 1)(p - m))/(v·m), above (p - 1)/(v·m): at each change of
    chunk the m < p microbatches leave p - m slots empty. Empirical (found with the simulator)."""
    p, m, v = shape
    if not m < p:
        return
    timeline = simulate(interleaved_1f1b(p, m, v), t_f / v, t_b / v)
    assert timeline.overhead == pytest.approx((p - 1 + (v - 1) * (p - m)) / (v * m), rel=1e-9)
    assert (timeline.overhead > interleaved_overhead(p, m, v) + 1e-12) == (v > 1)


def cross_rank_dependencies(schedule) -> dict[tuple[str, int], int]:
    """Count, per (direction, microbatch), the dependencies between actions on different ranks:
    F(s - 1, j) -> F(s, j) forward, B(s + 1, j) -> B(s, j) backward."""
    counts: dict[tuple[str, int], int] = {}
    for acts in schedule.actions:
        for a in acts:
            if a.kind == "F" and a.stage > 0:
                other, direction = a.stage - 1, "forward"
            elif a.kind == "B" and a.stage < schedule.num_stages - 1:
                other, direction = a.stage + 1, "backward"
            else:
                continue
            if schedule.rank_of(other) != schedule.rank_of(a.stage):
                counts[(direction, a.microbatch)] = counts.get((direction, a.microbatch), 0) + 1
    return counts


@given(accepted_interleaved_shapes(max_microbatches=8))
@settings(deadline=None)
def test_boundary_crossings_count_the_schedules_cross_rank_dependencies(shape):
    """Each microbatch's forward crosses v·p - 1 rank boundaries and its backward as many
    (0 with one rank); without interleaving p - 1."""
    p, m, v = shape
    counts = cross_rank_dependencies(interleaved_1f1b(p, m, v))
    expected = boundary_crossings(p, v)
    for j in range(m):
        assert counts.get(("forward", j), 0) == expected
        assert counts.get(("backward", j), 0) == expected
    assert boundary_crossings(p, 1) == p - 1


@given(accepted_interleaved_shapes(max_microbatches=8), PIPE_GRID_TIMES.filter(lambda d: d > 0))
@settings(deadline=None)
def test_interleaved_latency_is_paid_per_crossing(shape, latency):
    """With zero compute, one microbatch's trip down all v·p stages and back costs
    2·(v·p - 1)·delta when p > 1 — each stage boundary is a hop between two ranks. That is the
    makespan for m = 1 and a lower bound for larger m (1F1B's order adds waits between
    microbatches, see test_one_f_one_b_pays_more_latency_than_gpipe)."""
    p, m, v = shape
    trip = 2 * boundary_crossings(p, v) * latency
    assert simulate(interleaved_1f1b(p, 1, v), 0.0, 0.0, p2p_latency=latency).makespan == trip
    assert simulate(interleaved_1f1b(p, m, v), 0.0, 0.0, p2p_latency=latency).makespan >= trip


def test_zero_bubble_h1_worked_example_one_third():
    """p = 4, m = 8, t_f = t_b = t_w = 1: ZB-H1 idles (p - 1)·1 = 3 per stage, 1F1B with the
    backward unsplit (t_b + t_w = 2) idles (p - 1)·3 = 9 — one third (Qi et al. 2024, Sec. 2.1)."""
    zb = simulate(zero_bubble_h1(4, 8), 1.0, 1.0, 1.0)
    plain = simulate(one_f_one_b(4, 8), 1.0, 2.0)
    assert zb.makespan - 8 * 3 == zero_bubble_h1_bubble(4, 8, 1.0, 1.0, 1.0) == 3.0
    assert plain.makespan - 8 * 3 == 9.0


@given(pipeline_shapes(max_stages=8, max_microbatches=24), PIPE_GRID_TIMES, PIPE_GRID_TIMES,
       PIPE_GRID_TIMES)  # fmt: skip
@settings(deadline=None, max_examples=200)
def test_zero_bubble_h1_bubble_matches_simulation(shape, t_f, t_b, t_w):
    """Zero latency, m >= p, t_w <= min(t_f, t_b): the simulated idle time per stage,
    makespan - m(t_f + t_b + t_w), is exactly (p - 1)(t_f + t_b - t_w), and no larger than 1F1B's
    (p - 1)(t_f + t_b + t_w) with the same total backward — strictly smaller when p > 1 and
    t_w > 0."""
    p, m = shape
    m = max(m, p)
    t_w = min(t_w, t_f, t_b)
    zb = simulate(zero_bubble_h1(p, m), t_f, t_b, t_w).makespan - m * (t_f + t_b + t_w)
    plain = simulate(one_f_one_b(p, m), t_f, t_b + t_w).makespan - m * (t_f + t_b + t_w)
    assert zb == zero_bubble_h1_bubble(p, m, t_f, t_b, t_w)
    assert plain == (p - 1) * (t_f + t_b + t_w)
    assert zb <= plain
    assert (zb < plain) == (p > 1 and t_w > 0)


def test_zero_bubble_h1_bubble_outside_its_range_is_refused():
    """A W longer than a forward (or a backward), or m < p: the form does not match the
    simulator, so the formula refuses; the simulator shows why (p = 4, m = 8, t_w = 2 > t_f)."""
    simulated = simulate(zero_bubble_h1(4, 8), 1.0, 2.0, 2.0).makespan - 8 * 5
    assert simulated != 3 * (1.0 + 2.0 - 2.0)
    with pytest.raises(ValueError, match="weight_time <= min"):
        zero_bubble_h1_bubble(4, 8, 1.0, 2.0, 2.0)
    with pytest.raises(ValueError, match="num_microbatches >= num_stages"):
        zero_bubble_h1_bubble(4, 3, 1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="weight_time must be >= 0"):
        zero_bubble_h1_bubble(4, 8, 1.0, 1.0, -1.0)


@given(pipeline_shapes(max_stages=8, max_microbatches=16), POSITIVE_TIMES, POSITIVE_TIMES,
       POSITIVE_TIMES, PIPE_TIMES)  # fmt: skip
@settings(deadline=None)
def test_zero_bubble_h1_peak_in_flight(shape, t_f, t_b, t_w, latency):
    """Counted until W, every ZB-H1 stage peaks at min(m, p) stashes: its 1F1B min(m, p - s)
    plus the s whose W it defers. The busiest stage (stage 0) holds as many as under 1F1B, so
    the peak over stages is unchanged (Qi et al. 2024, Sec. 2.1); later stages hold more."""
    p, m = shape
    peaks = simulate(zero_bubble_h1(p, m), t_f, t_b, t_w, p2p_latency=latency).peak_in_flight
    np.testing.assert_array_equal(peaks, [peak_in_flight_zero_bubble_h1(p, m, s) for s in range(p)])
    assert peaks.max() == max(peak_in_flight_one_f_one_b(p, m, s) for s in range(p))


@pytest.mark.parametrize(
    "call, error, fragment",
    [
        (lambda: interleaved_overhead(4, 8, 0), ValueError, "chunks_per_rank must be an int >= 1"),
        (lambda: interleaved_overhead(0, 8, 2), ValueError, "num_ranks must be an int >= 1"),
        (lambda: interleaved_overhead(4, 8.0, 2), TypeError, "num_microbatches"),
        (lambda: boundary_crossings(4, 0), ValueError, "chunks_per_rank must be an int >= 1"),
        (lambda: boundary_crossings(True, 2), TypeError, "num_ranks"),
        (lambda: peak_in_flight_zero_bubble_h1(4, 8, 4), ValueError, "stage must be in [0, 3]"),
    ],
)
def test_interleaved_and_zero_bubble_formulas_reject_bad_input(call, error, fragment):
    """Bad counts and stages raise errors naming the argument."""
    with pytest.raises(error) as info:
        call()
    assert fragment in str(info.value)
