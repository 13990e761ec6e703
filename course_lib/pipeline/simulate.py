"""Event-driven simulation of a pipeline schedule: per-action costs -> a timeline (pipe02, pipe03).

Semantics. Each rank executes its actions strictly in list order, one at a time. An action starts
at the latest of: the end of the rank's previous action, and the end of each of its dependencies
plus the latency of the hop between their stages if that dependency ran on another rank (plus 0
on the same rank). ``p2p_latency`` is one latency for every hop, or one per hop: hop k links stage
k and stage k + 1, in both directions (activations down, gradients up).
Dependencies: F(s, j) needs F(s-1, j) for s > 0; B(s, j) needs F(s, j) and, for s below the last
stage, B(s+1, j); W(s, j) needs B(s, j). Durations are forward_cost[s], backward_cost[s] and
weight_cost[s]. The start times are therefore the longest paths into each action of the action
DAG (dependencies plus each rank's program order), which is what the tests check.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from ._validate import check_costs, check_hop_latencies, check_int
from .schedule import KINDS, Action, Schedule

EVENT_COLUMNS: tuple[str, ...] = ("rank", "kind", "stage", "microbatch", "start", "end")


class ScheduleDeadlock(ValueError):
    """No rank can make progress while actions remain: every blocked rank waits on work that never runs."""


def _frozen(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


@dataclass(frozen=True, eq=False)
class Timeline:
    """The simulated run of a schedule: one event row per action (treat ``events`` as read-only)."""

    schedule: Schedule
    events: pd.DataFrame

    @cached_property
    def makespan(self) -> float:
        """End of the last action, in seconds (0.0 for a schedule without actions) (pipe02)."""
        return float(self.events["end"].max()) if len(self.events) else 0.0

    @cached_property
    def busy(self) -> np.ndarray:
        """Total busy time per rank: the sum of its action durations, in seconds (pipe02)."""
        durations = (self.events["end"] - self.events["start"]).to_numpy(dtype=float)
        busy = np.bincount(
            self.events["rank"].to_numpy(dtype=np.int64),
            weights=durations,
            minlength=self.schedule.num_ranks,
        )
        return _frozen(busy.astype(float))

    @cached_property
    def idle_fraction(self) -> float:
        """Elapsed idle fraction 1 - sum(busy) / (num_ranks * makespan) (pipe02)."""
        if self.makespan == 0.0:
            return 0.0
        return float(1.0 - self.busy.sum() / (self.schedule.num_ranks * self.makespan))

    @cached_property
    def ideal_compute(self) -> float:
        """Ideal compute time: the busiest rank's busy time, max over ranks of busy (pipe02)."""
        return float(self.busy.max())

    @cached_property
    def overhead(self) -> float:
        """Overhead relative to ideal compute: makespan / ideal_compute - 1 (pipe02)."""
        if self.ideal_compute == 0.0:
            return 0.0 if self.makespan == 0.0 else float("inf")
        return float(self.makespan / self.ideal_compute - 1.0)

    @cached_property
    def _stash(self) -> tuple[np.ndarray, np.ndarray]:
        """(start, end) arrays [stage, microbatch] of every activation stash; NaN where no F ran."""
        shape = (self.schedule.num_stages, self.schedule.num_microbatches)
        births = np.full(shape, np.nan)
        deaths = np.full(shape, np.nan)
        events = self.events
        kind = events["kind"].to_numpy()
        stage = events["stage"].to_numpy(dtype=np.int64)
        microbatch = events["microbatch"].to_numpy(dtype=np.int64)
        forward = kind == "F"
        births[stage[forward], microbatch[forward]] = events["start"].to_numpy()[forward]
        release = kind == ("W" if self.schedule.has_weight_actions else "B")
        deaths[stage[release], microbatch[release]] = events["end"].to_numpy()[release]
        # A stash whose releasing action never runs is never freed: it lives to the end.
        deaths = np.where(
            np.isnan(births), np.nan, np.where(np.isnan(deaths), self.makespan, deaths)
        )
        return _frozen(births), _frozen(deaths)

    def lifetime(self, stage: int, microbatch: int) -> tuple[float, float]:
        """Activation stash of (stage, microbatch): start of its F to end of its last backward (pipe03).

        The last backward action is W if the schedule has W actions, else B. A stash whose
        releasing action is not in the schedule is never freed and lives until the makespan.
        """
        stage = check_int("stage", stage, minimum=0)
        microbatch = check_int("microbatch", microbatch, minimum=0)
        if stage >= self.schedule.num_stages:
            raise ValueError(f"stage must be in [0, {self.schedule.num_stages - 1}], got {stage}")
        if microbatch >= self.schedule.num_microbatches:
            raise ValueError(
                f"microbatch must be in [0, {self.schedule.num_microbatches - 1}], got {microbatch}"
            )
        births, deaths = self._stash
        if np.isnan(births[stage, microbatch]):
            raise ValueError(f"{Action('F', stage, microbatch)} is not in the schedule: no stash")
        return float(births[stage, microbatch]), float(deaths[stage, microbatch])

    def in_flight(self, stage: int) -> tuple[np.ndarray, np.ndarray]:
        """Live activation stashes on ``stage`` as a step function: counts[k] on [times[k], times[k+1]) (pipe03).

        A stash freed at t and another created at t are netted at t (no spurious peak).
        """
        stage = check_int("stage", stage, minimum=0)
        if stage >= self.schedule.num_stages:
            raise ValueError(f"stage must be in [0, {self.schedule.num_stages - 1}], got {stage}")
        births, deaths = self._stash
        alive = ~np.isnan(births[stage])
        n = int(alive.sum())
        edges = np.concatenate([births[stage][alive], deaths[stage][alive]])
        steps = np.concatenate([np.ones(n, dtype=np.int64), -np.ones(n, dtype=np.int64)])
        times, inverse = np.unique(edges, return_inverse=True)
        net = np.bincount(inverse.ravel(), weights=steps, minlength=len(times))
        return times, np.cumsum(net).astype(np.int64)

    @cached_property
    def peak_in_flight(self) -> np.ndarray:
        """Peak number of live activation stashes per stage (GPipe: m; 1F1B: min(m, p - s)) (pipe03)."""
        peaks = [self.in_flight(s)[1] for s in range(self.schedule.num_stages)]
        return _frozen(np.array([int(c.max()) if len(c) else 0 for c in peaks], dtype=np.int64))


