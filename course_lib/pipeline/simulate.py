"""Event-driven simulation of a pipeline schedule: per-action costs -> a timeline (pipe02-pipe05).

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

import math
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

        A stash freed at t and another created at t are netted at t (no spurious peak or dip).
        "At t" allows for float rounding: sorted edges (F starts, releases) closer than
        1e-9 × makespan to the previous edge count as simultaneous and are netted at the earliest
        of them (e.g. a B ending at 0.015000000000000001 s and the next F starting at
        0.015000000000000003 s). The tolerance is relative, so it works in any time unit; a
        makespan of 0 merges only exact ties.
        """
        stage = check_int("stage", stage, minimum=0)
        if stage >= self.schedule.num_stages:
            raise ValueError(f"stage must be in [0, {self.schedule.num_stages - 1}], got {stage}")
        births, deaths = self._stash
        alive = ~np.isnan(births[stage])
        n = int(alive.sum())
        edges = np.concatenate([births[stage][alive], deaths[stage][alive]])
        steps = np.concatenate([np.ones(n, dtype=np.int64), -np.ones(n, dtype=np.int64)])
        order = np.argsort(edges, kind="stable")
        edges, steps = edges[order], steps[order]
        new_time = np.diff(edges, prepend=-np.inf) > 1e-9 * self.makespan
        group = np.cumsum(new_time) - 1
        net = np.bincount(group, weights=steps, minlength=int(new_time.sum()))
        return edges[new_time], np.cumsum(net).astype(np.int64)

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
    (every hop) or num_stages - 1 numbers (hop k links stage k and k + 1, both directions; an
    interleaved schedule's message from stage k to k + 1 crosses ranks at every boundary, so each
    boundary charges its hop). Raises ScheduleDeadlock if no rank can make progress.

    Implementation: the schedule's columns are compiled once (cached on the Schedule) into flat
    per-action lists — each action's two dependencies as flat indices and the hop each crosses —
    and a worklist over ranks runs each rank as far as its dependencies allow, on plain Python
    lists (about a microsecond per action; 262,144 actions in well under a second).
    """
    if not isinstance(schedule, Schedule):
        raise TypeError(f"schedule must be a Schedule, got {type(schedule).__name__}")
    num_stages = schedule.num_stages
    costs = np.stack(
        [
            check_costs("forward_cost", forward_cost, num_stages),
            check_costs("backward_cost", backward_cost, num_stages),
            check_costs("weight_cost", weight_cost, num_stages),
        ]
    )
    hops = check_hop_latencies("p2p_latency", p2p_latency, num_stages)

    compiled = _compile(schedule)
    kind_codes, stages, microbatches = schedule._columns
    durations = costs[kind_codes, stages]  # seconds, one per action, rank order
    # Latency added to each dependency's end: its hop's latency across ranks, 0 on the same rank.
    padded = np.append(hops, 0.0)  # index -1 (same rank / no dependency) reads the 0.0
    started, done = _run(
        compiled,
        durations.tolist(),
        padded[compiled.hop_first].tolist(),
        padded[compiled.hop_second].tolist(),
        schedule.num_ranks,
    )
    if not done:
        raise ScheduleDeadlock(_deadlock_message(schedule, compiled, started))
    start = np.array(started, dtype=float)
    events = pd.DataFrame(
        {
            "rank": compiled.ranks.copy(),  # copies: the encoding is shared between runs
            "kind": _KIND_LETTERS[kind_codes],
            "stage": stages.copy(),
            "microbatch": microbatches.copy(),
            "start": start,
            "end": start + durations,
        },
        columns=list(EVENT_COLUMNS),
    )
    return Timeline(schedule, events)


_KIND_LETTERS = _frozen(np.array(KINDS, dtype=object))


def _run(
    compiled: _Compiled,
    durations: list[float],
    latency_first: list[float],
    latency_second: list[float],
    num_ranks: int,
) -> tuple[list, bool]:
    """The worklist: run each rank as far as its dependencies allow; wake it when a missing one
    ends. Returns (start per action, or None where it never ran; True if every action ran)."""
    first, second = compiled.dep_first, compiled.dep_second
    bounds = compiled.offsets
    n = len(durations)
    # end[i]: the end of action i, None until it runs; index n is "no dependency" (-inf, never
    # later than anything), index n + 1 a dependency that is in no rank's list (never runs).
    end: list = [None] * n + [-math.inf, None]
    start: list = [None] * n
    watched = bytearray(n + 2)  # 1 where a blocked rank waits for that action's end
    waiting: dict[int, list[int]] = {}
    pointer = list(bounds[:-1])
    free = [0.0] * num_ranks
    ready = list(range(num_ranks))
    while ready:
        rank = ready.pop()
        i, stop, t = pointer[rank], bounds[rank + 1], free[rank]
        while i < stop:
            a = first[i]
            e = end[a]
            if e is None:
                break
            b = second[i]
            f = end[b]
            if f is None:
                a = b
                break
            s = t
            e += latency_first[i]
            if e > s:
                s = e
            f += latency_second[i]
            if f > s:
                s = f
            start[i] = s
            t = s + durations[i]
            end[i] = t
            if watched[i]:
                ready.extend(waiting.pop(i))
                watched[i] = 0
            i += 1
        else:
            pointer[rank], free[rank] = i, t
            continue
        pointer[rank], free[rank] = i, t
        waiting.setdefault(a, []).append(rank)
        watched[a] = 1
    return start, all(p == bounds[r + 1] for r, p in enumerate(pointer))


@dataclass(frozen=True, eq=False)
class _Compiled:
    """A schedule encoded for the simulator: what depends only on the schedule, not on costs.

    Flat per-action lists in rank order (the order of the schedule's columns and of the events
    table): ``dep_first`` / ``dep_second``, the flat index of each dependency (n = none, n + 1 =
    in no rank's list), and ``hop_first`` / ``hop_second``, the index of the stage boundary its
    message crosses or -1 on the same rank (and for no dependency). ``position`` maps an action
    id (kind · num_stages + stage) · num_microbatches + microbatch to its flat index, -1 if absent.
    """

    dep_first: list[int]
    dep_second: list[int]
    hop_first: np.ndarray
    hop_second: np.ndarray
    offsets: list[int]
    ranks: np.ndarray
    position: np.ndarray


def _compile(schedule: Schedule) -> _Compiled:
    """The simulator's encoding of ``schedule``, computed once per Schedule object (they are
    immutable) and kept on it; raises ValueError on a duplicated action."""
    cached = schedule.__dict__.get("_compiled")
    if cached is not None:
        return cached
    num_stages, num_mb, num_ranks = (
        schedule.num_stages,
        schedule.num_microbatches,
        schedule.num_ranks,
    )
    kind, stage, microbatch = (c.astype(np.int64) for c in schedule._columns)
    offsets = schedule._offsets
    n = len(kind)
    ids = (kind * num_stages + stage) * num_mb + microbatch
    size = len(KINDS) * num_stages * num_mb
    if n and np.bincount(ids, minlength=size).max() > 1:
        _raise_duplicate(schedule, ids)
    position = np.full(size, -1, dtype=np.int64)
    position[ids] = np.arange(n, dtype=np.int64)
    ranks = np.repeat(np.arange(num_ranks, dtype=np.int64), np.diff(offsets))

    # Dependencies: F(s, j) <- F(s-1, j); B(s, j) <- F(s, j), B(s+1, j); W(s, j) <- B(s, j).
    forward, backward, weight = (kind == k for k in range(len(KINDS)))
    first_kind = np.where(weight, 1, 0)
    first_stage = np.where(forward, stage - 1, stage)
    has_first = ~(forward & (stage == 0))
    has_second = backward & (stage < num_stages - 1)

    def encode(has: np.ndarray, dep_kind, dep_stage) -> tuple[np.ndarray, np.ndarray]:
        dep_stage_safe = np.where(has, dep_stage, 0)
        dep_id = (dep_kind * num_stages + dep_stage_safe) * num_mb + microbatch
        flat = np.where(has, position[dep_id], n)
        flat = np.where(has & (flat < 0), n + 1, flat)  # in no rank's list: never runs
        crosses = has & (dep_stage_safe % num_ranks != ranks)
        hop = np.where(crosses, np.minimum(stage, dep_stage_safe), -1)
        return flat, hop

    dep_first, hop_first = encode(has_first, first_kind, first_stage)
    dep_second, hop_second = encode(has_second, 1, stage + 1)
    compiled = _Compiled(
        dep_first=dep_first.tolist(),
        dep_second=dep_second.tolist(),
        hop_first=_frozen(hop_first),
        hop_second=_frozen(hop_second),
        offsets=offsets.tolist(),
        ranks=_frozen(ranks),
        position=_frozen(position),
    )
    object.__setattr__(schedule, "_compiled", compiled)
    return compiled


def _where(schedule: Schedule, flat: int) -> tuple[int, int]:
    """(rank, position) of the action at flat index ``flat``."""
    rank = int(np.searchsorted(schedule._offsets, flat, side="right")) - 1
    return rank, flat - int(schedule._offsets[rank])


def _label(schedule: Schedule, flat: int) -> Action:
    kind, stage, microbatch = (int(c[flat]) for c in schedule._columns)
    return Action(KINDS[kind], stage, microbatch)


def _raise_duplicate(schedule: Schedule, ids: np.ndarray) -> None:
    """The first action (rank order) listed before, naming both places."""
    order = np.argsort(ids, kind="stable")
    repeat = order[1:][ids[order[1:]] == ids[order[:-1]]]  # later occurrences
    second = int(repeat.min())
    first = int(np.flatnonzero(ids == ids[second])[0])
    (first_rank, first_position), (rank, position) = (
        _where(schedule, first),
        _where(schedule, second),
    )
    raise ValueError(
        f"{_label(schedule, second)} appears twice (rank {first_rank} position {first_position}, "
        f"rank {rank} position {position}); each action may run at most once"
    )


def _deadlock_message(schedule: Schedule, compiled: _Compiled, started: list) -> str:
    """Name each blocked rank, the action it waits at and the first dependency that never ran."""
    num_mb = schedule.num_microbatches
    offsets = compiled.offsets
    # A rank's pointer: its first action that never started.
    pointer = []
    for rank in range(schedule.num_ranks):
        lo, hi = offsets[rank], offsets[rank + 1]
        i = lo
        while i < hi and started[i] is not None:
            i += 1
        pointer.append(i - lo)
    lines = ["schedule deadlocks: no rank can make progress"]
    for rank in range(schedule.num_ranks):
        position = pointer[rank]
        if offsets[rank] + position >= offsets[rank + 1]:
            continue
        action = _label(schedule, offsets[rank] + position)
        deps = _dependencies(action.kind, action.stage, action.microbatch, schedule.num_stages)
        for dep_kind, dep_stage, dep_mb in deps:
            dep_id = (KINDS.index(dep_kind) * schedule.num_stages + dep_stage) * num_mb + dep_mb
            flat = int(compiled.position[dep_id])
            if flat >= 0 and started[flat] is not None:
                continue
            if flat >= 0:
                dep_rank, dep_position = _where(schedule, flat)
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
