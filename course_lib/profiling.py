"""The observer's cost: A/B overhead measurement, a per-event overhead model, and a capture-window
planner that mirrors ``torch.profiler.schedule`` (cost09).

Three ideas, one function family each:

* **Measure the observer as an A/B comparison.** :func:`measure_overhead` runs each workload with
  no observer and under each observer (``sys.setprofile`` with a Python callback, ``cProfile``,
  ``tracemalloc``), several interleaved repeats each, and returns one row per run;
  :func:`overhead_summary` reduces them to medians, spread and the overhead against the
  unobserved median. Since Python 3.12 ``cProfile`` is built on ``sys.monitoring`` (PEP 669;
  CPython issue gh-103533), not on ``sys.setprofile``, so it is measured as its own observer.
* **Tracing costs per event.** An observer that does work at every event adds
  ``num_events × per_event_cost`` to the thread that emits the events
  (:func:`observed_cpu_time`). If that thread is a CPU launching asynchronous device work, the step
  is the longer of the CPU's and the device's time, so the added cost is hidden until the CPU
  becomes the bottleneck (:func:`traced_step_time`, :func:`tracing_overhead`). The per-event cost
  comes from an A/B calibration (:func:`per_event_cost`) and corrects an instrumented CPU time
  (:func:`corrected_time`). Sampling costs per sample instead (:func:`sampling_overhead`).
* **A capture schedule bounds the cost.** :func:`schedule_action` is ``torch.profiler.schedule``
  (PyTorch, torch/profiler/profiler.py): ``skip_first`` steps, then cycles of ``wait``, ``warmup``
  and ``active`` steps, ``repeat`` cycles (0: until the run ends); the last active step of a
  cycle is ``RECORD_AND_SAVE``. :func:`capture_overhead` prices a schedule over a run and
  :func:`plan_capture_window` finds the longest active window within an overhead budget.

Times are seconds, fractions are fractions (0.05 is 5 %). Argument checks come from
:mod:`course_lib.validate` (public), so a grade cell that forbids one routine here leaves the
others working.
"""

from __future__ import annotations

import cProfile
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from course_lib.validate import nonnegative_array, number, whole_count

__all__ = [
    "ACTIONS",
    "OBSERVERS",
    "CapturePlan",
    "capture_overhead",
    "corrected_time",
    "count_profile_events",
    "measure_overhead",
    "observe",
    "observed_cpu_time",
    "overhead_summary",
    "per_event_cost",
    "plan_capture_window",
    "sampling_overhead",
    "schedule_action",
    "schedule_actions",
    "traced_step_time",
    "tracing_overhead",
]

OBSERVERS = ("none", "setprofile", "cProfile", "tracemalloc")
"""The observers :func:`observe` knows: none, a Python ``sys.setprofile`` callback, cProfile,
tracemalloc (1 frame per allocation)."""

ACTIONS = ("NONE", "WARMUP", "RECORD", "RECORD_AND_SAVE")
"""torch.profiler.ProfilerAction's members, in its order (NONE = 0 ... RECORD_AND_SAVE = 3)."""


# --------------------------------------------------------------------------------------------
# the per-event model


def observed_cpu_time(cpu_time: float, num_events: int, per_event_cost: float) -> float:
    """CPU time under a tracer: ``cpu_time + num_events × per_event_cost`` (cost09, section 1).

    The tracer's work runs on the thread that emits the events, once per event.
    """
    cpu = number(cpu_time, "cpu_time")
    n = whole_count(num_events, "num_events", minimum=0)
    c = number(per_event_cost, "per_event_cost")
    return cpu + n * c


def traced_step_time(
    cpu_time: float, gpu_time: float, num_events: int, per_event_cost: float
) -> float:
    """Step time under a CPU-side tracer: ``max(cpu_time + num_events × per_event_cost, gpu_time)``.

    The lesson's steady-state model of an asynchronous step (cost09, section 2): the CPU launches
    device work without waiting for it (PyTorch, "CUDA semantics": operations are asynchronous),
    so a step lasts the longer of the CPU's launch time and the device's busy time. A launch-bound
    step (cpu_time >= gpu_time) pays the whole tracing cost; a compute-bound step hides it until
    the CPU becomes the bottleneck. The device's own time is taken as unchanged by the tracer.
    """
    number(gpu_time, "gpu_time")
    return max(observed_cpu_time(cpu_time, num_events, per_event_cost), float(gpu_time))


