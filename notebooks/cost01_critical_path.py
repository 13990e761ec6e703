# %% [markdown]
# # cost01 · A training step ends when its longest required dependency path ends
#
# **Objective.** Construct an execution dependency graph and identify which duration changes can
# actually reduce completed training-step time.
#
# **Time:** 30 min · **Level:** advanced
#
# You will be able to
# - build the dependency graph of a training step from its ops, their durations and three kinds
#   of edges: data dependencies, stream order and synchronisation;
# - compute the step time as the longest path, and find the critical path and each op's slack;
# - predict what speeding up one op buys, $T(d) = \max(A, B + d)$, and where that stops paying;
# - explain why "top kernels by total time" is not a diagnosis.
#
# **What you need:** Python dictionaries and loops, and a rough picture of a data-parallel
# training step (forward, backward, gradient all-reduce, optimizer). Later lessons build the same
# graph from real profiler traces.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
# %matplotlib inline
import matplotlib.pyplot as plt
import numpy as np

from course_lib.checks import (
    check_float,
    check_int,
    check_names,
    check_range,
    check_type,
    forbid,
    passed,
)
from course_lib.explorers.critical_path import critical_path_explorer
from course_lib.figures.graph import (
    GANTT_CRITICAL_COLOUR,
    GANTT_OTHER_COLOUR,
    dependency_graph,
    gantt,
    slack_bars,
    what_if_curve,
)
from course_lib.graph import (
    critical_path,
    orderings,
    path_bounds,
    schedule,
    step_graph,
    step_time,
    stream_order_edges,
    what_if,
)

rng = np.random.default_rng(1959)  # every random draw in this lesson comes from rng
ms = 1e-3  # one millisecond in seconds: code works in seconds, 2.5 * ms is 2.5 ms

# Exercise 1: one rank's step, for you to build. Each lane lists its ops in the order they are issued.
BUILD_ORDER = {
    "CPU thread": ["load", "log"],
    "copy stream": ["h2d"],
    "compute stream": ["fwd", "bwd_2", "bwd_1", "opt"],
    "comm stream": ["allreduce_2", "allreduce_1"],
}
BUILD_DURATIONS = {
    "load": 2.0 * ms,
    "log": 1.5 * ms,
    "h2d": 1.0 * ms,
    "fwd": 4.0 * ms,
    "bwd_2": 3.0 * ms,
    "bwd_1": 3.5 * ms,
    "opt": 1.0 * ms,
    "allreduce_2": 3.0 * ms,
    "allreduce_1": 2.0 * ms,
}
BUILD_LANES = {op: lane for lane, ops in BUILD_ORDER.items() for op in ops}

# Exercises 3-5: two data-parallel ranks, gradients all-reduced in two buckets (synthetic numbers).
EX_DURATIONS = {
    "load_r0": 1.0 * ms,  # rank 0 CPU: the data loader hands over the next batch
    "fwd_r0": 6.0 * ms,  # rank 0 GPU: forward pass
    "log_r0": 1.5 * ms,  # rank 0 CPU: loss.item() + logging, a host sync
    "bwd2_r0": 5.0 * ms,  # rank 0 GPU: backward of the last layers (gradient bucket 2)
    "bwd1_r0": 5.0 * ms,  # rank 0 GPU: backward of the first layers (gradient bucket 1)
    "opt_r0": 2.0 * ms,  # rank 0 GPU: optimizer step
    "load_r1": 6.0 * ms,  # rank 1 CPU: the loader stalls on a slow read
    "fwd_r1": 6.0 * ms,
    "bwd2_r1": 5.0 * ms,
    "bwd1_r1": 5.0 * ms,
    "opt_r1": 2.0 * ms,
    "allreduce_2": 4.0 * ms,  # NCCL, both ranks: all-reduce of gradient bucket 2
    "allreduce_1": 4.0 * ms,  # NCCL, both ranks: all-reduce of gradient bucket 1
}
EX_ORDER = {
    "rank 0 CPU": ["load_r0", "log_r0"],
    "rank 0 GPU": ["fwd_r0", "bwd2_r0", "bwd1_r0", "opt_r0"],
    "rank 1 CPU": ["load_r1"],
    "rank 1 GPU": ["fwd_r1", "bwd2_r1", "bwd1_r1", "opt_r1"],
    "NCCL (both ranks)": ["allreduce_2", "allreduce_1"],
}
EX_LANES = {op: lane for lane, ops in EX_ORDER.items() for op in ops}
EX_DATA = [  # the forward pass reads the batch; the optimizer reads the reduced gradients
    ("load_r0", "fwd_r0"),
    ("load_r1", "fwd_r1"),
    ("allreduce_1", "opt_r0"),
    ("allreduce_1", "opt_r1"),
]
EX_SYNC = [
    ("fwd_r0", "log_r0"),  # loss.item() blocks rank 0's CPU until the forward pass ends
    ("bwd2_r0", "allreduce_2"),  # a collective starts when both ranks have the bucket ready
    ("bwd2_r1", "allreduce_2"),
    ("bwd1_r0", "allreduce_1"),
    ("bwd1_r1", "allreduce_1"),
]
EX_LAUNCH = [("log_r0", "bwd2_r0")]  # rank 0's CPU launches the backward pass after logging
EX_DEPS = stream_order_edges(EX_ORDER) + EX_DATA + EX_SYNC + EX_LAUNCH
EX_GRAPH = step_graph(EX_DURATIONS, EX_DEPS, EX_LANES)

