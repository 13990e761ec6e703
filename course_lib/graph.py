"""The step dependency graph: critical path, slack and what-if durations (cost01).

A training step is modelled as an *activity-on-node* DAG: every op (a CPU op, a copy, a kernel, a
collective, a data-loading task) is a node with a ``duration`` in seconds and a ``lane`` (the
thread or stream it runs on: "CPU", "compute stream", "comm stream", "data loader", ...). An edge
u -> v means v cannot start before u ends: a data dependency, the order of two ops on the same
stream (see :func:`stream_order_edges`) or a synchronisation. With every op starting as soon as
its predecessors end, the step ends when its longest path ends::

    step_time = max over source->sink paths P of  sum_{v in P} duration(v)

Definitions used throughout, those of the critical path method (CPM; Kelley & Walker, "Critical-path
planning and scheduling", 1959); all times in seconds from the start of the step:

* earliest start ``start(v) = max_{u -> v} end(u)`` (0 for an op without predecessors),
  ``end(v) = start(v) + duration(v)``;
* latest start ``latest_start(v) = min_{v -> w} latest_start(w) - duration(v)`` (with
  ``step_time - duration(v)`` for an op without successors): the latest v may start without
  delaying the step;
* slack (total float) ``slack(v) = latest_start(v) - start(v)
  = step_time - (longest path through v)``; critical ops have zero slack (slack below
  ``SLACK_RTOL * step_time`` is float noise and reported as exactly 0);
* for one op of duration d: ``T(d) = max(A, B + d)`` with A the longest path avoiding the op and
  B the longest path through it without its own duration. Step time is piecewise linear in d with
  one kink at ``d* = A - B``: shortening a critical op helps one-for-one only until another path
  becomes critical.

Relation to Holistic Trace Analysis (HTA, Meta's trace analysis library,
hta/analyzers/critical_path_analysis.py): its critical-path analysis builds the same kind of graph
from one rank's PyTorch profiler trace, in *activity-on-edge* form. HTA's nodes are the start and
end events of CPU ops, CUDA runtime calls (launches) and GPU kernels; its weighted edges are op and
kernel durations (start -> end of one event), kernel launch delays (launch -> kernel start) and
kernel-kernel delays (successive kernels on one stream), and its zero-weight edges are nesting
dependencies between CPU ops and synchronisation dependencies (e.g. cudaStreamSynchronize waiting
for a kernel). Merging each op's start and end node into one node carrying the duration gives the
activity-on-node graph used here; a dependency edge with non-zero weight (a launch or
kernel-kernel delay) becomes a small op of its own with that duration. Both forms have the same
longest path. Later lessons build this graph from a trace (course_lib.trace).

Ties are broken deterministically by the order in which ops were given (the order of the
``durations`` mapping, kept as the graph's node order); see :func:`critical_path`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from numbers import Real

import networkx as nx
import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

__all__ = [
    "SLACK_RTOL",
    "CriticalPath",
    "critical_path",
    "orderings",
    "path_bounds",
    "schedule",
    "slack",
    "speedup_gain",
    "step_graph",
    "step_time",
    "step_time_curve",
    "stream_order_edges",
    "useful_reduction",
    "what_if",
    "with_durations",
]

#: Slack below ``SLACK_RTOL * step_time`` is float noise (sums taken in a different order) and is
#: reported as exactly 0: such an op is critical.
SLACK_RTOL = 1e-9


@dataclass(frozen=True)
class CriticalPath:
    """A longest source->sink path of a step graph: its ops in order and its length (cost01)."""

    ops: tuple[str, ...]
    length: float


# --------------------------------------------------------------------------------------------
# validation


def _check_duration(op: object, value: object) -> float:
    """Return ``value`` as a float, or raise ValueError naming ``op`` if it is not a duration."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"duration of op {op!r} must be a real number of seconds, got {value!r}")
    d = float(value)
    if math.isnan(d) or math.isinf(d):
        raise ValueError(f"duration of op {op!r} must be finite, got {d}")
    if d < 0:
        raise ValueError(f"duration of op {op!r} must be >= 0 seconds, got {d}")
    return d


