# %% [markdown]
# # cost03 · Communication is hidden only when readiness and shared resources allow it
#
# **Objective.** Calculate overlap from an actual schedule and separate asynchronous launch
# capability from communication removed from the step's critical path.
#
# **Time:** 32 min · **Level:** advanced
#
# You will be able to
# - compute the communication–computation overlap ratio of a rank from its kernel intervals,
#   exactly as Holistic Trace Analysis defines it;
# - tell the communication that ran with nothing else on the timeline from the communication on
#   the step's critical path, and predict what a faster network buys;
# - explain why a gradient bucket's all-reduce cannot start before its last gradient is ready,
#   and choose a bucket size that trades per-collective latency against the exposed last bucket;
# - decide whether overlapping still pays when computation and communication slow each other.
#
# **What you need:** cost01 (critical path, slack, $T(d) = \max(A, B + d)$) and cost02 (trace
# events as a DataFrame: `ts`, `dur`, `cat`, `name`, seconds). numpy arrays of shape (N, 2) and
# boolean masks on a DataFrame.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
# %matplotlib inline
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

import course_lib.overlap as OV
from course_lib.checks import check_choice, check_float, check_range, check_type, forbid, passed
from course_lib.explorers.overlap import BUCKET_MIB_OPTIONS, overlap_explorer
from course_lib.figures.overlap import OVERLAP_COLOURS, overlap_timeline
from course_lib.overlap import (
    bucket_step_graph,
    bucketed_allreduce_timeline,
    exposed_communication,
    exposed_on_critical_path,
    overlap_ratio,
    total_length,
    transformer_grad_tensors,
)
from course_lib.tracegen import load_dp_profile

rng = np.random.default_rng(3)  # the course's convention; nothing in this lesson is random
ms = 1e-3  # one millisecond in seconds
MiB = 2.0**20  # DDP's bucket_cap_mb counts MiB: 25 MiB = 25 * 2**20 bytes

# Measured data: 3 training steps of a data-parallel model on 4 ranks, one Kineto trace per rank
# (course_lib/data/dp_profile, SYNTHETIC: written by course_lib.tracegen), as DataFrames in seconds.
profiles = load_dp_profile()

# The model of sections 2-4: the weight matrices of a 24-layer transformer, hidden size 1024
# (12 h^2 parameters per layer, Kaplan et al. 2020, eq. 2.1), fp32 gradients (1152 MiB in all),
# 3.2 ms of backward per layer on one GPU (assumed, as in the synthetic traces).
layer_backward_times, layer_grad_bytes = transformer_grad_tensors()
latency = 50e-6  # seconds per all-reduce, whatever its size (assumed)
optimizer_time = 7 * layer_grad_bytes.sum() / 1.5e12  # 7 passes over 1.2 GB at 1.5 TB/s
CAP_CANDIDATES = np.array(BUCKET_MIB_OPTIONS) * MiB  # bucket caps to try, bytes

# %% [markdown]
# ## 1. The overlap ratio measures coincidence on one rank's timeline
#
# Data-parallel training all-reduces gradients on a communication stream while the compute stream
# keeps running the backward pass. The number people quote for "how well is communication
# hidden" is the **overlap ratio** of Holistic Trace Analysis (HTA, Meta's analysis library for
# PyTorch profiler traces; documentation page "Communication Computation Overlap",
# hta.readthedocs.io):
#
# $$r = \frac{\text{time spent in computation while communicating}}{\text{time spent in communication}}
#   = \frac{|\,C \cap K\,|}{|\,C\,|},$$
#
# where $C$ is the union of the $[start, end)$ intervals of the rank's communication kernels, $K$
# the union of its computation kernels, and $|\cdot|$ the total length of a set of intervals.
# HTA's code (`get_comm_comp_overlap` in hta/analyzers/communication_analysis.py) classifies a
# GPU kernel as communication if its name is an NCCL kernel, as memory if it is a `Memcpy` or
# `Memset` (counted in neither set), and as computation otherwise; it **merges** each class into
# disjoint intervals before measuring, so two compute kernels running at once on two streams
# count once. It reports one ratio per rank, over the whole trace.
#
# The data: four ranks of a data-parallel job, three steps each, traced with the PyTorch
# profiler's format. These traces are synthetic (`course_lib.tracegen` generates them from a
# model of DDP, with jitter and per-host clocks); cost02 loaded the same files. Take rank 0's
# second step.


# %%
def intervals(events: pd.DataFrame) -> np.ndarray:
    """(N, 2) array of [start, end) in seconds of trace events."""
    return np.column_stack([events["ts"], events["ts"] + events["dur"]])


def step_kernels(events: pd.DataFrame, step_name: str) -> tuple[pd.DataFrame, float]:
    """The GPU kernels that start inside one profiler step of a rank, and the step's start (s)."""
    step = events[events["name"] == step_name].iloc[0]
    inside = (events["ts"] >= step["ts"]) & (events["ts"] < step["ts"] + step["dur"])
    return events[inside & (events["cat"] == "kernel")], step["ts"]  # Memcpy: cat gpu_memcpy


kernels, step_start = step_kernels(profiles[0], "ProfilerStep#1")
is_nccl = kernels["name"].str.startswith("nccl")
comm, compute = intervals(kernels[is_nccl]), intervals(kernels[~is_nccl])
print(f"{is_nccl.sum()} NCCL kernels, {(~is_nccl).sum()} computation kernels")

