"""Unequal pipeline stages: the step they give, the stage that sets it, and what moving layers
between stages costs and when it is safe (pipe08).

Step time with unequal stages. Stage s takes f_s per forward and b_s per backward of one
microbatch (seconds); m microbatches; zero point-to-point latency.

* GPipe (Huang et al. 2019, "GPipe: Efficient Training of Giant Neural Networks using Pipeline
  Parallelism", NeurIPS, §2.2, Fig. 2c: all forwards, then all backwards): exactly
  Σ_s (f_s + b_s) + (m − 1)(max_s f_s + max_s b_s) (:func:`gpipe_makespan`). Derivation: the
  forward phase is a grid of cells (s, j) where F(s, j) waits for F(s − 1, j) and F(s, j − 1);
  its end is the longest monotone staircase through the grid, which visits every stage once and
  spends its m − 1 extra cells on the stage with the largest f_s, Σ_s f_s + (m − 1) max_s f_s.
  The last stage starts its backwards when its forwards are done (every earlier stage is free
  by then), and the backward phase is the same grid run from stage p − 1 down to 0. The tests
  check it against the simulator on random unequal costs.
* "Sum of stage times + (m − 1) × the slowest stage", Σ_s (f_s + b_s) + (m − 1) max_s (f_s + b_s)
  (:func:`slowest_stage_makespan`), is that value only when one stage is slowest in both
  directions; otherwise max_s (f_s + b_s) < max_s f_s + max_s b_s and it underestimates GPipe.
* 1F1B (Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters
  Using Megatron-LM", SC, §2.2.1) has no closed form under imbalance: a stage's forwards and
  backwards interleave, so idle gaps depend on the neighbours' costs. Use the simulator; it is
  bounded below by max_s [Σ_{k<s} (f_k + b_k) + m (f_s + b_s)] (:func:`makespan_lower_bound`,
  any schedule: stage s runs m forwards and m backwards one at a time, cannot start before
  microbatch 0's forward crossed stages 0..s − 1, and its last backward must still cross them
  back). The bound is met with equal stages, (m + p − 1)(f + b).

The bottleneck stage. :func:`critical_path` walks a simulated timeline back from the action that
ends last, each time to a predecessor that ends exactly when the action starts (plus the hop's
latency if it ran on another rank) — the critical path method's longest path (Kelley and Walker
1959, "Critical-path planning and scheduling"), here through the simulator's DAG of dependencies
and each rank's program order. Ties go to the rank's previous action (the rank was busy, not
waiting), then to the first dependency. :func:`bottleneck_stage` is the stage with the most
compute time on that path: shortening its actions on the path is what shortens the step. It can
differ from :func:`busiest_stage`, the stage with the largest busy time Σ_j (f_s + b_s): under
GPipe the path runs all m forwards of the slowest-forward stage and all m backwards of the
slowest-backward stage, whatever their sums.

Repartitioning. A partition's stage costs come from :mod:`course_lib.pipeline.partition`
(:func:`stage_forward_backward` splits :func:`~course_lib.pipeline.partition.stage_times` into a
forward and a backward cost, half the transfers each, as pipe01 does). Moving layers between stages
sends their model state across each link between the old and the new stage; by convention we
count all of it, (2 + 2 + 12) = 16 bytes per parameter under mixed-precision Adam (fp16 weights
and gradients, fp32 master weights, momentum and variance: Rajbhandari et al. 2020, "ZeRO",
§3.1, K = 12). That is an upper bound: at a flush the fp16 gradients are applied and dead and the
fp16 weights can be recast from the fp32 masters, so a lean move sends 12 bytes per parameter
(pass ``bytes_per_param``), at ``link_bandwidth`` bytes/s, links in parallel; plus a ``pause`` (the
flush, rebuilding communicators). :func:`break_even_steps` is ⌈cost / gain⌉ with the gain per
step from the simulated step before and after.

When a change is unsafe. A stage's layers can move only when no microbatch has activations
stashed on it: a live stash is a forward whose backward has not run, and under weight stashing
(Narayanan et al. 2019, "PipeDream", SOSP, §3.3: one version per in-flight microbatch, so up to
p − s on stage s in 1F1B's steady state) or double buffering (Narayanan et al. 2021,
"Memory-Efficient Pipeline-Parallel DNN Training", ICML, §3.1) the weight version it must be
completed with. With no live stash no older version is needed either, so "no live stash" is the
test (:func:`live_stashes`, :func:`live_stashes_at`, :func:`is_flush`): true at a flush — before
a flushed step's first forward and after its last backward — and never inside a step of GPipe or
1F1B with p ≥ 2.

Argument checks that several routines share are public (``check_stage_costs``,
``check_timeline``) or come from ``_validate`` / ``_partition_checks`` / ``course_lib.validate``:
a grade cell that forbids one routine disables this module's private helpers it calls
(course_lib.checks.forbid).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from course_lib.validate import number

from ._partition_checks import link_bandwidth as check_link_bandwidth
from ._partition_checks import model_spec as check_spec
from ._partition_checks import per_param_bytes, read_only, schedule_name
from ._validate import check_costs, check_duration, check_hop_latencies, check_int
from .partition import ModelSpec, check_boundaries, stage_sums, stage_times
from .schedule import KINDS, Action, Schedule, gpipe, one_f_one_b
from .simulate import EVENT_COLUMNS, ScheduleDeadlock, Timeline, simulate
from .simulate import _compile as compile_schedule
from .simulate import _run as run_compiled
from .versions import WeightVersions

__all__ = [
    "RepartitionCost",
    "break_even_steps",
    "bottleneck_stage",
    "busiest_stage",
    "check_stage_costs",
    "check_timeline",
    "critical_path",
    "critical_time",
    "gpipe_makespan",
    "is_flush",
    "jittered_timeline",
    "live_stashes",
    "live_stashes_at",
    "makespan_lower_bound",
    "move_layers",
    "partition_step_time",
    "repartition_cost",
    "slowest_stage_makespan",
    "stage_busy",
    "stage_forward_backward",
]

#: Times closer than this fraction of the makespan count as equal (float noise), as in
#: Timeline.in_flight.
TIME_RTOL = 1e-9


def check_stage_costs(forward_cost: object, backward_cost: object) -> tuple[np.ndarray, np.ndarray]:
    """(f, b) as float arrays of one length (>= 1 stage); names the argument on bad input (pipe08)."""
    for name, value in (("forward_cost", forward_cost), ("backward_cost", backward_cost)):
        if isinstance(value, str | bytes) or np.ndim(value) != 1:
            raise ValueError(f"{name} must be a 1-D sequence of per-stage costs, got {value!r}")
    p = len(forward_cost)  # type: ignore[arg-type]
    if p == 0:
        raise ValueError("forward_cost must have at least one stage")
    if len(backward_cost) != p:  # type: ignore[arg-type]
        raise ValueError(
            f"backward_cost has {len(backward_cost)} per-stage costs but forward_cost has {p}"  # type: ignore[arg-type]
        )
    return check_costs("forward_cost", forward_cost, p), check_costs(
        "backward_cost", backward_cost, p
    )


# --------------------------------------------------------------------------------------------
# step time with unequal stages (zero latency)


def gpipe_makespan(
    forward_cost: Sequence[float], backward_cost: Sequence[float], num_microbatches: int
) -> float:
    """GPipe's step at zero latency: Σ_s (f_s + b_s) + (m − 1)(max_s f_s + max_s b_s), seconds (pipe08).

    Exact for :func:`~course_lib.pipeline.gpipe` with any per-stage costs (derivation in the
    module docstring; the tests check it against the simulator).
    """
    f, b = check_stage_costs(forward_cost, backward_cost)
    m = check_int("num_microbatches", num_microbatches)
    return float(f.sum() + b.sum() + (m - 1) * (f.max() + b.max()))


def slowest_stage_makespan(
    forward_cost: Sequence[float], backward_cost: Sequence[float], num_microbatches: int
) -> float:
    """Sum of stage times + (m − 1) × the slowest stage, Σ_s (f_s + b_s) + (m − 1) max_s (f_s + b_s) (pipe08).

    GPipe's step only when one stage has both the largest f_s and the largest b_s; below it
    otherwise (:func:`gpipe_makespan`).
    """
    f, b = check_stage_costs(forward_cost, backward_cost)
    m = check_int("num_microbatches", num_microbatches)
    return float(f.sum() + b.sum() + (m - 1) * (f + b).max())


def makespan_lower_bound(
    forward_cost: Sequence[float], backward_cost: Sequence[float], num_microbatches: int
) -> float:
    """max_s [Σ_{k<s} (f_k + b_k) + m (f_s + b_s)]: no F/B schedule runs a step faster (pipe08).

    Stage s is busy m (f_s + b_s), starts no earlier than Σ_{k<s} f_k and its last backward still
    has Σ_{k<s} b_k to go. Equal to 1F1B's and GPipe's step, (m + p − 1)(f + b), when the stages
    are equal; 1F1B under imbalance has no closed form (simulate it).
    """
    f, b = check_stage_costs(forward_cost, backward_cost)
    m = check_int("num_microbatches", num_microbatches)
    t = f + b
    before = np.concatenate([[0.0], np.cumsum(t)[:-1]])
    return float((before + m * t).max())


# --------------------------------------------------------------------------------------------
# a "measured" timeline: per-action durations that vary around the stage's cost


def jittered_timeline(
    schedule: Schedule,
    forward_cost: Sequence[float],
    backward_cost: Sequence[float],
    jitter: float,
    seed: int,
) -> Timeline:
    """A synthetic "measured" run: action durations cost × (1 + jitter·u), u ~ U(−1, 1) seeded (pipe08).

    The simulator's semantics (each action starts at the latest of its rank's previous end and
    its dependencies' ends, zero latency) with one duration per action instead of one per stage,
    as a profile of real kernels shows; ``jitter`` in [0, 1), 0 gives :func:`simulate`'s run.
    Generic durations leave no ties between an action's predecessors.
    """
    if not isinstance(schedule, Schedule):
        raise TypeError(f"schedule must be a Schedule, got {type(schedule).__name__}")
    if schedule.has_weight_actions:
        raise ValueError("jittered_timeline takes F/B schedules (no W actions)")
    f, b = check_stage_costs(forward_cost, backward_cost)
    if len(f) != schedule.num_stages:
        raise ValueError(
            f"forward_cost has {len(f)} stages but the schedule has {schedule.num_stages}"
        )
    spread = number(jitter, "jitter")
    if not 0.0 <= spread < 1.0:
        raise ValueError(f"jitter must be in [0, 1), got {jitter!r}")
    rng = np.random.default_rng(check_int("seed", seed, minimum=0))
    kinds, stages, micro = (np.asarray(c, dtype=np.int64) for c in schedule._columns)
    base = np.stack([f, b])[kinds, stages]
    durations = base * (1.0 + spread * rng.uniform(-1.0, 1.0, size=len(base)))
    compiled = compile_schedule(schedule)
    zeros = [0.0] * len(base)
    started, done = run_compiled(compiled, durations.tolist(), zeros, zeros, schedule.num_ranks)
    if not done:
        raise ScheduleDeadlock("the schedule cannot complete (simulate() names the blocked ranks)")
    start = np.array(started, dtype=float)
    events = pd.DataFrame(
        {
            "rank": compiled.ranks.copy(),
            "kind": np.array(KINDS, dtype=object)[kinds],
            "stage": stages,
            "microbatch": micro,
            "start": start,
            "end": start + durations,
        },
        columns=list(EVENT_COLUMNS),
    )
    return Timeline(schedule, events)


# --------------------------------------------------------------------------------------------
# the bottleneck stage of a timeline


def check_timeline(timeline: object) -> Timeline:
    """``timeline`` if it is a Timeline, else a TypeError naming the argument (pipe08)."""
    if not isinstance(timeline, Timeline):
        raise TypeError(
            f"timeline must be a Timeline (from simulate), got {type(timeline).__name__}"
        )
    return timeline


def stage_busy(timeline: Timeline) -> np.ndarray:
    """Busy time per stage: the sum of its actions' durations in ``timeline``, seconds (pipe08)."""
    events = check_timeline(timeline).events
    durations = (events["end"] - events["start"]).to_numpy(dtype=float)
    busy = np.bincount(
        events["stage"].to_numpy(dtype=np.int64),
        weights=durations,
        minlength=timeline.schedule.num_stages,
    )
    return read_only(busy.astype(float))


