# %% [markdown]
# # cost05 · Peak activation memory depends on overlapping lifetimes and allocator scope
#
# **Objective.** Attribute live storage and transient workspaces at the actual peak rather than
# summing per-operator allocations or equating allocator statistics with total device use.
#
# **Time:** 32 min · **Level:** advanced
#
# You will be able to
# - compute live bytes from allocation and free events, find the peak and name what is live
#   then;
# - explain why a sum of per-operator allocations overstates memory;
# - predict how many bytes PyTorch's caching allocator reserves beyond those it hands out, and
#   say what else the device holds;
# - estimate a transformer layer's activation bytes under no, selective and full recomputation
#   (Korthikanti et al. 2022).
#
# **What you need:** cost01 (a step as ops on a timeline); pandas boolean indexing, numpy
# `cumsum`; a transformer layer's shapes — sequence length $s$, micro-batch size $b$, hidden
# size $h$, attention heads $a$.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
# %matplotlib inline
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from course_lib.checks import (
    check_float,
    check_names,
    check_type,
    forbid,
    passed,
)
from course_lib.explorers.activation_memory import activation_memory_explorer
from course_lib.figures.memory import memory_timeline
from course_lib.memory import (
    STEP_CATEGORIES,
    CachingAllocator,
    activation_bytes_per_layer,
    lifetimes,
    live_bytes,
    peak,
    training_step_events,
)

rng = np.random.default_rng(5)  # the course's convention; nothing in this lesson is random
ms = 1e-3  # one millisecond in seconds
# Binary units throughout, as PyTorch and nvidia-smi report memory (nvidia-smi prints MiB).
KiB, MiB, GiB = 2**10, 2**20, 2**30

# The exercises' step: 8 layers, h = 1024, 16 heads, 2048-token sequences, an 8192-token
# vocabulary, one sequence per micro-batch, selective recomputation.
EX_SHAPE = dict(
    num_layers=8, seq_len=2048, micro_batch=1, hidden=1024, num_heads=16, vocab_size=8192
)
EX_STEP = training_step_events(**EX_SHAPE, recompute="selective")

# %% [markdown]
# ## 1. Live bytes are a sweep over allocation and free events
#
# A memory profile of a step is a list of **events**: at time $t$ a tensor of $n$ bytes is
# allocated, or freed. Tensor $i$ lives on the half-open interval $[a_i, f_i)$ ($f_i = \infty$
# if it is never freed), and the **live bytes** at time $t$ are
#
# $$M(t) = \sum_i n_i \, [\,a_i \le t < f_i\,],$$
#
# where $n_i$ is tensor $i$'s size and $[\cdot]$ is 1 when the condition holds. Because the
# intervals are half-open, a tensor freed at $t$ and one allocated at $t$ are never live
# together: at equal times, **frees count before allocations**. The **peak** is $\max_t M(t)$,
# a moment: the first $t$ where the maximum is reached.
#
# $M$ changes only at event times, so one sort and one cumulative sum give all of it: $+n$ for
# an allocation, $-n$ for a free, and the running total after the last event at each time. A
# two-layer toy step, in MiB and milliseconds:

# %%
toy = pd.DataFrame(
    [
        (0 * ms, "weights", 40 * MiB, "alloc", "weight"),
        (1 * ms, "act1", 30 * MiB, "alloc", "activation"),
        (2 * ms, "act2", 30 * MiB, "alloc", "activation"),
        (3 * ms, "matmul_ws", 20 * MiB, "alloc", "workspace"),
        (4 * ms, "matmul_ws", 20 * MiB, "free", "workspace"),
        (4 * ms, "grad2", 10 * MiB, "alloc", "gradient"),
        (5 * ms, "act2", 30 * MiB, "free", "activation"),
        (5 * ms, "grad1", 10 * MiB, "alloc", "gradient"),
        (6 * ms, "act1", 30 * MiB, "free", "activation"),
    ],
    columns=["time", "tensor", "bytes", "kind", "category"],
)
times, level = live_bytes(toy)
print("time (ms):       ", times / ms)
print("live bytes (MiB):", level / MiB)
toy_peak = peak(toy)
print(f"peak {toy_peak.bytes / MiB:.0f} MiB at {toy_peak.time / ms:.0f} ms")
display(toy_peak.live.assign(bytes=toy_peak.live["bytes"] / MiB))
memory_timeline(toy, title="Toy step: live bytes by category")
plt.show()

