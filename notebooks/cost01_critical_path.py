# %% [markdown]
# # cost01 · A training step ends when its longest required dependency path ends
#
# **Objective.** Construct an execution dependency graph and identify which duration changes can
# actually reduce completed training-step time.
#
# **Time:** 30 min · **Level:** advanced
#
# You will be able to
# - build the dependency graph of a training step from its ops and three kinds of edges: data
#   dependencies, stream order and synchronisation;
# - compute the step time as the longest path, and find the critical path and each op's slack;
# - predict what cutting one op's duration buys, $T(d) = \max(A, B + d)$, and where that stops
#   paying;
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
    schedule,
    step_graph,
    step_time,
    stream_order_edges,
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

# %% [markdown]
# ## 1. Ops and dependencies form a DAG
#
# A training step is a set of **ops** — CPU ops, host-to-device copies, GPU kernels, collectives,
# data loading — each with a **duration** $d_v$ in seconds. An edge $u \to v$ says that $v$
# cannot start before $u$ ends. Edges come from three places:
#
# - **data dependency:** $v$ reads what $u$ writes (the forward pass reads the copied batch);
# - **stream order:** a CUDA stream, like a CPU thread, runs its ops one at a time in the order
#   they were issued;
# - **synchronisation:** a stream or the host waits for another (`cudaStreamWaitEvent` before the
#   optimizer reads all-reduced gradients; `loss.item()` blocking the CPU until the loss exists).
#
# Time only runs forward, so the graph is a directed acyclic graph (DAG). Here is one
# data-parallel step of a 4-layer model on one rank (synthetic durations of a realistic size): a
# batch is loaded and copied to the GPU, four forward and four backward kernels run on the
# compute stream, and each layer's gradients are all-reduced on a communication stream while the
# backward pass continues.

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
# of Kelley and Walker ("Critical-path planning and scheduling", 1959). One pass over the ops in
# topological order computes every $E_v$; you write it in Exercise 2.
#
# Run the same recurrence backwards from $T$ and you get each op's latest start,
# $L_v = \min_{v \to w} L_w - d_v$ ($T - d_v$ for a sink), and its **slack** (CPM's *total float*)
#
# $$s_v = L_v - S_v = T - (\text{length of the longest path through } v):$$
#
# how much longer an op may take before the step ends later. Critical ops have zero slack.

# %%
sched = schedule(g)  # earliest start and end, latest start and slack of every op
print(
    f"step time {step_time(g) / ms:.1f} ms; sum of all op durations {sum(durations.values()) / ms:.1f} ms"
)
print("critical path:", " → ".join(critical_path(g).ops))
slack_bars(sched, gantt(sched))
plt.show()

# %% [markdown]
# The orange bars are the critical path; the hatched blue bars show how much later each other op
# may end. Notice what is *not* on the path: the all-reduces of buckets 4, 3 and 2 run under the
# backward pass of the layers below and are hidden. Only `allreduce_1` is **exposed**: the
# backward pass is over when it starts, and the optimizer waits for it. The step takes 40.2 ms
# although its ops add up to 50.7 ms. When two paths tie for longest, the ops of both have zero
# slack, yet shortening an op on only one of them saves nothing.
#
# Holistic Trace Analysis (HTA), Meta's library for PyTorch profiler traces, builds this graph
# from one rank's trace ("Lightweight Critical Path Analysis", HTA documentation), with a node at
# the start and end of every CPU op, runtime call and kernel; "Going further" maps its edges to
# ours.

# %% [markdown]
# ## 3. Speeding up an op helps only while it stays critical
#
# Change one op's duration $d$ and keep everything else. A path either avoids the op, and its
# length does not depend on $d$, or passes through it and grows one for one with $d$. So
#
# $$T(d) = \max(A,\; B + d),$$
#
# where $A$ is the length of the longest path that avoids the op and $B$ that of the longest path
# through it, minus its own duration. $T(d)$ has one kink, at $d^* = A - B$: above it every
# millisecond cut saves a millisecond; below it another path sets the step time. HTA's
# documentation says it in words: "Critical paths can shift if an operator is optimized beyond a
# point". Take `bwd_2`, measured at 5 ms.