def busiest_stage(timeline: Timeline) -> int:
    """The stage with the largest busy time (:func:`stage_busy`); ties to the lowest index (pipe08)."""
    return int(np.argmax(stage_busy(timeline)))


def critical_path(timeline: Timeline, p2p_latency: float | Sequence[float] = 0.0) -> pd.DataFrame:
    """The actions of one longest path of ``timeline``, first to last: its events rows (index kept)
    plus ``wait``, the hop latency paid just before each action (pipe08).

    From the action ending last (ties: first in rank order), step back to a predecessor whose
    end (+ the hop's latency if it ran on another rank) is the action's start, within
    1e-9 × makespan: the rank's previous action first, then the dependency F(s−1, j) (for F) /
    F(s, j) (for B) / B(s, j) (for W), then B(s+1, j). The path's durations and waits add up to
    the makespan and it starts at 0. ``p2p_latency`` must be what the timeline was simulated with
    (a number or one per hop); an action whose start no predecessor explains raises ValueError.
    """
    timeline = check_timeline(timeline)
    schedule = timeline.schedule
    p, num_mb = schedule.num_stages, schedule.num_microbatches
    hops = np.append(check_hop_latencies("p2p_latency", p2p_latency, p), 0.0)
    events = timeline.events
    n = len(events)
    if n == 0:
        return events.assign(wait=np.zeros(0))
    letters = events["kind"].to_numpy()
    kind = np.zeros(n, dtype=np.int64)
    for code, letter in enumerate(KINDS):
        kind[letters == letter] = code
    stage = events["stage"].to_numpy(dtype=np.int64)
    micro = events["microbatch"].to_numpy(dtype=np.int64)
    rank = events["rank"].to_numpy(dtype=np.int64)
    start = events["start"].to_numpy(dtype=float)
    end = events["end"].to_numpy(dtype=float)
    position = np.full(len(KINDS) * p * num_mb, -1, dtype=np.int64)
    position[(kind * p + stage) * num_mb + micro] = np.arange(n)

    def row(k: int, s: np.ndarray, ok: np.ndarray) -> np.ndarray:
        s_safe = np.where(ok, s, 0)
        return np.where(ok, position[(k * p + s_safe) * num_mb + micro], -1)

    # Candidate predecessors in preference order: rank's previous, first dependency, second.
    previous = np.where(np.r_[False, rank[1:] == rank[:-1]], np.arange(n) - 1, -1)
    first = np.where(
        kind == 0,
        row(0, stage - 1, (kind == 0) & (stage > 0)),
        np.where(kind == 1, row(0, stage, kind == 1), row(1, stage, kind == 2)),
    )
    second = row(1, stage + 1, (kind == 1) & (stage < p - 1))
    tol = TIME_RTOL * timeline.makespan
    path = [int(np.flatnonzero(end >= timeline.makespan - tol)[0])]
    waits = []
    while True:
        i = path[-1]
        step = None
        for u in (previous[i], first[i], second[i]):
            if u < 0:
                continue
            wait = 0.0 if rank[u] == rank[i] else float(hops[min(stage[u], stage[i])])
            if abs(end[u] + wait - start[i]) <= tol:
                step = (int(u), wait)
                break
        if step is None:
            if start[i] > tol:
                raise ValueError(
                    f"{Action(KINDS[kind[i]], int(stage[i]), int(micro[i]))} starts at "
                    f"{start[i]:.9g} s but no predecessor ends then at p2p_latency="
                    f"{p2p_latency!r}: pass the latency the timeline was simulated with"
                )
            waits.append(0.0)
            break
        waits.append(step[1])
        path.append(step[0])
    path.reverse()
    waits.reverse()
    return events.iloc[path].assign(wait=waits)


