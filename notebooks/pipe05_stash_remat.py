# %% [markdown]
# # pipe05 · Activation stashing and rematerialization
#
# **Objective.** Treat saved forward state as identity-bearing data and account for
# recomputation, randomness, and side effects.
#
# **Time:** 28 min · **Level:** advanced
#
# You will be able to
# - keep a pipeline stage's saved forward state keyed by (stage, microbatch), and say why the
#   wrong key fails silently;
# - make a recomputed forward replay its dropout exactly, and count the side effects it repeats;
# - compute what no, selective and full recomputation stash and what they add to a step, and
#   choose per layer what to recompute under a memory budget.
#
# **What you need:** pipe03 (how many stashes 1F1B holds per stage); cost05 (activation bytes
# per layer) helps with section 3. numpy: matrix products and `default_rng`.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
# %matplotlib inline
import matplotlib.pyplot as plt
import numpy as np

from course_lib.checks import (
    check_array,
    check_choice,
    check_float,
    check_int,
    check_names,
    check_range,
    check_type,
    distinct_hints,
    forbid,
    passed,
)
from course_lib.explorers.remat import remat_explorer
from course_lib.figures.one_f_one_b import lifetime_bars
from course_lib.figures.remat import mark_first_backward, recompute_errors, stage_stash_bars
from course_lib.pipeline import one_f_one_b, simulate
from course_lib.pipeline import stash as course_stash
from course_lib.pipeline.stash import (
    PARAM_NAMES,
    Stash,
    gradient_error,
    init_mlp,
    layer_forward_times,
    layer_options,
    mlp_backward,
    mlp_forward,
    new_stats,
    plan_cost,
    recompute_step_time,
    stage_gradients,
    stage_stash_bytes,
)

rng = np.random.default_rng(5)  # the course's convention: the worked example's data
GiB = 2**30

# The worked example: stage 0 of a 4-stage 1F1B pipeline, 8 microbatches of 4 samples through a
# tiny MLP (6 inputs, 12 hidden units, 3 outputs) with dropout. Real numerics, run here.
num_stages, num_microbatches = 4, 8
params = init_mlp(num_inputs=6, num_hidden=12, num_outputs=3, seed=0)
inputs = [rng.normal(size=(4, 6)) for _ in range(num_microbatches)]
targets = [rng.normal(size=(4, 3)) for _ in range(num_microbatches)]
STAGE_SEED, DROP_PROB = 1234, 0.1  # stage 0 draws every dropout mask from default_rng(STAGE_SEED)
stage0 = [(a.kind, a.microbatch) for a in one_f_one_b(num_stages, num_microbatches).actions[0]]

# %% [markdown]
# ## 1. A stash is keyed by (stage, microbatch), not by arrival order
#
# A backward needs its own forward's state: the input, the ReLU's pre-activation, the dropout
# mask. Under 1F1B stage $k$ holds up to $\min(m, p - k)$ of these *stashes* at once (pipe03's
# $p - k - 1$ warm-up forwards plus one; "p or fewer", Narayanan et al. 2021, §2.2.1), where $p$
# is `num_stages` and $m$ is `num_microbatches`:

# %%
timeline = simulate(one_f_one_b(num_stages, num_microbatches), 1e-3, 2e-3)
figure = lifetime_bars({"1F1B": timeline}, stage=0)  # pipe03's figure, stage 0
figure.set_size_inches(9, 4.0)
mark_first_backward(figure.axes[0], timeline, stage=0)
plt.show()

# %% [markdown]
# Each bar is one stash, from its forward (blue) to its backward (orange). When B0 starts
# (dotted), stage 0 holds four; the backward wants the oldest. A stack would hand it the newest,
# F3's, and nothing would complain: the shapes match. On the MLP, with the course's `Stash`
# (keyed by stage and microbatch):

# %%
stage_rng = np.random.default_rng(STAGE_SEED)
held = Stash()
for j in range(4):  # stage 0's first four forwards, before B0
    _, cache = mlp_forward(params, inputs[j], stage_rng, DROP_PROB)
    held.put(0, j, cache)
right = mlp_backward(params, held.get(0, 0), targets[0])
wrong = mlp_backward(params, held.get(0, 3), targets[0])  # what a stack returns
print(f"microbatch 3's state in microbatch 0's backward: no error, gradient off by "
      f"{gradient_error(wrong, right):.0%}")  # fmt: skip

# %% [markdown]
# Order is not identity. Under interleaving (pipe04) one rank holds several stages, so
# microbatch 3 of stage 0 and of stage 4 live side by side: key by microbatch alone and they
# collide. A second `put` of a key, or a `get` of a key not held, is a schedule bug: `Stash`
# raises `ValueError` and `KeyError`.
#
# ## 2. Recomputation reruns the forward: its random draws and its side effects
#
# *Full recomputation* keeps only each microbatch's input and reruns the forward just before the
# backward, drawing dropout masks again. `stage_gradients` runs stage 0's order with the state
# stored, or recomputed from the stage's generator as it is at the backward (`advance`), from
# `default_rng(STAGE_SEED)` again (`reseed`), or from the generator state saved at the forward
# (`restore`):

# %%
stored = stage_gradients(params, inputs, targets, stage0, STAGE_SEED, DROP_PROB)
errors = {}
for mode in ("advance", "reseed", "restore"):
    again = stage_gradients(params, inputs, targets, stage0, STAGE_SEED, DROP_PROB, mode=mode)
    errors[mode] = [gradient_error(again[j], stored[j]) for j in range(num_microbatches)]
recompute_errors(errors)
plt.show()

# %% [markdown]
# Fresh draws change every gradient, by 20 to 90 %. Reseeding repairs microbatch 0 only:
# its masks were the stream's first draws, the others' started further along. Restoring the
# saved state gives bit-identical gradients. In numpy the state is a dict:
# `state = g.bit_generator.state` before the forward, `g.bit_generator.state = state` before the
# rerun. `torch.utils.checkpoint` does this by default (`preserve_rng_state=True`, PyTorch
# docs).
#
# A rerun also repeats every side effect. A BatchNorm-style running mean,
# $r \leftarrow (1 - \mu)\,r + \mu\,\bar{x}$ (momentum $\mu = 0.1$, `torch.nn.BatchNorm1d`'s
# convention), and its counter `num_batches_tracked` are updated once per forward *run*:

# %%
for mode in ("stored", "restore"):
    stats = new_stats(12)
    stage_gradients(params, inputs, targets, stage0, STAGE_SEED, DROP_PROB, mode, stats)
    print(f"{mode:>8}: num_batches_tracked = {stats['num_batches_tracked']}, "
          f"running_mean[:3] = {np.round(stats['running_mean'][:3], 4)}")  # fmt: skip

# %% [markdown]
# Exact gradients, yet 16 updates instead of 8 and another running mean, which evaluation then
# uses. PyTorch's checkpoint does not prevent it (pytorch/pytorch issue #96136 asks it to).
#
# ## 3. What each policy stashes, and what it adds to the step
#
# Korthikanti et al. (2022, "Reducing Activation Recomputation in Large Transformer Models",
# Table 2, 16-bit; selective is its tensor-parallel row at $t = 1$) count the bytes one
# transformer layer stashes:
#
# | recomputation | bytes per layer per microbatch | what the backward waits for, $t_r$ |
# |---|---|---|
# | none | $sbh\,(34 + 5as/h)$ | nothing |
# | selective | $34\,sbh$ | the attention core's forward, $t_\text{core}$ |
# | full | $2\,sbh$ (the layer input) | the whole forward, $t_f$ |
#
# where $s$ is the sequence length, $b$ the micro-batch size, $h$ the hidden size and $a$ the
# number of heads; $5as/h$ is the $a{\times}s{\times}s$ softmax output, dropout mask and dropout
# output, which selective recomputation reruns (QKᵀ through attention over V; §5).
# Stage $k$ stashes $\min(m, p - k)$ · `layers_per_stage` times its row. For $h = 4096$,
# $a = 32$, $s = 2048$, $b = 1$, 8 layers per stage, against a 6 GiB budget:

# %%
shape = dict(layers_per_stage=8, seq_len=2048, micro_batch=1, hidden=4096, num_heads=32)
per_stage = {
    policy: [stage_stash_bytes(policy, k, num_stages, num_microbatches, **shape) for k in range(4)]
    for policy in ("none", "selective", "full")
}
stage_stash_bars(per_stage, capacity=6 * GiB)
plt.show()

# %% [markdown]
# Stage 0 needs 28.5 GiB without recomputation, 8.5 with selective, 0.5 with full. The time
# cost lands on the critical path: $t_r$ lengthens *every* backward slot of a balanced 1F1B step,
# bubble included, so
#
# $$T = (m + p - 1)\,(t_f + t_b + t_r).$$
#
# At an assumed 400 TFLOP/s (synthetic; matmul FLOPs $24bsh^2 + 4bs^2h$ per layer forward,
# $4bs^2h$ of it the core, Korthikanti et al. App. A; `layer_forward_times`) and $t_b = 2t_f$:

# %%
t_layer, t_core = layer_forward_times(2048, 1, 4096, 400e12)
t_f, t_b, t_c = 8 * t_layer, 16 * t_layer, 8 * t_core  # the stage: 8 layers
for policy in ("none", "selective", "full"):
    step = recompute_step_time(policy, num_stages, num_microbatches, t_f, t_b, t_c)
    t_r = {"none": 0.0, "selective": t_c, "full": t_f}[policy]
    run = simulate(one_f_one_b(num_stages, num_microbatches), t_f, t_b + t_r)
    print(f"{policy:>9}: step {step * 1e3:6.1f} ms (simulate: {run.makespan * 1e3:6.1f} ms)")

# %% [markdown]
# Full recomputation adds $t_f$ to every $3t_f$: 33 %. Selective adds 2.6 % here and removes
# 70 % of the bytes. These are FLOP counts; GPUs measure more (Going further).
#
# ## 4. Under a budget, choose per layer what to recompute
#
# Neither uniform policy suits stage 0: selective needs 8.5 GiB, full costs 33 %. Mix per layer:
# the best plan minimises the summed $t_r$ within the budget. It is a knapsack, where the layer
# saving the most bytes per second recomputed can be the wrong first pick, so search exactly;
# `best_recompute_plan` keeps the Pareto frontier of partial plans:

# %%
options = [layer_options(2048, 1, 4096, 32, t_layer, t_core)] * 8  # (bytes, t_r): none, sel, full
plan = course_stash.best_recompute_plan(options, 6 * GiB / 4)  # 4 microbatches in flight
plan_bytes, plan_time = plan_cost(options, plan)
print(f"plan {plan} (0 none, 1 selective, 2 full): {4 * plan_bytes / GiB:.2f} GiB, "
      f"+{plan_time / (3 * t_f):.1%} of the step")  # fmt: skip

# %% [markdown]
# Five selective layers and three full: 5.5 GiB for +14 %, against +33 % for all full.
#
# ## Explore
#
# Grey points are an 8-layer stage's plans, the staircase their frontier, the star the best
# plan within the budget. Try:
# - At $s = 2048$, 4 in flight, drag the budget from 30 to 1 GiB: the star stays under 3 % down
#   to all-selective (8.5 GiB), then climbs one full layer at a time.
# - Set $s = 16384$: $5as/h = 640$, so selective saves 95 % of the bytes; its rerun costs 13 %.

# %%
remat_explorer()

# %% [markdown]
# ## Exercises
#
# Answer in the cells marked `YOUR CODE HERE` and run the grade cell below each; hidden tests
# check more cases at grading. While a grade cell runs your function, the course's routines that
# answer it are disabled.
#
# ### Exercise 1 — Stashed bytes and extra time (3 points)
#
# (a) Write `stash_bytes(policy, stage, num_stages, num_microbatches, layers_per_stage, seq_len,
# micro_batch, hidden, num_heads)`: the peak bytes stage `stage` stashes under 1F1B with
# `policy` `"none"`, `"selective"` or `"full"` (section 3's table), as a float.
#
# (b) Write `recompute_extra_time(policy, num_stages, num_microbatches, forward_time,
# backward_time, core_forward_time)`: the seconds a balanced 1F1B step takes beyond the same
# step without recomputation; the times are one stage's, per microbatch.


