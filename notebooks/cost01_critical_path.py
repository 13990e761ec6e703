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
# training step (forward, backward, gradient all-reduce, optimizer). This is the first lesson of
# Module 1; the later lessons build the same graph from real profiler traces.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
# %matplotlib inline
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from course_lib import graph as G
from course_lib.checks import check_float, check_names, check_range, check_type, forbid, passed
from course_lib.explorers.critical_path import critical_path_explorer
from course_lib.figures.graph import (
    GANTT_CRITICAL_COLOUR,
    GANTT_OTHER_COLOUR,
    dependency_graph,
    gantt,
    slack_bars,
    what_if_curve,
)

SEED = 1959  # every random draw in this lesson comes from rng
rng = np.random.default_rng(SEED)
ms = 1e-3  # one millisecond in seconds: code works in seconds, 2.5 * ms is 2.5 ms

# The step of the exercises: two data-parallel ranks, gradients all-reduced in two buckets.
EX_DURATIONS = {
    "load_r0": 3.0 * ms,  # rank 0 CPU: wait for the next batch from the data loader
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
EX_ORDER = {  # each lane runs its ops one at a time, in this order
    "rank 0 CPU": ["load_r0", "log_r0"],
    "rank 0 GPU": ["fwd_r0", "bwd2_r0", "bwd1_r0", "opt_r0"],
    "rank 1 CPU": ["load_r1"],
    "rank 1 GPU": ["fwd_r1", "bwd2_r1", "bwd1_r1", "opt_r1"],
    "NCCL (both ranks)": ["allreduce_2", "allreduce_1"],
}
EX_LANES = {op: lane for lane, ops in EX_ORDER.items() for op in ops}
EX_DATA = [  # data: the forward pass reads the batch; the optimizer reads reduced gradients
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
EX_LAUNCH = [("log_r0", "bwd2_r0")]  # the CPU launches the backward pass after logging
EX_DEPS = G.stream_order_edges(EX_ORDER) + EX_DATA + EX_SYNC + EX_LAUNCH
EX_OPS = frozenset(EX_DURATIONS)

# %% [markdown]
# ## 1. Ops and dependencies form a DAG; the step ends when its longest path ends
#
# A training step is a set of **ops** — CPU ops, host-to-device copies, GPU kernels, collectives,
# data loading — each with a **duration** $d_v$ in seconds. An edge $u \to v$ says that $v$
# cannot start before $u$ ends. Edges come from three places:
#
# - **data dependency:** $v$ reads what $u$ writes (the forward pass reads the copied batch; the
#   all-reduce of a gradient bucket reads the gradients the backward pass just wrote);
# - **stream order:** a CUDA stream, like a CPU thread, runs one op at a time in the order they
#   were issued, so consecutive ops on one stream are chained;
# - **synchronisation:** one stream, or the host, waits for another (`cudaStreamWaitEvent`
#   before the optimizer reads all-reduced gradients; `loss.item()` blocking the CPU until the
#   kernel that computes the loss has finished).
#
# Time only runs forward, so the graph has no cycles: it is a directed acyclic graph (DAG).
#
# Below is one data-parallel training step of a 4-layer model on one rank: the loader delivers a
# batch, a copy stream moves it to the GPU, four forward and four backward kernels run on the
# compute stream, and the gradients of each layer (one bucket per layer) are all-reduced on a
# separate communication stream while the backward pass continues.

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
deps = G.stream_order_edges(order) + data_deps + sync_deps
g = G.step_graph(durations, deps, lanes)

kinds = {e: "data" for e in data_deps} | {e: "sync" for e in sync_deps}
dependency_graph(g, kinds=kinds)
plt.show()
# %% [markdown]
# Each box is an op with its duration, in the row of the lane that runs it; columns are
# dependency depth, not time. Notice the two chains that run side by side once the backward pass
# starts: each `bwd_k` hands its gradients (blue) to `allreduce_k` on the comm stream, and the
# optimizer must wait (pink, dashed) for the last all-reduce.
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
# successors (a sink). A longest path is a **critical path**. This is the critical path method
# (CPM) of Kelley and Walker ("Critical-path planning and scheduling", Proceedings of the Eastern
# Joint Computer Conference, 1959), invented to schedule construction projects. One pass over the
# ops in topological order computes every $S_v$ and $E_v$, in time proportional to ops plus
# edges; you write that pass yourself in Exercise 2.

# %%
sched = G.schedule(g)  # earliest start and end of every op, in topological order
cp = G.critical_path(g)
print(
    f"step time {G.step_time(g) / ms:.1f} ms; sum of all op durations {sum(durations.values()) / ms:.1f} ms"
)
print("critical path:", " → ".join(cp.ops))
gantt(sched)
plt.show()
# %% [markdown]
# The orange bars are the critical path; arrows trace it where it hops lanes. Notice what is *not*
# on it: the all-reduces of buckets 4, 3 and 2 run under the backward pass of the layers below
# and are hidden. Only `allreduce_1` is **exposed**: the backward pass is over when it starts, and
# the optimizer waits for it. Of 15 ms of communication, 4.5 ms sit on the critical path. The
# step takes 40.2 ms although its ops add up to 50.7 ms: what runs in parallel overlaps.
#
# **The same graph, built from a trace.** Holistic Trace Analysis (HTA), Meta's library for
# PyTorch profiler traces, builds this graph for one rank ("Lightweight Critical Path Analysis",
# HTA documentation, hta.readthedocs.io; the weights below are those of its source,
# `hta/analyzers/critical_path_analysis.py`). Its nodes are points in time — the start and the end
# of every CPU op, CUDA runtime call (a kernel launch) and GPU kernel — and its edges either carry
# time (a duration or a delay) or are zero-weight dependencies:
#
# | HTA edge (trace) | weight | here |
# |---|---|---|
# | start → end of a kernel; inside a CPU op, its start and end nodes and those of the ops nested in it, chained in time order | the time between the nodes | an op with its duration $d_v$ |
# | a top-level CPU op → the next one on the same thread | 0 | stream order on a CPU lane |
# | kernel launch delay: launch → kernel start, counted only when no kernel is queued on the stream | the delay | a launch edge (a real delay becomes a small op of its own) |
# | kernel → next kernel on the same stream | the gap between them | stream order on a GPU lane |
# | synchronisation: a device or stream sync waits for the stream's last kernel (the blocking call's own time gets weight 0); `cudaStreamWaitEvent` links kernels on two streams | 0 | a synchronisation edge |
#
# Merge each op's start and end node into one node that carries the duration and you have the
# graph used here (activity-on-node instead of activity-on-edge); both have the same longest
# path. HTA's analysis assumes every CPU op depends on the previous one on its thread, and it
# finds no data dependencies between ops; a hand-built graph like ours can state them.

# %% [markdown]
# ## 2. Slack: how much an op can grow before the step does
#
# Run the same recurrence backwards from the end of the step. An op's **latest start** is the
# latest moment it can start without delaying the step:
#
# $$L_v = \min_{v \to w} L_w - d_v \quad (T - d_v \text{ if } v \text{ has no successor}),$$
#
# and its **slack** (CPM's *total float*) is
#
# $$s_v = L_v - S_v = T - (\text{length of the longest path through } v).$$
#
# An op with zero slack lies on a longest path: it is critical. An op with slack $s_v$ can take
# $s_v$ longer, or start $s_v$ later, and the step still ends at $T$.

# %%
shown = sched.set_index("op")[["lane", "duration", "start", "end", "slack"]].copy()
shown[["duration", "start", "end", "slack"]] /= ms
shown.columns = ["lane", "duration (ms)", "start (ms)", "end (ms)", "slack (ms)"]
display(shown.round(2))
ax = gantt(sched, title="Slack: how much later each op may end without delaying the step")
slack_bars(sched, ax)
plt.show()
# %% [markdown]
# The hatched blue bars show slack: `allreduce_4` may end up to 4.5 ms later, `allreduce_2` only
# 1.5 ms. If the network gets slower, `allreduce_2` is the first hidden all-reduce to become
# exposed. Notice also that slack is shared along a chain: the three all-reduces queue on one
# stream, so if `allreduce_4` uses its 4.5 ms, it pushes `allreduce_3` and `allreduce_2` back
# and uses up their slack too.
#
# Every critical op has zero slack, but the converse needs care: when two paths tie for longest,
# the ops of both have zero slack, and shortening just one of them saves nothing. The exercises
# contain such a tie.

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
# below it another path sets the step time and cutting saves nothing. From the measured duration
# $d$, the **useful reduction** is $\min(d,\ \max(0,\ B + d - A))$ — for a critical op,
# $T - A$: the gap to the longest path that avoids it.
#
# Take `bwd_2`, measured at 5 ms.

# %%
A, B = G.path_bounds(g, "bwd_2")
print(
    f"A = {A / ms:.1f} ms (longest path avoiding bwd_2), B = {B / ms:.1f} ms, kink d* = {(A - B) / ms:.1f} ms"
)
print(f"bwd_2 twice as fast (2.5 ms): step time {G.what_if(g, {'bwd_2': 2.5 * ms}) / ms:.1f} ms")
print(f"bwd_2 at 1 ms:                step time {G.what_if(g, {'bwd_2': 1.0 * ms}) / ms:.1f} ms")
print(f"useful reduction of bwd_2:    {G.useful_reduction(g, 'bwd_2') / ms:.1f} ms")
what_if_curve(g, "bwd_2")
plt.show()
# %% [markdown]
# Halving `bwd_2` saves the full 2.5 ms. Cutting it to 1 ms saves 3 ms, not 4: below 2 ms the
# path through the comm stream (`bwd_3` → `allreduce_3` → `allreduce_2` → `allreduce_1` →
# `optimizer`, $A$ = 37.2 ms) is the longest, and the curve is flat.
#
# The same thing happens at scale. Suppose a better backward kernel makes all four backward
# layers twice as fast: 10 ms of critical-path work disappears. The step gets 7 ms faster, not 10.

# %%
faster = G.with_durations(g, {f"bwd_{k}": 2.5 * ms for k in (1, 2, 3, 4)})
time_axis = (0.0, 1.02 * G.step_time(g))  # one time scale for both charts
fig, axes = plt.subplots(2, 1, figsize=(11, 7.5), layout="constrained")
gantt(sched, ax=axes[0], xlim=time_axis, title=f"Measured: step time {G.step_time(g) / ms:.1f} ms")
gantt(
    G.schedule(faster),
    ax=axes[1],
    critical=G.critical_path(faster).ops,
    xlim=time_axis,
    title=f"Backward 2× faster: step time {G.step_time(faster) / ms:.1f} ms",
)
plt.show()


# %% [markdown]
# In the lower chart the critical path leaves the compute stream after `bwd_4` and runs through
# all four all-reduces: the comm stream is now busy from 16.7 ms to 31.7 ms without a gap, and the
# backward pass finishes 7.5 ms before the last all-reduce does. The step became
# communication-bound; the next gain has to come from the all-reduces (fewer bytes, a faster
# network, or better overlap), not from more backward speed-ups.

# %% [markdown]
# ## 4. "Top kernels by total time" is not a diagnosis
#
# The first table most profilers show — PyTorch's `prof.key_averages().table(sort_by=...)`,
# Nsight Systems' kernel summary — ranks ops by the time they took. It answers "where did the
# device spend time", not "what would make the step shorter". Put the two rankings side by side:
# the time of each op, and the step time saved if that op alone ran twice as fast
# (`G.speedup_gain(g, op, 2)`, which is $T(d) - T(d/2)$).

# %%
ranking = pd.DataFrame(
    {
        "duration (ms)": [durations[op] / ms for op in g],
        "slack (ms)": [G.slack(g)[op] / ms for op in g],
        "saved if 2× faster (ms)": [G.speedup_gain(g, op, 2) / ms for op in g],
    },
    index=list(g),
).sort_values("duration (ms)", ascending=False, kind="stable")
display(ranking.round(2))

fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.6), sharey=True, layout="constrained")
colours = np.where(ranking["slack (ms)"] == 0, GANTT_CRITICAL_COLOUR, GANTT_OTHER_COLOUR)
left.barh(ranking.index, ranking["duration (ms)"], color=colours, edgecolor="#555555", lw=0.6)
right.barh(
    ranking.index, ranking["saved if 2× faster (ms)"], color=colours, edgecolor="#555555", lw=0.6
)
left.invert_yaxis()
left.set(title="What the profiler table ranks: time per op", xlabel="duration (ms)")
right.set(title="What the step gains: op alone 2× faster", xlabel="step time saved (ms)")
for i, gain in enumerate(ranking["saved if 2× faster (ms)"]):
    if gain == 0:
        right.text(0.03, i, "0: hidden, has slack", va="center", fontsize=8.5, color="#555555")