# %% [markdown]
# ## 1. Ops and dependencies form a DAG
#
# A training step is a set of **ops** — CPU ops, host-to-device copies, GPU kernels, collectives,
# data loading — each with a **duration** $d_v$ in seconds. An edge $u \to v$ says that $v$
# cannot start before $u$ ends. Edges come from three places:
#
# - **data dependency:** $v$ reads what $u$ writes (the forward pass reads the copied batch; the
#   all-reduce of a gradient bucket reads the gradients the backward pass just wrote);
# - **stream order:** a CUDA stream, like a CPU thread, runs one op at a time in the order they
#   were issued, so consecutive ops on one stream are chained;
# - **synchronisation:** a stream or the host waits for another (`cudaStreamWaitEvent` before the
#   optimizer reads all-reduced gradients; `loss.item()` blocking the CPU until the kernel that
#   computes the loss has finished).
#
# Time only runs forward, so the graph has no cycles: it is a directed acyclic graph (DAG). Here
# is one data-parallel training step of a 4-layer model, seen from one rank (synthetic durations
# of a realistic size): the loader delivers a batch, a copy stream moves it to the GPU, four
# forward and four backward kernels run on the compute stream, and each layer's gradients (one
# bucket per layer) are all-reduced on a communication stream while the backward pass continues.

# %%
durations = {
    "load_batch": 3.0 * ms,
    "h2d_copy": 1.2 * ms,
    "fwd_1": 2.5 * ms,
    "fwd_2": 2.5 * ms,
    "fwd_3": 2.5 * ms,
    "fwd_4": 2.5 * ms,
    "bwd_4": 5.0 * ms,
    "bwd_3": 5.0 * ms,
    "bwd_2": 5.0 * ms,
    "bwd_1": 5.0 * ms,
    "allreduce_4": 3.5 * ms,
    "allreduce_3": 3.5 * ms,
    "allreduce_2": 3.5 * ms,
    "allreduce_1": 4.5 * ms,
    "optimizer": 1.5 * ms,
}
order = {  # stream order: what each lane runs, in issue order
    "data loader (CPU)": ["load_batch"],
    "copy stream": ["h2d_copy"],
    "compute stream": ["fwd_1", "fwd_2", "fwd_3", "fwd_4"]
    + ["bwd_4", "bwd_3", "bwd_2", "bwd_1", "optimizer"],
    "comm stream": ["allreduce_4", "allreduce_3", "allreduce_2", "allreduce_1"],
}
lanes = {op: lane for lane, ops in order.items() for op in ops}
data_deps = [("load_batch", "h2d_copy"), ("h2d_copy", "fwd_1")] + [
    (f"bwd_{k}", f"allreduce_{k}") for k in (4, 3, 2, 1)
]
sync_deps = [("allreduce_1", "optimizer")]  # the compute stream waits for the comm stream
deps = stream_order_edges(order) + data_deps + sync_deps  # (ops[i], ops[i + 1]) on each lane
g = step_graph(durations, deps, lanes)

kinds = {e: "data" for e in data_deps} | {e: "sync" for e in sync_deps}
dependency_graph(g, kinds=kinds)
plt.show()

# %% [markdown]
# Each box is an op with its duration, in the row of the lane that runs it; columns are
# dependency depth, not time. Notice the two chains that run side by side once the backward pass
# starts: each `bwd_k` hands its gradients (blue) to `allreduce_k`, and the optimizer waits
# (pink, dashed) for the last all-reduce.

# %% [markdown]
# ## 2. The step ends when its longest path ends
#
# Let every op start as soon as all its predecessors have ended. Its earliest start and end are
#
# $$S_v = \max_{u \to v} E_u \quad (0 \text{ if } v \text{ has no predecessor}), \qquad
#   E_v = S_v + d_v,$$
#
# and the step time is the latest end, which is the length of the longest path:
#
# $$T = \max_v E_v = \max_{P} \sum_{v \in P} d_v,$$
#
# where $P$ runs over the paths from an op without predecessors (a source) to an op without
# successors (a sink). A longest path is a **critical path**: this is the critical path method
# of Kelley and Walker ("Critical-path planning and scheduling", 1959), made to schedule
# construction projects. One pass over the ops in topological order computes every $S_v$ and
# $E_v$; you write it in Exercise 2.
#
# Run the same recurrence backwards from $T$ and you get each op's latest start,
# $L_v = \min_{v \to w} L_w - d_v$ ($T - d_v$ for a sink), and its **slack** (CPM's *total float*)
#
# $$s_v = L_v - S_v = T - (\text{length of the longest path through } v):$$
#
# how much longer an op may take, or how much later it may start, before the step ends later.
# Critical ops have zero slack.

# %%
sched = schedule(g)  # earliest start and end, latest start and slack of every op
print(
    f"step time {step_time(g) / ms:.1f} ms; sum of all op durations {sum(durations.values()) / ms:.1f} ms"
)
print("critical path:", " → ".join(critical_path(g).ops))
slack_bars(sched, gantt(sched))
plt.show()