# %% [markdown]
# Read the stack from the bottom: weights, two layers' activations, a matmul workspace that lives
# for 1 ms. At 4 ms the workspace is freed and `grad2` allocated: frees first gives 110 MiB;
# allocation first, with a maximum over every intermediate total, reports 130 MiB, a peak that
# never existed.

# %% [markdown]
# ## 2. The peak is a moment, early in the backward pass
#
# `training_step_events()` builds the events of one training step of a GPT-2-small-shaped model
# (12 layers, $h = 768$, 12 heads, a 50257-token vocabulary) on $s = 1024$, $b = 4$. It is a
# deterministic model, not a trace: each op allocates what an unfused PyTorch implementation
# would. Its categories:
#
# - **weight**, **optimizer**: bf16 weights, Adam's fp32 master weights and moments (with the
#   bf16 gradient, 16 bytes per parameter; Rajbhandari et al. 2020, ZeRO, §3.1); never freed;
# - **activation**: tensors saved for the backward pass (section 5);
# - **workspace**: everything transient — unsaved intermediates, activation gradients, the
#   loss's fp32 gradients, optimizer scratch;
# - **gradient**: weight gradients, freed by `zero_grad(set_to_none=True)`.

# %%
step = training_step_events()  # GPT-2-small shape, s = 1024, b = 4, no recomputation
step_peak = peak(step)
print(
    f"{len(step)} events; peak {step_peak.bytes / GiB:.2f} GiB at {step_peak.time / ms:.2f} ms; "
    f"forward ends at {step.loc[step['phase'] == 'forward', 'time'].max() / ms:.2f} ms"
)
memory_timeline(step, title="One training step, GPT-2-small shape, s = 1024, b = 4")
plt.show()
display(step_peak.live.head(5).assign(bytes=lambda d: d["bytes"] / MiB))  # largest first, MiB

# %% [markdown]
# The orange ramp is the forward pass saving activations layer by layer; the backward pass
# releases them in reverse while green weight gradients accumulate. The peak (dashed line) sits
# at the first ops of the backward pass: every activation is still live, and the loss's backward
# allocates on top before anything is freed.
#
# Two tensors at the peak are workspaces that last about two milliseconds: `head.d_log_probs` and
# `head.d_logits_fp32`, the loss's fp32 gradients over the $s \times b \times V$ logits
# ($4 \cdot 1024 \cdot 4 \cdot 50257$ bytes $\approx 0.77$ GiB each). A transient counts only
# while it lives: allocated mid-backward, these 1.5 GiB would not move this peak.

# %% [markdown]
# ## 3. Summing per-operator allocations overstates the peak
#
# A per-operator memory table answers "how much did this op allocate?". Its total counts tensors
# that never coexist.

# %%
allocated = step[step["kind"] == "alloc"]
by_category = step_peak.live.groupby("category")["bytes"].sum()
totals = pd.DataFrame(
    {
        "sum of allocations (GiB)": allocated.groupby("category")["bytes"].sum() / GiB,
        "live at the peak (GiB)": by_category / GiB,
    }
).reindex(STEP_CATEGORIES)
display(totals.fillna(0).round(2))
print(f"sum {allocated['bytes'].sum() / GiB:.1f} GiB, peak {step_peak.bytes / GiB:.1f} GiB")

# %% [markdown]
# Workspaces allocate 9.6 GiB over the step; 1.5 GiB of it is live at the peak. The per-op table
# tells you which op to fuse or chunk; only the sweep tells you the requirement.

# %% [markdown]
# ## 4. The allocator reserves more than it allocates, and the device holds more than the allocator
#
# PyTorch does not call `cudaMalloc` for every tensor: its **caching allocator** reserves
# *segments* from the device and hands out *blocks* of them. With the default configuration
# (`c10/cuda/CUDACachingAllocator.cpp`):
#
# - a request is rounded up to a multiple of 512 bytes; rounded requests up to 1 MiB use the
#   small pool, larger ones the large pool;
# - the smallest cached free block of the pool that fits is reused (best fit). Only when none
#   fits is a new segment reserved: 2 MiB for a small request, 20 MiB for one below 10 MiB, and
#   from 10 MiB the request rounded up to a multiple of 2 MiB;
# - a block is split only if the remainder is at least 512 bytes (small pool) or more than
#   1 MiB (large pool); otherwise the request gets the whole block;
# - a freed block stays in its segment. An entirely free segment goes back to the device on
#   `torch.cuda.empty_cache()`, or when a `cudaMalloc` fails: the allocator then releases every
#   entirely free cached segment and retries before it reports out of memory.
#
# `torch.cuda.memory_allocated()` counts the blocks handed out, `memory_reserved()` the
# segments: requested $\le$ allocated $\le$ reserved. `CachingAllocator` models these rules.