def tracing_overhead(
    cpu_time: float, gpu_time: float, num_events: int, per_event_cost: float
) -> float:
    """Overhead of tracing as a fraction of the uninstrumented step:
    ``traced_step_time / max(cpu_time, gpu_time) − 1`` (cost09, section 2)."""
    base = max(number(cpu_time, "cpu_time"), number(gpu_time, "gpu_time"))
    if base == 0:
        raise ValueError("cpu_time and gpu_time are both 0: the step has no time to compare with")
    return traced_step_time(cpu_time, gpu_time, num_events, per_event_cost) / base - 1.0


def per_event_cost(plain_times: ArrayLike, traced_times: ArrayLike, num_events: int) -> float:
    """Cost of one event from an A/B calibration:
    ``(median(traced_times) − median(plain_times)) / num_events`` (cost09, section 1).

    Medians of repeated runs, so one slow run (a cold cache, a noisy neighbour) does not move the
    estimate the way it moves a mean.
    """
    plain = nonnegative_array(plain_times, "plain_times").ravel()
    traced = nonnegative_array(traced_times, "traced_times").ravel()
    for name, arr in (("plain_times", plain), ("traced_times", traced)):
        if arr.size == 0:
            raise ValueError(f"{name} is empty: give at least one measured time")
    n = whole_count(num_events, "num_events", minimum=1)
    return float((np.median(traced) - np.median(plain)) / n)


def corrected_time(traced_time: float, num_events: int, per_event_cost: float) -> float:
    """Uninstrumented estimate of a CPU-bound measurement: ``traced_time − num_events ×
    per_event_cost`` (cost09, section 1). Raises if the correction exceeds the measurement."""
    t = number(traced_time, "traced_time")
    n = whole_count(num_events, "num_events", minimum=0)
    c = number(per_event_cost, "per_event_cost")
    if n * c > t:
        raise ValueError(
            f"num_events × per_event_cost = {n * c:.6g} s exceeds traced_time = {t:.6g} s: "
            "the events or the per-event cost do not belong to this measurement"
        )
    return t - n * c


def sampling_overhead(sample_interval: float, per_sample_cost: float) -> float:
    """Overhead of an in-process sampler that stops the program for ``per_sample_cost`` every
    ``sample_interval`` of wall time: ``c / (Δ − c)`` of the uninstrumented time (cost09, section 3).

    From T_obs = T + (T_obs / Δ)·c: the cost scales with the number of samples, not of events.
    """
    interval = number(sample_interval, "sample_interval", positive=True)
    c = number(per_sample_cost, "per_sample_cost")
    if c >= interval:
        raise ValueError(
            f"per_sample_cost ({c:.6g} s) must be below sample_interval ({interval:.6g} s): "
            "the sampler would never let the program run"
        )
    return c / (interval - c)


# --------------------------------------------------------------------------------------------
# capture schedule (torch.profiler.schedule)


def schedule_action(
    step: int, *, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0
) -> str:
    """The profiler's action at ``step`` (0-based), as ``torch.profiler.schedule`` decides it.

    Skip ``skip_first`` steps; then cycles of ``wait`` (NONE), ``warmup`` (WARMUP) and ``active``
    steps (RECORD, the last one RECORD_AND_SAVE), ``repeat`` cycles (0 = until the run ends), then
    NONE (PyTorch, torch/profiler/profiler.py, ``schedule``; cost09, section 4).
    """
    step = whole_count(step, "step", minimum=0)
    return str(schedule_actions(step + 1, wait, warmup, active, repeat, skip_first)[step])


def schedule_actions(
    num_steps: int, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0
) -> np.ndarray:
    """The action of every step 0 … num_steps − 1 (numpy array of str), vectorised
    :func:`schedule_action`."""
    num_steps = whole_count(num_steps, "num_steps", minimum=0)
    wait = whole_count(wait, "wait", minimum=0)
    warmup = whole_count(warmup, "warmup", minimum=0)
    active = whole_count(active, "active", minimum=1)
    repeat = whole_count(repeat, "repeat", minimum=0)
    skip_first = whole_count(skip_first, "skip_first", minimum=0)
    cycle = wait + warmup + active
    step = np.arange(num_steps) - skip_first
    mod = np.mod(step, cycle)
    code = np.where(mod < wait, 0, np.where(mod < wait + warmup, 1, 2))
    code = np.where(mod == cycle - 1, 3, code)
    code = np.where(step < 0, 0, code)
    if repeat > 0:
        code = np.where(step >= repeat * cycle, 0, code)
    return np.asarray(ACTIONS, dtype=object)[code].astype(str)


