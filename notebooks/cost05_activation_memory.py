# %% [markdown]
# # cost05 · Peak activation memory depends on overlapping lifetimes and allocator scope
#
# **Objective.** Attribute live storage and transient workspaces at the actual peak rather than
# summing per-operator allocations or equating allocator statistics with total device use.
#
# **Time:** 32 min · **Level:** advanced
#
# You will be able to
# - compute live bytes over time from allocation and free events, find the moment of the peak
#   and name the tensors live at that moment;
# - explain why a sum of per-operator allocations overstates memory, and why a transient
#   workspace counts only while it lives;
# - predict allocated and reserved bytes of PyTorch's caching allocator, and say what else the
#   device holds;
# - estimate a transformer layer's activation bytes under no, selective and full recomputation
#   (Korthikanti et al. 2022) and decide which policy fits a device.
#
# **What you need:** cost01 (a step as ops on a timeline); pandas boolean indexing and
# `groupby`, numpy `cumsum` and `argsort`; the shapes of a transformer layer — sequence length
# $s$, micro-batch size $b$, hidden size $h$, attention heads $a$.

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
from course_lib.explorers.activation_memory import (
    activation_memory_explorer,
)
from course_lib.figures.memory import memory_timeline
from course_lib.memory import (
    STEP_CATEGORIES,
    CachingAllocator,
    activation_bytes_per_layer,
    lifetimes,
    live_bytes,
    live_bytes_by_category,
    peak,
    simulate_allocator,
    training_step_events,
)

rng = np.random.default_rng(5)  # the course's convention; nothing in this lesson is random
ms = 1e-3  # one millisecond in seconds
KiB, MiB, GiB = 2**10, 2**20, 2**30  # binary units, as PyTorch's memory summaries use

# The exercises' step: 8 layers, h = 1024, 16 heads, 2048-token sequences, an 8192-token
# vocabulary, one sequence per micro-batch, selective recomputation.
EX_SHAPE = dict(
    num_layers=8, seq_len=2048, micro_batch=1, hidden=1024, num_heads=16, vocab_size=8192
)
EX_STEP = training_step_events(**EX_SHAPE, recompute="selective")

# %% [markdown]
# ## 1. Live bytes are a sweep over allocation and free events
#
# A memory profile of a training step is a list of **events**: at time $t$ a tensor of $n$ bytes
# is allocated, or freed. Tensor $i$ lives on the half-open interval $[a_i, f_i)$ from its
# allocation to its free ($f_i = \infty$ if it is never freed), and the **live bytes** at time
# $t$ are
#
# $$M(t) = \sum_i n_i \, [\,a_i \le t < f_i\,],$$
#
# where $n_i$ is tensor $i$'s size and $[\cdot]$ is 1 when the condition holds. Because the
# intervals are half-open, a tensor freed at $t$ and one allocated at $t$ are never live
# together: at equal times, **frees count before allocations**. That is also what the allocator
# does when an op's output takes the memory its input just released. The **peak** is
# $\max_t M(t)$, and it is a moment: the first $t$ where the maximum is reached.
#
# $M$ only changes at event times, so one sort and one cumulative sum give all of it: order the
# events by time, add $+n$ for an allocation and $-n$ for a free, and read the running total
# after the last event at each time. Here is a two-layer toy step, in MiB and milliseconds.

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
print("time (ms):      ", times / ms)
print("live bytes (MiB):", level / MiB)
toy_peak = peak(toy)
print(f"peak {toy_peak.bytes / MiB:.0f} MiB at {toy_peak.time / ms:.0f} ms")
display(toy_peak.live.assign(bytes=toy_peak.live["bytes"] / MiB))
memory_timeline(toy, title="Toy step: live bytes by category")
plt.show()

# %% [markdown]
# Read the stack from the bottom: weights, then the two layers' activations, then a matmul
# workspace that lives for 1 ms. The peak, 120 MiB at 3 ms, is exactly the four tensors live
# then. Notice 4 ms: the workspace is freed and `grad2` allocated at the same timestamp. Frees
# first gives 110 MiB. Had you processed the allocation first and taken the maximum over every
# intermediate total, you would report 130 MiB — a peak that never existed. Summing every
# allocation gives 140 MiB: the tensors that are never live together are counted together.
#
# `course_lib.memory` implements the sweep (`live_bytes`, `peak`) and tests it against a
# brute-force sum over tensors at every event time. In Exercise 1 you write it yourself.

