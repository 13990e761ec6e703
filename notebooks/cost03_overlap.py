# %% [markdown]
# # cost03 · Communication is hidden only when readiness and shared resources allow it
#
# **Objective.** Calculate overlap from an actual schedule and separate asynchronous launch
# capability from communication removed from the step's critical path.
#
# **Time:** 32 min · **Level:** advanced
#
# You will be able to
# - compute a rank's overlap ratio from its trace, exactly as Holistic Trace Analysis does;
# - tell non-overlapped communication from communication on the critical path, and predict what a
#   faster network buys;
# - explain why a bucket's all-reduce waits for its last gradient, and choose a bucket size;
# - decide whether overlapping still pays when computation and communication slow each other.
#
# **What you need:** cost01 (critical path, `step_graph`, `stream_order_edges`) and cost02 (trace
# events as a DataFrame: `ts`, `dur`, `cat`, `name`, `stream`, in seconds). numpy arrays of shape
# (N, 2) and boolean masks on a DataFrame.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
# %matplotlib inline
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

import course_lib.overlap as OV
from course_lib.checks import check_float, check_range, check_type, forbid, passed
from course_lib.explorers.overlap import BUCKET_MIB_OPTIONS, overlap_explorer
from course_lib.figures.overlap import OVERLAP_COLOURS, overlap_timeline
from course_lib.graph import critical_path, step_graph, stream_order_edges
from course_lib.overlap import (
    bucket_step_graph,
    bucketed_allreduce_timeline,
    exposed_communication,
    exposed_on_critical_path,
    overlap_ratio,
    total_length,
    transformer_grad_tensors,
)
from course_lib.tracegen import load_dp_profile, with_copies_and_syncs

rng = np.random.default_rng(3)  # the course's convention; nothing in this lesson is random
ms = 1e-3  # one millisecond in seconds
MiB = 2.0**20  # DDP's bucket_cap_mb counts MiB: 25 MiB = 25 * 2**20 bytes
FIRST_BUCKET = 1 * MiB  # DDP caps its first bucket at 1 MiB (c10d reducer.hpp)

# 3 training steps of a data-parallel model on 4 ranks, one Kineto trace per rank, as DataFrames in
# seconds. SYNTHETIC: written by course_lib.tracegen. `traces` (Exercise 2) adds a prefetch (a copy,
# a memset and a kernel on a side stream) and a Stream Sync to every step.
profiles = load_dp_profile()
traces = with_copies_and_syncs(profiles)


def intervals(events: pd.DataFrame) -> np.ndarray:
    """(N, 2) array of [start, end) in seconds of trace events."""
    return np.column_stack([events["ts"], events["ts"] + events["dur"]])


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
# Data-parallel training all-reduces gradients on a communication stream while the compute
# stream runs the backward pass. How well this hides communication is usually quoted as the
# **overlap ratio** of Holistic Trace Analysis (HTA, Meta's library for PyTorch profiler traces):
#
# $$r = \frac{\text{time spent in computation while communicating}}{\text{time spent in communication}}
#   = \frac{|\,C \cap K\,|}{|\,C\,|},$$
#
# where $C$ is the union of the $[start, end)$ intervals of the rank's communication events, $K$
# the union of its computation events, and $|\cdot|$ the total length of a set of intervals.
# Both unions are **merged** first, so two kernels running at once on two streams count once.
#
# In HTA 0.5.0 (`get_comm_comp_overlap`, with the classifiers of hta/utils/utils.py), among GPU
# events (those with a stream):
# - communication: the name matches `^nccl.*Kernel` (`ncclDevKernel_AllReduce_…`);
# - memory, in neither set: the name starts with `Memcpy`, `Memset` or `dma`;
# - computation: every other GPU event, on any stream, except synchronization records (names
#   containing `Sync`, such as `Stream Sync`), which are in neither set.
#
# The data: cost02's four ranks, three steps each, synthetic (`course_lib.tracegen` models DDP).
# Take rank 0's second step.


# %%
def step_kernels(events: pd.DataFrame, step_name: str) -> tuple[pd.DataFrame, float]:
    """The GPU kernels that start inside one profiler step of a rank, and the step's start (s)."""
    step = events[events["name"] == step_name].iloc[0]
    inside = (events["ts"] >= step["ts"]) & (events["ts"] < step["ts"] + step["dur"])
    return events[inside & (events["cat"] == "kernel")], step["ts"]