@dataclass(frozen=True)
class CapturePlan:
    """A profiler schedule priced over a run (cost09): what it records and what it costs.

    ``observed_steps`` run with the profiler on (WARMUP and RECORD steps), ``recorded_steps`` are
    in a saved trace, ``saves`` counts traces written; ``overhead_fraction`` is the added time
    over the uninstrumented run time.
    """

    wait: int
    warmup: int
    active: int
    repeat: int
    skip_first: int
    observed_steps: int
    recorded_steps: int
    saves: int
    overhead_time: float
    overhead_fraction: float


def capture_overhead(
    num_steps: int,
    step_time: float,
    observer_overhead: float,
    save_time: float,
    *,
    wait: int,
    warmup: int,
    active: int,
    repeat: int = 0,
    skip_first: int = 0,
) -> CapturePlan:
    """Price a schedule over a run of ``num_steps`` steps of ``step_time`` seconds (cost09, §4).

    Every RECORD step costs ``observer_overhead × step_time`` extra, and so, as an upper bound,
    does every WARMUP step (torch only prepares Kineto/CUPTI at warm-up; operator recording starts
    at the first RECORD step). Every window that recorded a step is saved once, at
    ``save_time``: at its RECORD_AND_SAVE step, or when the run ends inside its active steps
    (torch's exit acts on the action of the step after the last one: an unfinished RECORD window
    is saved, an unfinished WARMUP is not; torch/profiler/profiler.py, ``action_map``).
    overhead_fraction = (observed · o · T + saves · S) / (num_steps · T).
    """
    num_steps = whole_count(num_steps, "num_steps", minimum=1)
    t = number(step_time, "step_time", positive=True)
    o = number(observer_overhead, "observer_overhead")
    s = number(save_time, "save_time")
    actions = schedule_actions(num_steps, wait, warmup, active, repeat, skip_first)
    observed = int(np.count_nonzero(actions != "NONE"))
    recorded = int(np.count_nonzero((actions == "RECORD") | (actions == "RECORD_AND_SAVE")))
    saves = int(np.count_nonzero(actions == "RECORD_AND_SAVE")) + int(actions[-1] == "RECORD")
    extra = observed * o * t + saves * s
    return CapturePlan(
        wait=int(wait),
        warmup=int(warmup),
        active=int(active),
        repeat=int(repeat),
        skip_first=int(skip_first),
        observed_steps=observed,
        recorded_steps=recorded,
        saves=saves,
        overhead_time=float(extra),
        overhead_fraction=float(extra / (num_steps * t)),
    )


def plan_capture_window(
    num_steps: int,
    step_time: float,
    observer_overhead: float,
    save_time: float,
    budget: float,
    *,
    wait: int,
    warmup: int,
    repeat: int = 0,
    skip_first: int = 0,
) -> CapturePlan | None:
    """The largest ``active`` in 1 … num_steps whose :func:`capture_overhead` is within
    ``budget`` (overhead_fraction <= budget, up to a relative 1e-9 so that a cost summed in
    another order does not flip a boundary case), by exhaustive search; None if even one active
    step is over budget (cost09, section 4)."""
    num_steps = whole_count(num_steps, "num_steps", minimum=1)
    b = number(budget, "budget")
    for active in range(num_steps, 0, -1):
        plan = capture_overhead(
            num_steps,
            step_time,
            observer_overhead,
            save_time,
            wait=wait,
            warmup=warmup,
            active=active,
            repeat=repeat,
            skip_first=skip_first,
        )
        if plan.overhead_fraction <= b * (1 + 1e-9):
            return plan
    return None


# --------------------------------------------------------------------------------------------
# measuring observers on this machine


def _ignore(frame: object, event: str, arg: object) -> None:
    """A do-nothing sys.setprofile callback: the cost measured is the hook's, not the work's."""


@contextmanager
def observe(observer: str) -> Iterator[None]:
    """Run the body under one of :data:`OBSERVERS` (cost09, section 1)."""
    if observer not in OBSERVERS:
        raise ValueError(f"unknown observer {observer!r}; known: {list(OBSERVERS)}")
    if observer == "none":
        yield
    elif observer == "setprofile":
        previous = sys.getprofile()
        sys.setprofile(_ignore)
        try:
            yield
        finally:
            sys.setprofile(previous)
    elif observer == "cProfile":
        profiler = cProfile.Profile()
        profiler.enable()
        try:
            yield
        finally:
            profiler.disable()
    else:
        was_tracing = tracemalloc.is_tracing()
        if not was_tracing:
            tracemalloc.start(1)
        try:
            yield
        finally:
            if not was_tracing:
                tracemalloc.stop()


