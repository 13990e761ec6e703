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
# - predict the allocated and reserved bytes of PyTorch's caching allocator, and say what else
#   the device holds;
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
    check_choice,
    check_float,
    check_int,
    check_names,
    check_range,
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
    simulate_allocator,
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
# together: at equal times, **frees count before allocations**, as when an op's output takes the
# memory its input just released. The **peak** is $\max_t M(t)$, a moment: the first $t$ where
# the maximum is reached.
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
# for 1 ms. The peak, 120 MiB at 3 ms, is exactly the four tensors live then. At 4 ms the
# workspace is freed and `grad2` allocated: frees first gives 110 MiB; allocation first, with a
# maximum over every intermediate total, reports 130 MiB, a peak that never existed. Summing every
# allocation gives 140 MiB. In Exercise 1 you write the sweep yourself.

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
by_category = step_peak.live.groupby("category")["bytes"].sum().reindex(STEP_CATEGORIES)
display((by_category.fillna(0) / GiB).round(3).to_frame("GiB at the peak"))
display(step_peak.live.head(5).assign(bytes=lambda d: d["bytes"] / MiB))

# %% [markdown]
# The orange ramp is the forward pass saving activations layer by layer; the backward pass
# releases them in reverse while green weight gradients accumulate. The peak (dashed line) sits
# at the first ops of the backward pass: every activation is still live, and the loss's backward
# allocates on top before anything is freed.
#
# Attribute it. Of the 7.9 GiB, 4.8 GiB are activations, 1.6 GiB weights and optimizer state,
# and 1.5 GiB two workspaces that live two milliseconds or less: `head.d_log_probs` and
# `head.d_logits_fp32`, the loss's fp32 gradients over the $s \times b \times V$ logits
# ($4 \cdot 1024 \cdot 4 \cdot 50257$ bytes $\approx 0.77$ GiB each). A transient counts only
# while it lives: the same 3 GiB allocated mid-backward, when half the activations are gone,
# would not move this peak at all. That is why you attribute the peak at its moment, not per op.

# %% [markdown]
# ## 3. Summing per-operator allocations overstates the peak
#
# A per-operator memory table — a profiler's memory columns, or your log of what each op
# allocates — answers "how much did this op allocate?". Its total counts tensors that never
# coexist.

# %%
allocated = step[step["kind"] == "alloc"]
totals = pd.DataFrame(
    {
        "sum of allocations (GiB)": allocated.groupby("category")["bytes"].sum() / GiB,
        "live at the peak (GiB)": by_category / GiB,
    }
).reindex(STEP_CATEGORIES)
display(totals.fillna(0).round(2))
print(f"sum {allocated['bytes'].sum() / GiB:.1f} GiB, peak {step_peak.bytes / GiB:.1f} GiB")

# %% [markdown]
# 16.2 GiB of allocations against a 7.9 GiB peak. The workspace row shows the gap: 9.6 GiB of
# transients over the step, 1.5 GiB of them live at the peak. The per-op table still tells you
# which op to fuse or chunk; only the sweep tells you the requirement.

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
# Three segments for four tensors. `c` (11 MiB) found no cached block and got a 12 MiB segment;
# the 1 MiB left over is not more than 1 MiB, so all 12 MiB count as allocated. `a` and `d` share
# a 20 MiB segment, `b` sits in a 2 MiB small segment. After `a` is freed: 14.3 MiB requested,
# 15.3 MiB allocated, 34 MiB reserved, and `empty_cache()` returns nothing, because every segment
# still holds a live block. Now the whole step through the model:

# %%
replay = simulate_allocator(step)
fig, ax = plt.subplots(figsize=(11, 3.8), layout="constrained")
for column, colour, style, label in [
    ("reserved", "#D55E00", "-", "reserved (memory_reserved)"),
    ("allocated", "#0072B2", "-", "allocated (memory_allocated)"),
    ("requested", "#222222", ":", "requested (live bytes)"),
]:
    ax.step(
        replay["time"] / ms, replay[column] / GiB, where="post", color=colour, ls=style, label=label
    )