# %% nbgrader={"grade": false, "grade_id": "stash_bytes_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def stash_bytes(policy, stage, num_stages, num_microbatches, layers_per_stage, seq_len,
                micro_batch, hidden, num_heads):  # fmt: skip
    """Peak stashed bytes on a 1F1B stage under a recomputation policy (Table 2 rows)."""
    ### BEGIN SOLUTION
    s, b, h, a = seq_len, micro_batch, hidden, num_heads
    per_layer = {"none": s * b * h * (34 + 5 * a * s / h), "selective": 34 * s * b * h,
                 "full": 2 * s * b * h}[policy]  # fmt: skip
    return float(min(num_microbatches, num_stages - stage) * layers_per_stage * per_layer)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "stash_bytes_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 1a: stash_bytes(...), peak stashed bytes on a 1F1B stage (a float)."""
import course_lib.memory as course_memory

no_delegation = [
    (course_memory, "activation_bytes_per_layer"),
    (course_stash, "stage_stash_bytes"),
    (course_stash, "layer_options"),
]
with forbid(*no_delegation, exercise="Exercise 1a"):
    small = stash_bytes("selective", 2, 5, 8, 6, 1024, 2, 2048, 16)
sbh_ = 1024 * 2 * 2048
visible_mistakes = [
    (3 * 6 * sbh_ * (34 + 5 * 16 * 1024 / 2048), "the no-recomputation row, 34 + 5as/h"),
    (8 * 6 * 34 * sbh_, "m microbatches in flight (GPipe's), not min(m, p − stage)"),
    (5 * 6 * 34 * sbh_, "p in flight on every stage: that is stage 0's count; stage k holds "
     "min(m, p − k)"),
    (4 * 6 * 34 * sbh_, "min(m, p − stage + 1): stages are numbered from 0"),
    (2 * 6 * 34 * sbh_, "p − stage − 1 in flight: the warm-up forwards, without the one more"),
    (3 * 34 * sbh_, "one layer, not the stage's layers"),
    (3 * 6 / 5 * 34 * sbh_, "layers_per_stage divided by p: it already is the stage's count"),
    (3 * 6 * 36 * sbh_, "dropout masks at 2 bytes: Table 2 counts them at 1"),
    (2 * 3 * 6 * 34 * sbh_, "4-byte activations: Table 2 counts 16-bit ones"),
    (3 * 6 * 34 * sbh_ / GiB, "GiB: the answer is in bytes"),
]  # fmt: skip
check_float(
    "stash_bytes('selective', 2, 5, 8, 6, 1024, 2, 2048, 16)",
    small,
    3 * 6 * 34 * sbh_,
    known_wrong=distinct_hints(visible_mistakes, 3 * 6 * 34 * sbh_, rtol=1e-6),
)
### BEGIN HIDDEN TESTS
bytes_cases = [  # (policy, stage, p, m, layers_per_stage, s, b, h, a)
    ("none", 0, 4, 8, 8, 2048, 1, 4096, 32),
    ("none", 2, 8, 3, 4, 4096, 1, 5120, 40),
    ("selective", 0, 6, 2, 5, 2048, 4, 3072, 24),
    ("full", 1, 4, 8, 8, 2048, 1, 4096, 32),
    ("full", 0, 2, 16, 12, 8192, 1, 8192, 64),
    ("none", 3, 4, 16, 2, 1024, 8, 1024, 16),
    ("selective", 5, 8, 32, 3, 2048, 2, 6144, 48),
    ("full", 2, 6, 16, 4, 2048, 1, 4096, 32),
]
with forbid(*no_delegation, exercise="Exercise 1a (hidden cases)"):
    bytes_got = [stash_bytes(*case) for case in bytes_cases]
for case, got in zip(bytes_cases, bytes_got, strict=True):
    policy_, k_, p_, m_, layers_, seq_, b_, h_, a_ = case
    sbh = seq_ * b_ * h_
    row = {"none": sbh * (34 + 5 * a_ * seq_ / h_), "selective": 34 * sbh, "full": 2 * sbh}
    two_byte_masks = {"none": sbh * (36 + 6 * a_ * seq_ / h_), "selective": 36 * sbh,
                      "full": 2 * sbh}  # fmt: skip
    flight = min(m_, p_ - k_)
    expected = flight * layers_ * row[policy_]
    wrong = [
        (flight * layers_ * row["none"], "the no-recomputation row, 34 + 5as/h"),
        (flight * layers_ * row["selective"], "the selective row, 34·sbh"),
        (0.0, "nothing stashed under full recomputation: the layer input, 2·sbh, stays"),
        (m_ * layers_ * row[policy_], "m microbatches in flight (GPipe's), not min(m, p − stage)"),
        (min(m_, p_) * layers_ * row[policy_], "p in flight on every stage: that is stage 0's "
         "count; stage k holds min(m, p − k)"),
        (min(m_, p_ - k_ + 1) * layers_ * row[policy_], "min(m, p − stage + 1): stages are "
         "numbered from 0"),
        ((p_ - k_) * layers_ * row[policy_], "p − stage in flight without the min(m, ·)"),
        (max(flight - 1, 0) * layers_ * row[policy_], "one microbatch fewer in flight"),
        (flight * row[policy_], "one layer, not the stage's layers"),
        (flight * layers_ / p_ * row[policy_], "layers_per_stage divided by p: it already is the "
         "stage's count"),
        (flight * layers_ * two_byte_masks[policy_], "dropout masks at 2 bytes: Table 2 counts "
         "them at 1"),
        (2 * expected, "4-byte activations: Table 2 counts 16-bit ones"),
        (8 * expected, "bits, not bytes"),
    ]  # fmt: skip
    if policy_ == "full":
        wrong.append((expected + row["none"], "the stash plus the working set of the layer being "
                      "recomputed: a transient, not a stash"))  # fmt: skip
    check_float(
        f"stash_bytes{case}",
        got,
        expected,
        unit="bytes",
        known_wrong=distinct_hints(wrong, expected, rtol=1e-6),
    )
### END HIDDEN TESTS
passed("Exercise 1a")