for a in (left, right):
    a.grid(axis="x", color="#E6E6E6")
    a.set_axisbelow(True)
plt.show()

# %% [markdown]
# Orange ops are critical. Read down the left chart. The four backward kernels top it, but they
# are not worth the same: `bwd_4`, `bwd_3` and `bwd_2` give 2.5 ms each, `bwd_1` only 1.5 ms.
# Halved, `bwd_1` ends 2.5 ms earlier, but `allreduce_1` also waits for `allreduce_2` on the comm
# stream, which ends only 1.5 ms before `bwd_1` used to: the kink. Next come the all-reduces,
# 3.5–4.5 ms each: three of them give exactly nothing, because they are hidden; `allreduce_1`
# gives 2.25 ms. `load_batch`, ninth by time, gives 1.5 ms, though it is not a GPU kernel and
# would not appear in a kernel table at all.
#
# A per-op table misleads in three ways: it sums ops that run at the same time (50.7 ms of op time
# in a 40.2 ms step), it cannot tell a hidden op from an exposed one, and even for critical ops the
# gain stops at the kink (halving all backward kernels: 10 ms of kernel time, 7 ms of step time).
# The critical path, the slack and a what-if tell you what the step waits for.

# %% [markdown]
# ## Explore
#
# The explorer shows the step of this lesson. Pick an op in the dropdown and drag its duration
# (in ms; the slider runs from 0 to 3× the measured duration). Left: the Gantt chart with the
# critical path in orange and your op outlined in blue; the dashed line is the step time now, the
# dotted one the measured 40.2 ms. Right: $T(d)$ for your op, with the kink and your current
# point. What to try:
#
# 1. `bwd_2`: drag from 5 ms down to 0. The step time falls one for one until 2 ms, the kink;
#    below it the orange path jumps to the comm stream and the step stays at 37.2 ms.
# 2. `allreduce_2`: drag it up. Nothing happens until 5 ms (its 1.5 ms of slack is used up), then
#    the step grows one for one: a slower network exposes hidden communication.
# 3. `load_batch`: every path starts with it, so $T(d)$ has no kink — each millisecond of input
#    stall costs a millisecond of step time.
# 4. `allreduce_4`: find how slow it must get before it is exposed. Why is its kink so far out?