# %% [markdown]
# ## 2. The peak is a moment, early in the backward pass
#
# Now a real-sized step. `training_step_events()` builds the allocation and free events of one
# training step of a GPT-style model shaped like GPT-2 small — 12 layers, hidden size
# $h = 768$, 12 heads, a 50257-token vocabulary, about 124 M parameters — on sequences of
# $s = 1024$ tokens, $b = 4$ sequences per micro-batch. It is a model, not a trace: each op
# allocates what an unfused PyTorch implementation would — the saved tensors Korthikanti et al.
# itemize (section 5) plus the transients — with durations from a FLOP and byte count, and it is
# deterministic. Its categories are
#
# - **weight** and **optimizer**: bf16 weights, and Adam's fp32 master weights and two moments —
#   $2 + 12$ bytes per parameter, plus 2 for the bf16 gradient makes the 16 bytes per parameter
#   of mixed-precision Adam (Rajbhandari et al. 2020, ZeRO, §3.1). Allocated before the step,
#   never freed;
# - **activation**: the tensors the forward pass saves for the backward pass (section 5 itemizes
#   them), including the fp32 log-probabilities the cross-entropy keeps;
# - **workspace**: everything transient — forward intermediates that are not saved, activation
#   gradients, the loss's fp32 gradients, the optimizer's scratch buffer;
# - **gradient**: weight gradients, allocated when the backward pass computes them and freed
#   by `zero_grad(set_to_none=True)` at the end of the step.

# %%
step = training_step_events()  # GPT-2-small shape, s = 1024, b = 4, no recomputation
print(f"{len(step)} events, {step['tensor'].nunique()} tensors")
display(step.iloc[40:48])
step_peak = peak(step)
print(
    f"peak {step_peak.bytes / GiB:.2f} GiB at {step_peak.time / ms:.2f} ms; "
    f"forward ends at {step.loc[step['phase'] == 'forward', 'time'].max() / ms:.2f} ms"
)
memory_timeline(step, title="One training step, GPT-2-small shape, s = 1024, b = 4")
plt.show()

# %% [markdown]
# The orange ramp is the forward pass saving activations layer by layer; the backward pass
# releases them in reverse, one layer at a time, while green weight gradients accumulate. The
# peak — dashed line — sits just after the forward pass ends, at the first ops of the backward
# pass: every activation is still live, and the loss's backward allocates its gradients on top
# of them before anything has been freed. Attribute it: what is live at that moment?

# %%
by_category = step_peak.live.groupby("category")["bytes"].sum().reindex(STEP_CATEGORIES)
display((by_category.fillna(0) / GiB).round(3).to_frame("GiB at the peak"))
display(step_peak.live.head(8).assign(bytes=lambda d: d["bytes"] / MiB))

# %% [markdown]
# About 4.8 GiB of the 7.9 GiB are activations, 1.6 GiB are weights and optimizer state — and
# 1.5 GiB are two workspaces that live for two milliseconds or less: `head.d_log_probs` and
# `head.d_logits_fp32`, the loss's fp32 gradients with respect to the $s \times b \times V$
# log-probabilities and logits ($4 \cdot 1024 \cdot 4 \cdot 50257$ bytes $\approx$ 0.77 GiB
# each). The loss's
# `log_softmax` backward needs its saved fp32 output, its incoming gradient and its result
# at once: $12\,sbV$ bytes. With a large vocabulary and a small model, the cross-entropy is often
# the single largest memory consumer of the step (Wijmans et al. 2025, "Cut Your Losses in
# Large-Vocabulary Language Models", abstract), and fused or chunked losses exist for that
# reason.
#
# A transient counts only while it lives. The same workspaces that decide this peak are
# irrelevant a few milliseconds later; a 3 GiB workspace in the middle of the backward pass,
# when half the activations are gone, would not move the peak at all. This is why you attribute
# the peak at its moment, not per op.