# %% [markdown]
# The orange bars are the critical path; arrows trace it where it hops lanes, and the hatched blue
# bars show how much later each other op may end. Notice what is *not* on the path: the
# all-reduces of buckets 4, 3 and 2 run under the backward pass of the layers below and are
# hidden. Only `allreduce_1` is **exposed**: the backward pass is over when it starts, and the
# optimizer waits for it. The step takes 40.2 ms although its ops add up to 50.7 ms.
#
# `allreduce_2` has only 1.5 ms of slack: if the network slows down, it is the first hidden
# all-reduce to become exposed. Slack is shared along a chain: if `allreduce_4` used its 4.5 ms,
# it would push `allreduce_3` and `allreduce_2` back too. And when two paths tie for longest,
# the ops of both have zero slack, yet shortening an op on only one of them saves nothing.
#
# **The same graph from a trace.** Holistic Trace Analysis (HTA), Meta's library for PyTorch
# profiler traces, builds this graph for one rank ("Lightweight Critical Path Analysis", HTA
# documentation): its nodes are the start and end of every CPU op, CUDA runtime call and GPU
# kernel, its edges carry durations and delays or are zero-weight dependencies. Merge each op's
# two nodes into one carrying its duration and you get this lesson's graph, with the same longest
# path ("Going further" lists HTA's edges).

# %% [markdown]
# ## 3. Speeding up an op helps only while it stays critical
#
# Change one op's duration $d$ and keep everything else. Every source-to-sink path either avoids
# the op, and its length does not depend on $d$, or passes through it and grows one for one with
# $d$. So
#
# $$T(d) = \max(A,\; B + d),$$
#
# where $A$ is the length of the longest path that avoids the op and $B$ the length of the longest
# path through it, minus its own duration. $T(d)$ is piecewise linear with one kink, at
# $d^* = A - B$: above it the op is critical and every millisecond cut saves a millisecond;
# below it another path sets the step time and cutting saves nothing. HTA's documentation says
# it in words: "Critical paths can shift if an operator is optimized beyond a point". Take
# `bwd_2`, measured at 5 ms.

# %%
A, B = path_bounds(g, "bwd_2")
print(f"A = {A / ms:.1f} ms, B = {B / ms:.1f} ms, kink d* = A - B = {(A - B) / ms:.1f} ms")
print(f"bwd_2 at 2.5 ms: step time {what_if(g, {'bwd_2': 2.5 * ms}) / ms:.1f} ms")
print(f"bwd_2 at 1.0 ms: step time {what_if(g, {'bwd_2': 1.0 * ms}) / ms:.1f} ms")
what_if_curve(g, "bwd_2")
plt.show()

# %% [markdown]
# Halving `bwd_2` saves the full 2.5 ms. Cutting it to 1 ms saves 3 ms, not 4: below 2 ms the
# path through the comm stream (`bwd_3` → `allreduce_3` → `allreduce_2` → `allreduce_1` →
# `optimizer`, $A$ = 37.2 ms) is the longest, and the curve is flat. From the measured duration,
# the most a cut can save is $T - A$ = 3 ms.

# %% [markdown]
# ## 4. "Top kernels by total time" is not a diagnosis
#
# The first table most profilers show — PyTorch's `prof.key_averages().table(sort_by=...)`,
# Nsight Systems' CUDA GPU kernel summary — ranks ops by the time they took. It answers "where did
# the device spend time", not "what would make the step shorter". Put the two rankings side by
# side: each op's duration, and the step time saved if that op alone ran twice as fast,
# $T(d) - T(d/2)$.

# %%
ranked = sorted(g, key=durations.get, reverse=True)
saved = [(step_time(g) - what_if(g, {op: durations[op] / 2})) / ms for op in ranked]
colours = [
    GANTT_CRITICAL_COLOUR if s == 0 else GANTT_OTHER_COLOUR
    for s in sched.set_index("op").loc[ranked, "slack"]
]
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.6), sharey=True, layout="constrained")
left.barh(ranked, [durations[op] / ms for op in ranked], color=colours, edgecolor="#555555")
right.barh(ranked, saved, color=colours, edgecolor="#555555")
left.invert_yaxis()
left.set(title="What the profiler table ranks: time per op", xlabel="duration (ms)")
right.set(title="What the step gains: op alone 2× faster", xlabel="step time saved (ms)")
for i, gain in enumerate(saved):
    if gain < 1e-9:
        right.text(0.03, i, "0: hidden, has slack", va="center", fontsize=8.5, color="#555555")
plt.show()

# %% [markdown]
# Orange ops are critical. The four backward kernels top the left chart, but they are not worth
# the same: `bwd_4`, `bwd_3` and `bwd_2` give 2.5 ms each, `bwd_1` only 1.5 ms, because
# `allreduce_1` also waits for `allreduce_2`, which ends only 1.5 ms before `bwd_1` does: the
# kink. Three all-reduces give exactly nothing; `allreduce_1` gives 2.25 ms. `load_batch`, ninth
# by time, gives 1.5 ms, yet no kernel table lists it. A per-op table sums ops that run at the
# same time (50.7 ms of op time in a 40.2 ms step), cannot tell a hidden op from an exposed one,
# and ignores the kink.