# %%
explorer = critical_path_explorer(durations, deps, lanes, op="bwd_2")
explorer

# %% [markdown]
# ## Exercises
#
# The exercises use a different step, defined in the setup cell (`EX_DURATIONS`, `EX_DEPS`,
# `EX_LANES`). Two data-parallel ranks train the same model; their gradients are all-reduced in
# two buckets by NCCL, and each all-reduce is a collective: it starts only when **both** ranks
# have produced the bucket's gradients. Two things go wrong in this step:
#
# - rank 1's data loader stalls on a slow read: `load_r1` takes 6 ms, `load_r0` 3 ms;
# - rank 0 logs the loss every step with `loss.item()`. That is a host sync: the CPU waits for the
#   forward pass, spends 1.5 ms on the log line (`log_r0`), and only then launches the backward
#   pass, so rank 0's GPU sits idle meanwhile.
#
# The step ends when the last op of either rank ends. Answers are in seconds (`ms` from the setup
# cell converts: `2.5 * ms`). You may use `course_lib.graph` except where an exercise says not to.

# %%
ex_graph = G.step_graph(EX_DURATIONS, EX_DEPS, EX_LANES)
dependency_graph(
    ex_graph,
    kinds={e: "data" for e in EX_DATA}
    | {e: "sync" for e in EX_SYNC}
    | {e: "launch" for e in EX_LAUNCH},
    lane_order=["rank 0 CPU", "rank 0 GPU", "NCCL (both ranks)", "rank 1 GPU", "rank 1 CPU"],
    title="The exercises' step: two ranks, two gradient buckets",
)
plt.show()
# %% [markdown]
# ### Exercise 1 — Step time of the exercises' step (1 point)
#
# Compute the step time of the graph above. Store it in `step_time_ex` as a float, in seconds.