# %% [markdown]
# ## 3. Summing per-operator allocations overstates the peak
#
# A per-operator memory table — the memory columns of a profiler's op summary, or your own log
# of what each op allocates — answers "how much did this op allocate?". Adding up that column
# answers nothing useful: it counts tensors that never coexist.

# %%
allocated = step[step["kind"] == "alloc"]
per_op = allocated.groupby("op")["bytes"].sum().sort_values(ascending=False)
print(f"sum of all allocations: {allocated['bytes'].sum() / GiB:.1f} GiB")
print(f"peak live bytes:        {step_peak.bytes / GiB:.1f} GiB")
display((per_op.head(6) / MiB).round(1).to_frame("allocated by the op (MiB)"))
totals = pd.DataFrame(
    {
        "sum of allocations (GiB)": allocated.groupby("category")["bytes"].sum() / GiB,
        "live at the peak (GiB)": by_category / GiB,
    }
).reindex(STEP_CATEGORIES)
display(totals.fillna(0).round(2))

# %% [markdown]
# The allocations add up to 16.2 GiB, twice the 7.9 GiB peak. Category by category, the
# workspace row shows the gap: 9.6 GiB of transients were allocated during the step, 1.5 GiB of
# them were live at the peak. Weights and optimizer state match because they are live all the
# time; gradients are allocated during the backward pass and are not live at all at this peak.
# The per-op table is still useful — it tells you which op to fuse or chunk — but only the sweep
# tells you the requirement.

# %% [markdown]
# ## 4. The allocator reserves more than it allocates, and the device holds more than the allocator
#
# Live bytes are what tensors ask for. PyTorch does not call `cudaMalloc` for every tensor: its
# **caching allocator** reserves large *segments* from the device and hands out *blocks* of
# them. With the default configuration (constants of `c10/cuda/CUDACachingAllocator.cpp`):
#
# - every request is rounded up to a multiple of 512 bytes;
# - requests of at most 1 MiB come from a small pool of 2 MiB segments; requests between 1 and
#   10 MiB get a 20 MiB segment; from 10 MiB a request gets a segment of its own, rounded up to
#   a multiple of 2 MiB;
# - a free block is reused best-fit; a block is split only if the remainder is at least 512
#   bytes (small pool) or more than 1 MiB (large pool) — otherwise the request gets the whole
#   block;
# - a freed block stays in its segment; segments return to the device only on
#   `torch.cuda.empty_cache()`, and only when they are entirely free.
#
# `torch.cuda.memory_allocated()` counts the blocks handed out, `memory_reserved()` the segments.
# Always requested $\le$ allocated $\le$ reserved. `CachingAllocator` models these rules.

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
# Three segments for four tensors. `c` (11 MiB) got a 12 MiB segment of its own, and all 12 MiB
# of it count as allocated: the 1 MiB left over is not more than 1 MiB, so it is not split off.
# `a` and `d` share a 20 MiB segment, `b` sits in a 2 MiB small segment. After `a` is freed,
# 14.3 MiB are requested, 15.3 MiB allocated, 34 MiB reserved — 18.7 MiB of it free, in three
# pieces — and `empty_cache()` returns nothing: no segment is entirely free.
#
# Replay the training step through the model with `simulate_allocator`:

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
ax.legend(frameon=False, loc="lower right")
ax.grid(alpha=0.3)
plt.show()
print(
    f"peaks: requested {replay['requested'].max() / GiB:.2f} GiB, allocated "
    f"{replay['allocated'].max() / GiB:.2f} GiB, reserved {replay['reserved'].max() / GiB:.2f} GiB"
)
print(
    f"after the step: allocated {replay['allocated'].iloc[-1] / GiB:.2f} GiB, "
    f"reserved {replay['reserved'].iloc[-1] / GiB:.2f} GiB"
)