def _cycle_message(g: nx.DiGraph) -> str:
    cycle = nx.find_cycle(g)
    ops = [u for u, _ in cycle] + [cycle[0][0]]
    return "dependencies form a cycle: " + " -> ".join(repr(op) for op in ops)


def _check_graph(g: nx.DiGraph) -> None:
    """Raise ValueError unless ``g`` is a non-empty DAG whose ops all carry valid durations."""
    if not isinstance(g, nx.DiGraph):
        raise TypeError(f"expected a networkx DiGraph from step_graph(), got {type(g).__name__}")
    if g.number_of_nodes() == 0:
        raise ValueError("the step graph has no ops")
    for op, data in g.nodes(data=True):
        if "duration" not in data:
            raise ValueError(f"op {op!r} has no 'duration' attribute; build graphs with step_graph")
        _check_duration(op, data["duration"])


def _check_op(g: nx.DiGraph, op: str) -> None:
    if op not in g:
        raise ValueError(f"unknown op {op!r}; the step graph has ops {_names(g)}")


def _names(g: nx.DiGraph, limit: int = 12) -> str:
    ops = list(g.nodes)
    shown = ", ".join(repr(o) for o in ops[:limit])
    return f"[{shown}{', ...' if len(ops) > limit else ''}]"


# --------------------------------------------------------------------------------------------
# construction


def step_graph(
    durations: Mapping[str, float],
    deps: Iterable[tuple[str, str]],
    lanes: Mapping[str, str] | None = None,
) -> nx.DiGraph:
    """Activity-on-node step graph: op -> {duration (s), lane}, edge u->v = v starts after u ends (cost01).

    Ops without a lane get their own name as lane (one Gantt row each). Raises ValueError on an
    empty graph, a negative/NaN/infinite duration, a dependency or lane naming an unknown op, a
    self-loop or a cycle.
    """
    if not isinstance(durations, Mapping):
        raise TypeError(
            f"durations must be a mapping op -> seconds, got {type(durations).__name__}"
        )
    if len(durations) == 0:
        raise ValueError("the step graph has no ops: durations is empty")
    lanes = {} if lanes is None else lanes
    if not isinstance(lanes, Mapping):
        raise TypeError(f"lanes must be a mapping op -> lane name, got {type(lanes).__name__}")
    g = nx.DiGraph()
    for op, value in durations.items():
        if not isinstance(op, str):
            raise ValueError(f"op names must be strings, got {op!r}")
        g.add_node(op, duration=_check_duration(op, value), lane=op)
    for op, lane in lanes.items():
        if op not in g:
            raise ValueError(f"lanes names unknown op {op!r}; known ops: {_names(g)}")
        g.nodes[op]["lane"] = str(lane)
    for edge in deps:
        if not (isinstance(edge, Sequence) and not isinstance(edge, str) and len(edge) == 2):
            raise ValueError(f"each dependency must be a pair (before, after), got {edge!r}")
        u, v = edge
        for op in (u, v):
            if op not in g:
                raise ValueError(
                    f"dependency ({u!r}, {v!r}) names unknown op {op!r}; known ops: {_names(g)}"
                )
        if u == v:
            raise ValueError(f"op {u!r} depends on itself (self-loop ({u!r}, {v!r}))")
        g.add_edge(u, v)
    if not nx.is_directed_acyclic_graph(g):
        raise ValueError(_cycle_message(g))
    return g


def stream_order_edges(order: Mapping[str, Sequence[str]]) -> list[tuple[str, str]]:
    """Edges (ops[i], ops[i+1]) for consecutive ops on each stream/lane: one stream runs one op at a time (cost01)."""
    seen: dict[str, str] = {}
    edges: list[tuple[str, str]] = []
    for lane, ops in order.items():
        if isinstance(ops, str):
            raise ValueError(
                f"stream {lane!r}: expected a sequence of op names, got the string {ops!r}"
            )
        for op in ops:
            if op in seen:
                raise ValueError(
                    f"op {op!r} appears twice in the stream order (streams {seen[op]!r} and {lane!r})"
                )
            seen[op] = lane
        edges.extend(pairwise(ops))
    return edges