# %% [markdown]
# ## Explore
#
# Pick an op of this lesson's step and drag its duration (0 to 3× the measured value). Left: the
# Gantt chart, critical path in orange, your op outlined in blue, the step time now dashed and the
# measured 40.2 ms dotted. Right: $T(d)$ for your op, on the same scales for every op. Try:
#
# 1. `bwd_2` from 5 ms down to 0: the step falls one for one until the kink at 2 ms; below it the
#    orange path jumps to the comm stream and the step stays at 37.2 ms.
# 2. `allreduce_2` up: nothing happens until 5 ms (its slack is used up), then the step grows one
#    for one: a slower network exposes hidden communication.
# 3. `load_batch`: every path starts with it, so $T(d)$ has no kink.
# 4. `allreduce_4`: how slow must it get before it is exposed, and why so slow?

# %%
explorer = critical_path_explorer(durations, deps, lanes, op="bwd_2")
explorer

# %% [markdown]
# ## Exercises
#
# Answer in the cells marked `YOUR CODE HERE`, then run the grade cell below each: its visible
# checks give quick feedback; hidden tests check more when the notebook is graded. Times are in
# seconds (`ms` from the setup cell converts: `2.5 * ms`).
#
# ### Exercise 1 — Build the graph of a step (2 points)
#
# One rank runs this step; the setup cell holds its durations (`BUILD_DURATIONS`) and each lane's
# ops in the order they are issued (`BUILD_ORDER`):
#
# | lane | ops, in issue order |
# |---|---|
# | CPU thread | `load` (2 ms), `log` (1.5 ms) |
# | copy stream | `h2d` (1 ms) |
# | compute stream | `fwd` (4 ms), `bwd_2` (3 ms), `bwd_1` (3.5 ms), `opt` (1 ms) |
# | comm stream | `allreduce_2` (3 ms), `allreduce_1` (2 ms) |
#
# - `h2d` copies the batch that `load` produced, and the compute stream waits for the copy
#   before `fwd`.
# - `log` calls `loss.item()`: the CPU blocks until `fwd` has ended, prints, and only then
#   launches the backward kernels, so `bwd_2` cannot start before `log` ends.
# - `allreduce_k` reduces the gradients that `bwd_k` wrote; `opt` waits for `allreduce_1`.
#
# Set `build_deps` to a list of pairs `(u, v)`, meaning `v` cannot start before `u` ends, with
# every edge of the step. An edge implied by others does no harm: the grade compares which ops
# must end before which start.

# %% nbgrader={"grade": false, "grade_id": "build_deps_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
build_deps = stream_order_edges(BUILD_ORDER) + [
    ("load", "h2d"),  # data: the copy reads the batch
    ("h2d", "fwd"),  # sync: the compute stream waits for the copy
    ("fwd", "log"),  # sync: loss.item() waits for the forward pass
    ("log", "bwd_2"),  # the CPU launches the backward pass after logging
    ("bwd_2", "allreduce_2"),  # data: each bucket's gradients
    ("bwd_1", "allreduce_1"),
    ("allreduce_1", "opt"),  # sync: the optimizer waits for the last all-reduce
]
### END SOLUTION
built = step_graph(BUILD_DURATIONS, build_deps, BUILD_LANES)
print(f"your graph: step time {step_time(built) / ms:.1f} ms")
dependency_graph(built, title="Your graph of Exercise 1's step")
plt.show()

# %% nbgrader={"grade": true, "grade_id": "build_deps_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 1: build_deps, the dependencies of the step described above (a list of pairs)."""
check_type("build_deps", build_deps, list)
for _pair in build_deps:
    check_type(f"the entry {_pair!r} of build_deps", _pair, tuple, list)
    check_int(f"the number of ops in {_pair!r}", len(_pair), 2)
    for _op in _pair:
        check_type(f"{_op!r} in build_deps", _op, str)
_mentioned = {op for pair in build_deps for op in pair}
check_names(
    "build_deps: names that are not ops of the step", sorted(_mentioned - set(BUILD_DURATIONS)), ()
)
check_names(
    "ops that no pair mentions (each op here waits or is waited for)",
    sorted(set(BUILD_DURATIONS) - _mentioned),
    (),
)
_built = step_graph(BUILD_DURATIONS, [tuple(pair) for pair in build_deps], BUILD_LANES)  # no cycle
### BEGIN HIDDEN TESTS
_reference = stream_order_edges(BUILD_ORDER) + [
    ("load", "h2d"),
    ("h2d", "fwd"),
    ("fwd", "log"),
    ("log", "bwd_2"),
    ("bwd_2", "allreduce_2"),
    ("bwd_1", "allreduce_1"),
    ("allreduce_1", "opt"),
]
check_names(
    "build_deps: which op must end before which starts",
    [f"{u} → {v}" for u, v in sorted(orderings(_built))],
    [f"{u} → {v}" for u, v in sorted(orderings(step_graph(BUILD_DURATIONS, _reference)))],
)
### END HIDDEN TESTS
passed("Exercise 1")