r = overlap_ratio(comm, compute)
print(f"overlap ratio {r:.3f}: {total_length(comm) / ms:.2f} ms of communication, of which")
print(f"{exposed_communication(comm, compute) / ms:.2f} ms ran with no computation at all")
overlap_timeline(
    compute,
    comm,
    origin=step_start,
    title=f"Rank 0, ProfilerStep#1: overlap ratio {r:.1%} (synthetic trace)",
)
plt.show()

# %% [markdown]
# Time runs from the start of the profiler step (the CPU annotation; the GPU starts 3 ms later,
# after the data loader). The green band is $C \cap K$, the numerator. Three of the four
# all-reduces run under the backward pass. The fourth, in vermillion, starts when the backward
# pass has ended, and the optimizer kernel (the last blue bar) waits for it. So 76 % of the
# communication "overlaps", and the step still waits 5.3 ms for the network.
#
# On the timeline, the communication with nothing else running is
#
# $$X = |\,C \setminus K\,| = (1 - r)\,|C|.$$
#
# Two cautions before you use either number. First, an NCCL kernel starts when *its* rank
# arrives at the collective and ends when the slowest rank has arrived and the data has moved,
# so the same all-reduce lasts longer on an early rank. Compare the four all-reduces of this step
# on the four ranks:

# %%
nccl_ms = {}
for rank, events in profiles.items():
    k, _ = step_kernels(events, "ProfilerStep#1")
    nccl_ms[f"rank {rank}"] = k.loc[k["name"].str.startswith("nccl"), "dur"].to_numpy() / ms
print(pd.DataFrame(nccl_ms, index=pd.Index(range(4), name="bucket")).round(2))

# %% [markdown]
# Bucket 1 takes 5.72 ms on rank 0 and 5.12 ms on rank 2: on rank 0, 0.6 ms of
# "communication" is waiting for rank 2 to arrive (cost06 is about such waits). Second, both the
# ratio and $X$ describe coincidence on one rank's timeline. Neither says what the step would
# gain if communication were faster; section 2 does.

# %% [markdown]
# ## 2. Launched asynchronously is not hidden: exposed communication is on the critical path
#
# DDP launches each all-reduce asynchronously: the CPU enqueues it and moves on. That says where
# the collective runs, not whether the step waits for it. Use cost01's lens instead: the
# **exposed communication** is the communication time on the step's critical path,
#
# $$E = \sum_{v \in P^*,\ v \text{ a collective}} d_v,$$
#
# where $P^*$ is a longest path of the step graph. For small changes, the step time moves by
# $E$ times the relative change of the communication time: make every collective 10 % shorter
# and the step shrinks by $0.1\,E$, until another path becomes critical.
#
# $E$ differs from $X = (1 - r)|C|$ in both directions:
# - a collective that runs alongside computation is still on the critical path when the next
#   op waits for its result, or when the collectives queue back to back on their stream — all of
#   its duration counts, overlapped or not;
# - a collective with nothing else running costs nothing if the step is waiting for something
#   else at the time (the data loader, a slower rank): it has slack.
#
# `course_lib.overlap.bucketed_allreduce_timeline` models the backward pass and its bucketed
# all-reduces (section 3 explains the model), and `bucket_step_graph` turns its timeline into the
# step graph of cost01: layers chained on the compute stream, all-reduces chained on the comm
# stream, an edge from each bucket's last layer to its all-reduce, and the optimizer after both
# streams. Here is the lesson's 24-layer model on a 12 GB/s network with DDP's 25 MiB buckets.

# %%
base = bucketed_allreduce_timeline(
    layer_backward_times, layer_grad_bytes, 25 * MiB, 12e9, latency, optimizer_time=optimizer_time
)
on_path = exposed_on_critical_path(bucket_step_graph(base))
faster = bucketed_allreduce_timeline(
    layer_backward_times, layer_grad_bytes, 25 * MiB, 13.2e9, latency, optimizer_time=optimizer_time
)
print(
    f"step {base.step_time / ms:.2f} ms, {len(base.buckets)} buckets, ratio {base.overlap_ratio:.3f}"
)
print(f"communication {total_length(base.comm) / ms:.2f} ms")
print(f"  with nothing else running, X = (1 - r)|C|: {base.exposed_comm / ms:.2f} ms")
print(f"  on the critical path, E:                   {on_path / ms:.2f} ms")
print(f"10 % more bandwidth saves {(base.step_time - faster.step_time) / ms:.2f} ms")
overlap_timeline(
    base, title="24 layers, 25 MiB buckets, 12 GB/s: every all-reduce waits for the one before"
)
plt.show()

# %% [markdown]
# The all-reduces cannot keep up with the backward pass: from the first bucket on, the comm
# stream is never idle, so the whole chain of 36 all-reduces (102.5 ms) lies on the critical path,
# although 73 % of it overlaps computation. With 10 % more bandwidth each transfer takes
# $1/1.1$ of its time: $E \cdot (1 - 1/1.1) = 9.3$ ms, minus the fixed latency part, is the
# 9.15 ms the model saves. The timeline's $X = 27.8$ ms would have predicted 2.5 ms. When you
# ask "is communication hidden?", ask instead "is it on the critical path?"