def critical_time(timeline: Timeline, p2p_latency: float | Sequence[float] = 0.0) -> np.ndarray:
    """Compute time per stage on :func:`critical_path`, seconds (the rest of the path is waits) (pipe08)."""
    path = critical_path(timeline, p2p_latency)
    return read_only(
        np.bincount(
            path["stage"].to_numpy(dtype=np.int64),
            weights=(path["end"] - path["start"]).to_numpy(dtype=float),
            minlength=timeline.schedule.num_stages,
        ).astype(float)
    )


def bottleneck_stage(timeline: Timeline, p2p_latency: float | Sequence[float] = 0.0) -> int:
    """The stage with the most compute time on the critical path (:func:`critical_time`); ties to
    the lowest index (pipe08)."""
    return int(np.argmax(critical_time(timeline, p2p_latency)))


# --------------------------------------------------------------------------------------------
# partitions: step time, moving layers, the cost of a move and its break-even


def stage_forward_backward(
    spec: ModelSpec, boundaries: Sequence[int], link_bandwidth: float
) -> tuple[np.ndarray, np.ndarray]:
    """Per-stage (forward, backward) cost of a partition, seconds per microbatch (pipe08).

    Σ t_f and Σ t_b over the stage's layers, each plus half the stage's transfers
    2·(A_in + A_out)/β, so that forward + backward = :func:`~course_lib.pipeline.partition.stage_times`.
    """
    check_spec(spec)
    bounds = check_boundaries(boundaries, spec.num_layers)
    times = stage_times(spec, bounds, link_bandwidth)
    forward = stage_sums(spec.forward_times, bounds)
    backward = stage_sums(spec.backward_times, bounds)
    half = (times - forward - backward) / 2
    return read_only(forward + half), read_only(backward + half)