kernels, step_start = step_kernels(profiles[0], "ProfilerStep#1")
is_nccl = kernels["name"].str.match(r"^nccl.*Kernel")
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
# The green band is $C \cap K$, the numerator. Three of the four all-reduces run under the
# backward pass; the fourth, in vermillion, starts when the backward pass has ended, and the
# optimizer (the last blue bar) waits for it. So 76 % of the communication "overlaps", and the
# step still waits 5.3 ms for the network. The communication with nothing else running is
#
# $$X = |\,C \setminus K\,| = (1 - r)\,|C|.$$

# %% [markdown]
# ## 2. Launched asynchronously is not hidden: count the communication on the critical path
#
# DDP launches each all-reduce asynchronously: the CPU enqueues it and moves on. That says where
# the collective runs, not whether the step waits for it. "Exposed communication" is used for two
# quantities; keep them apart:
# - the **non-overlapped** time $X = (1 - r)\,|C|$ of section 1, what a timeline shows;
# - the **critical-path** time $E = \sum_{v \in P^*,\ v \text{ a collective}} d_v$, where $P^*$ is
#   a longest path of the step graph (cost01): how fast the step responds to communication.
#
# $E$ is a sensitivity, not a cost: shortening every collective by a fraction $f$ saves $f E$
# until another path becomes critical, and removing them saves at most $E$. It differs from $X$
# in both directions:
# - an overlapped collective is still on the critical path when the next op waits for its
#   result, or when the collectives queue back to back on their stream;
# - a collective with nothing else running costs nothing if the step waits for something else
#   meanwhile (the host, a slower rank): it has slack.

# %%
model = (layer_backward_times, layer_grad_bytes)
base = bucketed_allreduce_timeline(
    *model, 25 * MiB, 12e9, latency, 0.0, optimizer_time, first_bucket_bytes=FIRST_BUCKET
)
on_path = exposed_on_critical_path(bucket_step_graph(base))
faster = bucketed_allreduce_timeline(
    *model, 25 * MiB, 13.2e9, latency, 0.0, optimizer_time, first_bucket_bytes=FIRST_BUCKET
)
print(
    f"step {base.step_time / ms:.2f} ms, {len(base.buckets)} buckets, ratio {base.overlap_ratio:.3f}"
)
print(f"communication {total_length(base.comm) / ms:.2f} ms")
print(f"  non-overlapped, X = (1 - r)|C|: {base.exposed_comm / ms:.2f} ms")
print(f"  on the critical path, E:        {on_path / ms:.2f} ms")
print(f"10 % more bandwidth saves {(base.step_time - faster.step_time) / ms:.2f} ms")
overlap_timeline(
    base,
    title="25 MiB buckets at 12 GB/s: after the first, each all-reduce waits for the one before",
)
plt.show()

# %% [markdown]
# The all-reduces cannot keep up with the backward pass: after the first, the comm stream is
# never idle, so 36 of the 37 all-reduces lie on the critical path, although 73 % of the
# communication overlaps. With 10 % more bandwidth each transfer takes $1/1.1$ of its time, the
# fixed latency excepted: the model saves 9.0 ms. $X = 27.5$ ms would have predicted 2.5 ms.
# Do not ask "is communication hidden?"; ask "is it on the critical path?"

# %% [markdown]
# ## 3. A bucket can start only when its last gradient is ready
#
# PyTorch DDP groups gradients into **buckets** in the order the backward pass produces them (the
# last layer first) and all-reduces the buckets in that order, each as soon as every gradient in
# it is ready (Li et al. 2020, "PyTorch Distributed", §3.2). A bucket closes once its size reaches
# its cap: `bucket_cap_mb` (25 MiB by default), except the first, which DDP caps at 1 MiB so that
# communication starts early (`kDefaultFirstBucketBytes` in c10d's reducer.hpp, applied by
# `rebuild_buckets` in reducer.cpp). The model does the same (`first_bucket_bytes`), with a weight
# matrix's gradient as one unit. With one communication stream, bucket $k$'s all-reduce starts at
#
# $$S_k = \max(\text{ready}_k,\ S_{k-1} + t_{k-1}), \qquad t_k = \alpha + \frac{B_k}{\beta},$$
#
# where $\text{ready}_k$ is the end of the backward kernel that produces the bucket's last
# gradient, $B_k$ the bucket's bytes, $\alpha$ a fixed cost per collective (`latency`) and $\beta$
# the all-reduce's **algorithm bandwidth**, algbw $= S / t$ for an $S$-byte all-reduce, with $t$
# roughly "overhead + size / bw" (nccl-tests, doc/PERFORMANCE.md).
#
# The last bucket holds the first layer's gradients, which the backward pass produces last, so at
# least $\alpha + B_{\text{last}}/\beta$ is exposed whatever the network does. Small buckets
# start early and leave a small last bucket, but pay $\alpha$ many times; large buckets pay
# $\alpha$ rarely, but the last one is large.

