# %% [markdown]
# # cost09 · A profiler changes execution, so measure the observer's cost
#
# **Objective.** Choose collection detail and capture windows while separating uninstrumented
# performance from replay, tracing, sampling, and memory-observation effects.
#
# **Time:** 32 min · **Level:** advanced
#
# You will be able to
# - measure an observer's cost as an A/B comparison of repeated runs, and say why a step with
#   many small ops is distorted most;
# - predict the overhead of tracing from events × cost per event, and tell when an asynchronous
#   step hides it;
# - correct an instrumented CPU time for the tracer's cost;
# - choose a capture schedule (wait / warmup / active) that stays within an overhead budget, and
#   the collection mode that answers a question without changing the answer.
#
# **What you need:** cost01 (a step's time is its longest path) and cost03 (the CPU launches work
# that the device runs later). Python and numpy at the level of a loop and `np.median`.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
# %matplotlib inline
import sys

import matplotlib.pyplot as plt
import numpy as np

from course_lib.checks import (
    check_choice,
    check_float,
    check_int,
    forbid,
    passed,
)
from course_lib.explorers.profiling import capture_explorer
from course_lib.figures.profiling import hiding_curves, overhead_bars, schedule_strip
from course_lib.profiling import (
    capture_overhead,
    count_profile_events,
    measure_overhead,
    overhead_summary,
    schedule_actions,
)

rng = np.random.default_rng(9)  # the measurement's array; nothing else here is random
ms, us = 1e-3, 1e-6  # code works in seconds: 2.5 * ms is 2.5 ms

# Section 2's two steps (synthetic): CPU time to launch the step's ops, device time to run them.
LAUNCH_BOUND = {"cpu_time": 60 * ms, "gpu_time": 40 * ms}
COMPUTE_BOUND = {"cpu_time": 60 * ms, "gpu_time": 100 * ms}
PER_EVENT = 2 * us  # an assumed tracer cost per event, for illustration; section 1 measures one

# %% [markdown]
# ## 1. An observer costs per event, so many small ops are distorted most
#
# A profiler is code that runs inside the program it measures. A tracer does some work at every
# event — a function's call and return, an op's start and end — so it adds
#
# $$T_{\text{observed}} = T + N_{\text{events}} \cdot c,$$
#
# where $T$ is the uninstrumented time of the thread that emits the events, $N_{\text{events}}$
# their number and $c$ the tracer's cost per event.
#
# Measure it as an A/B comparison: the same work with no observer and under each observer,
# several repeats each, interleaved so that a noisy moment of the machine hits all of them
# alike, and compare medians. `measure_overhead` does this for three observers of Python:
# `sys.setprofile` with a do-nothing Python callback, `cProfile`, and `tracemalloc`, which
# records every memory allocation. The next cell times CPU time (`time.process_time`), which other
# programs disturb far less than wall time; it takes at most about 2 s.


# %%
def tiny(x):
    return x + 1


def many_small_calls():  # 50,000 Python calls: a launch-bound step in miniature
    s = 0
    for _ in range(50_000):
        s = tiny(s)
    return s


big = rng.random(200_000)


def few_large_ops():  # two numpy sorts: a compute-bound step in miniature
    for _ in range(2):
        np.sort(big)


workloads = {"many small calls": many_small_calls, "few large numpy ops": few_large_ops}
runs = measure_overhead(workloads, repeats=9, time_limit=2.0, clock="cpu")
summary = overhead_summary(runs)
events = {name: count_profile_events(fn) for name, fn in workloads.items()}
print(f"Python {sys.version.split()[0]}; events per run: {events}")
print(summary.round(5).to_string(index=False))

overhead_bars(summary)
plt.show()

# %% [markdown]
# Each bar is a median over the repeats, divided by the median with no observer; the whiskers
# span the fastest to the slowest repeat. The observers that multiply the time of the many small
# calls leave the numpy sorts almost untouched: the overhead follows the events, not the work.
#
# The per-event model turns one workload's A/B pair into a cost per event,
# $c = (\operatorname{median} T_{\text{observed}} - \operatorname{median} T)/N_{\text{events}}$,
# which predicts the other workload:

# %%
rows = summary.set_index(["workload", "observer"])
plain = rows.loc[("many small calls", "none"), "median"]
traced = rows.loc[("many small calls", "setprofile"), "median"]
c_measured = (traced - plain) / events["many small calls"]
numpy_plain = rows.loc[("few large numpy ops", "none"), "median"]
print(f"setprofile costs {c_measured / us:.3f} µs per event on this machine")
predicted = events["few large numpy ops"] * c_measured / numpy_plain
measured = rows.loc[("few large numpy ops", "setprofile"), "overhead"]
print(f"numpy workload: predicted overhead {predicted:.3%}, measured {measured:.1%}")

# %% [markdown]
# The prediction for the numpy workload is a small fraction of a percent; the measurement is
# that plus noise, a few percent on a quiet machine and more on a busy one. An A/B comparison
# sees an overhead only above its noise. `torch.profiler` has the same two regimes with a bigger
# tracer. Measure your own: a cost per event does not transfer between machines, Python or
# PyTorch versions.

# %% [markdown]
# ## 2. An asynchronous step hides the tracer's cost until the CPU becomes the bottleneck
#
# On a GPU the CPU launches kernels without waiting for them (PyTorch, "CUDA semantics":
# operations are asynchronous), so in steady state a step lasts as long as the slower of the
# two: the CPU's launch time $T_{\text{cpu}}$ or the device's busy time $T_{\text{gpu}}$. A
# CPU-side tracer stretches only the CPU's part:
#
# $$T_{\text{traced}} = \max\left(T_{\text{cpu}} + N_{\text{events}} \cdot c,\; T_{\text{gpu}}\right),
# \qquad \text{overhead} = \frac{T_{\text{traced}}}{\max(T_{\text{cpu}}, T_{\text{gpu}})} - 1,$$
#
# relative to the **uninstrumented** step. In a
# launch-bound step ($T_{\text{cpu}} \ge T_{\text{gpu}}$) every event shows in the step time. In
# a compute-bound step the CPU runs ahead of the device and the tracer's cost fills the slack,
# until $N_{\text{events}} \cdot c$ exceeds $T_{\text{gpu}} - T_{\text{cpu}}$. The model
# assumes the tracer does not slow the device's kernels.

# %%
hiding_curves(
    [
        ("launch-bound: CPU 60 ms, GPU 40 ms", *LAUNCH_BOUND.values()),
        ("compute-bound: CPU 60 ms, GPU 100 ms", *COMPUTE_BOUND.values()),
    ],
    PER_EVENT,
    40_000,
)
plt.show()

# %% [markdown]
# Synthetic numbers, $c = 2$ µs per event assumed. The orange, launch-bound step grows from the
# first event; the blue one stays flat until the dotted line at 20,000 events, where the CPU's
# 60 ms plus 40 ms of tracing meets the device's 100 ms. Notice the trap: a trace of the
# compute-bound step at 10,000 events shows the right step time but a CPU busier than it is
# (80 ms, not 60); a trace at 30,000 events shows a launch-bound step that does not exist.

# %% [markdown]
# ## 3. Sampling costs per sample, memory observation per allocation, replay re-runs the work
#
# - **Sampling** stops the program every $\Delta$ seconds to read its stacks: at a cost $c_s$
#   per sample the program slows by $c_s / (\Delta - c_s)$, whatever it does. py-spy takes 100
#   samples per second by default. It suits long runs and production; it gives statistics,
#   not the order of events.
# - **Memory observation** costs per allocation, more with a stack per allocation:
#   `tracemalloc` above, `profile_memory=True` or the CUDA memory snapshot for tensors.
# - **Kernel replay** collects hardware counters (achieved DRAM bandwidth, cache hit rates) that
#   do not all fit in one pass: Nsight Compute saves the memory a kernel touches, replays the
#   kernel once per pass of counters (Nsight Compute Profiling Guide, "Kernel Replay"). The
#   results are per-kernel counters and ratios, not durations.
#
# None of these gives the uninstrumented step time. That needs its own run with no observer,
# reported next to whatever the profile shows.