# %%
alloc = CachingAllocator()
for name, size in [("c", 11 * MiB), ("a", 3 * MiB), ("b", 300 * KiB), ("d", 3 * MiB)]:
    alloc.malloc(name, size)
alloc.free("a")
print(
    f"requested {alloc.requested_bytes / MiB:.2f} MiB, allocated {alloc.allocated_bytes / MiB:.2f}"
    f" MiB, reserved {alloc.reserved_bytes / MiB:.2f} MiB"
)
display(alloc.segments())
print(f"empty_cache() releases {alloc.empty_cache() / MiB:.0f} MiB")

# %% [markdown]
# `c` (11 MiB) got a 12 MiB segment, and since the 1 MiB left over is not more than 1 MiB, all
# 12 MiB count as allocated. After `a` is freed, `empty_cache()` returns nothing: every segment
# still holds a live block.
#
# Over a whole step, reserved climbs in segment-sized steps and **stays**: freed blocks remain
# cached for the next step. A different mix of sizes fragments the cache — enough free bytes, no
# block large enough, no segment entirely free — and reserved grows.
#
# The device reports more still. PyTorch's documentation (CUDA semantics, "Memory management")
# warns that cached memory "will still show as if used in nvidia-smi", and the process also holds
# the CUDA context (hundreds of MiB), NCCL's communication buffers and whatever other libraries
# `cudaMalloc` themselves. So `max_memory_allocated()` is a lower bound on what a job needs.

# %% [markdown]
# ## 5. Activation bytes per layer: sbh(34 + 5as/h), and what recomputation removes
#
# Korthikanti et al. (2022, "Reducing Activation Recomputation in Large Transformer Models",
# §4.1) count the bytes one transformer layer saves for its backward pass, with 16-bit
# activations and 1-byte dropout masks:
#
# $$\text{activations per layer} = sbh\left(34 + \frac{5as}{h}\right) \text{ bytes},$$
#
# where $s$ is the sequence length, $b$ the micro-batch size, $h$ the hidden size and $a$ the
# number of heads; $5as/h$ is the $a \times s \times s$ attention matrix stored three times
# (softmax output, dropout mask, dropout output). With tensor parallelism of degree $t$ plus
# **sequence parallelism** (§4.2.2), every saved tensor is split over the $t$ ranks:
#
# | recomputation | bytes per layer per rank, tensor + sequence parallel |
# |---|---|
# | none | $\frac{sbh}{t}(34 + 5as/h)$ |
# | selective | $34\,sbh/t$ |
# | full | $2\,sbh/t$ |
#
# **Selective recomputation** (§5) drops the $5as^2b$ attention bytes and recomputes them just
# before the layer's backward. **Full recomputation** keeps only each layer's 2-byte input and
# reruns the whole layer forward. Table 2 prints that row as $2\,sbh$, an input replicated on
# every rank; under sequence parallelism the input is already split along $s$, so each rank keeps
# its $2\,sbh/t$ slice (Going further says why).
#
# `training_step_events` saves exactly these tensors ($t = 1$). Check one layer against the
# formula:

# %%
s, b, h, a = 1024, 4, 768, 12
for policy in ["none", "selective", "full"]:
    ev = training_step_events(seq_len=s, micro_batch=b, recompute=policy)
    forward_end = ev.loc[ev["phase"] == "forward", "time"].max()
    life = lifetimes(ev)
    live_then = life[(life["alloc_time"] <= forward_end) & ~(life["free_time"] <= forward_end)]
    layer3 = live_then[
        live_then["tensor"].str.startswith("L3.") & (live_then["category"] == "activation")
    ]
    formula = activation_bytes_per_layer(s, b, h, a, recompute=policy)
    print(
        f"{policy:>9}: layer 3 saves {layer3['bytes'].sum() / MiB:6.1f} MiB, "
        f"formula {formula / MiB:6.1f} MiB; peak {peak(ev).bytes / GiB:.2f} GiB, "
        f"step {ev['time'].max() / ms:.1f} ms"
    )

# %% [markdown]
# Here $5as/h = 80$ of 114 units: selective recomputation removes 70 % of the saved bytes for
# 12 % more step time; full recomputation keeps 2 of the 114 units for 28 % more. The peak falls
# less: weights, optimizer state and the loss's 2.3 GiB of fp32 work do not shrink.