ax.set(xlabel="time (ms)", ylabel="GiB", ylim=(0, 9.5))
ax.set_title("The step through the caching-allocator model", loc="left")
ax.legend(frameon=False, loc="upper left")
ax.grid(alpha=0.3)
plt.show()
print(
    f"after the step: allocated {replay['allocated'].iloc[-1] / GiB:.2f} GiB, "
    f"reserved {replay['reserved'].iloc[-1] / GiB:.2f} GiB"
)

# %% [markdown]
# Allocated tracks requested (dotted): rounding costs little with tensors this large. Reserved
# climbs in segment-sized steps, tops out 0.4 GiB above the peak and **stays**: after the step
# 1.6 GiB are allocated, 8.4 GiB reserved. Reserved but free is not lost: the next requests that
# fit a cached block take it. A different mix of sizes fragments the cache — enough free bytes,
# no block large enough, no segment entirely free — and reserved grows.
#
# The device reports more still. PyTorch's documentation (CUDA semantics, "Memory management")
# warns that cached memory "will still show as if used in nvidia-smi", and the process also holds
# the CUDA context (hundreds of MiB), NCCL's communication buffers and whatever other libraries
# `cudaMalloc` themselves. So `max_memory_allocated()` is a lower bound on what a job needs.
# Device sizes follow the same binary units: an "80 GB" A100 or H100 carries 80 GiB of HBM, and
# `nvidia-smi` reports 81,920 MiB (A100) or 81,559 MiB (H100 SXM) of it — not $80 \times 10^9$
# bytes.

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
# number of heads. The 34 is attention (11), MLP (19) and layer norms (4); $5as/h$ is the
# $a \times s \times s$ attention matrix stored three times (softmax output, dropout mask,
# dropout output: $5as^2b$ bytes). With tensor parallelism of degree $t$ plus **sequence
# parallelism** (§4.2.2), every saved tensor is split over the $t$ ranks:
#
# | recomputation | bytes per layer per rank, tensor + sequence parallel |
# |---|---|
# | none | $\frac{sbh}{t}(34 + 5as/h)$ |
# | selective | $34\,sbh/t$ |
# | full | $2\,sbh/t$ |
#
# **Selective recomputation** (§5) drops the $5as^2b$ attention tensors and recomputes them just
# before the layer's backward: most of the memory, little of the compute. **Full recomputation**
# keeps only each layer's 2-byte input and reruns the whole layer forward. Table 2 prints that row
# as $2\,sbh$: an input replicated on every rank, as under tensor parallelism alone. Under
# sequence parallelism the layer input is already split along $s$, so each rank keeps its
# $2\,sbh/t$ slice, as Megatron-LM does. At $t = 1$ the rows read $sbh(34 + 5as/h)$,
# $34\,sbh$, $2\,sbh$.
#
# `training_step_events` saves exactly these tensors ($t = 1$). Check one layer against the
# formula, and compare the three timelines:

# %%
s, b, h, a = 1024, 4, 768, 12
policies = ["none", "selective", "full"]
steps = {p: training_step_events(seq_len=s, micro_batch=b, recompute=p) for p in policies}
peaks = {p: peak(ev) for p, ev in steps.items()}
for p, ev in steps.items():
    forward_end = ev.loc[ev["phase"] == "forward", "time"].max()
    life = lifetimes(ev)
    live_then = life[(life["alloc_time"] <= forward_end) & ~(life["free_time"] <= forward_end)]
    layer3 = live_then[
        live_then["tensor"].str.startswith("L3.") & (live_then["category"] == "activation")
    ]
    formula = activation_bytes_per_layer(s, b, h, a, recompute=p)
    print(
        f"{p:>9}: layer 3 saves {layer3['bytes'].sum() / MiB:6.1f} MiB, "
        f"formula {formula / MiB:6.1f} MiB; peak {peaks[p].bytes / GiB:.2f} GiB, "
        f"step {ev['time'].max() / ms:.1f} ms"
    )