# %% [markdown]
# ### Exercise 2 — Implement the longest path (3 points)
#
# Write `longest_path(durations, deps)` that returns `(length, path)`: the length in seconds of
# the longest source-to-sink path and that path as a list of op names, first op first.
# `durations` maps op name → seconds; `deps` lists pairs `(u, v)` as in Exercise 1. Ops that
# appear in no pair stand alone.
#
# - Visit the ops in a topological order (Kahn's algorithm: repeatedly take an op whose
#   predecessors are all done), computing $E_v = \max_{u \to v} E_u + d_v$ and remembering which
#   predecessor achieved the max. `collections` and `graphlib.TopologicalSorter` are allowed.
# - The path runs from a source to a sink. Zero-duration ops count: keep one that starts or ends
#   the path (the visible check has one at each end, the hidden tests more). The test graphs have
#   exactly one longest source-to-sink path; `durations` is not in topological order.
# - While your function runs, the grade cell disables `course_lib.graph` and networkx's longest-
#   and shortest-path routines. Enumerating paths will not finish: one hidden graph has over a
#   billion of them.


# %% nbgrader={"grade": false, "grade_id": "longest_path_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def longest_path(durations, deps):
    """Length (s) and ops of the longest source-to-sink path, by one pass in topological order."""
    ### BEGIN SOLUTION
    from collections import deque

    successors = {op: [] for op in durations}
    waiting = {op: 0 for op in durations}  # predecessors not yet done
    for u, v in deps:
        successors[u].append(v)
        waiting[v] += 1
    start = {op: 0.0 for op in durations}
    best_pred = {}
    end = {}
    ready = deque(op for op in durations if waiting[op] == 0)
    while ready:
        u = ready.popleft()
        end[u] = start[u] + durations[u]
        for v in successors[u]:
            if v not in best_pred or end[u] > start[v]:
                start[v] = end[u]
                best_pred[v] = u
            waiting[v] -= 1
            if waiting[v] == 0:
                ready.append(v)
    last = max((op for op in durations if not successors[op]), key=lambda op: end[op])
    path = [last]
    while path[-1] in best_pred:
        path.append(best_pred[path[-1]])
    return end[last], path[::-1]
    ### END SOLUTION


# %% [markdown]
# Before the grade cell, check your function against `course_lib` on 200 random step graphs
# (ops in a shuffled order):


# %%
def random_step(rng, num_ops):
    """A random DAG: durations 0.1-6 ms, each pair of ops linked with probability 0.3."""
    names = [f"op{i}" for i in range(num_ops)]
    topo = [str(n) for n in rng.permutation(names)]
    pairs = [(topo[i], topo[j]) for i in range(num_ops) for j in range(i + 1, num_ops)]
    deps = [pair for pair in pairs if rng.random() < 0.3]
    return {n: float(rng.uniform(0.1, 6.0)) * ms for n in names}, deps


for trial in range(200):
    durs, dps = random_step(rng, int(rng.integers(1, 12)))
    length, path = longest_path(durs, dps)
    reference = critical_path(step_graph(durs, dps))
    if abs(length - reference.length) > 1e-12 or list(path) != list(reference.ops):
        print(f"trial {trial} differs: durations {durs}, deps {dps}")
        print(f"  yours:     {length / ms:.3f} ms {list(path)}")
        print(f"  reference: {reference.length / ms:.3f} ms {list(reference.ops)}")
        break
else:
    print("longest_path agrees with course_lib on 200 random step graphs")

# %% nbgrader={"grade": true, "grade_id": "longest_path_tests", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
"""Exercise 2: longest_path(durations, deps) -> (length in s, path), without a library shortcut."""
import networkx as _nx

import course_lib.graph as _graph

_FORBIDDEN = [
    (_graph, name)
    for name in (
        "critical_path",
        "step_time",
        "schedule",
        "slack",
        "path_bounds",
        "step_time_curve",
        "useful_reduction",
        "speedup_gain",
        "what_if",
    )
] + [
    (_nx, name)
    for name in (
        "dag_longest_path",
        "dag_longest_path_length",
        "single_source_bellman_ford",
        "bellman_ford_predecessor_and_distance",
        "goldberg_radzik",
        "johnson",
        "floyd_warshall_predecessor_and_distance",
        "floyd_warshall_numpy",
    )
]

with forbid(*_FORBIDDEN, exercise="Exercise 2"):
    _small = longest_path(
        {"s": 0.0, "a": 1.0 * ms, "b": 2.0 * ms, "c": 3.0 * ms, "d": 1.0 * ms, "z": 0.0},
        [("s", "a"), ("a", "b"), ("a", "c"), ("b", "d"), ("c", "d"), ("d", "z")],
    )