# %% [markdown]
# ## Explore
#
# The explorer rebuilds section 2's step for the $s$, $b$ and policy you choose; the three
# policies of a shape share both axes. Try:
#
# 1. $s = 1024$, $b = 4$: toggle none → selective → full. The orange ramp shrinks and the step
#    grows; the pink spike of the loss does not shrink.
# 2. $s = 2048$, $b = 16$, none: 75 GiB, near the dotted line of an 80 GiB device. Which policy
#    would you pick, and what does it cost in step time?

# %%
activation_memory_explorer()


# %% [markdown]
# ## Exercises
#
# Answer in the cells marked `YOUR CODE HERE`, then run the grade cell below each: its visible
# checks give quick feedback; hidden tests check more cases when the notebook is graded. Sizes
# are in bytes (`MiB`, `GiB` from the setup cell). `EX_STEP`, from the setup cell, is a smaller
# step: 8 layers, $h = 1024$, 16 heads, $s = 2048$, $b = 1$, an 8192-token vocabulary,
# **selective** recomputation.

# %%
memory_timeline(EX_STEP, title="The exercises' step (EX_STEP)")
plt.show()

# %% [markdown]
# ### Exercise 1 — Implement the peak-live sweep (2 points)
#
# Write `peak_live(events)` returning the peak of live bytes, a float. `events` has columns
# `time`, `tensor`, `bytes` and `kind` (`"alloc"` or `"free"`), possibly more, **in any row
# order**. Follow section 1: a tensor lives on $[a_i, f_i)$, one never freed stays live, and at
# equal times frees count first, so a tensor allocated and freed at one time is never live. The
# hidden tests try each of these, rows out of time order, and `EX_STEP` with its rows shuffled.
#
# Use numpy or pandas: the grade cell disables `course_lib.memory`'s sweeps (`live_bytes`,
# `live_bytes_by_category`, `peak`), the allocator model and their private helpers.


# %% nbgrader={"grade": false, "grade_id": "peak_live_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def peak_live(events):
    """The maximum of live bytes over time; frees count before allocations at one time."""
    ### BEGIN SOLUTION
    sign = np.where(events["kind"].to_numpy() == "alloc", 1.0, -1.0)
    delta = pd.Series(sign * events["bytes"].to_numpy(dtype=float))
    net = delta.groupby(events["time"].to_numpy(dtype=float)).sum().sort_index()
    return float(net.cumsum().max())
    ### END SOLUTION


# %%
print(f"toy step: {peak_live(toy) / MiB:.0f} MiB, expected {toy_peak.bytes / MiB:.0f} MiB")

# %% nbgrader={"grade": true, "grade_id": "peak_live_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 1: peak_live(events) -> the peak of live bytes, without course_lib's sweep."""
import course_lib.memory as _memory

# The private helpers first, so that a call to one is reported by its own name; forbid also
# disables any other private helper a listed routine calls.
_SWEEPS = ("_ordered", "_levels", "_stacked_levels", "live_bytes", "live_bytes_by_category")
_FORBIDDEN = [(_memory, name) for name in (*_SWEEPS, "peak", "simulate_allocator")] + [
    (_memory.CachingAllocator, "malloc")
]


def _events(rows):
    return pd.DataFrame(rows, columns=["time", "tensor", "bytes", "kind"])


_SIMPLE = [(0.0, "x", 100.0, "alloc"), (1.0, "y", 50.0, "alloc"), (2.0, "x", 100.0, "free")]
_TIE = [(0.0, "a", 100.0, "alloc"), (1.0, "a", 100.0, "free"), (1.0, "b", 100.0, "alloc")]
with forbid(*_FORBIDDEN, exercise="Exercise 1"):
    _simple, _tie = peak_live(_events(_SIMPLE)), peak_live(_events(_TIE))