def _dependencies(
    kind: str, stage: int, microbatch: int, num_stages: int
) -> list[tuple[str, int, int]]:
    """The (kind, stage, microbatch) triples that action (kind, stage, microbatch) waits for."""
    if kind == "F":
        return [("F", stage - 1, microbatch)] if stage > 0 else []
    if kind == "B":
        deps = [("F", stage, microbatch)]
        if stage < num_stages - 1:
            deps.append(("B", stage + 1, microbatch))
        return deps
    return [("B", stage, microbatch)]


def simulate(
    schedule: Schedule,
    forward_cost: float | list[float] | np.ndarray,
    backward_cost: float | list[float] | np.ndarray,
    weight_cost: float | list[float] | np.ndarray = 0.0,
    p2p_latency: float | list[float] | np.ndarray = 0.0,
) -> Timeline:
    """Run ``schedule`` with per-stage costs (seconds) and a per-hop latency -> Timeline (pipe02).

    Each action starts at max(its rank's free time, each dependency's end + the latency of the hop
    between their stages if that dependency ran on another rank). ``p2p_latency`` is a number
    (every hop) or num_stages - 1 numbers (hop k links stage k and k + 1, both directions).
    Raises ScheduleDeadlock if no rank can make progress.
    """
    if not isinstance(schedule, Schedule):
        raise TypeError(f"schedule must be a Schedule, got {type(schedule).__name__}")
    num_stages, num_mb, num_ranks = (
        schedule.num_stages,
        schedule.num_microbatches,
        schedule.num_ranks,
    )
    costs = np.stack(
        [
            check_costs("forward_cost", forward_cost, num_stages),
            check_costs("backward_cost", backward_cost, num_stages),
            check_costs("weight_cost", weight_cost, num_stages),
        ]
    )
    hops = check_hop_latencies("p2p_latency", p2p_latency, num_stages).tolist()

    compiled = _compile(schedule)
    durations = costs[compiled.kind_codes, compiled.stages]  # seconds, one per action, rank order
    programs = [
        list(zip(ids, durations[lo:hi].tolist(), deps, strict=True))
        for ids, deps, lo, hi in zip(
            compiled.ids, compiled.deps, compiled.offsets[:-1], compiled.offsets[1:], strict=True
        )
    ]

    # Worklist: run each rank as far as its dependencies allow; wake it when a missing one ends.
    end: dict[int, float] = {}
    waiting: dict[int, list[int]] = {}
    pointer = [0] * num_ranks
    free = [0.0] * num_ranks
    starts: list[list[float]] = [[] for _ in range(num_ranks)]
    ready = list(range(num_ranks))
    while ready:
        rank = ready.pop()
        program, rank_starts = programs[rank], starts[rank]
        i, t = pointer[rank], free[rank]
        while i < len(program):
            action_id, duration, deps = program[i]
            start = t
            blocked = False
            for dep_id, hop in deps:
                dep_end = end.get(dep_id)
                if dep_end is None:
                    waiting.setdefault(dep_id, []).append(rank)
                    blocked = True
                    break
                if hop >= 0:  # the dependency ran on another rank: its message crosses hop `hop`
                    dep_end += hops[hop]
                if dep_end > start:
                    start = dep_end
            if blocked:
                break
            rank_starts.append(start)
            t = start + duration
            end[action_id] = t
            i += 1
            woken = waiting.pop(action_id, None)
            if woken:
                ready.extend(woken)
        pointer[rank], free[rank] = i, t

    if any(pointer[r] < len(programs[r]) for r in range(num_ranks)):
        raise ScheduleDeadlock(_deadlock_message(schedule, pointer, compiled.where, end, num_mb))
    start = np.array([t for rank_starts in starts for t in rank_starts], dtype=float)
    events = pd.DataFrame(
        {
            "rank": compiled.ranks.copy(),  # copies: the encoding is shared between runs
            "kind": compiled.kinds.copy(),
            "stage": compiled.stages.copy(),
            "microbatch": compiled.microbatches.copy(),
            "start": start,
            "end": start + durations,
        },
        columns=list(EVENT_COLUMNS),
    )
    return Timeline(schedule, events)