# %% [markdown]
# ## 3. A bucket can start only when its last gradient is ready
#
# PyTorch DDP groups gradients into **buckets** in the order the backward pass produces them (the
# last layer first) and all-reduces a bucket as soon as every gradient in it is ready (Li et al.
# 2020, "PyTorch Distributed", §3.2; the `bucket_cap_mb` argument of
# `DistributedDataParallel`, 25 MiB by default, and DDP's smaller first bucket of 1 MiB,
# `kDefaultBucketBytesCap` and `kDefaultFirstBucketBytes` in c10d's reducer.hpp). A bucket
# closes once its size reaches the cap. With one communication stream, bucket $k$'s all-reduce
# starts at
#
# $$S_k = \max(\text{ready}_k,\ S_{k-1} + t_{k-1}), \qquad t_k = \alpha + \frac{B_k}{\beta},$$
#
# where $\text{ready}_k$ is the end of the backward kernel that produces the bucket's last
# gradient, $B_k$ the bucket's bytes, $\alpha$ a fixed cost per collective (`latency`) and
# $\beta$ the all-reduce's **algorithm bandwidth**: nccl-tests reports algbw $= S / t$ for an
# $S$-byte all-reduce and notes that $t$ is roughly "overhead + size / bw" (nccl-tests,
# doc/PERFORMANCE.md). The bus bandwidth $2(n-1)/n \cdot$ algbw is a per-link figure, not this one
# (cost07).
#
# The last bucket holds the first layer's gradients, which the backward pass produces last. It
# becomes ready when the backward pass ends, so at least $\alpha + B_{\text{last}}/\beta$ of
# communication is exposed whatever the network does. The bucket cap trades two costs: small
# buckets start early and leave a small last bucket, but pay $\alpha$ many times; large buckets
# pay $\alpha$ rarely, but the last one is large. At the extreme, one bucket cannot overlap at
# all.

# %%
sweep = [
    bucketed_allreduce_timeline(
        layer_backward_times, layer_grad_bytes, cap, 12e9, latency, optimizer_time=optimizer_time
    )
    for cap in CAP_CANDIDATES
]
steps = np.array([t.step_time for t in sweep])
ratios = np.array([t.overlap_ratio for t in sweep])
caps_mib = np.array(BUCKET_MIB_OPTIONS)
best = int(np.argmin(steps))
print(
    pd.DataFrame(
        {
            "buckets": [len(t.buckets) for t in sweep],
            "last bucket (MiB)": [t.bucket_sizes[-1] / MiB for t in sweep],
            "step (ms)": steps / ms,
            "overlap ratio": ratios,
        },
        index=pd.Index(caps_mib, name="cap (MiB)"),
    ).round(3)
)

fig = plt.figure(figsize=(11, 6.2), layout="constrained")
top, bottom = fig.subfigures(2, 1, height_ratios=[1.1, 1])
ax_step, ax_ratio = top.subplots(1, 2)
ax_step.plot(caps_mib, steps / ms, "-o", color=OVERLAP_COLOURS["comm"], lw=2)
ax_step.plot(caps_mib[best], steps[best] / ms, "o", ms=12, mfc="none", mec="#222222", mew=2)
ax_step.axhline((layer_backward_times.sum() + optimizer_time) / ms, color="#777777", ls=":", lw=1.5)
ax_step.text(
    1.1, (layer_backward_times.sum() + optimizer_time) / ms + 2, "no communication", color="#555555"
)
ax_ratio.plot(caps_mib, ratios, "-o", color=OVERLAP_COLOURS["overlap"], lw=2)
ax_step.set(ylabel="step time (ms)", title="Step time vs bucket cap")
ax_ratio.set(ylabel="overlap ratio", ylim=(0, 1), title="Overlap ratio vs bucket cap")
for ax in (ax_step, ax_ratio):
    ax.set_xscale("log")
    ax.set_xticks([1, 10, 25, 100, 400, 1600], ["1", "10", "25", "100", "400", "1600"])
    ax.minorticks_off()
    ax.set_xlabel("bucket cap (MiB)")
    ax.grid(alpha=0.3)
overlap_timeline(
    sweep[BUCKET_MIB_OPTIONS.index(400)],
    ax=bottom.subplots(),
    title="400 MiB buckets: the last bucket (352 MiB) starts when the backward pass ends",
)
plt.show()

# %% [markdown]
# The circle marks the best cap of the sweep, DDP's 25 MiB here, 28 ms above the step without
# communication (the dotted line). To its left the caps below one weight matrix (4 to 16 MiB)
# make buckets of one matrix each: up to 96 all-reduces, each paying $\alpha$. To its right the
# step climbs fast: with 400 MiB caps the last bucket holds 352 MiB and its 30.8 ms all-reduce
# starts only when the backward pass ends (bottom). Here the overlap ratio and the step time
# agree on the best cap; section 4 shows a case where they do not.