# %%
from course_lib.graph import path_bounds, what_if  # (A, B) of one op; step time with new durations

A, B = path_bounds(g, "bwd_2")
print(f"A = {A / ms:.1f} ms, B = {B / ms:.1f} ms, kink d* = A - B = {(A - B) / ms:.1f} ms")
print(f"bwd_2 at 2.5 ms: step time {what_if(g, {'bwd_2': 2.5 * ms}) / ms:.1f} ms")
print(f"bwd_2 at 1.0 ms: step time {what_if(g, {'bwd_2': 1.0 * ms}) / ms:.1f} ms")
what_if_curve(g, "bwd_2")
plt.show()

# %% [markdown]
# Halving `bwd_2` saves the full 2.5 ms. Cutting it to 1 ms saves 3 ms, not 4: below 2 ms the
# path through the comm stream (`bwd_3` → `allreduce_3` → `allreduce_2` → `allreduce_1` →
# `optimizer`, $A$ = 37.2 ms) is the longest, and the curve is flat.

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
# Orange ops are critical. The four backward kernels top the left chart, but `bwd_1` gives only
# 1.5 ms where the others give 2.5 ms: its kink is at 3.5 ms. Three all-reduces give nothing;
# `allreduce_1` gives 2.25 ms. `load_batch`, ninth by time, gives 1.5 ms, yet no kernel table lists it. A per-op
# table sums ops that run at the same time, cannot tell a hidden op from an exposed one, and
# ignores the kink.

# %% [markdown]
# ## Explore
#
# Pick an op and drag its duration (0 to 3× the measured value). Left: the Gantt chart, critical
# path in orange, your op outlined in blue. Right: $T(d)$ for your op. Try:
#
# 1. `bwd_2` from 5 ms down to 0: the step falls one for one until the kink at 2 ms; below it the
#    orange path jumps to the comm stream.
# 2. `allreduce_2` up: nothing happens until 5 ms (its slack is used up), then the step grows one
#    for one: a slower network exposes hidden communication.

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
# One rank runs this loop body; each comment names the op, its lane and its duration
# (`BUILD_ORDER` in the setup cell lists each lane's ops in issue order):
#
# ```python
# batch = next(loader)                          # load         CPU thread      2 ms
# batch = batch.to("cuda", non_blocking=True)   # h2d          copy stream     1 ms
# loss = model(batch)                           # fwd          compute stream  4 ms
# print(f"loss {loss.item():.3f}")              # log          CPU thread      1.5 ms
# loss.backward()                               # bwd_2, bwd_1 compute stream  3 ms, 3.5 ms
# optimizer.step()                              # opt          compute stream  1 ms
# ```
#
# - The CPU runs each line once the previous one has returned, and no copy or kernel starts
#   before the CPU has issued it. `loss.item()` returns only once the loss is on the host.
# - `fwd` reads the batch that `h2d` copies.
# - DDP reduces the gradients each backward kernel writes, on the comm stream: `allreduce_2`
#   (3 ms) those of `bwd_2`, `allreduce_1` (2 ms) those of `bwd_1`. `opt` reads the reduced
#   gradients.
#
# Set `build_deps` to the pairs `(u, v)`, meaning `v` cannot start before `u` ends, of every
# dependency of the step. An edge implied by others does no harm: the grade compares which ops
# must end before which start.

# %% nbgrader={"grade": false, "grade_id": "build_deps_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
build_deps = stream_order_edges(BUILD_ORDER) + [
    ("load", "h2d"),  # the CPU issues the copy after load returns; the copy reads the batch
    ("h2d", "fwd"),  # data: the forward pass reads the copied batch
    ("fwd", "log"),  # sync: loss.item() waits for the forward pass
    ("log", "bwd_2"),  # launch: the CPU calls loss.backward() after logging
    ("bwd_2", "allreduce_2"),  # data: each bucket's gradients
    ("bwd_1", "allreduce_1"),
    ("allreduce_1", "opt"),  # sync: the optimizer reads the reduced gradients
]
### END SOLUTION
built = step_graph(BUILD_DURATIONS, build_deps, BUILD_LANES)
print(f"your graph: step time {step_time(built) / ms:.1f} ms")
dependency_graph(built, title="Your graph of Exercise 1's step")
plt.show()