# %% [markdown]
# Allocated tracks requested (dotted) closely: rounding costs little with tensors this large.
# Reserved climbs in segment-sized steps, tops out 0.4 GiB above the peak and **never comes
# down**: after the step, 1.6 GiB are allocated and 8.4 GiB reserved. The next step reuses the
# cached segments, which is the point of the cache. A different mix of sizes can fragment it —
# enough free bytes in total, no free block large enough — and then reserved grows further.
#
# What the device reports (`nvidia-smi`, `torch.cuda.mem_get_info()`) is larger still. The
# PyTorch documentation (CUDA semantics, "Memory management") warns that memory cached by the
# allocator "will still show as if used in nvidia-smi". Beyond the allocator's reserved bytes,
# the process also holds the CUDA context (driver state and loaded kernels, hundreds of MiB),
# NCCL's communication buffers (their size is set by `NCCL_BUFFSIZE`, per communicator), and
# whatever other libraries `cudaMalloc` themselves; other processes on the same device add their
# own. So `max_memory_allocated()` is a lower bound on what a job needs, not the answer.

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
# number of attention heads. The 34 is $11\,sbh$ of attention inputs (the QKV input, Q, K, V,
# the output projection's input, a dropout mask), $19\,sbh$ of MLP (its input, the $4h$-wide GeLU
# input and output, a mask) and $4\,sbh$ for the two layer-norm inputs. The $5as/h$ term is the
# $a \times s \times s$ attention matrix stored three times: softmax output (2 bytes), its dropout
# mask (1) and the dropout output (2), $5as^2b$ bytes. Their Table 2 gives the variants:
#
# | setting | bytes per layer |
# |---|---|
# | no parallelism | $sbh\,(34 + 5as/h)$ |
# | tensor + sequence parallel, degree $t$ | $\frac{sbh}{t}(34 + 5as/h)$ |
# | tensor + sequence parallel + selective recomputation | $34\,sbh/t$ |
# | full recomputation | $2\,sbh$ |
#
# **Selective recomputation** (§5) drops the $5as^2b$ attention tensors and recomputes them —
# the QKᵀ product, softmax, dropout and attention over V — just before the layer's backward:
# they take most of the memory but little of the compute. **Full recomputation** keeps only each
# layer's 2-byte input and reruns the whole layer forward before its backward. For the step of
# section 2, $5as/h = 5 \cdot 12 \cdot 1024 / 768 = 80$, so the attention matrix is 80 of 114
# units; for GPT-3 175B ($a = 96$, $s = 2048$, $h = 12288$) it is 80 too, so selective
# recomputation removes $80/114 = 70\,\%$ of its activation memory.
#
# The events of `training_step_events` save exactly these tensors. Check one layer at the end of
# the forward pass against the formula, for each policy, and compare the three timelines.

# %%
s, b, h, a = 1024, 4, 768, 12
policies = ["none", "selective", "full"]
steps = {p: training_step_events(seq_len=s, micro_batch=b, recompute=p) for p in policies}
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
        f"Table 2 {formula / MiB:6.1f} MiB; peak {peak(ev).bytes / GiB:.2f} GiB, "
        f"step {ev['time'].max() / ms:.1f} ms"
    )

fig, axes = plt.subplots(3, 1, figsize=(11, 9.5), layout="constrained")
for ax, (p, ev) in zip(axes, steps.items(), strict=True):
    memory_timeline(ev, ax=ax, title=f"recompute = {p!r}: peak {peak(ev).bytes / GiB:.2f} GiB")
    ax.set(ylim=(0, 10.5), xlim=(0, 1.02 * steps["full"]["time"].max()))  # one scale for all
    if ax is not axes[0]:
        ax.get_legend().remove()
plt.show()

# %% [markdown]
# Same axes, three policies. Selective recomputation shrinks the orange ramp by 80/114 and costs
# 12 % more step time here (the recomputed attention: small in FLOPs, but memory-bound in this
# model); full recomputation leaves a thin 6 MiB sliver per layer and reruns each layer's
# forward in the backward pass — the sawtooth — for 28 % more time. Notice what does not shrink:
# weights, optimizer state and the loss's 2.3 GiB of fp32 work. The peak stays at
# `log_softmax_bwd` under all three policies; only a fused or chunked loss would move it.
#
# Under pipeline parallelism with 1F1B, the first stage holds $p$ micro-batches of $L/p$ layers
# each: $L$ layers' worth of activations, whatever $p$ (Korthikanti et al. 2022, §4.2.3). That is
# the number to compare with a device, and Exercise 5 does.