# %% nbgrader={"grade": false, "grade_id": "extra_time_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def recompute_extra_time(policy, num_stages, num_microbatches, forward_time, backward_time,
                         core_forward_time):  # fmt: skip
    """Extra seconds per balanced 1F1B step from recomputation."""
    ### BEGIN SOLUTION
    t_r = {"none": 0.0, "selective": core_forward_time, "full": forward_time}[policy]
    return (num_microbatches + num_stages - 1) * t_r
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "extra_time_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 1b: recompute_extra_time(...), extra seconds per balanced 1F1B step (a float)."""
import course_lib.pipeline as course_pipeline
import course_lib.pipeline.accumulation as course_accumulation
import course_lib.pipeline.formulas as course_formulas
import course_lib.pipeline.imbalance as course_imbalance
import course_lib.pipeline.interleaving as course_interleaving
import course_lib.pipeline.p2p as course_p2p

no_delegation = [  # this lesson's step time and every makespan or bubble routine of the course
    (course_stash, "recompute_step_time"),
    (course_stash, "recompute_time"),
    (course_pipeline, "simulate"),
    (course_p2p, "simulate_p2p"),
    (course_formulas, "fill_drain_makespan"),
    (course_formulas, "fill_drain_overhead"),
    (course_formulas, "fill_drain_idle_fraction"),
    (course_formulas, "interleaved_overhead"),
    (course_formulas, "zero_bubble_h1_bubble"),
    (course_interleaving, "interleaved_makespan"),
    (course_interleaving, "step_times"),
    (course_accumulation, "step_times"),
    (course_imbalance, "gpipe_makespan"),
    (course_imbalance, "slowest_stage_makespan"),
    (course_imbalance, "makespan_lower_bound"),
    (course_imbalance, "partition_step_time"),
]
with forbid(*no_delegation, exercise="Exercise 1b"):
    full_case = recompute_extra_time("full", 4, 8, 10e-3, 20e-3, 1e-3)
check_float(
    "recompute_extra_time('full', 4, 8, 10 ms, 20 ms, 1 ms)",
    full_case,
    0.11,
    unit="s",
    known_wrong={
        0.08: "m·t_f: the added work, but the rerun lengthens every slot of the critical path, "
        "m + p − 1 of them",
        0.12: "m + p slots: a step of m microbatches on p stages has m + p − 1",
        0.10: "m + p − 2 slots: a step of m microbatches on p stages has m + p − 1",
        0.33: "a forward and a backward again: recomputation reruns only the forward",
        0.011: "the attention core's forward: full recomputation reruns the whole forward",
        1 / 3: "the fraction of the step, not seconds",
        0.44: "the whole step with recomputation, not its extra time",
        0.32: "p·m·t_f: every stage's rerun added in turn, as if nothing overlapped",
        110.0: "milliseconds: the answer is in seconds",
    },
)
### BEGIN HIDDEN TESTS
time_cases = [  # (policy, p, m, t_f, t_b, t_core)
    ("selective", 4, 8, 17.9e-3, 35.7e-3, 1.37e-3),
    ("full", 8, 32, 3.0e-3, 6.5e-3, 0.4e-3),
    ("none", 4, 8, 10e-3, 20e-3, 1e-3),
    ("full", 1, 5, 2.0e-3, 4.0e-3, 0.5e-3),
    ("selective", 6, 3, 5.0e-3, 9.0e-3, 0.8e-3),
    ("full", 16, 64, 1.2e-3, 2.6e-3, 0.1e-3),
]
with forbid(*no_delegation, exercise="Exercise 1b (hidden cases)"):
    time_got = [recompute_extra_time(*case) for case in time_cases]
for case, got in zip(time_cases, time_got, strict=True):
    policy_, p_, m_, tf_, tb_, tc_ = case
    t_r_ = {"none": 0.0, "selective": tc_, "full": tf_}[policy_]
    slots = m_ + p_ - 1
    wrong = [
        (m_ * t_r_, "m·t_r: the added work, not the m + p − 1 critical-path slots"),
        ((m_ + p_) * t_r_, "m + p slots: the step has m + p − 1"),
        ((m_ + p_ - 2) * t_r_, "m + p − 2 slots: the step has m + p − 1"),
        (slots * (t_r_ + tb_), "a forward and a backward again: only the forward reruns"),
        (slots * (tf_ + tb_ + t_r_), "the whole step, not its extra time"),
        (t_r_ / (tf_ + tb_), "the fraction of the step, not seconds"),
        (p_ * m_ * t_r_, "p·m·t_r: every stage's rerun in turn"),
    ]
    if policy_ == "selective":
        wrong.append((slots * tf_, "the whole forward: selective reruns only the attention core"))
    if policy_ == "full":
        wrong.append((slots * tc_, "the attention core: full recomputation reruns the forward"))
    if policy_ == "none":
        wrong.append((slots * tc_, "a rerun of the attention core where nothing is recomputed"))
    check_float(
        f"recompute_extra_time{case}",
        got,
        slots * t_r_,
        unit="s",
        known_wrong=distinct_hints(wrong, slots * t_r_, rtol=1e-6),
    )
### END HIDDEN TESTS
passed("Exercise 1b")

# %% [markdown]
# ### Exercise 2 — A stash keyed by identity (2 points)
#
# Write `replay_stash(operations)`. Each operation is `("put", stage, microbatch, value)` or
# `("get", stage, microbatch)`; return the values the gets return, as a list in order. A get
# returns the value put under the same (stage, microbatch) and removes it. A get of a key not
# held raises `KeyError`; a put of a key already held raises `ValueError`. The hidden tests
# include two stages on one rank, backwards out of forward order, a second get of a key, values
# such as `0` and `None`, and stage numbers above 9.