# %% nbgrader={"grade": true, "grade_id": "build_deps_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 1: build_deps, the dependencies of the step described above (pairs of op names)."""
check_type("build_deps", build_deps, list, tuple, set, frozenset)
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
# Complete `longest_path(durations, deps)`, which returns `(length, path)`: the length in seconds
# of the longest source-to-sink path and that path as a list of op names, first op first.
# `durations` maps op name → seconds; `deps` lists pairs `(u, v)` as in Exercise 1; an op in no
# pair stands alone. The cell gives you each op's predecessors and a topological order:
#
# - in that order, compute $E_v = \max_{u \to v} E_u + d_v$ and remember which predecessor
#   achieved the max;
# - end the path at the sink that ends last and walk the remembered predecessors back.
#   Zero-duration ops count: the visible check has one at each end of the path, the hidden tests
#   more.
#
# The test graphs have exactly one longest path. Two grade cells score the length (2 points) and
# the path (1 point); they disable `course_lib.graph` and networkx's path and flow routines while
# your function runs. Enumerating paths will not finish: one hidden graph has over a billion.


# %% nbgrader={"grade": false, "grade_id": "longest_path_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
import graphlib


def longest_path(durations, deps):
    """Length (s) and ops of the longest source-to-sink path, by one pass in topological order."""
    preds = {op: [] for op in durations}
    for u, v in deps:
        preds[v].append(u)
    topological = list(graphlib.TopologicalSorter(preds).static_order())  # predecessors first
    ### BEGIN SOLUTION
    end, best_pred = {}, {}
    for v in topological:
        best_pred[v] = max(preds[v], key=end.get, default=None)
        end[v] = (0.0 if best_pred[v] is None else end[best_pred[v]]) + durations[v]
    has_successor = {u for u, _ in deps}
    last = max((v for v in topological if v not in has_successor), key=end.get)
    path = [last]
    while best_pred[path[-1]] is not None:
        path.append(best_pred[path[-1]])
    return end[last], path[::-1]
    ### END SOLUTION


# %% [markdown]
# Before the grade cells, check your function against `course_lib` on 200 random step graphs:


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

# %% nbgrader={"grade": true, "grade_id": "longest_path_length_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 2, the length: longest_path(durations, deps)[0] in seconds, without a library shortcut."""
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
    (_nx, name)  # longest and shortest paths, and min-cost flow (a longest path as a flow)
    for name in (
        "dag_longest_path",
        "dag_longest_path_length",
        "single_source_bellman_ford",
        "bellman_ford_predecessor_and_distance",
        "goldberg_radzik",
        "johnson",
        "floyd_warshall_predecessor_and_distance",
        "floyd_warshall_numpy",
        "single_source_dijkstra",
        "bidirectional_dijkstra",
        "astar_path",
        "network_simplex",
        "capacity_scaling",
    )
]

with forbid(*_FORBIDDEN, exercise="Exercise 2"):
    _small = longest_path(
        {"s": 0.0, "a": 1.0 * ms, "b": 2.0 * ms, "c": 3.0 * ms, "d": 1.0 * ms, "z": 0.0},
        [("s", "a"), ("a", "b"), ("a", "c"), ("b", "d"), ("c", "d"), ("d", "z")],
    )
check_type("longest_path(small)", _small, tuple, list)
check_int("the number of items longest_path(small) returns", len(_small), 2)
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
    check_type(f"case {_i}: longest_path(...)", _got, tuple, list)
    check_int(f"case {_i}: the number of items longest_path returns", len(_got), 2)
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
### END HIDDEN TESTS
passed("Exercise 2 (length)")