# %% [markdown]
# ## Explore
#
# The explorer rebuilds the step of section 2 for the sequence length $s$, micro-batch size $b$
# and recomputation policy you choose, draws its memory timeline with the peak, and compares one
# layer's saved activations with Table 2. The y axis is shared by the three policies of a shape,
# so toggling them shows the stack shrink. Try:
#
# 1. $s = 1024$, $b = 4$: toggle none → selective → full. The peak falls from 7.9 to 5.1 to
#    4.0 GiB, the step time rises, and the peak stays at `log_softmax_bwd`.
# 2. $s = 2048$, $b = 16$, none: 75 GiB, near the dotted 80 GiB line. Which policy would you
#    pick, and what does it cost in step time?
# 3. $s = 128$, $b = 1$: the activations are small, and the peak jumps to the optimizer step,
#    where every weight gradient and the optimizer's scratch buffer are live. Find the smallest
#    $b$ at which it returns to the backward pass, then do the same at $s = 256$. What do the two
#    answers have in common?
# 4. Watch the "sum of all allocations" row as you drag $b$: it is always several times the
#    peak.

# %%
activation_memory_explorer()

# %% [markdown]
# ## Exercises
#
# Answer in the cells marked `YOUR CODE HERE`, then run the grade cell below each: its visible
# checks give quick feedback; hidden tests check more cases when the notebook is graded. Sizes
# are in bytes (use `MiB`, `GiB` from the setup cell), times in seconds.
#
# Exercises 2 and 3 use `EX_STEP`, defined in the setup cell: the events of one step of an
# 8-layer model with $h = 1024$, 16 heads, 2048-token sequences, one sequence per micro-batch,
# an 8192-token vocabulary and **selective** recomputation.

# %%
memory_timeline(EX_STEP, title="The exercises' step (EX_STEP)")
plt.show()

# %% [markdown]
# ### Exercise 1 — Implement the peak-live sweep (3 points)
#
# Write `peak_live(events)` returning `(time, bytes)`, two floats: the first time at which live
# bytes reach their maximum, and that maximum. `events` is a DataFrame with columns `time`,
# `tensor`, `bytes` and `kind` (`"alloc"` or `"free"`), possibly more, **in any row order**.
#
# - A tensor lives on $[a_i, f_i)$; one never freed stays live to the end.
# - The live bytes at time $t$ are those after every event at $t$: frees count before
#   allocations at equal times, and a tensor allocated and freed at the same time is never live.
# - Use numpy or pandas (a sort and a cumulative sum). While the grade cell runs your function,
#   it disables `live_bytes`, `live_bytes_by_category`, `peak` and `simulate_allocator` of
#   `course_lib.memory`, and the `CachingAllocator`.


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

_FORBIDDEN = [
    (_memory, name)
    for name in ("live_bytes", "live_bytes_by_category", "peak", "simulate_allocator", "_levels")
] + [(_memory.CachingAllocator, "malloc")]


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
    # equal maxima (the first counts); rows shuffled.
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
            200.0: "a and b counted together: allocations before frees at one time, or a sum of all "
            "allocations"
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
# Find the peak of `EX_STEP` (you may use `course_lib.memory` from here on). Set
#
# - `ex_peak_workspaces` to the set of names (strings) of the **workspace** tensors live at the
#   peak;
# - `ex_peak_activation_bytes` to the bytes of **activation** tensors live at the peak, a float.
#
# The figure above shows when the peak happens. Before you compute, ask why it is there and not
# at the loss, as in section 2 — and what the recomputed attention has to do with it.

# %% nbgrader={"grade": false, "grade_id": "peak_live_set_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
_ex_peak = peak(EX_STEP)
_ex_live = _ex_peak.live
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
        570425344.0: "8 × 34·sbh from Table 2: the formula counts what is saved, not what is live "
        "at one moment",
        855638016.0 / GiB: "GiB, not bytes",
    },
)
### END HIDDEN TESTS
passed("Exercise 2b")