def partition_step_time(
    spec: ModelSpec,
    boundaries: Sequence[int],
    link_bandwidth: float,
    num_microbatches: int,
    schedule: str = "1F1B",
) -> float:
    """Simulated step (s) of the partition under ``schedule`` ("1F1B" or "GPipe"), zero latency (pipe08)."""
    forward, backward = stage_forward_backward(spec, boundaries, link_bandwidth)
    m = check_int("num_microbatches", num_microbatches)
    generator = {"1F1B": one_f_one_b, "GPipe": gpipe}[schedule_name(schedule)]
    return simulate(generator(len(forward), m), forward, backward).makespan


def move_layers(
    boundaries: Sequence[int], from_stage: int, to_stage: int, count: int = 1
) -> tuple[int, ...]:
    """Boundaries after moving ``count`` layers from ``from_stage`` to the adjacent ``to_stage`` (pipe08).

    The layers at the edge facing ``to_stage`` move: its last layers to the next stage, its first
    to the previous one. Raises ValueError if the stages are not adjacent or the move would leave
    ``from_stage`` without a layer.
    """
    if isinstance(boundaries, str | bytes) or not isinstance(boundaries, Sequence | np.ndarray):
        raise TypeError(f"boundaries must be a sequence of ints, got {boundaries!r}")
    raw = list(np.asarray(boundaries).ravel()) if isinstance(boundaries, np.ndarray) else boundaries
    values = [check_int(f"boundaries[{k}]", v, minimum=0) for k, v in enumerate(raw)]
    bounds = list(check_boundaries(values, values[-1] if values and values[-1] else 1))
    p = len(bounds) - 1
    src = check_int("from_stage", from_stage, minimum=0)
    dst = check_int("to_stage", to_stage, minimum=0)
    k = check_int("count", count)
    for name, s in (("from_stage", src), ("to_stage", dst)):
        if s >= p:
            raise ValueError(f"{name} must be in [0, {p - 1}] ({p} stages), got {s}")
    if abs(src - dst) != 1:
        raise ValueError(
            f"to_stage must be adjacent to from_stage = {src} (stage {src - 1} or {src + 1}), "
            f"got {dst}"
        )
    held = bounds[src + 1] - bounds[src]
    if k >= held:
        raise ValueError(
            f"moving count = {k} layer{'s' * (k != 1)} from stage {src}, which holds {held}, "
            f"would leave it empty: a stage keeps at least one layer"
        )
    if dst == src + 1:
        bounds[src + 1] -= k
    else:
        bounds[src] += k
    return tuple(bounds)