# %% nbgrader={"grade": true, "grade_id": "longest_path_path_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 2, the path: longest_path(durations, deps)[1], first op first, without a library shortcut."""
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
    (_nx, name)  # longest and shortest paths, and min-cost flow (a longest path as a flow)
    for name in (
        "dag_longest_path",
        "dag_longest_path_length",
        "single_source_bellman_ford",
        "bellman_ford_predecessor_and_distance",
        "goldberg_radzik",
        "johnson",
        "floyd_warshall_predecessor_and_distance",
        "floyd_warshall_numpy",
        "single_source_dijkstra",
        "bidirectional_dijkstra",
        "astar_path",
        "network_simplex",
        "capacity_scaling",
    )
]

with forbid(*_FORBIDDEN, exercise="Exercise 2"):
    _small = longest_path(
        {"s": 0.0, "a": 1.0 * ms, "b": 2.0 * ms, "c": 3.0 * ms, "d": 1.0 * ms, "z": 0.0},
        [("s", "a"), ("a", "b"), ("a", "c"), ("b", "d"), ("c", "d"), ("d", "z")],
    )
check_type("longest_path(small)", _small, tuple, list)
check_int("the number of items longest_path(small) returns", len(_small), 2)
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
    check_type(f"case {_i}: longest_path(...)", _got, tuple, list)
    check_int(f"case {_i}: the number of items longest_path returns", len(_got), 2)
    check_names(f"case {_i}: path", _got[1], tuple(_path), ordered=True)
### END HIDDEN TESTS
passed("Exercise 2 (path)")

# %% [markdown]
# ### Exercise 3 — How much of a cut pays (3 points)
#
# Write `useful_cut(durations, deps, op)`: the largest reduction of `op`'s duration, in seconds,
# for which every millisecond cut still saves a millisecond of step time. Any cut up to it saves
# exactly its size; a larger cut saves no more. `durations` and `deps` are as in Exercise 2.
#
# Think with $T(d) = \max(A, B + d)$ before you code. You may call `step_graph` and `step_time`
# (or your `longest_path`); the grade cell disables the course_lib routines that compute a cut or
# a gain. The hidden tests use random step graphs and, among others, an op with slack, an op on
# one of two tied longest paths, an op on every path and a zero-duration op. Answers count to
# within 10 µs.


# %% nbgrader={"grade": false, "grade_id": "useful_cut_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def useful_cut(durations, deps, op):
    """The largest cut of op's duration (s) that still saves step time one for one."""
    ### BEGIN SOLUTION
    # T(d) = max(A, B + d) has slope 1 above the kink and 0 below it, so every cut that pays
    # adds up to T(d) - T(0): the step time now minus the step time with the op taking no time.
    now = step_time(step_graph(durations, deps))
    without = step_time(step_graph({**durations, op: 0.0}, deps))
    return now - without
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "useful_cut_tests", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
"""Exercise 3: useful_cut(durations, deps, op) in seconds, on hidden step graphs (within 10 us)."""
import course_lib.graph as _graph

_NO_SHORTCUT = [(_graph, "useful_reduction"), (_graph, "speedup_gain")]
with forbid(*_NO_SHORTCUT, exercise="Exercise 3"):
    _cut = useful_cut(
        {"s": 1.0 * ms, "x": 4.0 * ms, "y": 3.0 * ms, "z": 1.0 * ms},
        [("s", "x"), ("x", "z"), ("s", "y"), ("y", "z")],
        "x",
    )
