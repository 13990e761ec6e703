"""Tests for course_lib.profiling (cost09): the per-event model against a simulated tracer, the
schedule against a literal transcription of torch.profiler.schedule, the planner against brute
force, and the measurement helper on a tiny workload."""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course_lib.profiling import (
    ACTIONS,
    OBSERVERS,
    CapturePlan,
    capture_overhead,
    corrected_time,
    count_profile_events,
    measure_overhead,
    observe,
    observed_cpu_time,
    overhead_summary,
    per_event_cost,
    plan_capture_window,
    sampling_overhead,
    schedule_action,
    schedule_actions,
    traced_step_time,
    tracing_overhead,
)


def torch_schedule(step, *, wait, warmup, active, repeat=0, skip_first=0):
    """torch.profiler.schedule's schedule_fn (PyTorch 2.x, torch/profiler/profiler.py), verbatim
    in logic, returning the action's name."""
    if step < skip_first:
        return "NONE"
    step -= skip_first
    num_steps = wait + warmup + active
    if repeat > 0 and step / num_steps >= repeat:
        return "NONE"
    mod_step = step % num_steps
    if mod_step < wait:
        return "NONE"
    if mod_step < wait + warmup:
        return "WARMUP"
    return "RECORD" if mod_step < num_steps - 1 else "RECORD_AND_SAVE"


schedules = st.fixed_dictionaries(
    {
        "wait": st.integers(0, 6),
        "warmup": st.integers(0, 4),
        "active": st.integers(1, 6),
        "repeat": st.integers(0, 4),
        "skip_first": st.integers(0, 8),
    }
)


@settings(max_examples=200, deadline=None)
@given(schedules, st.integers(1, 80))
def test_schedule_actions_match_torch(kw, num_steps):
    """Every step's action is what torch's schedule_fn returns for it."""
    got = schedule_actions(num_steps, **kw)
    want = [torch_schedule(s, **kw) for s in range(num_steps)]
    assert list(got) == want
    assert schedule_action(num_steps - 1, **kw) == want[-1]
    assert set(got) <= set(ACTIONS)


def brute_force_plan(num_steps, step_time, o, save, kw):
    """Walk the run step by step as torch's profiler does: the profiler is on in WARMUP and
    RECORD steps; a window is saved on leaving RECORD_AND_SAVE, or at stop from RECORD."""
    actions = [torch_schedule(s, **kw) for s in range(num_steps)]
    extra, saves, recorded = 0.0, 0, 0
    for a in actions:
        if a != "NONE":
            extra += o * step_time
        if a in ("RECORD", "RECORD_AND_SAVE"):
            recorded += 1
        if a == "RECORD_AND_SAVE":
            saves += 1
    if actions[-1] == "RECORD":  # (RECORD, None): stop_trace, _trace_ready
        saves += 1
    extra += saves * save
    return extra / (num_steps * step_time), saves, recorded


@settings(max_examples=200, deadline=None)
@given(schedules, st.integers(1, 80), st.floats(0.0, 2.0), st.floats(0.0, 5.0))
def test_capture_overhead_matches_step_walk(kw, num_steps, o, save):
    """The priced schedule equals a step-by-step walk of the run."""
    plan = capture_overhead(num_steps, 0.2, o, save, **kw)
    frac, saves, recorded = brute_force_plan(num_steps, 0.2, o, save, kw)
    assert plan.overhead_fraction == pytest.approx(frac, rel=1e-12, abs=1e-15)
    assert plan.saves == saves
    assert plan.recorded_steps == recorded
    assert isinstance(plan, CapturePlan)


@settings(max_examples=100, deadline=None)
@given(
    st.integers(0, 6),
    st.integers(0, 3),
    st.integers(0, 3),
    st.integers(0, 5),
    st.integers(5, 60),
    # no subnormals: at 5e-324 s per event the two sums round to 0 in one order and not the other
    st.floats(0.0, 1.0, allow_subnormal=False),
    st.floats(0.0, 3.0, allow_subnormal=False),
    st.floats(0.0, 0.3, allow_subnormal=False),
)
def test_plan_is_the_largest_active_within_budget(wait, warmup, repeat, skip, n, o, save, b):
    """plan_capture_window's active is the largest feasible one; None when none is."""
    kw = {"wait": wait, "warmup": warmup, "repeat": repeat, "skip_first": skip}
    feasible = [
        a
        for a in range(1, n + 1)
        if brute_force_plan(n, 0.1, o, save, {**kw, "active": a})[0] <= b * (1 + 1e-9)
    ]
    plan = plan_capture_window(n, 0.1, o, save, b, **kw)
    if feasible:
        assert plan is not None and plan.active == max(feasible)
    else:
        assert plan is None