# %% nbgrader={"grade": false, "grade_id": "stash_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def replay_stash(operations):
    """Values returned by the gets of a put/get sequence on a stash keyed by (stage, microbatch)."""
    ### BEGIN SOLUTION
    held, got = {}, []
    for op in operations:
        key = (op[1], op[2])
        if op[0] == "put":
            if key in held:
                raise ValueError(f"{key} is already stashed")
            held[key] = op[3]
        else:
            if key not in held:
                raise KeyError(f"nothing stashed for {key}")
            got.append(held.pop(key))
    return got
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "stash_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 2: replay_stash(operations) -> the gets' values; KeyError / ValueError on misuse."""
no_delegation = [(Stash, "put"), (Stash, "get")]
two_stages = [  # a rank holding stages 0 and 2 (interleaved): microbatch 0 of both is in flight
    ("put", 0, 0, "s0m0"), ("put", 2, 0, "s2m0"), ("put", 0, 1, "s0m1"), ("get", 2, 0),
    ("get", 0, 0), ("put", 2, 1, "s2m1"), ("get", 2, 1), ("get", 0, 1),
]  # fmt: skip
with forbid(*no_delegation, exercise="Exercise 2"):
    try:
        visible = replay_stash(two_stages)
    except (KeyError, ValueError) as err:  # a valid sequence: nothing may raise
        visible = [f"raised {type(err).__name__}"]
    try:
        replay_stash([("put", 0, 0, "s0m0"), ("get", 0, 1)])
        missing = "returned"
    except (KeyError, ValueError, TypeError, IndexError) as err:
        missing = type(err).__name__
check_type("replay_stash(two stages on one rank)", visible, list, tuple)
check_names("replay_stash(two stages on one rank)", visible, ["s2m0", "s0m0", "s2m1", "s0m1"],
            ordered=True)  # fmt: skip
check_names("a get of a key never put raises", [missing], ["KeyError"], ordered=True)
### BEGIN HIDDEN TESTS
p_, m_ = 4, 6
one_f_one_b_ops = []  # stage 0 of 1F1B(4, 6): four forwards before the first backward
for action in one_f_one_b(p_, m_).actions[0]:
    label = f"s0m{action.microbatch}"
    one_f_one_b_ops.append(("put", 0, action.microbatch, label) if action.kind == "F"
                           else ("get", 0, action.microbatch))  # fmt: skip
valid = {
    "1F1B stage 0": (one_f_one_b_ops, [f"s0m{j}" for j in range(m_)]),
    "backwards in reverse": (
        [("put", 1, j, f"s1m{j}") for j in range(4)] + [("get", 1, j) for j in (3, 2, 1, 0)],
        ["s1m3", "s1m2", "s1m1", "s1m0"],
    ),
    "out of order": (
        [
            ("put", 0, 0, "a"),
            ("put", 0, 1, "b"),
            ("put", 0, 2, "c"),
            ("get", 0, 1),
            ("put", 0, 3, "d"),
            ("get", 0, 0),
            ("get", 0, 3),
            ("get", 0, 2),
        ],
        ["b", "a", "d", "c"],
    ),  # fmt: skip
    "same stage, same values, a key reused after its get": (
        [("put", 3, 5, "x"), ("get", 3, 5), ("put", 3, 5, "y"), ("get", 3, 5)],
        ["x", "y"],
    ),
}
misuse = {
    "a second get of a key": ([("put", 0, 0, "a"), ("get", 0, 0), ("get", 0, 0)], "KeyError"),
    "a second put of a key": ([("put", 1, 2, "a"), ("put", 1, 2, "b")], "ValueError"),
    "a get of another stage's key": ([("put", 0, 4, "a"), ("get", 1, 4)], "KeyError"),
    "a get of another microbatch's key": ([("put", 2, 0, "a"), ("get", 2, 1)], "KeyError"),
    "a get on an empty stash": ([("get", 0, 0)], "KeyError"),
}
with forbid(*no_delegation, exercise="Exercise 2 (hidden cases)"):
    valid_got, misuse_got = {}, {}
    for name, (ops, _) in valid.items():
        try:
            valid_got[name] = replay_stash(ops)
        except (KeyError, ValueError) as err:
            valid_got[name] = [f"raised {type(err).__name__}"]
    for name, (ops, _) in misuse.items():
        try:
            replay_stash(ops)
            misuse_got[name] = "returned"
        except (KeyError, ValueError, TypeError, IndexError) as err:
            misuse_got[name] = type(err).__name__
for name, (_, expected) in valid.items():
    check_type(f"replay_stash({name})", valid_got[name], list, tuple)
    check_names(f"replay_stash({name})", valid_got[name], expected, ordered=True)
for name, (_, expected) in misuse.items():
    check_names(f"replay_stash({name}) raises", [misuse_got[name]], [expected], ordered=True)
joined = ("two of these distinct keys collide, as they do when joined into one string or number "
          "(str(stage) + str(microbatch), 10·stage + microbatch): key by the (stage, microbatch) "
          "pair, not a joined string")  # fmt: skip
odd = {  # (operations, the gets' values as repr, a hint per wrong outcome)
    "values 0, '' and None": (
        [("put", 0, 0, 0), ("put", 0, 1, ""), ("put", 0, 2, None), ("get", 0, 1), ("get", 0, 2),
         ("get", 0, 0)],
        ["''", "None", "0"],
        {"KeyError": "a held value of 0, '' or None taken as not held: a value is held whatever "
         "it is; test the key (key in held), not the value",
         "ValueError": "each of these keys is put once",
         "other values": "a get returns the value put itself, 0, '' or None included"},
    ),
    "keys (1, 11), (11, 1) and (2, 1)": (
        [("put", 1, 11, "s1m11"), ("put", 11, 1, "s11m1"), ("put", 2, 1, "s2m1"),
         ("get", 11, 1), ("get", 2, 1), ("get", 1, 11)],
        ["'s11m1'", "'s2m1'", "'s1m11'"],
        {"KeyError": joined, "ValueError": joined, "other values": joined},
    ),
}  # fmt: skip
reput = {  # a second put while a falsy value is held
    "a second put of a key holding 0": [("put", 1, 3, 0), ("put", 1, 3, "b")],
    "a second put of a key holding None": [("put", 2, 2, None), ("put", 2, 2, None)],
}
with forbid(*no_delegation, exercise="Exercise 2 (hidden cases)"):
    odd_got, reput_got = {}, {}
    for name, (ops, _, _) in odd.items():
        try:
            odd_got[name] = replay_stash(ops)
        except (KeyError, ValueError) as err:
            odd_got[name] = type(err).__name__
    for name, ops in reput.items():
        try:
            replay_stash(ops)
            reput_got[name] = "returned"
        except (KeyError, ValueError) as err:
            reput_got[name] = type(err).__name__
        except (TypeError, IndexError):
            reput_got[name] = "another error"
