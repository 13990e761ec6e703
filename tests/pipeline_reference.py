"""Reference implementations: course_lib.pipeline's generators and simulator as they were before
the columnar Schedule and the fast simulator (commit cb08477), kept verbatim in behaviour so the
tests can require identical schedules, events tables and error messages from the fast code.

Only the tests import this module. The generators build Action tuples one by one; the simulator
is the worklist over ranks with dict lookups; both read ``Schedule.actions`` (materialized
Action tuples) and nothing else of the new internals. The deadlock report's wording is written
out here again on purpose: the tests compare the fast simulator's reports with this one word for
word, so it must not share the code that builds them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from course_lib.pipeline import Action, Schedule, ScheduleDeadlock
from course_lib.pipeline._validate import (
    check_costs,
    check_hop_latencies,
    check_pipeline_shape,
)
from course_lib.pipeline.schedule import KINDS, check_interleaved_shape
from course_lib.pipeline.simulate import _dependencies  # unchanged by the rewrite

EVENT_COLUMNS: tuple[str, ...] = ("rank", "kind", "stage", "microbatch", "start", "end")


def _frozen(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


def gpipe(num_stages: int, num_microbatches: int) -> Schedule:
    """The action-by-action GPipe: F0..F(m-1), then B0..B(m-1) on every stage."""
    p, m = check_pipeline_shape(num_stages, num_microbatches)
    actions = tuple(
        tuple(Action("F", s, j) for j in range(m)) + tuple(Action("B", s, j) for j in range(m))
        for s in range(p)
    )
    return Schedule(p, m, p, actions, name="GPipe")


def _one_f_one_b_stage(num_stages: int, num_microbatches: int, stage: int) -> tuple[Action, ...]:
    """Stage s of 1F1B: w = min(m, p-s-1) warm-up forwards, alternate F(w+i), B(i), cool down."""
    p, m, s = num_stages, num_microbatches, stage
    warmup = min(m, p - s - 1)
    order = [Action("F", s, j) for j in range(warmup)]
    for i in range(m - warmup):
        order += [Action("F", s, warmup + i), Action("B", s, i)]
    order += [Action("B", s, j) for j in range(m - warmup, m)]
    return tuple(order)


def one_f_one_b(num_stages: int, num_microbatches: int) -> Schedule:
    """The action-by-action 1F1B: min(m, p-s-1) warm-up F, then F/B, then B."""
    p, m = check_pipeline_shape(num_stages, num_microbatches)
    actions = tuple(_one_f_one_b_stage(p, m, s) for s in range(p))
    return Schedule(p, m, p, actions, name="1F1B")


def _interleaved_rank(p: int, m: int, v: int, rank: int) -> tuple[Action, ...]:
    """Rank ``rank`` of interleaved 1F1B: warm-up forwards, F/B pairs, cooldown backwards.

    g = m // max(1, m // p) microbatches per round (g = p when p divides m). The k-th forward runs
    chunk (k // g) % v on microbatch (k // (g v)) g + k % g; the k-th backward the same microbatch
    of chunk v - 1 - (k // g) % v. Warm-up: min(m v, 2 (p - rank - 1) + (v - 1) g) forwards.
    """
    g = m // max(1, m // p)
    total = m * v
    warmup = min(total, 2 * (p - rank - 1) + (v - 1) * g)

    def forward(k: int) -> Action:
        return Action("F", ((k // g) % v) * p + rank, (k // (g * v)) * g + k % g)

    def backward(k: int) -> Action:
        return Action("B", (v - 1 - (k // g) % v) * p + rank, (k // (g * v)) * g + k % g)

    order = [forward(k) for k in range(warmup)]
    for k in range(total - warmup):
        order += [forward(warmup + k), backward(k)]
    order += [backward(k) for k in range(total - warmup, total)]
    return tuple(order)


def interleaved_1f1b(num_ranks: int, num_microbatches: int, chunks_per_rank: int) -> Schedule:
    """The list-of-Actions interleaved 1F1B (checked against PyTorch 2.13, see
    scripts/check_interleaved_against_torch.py)."""
    p, m, v = check_interleaved_shape(num_ranks, num_microbatches, chunks_per_rank)
    if v == 1:
        return one_f_one_b(p, m)
    actions = tuple(_interleaved_rank(p, m, v, rank) for rank in range(p))
    return Schedule(v * p, m, p, actions, name="interleaved 1F1B")


def _zero_bubble_h1_stage(p: int, m: int, s: int) -> tuple[Action, ...]:
    """Stage s of ZB-H1: the 1F1B order with B the input gradient, W(j) right after B(j + s)."""
    warmup = min(m, p - s - 1)
    order = [Action("F", s, j) for j in range(warmup)]

    def backward(k: int) -> list[Action]:
        done = [Action("B", s, k)]
        if k >= s:  # W waits s backwards: the delay that fills the drain of later stages
            done.append(Action("W", s, k - s))
        return done

    for k in range(m - warmup):
        order += [Action("F", s, warmup + k), *backward(k)]
    for k in range(m - warmup, m):
        order += backward(k)
    order += [Action("W", s, j) for j in range(max(0, m - s), m)]
    return tuple(order)


def zero_bubble_h1(num_stages: int, num_microbatches: int) -> Schedule:
    """The list-of-Actions ZB-H1 (= PyTorch 2.13's ScheduleInterleavedZeroBubble at v = 1)."""
    p, m = check_pipeline_shape(num_stages, num_microbatches)
    actions = tuple(_zero_bubble_h1_stage(p, m, s) for s in range(p))
    return Schedule(p, m, p, actions, name="ZB-H1")


def simulate_events(
    schedule: Schedule,
    forward_cost: float | list[float] | np.ndarray,
    backward_cost: float | list[float] | np.ndarray,
    weight_cost: float | list[float] | np.ndarray = 0.0,
    p2p_latency: float | list[float] | np.ndarray = 0.0,
) -> pd.DataFrame:
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
    return events


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


def _compile(schedule: Schedule) -> _Compiled:
    """The simulator's encoding of ``schedule``; raises ValueError on a duplicated action."""
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