def test_capture_example_numbers():
    """The lesson's example: 1,000 steps of 0.5 s, 40 % per observed step, 3 s per save,
    skip_first=10, wait=40, warmup=2, active=4, repeat=0: 20 windows of 6 observed steps."""
    plan = capture_overhead(1000, 0.5, 0.4, 3.0, wait=40, warmup=2, active=4, skip_first=10)
    assert plan.saves == 21  # 990 / 46 = 21.5 cycles: 21 complete windows; the 22nd is in wait
    assert plan.observed_steps == 21 * 6
    assert plan.overhead_fraction == pytest.approx((126 * 0.4 * 0.5 + 21 * 3.0) / 500.0)


def simulate_async_step(cpu_ops, gpu_ops, per_event):
    """Launch each op on the CPU (its time plus the tracer's per-event cost), then queue its
    device work after both its launch and the previous device op: the step ends when both
    timelines end."""
    cpu_clock, gpu_clock = 0.0, 0.0
    for c, g in zip(cpu_ops, gpu_ops, strict=True):
        cpu_clock += c + per_event
        gpu_clock = max(gpu_clock, cpu_clock) + g
    return max(cpu_clock, gpu_clock)


@pytest.mark.parametrize(
    "num_ops, cpu_per_op, gpu_per_op, per_event",
    [
        (2000, 10e-6, 5e-6, 2e-6),  # launch-bound: every microsecond shows
        (200, 10e-6, 5e-3, 2e-6),  # compute-bound: the CPU is far ahead, all hidden
        (2000, 10e-6, 11e-6, 2e-6),  # compute-bound until the tracer tips it over
    ],
)
def test_traced_step_time_is_the_steady_state_of_a_simulated_launch_queue(
    num_ops, cpu_per_op, gpu_per_op, per_event
):
    """max(cpu + n·c, gpu) matches an op-by-op launch queue up to one op's duration (the first
    launch and the last device op are the pipeline's fill and drain)."""
    sim = simulate_async_step([cpu_per_op] * num_ops, [gpu_per_op] * num_ops, per_event)
    model = traced_step_time(num_ops * cpu_per_op, num_ops * gpu_per_op, num_ops, per_event)
    assert abs(sim - model) <= cpu_per_op + gpu_per_op + per_event


def test_overhead_of_launch_bound_and_compute_bound_steps():
    """Launch-bound: n·c / cpu; compute-bound: hidden while cpu + n·c <= gpu, then the excess."""
    assert tracing_overhead(0.1, 0.05, 10_000, 2e-6) == pytest.approx(0.2)
    assert tracing_overhead(0.05, 0.1, 10_000, 2e-6) == pytest.approx(0.0)
    assert tracing_overhead(0.05, 0.1, 40_000, 2e-6) == pytest.approx(0.3)
    assert observed_cpu_time(0.05, 40_000, 2e-6) == pytest.approx(0.13)


def test_per_event_cost_uses_medians_and_corrects():
    """One slow run does not move the median-based estimate; the correction inverts the model."""
    plain = [1.00, 1.01, 0.99, 1.00, 3.00]
    traced = [2.00, 2.02, 1.98, 2.00, 2.01]
    c = per_event_cost(plain, traced, 1_000_000)
    assert c == pytest.approx(1e-6)
    assert corrected_time(observed_cpu_time(0.3, 50_000, c), 50_000, c) == pytest.approx(0.3)