def count_profile_events(workload: Callable[[], object]) -> int:
    """How many events ``sys.setprofile`` delivers while ``workload()`` runs (calls and returns
    of Python and C functions): the event count of the per-event model (cost09, section 1)."""
    count = [0]

    def counter(frame: object, event: str, arg: object) -> None:
        count[0] += 1

    previous = sys.getprofile()
    sys.setprofile(counter)
    try:
        workload()
    finally:
        sys.setprofile(previous)
    return max(count[0] - 1, 0)  # minus the c_call of the closing sys.setprofile()


def measure_overhead(
    workloads: Mapping[str, Callable[[], object]],
    observers: Sequence[str] = OBSERVERS,
    *,
    repeats: int = 5,
    time_limit: float = 3.0,
    clock: str = "wall",
) -> pd.DataFrame:
    """Time every workload under every observer, ``repeats`` interleaved rounds (cost09, §1).

    Returns one row per run: ``workload``, ``observer``, ``repeat``, ``seconds``: wall time
    (``time.perf_counter``) with ``clock="wall"``, or this process's CPU time
    (``time.process_time``) with ``clock="cpu"``, which other programs sharing the cores disturb
    less (an observer's cost is CPU work in the observed thread, so CPU time includes it). Each round runs every (workload, observer) pair once, so a slow phase of the
    machine hits all of them alike, and the observers' order rotates from round to round, so
    none of them always runs first (after another observer's clean-up). Rounds stop early (at least one is always completed) once
    ``time_limit`` seconds have passed, so the measurement cannot run away on a loaded machine.
    Each workload is run once unobserved before timing (a warm-up).
    """
    if not workloads:
        raise ValueError("workloads is empty: give at least one name -> callable")
    for name in observers:
        if name not in OBSERVERS:
            raise ValueError(f"unknown observer {name!r}; known: {list(OBSERVERS)}")
    if clock not in ("wall", "cpu"):
        raise ValueError(f"clock must be 'wall' or 'cpu', got {clock!r}")
    timer = time.perf_counter if clock == "wall" else time.process_time
    repeats = whole_count(repeats, "repeats", minimum=1)
    limit = number(time_limit, "time_limit", positive=True)
    for fn in workloads.values():
        fn()
    rows: list[tuple[str, str, int, float]] = []
    start = time.perf_counter()
    for r in range(repeats):
        if r > 0 and time.perf_counter() - start > limit:
            break
        order = list(observers[r % len(observers) :]) + list(observers[: r % len(observers)])
        for wname, fn in workloads.items():
            for oname in order:
                with observe(oname):
                    t0 = timer()
                    fn()
                    t1 = timer()
                rows.append((wname, oname, r, t1 - t0))
    return pd.DataFrame(rows, columns=["workload", "observer", "repeat", "seconds"])


def overhead_summary(runs: pd.DataFrame) -> pd.DataFrame:
    """Per (workload, observer): ``runs``, ``median``, ``min``, ``max`` (seconds), ``spread``
    ((max − min) / median) and ``overhead`` = median / median of "none" − 1 (cost09, section 1).

    ``runs`` is :func:`measure_overhead`'s table; each workload needs its "none" rows.
    """
    missing = {"workload", "observer", "seconds"} - set(runs.columns)
    if missing:
        raise ValueError(f"runs lacks the column(s) {sorted(missing)}")
    if len(runs) == 0:
        raise ValueError("runs is empty")
    nonnegative_array(runs["seconds"].to_numpy(), "runs['seconds']")
    grouped = runs.groupby(["workload", "observer"], sort=False)["seconds"]
    out = grouped.agg(runs="count", median="median", min="min", max="max").reset_index()
    out["spread"] = (out["max"] - out["min"]) / out["median"]
    base = out[out["observer"] == "none"].set_index("workload")["median"]
    lacking = sorted(set(out["workload"]) - set(base.index))
    if lacking:
        raise ValueError(f"workload(s) {lacking} have no 'none' runs to compare with")
    out["overhead"] = out["median"] / out["workload"].map(base) - 1.0
    return out
