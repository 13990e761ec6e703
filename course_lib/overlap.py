"""Interval algebra, communication/computation overlap, exposed communication and a bucketed
data-parallel all-reduce model (cost03).

Interval sets are ``(N, 2)`` float arrays of half-open intervals ``[start, end)`` in seconds. The
set operations sort once and sweep with a cumulative maximum (numpy, no per-interval Python loop),
so a million intervals take a fraction of a second (benchmarks/bench_overlap.py).

Two different questions hide behind "how much communication is exposed?":

* **Timeline overlap** (what a profiler sees). Holistic Trace Analysis (HTA, Meta,
  hta/analyzers/communication_analysis.py ``get_comm_comp_overlap``; docs page "Communication
  Computation Overlap") defines, per rank, the overlap as *(time spent in computation while
  communicating) / (time spent in communication)*. It classifies the rank's GPU events by name
  (HTA 0.5.0, hta/utils/utils.py): communication if the name matches ``^nccl.*Kernel``, memory
  (in neither set) if it starts with ``Memcpy``, ``Memset`` or ``dma``, computation otherwise,
  except GPU synchronization records (names containing ``Sync``), which are in neither set.
  It then merges each kind — all computation events of the rank (any stream) into one set of
  disjoint intervals, all communication kernels into another — with ``merge_kernel_intervals`` (sort by start,
  start a new group when a start is later than the running maximum of previous ends, so
  overlapping and touching kernels merge), then measures the time both sets are active and
  divides by the merged communication time. :func:`overlap_ratio` computes exactly that.
* **Critical-path exposure**: communication time E on the step's longest dependency path,
  :func:`exposed_on_critical_path`. It is a sensitivity, not a cost: collectives a fraction f
  faster save f·E until another path becomes critical, and removing them saves at most E.
  Launching a collective asynchronously does not make it hidden: it is hidden only if nothing
  on the critical path waits for it and it does not slow the computation it overlaps.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import networkx as nx
import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "BucketTimeline",
    "bucket_step_graph",
    "bucketed_allreduce_timeline",
    "exposed_communication",
    "exposed_on_critical_path",
    "intersection",
    "overlap_ratio",
    "subtract",
    "total_length",
    "transformer_grad_tensors",
    "union",
]

FloatArray = NDArray[np.float64]

# --------------------------------------------------------------------------------------------
# interval algebra


def _intervals(x: ArrayLike, name: str = "intervals") -> FloatArray:
    """``x`` as a validated (N, 2) float array of [start, end) rows; ValueError names the bad row."""
    a = np.asarray(x, dtype=float)
    if a.size == 0:
        return np.empty((0, 2))
    if a.ndim != 2 or a.shape[1] != 2:
        raise ValueError(
            f"{name} must be an (N, 2) array of [start, end) rows, got shape {a.shape}"
        )
    finite = np.isfinite(a).all(axis=1)
    if not finite.all():
        i = int(np.argmin(finite))
        raise ValueError(f"{name} row {i} = {a[i].tolist()} is not finite (NaN or inf)")
    backwards = a[:, 1] < a[:, 0]
    if backwards.any():
        i = int(np.argmax(backwards))
        raise ValueError(f"{name} row {i} = {a[i].tolist()} ends before it starts (end < start)")
    return a


def _merge(a: FloatArray) -> FloatArray:
    """Union of validated intervals: sort by start, cumulative max of ends, split where a start
    exceeds every earlier end (HTA's merge_kernel_intervals). Empty intervals are dropped."""
    a = a[a[:, 1] > a[:, 0]]
    n = len(a)
    if n == 0:
        return np.empty((0, 2))
    order = np.argsort(a[:, 0])  # introsort: stability is irrelevant for a union
    starts = a[order, 0]
    running_end = np.maximum.accumulate(a[order, 1])
    new_group = np.empty(n, dtype=bool)
    new_group[0] = True
    np.greater(starts[1:], running_end[:-1], out=new_group[1:])
    first = np.flatnonzero(new_group)
    last = np.append(first[1:] - 1, n - 1)
    return np.column_stack((starts[first], running_end[last]))


def union(intervals: ArrayLike) -> FloatArray:
    """Union of [start, end) intervals as sorted, disjoint, non-touching intervals (cost03)."""
    return _merge(_intervals(intervals))


def total_length(intervals: ArrayLike) -> float:
    """Length (s) of the union of the intervals — overlapping time counted once (cost03)."""
    return _length(union(intervals))


def _sweep(a: FloatArray, b: FloatArray) -> tuple[FloatArray, FloatArray, NDArray, NDArray]:
    """Elementary segments between all boundaries of two merged sets, with membership flags.

    A merged set's boundaries, read row by row (start, end, start, end, ...), are already
    sorted, so the concatenation is two sorted runs and a stable sort (timsort) merges them in
    linear time."""
    na, nb = len(a), len(b)
    times = np.concatenate((a.ravel(), b.ravel()))
    step = np.array([1.0, -1.0])
    da = np.concatenate((np.tile(step, na), np.zeros(2 * nb)))
    db = np.concatenate((np.zeros(2 * na), np.tile(step, nb)))
    order = np.argsort(times, kind="stable")
    t = times[order]
    in_a = np.cumsum(da[order])[:-1] > 0.5
    in_b = np.cumsum(db[order])[:-1] > 0.5
    return t[:-1], t[1:], in_a, in_b


def _pieces(lo: FloatArray, hi: FloatArray, keep: NDArray) -> FloatArray:
    """Kept elementary segments, touching ones joined (already sorted: no re-sort needed)."""
    keep = keep & (hi > lo)
    lo, hi = lo[keep], hi[keep]
    if len(lo) == 0:
        return np.empty((0, 2))
    first = np.empty(len(lo), dtype=bool)
    first[0] = True
    np.greater(lo[1:], hi[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    last = np.append(starts[1:] - 1, len(lo) - 1)
    return np.column_stack((lo[starts], hi[last]))


def _intersection_merged(ua: FloatArray, ub: FloatArray) -> FloatArray:
    if len(ua) == 0 or len(ub) == 0:
        return np.empty((0, 2))
    lo, hi, in_a, in_b = _sweep(ua, ub)
    return _pieces(lo, hi, in_a & in_b)


def _subtract_merged(ua: FloatArray, ub: FloatArray) -> FloatArray:
    if len(ua) == 0 or len(ub) == 0:
        return ua
    lo, hi, in_a, in_b = _sweep(ua, ub)
    return _pieces(lo, hi, in_a & ~in_b)


def _length(u: FloatArray) -> float:
    return float(np.sum(u[:, 1] - u[:, 0]))


def intersection(a: ArrayLike, b: ArrayLike) -> FloatArray:
    """Time covered by both interval sets, as sorted disjoint intervals (cost03)."""
    return _intersection_merged(union(a), union(b))


def subtract(a: ArrayLike, b: ArrayLike) -> FloatArray:
    """Time covered by set a but not by set b, as sorted disjoint intervals (cost03)."""
    return _subtract_merged(union(a), union(b))


def overlap_ratio(comm: ArrayLike, compute: ArrayLike) -> float:
    """HTA's communication–computation overlap: |∪comm ∩ ∪compute| / |∪comm|, in [0, 1] (cost03).

    As in Holistic Trace Analysis (``get_comm_comp_overlap``): communication kernels are merged
    into disjoint intervals, so do computation kernels (overlapping kernels on one or several
    streams count once), and the time both are active is divided by the merged communication
    time. Raises ValueError for malformed arrays (naming the row) and when there is no
    communication time (the ratio is 0/0).
    """
    c = _merge(_intervals(comm, "comm"))
    k = _merge(_intervals(compute, "compute"))
    comm_time = _length(c)
    if comm_time == 0.0:
        raise ValueError(
            "comm has no communication time (empty or zero-length intervals): "
            "the overlap ratio is undefined"
        )
    return _length(_intersection_merged(c, k)) / comm_time


def exposed_communication(comm: ArrayLike, compute: ArrayLike) -> float:
    """Communication time with no computation running: |∪comm minus ∪compute| (s) (cost03).

    This is the timeline measure, and it equals (1 - overlap_ratio) × |∪comm| by construction.
    It is *not* what communication costs the step, and (1 - ratio) × comm is therefore not the
    exposed time in general:

    * non-overlapped communication costs nothing if the critical path does not pass through it
      (it runs while the compute stream waits for something else, e.g. input data or another
      rank);
    * overlapped communication still costs time when later work depends on it (an op that needs
      the all-reduced gradients waits for the whole collective, overlapped part included) or when
      it slows the computation it overlaps (shared SMs and memory bandwidth);
    * "comm" measured as a sum of kernel durations double-counts concurrent collectives.

    Use :func:`exposed_on_critical_path` for how the step responds to faster communication, and
    :func:`bucketed_allreduce_timeline` for the effect of contention.
    """
    c = _merge(_intervals(comm, "comm"))
    k = _merge(_intervals(compute, "compute"))
    return _length(_subtract_merged(c, k))


def exposed_on_critical_path(
    graph: nx.DiGraph, comm_lanes: Iterable[str] = ("comm stream",)
) -> float:
    """Communication time on the step graph's critical path: sum of comm-op durations on it (cost03).

    ``graph`` is a step graph (course_lib.graph.step_graph: node attributes ``duration`` in
    seconds and ``lane``); ops whose lane is in ``comm_lanes`` count as communication. If several
    paths are critical, the one with the least communication is used: that much communication is
    on *every* reading of "the" critical path, so the value is never overstated.

    Differs from (1 - overlap_ratio) × comm: a collective that runs alongside computation is
    still on the critical path when the next op waits for its result (all of its duration
    counts, overlapped or not), and a non-overlapped collective that nothing waits for is not.
    """
    from course_lib.graph import schedule  # local import: graph is a sibling lesson module

    lanes = {str(x) for x in ([comm_lanes] if isinstance(comm_lanes, str) else comm_lanes)}
    present = {str(d.get("lane")) for _, d in graph.nodes(data=True)}
    if not lanes & present:
        raise ValueError(
            f"no op runs on the communication lanes {sorted(lanes)}; lanes in the graph: "
            f"{sorted(present)}"
        )
    sched = schedule(graph)  # validates the graph (DAG, durations)
    ops = list(sched["op"])
    start = dict(zip(ops, sched["start"], strict=True))
    end = dict(zip(ops, sched["end"], strict=True))
    step = float(sched["end"].max())
    comm = {
        op: float(graph.nodes[op]["duration"]) if str(graph.nodes[op].get("lane")) in lanes else 0.0
        for op in ops
    }
    # least communication along a chain of tight edges (end(u) == start(v)) ending at each op;
    # start(v) is literally the max of its predecessors' ends, so exact equality is right.
    least: dict[str, float] = {}
    for v in ops:  # schedule() lists ops in topological order
        tight = [least[u] for u in graph.pred[v] if end[u] == start[v]]
        least[v] = comm[v] + (min(tight) if tight else 0.0)
    return float(min(least[v] for v in ops if end[v] == step))


# --------------------------------------------------------------------------------------------
# bucketed data-parallel backward + all-reduce


@dataclass(frozen=True)
class BucketTimeline:
    """Timeline of a bucketed data-parallel backward pass with one all-reduce stream (cost03).

    ``compute`` has one row [start, end) per layer, indexed like the inputs (layer 0 first; the
    backward pass runs the last layer first). ``comm`` has one row per bucket in launch order and
    ``buckets`` lists each bucket's layers in backward order (layers with no gradient bytes are in
    no bucket). ``exposed_comm`` is the communication time with no backward computation running;
    ``overlap_ratio`` is HTA's ratio (nan when there is no communication time);
    ``contention_delay`` is how much contention stretched the backward pass; ``serial_step_time``
    is the step with the same buckets but no overlap (backward, then every all-reduce, then the
    optimizer).
    """

    compute: FloatArray
    comm: FloatArray
    buckets: tuple[tuple[int, ...], ...]
    bucket_sizes: FloatArray
    comm_durations: FloatArray
    optimizer: tuple[float, float]
    step_time: float
    exposed_comm: float
    overlap_ratio: float
    backward_end: float
    contention_delay: float
    serial_step_time: float


def _vector(x: ArrayLike, name: str) -> FloatArray:
    a = np.asarray(x, dtype=float)
    if a.ndim != 1 or len(a) == 0:
        raise ValueError(f"{name} must be a non-empty 1-D sequence, got shape {a.shape}")
    bad = ~np.isfinite(a) | (a < 0)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"{name}[{i}] = {a[i]} must be finite and >= 0")
    return a


def _scalar(x: float, name: str, *, allow_inf: bool = False, positive: bool = False) -> float:
    if isinstance(x, bool):
        raise ValueError(f"{name} must be a number, got {x!r}")
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {x!r}") from None
    if math.isnan(v) or (math.isinf(v) and not allow_inf):
        raise ValueError(f"{name} must be finite, got {v}")
    if v < 0 or (positive and v == 0):
        raise ValueError(f"{name} must be {'> 0' if positive else '>= 0'}, got {v}")
    return v


def _buckets(grad_bytes: FloatArray, cap: float, first_cap: float) -> list[list[int]]:
    """Group layers in backward order; a bucket closes once its size >= its cap (DDP's rule)."""
    buckets: list[list[int]] = []
    current: list[int] = []
    size = 0.0
    for layer in range(len(grad_bytes) - 1, -1, -1):
        if grad_bytes[layer] == 0:
            continue
        current.append(layer)
        size += grad_bytes[layer]
        if size >= (first_cap if not buckets else cap):
            buckets.append(current)
            current, size = [], 0.0
    if current:
        buckets.append(current)
    return buckets


def bucketed_allreduce_timeline(
    layer_backward_times: Sequence[float] | ArrayLike,
    layer_grad_bytes: Sequence[float] | ArrayLike,
    bucket_bytes: float,
    bandwidth: float,
    latency: float = 0.0,
    contention: float = 0.0,
    optimizer_time: float = 0.0,
    first_bucket_bytes: float | None = None,
    comm_contention: float = 0.0,
) -> BucketTimeline:
    """Event-driven timeline of backward (last layer first) + bucketed all-reduces + optimizer (cost03).

    Model (all times in seconds, sizes in bytes):

    * the backward pass runs layers L-1, ..., 0 back to back on the compute stream, layer i
      needing ``layer_backward_times[i]`` of uncontended compute;
    * gradients are grouped into buckets in that backward order; a bucket closes as soon as its
      size is >= ``bucket_bytes`` — the rule of PyTorch DDP's bucket assignment
      (``_compute_bucket_assignment_by_size`` in torch/csrc/distributed/c10d/reducer.cpp, cap
      ``bucket_cap_mb`` = 25 MiB by default). DDP caps its *first* bucket (in gradient-ready
      order) at 1 MiB (``kDefaultFirstBucketBytes`` in c10d's reducer.hpp, applied again by
      ``Reducer::rebuild_buckets`` after the first iteration) so that the first all-reduce starts
      early; pass ``first_bucket_bytes`` to model that (default: the same cap as the others;
      tests/test_overlap.py checks it against a brute-force simulation). DDP buckets
      parameters (a layer's tensors may split across buckets); here a layer's gradient is one
      unit. Layers with no gradient bytes join no bucket;
    * one communication stream: a bucket's all-reduce starts when its last gradient is ready and
      the previous all-reduce has finished, and takes ``latency + bytes / bandwidth``, where
      ``bandwidth`` is the *algorithm bandwidth* of nccl-tests (algbw = S / t for an all-reduce
      of an S-byte buffer; busbw = algbw · 2(n-1)/n is the per-link figure, not this one);
    * contention: while an all-reduce overlaps the backward pass, computation progresses at rate
      1 / (1 + ``contention``) (collectives share SMs and memory bandwidth) and the all-reduce at
      rate 1 / (1 + ``comm_contention``) (the computation takes SMs and memory bandwidth from it;
      default 0: the collective's speed is unaffected). Rates change only at events (layer end,
      all-reduce start or end), so the timeline is computed exactly event by event;
    * the optimizer step (``optimizer_time``) starts when both the last layer and the last
      all-reduce are done; the step ends when it ends.

    ``bandwidth`` may be ``inf`` (free transfers).

    Consequence of the model: O seconds of overlap do O/(1+c) seconds of computation and
    O/(1+c') seconds of communication (c = ``contention``, c' = ``comm_contention``) and stretch
    the backward pass by O·c/(1+c) (``contention_delay``), so with the *same* buckets

        step_time = serial_step_time - O·(1/(1+c) + 1/(1+c') - 1)

    (the backward pass never idles, so all communication before its end overlaps it, and all
    buckets are ready at its end, so the communication after it runs back to back). With
    c' = 0 this is serial - O/(1+c): overlapping never loses to not overlapping. It loses when
    the two slow each other so much that together they progress slower than one at a time,
    1/(1+c) + 1/(1+c') < 1, i.e. c·c' > 1. Contention also makes overlap lose against a
    *different* bucketing: smaller buckets raise the overlap ratio but pay the latency more
    often and slow more computation, so a higher ratio can come with a slower step.
    """
    w = _vector(layer_backward_times, "layer_backward_times")
    g = _vector(layer_grad_bytes, "layer_grad_bytes")
    if len(w) != len(g):
        raise ValueError(
            f"layer_backward_times and layer_grad_bytes differ in length: {len(w)} vs {len(g)}"
        )
    if g.sum() == 0:
        raise ValueError("layer_grad_bytes are all 0: there is nothing to all-reduce")
    cap = _scalar(bucket_bytes, "bucket_bytes", allow_inf=True, positive=True)
    first_cap = (
        cap
        if first_bucket_bytes is None
        else _scalar(first_bucket_bytes, "first_bucket_bytes", allow_inf=True, positive=True)
    )
    bw = _scalar(bandwidth, "bandwidth", allow_inf=True, positive=True)
    alpha = _scalar(latency, "latency")
    slow = 1.0 + _scalar(contention, "contention")
    slow_comm = 1.0 + _scalar(comm_contention, "comm_contention")
    opt = _scalar(optimizer_time, "optimizer_time")

    buckets = _buckets(g, cap, first_cap)
    sizes = np.array([g[b].sum() for b in buckets])
    durations = alpha + sizes / bw
    n_layers, n_buckets = len(w), len(buckets)
    order = list(range(n_layers - 1, -1, -1))  # backward order
    closes_bucket = {b[-1]: k for k, b in enumerate(buckets)}

    compute = np.zeros((n_layers, 2))
    comm = np.zeros((n_buckets, 2))
    ready = np.full(n_buckets, math.inf)
    t = 0.0
    pos = 0  # position of the running layer in backward order
    remaining = w[order[0]]
    compute[order[0], 0] = 0.0
    next_bucket = 0
    comm_left: float | None = None  # uncontended seconds left of the running all-reduce
    while pos < n_layers or next_bucket < n_buckets or comm_left is not None:
        if comm_left is None and next_bucket < n_buckets and ready[next_bucket] <= t:
            comm[next_bucket, 0] = t
            comm_left = float(durations[next_bucket])
        computing = pos < n_layers
        factor = slow if comm_left is not None else 1.0  # compute slowed by a running collective
        comm_factor = slow_comm if computing else 1.0  # collective slowed by running compute
        t_layer = t + remaining * factor if computing else math.inf
        t_comm = t + comm_left * comm_factor if comm_left is not None else math.inf
        if t_layer == math.inf and t_comm == math.inf:  # pragma: no cover - defensive
            raise RuntimeError("bucket timeline stalled: a bucket never became ready")
        if t_layer <= t_comm:
            if comm_left is not None:
                comm_left = 0.0 if t_layer == t_comm else comm_left - (t_layer - t) / comm_factor
            t = t_layer
            layer = order[pos]
            compute[layer, 1] = t
            if layer in closes_bucket:
                ready[closes_bucket[layer]] = t
            pos += 1
            if pos < n_layers:
                remaining = w[order[pos]]
                compute[order[pos], 0] = t
        else:
            remaining = max(0.0, remaining - (t_comm - t) / factor)
            t = t_comm
            comm_left = 0.0
        if comm_left is not None and comm_left <= 0.0:
            comm[next_bucket, 1] = t
            next_bucket += 1
            comm_left = None

    backward_end = float(compute[order[-1], 1])
    comm_done = float(comm[-1, 1])
    opt_start = max(backward_end, comm_done)
    step = opt_start + opt
    exposed = exposed_communication(comm, compute)
    comm_time = total_length(comm)
    ratio = overlap_ratio(comm, compute) if comm_time > 0 else math.nan
    for arr in (compute, comm, sizes, durations):
        arr.setflags(write=False)
    return BucketTimeline(
        compute=compute,
        comm=comm,
        buckets=tuple(tuple(b) for b in buckets),
        bucket_sizes=sizes,
        comm_durations=durations,
        optimizer=(opt_start, step),
        step_time=step,
        exposed_comm=exposed,
        overlap_ratio=ratio,
        backward_end=backward_end,
        contention_delay=backward_end - float(w.sum()),
        serial_step_time=float(w.sum() + durations.sum() + opt),
    )


def transformer_grad_tensors(
    num_layers: int = 24,
    hidden: int = 1024,
    layer_backward_time: float = 3.2e-3,
    bytes_per_param: float = 4.0,
) -> tuple[FloatArray, FloatArray]:
    """Backward time (s) and gradient bytes of each weight matrix of a transformer, forward order (cost03).

    Per layer, in forward order: attention QKV (3h² parameters), attention output (h²), MLP up
    (4h²) and MLP down (4h²): 12h² parameters per layer, the count N ≈ 12·n_layer·d_model² of
    Kaplan et al. 2020 (§2.1, d_attn = d_model, d_ff = 4·d_model; biases, layer norms and
    embeddings left out). A matrix's backward time is its share of ``layer_backward_time``
    (backward FLOPs of a matrix multiply are proportional to its parameters); its gradient holds
    ``bytes_per_param`` bytes per parameter (4: fp32 gradients). Feed the two arrays to
    :func:`bucketed_allreduce_timeline`, which runs the backward pass from the last entry.
    """
    if isinstance(num_layers, bool) or not isinstance(num_layers, (int, np.integer)):
        raise ValueError(f"num_layers must be an integer >= 1, got {num_layers!r}")
    if num_layers < 1:
        raise ValueError(f"num_layers must be an integer >= 1, got {num_layers!r}")
    h = _scalar(hidden, "hidden", positive=True)
    t = _scalar(layer_backward_time, "layer_backward_time")
    b = _scalar(bytes_per_param, "bytes_per_param", positive=True)
    params = np.tile(np.array([3.0, 1.0, 4.0, 4.0]) * h * h, int(num_layers))
    return params / (12.0 * h * h) * t, params * b


def bucket_step_graph(timeline: BucketTimeline) -> nx.DiGraph:
    """Step graph of a bucket timeline as it ran: layers, all-reduces, optimizer and their edges (cost03).

    Ops: ``"backward L<i>"`` (lane "compute stream"), ``"all-reduce b<k>"`` (lane "comm stream")
    and ``"optimizer"`` (lane "compute stream"), with their *as-run* durations (a layer's duration
    includes what contention added). Edges: backward order on the compute stream, launch order on
    the comm stream, the last layer of a bucket -> its all-reduce (readiness), and the last layer
    and the last all-reduce -> the optimizer. Its ASAP schedule (course_lib.graph.schedule)
    reproduces the timeline, so :func:`exposed_on_critical_path` gives the communication on the
    step's critical path. With contention the durations are those of this run: a what-if that
    changes them does not re-model how much the collectives slow the layers.
    """
    from course_lib.graph import step_graph  # local import, as in exposed_on_critical_path

    compute, comm = timeline.compute, timeline.comm
    order = range(len(compute) - 1, -1, -1)  # backward order
    durations: dict[str, float] = {}
    lanes: dict[str, str] = {}
    for i in order:
        durations[f"backward L{i}"] = float(compute[i, 1] - compute[i, 0])
        lanes[f"backward L{i}"] = "compute stream"
    for k in range(len(comm)):
        durations[f"all-reduce b{k}"] = float(comm[k, 1] - comm[k, 0])
        lanes[f"all-reduce b{k}"] = "comm stream"
    opt_start, opt_end = timeline.optimizer
    durations["optimizer"] = float(opt_end - opt_start)
    lanes["optimizer"] = "compute stream"
    layers = [f"backward L{i}" for i in order]
    reduces = [f"all-reduce b{k}" for k in range(len(comm))]
    deps = list(zip(layers[:-1], layers[1:], strict=True))
    deps += list(zip(reduces[:-1], reduces[1:], strict=True))
    deps += [(f"backward L{b[-1]}", f"all-reduce b{k}") for k, b in enumerate(timeline.buckets)]
    deps += [(layers[-1], "optimizer"), (reduces[-1], "optimizer")]
    return step_graph(durations, deps, lanes)