# %% nbgrader={"grade": false, "grade_id": "step_time_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
step_time_ex = G.step_time(G.step_graph(EX_DURATIONS, EX_DEPS, EX_LANES))
### END SOLUTION
print(f"step_time_ex = {step_time_ex / ms:.2f} ms")

# %% nbgrader={"grade": true, "grade_id": "step_time_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 1: the step time of the exercises' step, in seconds."""
check_range(
    "step_time_ex",
    step_time_ex,
    max(EX_DURATIONS.values()),
    round(sum(EX_DURATIONS.values()), 9),
    what="seconds; a step lasts at least its longest op and at most the sum of all ops",
)
passed("Exercise 1")
### BEGIN HIDDEN TESTS
_ = check_float(
    "step_time_ex",
    step_time_ex,
    28.0 * ms,
    unit="s",
    known_wrong={
        54.5 * ms: "the sum of all durations: ops on different lanes run at the same time",
        18.0 * ms: "the busiest lane's total: a lane also waits for other lanes",
        26.0 * ms: "the end of allreduce_1: the optimizer still runs after it",
        20.5 * ms: "rank 0's path: rank 1 is the slower rank",
    },
)
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 2 — Implement the longest path (3 points)
#
# Write `longest_path(durations, deps)` that returns `(length, path)`: the length in seconds of
# the longest source-to-sink path of the step graph and that path as a list of op names, from
# its first op to its last. `durations` maps op name → seconds; `deps` is a list of pairs
# `(u, v)` meaning `v` cannot start before `u` ends. Ops that appear in no pair stand alone.
#
# - Visit the ops in a topological order — Kahn's algorithm (repeatedly take an op whose
#   predecessors are all done) or a depth-first search — computing each op's end time
#   $E_v = \max_{u \to v} E_u + d_v$ and remembering which predecessor achieved the max.
#   `collections` and `graphlib.TopologicalSorter` are allowed.
# - The path starts at a source (no predecessors) and ends at a sink (no successors): keep
#   zero-duration ops at either end. The test graphs have exactly one longest source-to-sink path.
# - Do not assume `durations` lists the ops in topological order.
# - The grade cell disables `course_lib.graph` (`critical_path`, `step_time`, `schedule`, ...)
#   and networkx's `dag_longest_path` while your function runs. Enumerating all paths will not
#   finish either: the hidden tests include a graph with over a billion source-to-sink paths.


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
# Check your function on random step graphs before you run the grade cell: this cell compares it
# with `course_lib.graph` on 200 random DAGs (ops given in a shuffled order).