check_float(
    "useful_cut(small, 'x')",
    _cut,
    1.0 * ms,
    rtol=0.0,
    atol=10e-6,
    unit="s",
    known_wrong={
        4.0 * ms: "x's whole duration, as if x stayed critical all the way down",
        3.0 * ms: "the duration at the kink, d* = A − B, not the cut that reaches it",
        1.0: "the right cut, but in milliseconds",
    },
)
### BEGIN HIDDEN TESTS
# fmt: off
_CUT_CASES = [
    # (durations, deps, op, useful cut): hand-made cases, then seeded random DAGs; the expected
    # values come from course_lib.graph.useful_reduction and equal T(d) - T(0).
    # two tied paths: a is critical (zero slack) but the path through b still takes T
    (
        {"s": 0.001, "a": 0.003, "b": 0.003, "z": 0.001},
        [("s", "a"), ("a", "z"), ("s", "b"), ("b", "z")],
        "a", 0.0,
    ),
    # every path through p goes through op, and p -> op -> x stays longest at d = 0: all of it pays
    (
        {"p": 0.002, "op": 0.001, "x": 0.005, "y": 0.003},
        [("p", "op"), ("op", "x")],
        "op", 0.001,
    ),
    # a zero-duration op (a sync point) on the critical path: nothing to cut
    (
        {"a": 0.002, "sync": 0.0, "b": 0.002, "c": 0.001},
        [("a", "sync"), ("sync", "b")],
        "sync", 0.0,
    ),
    (
        {"op0": 0.0027, "op1": 0.0053, "op2": 0.0014, "op3": 0.0031, "op4": 0.0053, "op5": 0.0004,
        "op6": 0.0033, "op7": 0.0056, "op8": 0.0047},
        [("op4", "op1"), ("op4", "op2"), ("op4", "op7"), ("op4", "op8"), ("op4", "op3"),
        ("op4", "op5"), ("op1", "op2"), ("op1", "op7"), ("op1", "op5"), ("op6", "op7"),
        ("op6", "op8"), ("op7", "op5"), ("op8", "op5")],
        "op7", 0.0046,
    ),
    (
        {"op0": 0.0031, "op1": 0.0036, "op2": 0.0058, "op3": 0.001, "op4": 0.0003, "op5": 0.0045,
        "op6": 0.0022, "op7": 0.0007},
        [("op2", "op0"), ("op7", "op0"), ("op7", "op6"), ("op3", "op0"), ("op3", "op1"),
        ("op4", "op5"), ("op5", "op6"), ("op0", "op1"), ("op6", "op1")],
        "op0", 0.0019,
    ),
    (
        {"op0": 0.0004, "op1": 0.0005, "op2": 0.0044, "op3": 0.0007, "op4": 0.0021, "op5": 0.0016,
        "op6": 0.0019, "op7": 0.0039, "op8": 0.0027, "op9": 0.0051},
        [("op2", "op4"), ("op2", "op7"), ("op3", "op1"), ("op3", "op6"), ("op3", "op8"),
        ("op3", "op9"), ("op1", "op0"), ("op1", "op4"), ("op1", "op7"), ("op1", "op6"),
        ("op1", "op5"), ("op0", "op4"), ("op0", "op6"), ("op0", "op5"), ("op0", "op9"),
        ("op4", "op7"), ("op7", "op5"), ("op6", "op9"), ("op5", "op9")],
        "op2", 0.0028,
    ),
    (
        {"op0": 0.0015, "op1": 0.0013, "op2": 0.0048, "op3": 0.0045, "op4": 0.0023, "op5": 0.0004,
        "op6": 0.0006, "op7": 0.0031, "op8": 0.0046, "op9": 0.0056, "op10": 0.0015},
        [("op1", "op2"), ("op1", "op10"), ("op1", "op0"), ("op1", "op5"), ("op1", "op6"),
        ("op2", "op3"), ("op2", "op7"), ("op2", "op0"), ("op2", "op5"), ("op2", "op9"),
        ("op2", "op4"), ("op2", "op6"), ("op3", "op10"), ("op3", "op5"), ("op7", "op6"),
        ("op10", "op0"), ("op10", "op9"), ("op10", "op4"), ("op0", "op5"), ("op0", "op9"),
        ("op5", "op4"), ("op9", "op6")],
        "op3", 0.0045,
    ),
    (
        {"op0": 0.0027, "op1": 0.0035, "op2": 0.0008, "op3": 0.0009, "op4": 0.0002, "op5": 0.0056,
        "op6": 0.0022, "op7": 0.0017, "op8": 0.006, "op9": 0.0021, "op10": 0.0038, "op11": 0.001},
        [("op10", "op0"), ("op10", "op9"), ("op10", "op2"), ("op10", "op6"), ("op10", "op5"),
        ("op8", "op1"), ("op8", "op11"), ("op8", "op4"), ("op8", "op2"), ("op8", "op6"),
        ("op1", "op11"), ("op11", "op0"), ("op11", "op4"), ("op11", "op2"), ("op11", "op3"),
        ("op9", "op4"), ("op9", "op6"), ("op4", "op2"), ("op4", "op3"), ("op4", "op7"),
        ("op3", "op6"), ("op7", "op5")],
        "op0", 0.0,
    ),
]
# fmt: on
with forbid(*_NO_SHORTCUT, exercise="Exercise 3 (hidden cases)"):
    _cuts = [useful_cut(dict(_durs), list(_deps), _op) for _durs, _deps, _op, _ in _CUT_CASES]