# %%
sweep = [
    bucketed_allreduce_timeline(
        *model, cap, 12e9, latency, 0.0, optimizer_time, first_bucket_bytes=FIRST_BUCKET
    )
    for cap in CAP_CANDIDATES
]
steps = np.array([t.step_time for t in sweep])
ratios = np.array([t.overlap_ratio for t in sweep])
caps_mib = np.array(BUCKET_MIB_OPTIONS)
best = int(np.argmin(steps))
no_comm = (layer_backward_times.sum() + optimizer_time) / ms
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
ax_step.axhline(no_comm, color="#777777", ls=":", lw=1.5)
ax_step.text(1.1, no_comm + 2, "no communication", color="#555555")
ax_ratio.plot(caps_mib, ratios, "-o", color=OVERLAP_COLOURS["overlap"], lw=2)
ax_step.set(ylabel="step time (ms)", title="Step time vs bucket cap")
ax_ratio.set(ylabel="overlap ratio", ylim=(0, 1), title="Overlap ratio vs bucket cap")
for ax in (ax_step, ax_ratio):
    ax.set_xscale("log")
    ax.set_xticks([1, 10, 25, 100, 400, 1600], ["1", "10", "25", "100", "400", "1600"])
    ax.minorticks_off()
    ax.set_xlabel("bucket cap (MiB)")
    ax.grid(alpha=0.3)
big = sweep[BUCKET_MIB_OPTIONS.index(400)]
queued = big.comm[-1, 0] - big.backward_end  # the last bucket is ready, its all-reduce waits
overlap_timeline(
    big,
    ax=bottom.subplots(),
    title=f"400 MiB buckets: the last one ({big.bucket_sizes[-1] / MiB:.0f} MiB) queues "
    f"{queued / ms:.0f} ms behind the one before",
)
plt.show()

# %% [markdown]
# The circle marks the best cap, DDP's 25 MiB here, 27 ms above the step without communication
# (dotted). To its right the step climbs fast: with 400 MiB caps the last bucket is ready when
# the backward pass ends, but its 29 ms all-reduce queues behind the previous one (bottom).

# %% [markdown]
# ## 4. Shared resources: overlapped work runs slower
#
# An NCCL kernel runs on the GPU's streaming multiprocessors and moves data through the same
# memory as the GEMMs of the backward pass, so both slow down while they overlap. Lee et al.
# (2025, arXiv:2507.03114, abstract) measured an average slowdown of 18.9 % (up to 40.0 %) for
# computation overlapped with communication on A100, H100, MI210 and MI250 GPUs, and still found
# sequential execution 10.2 % slower on average.
#
# The model has two factors: while they overlap, computation progresses at rate $1/(1+c)$
# (`contention`) and communication at $1/(1+c')$ (`comm_contention`). Over $O$ seconds of overlap
# the step gets $O/(1+c)$ of computation and $O/(1+c')$ of communication done, which one after the
# other would take their sum. So, with the same buckets,
#
# $$T_{\text{overlap}} = T_{\text{serial}} - O\left(\frac{1}{1+c} + \frac{1}{1+c'} - 1\right),$$
#
# where $T_{\text{serial}}$ is the step with every all-reduce after the backward pass. Overlap
# pays while the two together progress faster than one at a time,
# $\frac{1}{1+c} + \frac{1}{1+c'} > 1$, which is $c \cdot c' < 1$.