# %% [markdown]
# ## 4. Shared resources: overlapped work runs slower
#
# An NCCL kernel runs on the GPU's streaming multiprocessors and moves data through the same
# memory as the GEMMs of the backward pass. When both run, both slow down. Lee et al. (2025,
# "Characterizing Compute-Communication Overlap in GPU-Accelerated Distributed Deep Learning",
# arXiv:2507.03114, abstract) measured an average computational slowdown of 18.9 % (up to 40.0 %) for
# computation overlapped with communication on A100, H100, MI210 and MI250 GPUs, and still found
# sequential execution 10.2 % slower on average than overlapped execution.
#
# The model has two slowdown factors: while they overlap, computation progresses at rate
# $1/(1+c)$ (`contention`) and communication at $1/(1+c')$ (`comm_contention`). Over $O$ seconds
# of overlap the step gets $O/(1+c)$ seconds of computation and $O/(1+c')$ of communication done.
# Doing the same work one after the other would take their sum, so, with the same buckets,
#
# $$T_{\text{overlap}} = T_{\text{serial}} - O\left(\frac{1}{1+c} + \frac{1}{1+c'} - 1\right),$$
#
# where $T_{\text{serial}}$ is the step with every all-reduce after the backward pass (this
# holds exactly in the model: `tests/test_overlap.py` checks it against a time-stepped
# simulation). Overlap pays while the two together progress faster than one at a time:
# $\frac{1}{1+c} + \frac{1}{1+c'} > 1$, which is $c \cdot c' < 1$. Past that, overlapping the same
# buckets is slower than not overlapping at all.

# %%
fig, ax = plt.subplots(figsize=(9, 3.8), layout="constrained")
comm_slowdowns = np.linspace(0.0, 6.0, 61)
for c, colour in [(0.19, "#0072B2"), (0.4, "#E69F00"), (0.9, "#D55E00")]:
    gain = []
    for c_comm in comm_slowdowns:
        t = bucketed_allreduce_timeline(
            layer_backward_times,
            layer_grad_bytes,
            25 * MiB,
            12e9,
            latency,
            c,
            optimizer_time,
            comm_contention=c_comm,
        )
        gain.append(t.serial_step_time - t.step_time)
    ax.plot(comm_slowdowns, np.array(gain) / ms, color=colour, lw=2, label=f"c = {c}")
    ax.axvline(1 / c, color=colour, ls=":", lw=1.2)
ax.axhline(0.0, color="#222222", lw=1)
ax.set(
    xlabel="communication slowdown c′",
    ylabel="step time saved by overlapping (ms)",
    xlim=(0, 6),
    title="Overlap pays while c · c′ < 1 (dotted: c′ = 1/c)",
)
ax.grid(alpha=0.3)
ax.legend(frameon=False)
plt.show()

# %% [markdown]
# Each curve is one compute slowdown $c$; it crosses zero exactly at $c' = 1/c$ (dotted). At
# Lee et al.'s average $c = 0.19$, overlap keeps paying up to $c' = 5.3$. At $c = 0.9$ it stops
# paying at $c' = 1.1$; slowdowns that large happen, for example when an NCCL kernel holds a few
# SMs and pushes a GEMM sized for the full GPU into a second wave (a GEMM taking nearly twice as
# long next to an all-gather on an H100 is reported on NVIDIA's developer forum, "Compute-
# Communication Overlap Causes Severe GEMM Performance Degradation because of Tail Effect").
# Vendors' tuning guides give the matching advice: when computation and communication contend
# for memory bandwidth, measure both modes and keep the faster one (Huawei MindStudio,
# "Computing and Communication Bandwidth Contention").
#
# Contention also corrupts the overlap ratio as a score. A slower backward pass leaves more time
# for the same all-reduces to hide behind, so $r$ goes *up* while the step does not get faster:

# %%
for c in (0.0, 0.19, 0.4):
    t = bucketed_allreduce_timeline(
        layer_backward_times, layer_grad_bytes, 25 * MiB, 12e9, latency, c, optimizer_time
    )
    print(
        f"compute slowdown c = {c:4}: overlap ratio {t.overlap_ratio:.3f}, step {t.step_time / ms:.2f} ms"
    )

# %% [markdown]
# From $c = 0$ to $c = 0.4$ the overlap ratio climbs from 73 % to 97 % and the step gets 3.5 ms
# slower. The ratio rewards slow computation: a kernel regression, or contention, makes it look
# better. Compare step times, and use the ratio only to locate where communication sits.

# %% [markdown]
# ## Explore
#
# The explorer runs the lesson's 24-layer model (50 µs per all-reduce). Left: the timeline of the
# current setting, with the step time (dashed) and the step without overlap, same buckets
# (dotted). Right: step time against bucket cap at the current bandwidth and contention, with and
# without overlap. Below: the overlap ratio, the timeline's exposed communication and the
# communication on the critical path. Try:
#
# 1. At 12 GB/s, drag the bucket cap from 25 to 1600 MiB: one bucket, ratio 0, and the step
#    meets the dotted "no overlap" line.
# 2. Drag the bandwidth to 50 GB/s: the comm stream gets gaps, and the communication on the
#    critical path drops to the last bucket's all-reduce alone (0.7 ms); what remains above
#    backward + optimizer is contention. Then drag it to 4 GB/s: the critical path is almost
#    all communication.
# 3. With $c = 0.2$, drag $c'$ to 1.5: overlap still pays ($c \cdot c' = 0.3$). Set $c = 1.0$:
#    the dotted line passes the dashed one as $c'$ crosses 1.
# 4. Set 20 GB/s, $c = 0.4$, $c' = 0.3$. Which cap has the highest overlap ratio, and which the
#    shortest step?

# %%
explorer = overlap_explorer(
    layer_backward_times, layer_grad_bytes, latency=latency, optimizer_time=optimizer_time
)
explorer