@dataclass(frozen=True)
class RepartitionCost:
    """What changing a partition costs (pipe08): bytes over each link (link k joins stage k and
    k + 1), the transfer time max_k bytes_k / β (links in parallel), the pause, and their sum (s)."""

    link_bytes: tuple[float, ...]
    transfer_time: float
    pause: float
    total: float
    moved: tuple[tuple[int, int, int], ...]  # (layer, old stage, new stage)


def repartition_cost(
    spec: ModelSpec,
    old_boundaries: Sequence[int],
    new_boundaries: Sequence[int],
    link_bandwidth: float,
    pause: float = 0.0,
    bytes_per_param: dict[str, float] | None = None,
) -> RepartitionCost:
    """Cost of going from ``old_boundaries`` to ``new_boundaries`` (same number of stages) (pipe08).

    Every layer whose stage changes sends its parameters × ``bytes_per_param`` (weights, gradients
    and optimizer state; default 2 + 2 + 12 bytes, mixed-precision Adam) over each link between
    its old and its new stage. The layers crossing link k are those between the old and the new
    boundary b_{k+1} (boundaries are monotone, so all cross it in one direction). Links work in
    parallel and a layer relayed over two links is streamed in chunks, so the transfer takes
    max_k bytes_k / ``link_bandwidth``; ``pause`` (s) is the flush and restart on top.
    """
    check_spec(spec)
    n = spec.num_layers
    old = np.asarray(check_boundaries(old_boundaries, n), dtype=np.int64)
    new = np.asarray(check_boundaries(new_boundaries, n), dtype=np.int64)
    if len(old) != len(new):
        raise ValueError(
            f"new_boundaries make {len(new) - 1} stages but old_boundaries make {len(old) - 1}: a "
            "repartition keeps the number of stages"
        )
    beta = check_link_bandwidth(link_bandwidth)
    wait = number(pause, "pause (s)")
    per_param = sum(per_param_bytes(bytes_per_param).values())
    prefix = np.concatenate([[0.0], np.cumsum(spec.num_params)])
    inner_old, inner_new = old[1:-1], new[1:-1]
    link_bytes = per_param * np.abs(prefix[inner_new] - prefix[inner_old])
    transfer = float(link_bytes.max() / beta) if len(link_bytes) else 0.0
    layer = np.arange(n)
    old_stage = np.searchsorted(old, layer, side="right") - 1
    new_stage = np.searchsorted(new, layer, side="right") - 1
    changed = np.flatnonzero(old_stage != new_stage)
    moved = tuple((int(i), int(old_stage[i]), int(new_stage[i])) for i in changed)
    return RepartitionCost(
        link_bytes=tuple(float(x) for x in link_bytes),
        transfer_time=transfer,
        pause=wait,
        total=transfer + wait,
        moved=moved,
    )