check_type("longest_path(small)", _small, tuple)
check_float(
    "longest_path(small)[0], the length",
    _small[0],
    5.0 * ms,
    unit="s",
    known_wrong={
        7.0 * ms: "the sum of all durations",
        4.0 * ms: "the start of the last op with a duration, not its end",
    },
)
check_names("longest_path(small)[1], the path", _small[1], ("s", "a", "c", "d", "z"), ordered=True)
### BEGIN HIDDEN TESTS
# fmt: off
_CASES = [
    # (durations, deps, length, path, sum of all durations): seeded random DAGs whose expected
    # values come from course_lib.graph (each has exactly one longest source-to-sink path).
    (
        {"op0": 0.0028, "op1": 0.0047, "op2": 0.0022, "op3": 0.0037, "op4": 0.0047,
        "op5": 0.0056, "op6": 0.0026, "op7": 0.0003},
        [("op5", "op6"), ("op0", "op1"), ("op0", "op2"), ("op0", "op3"), ("op1", "op4"),
        ("op1", "op2"), ("op1", "op3"), ("op2", "op6"), ("op2", "op3"), ("op6", "op7")],
        0.0134, ["op0", "op1", "op2", "op3"], 0.0266,
    ),
    (
        {"op0": 0.0048, "op1": 0.0037, "op2": 0.001, "op3": 0.0007, "op4": 0.0006, "op5": 0.0002,
        "op6": 0.0052, "op7": 0.005, "op8": 0.0023, "op9": 0.0006, "op10": 0.0017},
        [("op2", "op0"), ("op2", "op9"), ("op2", "op5"), ("op0", "op10"), ("op9", "op5"),
        ("op9", "op6"), ("op9", "op3"), ("op5", "op6"), ("op5", "op3"), ("op5", "op4"),
        ("op4", "op8"), ("op4", "op1"), ("op8", "op1")],
        0.0084, ["op2", "op9", "op5", "op4", "op8", "op1"], 0.0258,
    ),
    (
        {"op0": 0.001, "op1": 0.0038, "op2": 0.0008, "op3": 0.0056, "op4": 0.0029, "op5": 0.0059,
        "op6": 0.0033, "op7": 0.0044, "op8": 0.0047, "op9": 0.003, "op10": 0.0024,
        "op11": 0.0041, "op12": 0.0002, "op13": 0.0038},
        [("op10", "op13"), ("op10", "op8"), ("op9", "op6"), ("op9", "op3"), ("op13", "op12"),
        ("op13", "op6"), ("op2", "op4"), ("op2", "op5"), ("op12", "op11"), ("op12", "op5"),
        ("op0", "op7"), ("op0", "op11"), ("op1", "op11"), ("op1", "op3"), ("op1", "op8"),
        ("op4", "op7"), ("op4", "op11"), ("op7", "op5"), ("op6", "op11"), ("op5", "op8")],
        0.0187, ["op2", "op4", "op7", "op5", "op8"], 0.0459,
    ),
    (
        {"op0": 0.0053, "op1": 0.0022, "op2": 0.0007, "op3": 0.0038, "op4": 0.0054,
        "op5": 0.0021, "op6": 0.0059, "op7": 0.0037, "op8": 0.005, "op9": 0.0051, "op10": 0.0022,
        "op11": 0.0003, "op12": 0.0039, "op13": 0.0057, "op14": 0.0047, "op15": 0.0041},
        [("op13", "op4"), ("op13", "op14"), ("op10", "op8"), ("op10", "op4"), ("op0", "op2"),
        ("op2", "op15"), ("op2", "op5"), ("op7", "op15"), ("op7", "op12"), ("op9", "op3"),
        ("op9", "op5"), ("op8", "op15"), ("op8", "op14"), ("op15", "op6"), ("op6", "op4"),
        ("op4", "op5")],
        0.0247, ["op10", "op8", "op15", "op6", "op4", "op5"], 0.0601,
    ),
    # edge cases: a single op; zero-duration ops at both ends and alone; two sources and
    # two sinks, where the heaviest source does not start the longest path
    (
        {"only": 0.004},
        [],
        0.004, ["only"], 0.004,
    ),
    (
        {"tail": 0.0, "idle": 0.0, "work": 0.003, "head": 0.0},
        [("head", "work"), ("work", "tail")],
        0.003, ["head", "work", "tail"], 0.003,
    ),
    (
        {"s1": 0.005, "s2": 0.001, "x": 0.001, "y": 0.008, "t1": 0.001, "t2": 0.0015},
        [("s1", "x"), ("s2", "x"), ("s2", "y"), ("x", "t1"), ("y", "t2")],
        0.0105, ["s2", "y", "t2"], 0.0175,
    ),
]
# fmt: on
# A ladder of 30 rungs (2**30 source-to-sink paths): start, then per rung two parallel ops a_k,
# b_k joined by j_k. The longest path takes the longer op of every rung: 42.5 ms.
_ladder, _ladder_deps, _ladder_path, _prev = {"start": 0.5 * ms}, [], ["start"], "start"
for _k in range(30):
    _ladder[f"a{_k}"] = (1.0 + 0.1 * (_k % 3)) * ms
    _ladder[f"b{_k}"] = (1.05 + 0.1 * ((_k + 1) % 3)) * ms
    _ladder[f"j{_k}"] = 0.2 * ms
    _ladder_deps += [
        (_prev, f"a{_k}"),
        (_prev, f"b{_k}"),
        (f"a{_k}", f"j{_k}"),
        (f"b{_k}", f"j{_k}"),
    ]
    _ladder_path += [f"a{_k}" if _ladder[f"a{_k}"] > _ladder[f"b{_k}"] else f"b{_k}", f"j{_k}"]
    _prev = f"j{_k}"
_CASES.append((_ladder, _ladder_deps, 42.5 * ms, _ladder_path, 74.0 * ms))

with forbid(*_FORBIDDEN, exercise="Exercise 2 (hidden cases)"):
    _answers = [longest_path(dict(_durs), list(_deps)) for _durs, _deps, *_ in _CASES]