# %% [markdown]
# ### Exercise 3 — How much does the sum of allocations overstate? (1 point)
#
# Set `ex_overstatement` to the sum of the bytes of every allocation in `EX_STEP` divided by
# the step's peak live bytes, a float.

# %% nbgrader={"grade": false, "grade_id": "overstatement_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
ex_overstatement = float(
    EX_STEP.loc[EX_STEP["kind"] == "alloc", "bytes"].sum() / peak(EX_STEP).bytes
)
### END SOLUTION
print(f"ex_overstatement = {ex_overstatement:.2f}")

# %% nbgrader={"grade": true, "grade_id": "overstatement_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 3: sum of EX_STEP's allocations over its peak live bytes (a ratio)."""
check_range("ex_overstatement", ex_overstatement, 0.0, 100.0, what="a ratio")
### BEGIN HIDDEN TESTS
check_float(
    "ex_overstatement",
    ex_overstatement,
    14615126016.0 / 2574745600.0,
    known_wrong={
        2574745600.0 / 14615126016.0: "the peak over the sum: the ratio upside down",
        27702009856.0 / 2574745600.0: "frees counted as allocations too",
    },
)
### END HIDDEN TESTS
passed("Exercise 3")

# %% [markdown]
# ### Exercise 4 — Allocated and reserved after a sequence (2 points)
#
# A fresh caching allocator (PyTorch's default rules, section 4) sees, in this order:
#
# `a` = 6 MiB, `b` = 6 MiB, `c` = 6 MiB, free `a`, free `c`, `d` = 7 MiB, `e` = 7 MiB,
# `f` = 300 KiB, free `b`.
#
# Predict, then check with `CachingAllocator`: set `seq_allocated` and `seq_reserved` to the
# allocated and reserved bytes after the sequence, and `seq_released` to the bytes
# `empty_cache()` would then return to the device — three ints.

# %% nbgrader={"grade": false, "grade_id": "allocator_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
_seq = CachingAllocator()
for _op, _name, _size in [
    ("malloc", "a", 6 * MiB),
    ("malloc", "b", 6 * MiB),
    ("malloc", "c", 6 * MiB),
    ("free", "a", 0),
    ("free", "c", 0),
    ("malloc", "d", 7 * MiB),
    ("malloc", "e", 7 * MiB),
    ("malloc", "f", 300 * KiB),
    ("free", "b", 0),
]:
    if _op == "malloc":
        _seq.malloc(_name, _size)
    else:
        _seq.free(_name)
seq_allocated = _seq.allocated_bytes
seq_reserved = _seq.reserved_bytes
seq_released = _seq.empty_cache()
### END SOLUTION
print(
    f"allocated {seq_allocated / MiB:.2f} MiB, reserved {seq_reserved / MiB:.2f} MiB, "
    f"released {seq_released / MiB:.2f} MiB"
)

# %% nbgrader={"grade": true, "grade_id": "allocator_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 4: allocated, reserved and released-by-empty_cache bytes after the sequence (ints)."""
for _name, _value in (
    ("seq_allocated", seq_allocated),
    ("seq_reserved", seq_reserved),
    ("seq_released", seq_released),
):
    check_type(_name, _value, int)
    check_range(_name, _value, 0, 100 * MiB, what="bytes")
if not seq_allocated <= seq_reserved:
    check_int("seq_allocated (it cannot exceed seq_reserved)", seq_allocated, seq_reserved)
### BEGIN HIDDEN TESTS
_requested = 14 * MiB + 300 * KiB
check_int(
    "seq_allocated",
    seq_allocated,
    15 * MiB + 300 * KiB,
    known_wrong={
        _requested: "the requested bytes: d got a whole 8 MiB block (a 1 MiB remainder is not split)",
    },
)
check_int(
    "seq_reserved",
    seq_reserved,
    42 * MiB,
    known_wrong={
        _requested: "the requested bytes: the allocator reserves whole segments",
        40 * MiB: "the small pool forgotten: f takes a 2 MiB segment of its own",
        22 * MiB: "e placed in the first segment, whose only free block (6 MiB) is too small",
        32 * MiB + 300 * KiB: "the sum of every request ever made",
    },
)
check_int(
    "seq_released",
    seq_released,
    0,
    known_wrong={
        42 * MiB - (15 * MiB + 300 * KiB): "reserved minus allocated: empty_cache returns only "
        "segments with no live block, and every segment still holds one",
    },
)
### END HIDDEN TESTS
passed("Exercise 4")