def orderings(g: nx.DiGraph) -> set[tuple[str, str]]:
    """Every pair (u, v) where v cannot start before u ends, directly or through other ops: the transitive closure (cost01).

    Two step graphs with the same ops and the same orderings have the same schedule for any
    durations, so this is how to compare a graph built by hand with a reference: an edge implied
    by others changes nothing, a missing or extra ordering does.
    """
    _check_graph(g)
    return {(u, v) for u, v in nx.transitive_closure_dag(g).edges}


def with_durations(g: nx.DiGraph, new: Mapping[str, float]) -> nx.DiGraph:
    """Copy of the step graph with the durations in ``new`` replaced (validated) (cost01)."""
    _check_graph(g)
    checked = {}
    for op, value in new.items():
        _check_op(g, op)
        checked[op] = _check_duration(op, value)
    h = g.copy()
    for op, d in checked.items():
        h.nodes[op]["duration"] = d
    return h


# --------------------------------------------------------------------------------------------
# forward / backward passes (critical path method), O(V + E)


@dataclass(frozen=True)
class _Passes:
    order: list[str]  # topological order
    duration: np.ndarray
    start: np.ndarray
    end: np.ndarray
    latest_start: np.ndarray
    step_time: float


def _topological_order(g: nx.DiGraph) -> list[str]:
    try:
        return list(nx.topological_sort(g))
    except nx.NetworkXUnfeasible:
        raise ValueError(_cycle_message(g)) from None


def _passes(g: nx.DiGraph) -> _Passes:
    _check_graph(g)
    order = _topological_order(g)
    pos = {op: i for i, op in enumerate(order)}
    dur = [float(g.nodes[op]["duration"]) for op in order]
    n = len(order)
    start = [0.0] * n
    end = [0.0] * n
    for i, op in enumerate(order):
        preds = g.pred[op]
        if preds:
            start[i] = max(end[pos[u]] for u in preds)
        end[i] = start[i] + dur[i]
    t = max(end)
    latest = [0.0] * n
    for i in range(n - 1, -1, -1):
        succ = g.succ[order[i]]
        latest_end = min(latest[pos[w]] for w in succ) if succ else t
        latest[i] = latest_end - dur[i]
    return _Passes(order, np.array(dur), np.array(start), np.array(end), np.array(latest), t)


def _snap(values: np.ndarray, scale: float) -> np.ndarray:
    """Set values within SLACK_RTOL * scale of zero to exactly 0.0 (float noise)."""
    out = np.array(values, dtype=float)
    out[np.abs(out) <= SLACK_RTOL * abs(scale)] = 0.0
    return out


def schedule(g: nx.DiGraph) -> pd.DataFrame:
    """As-soon-as-possible schedule: op, lane, duration, start, end, latest_start, slack, critical per op, in topological order (cost01)."""
    p = _passes(g)
    slack_s = _snap(p.latest_start - p.start, p.step_time)
    return pd.DataFrame(
        {
            "op": pd.Series(p.order, dtype=object),
            "lane": pd.Series([g.nodes[op].get("lane", op) for op in p.order], dtype=object),
            "duration": p.duration,
            "start": p.start,
            "end": p.end,
            "latest_start": p.start + slack_s,  # = latest start, without float noise
            "slack": slack_s,
            "critical": slack_s == 0.0,
        }
    )


def step_time(g: nx.DiGraph) -> float:
    """Step time = length of the longest path = max over ops of the ASAP end time (cost01)."""
    return _passes(g).step_time


def slack(g: nx.DiGraph) -> dict[str, float]:
    """Total float per op: latest start - earliest start = step_time - longest path through it; 0 on the critical path (cost01)."""
    p = _passes(g)
    values = _snap(p.latest_start - p.start, p.step_time)
    return {op: float(s) for op, s in zip(p.order, values, strict=True)}