for _i, (_got, (_durs, _deps, _length, _path, _total)) in enumerate(
    zip(_answers, _CASES, strict=True)
):
    check_type(f"case {_i}: longest_path(...)", _got, tuple)
    check_float(
        f"case {_i}: length",
        _got[0],
        _length,
        unit="s",
        known_wrong={
            _total: "the sum of all durations",
            _length - _durs[_path[-1]]: "the path without its last op's duration",
        },
    )
    check_names(f"case {_i}: path", _got[1], tuple(_path), ordered=True)
### END HIDDEN TESTS
passed("Exercise 2")

# %% [markdown]
# ### The step of Exercises 3–5
#
# Two data-parallel ranks train the same model; NCCL all-reduces their gradients in two buckets.
# An all-reduce is a collective: it starts only when **both** ranks have produced the bucket's
# gradients. Two things go wrong in this step:
#
# - rank 1's data loader stalls on a slow read: `load_r1` takes 6 ms, `load_r0` 1 ms;
# - rank 0 logs the loss every step with `loss.item()`, a host sync: the CPU waits for the
#   forward pass, spends 1.5 ms on the log line (`log_r0`), and only then launches the backward
#   pass.
#
# The setup cell builds its graph, `EX_GRAPH`, from `EX_DURATIONS` and `EX_DEPS`. The step ends
# when the last op of either rank ends.

# %%
dependency_graph(
    EX_GRAPH,
    kinds={e: "data" for e in EX_DATA}
    | {e: "sync" for e in EX_SYNC}
    | {e: "launch" for e in EX_LAUNCH},
    lane_order=["rank 0 CPU", "rank 0 GPU", "NCCL (both ranks)", "rank 1 GPU", "rank 1 CPU"],
    title="The step of Exercises 3–5: two ranks, two gradient buckets",
)
plt.show()

# %% [markdown]
# ### Exercise 3 — Which ops are worth speeding up? (2 points)
#
# Take each op of `EX_GRAPH` on its own: it runs twice as fast, everything else stays as
# measured. Which ops make the step shorter? Set `faster_ops` to the set of their names.

# %% nbgrader={"grade": false, "grade_id": "faster_ops_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
faster_ops = {
    op
    for op, d in EX_DURATIONS.items()
    if what_if(EX_GRAPH, {op: d / 2}) < step_time(EX_GRAPH) - 1e-12
}
### END SOLUTION
print(sorted(faster_ops))

# %% nbgrader={"grade": true, "grade_id": "faster_ops_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 3: the set of ops that, each made 2x faster on its own, shorten the step."""
check_type("faster_ops", faster_ops, set, frozenset)
check_names(
    "faster_ops: names that are not ops of the step",
    sorted(set(faster_ops) - set(EX_DURATIONS)),
    (),
)
### BEGIN HIDDEN TESTS
check_names("faster_ops", faster_ops, ("load_r1", "fwd_r1", "bwd2_r1", "bwd1_r1", "allreduce_1"))
### END HIDDEN TESTS
passed("Exercise 3")

# %% [markdown]
# ### Exercise 4 — The gain when the path shifts (1 point)
#
# `bwd1_r1`, rank 1's backward pass for bucket 1 (5 ms), gets twice as fast; nothing else
# changes. By how much does the step time drop? Set `gain_bwd1_r1` to it, a float in seconds.
# Guess first from the figure, then find which path takes over.

# %% nbgrader={"grade": false, "grade_id": "gain_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
gain_bwd1_r1 = step_time(EX_GRAPH) - what_if(EX_GRAPH, {"bwd1_r1": 2.5 * ms})
### END SOLUTION
print(f"gain_bwd1_r1 = {gain_bwd1_r1 / ms:.2f} ms")

# %% nbgrader={"grade": true, "grade_id": "gain_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 4: step time saved when bwd1_r1 runs 2x faster, in seconds."""
check_range(
    "gain_bwd1_r1",
    gain_bwd1_r1,
    0.0,
    2.5 * ms,
    what="seconds; halving a 5 ms op saves between 0 and 2.5 ms",
)
### BEGIN HIDDEN TESTS
check_float(
    "gain_bwd1_r1",
    gain_bwd1_r1,
    1.0 * ms,
    unit="s",
    known_wrong={
        2.5 * ms: "half of bwd1_r1's duration, as if it stayed critical all the way down",
        3.5 * ms: "the gap to rank 0's path, but allreduce_2 takes over first",
        0.0: "no gain, but bwd1_r1 is on the critical path",
    },
)
### END HIDDEN TESTS
passed("Exercise 4")

# %% [markdown]
# ### Exercise 5 — How far does fixing the input stall go? (2 points)
#
# You speed up rank 1's data loader (`load_r1`, 6 ms). What is the largest reduction of its
# duration for which every millisecond cut still saves a millisecond of step time — the cut at
# which another path becomes critical? Set `useful_cut_load_r1` to it, a float in seconds.

# %% nbgrader={"grade": false, "grade_id": "useful_cut_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
A_load_r1 = path_bounds(EX_GRAPH, "load_r1")[0]  # the longest path avoiding load_r1
useful_cut_load_r1 = step_time(EX_GRAPH) - A_load_r1  # load_r1 is critical: T - A
### END SOLUTION
print(f"useful_cut_load_r1 = {useful_cut_load_r1 / ms:.2f} ms")