def break_even_steps(cost: float, step_before: float, step_after: float) -> float:
    """Steps after which a repartition has paid for itself: ⌈cost / (step_before − step_after)⌉ (pipe08).

    ``cost`` in seconds (:class:`RepartitionCost`.total), the steps in seconds (simulated before
    and after the change). A ratio within 1e-9 of an integer counts as that integer (float noise,
    e.g. 0.3 / 0.1). Returns math.inf when the change gains nothing (step_after >= step_before),
    0 when it costs nothing.
    """
    c = number(cost, "cost (s)")
    before = number(step_before, "step_before (s)")
    after = number(step_after, "step_after (s)")
    gain = before - after
    if gain <= 0:
        return math.inf
    ratio = c / gain
    nearest = round(ratio)
    if abs(ratio - nearest) <= 1e-9 * max(1.0, ratio):
        return int(nearest)
    return int(math.ceil(ratio))


# --------------------------------------------------------------------------------------------
# when a repartition is safe: no live stash


def live_stashes(
    timeline: Timeline, time: float, versions: WeightVersions | None = None
) -> pd.DataFrame:
    """The (stage, microbatch) stashes live at ``time`` (s) in ``timeline``, with their lifetime (pipe08).

    A stash lives from the start of F(s, j) to the end of its release (W if the schedule splits
    the backward, else B; Timeline.lifetime); it is live strictly inside that span: at its two
    ends, within 1e-9 × makespan, it is not (a change at 0 or at the makespan of a flushed step
    is at a flush). Columns stage, microbatch, born, freed; sorted by stage, then microbatch.
    With ``versions`` (:func:`~course_lib.pipeline.weight_versions` of the same schedule), a
    column ``version``: the weight version each live stash must finish its backward with — the
    versions a move would have to carry along (several per stage under PipeDream's stashing).
    """
    timeline = check_timeline(timeline)
    t = check_duration("time", time)
    if versions is not None:
        if not isinstance(versions, WeightVersions):
            raise TypeError(
                f"versions must be a WeightVersions (from weight_versions), got "
                f"{type(versions).__name__}"
            )
        shape = (timeline.schedule.num_stages, timeline.schedule.num_microbatches)
        if versions.forward.shape != shape:
            raise ValueError(
                f"versions are for {versions.forward.shape[0]} stages x "
                f"{versions.forward.shape[1]} microbatches but the timeline has {shape[0]} x "
                f"{shape[1]}"
            )
    births, deaths = timeline._stash
    tol = TIME_RTOL * timeline.makespan
    with np.errstate(invalid="ignore"):
        live = (births < t - tol) & (t + tol < deaths)
    s, j = np.nonzero(live)
    frame = pd.DataFrame({"stage": s, "microbatch": j, "born": births[s, j], "freed": deaths[s, j]})
    if versions is not None:
        frame["version"] = versions.forward[s, j]
    return frame