for _i, (_got, (_durs, _deps, _op, _expected)) in enumerate(zip(_cuts, _CUT_CASES, strict=True)):
    check_float(
        f"case {_i}: useful_cut(..., {_op!r})",
        _got,
        _expected,
        rtol=0.0,
        atol=10e-6,
        unit="s",
        known_wrong={_durs[_op]: f"{_op}'s whole duration"} if _durs[_op] != _expected else {},
    )
### END HIDDEN TESTS
passed("Exercise 3")

# %% [markdown]
# ### Explained answer — Why a per-kernel time table misleads (2 points, graded by hand)
#
# A colleague reads §1's step as a profiler table: the four backward kernels are its top four
# ops, 20 ms in all, so a fused backward pass twice as fast "saves 10 ms". Compute what it saves
# (`what_if(g, ...)` from §3). In 3–4 sentences: why is it neither 10 ms nor the 9 ms that §4's
# chart adds up to, why does the sorted table mislead, and what would you look at instead?

# %% [markdown] nbgrader={"grade": true, "grade_id": "explain_kernel_table", "locked": false, "points": 2, "schema_version": 3, "solution": true, "task": false}
# **Model answer.** It saves 7 ms (40.2 → 33.2 ms). With every backward kernel at 2.5 ms the
# backward pass ends at 24.2 ms, but the four all-reduces still run one after another on the comm
# stream until 31.7 ms, so the path `bwd_4` → `allreduce_4` → `allreduce_3` → `allreduce_2` →
# `allreduce_1` → `optimizer` becomes critical and `bwd_3`, `bwd_2`, `bwd_1` now have slack
# (1, 2 and 3 ms). §4's gains (2.5 + 2.5 + 2.5 + 1.5 = 9 ms) were each measured with the other ops
# unchanged, and gains do not add once the critical path moves. The table ranks ops by their own
# time, adds up work that overlaps (50.7 ms of op time in a 40.2 ms step) and cannot tell a hidden
# op from an exposed one or foresee the shift. Instead, look at the critical path and each op's
# slack, and compute the combined what-if: after this change, the next thing to fix is the
# communication.
#
# **Rubric (2 points).** 1 point: 7 ms with the reason (the comm-stream path takes over; the
# kink, gains do not add). 1 point: a correct reason the table misleads (overlapping ops summed,
# hidden vs exposed, path shift) and the alternative (critical path, slack, what-if).

# %% [markdown]
# ## Takeaways
#
# - A training step is a DAG of ops whose edges are data dependencies, stream order and
#   synchronisation; its time is the longest path, not the sum of op times.
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
# critical path out of this first version. A hand-built graph like ours can state both: a
# collective is one op that waits for the bucket on every rank.
#
# **Slack is shared along a chain.** `allreduce_4` has 4.5 ms of slack, but if it used it all it
# would push `allreduce_3` and `allreduce_2` back too: slack is a property of paths, not of ops.