# %%
def random_step(rng, num_ops):
    """A random DAG: durations 0.1-6 ms, each pair of ops linked with probability 0.3."""
    names = [f"op{i}" for i in range(num_ops)]
    topo = [str(n) for n in rng.permutation(names)]
    deps = [
        (topo[i], topo[j])
        for i in range(num_ops)
        for j in range(i + 1, num_ops)
        if rng.random() < 0.3
    ]
    return {n: float(rng.uniform(0.1, 6.0)) * ms for n in names}, deps


for trial in range(200):
    durs, dps = random_step(rng, int(rng.integers(1, 12)))
    length, path = longest_path(durs, dps)
    reference = G.critical_path(G.step_graph(durs, dps))
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
    for name in ("critical_path", "step_time", "schedule", "path_bounds", "what_if", "_passes")
] + [(_nx, "dag_longest_path"), (_nx, "dag_longest_path_length")]

with forbid(*_FORBIDDEN, exercise="Exercise 2"):
    _diamond = longest_path(
        {"a": 1.0 * ms, "b": 2.0 * ms, "c": 3.0 * ms, "d": 1.0 * ms},
        [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")],
    )
check_type("longest_path(diamond)", _diamond, tuple)
check_float(
    "longest_path(diamond)[0], the length",
    _diamond[0],
    5.0 * ms,
    unit="s",
    known_wrong={
        7.0 * ms: "the sum of all durations",
        4.0 * ms: "the path without its last op's duration (the start of the last op, not its end)",
    },
)
check_names("longest_path(diamond)[1], the path", _diamond[1], ("a", "c", "d"), ordered=True)
passed("Exercise 2")
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
    for _i, (_durs, _deps, _length, _path, _total) in enumerate(_CASES):
        _got = longest_path(dict(_durs), list(_deps))
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

# %% [markdown]
# ### Exercise 3 — Which ops are worth speeding up? (2 points)
#
# Consider each op of the exercises' step on its own: it runs twice as fast, everything else
# stays as measured. Which ops make the step shorter? Store their names in `faster_ops`, a set of
# strings.

# %% nbgrader={"grade": false, "grade_id": "faster_ops_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
faster_ops = {op for op in EX_DURATIONS if G.speedup_gain(ex_graph, op, 2.0) > 0}
### END SOLUTION
print(sorted(faster_ops))

# %% nbgrader={"grade": true, "grade_id": "faster_ops_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 3: the set of ops that, each made 2x faster on its own, shorten the step."""
check_type("faster_ops", faster_ops, set, frozenset)
check_names("faster_ops: names that are not ops of the step", sorted(set(faster_ops) - EX_OPS), ())
passed("Exercise 3")
### BEGIN HIDDEN TESTS
_ = check_names(
    "faster_ops", faster_ops, ("load_r1", "fwd_r1", "bwd2_r1", "bwd1_r1", "allreduce_1")
)
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 4 — The gain when the path shifts (2 points)
#
# `bwd1_r1`, rank 1's backward pass for bucket 1 (5 ms), gets twice as fast (2.5 ms); nothing
# else changes. By how much does the step time drop? Store it in `gain_bwd1_r1`, a float in
# seconds. Before you compute it, guess, and afterwards find which path takes over.

# %% nbgrader={"grade": false, "grade_id": "gain_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
gain_bwd1_r1 = G.step_time(ex_graph) - G.what_if(ex_graph, {"bwd1_r1": 2.5 * ms})
### END SOLUTION
print(f"gain_bwd1_r1 = {gain_bwd1_r1 / ms:.2f} ms")

# %% nbgrader={"grade": true, "grade_id": "gain_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 4: step time saved when bwd1_r1 runs 2x faster, in seconds."""
check_range(
    "gain_bwd1_r1",
    gain_bwd1_r1,
    0.0,
    2.5 * ms,
    what="seconds; halving a 5 ms op saves between 0 and 2.5 ms",
)
passed("Exercise 4")
### BEGIN HIDDEN TESTS
_ = check_float(
    "gain_bwd1_r1",
    gain_bwd1_r1,
    1.0 * ms,
    unit="s",
    known_wrong={
        2.5 * ms: "half of bwd1_r1's duration, as if it stayed critical all the way down",
        1.5 * ms: "the gap to rank 0's backward pass, but allreduce_2 takes over first",
        0.0: "no gain, but bwd1_r1 is on the critical path",
    },
)
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 5 — How far does fixing the input stall go? (2 points)
#
# You speed up rank 1's data loader (`load_r1`, 6 ms). What is the largest reduction of its
# duration for which every millisecond cut still saves a millisecond of step time — the cut at
# which another path becomes critical? Store it in `useful_cut_load_r1`, a float in seconds.

# %% nbgrader={"grade": false, "grade_id": "useful_cut_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
useful_cut_load_r1 = G.useful_reduction(ex_graph, "load_r1")
### END SOLUTION
print(f"useful_cut_load_r1 = {useful_cut_load_r1 / ms:.2f} ms")

# %% nbgrader={"grade": true, "grade_id": "useful_cut_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 5: the useful reduction of load_r1's duration, in seconds."""
check_range("useful_cut_load_r1", useful_cut_load_r1, 0.0, 6.0 * ms, what="seconds, 0 to 6 ms")
passed("Exercise 5")
### BEGIN HIDDEN TESTS
_ = check_float(
    "useful_cut_load_r1",
    useful_cut_load_r1,
    1.5 * ms,
    unit="s",
    known_wrong={
        6.0 * ms: "load_r1's whole duration, as if the loader were the only thing in the way",
        3.0 * ms: "the difference of the two loaders (6 - 3 ms), but rank 0's host sync (log_r0) "
        "delays rank 0 by 1.5 ms too",
        1.0 * ms: "the slack of allreduce_2, but allreduce_2 itself waits for rank 1: its slack "
        "grows as load_r1 shrinks",
    },
)
### END HIDDEN TESTS

# %% [markdown]
# ### Explained answer — Why a per-kernel time table misleads (2 points, graded by hand)
#
# A colleague profiles the exercises' step on both ranks and sorts the ops by time: `fwd_r0`,
# `fwd_r1` and `load_r1` (6 ms each) come first, then the four backward ops (5 ms each). They
# propose to fuse the forward kernels, which would make the forward pass twice as fast on both
# ranks, and to drop the logging on rank 0 "because it stalls the GPU". In 4–6 sentences: what does
# each change gain (compute it), why does the sorted table mislead, and what would you look at
# instead? Quote numbers from the graph.

# %% [markdown] nbgrader={"grade": true, "grade_id": "explain_kernel_table", "locked": false, "points": 2, "schema_version": 3, "solution": true, "task": false}
# **Model answer.** Fusing the forward kernels saves 3 ms (28 → 25 ms), and only because rank 1's
# forward is critical: rank 1 stays the slower rank, and halving rank 0's forward alone would save
# nothing (it has 1.5 ms of slack). Dropping the log on rank 0 alone saves nothing: rank 0 is not on the critical path
# (1.5 ms of slack) because rank 1 waits longer for its input. The table misleads because it ranks
# ops by their own time, adds up ops that run at the same time on different ranks and streams
# (54.5 ms of op time in a 28 ms step), and cannot tell a hidden op (`allreduce_2`, 4 ms, zero
# gain) from an exposed one or see ties (`opt_r0` and `opt_r1`). Instead, take the critical path,
# each op's slack and what-if step times: fixing rank 1's loader saves 1.5 ms, after which rank 0's
# host sync becomes critical; fixing both saves 3 ms, more than the sum of the two alone.
#
# **Rubric (2 points).** 1 point: a correct gain for at least one change with the reason (critical
# or not, slack). 1 point: a correct reason the table misleads (overlap/parallel ops summed,
# hidden vs exposed, or path shift/tie) and the alternative (critical path, slack, what-if).

# %% [markdown]
# ## Takeaways
#
# - A training step is a DAG of ops whose edges are data dependencies, stream order and
#   synchronisation; its time is the longest path through it — not the sum of op times, not the
#   busiest stream's total.
# - An op's slack, $T$ minus the longest path through it, is how much it can grow for free;
#   critical ops have none.
# - Cutting an op's duration $d$ gives $T(d) = \max(A, B + d)$: one for one down to the kink
#   $d^* = A - B$, then nothing. When two paths tie, shortening one of them gains nothing.
# - Gains do not add up: fix one bottleneck and the next path takes over — sometimes a fix that
#   was worth nothing alone (rank 0's logging) becomes worth 1.5 ms after another.
# - The trap: reading "top kernels by total time" as a to-do list. Ask what the step waits for —
#   the critical path — before you optimise anything.