fig, axes = plt.subplots(3, 1, figsize=(11, 9.5), layout="constrained")
for ax, (p, ev) in zip(axes, steps.items(), strict=True):
    memory_timeline(ev, ax=ax, title=f"recompute = {p!r}: peak {peaks[p].bytes / GiB:.2f} GiB")
    ax.set(ylim=(0, 10.5), xlim=(0, 1.02 * steps["full"]["time"].max()))  # one scale for all
    if ax is not axes[0]:
        ax.get_legend().remove()
plt.show()

# %% [markdown]
# Same axes, three policies. Here $5as/h = 80$ of 114 units, so selective recomputation shrinks
# the orange ramp by 70 % for 12 % more step time; full recomputation leaves a thin sliver per
# layer and reruns each layer's forward in the backward pass (the sawtooth) for 28 % more.
# Weights, optimizer state and the loss's 2.3 GiB of fp32 work do not shrink: the peak stays at
# `log_softmax_bwd` under all three.

# %% [markdown]
# ## Explore
#
# The explorer rebuilds section 2's step for the $s$, $b$ and policy you choose and compares one
# layer's saved bytes with the formula; the three policies of a shape share the y axis. Try:
#
# 1. $s = 1024$, $b = 4$: toggle none → selective → full. The peak falls from 7.9 to 5.1 to
#    4.0 GiB, the step time rises, and the peak stays at `log_softmax_bwd`.
# 2. $s = 2048$, $b = 16$, none: 75 GiB, near the dotted line of an 80 GiB device. Which policy
#    would you pick, and what does it cost in step time?
# 3. $s = 128$, $b = 1$: the peak jumps to the optimizer step, where every weight gradient and
#    the optimizer's scratch are live. At which $b$ does it return to the backward pass?

# %%
activation_memory_explorer()

# %% [markdown]
# ## Exercises
#
# Answer in the cells marked `YOUR CODE HERE`, then run the grade cell below each: its visible
# checks give quick feedback; hidden tests check more cases when the notebook is graded. Sizes
# are in bytes (`MiB`, `GiB` from the setup cell), times in seconds. Exercise 2 uses `EX_STEP`
# from the setup cell: 8 layers, $h = 1024$, 16 heads, $s = 2048$, $b = 1$, an 8192-token
# vocabulary, **selective** recomputation.

# %%
memory_timeline(EX_STEP, title="The exercises' step (EX_STEP)")
plt.show()

# %% [markdown]
# ### Exercise 1 — Implement the peak-live sweep (3 points)
#
# Write `peak_live(events)` returning `(time, bytes)`, two floats: the first time at which live
# bytes reach their maximum, and that maximum. `events` has columns `time`, `tensor`, `bytes` and
# `kind` (`"alloc"` or `"free"`), possibly more, **in any row order**. A tensor lives on
# $[a_i, f_i)$; one never freed stays live; at equal times frees count first, so a tensor
# allocated and freed at the same time is never live.
#
# Use numpy or pandas. While the grade cell runs your function it disables `course_lib.memory`'s
# `live_bytes`, `live_bytes_by_category`, `peak`, `simulate_allocator`, the private helpers they
# call, and the `CachingAllocator`.


# %% nbgrader={"grade": false, "grade_id": "peak_live_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def peak_live(events):
    """(time, bytes) of the first maximum of live bytes; frees before allocations at a time."""
    ### BEGIN SOLUTION
    sign = np.where(events["kind"].to_numpy() == "alloc", 1.0, -1.0)
    delta = pd.Series(sign * events["bytes"].to_numpy(dtype=float))
    net = delta.groupby(events["time"].to_numpy(dtype=float)).sum().sort_index()
    level = net.cumsum()
    i = int(np.argmax(level.to_numpy()))
    return float(level.index[i]), float(level.iloc[i])
    ### END SOLUTION


# %%
print("toy step:", peak_live(toy), " expected", (toy_peak.time, toy_peak.bytes))