for name, (_, expected, hints) in odd.items():
    got = odd_got[name]
    if not isinstance(got, str):
        check_type(f"replay_stash({name})", got, list, tuple)
        got = "the values put" if [repr(v) for v in got] == expected else "other values"
    check_choice(f"replay_stash({name})", got, "the values put", {
        "the values put": "each get returned the value put under its key",
        "KeyError": f"a KeyError on a valid sequence: {hints['KeyError']}",
        "ValueError": f"a ValueError on a valid sequence: {hints['ValueError']}",
        "other values": f"other values than those put: {hints['other values']}",
    })  # fmt: skip
for name in reput:
    value = name.rsplit(" ", 1)[1]
    check_choice(f"replay_stash({name}) raises", reput_got[name], "ValueError", {
        "ValueError": "a put of a key already held raises ValueError",
        "returned": f"the put went through: a held {value} is still held, so the second put "
        "must raise ValueError; test the key (key in held), not the value",
        "KeyError": "KeyError for a repeated put: a put of a key already held raises ValueError",
        "another error": "an error other than ValueError for a repeated put",
    })  # fmt: skip
### END HIDDEN TESTS
passed("Exercise 2")

# %% [markdown]
# ### Exercise 3 — Make the recomputation deterministic (2 points)
#
# At a forward, stage 0 stashed only `saved = {"x": x, "rng_state": state}`, where `state` was
# `g.bit_generator.state` of its `default_rng` generator `g` just before the forward. Write
# `recompute_gradient(params, saved, target, drop_prob)`: rerun the forward with
# `mlp_forward` and return `mlp_backward`'s gradient, a dict of arrays. It must equal the stored
# gradient (to 12 digits: the same operations give bit-identical results). The hidden tests use
# other microbatches, stages, seeds and dropout rates.


# %% nbgrader={"grade": false, "grade_id": "recompute_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def recompute_gradient(params, saved, target, drop_prob):
    """Gradient of one microbatch from its stashed input and generator state."""
    ### BEGIN SOLUTION
    g = np.random.default_rng()
    g.bit_generator.state = saved["rng_state"]  # the draws the forward made, replayed
    _, cache = mlp_forward(params, saved["x"], g, drop_prob)
    return mlp_backward(params, cache, target)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "recompute_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 3: recompute_gradient(params, saved, target, drop_prob) equals the stored gradient."""
no_delegation = [(course_stash, "stage_gradients")]


def stashed_forwards(seed, xs, drop):
    """(saved entries, forward caches) of forwards run in order from default_rng(seed)."""
    g = np.random.default_rng(seed)
    entries, caches = [], []
    for x in xs:
        entries.append({"x": x, "rng_state": g.bit_generator.state})
        caches.append(mlp_forward(params, x, g, drop)[1])
    return entries, caches


def same_gradient(grads, reference):
    """Every parameter's array has the reference's shape and values, to 12 digits."""
    return all(
        np.shape(grads.get(k)) == reference[k].shape
        and np.allclose(grads[k], reference[k], rtol=1e-12, atol=1e-15)
        for k in PARAM_NAMES
    )


entries_, caches_ = stashed_forwards(STAGE_SEED, inputs[:2], DROP_PROB)
with forbid(*no_delegation, exercise="Exercise 3"):
    got_ = [recompute_gradient(params, e, targets[j], DROP_PROB) for j, e in enumerate(entries_)]
reseed_cache_ = mlp_forward(params, inputs[1], np.random.default_rng(STAGE_SEED), DROP_PROB)[1]
reseeded_ = mlp_backward(params, reseed_cache_, targets[1])
looks_like = {
    "the forward's gradient": "the gradient the stored activations give",
    "not a gradient": "a dict without the keys W1, b1, W2, b2 (mlp_forward's cache?): return "
    "mlp_backward(params, cache, target)",
    "reseeded": "default_rng(STAGE_SEED) again: it replays microbatch 0's draws, not microbatch "
    "1's, which started further along the stream",
    "no dropout": "the rerun without dropout: the forward dropped units with drop_prob",
    "keep probability": "the forward's generator state, but 1 − drop_prob as the drop rate: "
    "drop_prob is the probability of dropping a unit",
    "another target": "the forward's masks, but another microbatch's target: use the target "
    "argument",
    "other": "neither the forward's gradient nor a known mistake: check that the generator is "
    "set to saved['rng_state'] just before the rerun (a fresh one, or one that drew first, "
    "draws other masks), that the rerun uses drop_prob, and that you return "
    "mlp_backward(params, cache, target)",
}


def restored(state):
    """A generator set to a saved bit_generator state."""
    g = np.random.default_rng()
    g.bit_generator.state = state
    return g


for j in range(2):  # microbatch 1's draws start where microbatch 0's ended
    check_type(f"recompute_gradient(..., microbatch {j})", got_[j], dict)
    undropped_ = mlp_forward(params, inputs[j], np.random.default_rng(0), 0.0)[1]
    kept_ = mlp_forward(params, inputs[j], restored(entries_[j]["rng_state"]), 1 - DROP_PROB)[1]
    looks = "other"
    if same_gradient(got_[j], mlp_backward(params, caches_[j], targets[j])):
        looks = "the forward's gradient"
    elif sorted(map(str, got_[j])) != sorted(PARAM_NAMES):
        looks = "not a gradient"
    elif j == 1 and same_gradient(got_[1], reseeded_):
        looks = "reseeded"
    elif same_gradient(got_[j], mlp_backward(params, undropped_, targets[j])):
        looks = "no dropout"
    elif same_gradient(got_[j], mlp_backward(params, kept_, targets[j])):
        looks = "keep probability"
    elif same_gradient(got_[j], mlp_backward(params, caches_[j], targets[1 - j])):
        looks = "another target"
    check_choice(f"recompute_gradient(microbatch {j}) looks like", looks,
                 "the forward's gradient", looks_like)  # fmt: skip
    for k in PARAM_NAMES:  # numpy arrays, as mlp_backward returns them
        check_array(f"recompute_gradient(microbatch {j})[{k!r}]", got_[j].get(k),
                    mlp_backward(params, caches_[j], targets[j])[k], rtol=1e-12, atol=1e-15)  # fmt: skip