# %% [markdown]
# ## Exercises
#
# Answer in the cells marked `YOUR CODE HERE`, then run the grade cell below each: its visible
# checks give quick feedback; hidden tests check more cases when the notebook is graded. Times are
# in seconds (`ms` from the setup cell converts), sizes in bytes (`MiB`). Except in Exercise 1,
# you may use `course_lib.overlap`.
#
# ### Exercise 1 — Implement HTA's overlap ratio (2 points)
#
# Write `hta_overlap_ratio(comm, compute)`: the overlap ratio $|C \cap K| / |C|$ of section 1 as a
# float. `comm` and `compute` are (N, 2) arrays (or lists of pairs) of $[start, end)$ intervals in
# seconds, in any order; intervals of one kind may overlap each other (kernels on several
# streams) or touch, and some may have zero length. Every test has communication time > 0.
#
# Merge each set into disjoint intervals first (sort by start; a start later than every earlier
# end opens a new interval), then measure the time both sets cover. The grade cell disables
# `course_lib.overlap`'s interval functions while your function runs.


# %% nbgrader={"grade": false, "grade_id": "overlap_impl_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def hta_overlap_ratio(comm, compute):
    """|union(comm) ∩ union(compute)| / |union(comm)| of [start, end) intervals (HTA's overlap)."""
    ### BEGIN SOLUTION

    def merge(iv):
        iv = sorted((float(a), float(b)) for a, b in np.asarray(iv, dtype=float).reshape(-1, 2))
        out = []
        for a, b in iv:
            if b <= a:
                continue
            if out and a <= out[-1][1]:
                out[-1][1] = max(out[-1][1], b)
            else:
                out.append([a, b])
        return out

    c, k = merge(comm), merge(compute)
    both, i, j = 0.0, 0, 0
    while i < len(c) and j < len(k):
        lo, hi = max(c[i][0], k[j][0]), min(c[i][1], k[j][1])
        both += max(0.0, hi - lo)
        if c[i][1] < k[j][1]:
            i += 1
        else:
            j += 1
    return both / sum(b - a for a, b in c)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "overlap_impl_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 1: hta_overlap_ratio(comm, compute) = |∪comm ∩ ∪compute| / |∪comm|, implemented by hand."""
_NO_DELEGATION = [
    (OV, name)
    for name in (
        "overlap_ratio",
        "exposed_communication",
        "union",
        "intersection",
        "subtract",
        "total_length",
        "_merge",
        "_sweep",
        "_intersection_merged",
        "_subtract_merged",
        "_length",
    )
]
with forbid(*_NO_DELEGATION, exercise="Exercise 1"):
    _two_streams = hta_overlap_ratio([[2.0, 6.0]], [[0.0, 3.0], [1.0, 4.0], [5.0, 8.0]])
check_type("hta_overlap_ratio(...)", _two_streams, float, np.float64)
check_float(
    "hta_overlap_ratio([[2, 6]], [[0, 3], [1, 4], [5, 8]])",
    _two_streams,
    0.75,
    known_wrong={1.0: "the compute kernels [0, 3) and [1, 4) overlap: merge them before measuring"},
)
### BEGIN HIDDEN TESTS
_CASES = [  # (comm, compute, expected): computed once with course_lib.overlap.overlap_ratio
    ([[8.8, 17.2], [4.5, 11.1], [17.7, 26.9]], [[23.4, 32.4]], 0.15981735159817353),
    ([[20.2, 30.4]], [[7.3, 10.2], [24.5, 33.1]], 0.5784313725490196),
    (
        [[17.6, 28.9], [13.0, 22.0]],
        [[17.3, 25.1], [38.0, 46.2], [19.8, 21.4], [8.3, 17.2], [38.0, 46.7]],
        0.7547169811320755,
    ),
    (
        [[25.2, 35.5]],
        [[16.8, 25.4], [13.0, 16.5], [34.8, 37.3], [37.3, 39.4], [14.8, 16.4], [11.3, 19.8]]
        + [[32.2, 40.6], [10.2, 14.6]],
        0.3398058252427181,
    ),
    ([[26.8, 32.2], [22.4, 32.4]], [[1.3, 11.2]], 0.0),
    (
        [[16.3, 20.1], [29.2, 35.9], [0.2, 12.0]],
        [[7.6, 10.0], [15.8, 22.9], [18.3, 21.1], [17.1, 22.6], [19.9, 29.2]],
        0.27802690582959644,
    ),
    # touching compute kernels; a zero-length kernel; comm entirely inside compute
    ([[0.5, 1.5]], [[0.0, 1.0], [1.0, 2.0], [1.2, 1.2]], 1.0),
    # overlapping collectives on two comm streams count once; an empty compute set
    ([[0.0, 2.0], [1.0, 3.0]], [[2.5, 9.0]], 1 / 6),
    ([[0.0, 2.0]], np.empty((0, 2)), 0.0),
    # seconds-scale values as a trace gives them, unsorted
    (
        [[0.0912, 0.0978], [0.0720, 0.0775]],
        [[0.0701, 0.0913], [0.0976, 0.0996]],
        0.47933884297520657,
    ),
]
with forbid(*_NO_DELEGATION, exercise="Exercise 1 (hidden cases)"):
    _answers = [
        hta_overlap_ratio(np.array(c, dtype=float), np.array(k, dtype=float)) for c, k, _ in _CASES
    ]
    _as_lists = hta_overlap_ratio(_CASES[2][0], _CASES[2][1])