# %% [markdown]
# ## 4. A capture schedule keeps the window representative and the cost bounded
#
# A long run needs the profiler on only for a few steps, after start-up effects (compilation,
# allocator growth, autotuning) and not so often that it slows the run.
# `torch.profiler.schedule(wait, warmup, active, repeat, skip_first)` skips `skip_first` steps,
# then repeats a cycle: `wait` steps off, `warmup` steps in which the tracer is prepared
# (recording starts at the first active step), `active` steps recorded, the last marked
# `RECORD_AND_SAVE`. After `repeat` cycles it stops; `repeat=0` means until the run ends
# (PyTorch, torch/profiler/profiler.py).
#
# The cost of a schedule is $N_{\text{on}} \cdot o \cdot T + N_{\text{saves}} \cdot S$ over a
# run of $N \cdot T$: each of the $N_{\text{on}}$ active and warm-up steps costs $o \cdot T$
# extra (for a warm-up step an assumption, an upper bound), each saved trace $S$. Take 1,000
# steps of 0.5 s, $o = 40\,\%$ (a full trace with stacks on a launch-bound step) and $S = 3$ s
# per trace:

# %%
kw = {"wait": 40, "warmup": 2, "active": 4, "skip_first": 10}
schedule_strip(schedule_actions(200, **kw))
plt.show()
for repeat in (0, 1):
    plan = capture_overhead(1000, 0.5, 0.40, 3.0, repeat=repeat, **kw)
    print(
        f"repeat={repeat}: {plan.saves} traces, {plan.observed_steps} steps on "
        f"({plan.recorded_steps} recorded), overhead {plan.overhead_fraction:.2%} of the run"
    )

# %% [markdown]
# With `repeat=0` the window returns every 46 steps until the run ends; one cycle records the
# same kind of steps at a twenty-first of the cost.

# %% [markdown]
# ## Explore
#
# The explorer prices a schedule over section 4's run (1,000 steps of 0.5 s, `skip_first=10`)
# against a 5 % budget; the line is the overhead of the run so far. Try:
# - Start from the default (`repeat=0`, 17.6 %) and set `repeat=1`: the run's overhead drops
#   below 1 %, but the cumulative line shows the window's cost concentrated in a few steps.
# - With `repeat=0`, drag `wait` up until the run fits the budget; then raise `active`: each
#   window's save is paid once, so longer windows cost less per recorded step.

# %%
capture_explorer()

# %% [markdown]
# ## Exercises
#
# Answer in the cells marked `YOUR CODE HERE`, then run the grade cell below each: visible checks
# give quick feedback; hidden tests check more cases when the notebook is graded. While a grade
# cell calls your function, `course_lib.profiling`'s models (and so the explorer) are disabled.
#
# ### Exercise 1 — Predicted overhead of tracing a step (2 points)
#
# Write `predicted_overhead(cpu_time, gpu_time, num_events, per_event_cost)`: the overhead of a
# CPU-side tracer on an asynchronous step, as a fraction of the uninstrumented step time (0.25
# means the traced step is 25 % longer), with section 2's model. Times are in seconds. The hidden
# tests include launch-bound and compute-bound steps, a step whose tracing cost is fully hidden,
# and zero events.


# %% nbgrader={"grade": false, "grade_id": "predicted_overhead_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def predicted_overhead(
    cpu_time: float, gpu_time: float, num_events: int, per_event_cost: float
) -> float:
    """Tracing overhead / uninstrumented step time, with the CPU running ahead of the device."""
    ### BEGIN SOLUTION
    uninstrumented = max(cpu_time, gpu_time)
    traced = max(cpu_time + num_events * per_event_cost, gpu_time)
    return traced / uninstrumented - 1
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "predicted_overhead_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 1: predicted_overhead(cpu_time, gpu_time, num_events, per_event_cost), a fraction."""
import course_lib.profiling as course_profiling

models = ("traced_step_time", "tracing_overhead", "observed_cpu_time")
no_delegation = [(course_profiling, name) for name in models]
with forbid(*no_delegation, exercise="Exercise 1"):
    small_case = predicted_overhead(0.02, 0.01, 5_000, 1e-6)