# %% nbgrader={"grade": true, "grade_id": "peak_live_tests", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
"""Exercise 1: peak_live(events) -> (time, bytes), without course_lib's sweep."""
import course_lib.memory as _memory

# The private helpers first, so that a call to one is reported by its own name; forbid also
# disables any other private helper a listed routine calls.
_SWEEPS = ("_ordered", "_levels", "live_bytes", "live_bytes_by_category", "peak")
_FORBIDDEN = [(_memory, name) for name in (*_SWEEPS, "simulate_allocator")] + [
    (_memory.CachingAllocator, "malloc")
]


def _events(rows):
    return pd.DataFrame(rows, columns=["time", "tensor", "bytes", "kind"])


with forbid(*_FORBIDDEN, exercise="Exercise 1"):
    _simple = peak_live(
        _events(
            [
                (0.0, "x", 100.0, "alloc"),
                (1.0, "y", 50.0, "alloc"),
                (2.0, "x", 100.0, "free"),
                (3.0, "y", 50.0, "free"),
            ]
        )
    )
check_type("peak_live(...)", _simple, tuple)
check_float("peak_live(...)[0], the time", _simple[0], 1.0, unit="s")
check_float(
    "peak_live(...)[1], the bytes",
    _simple[1],
    150.0,
    known_wrong={100.0: "the largest single tensor, not the sum of what is live"},
)
### BEGIN HIDDEN TESTS
_cases = [
    # (rows, time, bytes, mistakes): ties at one timestamp; a tensor never freed; zero lifetime;
    # rows out of time order; equal maxima (the first counts).
    (
        [
            (0.0, "a", 100.0, "alloc"),
            (1.0, "a", 100.0, "free"),
            (1.0, "b", 100.0, "alloc"),
            (2.0, "b", 100.0, "free"),
        ],
        0.0,
        100.0,
        {
            200.0: "a and b counted together: allocations before frees at one time, or a sum "
            "of all allocations"
        },
    ),
    (
        [
            (2.0, "w", 10.0, "alloc"),
            (1.0, "k", 40.0, "alloc"),
            (3.0, "k", 40.0, "free"),
            (5.0, "g", 35.0, "alloc"),
            (6.0, "g", 35.0, "free"),
        ],
        2.0,
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
        0.0,
        30.0,
        {530.0: "a zero-lifetime tensor counted as live"},
    ),
    (
        [
            (7.0, "q", 20.0, "free"),
            (3.0, "p", 20.0, "alloc"),
            (6.0, "q", 20.0, "alloc"),
            (4.0, "p", 20.0, "free"),
        ],
        3.0,
        20.0,
        {},
    ),
    (
        [
            (5.0, "m", 70.0, "free"),
            (0.0, "n", 10.0, "alloc"),
            (2.0, "m", 70.0, "alloc"),
            (8.0, "n", 10.0, "free"),
        ],
        2.0,
        80.0,
        {10.0: "the events summed in row order, not in time order"},
    ),
]
with forbid(*_FORBIDDEN, exercise="Exercise 1 (hidden cases)"):
    _answers = [peak_live(_events(rows)) for rows, *_ in _cases]
    _shuffled = EX_STEP.sample(frac=1.0, random_state=7)
    _ex_answer = peak_live(_shuffled)
for _k, ((_rows, _t, _b, _wrong), _got) in enumerate(zip(_cases, _answers, strict=True)):
    check_type(f"case {_k}: peak_live(...)", _got, tuple)
    check_float(f"case {_k}: bytes", _got[1], _b, known_wrong=_wrong)
    check_float(
        f"case {_k}: time",
        _got[0],
        _t,
        unit="s",
        known_wrong={6.0: "the last time the maximum is reached, not the first"},
    )
_reference = peak(EX_STEP)
check_float("EX_STEP (rows shuffled): bytes", _ex_answer[1], _reference.bytes)
check_float("EX_STEP (rows shuffled): time", _ex_answer[0], _reference.time, unit="s")
### END HIDDEN TESTS
passed("Exercise 1")