for _i, ((_c, _k, _expected), _got) in enumerate(zip(_CASES, _answers, strict=True)):
    _c_arr, _k_arr = np.array(_c, dtype=float), np.array(_k, dtype=float).reshape(-1, 2)
    _pairs = sum(
        max(0.0, min(a[1], b[1]) - max(a[0], b[0])) for a in _c_arr for b in _k_arr
    ) / float((_c_arr[:, 1] - _c_arr[:, 0]).sum())
    check_float(
        f"case {_i}: hta_overlap_ratio",
        _got,
        _expected,
        rtol=1e-9,
        known_wrong={
            _pairs: "the sum of pairwise overlaps over the sum of durations: merge each set first",
            1 - _expected: "1 - ratio, the fraction of communication with nothing else running",
        },
    )
check_float("hta_overlap_ratio on lists of pairs", _as_lists, _CASES[2][2], rtol=1e-9)
### END HIDDEN TESTS
passed("Exercise 1")

# %% [markdown]
# ### Exercise 2 — The overlap ratio of every rank (1 point)
#
# Compute HTA's overlap ratio of each of the four ranks in `profiles`, over each rank's whole
# trace (all three steps), with HTA's kernel classes: NCCL kernels are communication, `Memcpy`
# and `Memset` count as neither, every other GPU kernel is computation. Store the four ratios in
# `rank_ratios`, a numpy array of floats ordered by rank (`profiles` is a dict rank → DataFrame).

# %% nbgrader={"grade": false, "grade_id": "trace_ratio_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
rank_ratios = np.empty(len(profiles))
for _rank, _events in profiles.items():
    _k = _events[_events["cat"] == "kernel"]
    _nccl = _k["name"].str.startswith("nccl")
    rank_ratios[_rank] = overlap_ratio(intervals(_k[_nccl]), intervals(_k[~_nccl]))
### END SOLUTION
print(np.round(rank_ratios, 4))

# %% nbgrader={"grade": true, "grade_id": "trace_ratio_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 2: HTA's overlap ratio of ranks 0-3 over their whole traces (numpy array of 4 floats)."""
check_type("rank_ratios", rank_ratios, np.ndarray)
check_range("len(rank_ratios)", len(rank_ratios), 4, 4, what="one ratio per rank")
for _rank in range(4):
    check_range(f"rank_ratios[{_rank}]", rank_ratios[_rank], 0.0, 1.0, what="a fraction")
### BEGIN HIDDEN TESTS
_EXPECTED_RATIOS = [0.7410881885507, 0.7408394159760, 0.7482239875151, 0.7414814043705]
for _rank, _expected in enumerate(_EXPECTED_RATIOS):
    check_float(
        f"rank_ratios[{_rank}]",
        rank_ratios[_rank],
        _expected,
        rtol=1e-6,
        known_wrong={
            1.0: "CPU events counted as computation: the ratio is about GPU kernels",
            1 - _expected: "1 - ratio, the fraction of communication with nothing else running",
            _EXPECTED_RATIOS[0]: "rank 0's ratio: compute each rank from its own trace",
        },
    )
### END HIDDEN TESTS
passed("Exercise 2")

# %% [markdown]
# ### Exercise 3 — Exposed is on the critical path (2 points)
#
# A 4-layer model: each layer's backward takes 2 ms; layers 0-2 have 75 MB of gradients, layer 3
# (the first one the backward pass runs) 25 MB. Every layer is its own bucket, the all-reduces run
# one at a time on one stream at 25 GB/s of algorithm bandwidth without latency, and the optimizer
# (1 ms) needs every gradient. There is no contention.
#
# 1. `exposed_critical`: the communication time on the step's critical path, in seconds.
# 2. `saving_shorter_comm`: the step time saved if every all-reduce took 20 % less time
#    (gradient compression, say), in seconds.
#
# Sketch the timeline by hand first; then check it with `bucketed_allreduce_timeline`,
# `bucket_step_graph` and `exposed_on_critical_path` (section 2).

# %% nbgrader={"grade": false, "grade_id": "exposed_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
_w, _g = [2 * ms] * 4, [75e6, 75e6, 75e6, 25e6]
_small = bucketed_allreduce_timeline(_w, _g, 1.0, 25e9, optimizer_time=1 * ms)
exposed_critical = exposed_on_critical_path(bucket_step_graph(_small))
_shorter = bucketed_allreduce_timeline(_w, _g, 1.0, 25e9 / 0.8, optimizer_time=1 * ms)
saving_shorter_comm = _small.step_time - _shorter.step_time
### END SOLUTION
print(f"exposed_critical = {exposed_critical / ms:.2f} ms")
print(f"saving_shorter_comm = {saving_shorter_comm / ms:.2f} ms")

# %% nbgrader={"grade": true, "grade_id": "exposed_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 3: communication on the critical path (s), and the saving of 20 % shorter all-reduces (s)."""
check_range("exposed_critical", exposed_critical, 0.0, 10 * ms, what="s; 10 ms of comm in all")
check_range(
    "saving_shorter_comm", saving_shorter_comm, 0.0, 2 * ms, what="s; at most 20 % of 10 ms"
)
### BEGIN HIDDEN TESTS
check_float(
    "exposed_critical",
    exposed_critical,
    9 * ms,
    unit="s",
    known_wrong={
        5 * ms: "(1 - ratio) x communication, the time no layer runs: the all-reduces that "
        "queue behind each other are on the critical path even while they overlap",
        3 * ms: "the last bucket only: the all-reduces before it form one chain with it",
        10 * ms: "all communication: the first all-reduce (1 ms) ends before the next bucket is "
        "ready, so it has slack",
    },
)
check_float(
    "saving_shorter_comm",
    saving_shorter_comm,
    1.8 * ms,
    unit="s",
    known_wrong={
        1.0 * ms: "20 % of the timeline's exposed 5 ms: the saving follows the critical path",
        0.6 * ms: "20 % of the last all-reduce only",
        2.0 * ms: "20 % of all communication: the first all-reduce is off the critical path",
    },
)
### END HIDDEN TESTS
passed("Exercise 3")