### BEGIN HIDDEN TESTS
hidden_rng = np.random.default_rng(77)
runs = [  # (seed, drop_prob, microbatches)
    (STAGE_SEED, DROP_PROB, inputs),
    (2024, 0.3, [hidden_rng.normal(size=(5, 6)) for _ in range(5)]),
    (7, 0.5, [hidden_rng.normal(size=(2, 6)) for _ in range(3)]),
]
for seed, drop, xs in runs:
    entries_, caches_ = stashed_forwards(seed, xs, drop)
    ts_ = [hidden_rng.normal(size=(len(x), 3)) for x in xs]
    with forbid(*no_delegation, exercise="Exercise 3 (hidden cases)"):
        got_ = [recompute_gradient(params, e, t, drop) for e, t in zip(entries_, ts_, strict=True)]
    for j, (cache, t) in enumerate(zip(caches_, ts_, strict=True)):
        check_type(f"recompute_gradient(seed {seed}, microbatch {j})", got_[j], dict)
        stored_ = mlp_backward(params, cache, t)
        for k in PARAM_NAMES:
            check_array(f"recompute_gradient(seed {seed}, microbatch {j})[{k!r}]",
                        got_[j].get(k), stored_[k], rtol=1e-12, atol=1e-15)  # fmt: skip
### END HIDDEN TESTS
passed("Exercise 3")

# %% [markdown]
# ### Exercise 4 — The best checkpoint set under a budget (2 points)
#
# Each layer $i$ of a stage either keeps its activations (`keep_bytes[i]`) or is recomputed:
# it then keeps only its input (`input_bytes[i]`) and costs `recompute_times[i]` seconds. Write
# `best_checkpoints(keep_bytes, input_bytes, recompute_times, budget)`: the tuple of layers to
# recompute (0-based) whose total recompute time is least among the sets whose bytes are at
# most `budget`. Up to 10 layers: an exhaustive search is fine. The hidden tests include a
# budget met exactly and one that needs no recomputation.


# %% nbgrader={"grade": false, "grade_id": "checkpoints_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def best_checkpoints(keep_bytes, input_bytes, recompute_times, budget):
    """Layers to recompute: least total recompute time with stashed bytes <= budget."""
    ### BEGIN SOLUTION
    import itertools

    n, best = len(keep_bytes), None
    for chosen in itertools.product((False, True), repeat=n):
        nbytes = sum(input_bytes[i] if c else keep_bytes[i] for i, c in enumerate(chosen))
        seconds = sum(recompute_times[i] for i, c in enumerate(chosen) if c)
        if nbytes <= budget and (best is None or seconds < best[0]):
            best = (seconds, tuple(i for i, c in enumerate(chosen) if c))
    return best[1]
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "checkpoints_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 4: best_checkpoints(keep_bytes, input_bytes, recompute_times, budget) -> layers."""
no_delegation = [(course_stash, "best_recompute_plan"), (course_stash, "recompute_frontier")]
MiB_ = 2**20


def judge(name, got, keep, inputs_, times, budget, hints):
    """The chosen set is distinct valid layers, fits the budget, and is as fast as the best."""
    check_type(name, got, tuple, list, set, frozenset)
    n, layers_ = len(keep), list(got)
    flags = all(type(i) in (bool, np.bool_) or (type(i) in (int, np.int64, np.int32) and i in (0, 1))
                for i in layers_)  # fmt: skip
    repeats = len(set(layers_)) < len(layers_)
    if (
        flags
        and len(layers_) == n
        and (repeats or any(type(i) in (bool, np.bool_) for i in layers_))
    ):
        check_choice(f"{name}: the form", "one 0/1 flag per layer", "layer numbers", {
            "layer numbers": "the layers to recompute",
            "one 0/1 flag per layer": "return the numbers of the layers to recompute, e.g. "
            "(0, 2) for layers 0 and 2, not a flag per layer",
        })  # fmt: skip
    for i in layers_:
        check_type(f"{name}: layer {i!r}", i, int, np.int64, np.int32)
        why = {n: "; numbered from 1, the last one is out of range"}.get(i, "")
        if i < 0:
            why = "; count from 0, not from the end"
        check_range(f"{name}: layer {i}", i, 0, n - 1,
                    what=f"this stage's layers are 0 to {n - 1}{why}")  # fmt: skip
    for i in sorted(set(layers_)):
        check_int(f"{name}: how often layer {i} is listed", layers_.count(i), 1)
    options_ = [[(k, 0.0), (c, t)] for k, c, t in zip(keep, inputs_, times, strict=True)]
    nbytes, seconds = plan_cost(options_, [int(i in set(layers_)) for i in range(n)])
    check_range(f"bytes kept by {name}", nbytes, 0, budget, what="over the budget")
    best = plan_cost(options_, course_stash.best_recompute_plan(options_, budget))[1]
    check_float(f"recompute time of {name}", seconds, best, unit="s", known_wrong=hints)


visible_ = ([950 * MiB_, 550 * MiB_, 550 * MiB_], [50 * MiB_] * 3, [4.5e-3, 3.0e-3, 3.0e-3],
            1060 * MiB_)  # fmt: skip
with forbid(*no_delegation, exercise="Exercise 4"):
    got_ = best_checkpoints(*visible_)
judge("best_checkpoints(3 layers)", got_, *visible_,
      {7.5e-3: "layer 0, the biggest saving and the most bytes per second, and one more: a "
       "greedy pick; layers 1 and 2 together save enough for less",
       10.5e-3: "every layer recomputed: it fits, but not for the least time"})  # fmt: skip