# %% [markdown]
# ### Exercise 2 — What is live at the peak of `EX_STEP`? (2 points)
#
# Attribute the peak of `EX_STEP` (with `peak`, section 2). Set `ex_peak_workspaces` to the set
# of names (strings) of the **workspace** tensors live at the peak, and `ex_peak_activation_bytes`
# to the bytes of **activation** tensors live then, a float. Look at the figure first: why is the
# peak there and not at the loss, and what does the recomputed attention have to do with it?

# %% nbgrader={"grade": false, "grade_id": "peak_live_set_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
_ex_live = peak(EX_STEP).live
ex_peak_workspaces = set(_ex_live.loc[_ex_live["category"] == "workspace", "tensor"])
ex_peak_activation_bytes = float(_ex_live.loc[_ex_live["category"] == "activation", "bytes"].sum())
### END SOLUTION
print(sorted(ex_peak_workspaces), f"{ex_peak_activation_bytes / GiB:.3f} GiB")

# %% nbgrader={"grade": true, "grade_id": "peak_workspaces_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 2a: names of the workspace tensors live at EX_STEP's peak (a set of str)."""
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
passed("Exercise 2a")

# %% nbgrader={"grade": true, "grade_id": "peak_activation_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 2b: bytes of activation tensors live at EX_STEP's peak (a float, bytes)."""
check_range(
    "ex_peak_activation_bytes", ex_peak_activation_bytes, 1.0 * MiB, 4.0 * GiB, what="bytes"
)
### BEGIN HIDDEN TESTS
check_float(
    "ex_peak_activation_bytes",
    ex_peak_activation_bytes,
    855638016.0,
    unit="bytes",
    known_wrong={
        645922816.0: "the activations at the end of the forward pass: by the peak, layer 7 has "
        "released its MLP tensors and recomputed its attention matrices",
        570425344.0: "8 × 34·sbh from the formula: it counts what is saved, not what is live "
        "at one moment",
        855638016.0 / GiB: "GiB, not bytes",
    },
)
### END HIDDEN TESTS
passed("Exercise 2b")

# %% [markdown]
# ### Exercise 3 — One request to a fresh caching allocator (2 points)
#
# Write `fresh_malloc(nbytes)`: for one request of `nbytes` ≥ 1 bytes to a caching allocator
# with an empty cache and the default rules of section 4, return `(allocated, reserved)`, two
# ints — what `memory_allocated()` and `memory_reserved()` then report. Apply the rules
# yourself: the grade cell disables `CachingAllocator` and `simulate_allocator`.