# %% [markdown]
# ### Exercise 4 — The best bucket cap, and the cap with the best ratio (2 points)
#
# A larger job: the lesson's 24-layer model on 20 GB/s of algorithm bandwidth, 200 µs per
# all-reduce, computation slowed by $c = 0.4$ (the worst case Lee et al. measured) and
# communication by $c' = 0.3$ while they overlap. Among `CAP_CANDIDATES` (bytes):
#
# 1. `best_cap_bytes`: the cap with the shortest step, in bytes (a float);
# 2. `slowdown_of_best_ratio`: how much longer (seconds) the step is at the cap with the highest
#    overlap ratio than at `best_cap_bytes`.

# %% nbgrader={"grade": false, "grade_id": "bucket_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
_model = (layer_backward_times, layer_grad_bytes)
_runs = [
    bucketed_allreduce_timeline(*_model, c, 20e9, 200e-6, 0.4, optimizer_time, comm_contention=0.3)
    for c in CAP_CANDIDATES
]
_steps = np.array([t.step_time for t in _runs])
_ratios = np.array([t.overlap_ratio for t in _runs])
best_cap_bytes = float(CAP_CANDIDATES[np.argmin(_steps)])
slowdown_of_best_ratio = float(_steps[np.argmax(_ratios)] - _steps.min())
### END SOLUTION
print(f"best_cap_bytes = {best_cap_bytes / MiB:g} MiB")
print(f"slowdown_of_best_ratio = {slowdown_of_best_ratio / ms:.2f} ms")

# %% nbgrader={"grade": true, "grade_id": "bucket_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 4: the cap with the shortest step (bytes) and the extra step time at the highest-ratio cap (s)."""
check_range(
    "best_cap_bytes", best_cap_bytes, 1 * MiB, 1600 * MiB, what="bytes, between 1 and 1600 MiB"
)
check_range("slowdown_of_best_ratio", slowdown_of_best_ratio, 0.0, 0.1, what="s, and >= 0")
### BEGIN HIDDEN TESTS
check_float(
    "best_cap_bytes",
    best_cap_bytes,
    50 * MiB,
    unit="bytes",
    known_wrong={
        5 * MiB: "the cap with the highest overlap ratio, not the shortest step",
        25 * MiB: "DDP's default cap: under this contention and latency another cap is faster",
        1600 * MiB: "one bucket: the fewest latencies, but nothing overlaps",
        50e6: "50 MB; bucket caps count MiB (2**20 bytes)",
    },
)
check_float(
    "slowdown_of_best_ratio",
    slowdown_of_best_ratio,
    0.0026968295243957,
    rtol=1e-6,
    unit="s",
    known_wrong={0.0: "no slowdown, as if the highest ratio gave the shortest step"},
)
### END HIDDEN TESTS
passed("Exercise 4")

# %% [markdown]
# ### Exercise 5 — Does overlap still pay under contention? (2 points)
#
# 1. The lesson's model with 25 MiB buckets at 12 GB/s and 50 µs, computation slowed by
#    $c = 0.19$ and communication by $c' = 0.3$ while they overlap. How much step time does
#    overlapping save compared with running every all-reduce after the backward pass (same
#    buckets)? Store it in `overlap_saving`, seconds (negative if overlapping loses).
# 2. On another machine a GEMM that shares the GPU with an NCCL kernel slows by $c = 0.9$. What is
#    the largest communication slowdown $c'$ at which overlapping still does not lose? Store it
#    in `max_comm_contention`, a float.

# %% nbgrader={"grade": false, "grade_id": "contention_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
_model = (layer_backward_times, layer_grad_bytes, 25 * MiB, 12e9, latency)
_run = bucketed_allreduce_timeline(*_model, 0.19, optimizer_time, comm_contention=0.3)
overlap_saving = _run.serial_step_time - _run.step_time
max_comm_contention = 1 / 0.9
### END SOLUTION
print(
    f"overlap_saving = {overlap_saving / ms:.2f} ms, max_comm_contention = {max_comm_contention:.3f}"
)

# %% nbgrader={"grade": true, "grade_id": "contention_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 5: the step time overlapping saves at c = 0.19, c′ = 0.3 (s), and the break-even c′ at c = 0.9."""
check_range("overlap_saving", overlap_saving, -0.2, 0.2, what="seconds, not ms")
check_range("max_comm_contention", max_comm_contention, 0.0, 10.0, what="a slowdown factor c′")
### BEGIN HIDDEN TESTS
check_float(
    "overlap_saving",
    overlap_saving,
    0.054162051282051,
    rtol=1e-6,
    unit="s",
    known_wrong={
        0.088853333333333: "the overlapped time O: overlapped work progresses slower, "
        "O·(1/(1+c) + 1/(1+c′) − 1) is saved",
        0.074666666666667: "O/(1+c): the communication slows down too (c′)",
    },
)
check_float(
    "max_comm_contention",
    max_comm_contention,
    1 / 0.9,
    rtol=1e-6,
    known_wrong={
        0.9: "c itself; the condition is c·c′ ≤ 1",
        0.1: "1 − c; the condition is 1/(1+c) + 1/(1+c′) ≥ 1, i.e. c·c′ ≤ 1",
        1 / 1.9: "1/(1+c); the condition is c·c′ ≤ 1",
    },
)
### END HIDDEN TESTS
passed("Exercise 5")