# %% nbgrader={"grade": true, "grade_id": "useful_cut_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 5: the useful reduction of load_r1's duration, in seconds."""
check_range("useful_cut_load_r1", useful_cut_load_r1, 0.0, 6.0 * ms, what="seconds, 0 to 6 ms")
### BEGIN HIDDEN TESTS
check_float(
    "useful_cut_load_r1",
    useful_cut_load_r1,
    3.5 * ms,
    unit="s",
    known_wrong={
        6.0 * ms: "load_r1's whole duration, as if the loader were the only thing in the way",
        3.0 * ms: "the gain from halving load_r1, which stops before the kink",
        5.0 * ms: "the difference of the two loaders, but rank 0's host sync (log_r0) delays "
        "rank 0 by 1.5 ms too",
        2.5 * ms: "the duration at the kink, d* = A − B, not the cut that reaches it",
        4.5 * ms: "the gap to rank 0's path through allreduce_2, but rank 0's path through "
        "allreduce_1 is longer",
        1.0 * ms: "the smallest slack in the step (allreduce_2's), which grows as load_r1 shrinks",
    },
)
### END HIDDEN TESTS
passed("Exercise 5")

# %% [markdown]
# ### Explained answer — Why a per-kernel time table misleads (2 points, graded by hand)
#
# A colleague profiles this step on both ranks and sorts the ops by time: `fwd_r0`, `fwd_r1` and
# `load_r1` (6 ms each) come first, then the four backward ops (5 ms each). They propose to fuse
# the forward kernels, which makes the forward pass twice as fast on both ranks, and to drop the
# logging on rank 0 "because it stalls the GPU". In 4–6 sentences: what does each change gain
# (compute it), why does the sorted table mislead, and what would you look at instead?

# %% [markdown] nbgrader={"grade": true, "grade_id": "explain_kernel_table", "locked": false, "points": 2, "schema_version": 3, "solution": true, "task": false}
# **Model answer.** Fusing the forward kernels saves 3 ms (28 → 25 ms), and only because rank 1's
# forward is critical: halving rank 0's forward alone saves nothing, since rank 0's ops have
# 3.5 ms of slack. Dropping the log on rank 0 saves nothing either, for the same reason: rank 1
# waits longer for its input. The table misleads because it ranks ops by their own time, adds up
# ops that run at the same time on different ranks and streams (52.5 ms of op time in a 28 ms
# step), and cannot tell a hidden op (`allreduce_2`, 4 ms, zero gain) from an exposed one, nor see
# ties (`opt_r0` and `opt_r1`). Instead, take the critical path, each op's slack and what-if step
# times: fixing rank 1's loader saves 3.5 ms, after which rank 0's path is critical and dropping
# the log saves 1.5 ms more — 5 ms for both, more than the two alone.
#
# **Rubric (2 points).** 1 point: a correct gain for at least one change with the reason (critical
# or not, slack). 1 point: a correct reason the table misleads (overlap/parallel ops summed,
# hidden vs exposed, or path shift/tie) and the alternative (critical path, slack, what-if).

# %% [markdown]
# ## Takeaways
#
# - A training step is a DAG of ops whose edges are data dependencies, stream order and
#   synchronisation; its time is the longest path — not the sum of op times, not the busiest
#   stream's total.
# - An op's slack, $T$ minus the longest path through it, is how much it can grow for free.
# - Cutting an op's duration $d$ gives $T(d) = \max(A, B + d)$: one for one down to the kink
#   $d^* = A - B$, then nothing. When two paths tie, an op on only one of them gains nothing.
# - Gains do not add up: fix one bottleneck and the next path takes over.
# - The trap: reading "top kernels by total time" as a to-do list. Ask what the step waits for —
#   the critical path — before you optimise anything.

# %% [markdown]
# ## Going further (optional, ungraded)
#
# **HTA's graph, edge by edge** (`hta/analyzers/critical_path_analysis.py`). Nodes are the start
# and end of each CPU op, CUDA runtime call and GPU kernel:
#
# | HTA edge | weight | here |
# |---|---|---|
# | start → end of a kernel; inside a CPU op, its start and end and those of the ops nested in it, in time order | the time between the nodes | an op with its duration |
# | a top-level CPU op → the next one on its thread | 0 | stream order on a CPU lane |
# | kernel launch delay: from the **start** of the launch call (`cudaLaunchKernel`) to the kernel's start, only when no other kernel is queued on the stream | that delay | a launch edge |
# | kernel → next kernel on the same stream | the gap between them | stream order on a GPU lane |
# | a device or stream sync waits for the last kernel of every stream or of one (the blocking call's own time gets weight 0); `cudaStreamWaitEvent` links kernels on two streams | 0 | a synchronisation edge |
#
# Two consequences. HTA's launch-delay edge includes the launch call's own duration, while
# cost02's queue delay (like HTA's kernel launch statistics) starts at the call's **end**. And a
# real delay becomes a small op of its own when you merge HTA's nodes into ours.
#
# HTA assumes every CPU op depends on the previous one on its thread and finds no data
# dependencies between ops; its documentation leaves tensor data dependencies and a multi-rank
# critical path out of this first version. A hand-built graph like ours can state both.
#
# **Many fixes at once.** Make all four backward kernels of §1 twice as fast and 10 ms of
# critical-path work disappears, yet the step gets only 7 ms faster: the comm stream becomes the
# critical path (`what_if(g, {f"bwd_{k}": 2.5 * ms for k in (1, 2, 3, 4)})`).