check_float(
    "predicted_overhead(20 ms, 10 ms, 5000, 1 µs)",
    small_case,
    0.25,
    known_wrong={
        0.2: "the tracing cost over the traced step: divide by the uninstrumented step",
        25.0: "a percentage, not a fraction",
        1.25: "traced / uninstrumented: the overhead is that ratio minus 1",
        1.5: "relative to the device time, not to the uninstrumented step",
    },
)
### BEGIN HIDDEN TESTS
steps = [  # (cpu_time, gpu_time, num_events, per_event_cost) -> overhead
    ((0.06, 0.04, 10_000, 2e-6), 1 / 3),  # launch-bound
    ((0.03, 0.1, 20_000, 2e-6), 0.0),  # compute-bound, fully hidden
    ((0.06, 0.1, 30_000, 2e-6), 0.2),  # compute-bound until the tracer tips it over
    ((0.02, 0.005, 5_000, 1.5e-6), 0.375),
    ((0.05, 0.05, 1_000, 1e-6), 0.02),
    ((0.08, 0.2, 0, 3e-6), 0.0),  # no events
    ((0.012, 0.03, 12_000, 2.5e-6), 0.4),
]
with forbid(*no_delegation, exercise="Exercise 1 (hidden cases)"):
    answers = [predicted_overhead(*case) for case, _ in steps]
for (case, expected), got in zip(steps, answers, strict=True):
    cpu, gpu, n, c = case
    base, cost = max(cpu, gpu), n * c
    wrong = {
        cost / base: "n·c over the step: a compute-bound step hides the tracing cost "
        "until the CPU becomes the bottleneck",
        cost / cpu: "n·c over the CPU time: the step is the longer of CPU and device time",
        max(cpu + cost, gpu) / cpu - 1: "relative to the CPU time, not to the uninstrumented step",
        max(cpu + cost, gpu) / gpu - 1: "relative to the device time, not to the uninstrumented "
        "step",
        (cpu + cost) / base - 1: "the CPU's traced time without the max with the device time",
        (max(cpu + cost, gpu) - base) / max(cpu + cost, gpu): "over the traced step: divide "
        "by the uninstrumented step",
        100 * expected: "a percentage, not a fraction",
    }
    check_float(
        f"predicted_overhead({cpu}, {gpu}, {n}, {c})",
        got,
        expected,
        atol=1e-9,
        known_wrong={v: why for v, why in wrong.items() if abs(v - expected) > 1e-9},
    )
### END HIDDEN TESTS
passed("Exercise 1")

# %% [markdown]
# ### Exercise 2 — Correct an instrumented time (2 points)
#
# You calibrated a tracer on a workload of `calibration_events` events: `plain_times` are its
# repeated run times without the tracer, `traced_times` with it. Then you traced a CPU-bound
# piece of code that took `traced_time` seconds and emitted `num_events` events. Write
# `uninstrumented_estimate(plain_times, traced_times, calibration_events, traced_time,
# num_events)`: the time that code takes without the tracer, in seconds (a float), with
# section 1's per-event model and the cost per event estimated from the **medians** of the
# repeats. The hidden tests include calibrations with a slow outlier, an even number of
# repeats, and sets of repeats of different lengths.


# %% nbgrader={"grade": false, "grade_id": "estimate_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def uninstrumented_estimate(
    plain_times: list[float],
    traced_times: list[float],
    calibration_events: int,
    traced_time: float,
    num_events: int,
) -> float:
    """traced_time minus num_events times the calibrated cost per event (seconds)."""
    ### BEGIN SOLUTION
    per_event = (np.median(traced_times) - np.median(plain_times)) / calibration_events
    return float(traced_time - num_events * per_event)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "estimate_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 2: uninstrumented_estimate(plain_times, traced_times, calibration_events,