def is_flush(timeline: Timeline, time: float) -> bool:
    """True if no stash is live at ``time``: the only moment layers may move (pipe08)."""
    return live_stashes(timeline, time).empty


def live_stashes_at(schedule: Schedule, completed: Sequence[int]) -> pd.DataFrame:
    """Stashes live once rank r has completed its first ``completed[r]`` actions (pipe08).

    A stash (s, j) is live when F(s, j) is among the completed actions and its release (W if the
    schedule has W actions, else B) is not. Raises ValueError if ``completed`` is not a state a
    run can reach: a completed action whose dependency is not completed. Columns stage,
    microbatch, rank; sorted by stage, then microbatch.
    """
    if not isinstance(schedule, Schedule):
        raise TypeError(f"schedule must be a Schedule, got {type(schedule).__name__}")
    offsets = schedule._offsets
    lengths = np.diff(offsets)
    if isinstance(completed, str | bytes) or not isinstance(completed, Sequence | np.ndarray):
        raise TypeError(f"completed must be a sequence of per-rank counts, got {completed!r}")
    if len(completed) != schedule.num_ranks:
        raise ValueError(
            f"completed has {len(completed)} counts but the schedule has {schedule.num_ranks} ranks"
        )
    counts = []
    for r, c in enumerate(completed):
        c = check_int(f"completed[{r}] (rank {r})", c, minimum=0)
        if c > lengths[r]:
            raise ValueError(f"completed[{r}] = {c} exceeds rank {r}'s {int(lengths[r])} actions")
        counts.append(c)
    kind, stage, micro = (np.asarray(c, dtype=np.int64) for c in schedule._columns)
    p, num_mb = schedule.num_stages, schedule.num_microbatches
    ranks = np.repeat(np.arange(schedule.num_ranks), lengths)
    done_flat = (np.arange(len(kind)) - offsets[ranks]) < np.asarray(counts)[ranks]
    done = np.zeros((len(KINDS), p, num_mb), dtype=bool)
    done[kind[done_flat], stage[done_flat], micro[done_flat]] = True
    # Reachable: each completed action's dependencies completed (first violation reported).
    f_done, b_done, w_done = done
    checks = (
        (f_done[1:] & ~f_done[:-1], ("F", 1), ("F", 0)),  # F(s, j) needs F(s - 1, j)
        (b_done & ~f_done, ("B", 0), ("F", 0)),  # B(s, j) needs F(s, j)
        (b_done[:-1] & ~b_done[1:], ("B", 0), ("B", 1)),  # B(s, j) needs B(s + 1, j)
        (w_done & ~b_done, ("W", 0), ("B", 0)),  # W(s, j) needs B(s, j)
    )
    for bad, (kind_done, shift_done), (kind_needed, shift_needed) in checks:
        if bad.any():
            s, j = (int(x[0]) for x in np.nonzero(bad))
            raise ValueError(
                f"completed = {counts} is not a reachable state: "
                f"{Action(kind_done, s + shift_done, j)} is completed but "
                f"{Action(kind_needed, s + shift_needed, j)}, which it needs, is not"
            )
    release = 2 if schedule.has_weight_actions else 1
    s, j = np.nonzero(done[0] & ~done[release])
    return pd.DataFrame({"stage": s, "microbatch": j, "rank": s % schedule.num_ranks})