@dataclass(frozen=True, eq=False)
class _Compiled:
    """A schedule encoded for the simulator: what depends only on the schedule, not on costs.

    Action ids are (kind * num_stages + stage) * num_microbatches + microbatch. Per rank, in
    program order: ``ids`` and ``deps``, each dependency as (id, hop) with hop the index of the
    stage boundary its message crosses, or -1 if it ran on the same rank. ``offsets`` delimit the
    ranks in the flat per-action arrays (rank order, the order of the events table).
    """

    ids: tuple[tuple[int, ...], ...]
    deps: tuple[tuple[tuple[tuple[int, int], ...], ...], ...]
    where: dict[int, tuple[int, int]]
    offsets: tuple[int, ...]
    ranks: np.ndarray
    kinds: np.ndarray
    kind_codes: np.ndarray
    stages: np.ndarray
    microbatches: np.ndarray


_COMPILED: dict[int, tuple[weakref.ref, _Compiled]] = {}


def _compile(schedule: Schedule) -> _Compiled:
    """The simulator's encoding of ``schedule``, computed once per Schedule object (they are
    immutable) and forgotten when the schedule is; raises ValueError on a duplicated action."""
    cached = _COMPILED.get(id(schedule))
    if cached is not None and cached[0]() is schedule:
        return cached[1]
    num_stages, num_mb, num_ranks = (
        schedule.num_stages,
        schedule.num_microbatches,
        schedule.num_ranks,
    )
    kind_index = {kind: k for k, kind in enumerate(KINDS)}
    where: dict[int, tuple[int, int]] = {}
    ids, deps = [], []
    for rank, rank_actions in enumerate(schedule.actions):
        rank_ids, rank_deps = [], []
        for position, action in enumerate(rank_actions):
            k, s, j = kind_index[action.kind], action.stage, action.microbatch
            action_id = (k * num_stages + s) * num_mb + j
            if action_id in where:
                first_rank, first_position = where[action_id]
                raise ValueError(
                    f"{action} appears twice (rank {first_rank} position {first_position}, "
                    f"rank {rank} position {position}); each action may run at most once"
                )
            where[action_id] = (rank, position)
            rank_ids.append(action_id)
            rank_deps.append(
                tuple(
                    (
                        (kind_index[dk] * num_stages + ds) * num_mb + dj,
                        min(s, ds) if ds % num_ranks != rank else -1,
                    )
                    for dk, ds, dj in _dependencies(action.kind, s, j, num_stages)
                )
            )
        ids.append(tuple(rank_ids))
        deps.append(tuple(rank_deps))
    flat = [action for rank_actions in schedule.actions for action in rank_actions]
    lengths = [len(rank_actions) for rank_actions in schedule.actions]
    kinds = np.array([a.kind for a in flat], dtype=object)
    compiled = _Compiled(
        ids=tuple(ids),
        deps=tuple(deps),
        where=where,
        offsets=tuple(np.concatenate([[0], np.cumsum(lengths)]).astype(int).tolist()),
        ranks=_frozen(np.repeat(np.arange(num_ranks, dtype=np.int64), lengths)),
        kinds=_frozen(kinds),
        kind_codes=_frozen(np.array([kind_index[k] for k in kinds], dtype=np.int64)),
        stages=_frozen(np.array([a.stage for a in flat], dtype=np.int64)),
        microbatches=_frozen(np.array([a.microbatch for a in flat], dtype=np.int64)),
    )
    key = id(schedule)
    _COMPILED[key] = (weakref.ref(schedule, lambda _ref: _COMPILED.pop(key, None)), compiled)
    return compiled