traced_time, num_events) in seconds."""
import course_lib.profiling as course_profiling

models = ("per_event_cost", "corrected_time", "observed_cpu_time")
no_delegation = [(course_profiling, name) for name in models]
with forbid(*no_delegation, exercise="Exercise 2"):
    small_case = uninstrumented_estimate([1.0, 1.0, 1.0], [2.0, 2.0, 2.0], 1_000_000, 0.5, 100_000)
check_float(
    "uninstrumented_estimate([1, 1, 1], [2, 2, 2], 1e6, 0.5, 1e5)",
    small_case,
    0.4,
    unit="s",
    known_wrong={
        0.25: "the traced time scaled by the calibration's plain/traced ratio: the overhead is "
        "per event, not a fixed percentage",
        0.5: "the traced time, uncorrected",
        -0.5: "the calibration's whole added time subtracted: scale it by num_events / "
        "calibration_events",
    },
)
### BEGIN HIDDEN TESTS
calibrations = [  # (plain_times, traced_times, calibration_events, traced_time, num_events)
    (
        [0.0123, 0.0101, 0.0100, 0.0102, 0.0099],
        [0.0910, 0.0905, 0.0898, 0.0902, 0.1400],
        40_002,
        0.35,
        90_000,
    ),
    ([0.020, 0.021, 0.0205, 0.030], [0.060, 0.058, 0.062, 0.061], 20_000, 0.12, 25_000),
    ([0.50, 0.52, 0.49], [0.81, 0.80, 0.95, 0.79, 0.82], 100_000, 1.4, 250_000),
    (
        [0.0040, 0.0041, 0.0039, 0.0090, 0.0040, 0.0042],
        [0.0140, 0.0150, 0.0139, 0.0145, 0.0141, 0.0300],
        5_000,
        0.02,
        3_000,
    ),
]
with forbid(*no_delegation, exercise="Exercise 2 (hidden cases)"):
    answers = [uninstrumented_estimate(*case) for case in calibrations]
for case, got in zip(calibrations, answers, strict=True):
    plain, traced, n_cal, t, n = case
    med_p, med_t = float(np.median(plain)), float(np.median(traced))
    expected = t - n * (med_t - med_p) / n_cal
    upper = sorted(traced)[len(traced) // 2] - sorted(plain)[len(plain) // 2]
    wrong = {
        t - n * (np.mean(traced) - np.mean(plain)) / n_cal: "means of the repeats: one slow run "
        "moves a mean, not a median",
        t - n * (min(traced) - min(plain)) / n_cal: "the fastest repeats, not the medians",
        t - n * upper / n_cal: "the upper middle element as the median of an even number of "
        "repeats: average the two middle ones",
        t * med_p / med_t: "the traced time scaled by the calibration's plain/traced ratio: the "
        "overhead is per event, not a fixed percentage",
        t: "the traced time, uncorrected",
        t - (med_t - med_p): "the calibration's whole added time subtracted: scale it by "
        "num_events / calibration_events",
        t - n_cal * (med_t - med_p) / n: "num_events and calibration_events swapped",
    }
    check_float(
        f"uninstrumented_estimate(case with traced_time={t}, num_events={n})",
        got,
        expected,
        unit="s",
        known_wrong={v: why for v, why in wrong.items() if abs(v - expected) > 1e-9},
    )
### END HIDDEN TESTS
passed("Exercise 2")

# %% [markdown]
# ### Exercise 3 — The longest capture window within a budget (3 points)
#
# The cell gives `profiler_action(step, wait, warmup, active, repeat, skip_first)`, the action
# `torch.profiler.schedule` gives a step (numbered from 0). Write `largest_active(num_steps,
# step_time, observer_overhead, save_time, budget, wait, warmup, repeat, skip_first)`: the
# largest `active` in 1 … `num_steps` for which the profiler's cost over a run of `num_steps`
# steps stays within `budget`, as an int; 0 if no `active` fits. The rules:
# - every `WARMUP`, `RECORD` and `RECORD_AND_SAVE` step costs `observer_overhead × step_time`;
# - every saved trace costs `save_time`: one per `RECORD_AND_SAVE` step, plus one if the run's
#   last step is a `RECORD` step. At the run's end `p.step()` has already moved to the step
#   after the last one, and the exit acts on that step's action (PyTorch,
#   torch/profiler/profiler.py, `action_map`): an unfinished active window is saved, an
#   unfinished warm-up is not. (Torch also saves a near-empty trace when the step after the
#   last one is a window's first recorded step; in the tests this never changes the answer.)
# - the added time over `num_steps × step_time` must be at most `budget` (a fraction).
#
# The cost is not monotone in `active`: a longer window lengthens the cycle, so fewer windows
# and saves fit in the run. Try every value. The hidden tests include `repeat=0`, a run that
# ends inside a window, a budget that one window already exceeds, and a case exactly on the
# budget.


# %% nbgrader={"grade": false, "grade_id": "largest_active_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def profiler_action(
    step: int, wait: int, warmup: int, active: int, repeat: int, skip_first: int
) -> str:
    """Given: torch.profiler.schedule's action at step (PyTorch, torch/profiler/profiler.py)."""
    if step < skip_first:
        return "NONE"
    step -= skip_first
    cycle = wait + warmup + active
    if repeat > 0 and step >= repeat * cycle:
        return "NONE"
    mod = step % cycle
    if mod < wait:
        return "NONE"
    if mod < wait + warmup:
        return "WARMUP"
    return "RECORD" if mod < cycle - 1 else "RECORD_AND_SAVE"