# %% [markdown]
# ### Exercise 6 — A faster GPU, a worse ratio (1 point)
#
# Run A is the lesson's model (3.2 ms of backward per layer); run B has a GPU that runs the
# backward pass twice as fast (`transformer_grad_tensors(layer_backward_time=1.6e-3)`). Both use
# 25 MiB buckets, 12 GB/s, 50 µs, $c = 0.2$, $c' = 0$ and the same optimizer time. Which run has
# the higher overlap ratio, and which the shorter step? Set `faster_gpu` to one of
# - `"A, A"`: A has the higher ratio and the shorter step;
# - `"A, B"`: A has the higher ratio, B the shorter step;
# - `"B, A"`: B has the higher ratio, A the shorter step;
# - `"B, B"`: B has the higher ratio and the shorter step.

# %% nbgrader={"grade": false, "grade_id": "faster_gpu_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
_a = bucketed_allreduce_timeline(
    layer_backward_times, layer_grad_bytes, 25 * MiB, 12e9, latency, 0.2, optimizer_time
)
_wb, _gb = transformer_grad_tensors(layer_backward_time=1.6e-3)
_b = bucketed_allreduce_timeline(_wb, _gb, 25 * MiB, 12e9, latency, 0.2, optimizer_time)
faster_gpu = (
    ("A" if _a.overlap_ratio > _b.overlap_ratio else "B")
    + ", "
    + ("A" if _a.step_time < _b.step_time else "B")
)
### END SOLUTION
print(faster_gpu)

# %% nbgrader={"grade": true, "grade_id": "faster_gpu_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 6: which run has the higher overlap ratio and which the shorter step ("A, B" etc.)."""
check_type("faster_gpu", faster_gpu, str)
### BEGIN HIDDEN TESTS
check_choice(
    "faster_gpu",
    faster_gpu,
    "A, B",
    {
        "A, A": "the slow GPU wins on both; but halving the backward pass does shorten the step",
        "A, B": "A hides more communication behind its longer backward pass; B finishes first",
        "B, A": "the fast GPU leaves less computation to hide communication behind, so its "
        "ratio is lower, not higher",
        "B, B": "a higher ratio for the fast GPU; but its shorter backward pass hides less",
    },
)
### END HIDDEN TESTS
passed("Exercise 6")

# %% [markdown]
# ### Explained answer — "Our communication is hidden" (2 points, graded by hand)
#
# A teammate writes: "DDP launches every all-reduce asynchronously on its own stream and HTA
# reports 92 % overlap on all ranks, so communication costs us nothing. Let's not bother with the
# network upgrade." In four to six sentences: what do the asynchronous launch and the 92 % tell
# you, and what not? Name two ways communication can still cost step time, and the measurement
# (or what-if) that would show what the network upgrade buys.

# %% [markdown] nbgrader={"grade": true, "grade_id": "explain_hidden", "locked": false, "points": 2, "schema_version": 3, "solution": true, "task": false}
# **Model answer.** An asynchronous launch only means the CPU does not wait; the all-reduce still
# starts when its bucket is ready and the previous collective has finished, and the step waits
# for the last one before the optimizer. 92 % overlap says that 8 % of communication time ran with
# no computation; it says nothing about the critical path. If the collectives queue back to back
# (section 2), all of them are on the critical path, overlapped or not, and a faster network
# shortens the step by about the fraction it saves on each: 10 % more bandwidth saved 9.2 ms of a
# 110 ms step where the timeline showed 28 ms exposed. Communication can also cost time by
# slowing the computation it overlaps (contention: the ratio even goes up as the backward pass
# slows), and the last bucket is always exposed. Part of each NCCL kernel can be waiting for a
# slower rank. To decide on the upgrade, build the step graph (or model) and compute the
# communication on the critical path, or run a what-if with the new bandwidth; better still,
# measure the step time with a faster link or with communication removed (e.g. a single-rank
# run).
#
# **Rubric (2 points).** 1 point: the launch and the ratio describe coincidence, not the critical
# path (with one concrete mechanism: readiness/last bucket, queued collectives, contention, or
# waiting for other ranks). 1 point: a measurement or what-if that gives the step-time effect
# (critical-path communication, what-if step time, controlled experiment).

# %% [markdown]
# ## Takeaways
#
# - HTA's overlap ratio $|C \cap K| / |C|$ merges each kernel class before measuring; it is a
#   property of one rank's timeline, and $(1 - r)|C|$ is only the communication with nothing else
#   running.
# - The exposed communication is the communication on the critical path: queued collectives
#   are on it even while they overlap, and what a faster network buys follows it.
# - A bucket's all-reduce starts only when its last gradient is ready; the last bucket is
#   exposed, and the bucket cap trades per-collective latency against that last bucket.
# - Overlapped work slows down: overlapping the same buckets pays only while $c \cdot c' < 1$,
#   and contention raises the ratio while the step gets slower.
# - The trap: reading "launched asynchronously" or "92 % overlap" as "communication is free".
#   Compare step times and ask whether communication is on the critical path.