### BEGIN HIDDEN TESTS
mib = [  # (keep MiB, input MiB, recompute ms, budget MiB), synthetic stages
    ([266, 466, 433, 336, 791, 166, 127, 975, 643], [40, 38, 26, 26, 55, 28, 35, 58, 54],
     [0.6613, 0.6077, 0.8587, 2.6086, 2.3409, 1.1185, 2.8139, 2.609, 1.2866], 2269),
    ([681, 328, 747, 471, 852, 998, 353, 523, 293], [46, 43, 55, 53, 62, 61, 58, 16, 10],
     [2.71, 1.38, 1.85, 0.27, 2.09, 2.77, 2.52, 2.68, 2.05], 2089),
    ([765, 450, 999, 429, 804, 571, 663, 106, 881], [16, 61, 19, 50, 32, 51, 24, 22, 42],
     [1.0, 2.75, 2.89, 0.37, 0.79, 1.78, 2.36, 0.38, 0.72], 2735),
    ([949, 735, 837, 146, 366, 711], [43, 28, 16, 41, 12, 45],
     [2.07, 1.66, 1.75, 0.75, 1.59, 0.55], 1843),
    ([300, 200, 100], [10, 10, 10], [1.0, 2.0, 3.0], 600),  # fits: recompute nothing
    ([300, 200, 100], [10, 10, 10], [1.0, 2.0, 3.0], 30),  # only all recomputed fits
]  # fmt: skip
for keep_mib, input_mib, ms_, budget_mib in mib:
    case = ([k * MiB_ for k in keep_mib], [c * MiB_ for c in input_mib],
            [t * 1e-3 for t in ms_], budget_mib * MiB_)  # fmt: skip
    with forbid(*no_delegation, exercise="Exercise 4 (hidden cases)"):
        got_ = best_checkpoints(*case)
    judge(f"best_checkpoints({len(keep_mib)} layers, budget {budget_mib} MiB)", got_, *case, {})
### END HIDDEN TESTS
passed("Exercise 4")

# %% [markdown]
# ### Exercise 5 — Explained answer: the run that checkpointing changed (2 points, graded by hand)
#
# A colleague wraps each stage's layers in a hand-written checkpoint function that stashes only
# the input. With the same seeds, the training loss now drifts from the run without it, and the
# evaluation accuracy drops. Name two causes this lesson predicts, how you would confirm each with
# one measurement, and the fix. Answer in four or five sentences with numbers from this lesson.

# %% [markdown] nbgrader={"grade": true, "grade_id": "explain_checkpoint_drift", "locked": false, "points": 2, "schema_version": 3, "solution": true, "task": false}
# **Model answer** (the student release replaces this cell). First, the rerun draws new dropout
# masks, so each recomputed gradient differs from the stored one (by 20 to 90 % in section 2).
# Confirm by comparing one microbatch's gradient with stored activations and with the
# checkpoint, bit for bit; fix it by saving the generator state before each forward and
# restoring it before the rerun (`preserve_rng_state=True` in `torch.utils.checkpoint`).
# Second, BatchNorm-style running
# statistics update at every forward run: `num_batches_tracked` reads $2m$ (16 instead of 8) and
# the running mean, which evaluation uses, changes. Confirm by reading the counter after one
# step; fix it by skipping the statistics update during the rerun.
#
# Rubric: 1 point for the random state (a confirming comparison and save/restore); 1 point for
# the doubled side effects (the counter as evidence and a fix that skips the second update).

# %% [markdown]
# ## Takeaways
#
# - A stash is identity-bearing: key it by (stage, microbatch) and raise on a missing or
#   repeated key.
# - A recomputed forward must replay the saved random state, and it repeats every side effect:
#   count forward *runs*, not microbatches.
# - Bytes per layer: $sbh(34 + 5as/h)$, $34sbh$, $2sbh$; the rerun's $t_r$ sits on all
#   $m + p - 1$ slots. Under a budget, search per layer exactly.
# - The trap: a wrong stash or a fresh random draw raises no error — the gradient is just
#   different.

# %% [markdown]
# ## Going further (optional, ungraded)
#
# - Korthikanti et al. (2022, §5, App. A) report 2.7 % (GPT-3 175B) and 1.6 % (MT-NLG 530B) more
#   FLOPs for selective recomputation. Their App. A says the rerun is the forward's QKᵀ and
#   attention over V ($2Bs^2h$ each: this lesson's $4bs^2h$ per layer), yet their Eq. 8 adds
#   $s/6h$ to Eq. 7's $72BLsh^2(1 + s/6h + v/12hL)$, which is $12Bs^2h$ per layer, three times as
#   much. 2.7 % and 1.6 % follow Eq. 8; the forward-only count gives 0.9 % and 0.5 %.
# - Full recomputation's 33 % is also the ratio of two FLOP counts: Narayanan et al. (2021,
#   Eq. 3, $96Bslh^2$, with recomputation) against Korthikanti et al. (2022, Eq. 7, $72$,
#   without). GPUs measure more (Korthikanti et al., Table 4, one layer of a 22B model): +39 %
#   for full recomputation, and +7 % for selective (+4 % with sequence parallelism), well above
#   its FLOP share: softmax and dropout do few FLOPs per byte (§5).
# - Giving both updates momentum $\mu' = 1 - \sqrt{1 - \mu}$ (pytorch-pfn-extras PR #117) leaves
#   $(1 - \mu)r + \mu\bar{x}$ after two *consecutive* updates with the same $\bar{x}$, since
#   $(1 - \mu')^2 = 1 - \mu$. In a 1F1B stage other microbatches' forwards run between F j and its
#   rerun, so the weights still differ; fairscale's `patch_batchnorm` lets only one of the two
#   runs update the statistics instead.
# - `torch.utils.checkpoint` saves the CPU state and that of one other device type; its docs
#   warn that randomness on further devices may give incorrect gradients.
# - FlashAttention (Dao et al. 2022) never stores the $s \times s$ matrix and recomputes it in
#   the backward: selective recomputation built into the kernel, with the softmax statistics as
#   its stash.
# - The rerun need not wait for the gradient: GPipe's paper notes that it uses no gradient, so
#   it can be scheduled before the backward's gradient arrives (Huang et al. 2019, §2.3), which
#   can take it off the critical path.
# - While a layer is recomputed its whole working set is live again: the peak is the stash plus
#   one layer's $sbh(34 + 5as/h)$, not the stash alone.