def largest_active(
    num_steps: int,
    step_time: float,
    observer_overhead: float,
    save_time: float,
    budget: float,
    wait: int,
    warmup: int,
    repeat: int,
    skip_first: int,
) -> int:
    """Largest active (1 ... num_steps) whose schedule costs at most budget; 0 if none does."""
    ### BEGIN SOLUTION
    best = 0
    for active in range(1, num_steps + 1):
        schedule = (wait, warmup, active, repeat, skip_first)
        actions = [profiler_action(step, *schedule) for step in range(num_steps)]
        on = sum(a != "NONE" for a in actions)
        saves = actions.count("RECORD_AND_SAVE") + (actions[-1] == "RECORD")
        extra = on * observer_overhead * step_time + saves * save_time
        if extra <= budget * num_steps * step_time:
            best = active
    return best
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "largest_active_tests", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
"""Exercise 3: largest_active(num_steps, step_time, observer_overhead, save_time, budget,
wait, warmup, repeat, skip_first), an int."""
import course_lib.profiling as course_profiling

models = ("schedule_action", "schedule_actions", "capture_overhead", "plan_capture_window")
no_delegation = [(course_profiling, name) for name in models]
with forbid(*no_delegation, exercise="Exercise 3"):
    small_case = largest_active(40, 1.0, 0.5, 1.0, 0.1, 10, 1, 1, 0)
check_int(
    "largest_active(40, 1 s, 0.5, 1 s, 0.1, wait=10, warmup=1, repeat=1, skip_first=0)",
    small_case,
    5,
    known_wrong={
        6: "warm-up steps counted as free: the lesson charges each one o·T (an upper bound)",
        7: "the save time left out",
        4: "overhead < budget: a schedule exactly on the budget fits",
    },
)
### BEGIN HIDDEN TESTS
windows = {  # (num_steps, step_time, o, save, budget, wait, warmup, repeat, skip_first) -> active,
    # computed once with course_lib.profiling.plan_capture_window and checked by a step walk
    (300, 0.5, 0.4, 3.0, 0.05, 100, 2, 0, 10): 1,
    (300, 0.5, 0.4, 3.0, 0.05, 40, 2, 1, 10): 20,
    (200, 0.25, 1.0, 0.0, 0.1, 0, 3, 2, 5): 7,
    (64, 0.5, 0.5, 0.0, 0.125, 0, 0, 1, 0): 16,  # exactly on the budget
    (250, 0.2, 0.3, 2.0, 0.05, 120, 1, 0, 20): 7,
    (120, 1.0, 0.5, 5.0, 0.05, 10, 2, 3, 0): 0,  # one window is already over the budget
    (150, 0.4, 0.25, 1.0, 0.04, 60, 1, 0, 12): 1,
    (90, 0.5, 0.6, 0.5, 0.2, 30, 1, 0, 4): 27,
    (100, 1.0, 0.5, 2.0, 0.061, 90, 1, 0, 0): 7,  # longer windows end in RECORD: saved at stop
    (100, 1.0, 0.5, 3.0, 0.05, 95, 6, 0, 0): 100,  # the run ends in warm-up: nothing saved
    (300, 1.0, 0.25, 5.0, 0.1, 100, 1, 2, 0): 99,  # not monotone: 39 and 99 fit, 40 does not
    (100, 1.0, 0.1, 5.0, 0.15, 0, 0, 1, 0): 100,  # one cycle ends on RECORD_AND_SAVE: saved once
}
with forbid(*no_delegation, exercise="Exercise 3 (hidden cases)"):
    answers = {case: largest_active(*case) for case in windows}