# %% [markdown]
# ### Exercise 5 — Activation memory of GPT-3 175B on one GPU (1 point)
#
# GPT-3 175B: $L = 96$ layers, $h = 12288$, $a = 96$ heads, $s = 2048$, micro-batch $b = 1$,
# tensor and sequence parallelism of degree $t = 8$, and 1F1B pipeline parallelism, so the first
# stage holds $L$ layers' worth of activations (section 5). Set `act_175b` to a tuple of three
# floats: the activation bytes on a first-stage GPU under no, selective and full recomputation,
# in that order (Korthikanti et al. 2022, Table 2; ignore the embedding and output layers).

# %% nbgrader={"grade": false, "grade_id": "act_175b_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
act_175b = tuple(
    96
    * activation_bytes_per_layer(
        2048, 1, 12288, 96, tensor_parallel=8, sequence_parallel=True, recompute=policy
    )
    for policy in ("none", "selective", "full")
)
### END SOLUTION
print([f"{x / GiB:.2f} GiB" for x in act_175b])

# %% nbgrader={"grade": true, "grade_id": "act_175b_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 5: activation bytes of a first-stage GPU, (none, selective, full) (floats, bytes)."""
check_type("act_175b", act_175b, tuple)
check_int("len(act_175b)", len(act_175b), 3)
for _x in act_175b:
    check_range("each entry of act_175b", _x, 1.0 * MiB, 10_000.0 * GiB, what="bytes")
### BEGIN HIDDEN TESTS
_sbh = 2048 * 1 * 12288
check_float(
    "act_175b[0], no recomputation",
    act_175b[0],
    96 * _sbh / 8 * (34 + 5 * 96 * 2048 / 12288),
    known_wrong={
        96 * _sbh * (34 + 5 * 96 * 2048 / 12288): "no division by t: tensor and sequence "
        "parallelism split every activation",
        96 * _sbh * (10 + 24 / 8 + 5 * 96 * 2048 / (12288 * 8)): "Table 2's tensor-parallel row "
        "without sequence parallelism: the layer norms and dropouts stay replicated",
        12 * _sbh / 8 * (34 + 5 * 96 * 2048 / 12288): "L/p = 12 layers: the first stage holds p "
        "micro-batches of them",
        _sbh / 8 * (34 + 5 * 96 * 2048 / 12288): "one layer, not 96",
    },
)
check_float(
    "act_175b[1], selective recomputation",
    act_175b[1],
    96 * 34 * _sbh / 8,
    known_wrong={
        96 * _sbh * (10 + 24 / 8): "Table 2's tensor-parallel row without sequence parallelism"
    },
)
check_float(
    "act_175b[2], full recomputation",
    act_175b[2],
    96 * 2 * _sbh,
    known_wrong={96 * 2 * _sbh / 8: "2sbh/t: Table 2's full-recomputation row is 2sbh"},
)
### END HIDDEN TESTS
passed("Exercise 5")

# %% [markdown]
# ### Exercise 6 — Which policy fits? (1 point)
#
# Each GPU of Exercise 5 holds $175 \times 10^9 / 64$ parameters at 16 bytes each (weights,
# gradients, Adam state; no optimizer sharding): 40.7 GiB. At the peak, transient workspaces add
# 2 GiB. Outside the allocator's live bytes you measured 8 GiB: CUDA context, NCCL buffers and
# reserved-but-free cache. The device has 80 GiB. Which is the least recomputation that fits?
# Set `fits_policy` to `"none"`, `"selective"`, `"full"` or `"nothing"` (none of them fits).

# %% nbgrader={"grade": false, "grade_id": "fits_policy_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
_states = 175e9 / 64 * 16
_order = ("none", "selective", "full")
_needs = {p: x + _states + 2 * GiB + 8 * GiB for p, x in zip(_order, act_175b, strict=True)}
fits_policy = next((p for p in _order if _needs[p] <= 80 * GiB), "nothing")
### END SOLUTION
print(fits_policy)