check_float(
    "peak_live: x and y overlap",
    _simple,
    150.0,
    known_wrong={100.0: "the largest single tensor, not the sum of what is live"},
)
check_float(
    "peak_live: a freed and b allocated at one time",
    _tie,
    100.0,
    known_wrong={
        200.0: "both tensors counted at once: allocations before frees at one time, or every "
        "allocation summed"
    },
)
### BEGIN HIDDEN TESTS
_cases = [
    # (rows, peak bytes, mistakes): a tensor never freed; zero lifetime; rows out of time order.
    (
        [
            (2.0, "w", 10.0, "alloc"),
            (1.0, "k", 40.0, "alloc"),
            (3.0, "k", 40.0, "free"),
            (5.0, "g", 35.0, "alloc"),
            (6.0, "g", 35.0, "free"),
        ],
        50.0,
        {85.0: "the sum of all allocations", 40.0: "a tensor never freed left out"},
    ),
    (
        [
            (0.0, "s", 30.0, "alloc"),
            (4.0, "z", 500.0, "alloc"),
            (4.0, "z", 500.0, "free"),
            (5.0, "s", 30.0, "free"),
        ],
        30.0,
        {530.0: "a tensor allocated and freed at one time counted as live"},
    ),
    (
        [
            (5.0, "m", 70.0, "free"),
            (0.0, "n", 10.0, "alloc"),
            (2.0, "m", 70.0, "alloc"),
            (8.0, "n", 10.0, "free"),
        ],
        80.0,
        {10.0: "the events summed in row order, not in time order"},
    ),
    (
        [
            (3.0, "u", 60.0, "free"),
            (3.0, "v", 25.0, "alloc"),
            (1.0, "u", 60.0, "alloc"),
            (3.0, "v", 25.0, "free"),
            (6.0, "r", 15.0, "alloc"),
        ],
        60.0,
        {85.0: "allocations counted before frees at one time"},
    ),
]
with forbid(*_FORBIDDEN, exercise="Exercise 1 (hidden cases)"):
    _answers = [peak_live(_events(rows)) for rows, *_ in _cases]
    _ex_answer = peak_live(EX_STEP.sample(frac=1.0, random_state=7))
for _k, ((_rows, _b, _wrong), _got) in enumerate(zip(_cases, _answers, strict=True)):
    check_float(f"peak_live, case {_k}", _got, _b, known_wrong=_wrong)
check_float(
    "peak_live(EX_STEP, rows shuffled)",
    _ex_answer,
    peak(EX_STEP).bytes,
    known_wrong={
        float(EX_STEP.loc[EX_STEP["kind"] == "alloc", "bytes"].sum()): "the sum of all allocations"
    },
)
### END HIDDEN TESTS
passed("Exercise 1")

# %% [markdown]
# ### Exercise 2 — Which workspaces are live at the peak of `EX_STEP`? (1 point)
#
# Attribute the peak of `EX_STEP` (with `peak`, section 2): set `ex_peak_workspaces` to the set
# of names (strings) of the **workspace** tensors live at the peak. Look at the figure first:
# why is the peak there and not at the loss, and what does the recomputed attention have to do
# with it?

# %% nbgrader={"grade": false, "grade_id": "peak_workspaces_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
_ex_live = peak(EX_STEP).live
ex_peak_workspaces = set(_ex_live.loc[_ex_live["category"] == "workspace", "tensor"])
### END SOLUTION
print(sorted(ex_peak_workspaces))

# %% nbgrader={"grade": true, "grade_id": "peak_workspaces_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 2: names of the workspace tensors live at EX_STEP's peak (a set of str)."""
check_type("ex_peak_workspaces", ex_peak_workspaces, set, frozenset)
_workspaces = set(EX_STEP.loc[EX_STEP["category"] == "workspace", "tensor"])
check_names(
    "ex_peak_workspaces: names that are not workspace tensors of EX_STEP",
    sorted(set(ex_peak_workspaces) - _workspaces),
    (),
)
### BEGIN HIDDEN TESTS
check_names(
    "ex_peak_workspaces",
    ex_peak_workspaces,
    ("L7.d_attn_drop", "L7.d_ctx", "L7.d_qkv", "L7.d_resid1"),
)
### END HIDDEN TESTS
passed("Exercise 2")

# %% [markdown]
# ### Exercise 3 — What a fresh allocator reserves beyond what it allocates (2 points)
#
# Write `reserved_minus_allocated(nbytes)`: after one request of `nbytes` ≥ 1 bytes to a
# caching allocator with an empty cache and section 4's rules, return
# `memory_reserved() − memory_allocated()` in bytes (an int, or a float with an integer value).
# By the rounded size there are three cases: the small pool, a 20 MiB segment, a segment of its own.
# The grade cell disables `CachingAllocator`; the hidden tests try requests on both sides of
# every size threshold of section 4.