for case, expected in windows.items():
    check_int(f"largest_active{case}", answers[case], expected)
### END HIDDEN TESTS
passed("Exercise 3")

# %% [markdown]
# ### Exercise 4 — The collection mode for the question (3 × 1 point)
#
# For each question, set the variable to the mode that answers it with the least distortion,
# one of the strings
# - `"none"`: timed runs with no observer, repeated;
# - `"trace"`: a trace of every op (torch.profiler with CPU and CUDA activities);
# - `"sample"`: a sampling profiler such as py-spy;
# - `"memory"`: allocation recording (`profile_memory=True`, a CUDA memory snapshot);
# - `"replay"`: hardware counters by kernel replay (Nsight Compute).
#
# (a) `mode_speedup`: did a new data-loader setting make steps faster? The expected gain is 3 %.
#
# (b) `mode_kernel`: is the attention kernel limited by DRAM bandwidth?
#
# (c) `mode_production`: a 12-hour job slows down after some hours; in which Python functions
# does the slow phase spend its time? The job must not slow down by more than 1 %.

# %% nbgrader={"grade": false, "grade_id": "modes_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
mode_speedup = "none"  # a 3 % gain needs the uninstrumented step time, A/B over repeats
mode_kernel = "replay"  # achieved DRAM bandwidth is a hardware counter
mode_production = "sample"  # cost per sample, bounded by the rate; statistics over hours
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "mode_speedup_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 4a: mode_speedup, one of "none", "trace", "sample", "memory", "replay"."""
modes = {
    "none": "timed runs with no observer",
    "trace": "a trace of every op",
    "sample": "a sampling profiler",
    "memory": "allocation recording",
    "replay": "hardware counters by kernel replay",
}
check_choice("mode_speedup", mode_speedup, mode_speedup, modes)  # visible: one of the options
### BEGIN HIDDEN TESTS
check_choice(
    "mode_speedup",
    mode_speedup,
    "none",
    {
        **modes,
        "trace": "a trace: its overhead depends on the op count, which the change may alter, "
        "and can be larger than a 3 % effect",
        "sample": "a sampler: statistics of where time goes, not the step time to 1 %",
        "replay": "kernel replay: the kernels run many times, the step time means nothing",
    },
)
### END HIDDEN TESTS
passed("Exercise 4a")

# %% nbgrader={"grade": true, "grade_id": "mode_kernel_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 4b: mode_kernel, one of "none", "trace", "sample", "memory", "replay"."""
modes = {
    "none": "timed runs with no observer",
    "trace": "a trace of every op",
    "sample": "a sampling profiler",
    "memory": "allocation recording",
    "replay": "hardware counters by kernel replay",
}
check_choice("mode_kernel", mode_kernel, mode_kernel, modes)  # visible: one of the options
### BEGIN HIDDEN TESTS
check_choice(
    "mode_kernel",
    mode_kernel,
    "replay",
    {
        **modes,
        "trace": "a trace: it gives the kernel's duration, not the bandwidth it achieves",
        "memory": "allocation recording: it sees allocations, not the traffic to DRAM",
    },
)
### END HIDDEN TESTS
passed("Exercise 4b")

# %% nbgrader={"grade": true, "grade_id": "mode_production_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 4c: mode_production, one of "none", "trace", "sample", "memory", "replay"."""
modes = {
    "none": "timed runs with no observer",
    "trace": "a trace of every op",
    "sample": "a sampling profiler",
    "memory": "allocation recording",
    "replay": "hardware counters by kernel replay",
}
check_choice("mode_production", mode_production, mode_production, modes)  # visible
### BEGIN HIDDEN TESTS
check_choice(
    "mode_production",
    mode_production,
    "sample",
    {
        **modes,
        "trace": "a trace: its cost is per event, far above 1 % on a launch-bound step, and "
        "hours of it do not fit in memory",
        "none": "timing shows that it slows down, not where the time goes",
    },
)
### END HIDDEN TESTS
passed("Exercise 4c")