def critical_path(g: nx.DiGraph) -> CriticalPath:
    """One longest source->sink path, found backwards from the sink that ends last; ties go to the op given first (cost01).

    Rule: among sinks ending at the step time, and at each step among predecessors ending exactly
    when the current op starts, take the op that comes first in the graph's node order (the order
    of ``durations``). Equivalently: of all longest source->sink paths, the one whose op sequence
    read from the end is lexicographically smallest in node order.
    """
    p = _passes(g)
    rank = {op: i for i, op in enumerate(g.nodes)}
    pos = {op: i for i, op in enumerate(p.order)}
    # start[v] is literally the max of its predecessors' ends and step_time the max of all ends,
    # so "tight" can be tested with exact float equality.
    sinks = [op for op in p.order if not g.succ[op] and p.end[pos[op]] == p.step_time]
    v = min(sinks, key=rank.__getitem__)
    path = [v]
    while g.pred[v]:
        s = p.start[pos[v]]
        v = min((u for u in g.pred[v] if p.end[pos[u]] == s), key=rank.__getitem__)
        path.append(v)
    return CriticalPath(ops=tuple(reversed(path)), length=float(p.step_time))


def what_if(g: nx.DiGraph, new: Mapping[str, float]) -> float:
    """Step time after replacing the durations in ``new`` (others unchanged) (cost01)."""
    return step_time(with_durations(g, new))


# --------------------------------------------------------------------------------------------
# one op's duration: T(d) = max(A, B + d)


def path_bounds(g: nx.DiGraph, op: str) -> tuple[float, float]:
    """(A, B): A = longest path avoiding op, B = longest path through op minus its duration; T(d) = max(A, B + d) (cost01)."""
    p = _passes(g)
    _check_op(g, op)
    pos = {v: i for i, v in enumerate(p.order)}
    k = pos[op]
    n = len(p.order)
    # Longest path ending at each op among paths that avoid `op` (-inf: only reachable via op).
    end_avoid = [0.0] * n
    for i, v in enumerate(p.order):
        if i == k:
            end_avoid[i] = -math.inf
            continue
        preds = [end_avoid[pos[u]] for u in g.pred[v] if u != op]
        end_avoid[i] = max(preds, default=0.0) + p.duration[i]
    a = max((e for i, e in enumerate(end_avoid) if i != k), default=0.0)
    # Longest path starting at each op (its duration included), backwards.
    from_here = [0.0] * n
    for i in range(n - 1, -1, -1):
        succ = g.succ[p.order[i]]
        from_here[i] = p.duration[i] + max((from_here[pos[w]] for w in succ), default=0.0)
    tail = max((from_here[pos[w]] for w in g.succ[op]), default=0.0)
    b = float(p.start[k]) + tail
    return float(a), float(b)


def step_time_curve(g: nx.DiGraph, op: str, durations: ArrayLike) -> np.ndarray:
    """Step time T(d) = max(A, B + d) for each duration d of op, vectorized (cost01)."""
    d = np.asarray(durations, dtype=float)
    if np.isnan(d).any() or np.isinf(d).any():
        raise ValueError(f"durations for op {op!r} must be finite")
    if (d < 0).any():
        raise ValueError(f"durations for op {op!r} must be >= 0, got min {d.min()}")
    a, b = path_bounds(g, op)
    return np.maximum(a, b + d)


def useful_reduction(g: nx.DiGraph, op: str) -> float:
    """Largest cut in op's duration that still shortens the step: max(0, min(d, B + d - A)) (cost01)."""
    a, b = path_bounds(g, op)
    d = float(g.nodes[op]["duration"])
    margin = b + d - a
    if abs(margin) <= SLACK_RTOL * max(a, b + d):
        margin = 0.0
    return max(0.0, min(d, margin))


def speedup_gain(g: nx.DiGraph, op: str, factor: float) -> float:
    """Step time saved when op runs factor times faster: T(d) - T(d / factor) (cost01).

    ``factor`` must be > 0 (``inf`` removes the op; a factor below 1 is a slowdown and gives a
    negative gain).
    """
    if isinstance(factor, bool) or not isinstance(factor, Real) or not float(factor) > 0:
        raise ValueError(f"speed-up factor must be a number > 0, got {factor!r}")
    a, b = path_bounds(g, op)
    d = float(g.nodes[op]["duration"])
    new = d / float(factor)
    gain = max(a, b + d) - max(a, b + new)
    return 0.0 if abs(gain) <= SLACK_RTOL * max(a, b + d) else float(gain)