# %%
fig, ax = plt.subplots(figsize=(9, 3.8), layout="constrained")
comm_slowdowns = np.linspace(0.0, 6.0, 61)
for c, colour in [(0.19, "#0072B2"), (0.4, "#E69F00"), (0.9, "#D55E00")]:
    gain = []
    for c_comm in comm_slowdowns:
        t = bucketed_allreduce_timeline(
            *model, 25 * MiB, 12e9, latency, c, optimizer_time, FIRST_BUCKET, c_comm
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
# Each curve is one compute slowdown $c$; it crosses zero exactly at $c' = 1/c$ (dotted). At Lee
# et al.'s average $c = 0.19$, overlap keeps paying up to $c' = 5.3$. Contention also corrupts
# the overlap ratio as a score: a slower backward pass leaves more time for the same all-reduces
# to hide behind, so $r$ goes *up* while the step gets slower.

# %% [markdown]
# ## Explore
#
# Left: the timeline, with the step (dashed) and the step without overlap, same buckets (dotted).
# Right: step time against bucket cap. Below: the ratio, $X$ and $E$. Try:
#
# 1. Drag the bandwidth to 50 GB/s: the comm stream gets gaps and $E$ shrinks to the last
#    all-reduce.
# 2. With $c = 0.2$, drag $c'$ to 1.5: overlap still pays. Set $c = 1.0$: the dotted line passes
#    the dashed one as $c'$ crosses 1.

# %%
explorer = overlap_explorer(
    layer_backward_times,
    layer_grad_bytes,
    latency=latency,
    optimizer_time=optimizer_time,
    first_bucket_bytes=FIRST_BUCKET,
)
explorer

# %% [markdown]
# ## Exercises
#
# Answer in the cells marked `YOUR CODE HERE`, then run the grade cell below each: its visible
# checks give quick feedback; hidden tests check more cases when the notebook is graded. Times are
# in seconds (`ms` converts), sizes in bytes (`MiB`).
#
# ### Exercise 1 — Implement HTA's overlap ratio (2 points)
#
# Write `hta_overlap_ratio(comm, compute)`: the overlap ratio $|C \cap K| / |C|$ of section 1 as a
# float. `comm` and `compute` are (N, 2) arrays (or lists of pairs) of $[start, end)$ intervals in
# seconds, in any order; intervals of one kind may overlap each other (kernels on several
# streams) or touch, and some may have zero length. Every test has communication time > 0.
#
# Merge each set into disjoint intervals first, then measure the time both sets cover. The grade
# cell disables `course_lib.overlap`'s interval functions while your function runs.


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
# `traces` holds the same four ranks as `profiles` plus, in every step and all during the last
# all-reduce, a prefetch of the next batch on a side stream (a copy, a memset and a kernel that
# normalizes the batch) and a `Stream Sync` on the compute stream. Compute HTA's overlap ratio of
# each rank over its whole trace (all three steps), with the classes of section 1. Store the four
# ratios, unrounded, in `rank_ratios`, a numpy array of floats ordered by rank (`traces` is a
# dict rank → DataFrame).

# %% nbgrader={"grade": false, "grade_id": "trace_ratio_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
rank_ratios = np.empty(len(traces))
for _rank, _events in traces.items():
    _gpu = _events[_events["stream"].notna()]
    _comm = _gpu["name"].str.match(r"^nccl.*Kernel")
    _memory = _gpu["name"].str.match(r"^(Memcpy|Memset|dma)")
    _sync = _gpu["name"].str.contains("Sync")
    _compute = ~_comm & ~_memory & ~_sync
    rank_ratios[_rank] = overlap_ratio(intervals(_gpu[_comm]), intervals(_gpu[_compute]))
### END SOLUTION
print(np.round(rank_ratios, 4))

# %% nbgrader={"grade": true, "grade_id": "trace_ratio_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 2: HTA's overlap ratio of ranks 0-3 over their whole traces (numpy array of 4 floats)."""
check_type("rank_ratios", rank_ratios, np.ndarray)
check_range("len(rank_ratios)", len(rank_ratios), 4, 4, what="one ratio per rank")
for _rank in range(4):
    check_range(f"rank_ratios[{_rank}]", rank_ratios[_rank], 0.0, 1.0, what="a fraction")
### BEGIN HIDDEN TESTS
# computed once with the reference solution (HTA 0.5.0's classes on `traces`)
_EXPECTED_RATIOS = [0.7720362535463, 0.7728363066585, 0.7803816689185, 0.7715213995705]
_MEMORY_AS_COMPUTE = [0.8378021619334, 0.8410732065656, 0.8432608082153, 0.8391014057971]
_SYNC_AS_COMPUTE = [0.8285981995097, 0.8342254715216, 0.8349390516556, 0.8307514202809]
_BOTH_AS_COMPUTE = [0.8943641078967, 0.9024623714288, 0.8978181909525, 0.8983314265076]
_WITHOUT_PREFETCH_KERNEL = [0.7410881885507, 0.7408394159760, 0.7482239875151, 0.7414814043705]
_PER_STEP_MEAN = [0.7722782364398, 0.7727462637917, 0.7808684253646, 0.7711546052269]
for _rank, _expected in enumerate(_EXPECTED_RATIOS):
    check_float(
        f"rank_ratios[{_rank}]",
        rank_ratios[_rank],
        _expected,
        rtol=1e-6,
        known_wrong={
            1.0: "CPU events counted as computation: the ratio is about GPU events",
            1 - _expected: "1 - ratio, the fraction of communication with nothing else running",
            _EXPECTED_RATIOS[0]: "rank 0's ratio: compute each rank from its own trace",
            _MEMORY_AS_COMPUTE[_rank]: "Memcpy/Memset counted as computation: HTA counts them "
            "in neither set",
            _SYNC_AS_COMPUTE[_rank]: "Stream Sync counted as computation: HTA 0.5.0 leaves GPU "
            "synchronization records out of both sets",
            _BOTH_AS_COMPUTE[_rank]: "every non-NCCL GPU event counted as computation: copies, "
            "memsets and syncs are in neither set",
            _WITHOUT_PREFETCH_KERNEL[_rank]: "the ratio without the side stream's normalization "
            "kernel: use `traces`, and count computation on every stream",
            _PER_STEP_MEAN[_rank]: "the mean of per-step ratios: HTA divides over the whole trace",
        },
    )
### END HIDDEN TESTS
passed("Exercise 2")

# %% [markdown]
# ### Exercise 3 — Exposed is on the critical path (2 points)
#
# One rank's backward pass, one bucket per layer (times in ms):
#
# | ops | lane | duration | also waits for |
# |---|---|---|---|
# | `host` | CPU | 7 | — |
# | `bwd L4`, `bwd L3`, …, `bwd L0` | compute stream, in this order | 2 each | `bwd L2` waits for `host` (the CPU launches it only then) |
# | `all-reduce L4`, …, `all-reduce L0` | comm stream, in this order | 1, 2.5, 3, 2, 1.5 | `all-reduce Li` waits for `bwd Li` |
# | `optimizer` | compute stream, after `bwd L0` | 1 | `all-reduce L0` |
#
# Ops on one stream run one at a time, in this order. Set `exposed_critical` to the communication
# time on the critical path, in seconds.

# %% nbgrader={"grade": false, "grade_id": "exposed_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
_layers = [f"bwd L{i}" for i in range(4, -1, -1)]
_reduces = [f"all-reduce L{i}" for i in range(4, -1, -1)]
_durations = {"host": 7 * ms, **{op: 2 * ms for op in _layers}, "optimizer": 1 * ms}
_durations |= dict(zip(_reduces, np.array([1, 2.5, 3, 2, 1.5]) * ms, strict=True))
_deps = stream_order_edges({"compute": [*_layers, "optimizer"], "comm": _reduces})
_deps += [(f"bwd L{i}", f"all-reduce L{i}") for i in range(5)]
_deps += [("host", "bwd L2"), ("all-reduce L0", "optimizer")]
_graph = step_graph(_durations, _deps)
exposed_critical = float(sum(_durations[op] for op in critical_path(_graph).ops if "all" in op))
### END SOLUTION
print(f"exposed_critical = {exposed_critical / ms:.2f} ms")

# %% nbgrader={"grade": true, "grade_id": "exposed_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 3: the communication time on the step's critical path (s)."""
check_range("exposed_critical", exposed_critical, 0.0, 10 * ms, what="s; 10 ms of comm in all")
### BEGIN HIDDEN TESTS
check_float(
    "exposed_critical",
    exposed_critical,
    6.5 * ms,
    unit="s",
    known_wrong={
        5 * ms: "the non-overlapped time (1 - ratio)|C|: all-reduce L3 runs alone while the "
        "compute stream waits for the host, so it has slack, while L2 and L1 queue on the "
        "critical path although they overlap",
        1.5 * ms: "the last all-reduce only: L2 and L1 hold it up on the comm stream",
        10 * ms: "all communication: L4 and L3 end before anything waits for them",
        9 * ms: "the step without the host's wait: bwd L2 cannot start before 7 ms",
        2.5 * ms: "what removing all communication saves (16.5 → 14 ms), or the communication "
        "after the backward pass: E sums every collective on the critical path, overlapped or "
        "not; it is what the step responds to, up to the point the compute path takes over",
    },
)
### END HIDDEN TESTS
passed("Exercise 3")

# %% [markdown]
# ### Exercise 4 — The best bucket cap under contention (2 points)
#
# The lesson's 24-layer model on 30 GB/s of algorithm bandwidth, 150 µs per all-reduce, DDP's
# 1 MiB first bucket, computation slowed by $c = 0.4$ and communication by $c' = 0.2$ while they
# overlap, same optimizer. Set `best_cap_bytes` to the cap among `CAP_CANDIDATES` that gives the
# shortest step, in bytes (a float). Print each cap's overlap ratio too: a higher ratio can come
# with a slower step.

# %% nbgrader={"grade": false, "grade_id": "bucket_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
_runs = [
    bucketed_allreduce_timeline(
        layer_backward_times,
        layer_grad_bytes,
        _cap,
        30e9,
        150e-6,
        0.4,
        optimizer_time,
        first_bucket_bytes=FIRST_BUCKET,
        comm_contention=0.2,
    )
    for _cap in CAP_CANDIDATES
]
for _cap, _run in zip(CAP_CANDIDATES, _runs, strict=True):
    print(
        f"{_cap / MiB:5g} MiB: step {_run.step_time / ms:6.2f} ms, ratio {_run.overlap_ratio:.3f}"
    )
best_cap_bytes = float(CAP_CANDIDATES[np.argmin([_run.step_time for _run in _runs])])
### END SOLUTION
print(f"best_cap_bytes = {best_cap_bytes / MiB:g} MiB")

# %% nbgrader={"grade": true, "grade_id": "bucket_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 4: the bucket cap with the shortest step under contention (bytes)."""
check_range("best_cap_bytes", best_cap_bytes, 1 * MiB, 1600 * MiB, what="bytes, 1 to 1600 MiB")
### BEGIN HIDDEN TESTS
check_float(
    "best_cap_bytes",
    best_cap_bytes,
    100 * MiB,
    rtol=1e-9,
    unit="bytes",
    known_wrong={
        1 * MiB: "the cap with the highest overlap ratio; also the best one without the 150 µs "
        "latency, or with c = 0",
        25 * MiB: "DDP's default; also the best cap with c′ = 0, with c and c′ swapped, or with "
        "the lesson's 50 µs latency",
        50 * MiB: "the best cap at the lesson's 12 GB/s, at 3 GB/s, or without DDP's 1 MiB first "
        "bucket",
        200 * MiB: "the best cap at 300 GB/s: 30 GB/s is 30e9 bytes/s",
        1600 * MiB: "one bucket: the fewest latencies, but nothing overlaps (also the best cap "
        "with the latency in ms, or with the slowdowns as factors 1.4 and 1.2)",
        100e6: "100 MB; bucket caps count MiB (2**20 bytes)",
    },
)
### END HIDDEN TESTS
passed("Exercise 4")

# %% [markdown]
# ### Exercise 5 — When does overlap stop paying? (1 point)
#
# On another machine a GEMM that takes 2.00 ms alone takes 2.70 ms while an all-reduce runs
# beside it. What is the largest communication slowdown $c'$ at which overlapping the same
# buckets still does not lose to running every all-reduce after the backward pass? Set
# `max_comm_contention` to it, a float, to two decimal places (a search on a 0.01 grid is fine).

# %% nbgrader={"grade": false, "grade_id": "contention_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
_c = 2.70 / 2.00 - 1  # the GEMM progresses at 1/(1 + c) while the all-reduce runs
max_comm_contention = 1 / _c  # overlap pays while c·c′ ≤ 1
### END SOLUTION
print(f"max_comm_contention = {max_comm_contention:.3f}")

# %% nbgrader={"grade": true, "grade_id": "contention_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 5: the largest c′ at which overlapping does not lose, given a GEMM 2.00 → 2.70 ms (±0.01)."""
check_range("max_comm_contention", max_comm_contention, 0.0, 100.0, what="a slowdown factor c′")
### BEGIN HIDDEN TESTS
check_float(  # two decimals asked: 2.85 (the largest point of a 0.01 grid) and 2.86 both pass
    "max_comm_contention",
    max_comm_contention,
    1 / 0.35,
    rtol=0.0,
    atol=0.01,
    known_wrong={
        0.35: "c itself; overlap pays while c·c′ ≤ 1",
        1 / 1.35: "1/1.35: the slowdown factor is c = 2.70/2.00 − 1 = 0.35, not 1.35",
        0.65: "1 − c; the condition is 1/(1+c) + 1/(1+c′) ≥ 1, i.e. c·c′ ≤ 1",
    },
)
### END HIDDEN TESTS
passed("Exercise 5")

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
# starts when its bucket is ready and the previous collective has finished, and the optimizer
# waits for the last one. 92 % overlap says that 8 % of communication time ran with no
# computation (the non-overlapped "exposed" time); it says nothing about the critical path. If
# the collectives queue back to back (section 2), they are on the critical path, overlapped or
# not, and a faster network shortens the step by about the fraction it saves on
# each: 10 % more bandwidth saved 9.0 ms of a 110 ms step where the timeline showed 27.5 ms
# exposed. Communication also costs time by slowing the computation it overlaps (contention: the
# ratio even goes up as the backward pass slows), and the last bucket is always exposed. Part of
# each NCCL kernel can be waiting for a slower rank. To decide on the upgrade, compute the
# communication on the critical path of the step graph, or run a what-if with the new bandwidth;
# better still, measure the step time with a faster link or with communication removed.
#
# **Rubric (2 points).** 1 point: the launch and the ratio describe coincidence, not the critical
# path (with one concrete mechanism: readiness/last bucket, queued collectives, contention, or
# waiting for other ranks). 1 point: a measurement or what-if that gives the step-time effect
# (critical-path communication, what-if step time, controlled experiment).

# %% [markdown]
# ## Takeaways
#
# - HTA's overlap ratio $|C \cap K| / |C|$ merges each class of GPU events first; copies,
#   memsets and syncs are in neither class.
# - "Exposed" means two things: the non-overlapped time $(1 - r)|C|$, and the communication $E$
#   on the critical path.
# - A bucket's all-reduce waits for its last gradient; the cap trades latency against the
#   exposed last bucket.
# - Overlapping pays only while $c \cdot c' < 1$; contention can raise the ratio and slow the step.
# - The trap: reading "launched asynchronously" or "92 % overlap" as "communication is free".
#   Compare step times and ask whether communication is on the critical path.

# %% [markdown]
# ## Going further (optional, ungraded)
#
# - **An NCCL kernel includes waiting.** It starts when its own rank reaches the collective and
#   ends when the slowest rank has arrived and the data has moved, so the same all-reduce lasts
#   longer on an early rank: in `profiles`, ProfilerStep#1's second bucket takes 5.72 ms on rank 0
#   and 5.12 ms on rank 2. On rank 0, 0.6 ms of "communication" is waiting (cost06 is about
#   such waits), and the overlap ratio counts it as communication.
# - **HTA's rules change between releases.** The name patterns of section 1 are those of HTA
#   0.5.0 (PyPI, 2025). HTA 0.2.0 has three classes (communication if the name contains
#   `ncclKernel`, which misses newer NCCL's `ncclDevKernel_…`; memory; computation), so a
#   `Stream Sync` counts as computation there. `Event Sync` and `Context Sync` have no stream
#   (Kineto writes −1), so no release counts them, and 0.5.0 counts `Stream Wait Event`, whose
#   name lacks `Sync`, as computation. State the tool and version with any ratio you quote.
# - **Where contention comes from.** A GEMM sized for the full GPU can fall into a second wave of
#   thread blocks when an NCCL kernel holds a few SMs: a GEMM taking nearly twice as long next to
#   an all-gather on an H100 is reported on NVIDIA's developer forum ("Compute-Communication
#   Overlap Causes Severe GEMM Performance Degradation because of Tail Effect"). Vendors' tuning
#   guides give the matching advice: measure both modes and keep the faster one (Huawei
#   MindStudio, "Computing and Communication Bandwidth Contention").
# - **The small bucket can go last.** With `DDP_SET_LAST_BUCKET_CAP=1`, DDP's `rebuild_buckets`
#   gives the 1 MiB cap to the last bucket instead of the first, shrinking the all-reduce that is
#   always exposed.