# %% nbgrader={"grade": false, "grade_id": "allocator_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def reserved_minus_allocated(nbytes):
    """Bytes reserved but not allocated after one request of nbytes to an empty caching allocator."""
    ### BEGIN SOLUTION
    size = max(512, -(-nbytes // 512) * 512)  # rounded up to a multiple of 512 bytes
    if size <= MiB:
        return 2 * MiB - size  # small pool: a 2 MiB segment, split
    if size < 10 * MiB:
        return 20 * MiB - size  # a 20 MiB segment, split (the remainder is more than 1 MiB)
    segment = -(-size // (2 * MiB)) * 2 * MiB  # its own segment, rounded up to 2 MiB
    remainder = segment - size
    return remainder if remainder > MiB else 0  # a remainder of at most 1 MiB is handed out too
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "allocator_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 3: reserved_minus_allocated(nbytes) in bytes, without the allocator model."""
import course_lib.memory as _memory

_NO_MODEL = [
    (_memory.CachingAllocator, name) for name in ("malloc", "round_size", "allocation_size")
] + [(_memory, "simulate_allocator")]


def _model(nbytes):
    """(allocated, reserved) by course_lib's allocator model (called outside forbid)."""
    model = CachingAllocator()
    model.malloc("x", nbytes)
    return model.allocated_bytes, model.reserved_bytes


def _check_gap(nbytes, got):
    allocated, reserved = _model(nbytes)
    check_float(
        "reserved_minus_allocated",
        got,
        reserved - allocated,
        rtol=0.0,
        atol=0.5,
        unit="bytes",
        known_wrong={
            0.0: "reserved equal to allocated: the allocator reserves whole segments",
            float(reserved - nbytes): "reserved minus the requested bytes: allocated counts "
            "the block handed out, rounded up, and whole when the rest is too small to split",
        },
    )


with forbid(*_NO_MODEL, exercise="Exercise 3"):
    _mid = reserved_minus_allocated(5 * MiB)
_check_gap(5 * MiB, _mid)
### BEGIN HIDDEN TESTS
_requests = [1000, 300 * KiB, MiB, MiB + 1, 7 * MiB, 10 * MiB - 1000, 10 * MiB, 10 * MiB + 1]
_requests += [11 * MiB, 19 * MiB + 1, 100 * MiB + 3, 101 * MiB]
with forbid(*_NO_MODEL, exercise="Exercise 3 (hidden cases)"):
    _got = [reserved_minus_allocated(n) for n in _requests]
for _n, _x in zip(_requests, _got, strict=True):
    _check_gap(_n, _x)
### END HIDDEN TESTS
passed("Exercise 3")

# %% [markdown]
# ### Exercise 4 — Activation bytes per layer under tensor and sequence parallelism (3 points)
#
# Write `layer_activation_bytes(s, b, h, a, t, recompute)`: the bytes one transformer layer
# saves for its backward pass on each rank, with tensor and sequence parallelism of degree `t`
# (`t = 1`: none), under `recompute` = `"none"`, `"selective"` or `"full"` (section 5's table), a
# float. Each policy has its own grade cell, one point each. The grade cells disable
# `activation_bytes_per_layer` and `training_step_events`.


# %% nbgrader={"grade": false, "grade_id": "act_bytes_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def layer_activation_bytes(s, b, h, a, t, recompute):
    """Bytes one layer saves per rank, tensor + sequence parallel of degree t (Korthikanti 2022)."""
    ### BEGIN SOLUTION
    sbh = float(s * b * h)
    if recompute == "full":
        return 2 * sbh / t  # each rank keeps its s/t slice of the layer input
    if recompute == "selective":
        return 34 * sbh / t
    return sbh / t * (34 + 5 * a * s / h)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "act_bytes_none_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 4, no recomputation: layer_activation_bytes(s, b, h, a, t, "none") in bytes."""
import course_lib.memory as _memory


def _check_none(s, b, h, a, t):
    with forbid(
        (_memory, "activation_bytes_per_layer"),
        (_memory, "training_step_events"),
        exercise="Exercise 4",
    ):
        got = layer_activation_bytes(s, b, h, a, t, "none")
    sbh = 1.0 * s * b * h
    check_float(
        "layer_activation_bytes(..., 'none')",
        got,
        sbh / t * (34 + 5 * a * s / h),
        unit="bytes",
        known_wrong={
            sbh * (34 + 5 * a * s / h): "not divided by t: tensor and sequence parallelism "
            "split every saved tensor over the t ranks",
            34 * sbh / t: "the attention matrices' term left out: that is selective recomputation",
            sbh * (10 + 24 / t + 5 * a * s / (h * t)): "tensor parallelism without sequence "
            "parallelism: layer norms and dropouts replicated on every rank",
            sbh / t * (34 + 5 * a * s / h) / GiB: "GiB, not bytes",
        },
    )


_check_none(1024, 4, 768, 12, 2)
### BEGIN HIDDEN TESTS
_check_none(2048, 1, 12288, 96, 8)  # GPT-3 175B on 8-way tensor parallelism
_check_none(4096, 2, 8192, 64, 4)
_check_none(8192, 1, 4096, 32, 1)
_check_none(512, 8, 2048, 16, 4)
### END HIDDEN TESTS
passed("Exercise 4, no recomputation")

# %% nbgrader={"grade": true, "grade_id": "act_bytes_selective_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 4, selective recomputation: layer_activation_bytes(..., "selective") in bytes."""
import course_lib.memory as _memory


def _check_selective(s, b, h, a, t):
    with forbid(
        (_memory, "activation_bytes_per_layer"),
        (_memory, "training_step_events"),
        exercise="Exercise 4",
    ):
        got = layer_activation_bytes(s, b, h, a, t, "selective")
    sbh = 1.0 * s * b * h
    check_float(
        "layer_activation_bytes(..., 'selective')",
        got,
        34 * sbh / t,
        unit="bytes",
        known_wrong={
            34 * sbh: "not divided by t: tensor and sequence parallelism split every saved "
            "tensor over the t ranks",
            sbh / t * (34 + 5 * a * s / h): "the attention matrices kept: selective "
            "recomputation drops them",
            sbh * (10 + 24 / t): "tensor parallelism without sequence parallelism: layer norms "
            "and dropouts replicated on every rank",
            34 * sbh / t / GiB: "GiB, not bytes",
        },
    )


_check_selective(1024, 4, 768, 12, 2)
### BEGIN HIDDEN TESTS
_check_selective(2048, 1, 12288, 96, 8)
_check_selective(512, 8, 2048, 16, 4)
### END HIDDEN TESTS
passed("Exercise 4, selective recomputation")

# %% nbgrader={"grade": true, "grade_id": "act_bytes_full_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 4, full recomputation: layer_activation_bytes(..., "full") in bytes."""
import course_lib.memory as _memory


def _check_full(s, b, h, a, t):
    with forbid(
        (_memory, "activation_bytes_per_layer"),
        (_memory, "training_step_events"),
        exercise="Exercise 4",
    ):
        got = layer_activation_bytes(s, b, h, a, t, "full")
    sbh = 1.0 * s * b * h
    check_float(
        "layer_activation_bytes(..., 'full')",
        got,
        2 * sbh / t,
        unit="bytes",
        known_wrong={
            2 * sbh: "Table 2's row, for an input replicated on every rank: under sequence "
            "parallelism each rank keeps only its own slice of the input",
            34 * sbh / t: "selective recomputation's bytes: full recomputation keeps only the "
            "layer input",
            2 * sbh / t / GiB: "GiB, not bytes",
        },
    )


_check_full(1024, 4, 768, 12, 2)
### BEGIN HIDDEN TESTS
_check_full(2048, 1, 12288, 96, 8)
_check_full(8192, 1, 4096, 32, 1)
_check_full(512, 8, 2048, 16, 4)
### END HIDDEN TESTS
passed("Exercise 4, full recomputation")

# %% [markdown]
# ### Explained answer — Why does the device report more than the allocator's peak? (2 points, graded by hand)
#
# After one step of a job on an A100 80GB, `torch.cuda.max_memory_allocated()` reports 61 GiB,
# `max_memory_reserved()` 68 GiB, and `nvidia-smi` shows the process using 76,800 MiB of the
# card's 81,920 MiB. Restarted with one more sequence per micro-batch, whose saved activations
# take 2 GiB, the job runs out of memory. In 4–6 sentences: what fills the gap between allocated
# and reserved, and the gap between reserved and `nvidia-smi`? Why did one more sequence not fit,
# although the device had room? What would you measure or change first?

# %% [markdown] nbgrader={"grade": true, "grade_id": "explain_device_memory", "locked": false, "points": 2, "schema_version": 3, "solution": true, "task": false}
# **Model answer.** The 7 GiB between allocated and reserved are held by the allocator but not
# handed out: requests rounded up, blocks handed out whole, free blocks cached for reuse, and
# fragments. The next 7 GiB (76,800 MiB is 75 GiB) lie outside the allocator: the CUDA context,
# NCCL's buffers, libraries that `cudaMalloc` themselves. So the room was neither
# 80 − 61 = 19 GiB nor just the 5 GiB free on the device: new tensors could use those 5 GiB plus
# the cached 7 GiB, 12 GiB in all, less fragmentation. One more sequence did not fit because it
# adds much more than its 2 GiB of saved activations at the peak: its transients and the loss's
# fp32 $s \cdot V$ buffers grow with $b$ too (12 bytes per token and vocabulary entry), and the
# new sizes round and fragment into new segments. (Had $b$ grown inside the running process,
# the cached blocks, sized for the old $b$, would also fit none of the larger requests.) First
# measure: a memory snapshot of the step around the peak (`_record_memory_history`), and
# `memory_stats()` (`inactive_split_bytes`, `num_alloc_retries`); then try selective
# recomputation, a chunked loss, or `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`.
#
# **Rubric (2 points).** 1 point: reserved − allocated explained as caching, rounding and
# fragmentation, and why one more sequence needs more than its 2 GiB (per-sequence transients
# and loss buffers, new segments and fragmentation; or, in a running process, cached blocks
# sized for the old $b$). 1 point: the memory outside the allocator named (CUDA context, NCCL
# buffers, other libraries) and a concrete measurement or change.

# %% [markdown]
# ## Takeaways
#
# - Live bytes are a sweep: sort the events, frees first at equal times, cumulative sum. The peak
#   is a moment, usually early in the backward pass; attribute it to the tensors live then.
# - A layer saves $\frac{sbh}{t}(34 + 5as/h)$ bytes per rank under tensor and sequence
#   parallelism, $34\,sbh/t$ with selective recomputation, $2\,sbh/t$ with full.
# - The trap: summing per-operator allocations, or reading `max_memory_allocated()` as what a job
#   needs. The allocator reserves whole segments and keeps them; the CUDA context, NCCL and other
#   libraries sit outside it.

# %% [markdown]
# ## Going further (optional, ungraded)
#
# Nothing below is needed for the exercises.
#
# - **The loss.** In section 2's model the cross-entropy's backward needs its saved fp32
#   log-probabilities, its incoming gradient and its result at once: $12\,sbV$ bytes. With a
#   large vocabulary the loss is often the single largest memory consumer of a step (Wijmans et
#   al. 2025, "Cut Your Losses in Large-Vocabulary Language Models"); fused or chunked losses
#   exist for that reason.
# - **Small batches.** With few tokens the activations are small and the peak moves to the
#   optimizer step, where every weight gradient and the optimizer's scratch are live (try
#   $s = 128$, $b = 1$ in the explorer).
# - **Tensor parallelism without sequence parallelism.** Table 2's rows are
#   $sbh(10 + 24/t + 5as/(ht))$, and $sbh(10 + 24/t)$ with selective recomputation: the layer
#   norms, dropouts and the inputs of the first linear layers stay replicated on every rank. With
#   full recomputation, Megatron-LM's opt-in `distribute_saved_activations` splits the replicated
#   input over the $t$ ranks ($2\,sbh/t$, for the extra all-gather §5 declines).
# - **Full recomputation's $2\,sbh/t$.** Table 2 prints $2\,sbh$ because §5 declines to split a
#   replicated input: that "requires an extra all-gather per layer … we do not consider this
#   approach". Under sequence parallelism the input is already split along $s$, and the
#   all-gather is the one the recomputed forward does anyway. Megatron-LM switches its opt-in
#   `distribute_saved_activations` off under sequence parallelism
#   (`megatron/legacy/model/transformer.py`).
# - **Pipelines.** Under 1F1B the first stage holds $p$ micro-batches of $L/p$ layers each:
#   $L$ layers' worth of activations, whatever $p$ (Korthikanti et al. 2022, §4.2.3). That is the
#   number to compare with a device.
# - **Fragmentation.** `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` grows one segment per
#   stream instead of cutting new ones; `max_split_size_mb` stops large cached blocks from being
#   split. `torch.cuda.memory._record_memory_history()` and `_dump_snapshot()` record every
#   allocation with its stack, and pytorch.org/memory_viz draws them — the real-world version of
#   this lesson's timelines.
# - **Device totals.** `torch.cuda.mem_get_info()` returns (free, total) as CUDA sees them; the
#   total can sit a little below `nvidia-smi`'s (`deviceQuery` on an A100 40GB SXM4 reports
#   40,441 of its 40,960 MiB, Paderborn PC2's documentation), and the free figure is what a new
#   segment can still get. `nvidia-smi` reports 81,920 MiB (80 GiB) for an A100 80GB and
#   81,559 MiB for an H100 80GB HBM3, both more than the 76,294 MiB of $80 \times 10^9$ bytes.