# %% nbgrader={"grade": true, "grade_id": "fits_policy_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 6: the least recomputation that fits in 80 GiB ("none", "selective", "full", "nothing")."""
check_type("fits_policy", fits_policy, str)
### BEGIN HIDDEN TESTS
check_choice(
    "fits_policy",
    fits_policy,
    "selective",
    {
        "none": "32.1 + 40.7 + 2 = 74.8 GiB fits the allocator's view, but with the 8 GiB outside "
        "it the device needs 82.8 GiB",
        "selective": "9.6 + 40.7 + 2 + 8 = 60.3 GiB: fits, recomputing only the attention matrices",
        "full": "fits (55.2 GiB), but selective already fits with far less recomputation",
        "nothing": "selective recomputation needs 60.3 GiB of the 80",
    },
)
### END HIDDEN TESTS
passed("Exercise 6")

# %% [markdown]
# ### Explained answer — Why does the device report more than the allocator's peak? (2 points, graded by hand)
#
# After one step of a training job, `torch.cuda.max_memory_allocated()` reports 61 GiB,
# `torch.cuda.max_memory_reserved()` 68 GiB, and `nvidia-smi` shows the process using 75 GiB of
# an 80 GiB device. Raising the micro-batch by one sequence (2 GiB more activations, by
# Table 2) runs out of memory. In 4–6 sentences: where are the 7 GiB between allocated and
# reserved, and the 7 GiB between reserved and `nvidia-smi`? Why did 2 GiB more not fit in the
# 19 GiB the allocator's peak seemed to leave? What would you measure or change first?

# %% [markdown] nbgrader={"grade": true, "grade_id": "explain_device_memory", "locked": false, "points": 2, "schema_version": 3, "solution": true, "task": false}
# **Model answer.** Allocated counts the blocks handed to tensors; reserved counts the segments
# the caching allocator took from the device and keeps: rounded and unsplit blocks, free blocks
# cached for reuse, and fragmentation — free space scattered over segments in pieces too small
# for the next request, which `empty_cache()` cannot return while each segment still holds a live
# block. The 7 GiB between reserved and `nvidia-smi` are outside the allocator: the CUDA context
# (driver state and loaded kernels), NCCL's communication buffers, memory other libraries
# `cudaMalloc` themselves. So the real headroom was 80 − 75 = 5 GiB, not 80 − 61 = 19 GiB, and a
# bigger micro-batch also makes every transient and the loss's logits larger, and may need new
# segments that fragmentation makes bigger than the request. First measure: `memory_stats()`
# (reserved vs allocated, inactive split bytes), `mem_get_info()` against `memory_reserved()` for
# the non-allocator part, and a memory snapshot of the step to see what is live at the peak; then
# try `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` against fragmentation, or selective
# recomputation.
#
# **Rubric (2 points).** 1 point: reserved − allocated explained as caching/rounding/fragmentation
# (segments kept, not returned while partly used). 1 point: the non-allocator memory named (CUDA
# context, NCCL buffers, other libraries) and a concrete measurement or change.

# %% [markdown]
# ## Takeaways
#
# - Live bytes are a sweep: sort the allocation and free events, frees first at equal times,
#   take a cumulative sum. The peak is a moment, and you attribute it to the tensors live then.
# - In a training step that moment is usually just after the forward pass, when every activation
#   is still live and the first backward ops (often the loss, with its $sbV$-sized fp32
#   gradients) allocate on top; with few tokens it can move to the optimizer step.
# - A transient counts only while it lives; a layer saves $sbh(34 + 5as/h)$ bytes,
#   $34\,sbh$ with selective recomputation, $2\,sbh$ with full (Korthikanti et al. 2022).
# - The device holds more than the live bytes: the caching allocator reserves whole segments and
#   keeps them, and the CUDA context, NCCL and other libraries sit outside it.
# - The trap: summing per-operator allocations, or reading `max_memory_allocated()` as the
#   memory a job needs. Find the peak moment, attribute it, then add what the allocator does not
#   see.