# %% nbgrader={"grade": false, "grade_id": "allocator_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def fresh_malloc(nbytes):
    """(allocated, reserved) bytes after one request of nbytes to an empty caching allocator."""
    ### BEGIN SOLUTION
    size = max(512, -(-nbytes // 512) * 512)  # round up to a multiple of 512 bytes
    if size <= MiB:
        return size, 2 * MiB  # small pool: a 2 MiB segment, split (remainder >= 1 MiB)
    if size < 10 * MiB:
        segment = 20 * MiB
    else:
        segment = -(-size // (2 * MiB)) * 2 * MiB
    block = size if segment - size > MiB else segment  # split only a remainder > 1 MiB
    return block, segment
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "allocator_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 3: fresh_malloc(nbytes) -> (allocated, reserved) ints, without the allocator model."""
import course_lib.memory as _memory

_NO_MODEL = [
    (_memory.CachingAllocator, name) for name in ("malloc", "round_size", "allocation_size")
] + [(_memory, "simulate_allocator")]
with forbid(*_NO_MODEL, exercise="Exercise 3"):
    _small = fresh_malloc(300 * KiB)
check_type("fresh_malloc(300 KiB)", _small, tuple)
check_int("len(fresh_malloc(300 KiB))", len(_small), 2)
check_int("fresh_malloc(300 KiB)[0], allocated", _small[0], 300 * KiB)
check_int("fresh_malloc(300 KiB)[1], reserved", _small[1], 2 * MiB)
### BEGIN HIDDEN TESTS
_requests = {  # nbytes -> (allocated, reserved), computed once with CachingAllocator().malloc
    1000: (1024, 2 * MiB),
    MiB: (MiB, 2 * MiB),
    MiB + 1: (MiB + 512, 20 * MiB),
    7 * MiB: (7 * MiB, 20 * MiB),
    10 * MiB - 512: (10 * MiB - 512, 20 * MiB),
    10 * MiB: (10 * MiB, 10 * MiB),
    10 * MiB + 1: (10 * MiB + 512, 12 * MiB),
    11 * MiB: (12 * MiB, 12 * MiB),
    19 * MiB + 1: (20 * MiB, 20 * MiB),
    101 * MiB: (102 * MiB, 102 * MiB),
    100 * MiB + 3: (100 * MiB + 512, 102 * MiB),
}
with forbid(*_NO_MODEL, exercise="Exercise 3 (hidden cases)"):
    _got = {n: fresh_malloc(n) for n in _requests}
for _n, (_allocated, _reserved) in _requests.items():
    check_type(f"fresh_malloc({_n})", _got[_n], tuple)
    check_int(
        f"fresh_malloc({_n})[0], allocated",
        _got[_n][0],
        _allocated,
        known_wrong={
            _n: "the requested bytes: the allocator rounds up to 512 bytes and hands out a whole "
            "block when the remainder is not more than 1 MiB",
            _reserved: "the whole segment: a remainder of more than 1 MiB is split off",
        },
    )
    check_int(
        f"fresh_malloc({_n})[1], reserved",
        _got[_n][1],
        _reserved,
        known_wrong={
            _allocated: "the allocated block: the allocator reserves whole segments",
            20 * MiB: "a 20 MiB segment: from 10 MiB a request gets its own segment, rounded up "
            "to 2 MiB; up to 1 MiB it gets a 2 MiB small segment",
            2 * MiB: "the small pool: it takes only requests of at most 1 MiB after rounding",
        },
    )
### END HIDDEN TESTS
passed("Exercise 3")

# %% [markdown]
# ### Exercise 4 — Activation bytes per layer under tensor and sequence parallelism (2 points)
#
# Write `layer_activation_bytes(s, b, h, a, t, recompute)`: the bytes one transformer layer
# saves for its backward pass on each rank, with tensor parallelism of degree `t` and sequence
# parallelism (`t = 1`: no parallelism), under `recompute` = `"none"`, `"selective"` or
# `"full"` (section 5's table), a float in bytes. The grade cell disables
# `activation_bytes_per_layer`.


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


# %% nbgrader={"grade": true, "grade_id": "act_bytes_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 4: layer_activation_bytes(s, b, h, a, t, recompute) in bytes per layer per rank."""
import course_lib.memory as _memory

with forbid((_memory, "activation_bytes_per_layer"), exercise="Exercise 4"):
    _gpt2 = layer_activation_bytes(1024, 4, 768, 12, 1, "selective")
check_float(
    "layer_activation_bytes(1024, 4, 768, 12, 1, 'selective')",
    _gpt2,
    34 * 1024 * 4 * 768,
    unit="bytes",
    known_wrong={34 * 1024 * 4 * 768 / GiB: "GiB, not bytes"},
)
### BEGIN HIDDEN TESTS
_shapes = [  # (s, b, h, a, t, recompute); GPT-3 175B first, then shapes where 5as/h is not 80
    (2048, 1, 12288, 96, 8, "none"),
    (2048, 1, 12288, 96, 8, "selective"),
    (2048, 1, 12288, 96, 8, "full"),
    (4096, 2, 8192, 64, 4, "none"),
    (1024, 4, 768, 12, 1, "none"),
    (1024, 4, 768, 12, 1, "full"),
    (8192, 1, 4096, 32, 2, "full"),
    (512, 8, 2048, 16, 4, "selective"),
]
with forbid((_memory, "activation_bytes_per_layer"), exercise="Exercise 4 (hidden cases)"):
    _got = [layer_activation_bytes(*shape) for shape in _shapes]
for (_s, _b, _h, _a, _t, _r), _x in zip(_shapes, _got, strict=True):
    _sbh = float(_s * _b * _h)
    _expected = {"none": _sbh / _t * (34 + 5 * _a * _s / _h), "selective": 34 * _sbh / _t}.get(
        _r, 2 * _sbh / _t
    )
    _wrong = {
        _expected * _t: "not divided by t: tensor and sequence parallelism split every saved "
        "tensor over the t ranks",
        _expected / GiB: "GiB, not bytes",
    }
    if _r == "none":
        _wrong[34 * _sbh / _t] = "34·sbh/t: the 5as²b bytes of the attention matrices left out"
        _wrong[_sbh * (10 + 24 / _t + 5 * _a * _s / (_h * _t))] = (
            "tensor parallelism without sequence parallelism: layer norms and dropouts replicated"
        )
    if _r == "full":
        _wrong[2 * _sbh] = (
            "2sbh, Table 2's row for an input replicated on every rank: under sequence "
            "parallelism each rank keeps its s/t slice"
        )
    check_float(
        f"layer_activation_bytes({_s}, {_b}, {_h}, {_a}, {_t}, {_r!r})",
        _x,
        _expected,
        unit="bytes",
        known_wrong=_wrong,
    )
### END HIDDEN TESTS
passed("Exercise 4")

# %% [markdown]
# ### Exercise 5 — How many sequences fit? (1 point)
#
# One GPU of a tensor- and sequence-parallel job holds at its peak 49.2 GiB of weights,
# gradients and Adam state, plus, per sequence of the micro-batch, 4.78 GiB of saved activations
# and 0.5 GiB of transients. At $b = 1$ you measured `memory_reserved()` 2 GiB above
# `memory_allocated()` at the peak, and 3 GiB of device memory outside the allocator (CUDA
# context, NCCL buffers); take both as fixed. `nvidia-smi` reports 81,559 MiB in total (an H100
# SXM "80 GB"). Set `max_micro_batch` to the largest $b$ that fits, an int.

# %% nbgrader={"grade": false, "grade_id": "fits_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
_device = 81559 * MiB
_fixed = (49.2 + 2.0 + 3.0) * GiB  # state + reserved beyond allocated + outside the allocator
max_micro_batch = int((_device - _fixed) // ((4.78 + 0.5) * GiB))
### END SOLUTION
print(max_micro_batch)

# %% nbgrader={"grade": true, "grade_id": "fits_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 5: the largest micro-batch that fits on the device (an int)."""
check_type("max_micro_batch", max_micro_batch, int)
check_range("max_micro_batch", max_micro_batch, 0, 100, what="sequences")
### BEGIN HIDDEN TESTS
check_int(
    "max_micro_batch",
    max_micro_batch,
    4,
    known_wrong={
        3: "the device read as 80 × 10⁹ bytes = 74.5 GiB: nvidia-smi's 81,559 MiB are 79.6 GiB",
        5: "something left out: the 3 GiB outside the allocator, the 2 GiB reserved beyond "
        "allocated, or the 0.5 GiB of transients each sequence adds — or b rounded up",
        6: "the saved activations alone against the device: allocator statistics are not "
        "device use",
    },
)
### END HIDDEN TESTS
passed("Exercise 5")

# %% [markdown]
# ### Explained answer — Why does the device report more than the allocator's peak? (2 points, graded by hand)
#
# After one step of a job on an A100 80GB (81,920 MiB), `torch.cuda.max_memory_allocated()`
# reports 61 GiB, `max_memory_reserved()` 68 GiB, and `nvidia-smi` shows the process using
# 75 GiB. One more sequence per micro-batch (2 GiB more activations) runs out of memory. In 4–6
# sentences: where are the 7 GiB between allocated and reserved, and the 7 GiB between reserved
# and `nvidia-smi`? Why did the larger micro-batch not fit, although 5 GiB were free on the device
# and 7 GiB were cached? What would you measure or change first?

# %% [markdown] nbgrader={"grade": true, "grade_id": "explain_device_memory", "locked": false, "points": 2, "schema_version": 3, "solution": true, "task": false}
# **Model answer.** Reserved counts the segments the allocator keeps: blocks rounded up or handed
# out unsplit, free blocks cached for reuse, and fragmentation. The 7 GiB between reserved and
# `nvidia-smi` are outside the allocator: the CUDA context, NCCL's buffers, libraries that
# `cudaMalloc` themselves. The cached 7 GiB are not lost — a request takes a cached block that
# fits, and a failed `cudaMalloc` first releases entirely free segments and retries — so the
# headroom was neither 80 − 61 = 19 GiB nor 80 − 75 = 5 GiB. It failed because one more sequence
# makes every per-sequence tensor larger (activations, transients, the loss's $s \cdot b \cdot V$
# buffers): the new requests fit no cached block sized for the old $b$, the segments holding those
# blocks cannot be released while a live block sits in them, and new segments must come out of
# the 5 GiB. First measure: `memory_stats()` (`inactive_split_bytes`, `num_alloc_retries`), the
# out-of-memory message's "reserved by PyTorch but unallocated", `mem_get_info()` against
# `memory_reserved()`, a memory snapshot of the step; then try
# `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` or selective recomputation.
#
# **Rubric (2 points).** 1 point: reserved − allocated explained as caching, rounding and
# fragmentation, and why the cache did not absorb the larger requests. 1 point: the memory outside
# the allocator named (CUDA context, NCCL buffers, other libraries) and a concrete measurement or
# change.

# %% [markdown]
# ## Takeaways
#
# - Live bytes are a sweep: sort the events, frees first at equal times, cumulative sum. The peak
#   is a moment; attribute it to the tensors live then.
# - In a training step that moment is usually just after the forward pass, when every activation
#   is live and the first backward ops allocate on top.
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
# - **The loss.** The cross-entropy's backward needs its saved fp32 log-probabilities, its
#   incoming gradient and its result at once: $12\,sbV$ bytes. With a large vocabulary it is often
#   the single largest memory consumer of a step (Wijmans et al. 2025, "Cut Your Losses in
#   Large-Vocabulary Language Models"); fused or chunked losses exist for that reason.
# - **Small batches.** With few tokens the activations are small and the peak moves to the
#   optimizer step, where every weight gradient and the optimizer's scratch are live (Explore,
#   item 3).
# - **Tensor parallelism without sequence parallelism.** Table 2's rows are
#   $sbh(10 + 24/t + 5as/(ht))$, and $sbh(10 + 24/t)$ with selective recomputation: the layer
#   norms, dropouts and the inputs of the first linear layers stay replicated on every rank.
# - **Full recomputation in Megatron-LM.** Without sequence parallelism its
#   `distribute_saved_activations` option splits the replicated checkpoint over the $t$ ranks
#   ($2\,sbh/t$ again, for an all-gather before the recompute); with sequence parallelism the
#   option is switched off, the input being split already (`megatron/legacy/model/transformer.py`).
# - **Pipelines.** Under 1F1B the first stage holds $p$ micro-batches of $L/p$ layers each:
#   $L$ layers' worth of activations, whatever $p$ (Korthikanti et al. 2022, §4.2.3). That is the
#   number to compare with a device.
# - **Fragmentation.** `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` grows one segment per
#   stream instead of cutting new ones; `max_split_size_mb` stops large cached blocks from being
#   split. `torch.cuda.memory._record_memory_history()` and `_dump_snapshot()` record every
#   allocation with its stack, and pytorch.org/memory_viz draws them — the real-world version of
#   this lesson's timelines.
# - **Device totals.** `torch.cuda.mem_get_info()` returns (free, total) as CUDA sees them; the
#   total can sit a little below `nvidia-smi`'s (`deviceQuery` on an A100 40GB: 40,339 of
#   40,960 MiB), and the free figure is what a new segment can still get.