# %% [markdown]
# ### Exercise 5 — Explained answer: a regression seen through a profiler (2 points, graded by hand)
#
# A teammate profiles every step of a training job with `torch.profiler` (`with_stack=True`,
# `profile_memory=True`) before and after a change that fuses many small ops into fewer kernels.
# The profiled step time falls from 530 ms to 410 ms, and they report a 23 % speedup. What is
# wrong with the claim, and what would you measure instead? Answer in three or four sentences
# using this lesson's model.

# %% [markdown] nbgrader={"grade": true, "grade_id": "explain_profiled_speedup", "locked": false, "points": 2, "schema_version": 3, "solution": true, "task": false}
# **Model answer** (the student release replaces this cell). Both numbers include the observer,
# and its cost is per event: the change removes many ops, so it removes tracing, stack and
# allocation-recording cost along with work, and part or all of the 120 ms can be the profiler's
# own overhead shrinking. If the step was launch-bound before and compute-bound after, the
# tracer's cost was fully exposed before and partly hidden after, which inflates the gain
# further. The claim needs the uninstrumented step times: an A/B of repeated runs with no
# observer (medians and spread, the same warm-up skipped), reported apart from the profiles;
# then a short scheduled trace (warm-up, a few active steps) of each version to explain where
# the time went.
#
# Rubric: 1 point for naming the per-event overhead that the change itself alters (or the
# hiding that changes with the bound); 1 point for an uninstrumented, repeated A/B measurement
# as the evidence, with the profile only as an explanation.

# %% [markdown]
# ## Takeaways
#
# - Measure the cost as an A/B of repeated, interleaved runs with medians.
# - An asynchronous step hides CPU-side tracing until the CPU becomes the bottleneck; then the
#   trace shows a launch-bound step that does not exist without it.
# - Profile a window: skip start-up, warm up, record a few steps, and price the schedule
#   (`repeat=0` pays for every cycle).
# - The trap: reading a step time, or a speedup, off a profile. Report the uninstrumented
#   performance from its own runs and use the profile to explain it.

# %% [markdown]
# ## Going further (optional, ungraded)
#
# - Before Python 3.12 (this course's 3.11) `cProfile` uses the same hook as `sys.setprofile`
#   with a C callback (CPython 3.9–3.11, Modules/_lsprof.c, `profiler_enable`:
#   `_PyEval_SetProfile(tstate, profiler_callback, self)`); since 3.12 it is built on
#   `sys.monitoring` (PEP 669; CPython issue gh-103533).
# - PEP 669 (`sys.monitoring`) lets a tool turn events on per code object and return
#   `sys.monitoring.DISABLE` from a callback to switch one event location off, so a tool that
#   only needs the first call of each function pays almost nothing afterwards. Run this lesson
#   on Python 3.12 or later and compare `cProfile` with `sys.setprofile` again.
# - `torch.profiler.schedule` also takes `skip_first_wait`: with a large `wait`, it starts the
#   first cycle without waiting (PyTorch, torch/profiler/profiler.py).
# - On the device side the tracer is not free either: CUPTI activity records are buffered and
#   flushed, and kernel timestamps from a trace are taken under profiling. Compare a kernel's
#   duration in a trace with CUDA-event timing of the same kernel without the profiler.
# - AMD's rocprofv3 replays kernels only with `--replay-mode kernel --kernel-replay-beta-enabled`
#   (experimental), and it snapshots every tracked device allocation, not only the memory the
#   kernel can reach (rocprofiler-sdk docs, "Using kernel replay with rocprofv3").
# - `tracemalloc` is the costliest observer of section 1's many small calls: `x + 1` allocates a
#   new integer object on every call, and each allocation is recorded.
# - On a busy machine wall times scatter by tens of percent: rerun section 1 with `clock="wall"`.
# - py-spy pauses the process for each sample by default; with `--nonblocking` it reads the
#   process's memory without stopping it, at the price of stacks that can be torn mid-update
#   (py-spy changelog).
# - Nsight Compute by default also locks clocks to base and flushes caches between replays
#   (Profiling Guide, "Clock Control", "Cache Control").