def _deadlock_message(
    schedule: Schedule,
    pointer: list[int],
    where: dict[int, tuple[int, int]],
    end: dict[int, float],
    num_mb: int,
) -> str:
    """Name each blocked rank, the action it waits at and the first dependency that never ran."""
    lines = ["schedule deadlocks: no rank can make progress"]
    for rank, rank_actions in enumerate(schedule.actions):
        position = pointer[rank]
        if position >= len(rank_actions):
            continue
        action = rank_actions[position]
        deps = _dependencies(action.kind, action.stage, action.microbatch, schedule.num_stages)
        for dep_kind, dep_stage, dep_mb in deps:
            dep_id = (KINDS.index(dep_kind) * schedule.num_stages + dep_stage) * num_mb + dep_mb
            if dep_id in end:
                continue
            if dep_id in where:
                dep_rank, dep_position = where[dep_id]
                detail = (
                    f"which is at rank {dep_rank} position {dep_position}, "
                    f"behind rank {dep_rank}'s blocked position {pointer[dep_rank]}"
                )
            else:
                detail = "which is in no rank's action list"
            lines.append(
                f"  rank {rank} blocked at position {position} on {action}: "
                f"needs {Action(dep_kind, dep_stage, dep_mb)}, {detail}"
            )
            break
    return "\n".join(lines)