def test_sampling_overhead_against_a_simulated_sampler():
    """A sampler that stops the program for c every Δ of wall time: count the samples taken while
    T seconds of work get done and compare c/(Δ − c)."""
    work, interval, c = 10.0, 0.01, 0.001
    clock, done = 0.0, 0.0
    while done < work:
        run = min(interval - c, work - done)
        done += run
        clock += run
        if done < work:
            clock += c
    assert clock / work - 1 == pytest.approx(sampling_overhead(interval, c), rel=1e-3)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: per_event_cost([1.0], [1.0, np.nan], 10), r"traced_times\[1\]"),
        (lambda: per_event_cost([1.0, -1.0], [1.0], 10), r"plain_times\[1\]"),
        (lambda: per_event_cost([], [1.0], 10), "plain_times is empty"),
        (lambda: per_event_cost([1.0], [1.0], 0), "num_events must be >= 1"),
        (lambda: observed_cpu_time(-1.0, 10, 1e-6), "cpu_time must be"),
        (lambda: observed_cpu_time(1.0, 2.5, 1e-6), "num_events must be an int"),
        (lambda: traced_step_time(1.0, float("nan"), 1, 1e-6), "gpu_time must be"),
        (lambda: tracing_overhead(0.0, 0.0, 1, 1e-6), "both 0"),
        (lambda: corrected_time(1e-3, 10_000, 1e-6), "exceeds traced_time"),
        (lambda: sampling_overhead(1e-3, 1e-3), "must be below sample_interval"),
        (lambda: sampling_overhead(0.0, 0.0), "sample_interval must be > 0"),
        (lambda: schedule_actions(10, 1, 1, 0), "active must be >= 1"),
        (lambda: schedule_actions(10, -1, 1, 1), "wait must be >= 0"),
        (lambda: capture_overhead(0, 1.0, 0.1, 1.0, wait=1, warmup=1, active=1), "num_steps"),
        (lambda: capture_overhead(5, 0.0, 0.1, 1.0, wait=1, warmup=1, active=1), "step_time"),
        (lambda: plan_capture_window(5, 1.0, 0.1, 1.0, -0.1, wait=1, warmup=1), "budget"),
        (lambda: list(observe("perf").__enter__()), "unknown observer 'perf'"),
        (lambda: measure_overhead({}), "workloads is empty"),
        (lambda: measure_overhead({"w": lambda: None}, clock="gpu"), "clock must be"),
        (lambda: measure_overhead({"w": lambda: None}, ["gdb"]), "unknown observer 'gdb'"),
    ],
)
def test_bad_input_raises(call, match):
    """Bad input: a ValueError naming the argument and what is wrong, never a silent NaN."""
    with pytest.raises(ValueError, match=match):
        call()


def test_summary_needs_a_baseline_and_clean_times():
    """overhead_summary refuses a workload without 'none' runs, and NaN times."""
    runs = pd.DataFrame(
        {"workload": ["a", "a"], "observer": ["cProfile", "cProfile"], "seconds": [1.0, 1.1]}
    )
    with pytest.raises(ValueError, match=r"\['a'\] have no 'none' runs"):
        overhead_summary(runs)
    runs = pd.DataFrame({"workload": ["a"], "observer": ["none"], "seconds": [np.nan]})
    with pytest.raises(ValueError, match=r"runs\['seconds'\]\[0\]"):
        overhead_summary(runs)


def _tiny(x):
    return x + 1


def _calls():
    s = 0
    for _ in range(2000):
        s = _tiny(s)
    return s


def test_count_profile_events_counts_calls_and_returns():
    """2,000 calls of a Python function plus the workload's own call and return: 4,002 events."""
    assert count_profile_events(_calls) == 4002
    assert sys.getprofile() is None


def test_measure_overhead_on_a_tiny_workload():
    """One row per (round, workload, observer); the summary's medians are the rows' medians, and
    the hooks are removed afterwards."""
    runs = measure_overhead({"calls": _calls}, repeats=3, time_limit=5.0)
    assert list(runs.columns) == ["workload", "observer", "repeat", "seconds"]
    assert len(runs) == 3 * len(OBSERVERS)
    assert sys.getprofile() is None
    summary = overhead_summary(runs)
    for _, row in summary.iterrows():
        sel = runs[runs["observer"] == row["observer"]]["seconds"]
        assert row["median"] == pytest.approx(np.median(sel))
        assert row["runs"] == 3
    none = summary.set_index("observer").loc["none"]
    assert none["overhead"] == 0.0
    # a Python callback on 4,002 events costs far more than 2,000 additions
    assert summary.set_index("observer").loc["setprofile", "overhead"] > 0.5


def test_cpu_clock_times_the_same_runs():
    """clock="cpu" gives CPU seconds of the same shape; setprofile still costs more than none."""
    runs = measure_overhead({"calls": _calls}, repeats=3, clock="cpu")
    assert len(runs) == 3 * len(OBSERVERS) and (runs["seconds"] >= 0).all()
    summary = overhead_summary(runs).set_index("observer")
    assert summary.loc["setprofile", "overhead"] > 0.5


def test_measure_overhead_stops_at_the_time_limit():
    """A tiny time limit still completes one round, then stops."""
    runs = measure_overhead({"calls": _calls}, repeats=50, time_limit=1e-9)
    assert runs["repeat"].max() == 0


def test_observer_order_rotates_between_rounds():
    """Round r starts with observer r (mod 4), so no observer always runs first."""
    runs = measure_overhead({"calls": _calls}, repeats=4, time_limit=30.0)
    firsts = [runs[runs["repeat"] == r]["observer"].iloc[0] for r in range(4)]
    assert firsts == list(OBSERVERS)
