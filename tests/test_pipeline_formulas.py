"""Closed forms of course_lib.pipeline.formulas checked against the simulator (balanced stages)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course_lib.pipeline import (
    fill_drain_idle_fraction,
    fill_drain_makespan,
    fill_drain_overhead,
    gpipe,
    one_f_one_b,
    one_f_one_b_warmup,
    peak_in_flight_gpipe,
    peak_in_flight_one_f_one_b,
    simulate,
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
