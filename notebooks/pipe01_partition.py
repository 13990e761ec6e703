# %% [markdown]
# # pipe01 · Pipeline stages and partition costs
#
# **Objective.** Partition execution with explicit compute, boundary traffic, memory, and backward
# dependencies rather than equal layer counts.
#
# **Time:** 28 min · **Level:** advanced
#
# You will be able to
# - compute a stage's time from its layers' forward and backward costs and the transfers at its
#   cuts, both ways, and name the stage that sets the pipeline's pace;
# - find the contiguous partition that minimises the slowest stage, by dynamic programming;
# - compute each stage's memory under 1F1B — model state plus the activations of
#   $\min(m, p - s)$ microbatches — and partition under a memory limit.
#
# **What you need:** the forward/backward picture of a training step and mixed-precision Adam's
# state (cost05 helps). Python and numpy at the level of `itertools.combinations` and an array
# slice.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
# %matplotlib inline
import itertools

import matplotlib.pyplot as plt
import numpy as np

from course_lib.checks import (
    check_array,
    check_choice,
    check_float,
    check_int,
    check_range,
    check_type,
    distinct_hints,
    forbid,
    passed,
)
from course_lib.explorers.partition import partition_explorer
from course_lib.figures.partition import model_profile, stage_memory_bars, stage_time_bars
from course_lib.pipeline import one_f_one_b, simulate
from course_lib.pipeline.partition import (
    ModelSpec,
    even_blocks,
    gpt_spec,
    min_max_partition,
    stage_costs,
    stage_memory,
    stage_sums,
    stage_table,
    stage_times,
)
from course_lib.pipeline.partition import layer_memory as memory_by_stage

rng = np.random.default_rng(1)  # the course's convention; nothing in this lesson is random

# The lesson's model, synthetic: every cost is derived from published formulas, none is measured.
spec = gpt_spec()  # embedding, 24 transformer blocks, output layer, loss (27 layers)
forward_times, backward_times = spec.forward_times, spec.backward_times  # s per microbatch
layer_times = spec.layer_times  # forward + backward, s per microbatch
cut_bytes = spec.cut_bytes  # cut_bytes[k - 1]: bytes crossing cut k, between layers k - 1 and k
num_params, activation_bytes = spec.num_params, spec.activation_bytes  # per layer
num_stages, num_microbatches = 4, 8
link_bandwidth = 25e9  # bytes/s per direction: one 200 Gb/s HDR InfiniBand link per GPU
memory_limit = 16 * 2**30  # bytes per GPU left for model state and stashed activations
equal_split = even_blocks(spec, num_stages)  # stage boundaries: 6 blocks per stage
# layer_memory[s, i]: bytes layer i holds if it sits on stage s, under 1F1B at m = 8 (section 3)
layer_memory = memory_by_stage(spec, num_stages, num_microbatches)

# %% [markdown]
# ## 1. A stage's time is its compute plus the transfers at its cuts
#
# A pipeline cuts a model's layers into $p$ contiguous **stages**, one per GPU. Stage $s$ holds
# layers $b_s$ to $b_{s+1} - 1$, given by **boundaries** $0 = b_0 < b_1 < \dots < b_p = n$; cut $k$
# lies between layer $k - 1$ and layer $k$.
#
# The lesson's model is a GPT-like decoder with 1.4 billion parameters: an embedding, 24
# transformer blocks (hidden size $h = 2048$, 16 heads), an output layer onto a vocabulary of
# $V = 51{,}200$, and the loss, for microbatches of one sequence of $s = 2048$ tokens. It is
# synthetic: a block's time is its matrix-multiply FLOPs, $24sh^2 + 4s^2h$ forward and twice that
# backward (Korthikanti et al. 2022, App. A, Eq. 7), at half an A100's dense bf16 peak; its stash
# is $sh(34 + 5as/h)$ bytes (ibid., Eq. 1). A real profile would show other kernel rates and a
# backward nearer 1.5× the forward (ibid., Table 4), but the same three facts:

# %%
model_profile(spec)
plt.show()

# %% [markdown]
# The embedding (green) holds 1.6 GiB of weights, gradients and optimizer state and costs almost
# nothing to run: it is a gather. The output layer (vermillion) is heavy in both: its projection
# costs 8.3 ms per microbatch, 1.8 blocks. Every cut between blocks carries the hidden state,
# $2sh$ bytes = 8 MiB; the cut before the loss carries the logits, 25 times more.
#
# Each microbatch crosses each cut twice: its activation forward and the gradient of the same
# size backward. In this model transfers do not overlap compute, each holds both the sender and
# the receiver, and the two directions take turns. So a stage's time per microbatch is
#
# $$t_s = \sum_{i = b_s}^{b_{s+1} - 1} \left(t_f^{(i)} + t_b^{(i)}\right)
#   + \frac{2\,(A_{b_s} + A_{b_{s+1}})}{\beta},$$
#
# where $t_f^{(i)}$, $t_b^{(i)}$ are layer $i$'s forward and backward times, $A_k$ the bytes at
# cut $k$ (no cut before the first layer or after the last: $A_0 = A_n = 0$) and $\beta$ the link
# bandwidth in bytes/s. At 25 GB/s one crossing of a block cut takes 0.34 ms. The usual split
# gives every stage six blocks, the embedding to the first and the output layer and loss to the
# last:

# %%
table = stage_table(spec, equal_split, link_bandwidth, num_microbatches)
in_ms = table[["compute", "transfer", "stage_time"]] * 1e3
print(table[["layers", "num_layers"]].join(in_ms.add_suffix(" (ms)")).round(2).to_string())

times = stage_times(spec, equal_split, link_bandwidth)
forward = stage_sums(forward_times, equal_split)
backward = stage_sums(backward_times, equal_split)
half = (times - forward - backward) / 2  # each action carries half its stage's transfers
steps = [simulate(one_f_one_b(4, m), forward + half, backward + half).makespan for m in (8, 9)]
print(f"1F1B step, m = 8: {steps[0] * 1e3:.1f} ms; m = 9: {steps[1] * 1e3:.1f} ms")
print(f"one more microbatch adds {(steps[1] - steps[0]) * 1e3:.2f} ms = the slowest stage")

# %% [markdown]
# The last stage takes 37.45 ms, the others about 29. In steady state every stage works on a
# microbatch at once, so one microbatch leaves the pipeline per slowest-stage time: the course's
# simulator (pipe02 introduces it) shows each extra microbatch adding 37.45 ms to the 1F1B step,
# not the 31 ms average. The three faster stages idle 22–24 % of the time.

# %% [markdown]
# ## 2. Equal layer counts are unbalanced: minimise the slowest stage
#
# The best contiguous partition minimises $\max_s t_s$. Let $T(s, a)$ be the least possible
# slowest stage when stages $s, \dots, p - 1$ hold layers $a, \dots, n - 1$. Then
#
# $$T(s, a) = \min_{b > a} \max\big(t(s; a, b),\; T(s + 1, b)\big), \qquad T(p, n) = 0,$$
#
# where $t(s; a, b)$ is the time of stage $s$ holding layers $a$ to $b - 1$: choose where stage
# $s$ ends, and the rest is the same problem, smaller. $T(0, 0)$ is the answer, after
# $O(p\,n^2)$ steps instead of trying all $\binom{n - 1}{p - 1}$ sets of cuts. PipeDream's
# partitioner solves this linear partition problem by dynamic programming too (Narayanan et al.
# 2019, §3.1). `min_max_partition` takes per-layer costs, or `stage_costs`, which adds the
# transfers and memory:

# %%
costs = stage_costs(spec, num_stages, link_bandwidth, num_microbatches)
best = min_max_partition(costs, num_stages)
print("layers per stage:", best.layer_counts, " boundaries:", best.boundaries)
print(f"slowest stage: {best.bottleneck * 1e3:.2f} ms (equal blocks: {times.max() * 1e3:.2f} ms)")

stage_time_bars(spec, {"equal blocks": equal_split, "min-max": best.boundaries}, link_bandwidth)
plt.show()

# %% [markdown]
# The partition moves one block from the last stage, which carries the output layer, to the
# first, whose embedding is free: seven blocks there, five on the last (hatched bars). The
# slowest stage drops from 37.45 to 33.08 ms, 12 % less time per microbatch on the same GPUs.
# The $m = 8$ step gains less, 386.3 → 353.9 ms (8 %): the fill and drain, about one pass through
# the other stages (≈ 90 ms), cost nearly the same for any partition; the gain nears 12 % as $m$
# grows. The dynamic program never cuts before the loss, which would cost $2 \times 8.4$ ms of
# logits traffic.

# %% [markdown]
# ## 3. The first stage stashes the most activations
#
# Speed is not the only constraint. A stage's memory is
#
# $$M_s = 16\,P_s + \min(m,\, p - s)\, S_s,$$
#
# where $P_s$ is the stage's parameter count, 16 the bytes per parameter of mixed-precision Adam
# (2 for bf16 weights, 2 for gradients, 12 for the fp32 master weights, momentum and variance;
# Rajbhandari et al. 2020, §3.1), $S_s$ the bytes its layers stash per microbatch, and
# $\min(m, p - s)$ the microbatches in flight on stage $s$ under 1F1B (bounded by the pipeline
# depth, Narayanan et al. 2021, §2.2.1; per stage, Korthikanti et al. 2022, App. B–C; pipe03
# traces why): "the first stage must store activations for $p$ microbatches" (ibid., §4.2.3).
# The last stage stashes the loss's fp32 logits ($4sV$ bytes, §4.3), but for one microbatch.

# %%
limited = min_max_partition(costs, num_stages, memory_limit=memory_limit)
print("within 16 GiB:", limited.layer_counts, f" slowest {limited.bottleneck * 1e3:.2f} ms")
partitions = {
    "equal blocks": equal_split,
    "min-max": best.boundaries,
    "min-max ≤ 16 GiB": limited.boundaries,
}
stage_memory_bars(spec, partitions, num_microbatches, memory_limit=memory_limit)
plt.show()

# %% [markdown]
# Each block on stage 0 costs 0.75 GiB of state plus 4 × 0.45 GiB of stashes; on the last stage,
# 0.75 + 0.45 GiB. So the min-max partition, which put more blocks on stage 0, needs 19.4 GiB
# there, over a 16 GiB limit — and so does the equal split (16.8 GiB). With the limit, the
# dynamic program drops every stage that does not fit ($t = \infty$) and finds six layers for
# stage 0 and seven each for the others. Its slowest stage, 33.72 ms, is within 2 % of the
# unconstrained optimum and 10 % below the equal split's; the $m = 8$ step falls from 386.3 to
# 359.2 ms, 7 %, and the equal split does not fit at all.
#
# Below 11.8 GiB no partition into four stages fits; then the remedies change the model, not the
# cuts: more stages, activation recomputation (pipe05), a sharded optimizer.

# %% [markdown]
# ## Explore
#
# The explorer partitions the same model and simulates the 1F1B step. Try:
# - At $p = 4$, toggle "equal blocks" and "min-max": the last stage's bar shrinks, stage 0's
#   grows in both panels. At $p = 8$, three blocks per stage leave the output layer more
#   dominant, and min-max gains more.
# - Choose "min-max within limit" and lower the limit from 20 to 11 GiB: blocks leave stage 0
#   (four in flight) first, until nothing fits.
# - Drag the link down to 1 GB/s: a crossing takes 8.4 ms, nearly two blocks; the middle stages,
#   which pay for two cuts, get fewer blocks.

# %%
partition_explorer()

# %% [markdown]
# ## Exercises
#
# Answer in the cells marked `YOUR CODE HERE`, then run the grade cell below each: visible checks
# give quick feedback; hidden tests check more cases at grading. Functions take numbers and numpy
# arrays (as in the setup cell), boundaries as a tuple of ints. While a grade cell calls your
# function, `course_lib`'s partition routines are disabled: the formulas are yours.
#
# ### Exercise 1 — Stage times with transfers both ways (2 points)
#
# Write `stage_times_of(forward_times, backward_times, cut_bytes, boundaries, link_bandwidth)`:
# every stage's time per microbatch in seconds, a numpy array of length $p$, by section 1's
# formula. `cut_bytes` has one entry per cut (cut $k$ at index $k - 1$); `link_bandwidth` is in
# bytes/s. The hidden tests include a single stage, one layer per stage and layers that cost
# nothing.


# %% nbgrader={"grade": false, "grade_id": "stage_times_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def stage_times_of(forward_times, backward_times, cut_bytes, boundaries, link_bandwidth):
    """Seconds per microbatch of each stage: its layers' t_f + t_b plus 2(A_in + A_out)/β."""
    ### BEGIN SOLUTION
    work = np.asarray(forward_times, dtype=float) + np.asarray(backward_times, dtype=float)
    cuts = np.concatenate([[0.0], np.asarray(cut_bytes, dtype=float), [0.0]])  # cuts[k] = A_k
    times = []
    for a, b in zip(boundaries[:-1], boundaries[1:], strict=True):
        times.append(work[a:b].sum() + 2 * (cuts[a] + cuts[b]) / link_bandwidth)
    return np.array(times)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "stage_times_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 1: stage_times_of(...), seconds per microbatch of each stage (numpy array)."""
import course_lib.pipeline as course_pipeline
import course_lib.pipeline.partition as course_partition

routines = ("stage_times", "stage_table", "stage_costs", "cut_traffic")
no_delegation = [(course_partition, name) for name in routines]
no_delegation += [(course_pipeline, "stage_times"), (course_pipeline, "cut_traffic")]
small = ([1e-3, 2e-3, 3e-3], [3e-3, 6e-3, 9e-3], [1e6, 3e6], (0, 1, 3), 1e9)
with forbid(*no_delegation, exercise="Exercise 1"):
    small_times = stage_times_of(*small)
    one_stage = stage_times_of(*small[:3], (0, 3), 1e9)
    lesson_times = stage_times_of(forward_times, backward_times, cut_bytes, equal_split, 25e9)
check_type("stage_times_of(small case)", small_times, np.ndarray)
check_int("len(stage_times_of(small case))", len(small_times), 2)
both_ways = "the activation crosses forward and its gradient back, A/β each"
small_wrong = [  # (value, mistake) on stage 0 (layer 0, cut 1 after it), then stage 1
    [(4e-3, "no transfer at the stage's output cut: each cut a stage borders adds 2A/β"),
     (3e-3, "the forward times only: the backward is missing"),
     (5e-3, f"(A_in + A_out)/β: {both_ways}"), (8e-3, f"4A/β per cut: {both_ways}"),
     (10e-3, "cut_bytes[1] for cut 1: cut k is at index k - 1"),
     (12e-3, "cut_bytes[-1] as stage 0's input: there is no cut before the first layer"),
     (6.0, "milliseconds: the answer is in seconds")],
    [(20e-3, "no transfer at the stage's input cut: each cut a stage borders adds 2A/β"),
     (7e-3, "the forward times only: the backward is missing"),
     (21e-3, f"(A_in + A_out)/β: {both_ways}"), (24e-3, f"4A/β per cut: {both_ways}"),
     (26e-3, "cut_bytes[1] for cut 1: cut k is at index k - 1"),
     (28e-3, "the cut inside the stage charged: only the cuts at its ends transfer"),
     (22.0, "milliseconds: the answer is in seconds")],
]  # fmt: skip
for s, expected in enumerate([6e-3, 22e-3]):
    check_float(f"stage_times_of(small case)[{s}]", small_times[s], expected, unit="s",
                known_wrong=distinct_hints(small_wrong[s], expected))  # fmt: skip
check_type("stage_times_of(small case, boundaries=(0, 3))", one_stage, np.ndarray)
check_int("len(stage_times_of(small case, boundaries=(0, 3)))", len(one_stage), 1)
one_wrong = [
    (6e-3, "the forward times only: the backward is missing"),
    (30e-3, "cut_bytes[-1] as the input: there is no cut before the first layer"),
    (32e-3, "the cuts inside the stage charged: only the cuts at its ends transfer"),
]
check_float("stage_times_of(small case, boundaries=(0, 3))[0]", one_stage[0], 24e-3, unit="s",
            known_wrong=distinct_hints(one_wrong, 24e-3))  # fmt: skip
lesson_expected = course_partition.stage_times(spec, equal_split, 25e9)
check_array("stage_times_of(lesson arrays, equal_split, 25e9)", lesson_times, lesson_expected)
### BEGIN HIDDEN TESTS
tiny = ModelSpec.from_arrays([0.0, 1e-3, 0.0], [0.0, 2e-3, 0.0], [0] * 3, [0] * 3, [3e6, 0.0])
lesson_cases = [
    (equal_split, 25e9),
    ((0, 27), 25e9),
    ((0, 8, 14, 20, 27), 25e9),
    (even_blocks(spec, 8), 12.5e9),
    ((0, 1, 26, 27), 25e9),
]
ramp = ModelSpec.from_arrays([1e-3, 2e-3, 3e-3, 4e-3], [2e-3, 4e-3, 6e-3, 8e-3], [0] * 4, [0] * 4,
                             [1e6, 5e6, 2e6])  # fmt: skip
cases = [(spec, b, beta) for b, beta in lesson_cases]
cases += [(ramp, (0, 1, 2, 3, 4), 5e9), (ramp, (0, 2, 4), 1e9), (tiny, (0, 1, 3), 1e9)]
with forbid(*no_delegation, exercise="Exercise 1 (hidden cases)"):
    got_all = [
        stage_times_of(m.forward_times, m.backward_times, m.cut_bytes, b, beta)
        for m, b, beta in cases
    ]
for (model, bounds, beta), got in zip(cases, got_all, strict=True):
    label = f"stage_times_of(..., boundaries={bounds}, link_bandwidth={beta:g})"
    check_type(label, got, np.ndarray)
    check_int(f"len({label})", len(got), len(bounds) - 1)
    expected = course_partition.stage_times(model, bounds, beta)
    work = stage_sums(model.layer_times, bounds)
    cuts = np.concatenate([[0.0], model.cut_bytes, [0.0]])
    a_in, a_out = cuts[list(bounds[:-1])], cuts[list(bounds[1:])]
    after = np.concatenate([model.cut_bytes, [0.0, 0.0]])  # after[k] = cut_bytes[k]: cut k + 1
    inner_in, inner_out = np.array(bounds[:-1]) > 0, np.array(bounds[1:]) < model.num_layers
    variants = {
        "compute only: the transfers at the cuts are missing": work,
        "the activation forward only: the gradient of the same size crosses back": work
        + (a_in + a_out) / beta,
        "only the cut after the stage: the stage also receives and sends at its input cut": work
        + 2 * a_out / beta,
        "only the cut before the stage: the stage also sends and receives at its output cut": work
        + 2 * a_in / beta,
        "cut_bytes[k] for cut k: cut k is at index k - 1": work
        + 2 * (after[list(bounds[:-1])] * inner_in + after[list(bounds[1:])] * inner_out) / beta,
        "4A/β per cut: each crossing takes A/β and holds both ends at once": work
        + 4 * (a_in + a_out) / beta,
        "milliseconds: the answer is in seconds": 1e3 * expected,
        "the forward times only": stage_sums(model.forward_times, bounds)
        + 2 * (a_in + a_out) / beta,
        "cut_bytes[-1] as stage 0's input: there is no cut before the first layer": expected
        + 2 * model.cut_bytes[-1] * (np.array(bounds[:-1]) == 0) / beta,
        "the cuts inside a stage charged: only the cuts at its ends transfer": expected
        + 2 * stage_sums(np.concatenate([[0.0], model.cut_bytes]), bounds) / beta
        - 2 * a_in / beta,
    }  # fmt: skip
    for s in range(len(bounds) - 1):
        pairs = [(v[s], why) for why, v in variants.items()]
        hints = distinct_hints(pairs, expected[s], rtol=1e-9, atol=1e-15)
        check_float(f"{label}[{s}]", got[s], expected[s], rtol=1e-9, unit="s", known_wrong=hints)
### END HIDDEN TESTS
passed("Exercise 1")

# %% [markdown]
# ### Exercise 2 — The min-max partition (3 points)
#
# Write `min_max_boundaries(layer_costs, num_stages)`: the boundaries, a tuple of
# `num_stages + 1` ints from 0 to `len(layer_costs)`, of a contiguous partition into non-empty
# stages whose slowest stage (the largest sum of `layer_costs` over its layers) is as small as
# possible. Any optimal partition scores. Use section 2's recursion or try every set of cuts with
# `itertools.combinations`: the hidden tests have at most 27 layers and 4 stages, or 12 layers and
# any number of stages, including one stage, one layer per stage, zero costs and a layer heavier
# than all the others together.


# %% nbgrader={"grade": false, "grade_id": "min_max_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def min_max_boundaries(layer_costs, num_stages):
    """Boundaries (0, b_1, ..., n) of a contiguous partition minimising the largest stage sum."""
    ### BEGIN SOLUTION
    costs = [float(c) for c in layer_costs]
    n = len(costs)
    prefix = [0.0]
    for c in costs:
        prefix.append(prefix[-1] + c)
    # best[s][a]: least slowest stage for layers a..n-1 on stages s..p-1; then where stage s ends.
    best = [[float("inf")] * (n + 1) for _ in range(num_stages + 1)]
    end = [[0] * (n + 1) for _ in range(num_stages + 1)]
    best[num_stages][n] = 0.0
    for s in range(num_stages - 1, -1, -1):
        for a in range(n):
            for b in range(a + 1, n + 1):
                value = max(prefix[b] - prefix[a], best[s + 1][b])
                if value < best[s][a]:
                    best[s][a], end[s][a] = value, b
    boundaries = [0]
    for s in range(num_stages):
        boundaries.append(end[s][boundaries[-1]])
    return tuple(boundaries)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "min_max_tests", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
"""Exercise 2: min_max_boundaries(costs, p), an optimal contiguous partition's boundaries."""
import course_lib.pipeline as course_pipeline
import course_lib.pipeline.partition as course_partition

routines = ("min_max_partition", "smallest_memory_limit")
no_delegation = [(course_partition, name) for name in routines]
no_delegation += [(course_pipeline, "min_max_partition")]


def check_partition(label, got, costs, p, expected, known_wrong=None):
    """got is a valid partition of len(costs) layers into p stages whose slowest stage is expected."""
    check_type(label, got, tuple, list)
    check_int(f"len({label})", len(got), p + 1)
    for k, value in enumerate(got):
        check_int(f"{label}[{k}]", value, int(value) if isinstance(value, int | np.integer) else -1)
    check_int(f"{label}[0]", got[0], 0)
    check_int(f"{label}[-1]", got[-1], len(costs))
    for s in range(p):
        check_range(f"layers on stage {s} of {label}", got[s + 1] - got[s], 1, len(costs),
                    what="every stage holds at least one layer; boundaries increase")  # fmt: skip
    slowest = max(float(np.sum(costs[got[s] : got[s + 1]])) for s in range(p))
    check_float(f"slowest stage of {label}", slowest, expected, rtol=1e-9, known_wrong=known_wrong)


visible = [0.1, 1.0, 1.0, 1.0, 2.0, 1.0, 2.5]  # an embedding, five blocks, an output layer
with forbid(*no_delegation, exercise="Exercise 2"):
    visible_answer = min_max_boundaries(visible, 3)
visible_wrong = [
    (4.0, "equal layer counts (2, 3, 2), not the min-max"),
    (5.5, "filling each stage up to the average: the last stage gets the rest"),
    (3.5, "cuts from range(1, n - 1): the last stage may hold a single layer"),
]
check_partition("min_max_boundaries(visible, 3)", visible_answer, visible, 3, 3.1,
                known_wrong=distinct_hints(visible_wrong, 3.1, rtol=1e-9))  # fmt: skip
label = "min_max_boundaries([2.0, 0.0, 5.0], 3)"
with forbid(*no_delegation, exercise="Exercise 2"):
    try:  # a search with nothing to choose from crashes here: report it as a failed check
        one_each = min_max_boundaries([2.0, 0.0, 5.0], 3)
    except (ValueError, IndexError, TypeError) as error:
        one_each = f"raised {type(error).__name__}"
if isinstance(one_each, str):
    why = "with n = p every stage holds one layer: the cuts come from range(1, n)"
    check_choice(label, one_each, "returned a partition", {one_each: why})
check_partition(label, one_each, [2.0, 0.0, 5.0], 3, 5.0)


### BEGIN HIDDEN TESTS
def _greedy(costs, p):
    """Fill each stage while it stays at or below the average; the last stage takes the rest."""
    target, bounds, total = sum(costs) / p, [0], 0.0
    for i, c in enumerate(costs):
        if total + c > target and len(bounds) < p and i > bounds[-1]:
            bounds.append(i)
            total = 0.0
        total += c
    while len(bounds) < p:
        bounds.append(bounds[-1] + 1)
    return bounds + [len(costs)]


def _least_squares(costs, p):
    """The partition with the least sum of squared stage costs (first found)."""
    n = len(costs)
    options = ((0, *cuts, n) for cuts in itertools.combinations(range(1, n), p - 1))
    return min(options, key=lambda b: sum(float(np.sum(costs[x:y])) ** 2 for x, y in
                                          zip(b[:-1], b[1:], strict=True)))  # fmt: skip


def _slowest(costs, bounds):
    return max(float(np.sum(costs[a:b])) for a, b in zip(bounds[:-1], bounds[1:], strict=True))


min_max_cases = [
    (list(layer_times), 4),
    (list(layer_times), 3),
    (list(layer_times), 2),
    ([5.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], 3),
    ([0.0, 0.0, 0.0, 3.0, 0.0, 0.0], 3),
    ([2.0, 2.0, 2.0, 2.0], 4),
    ([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0], 1),
    ([7.0, 2.0, 5.0, 10.0, 8.0], 2),
    ([1.0, 4.0, 1.0, 1.0, 4.0, 1.0, 1.0, 4.0, 1.0, 2.0, 3.0, 1.0], 5),
    ([0.5, 3.0, 0.25, 0.25, 3.0, 1.0, 1.0, 0.5, 2.0], 4),
    ([5.0, 4.0, 9.0, 4.0, 3.0, 4.0, 7.0, 5.0], 3),  # the least sum of squares is slower
    ([1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 9.0], 6),
]
with forbid(*no_delegation, exercise="Exercise 2 (hidden cases)"):
    min_max_answers = [min_max_boundaries(c, p) for c, p in min_max_cases]
for (costs_, p_), got in zip(min_max_cases, min_max_answers, strict=True):
    expected = course_partition.min_max_partition(costs_, p_).bottleneck
    n_ = len(costs_)
    equal_ = [round(k * n_ / p_) for k in range(p_ + 1)]
    wrong = [
        (_slowest(costs_, equal_), "equal layer counts, not the min-max"),
        (_slowest(costs_, _greedy(costs_, p_)), "filling stages up to the average"),
        (sum(costs_) / p_, "the average stage, which contiguous stages rarely reach"),
        (_slowest(costs_, _least_squares(costs_, p_)), "the least sum of squared stage costs"),
    ]
    wrong = distinct_hints(wrong, expected, rtol=1e-9, atol=1e-9)  # one mistake per hint
    check_partition(f"min_max_boundaries({costs_ if n_ < 13 else 'layer_times'}, {p_})", got,
                    np.asarray(costs_), p_, expected, known_wrong=wrong)  # fmt: skip
### END HIDDEN TESTS
passed("Exercise 2")

# %% [markdown]
# ### Exercise 3 — What each candidate cut costs (1 point)
#
# Link speeds are quoted in gigabits per second. Write
# `cut_traffic_of(cut_bytes, num_microbatches, link_gbit_per_s)`: for every cut, the seconds per
# training step its link spends moving that cut's traffic — all `num_microbatches` microbatches,
# both directions — as a numpy array with one entry per cut.


# %% nbgrader={"grade": false, "grade_id": "cut_traffic_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def cut_traffic_of(cut_bytes, num_microbatches, link_gbit_per_s):
    """Seconds per step each cut's link is busy: 2 directions × m microbatches × bytes / (bytes/s)."""
    ### BEGIN SOLUTION
    bytes_per_second = link_gbit_per_s * 1e9 / 8
    return 2 * num_microbatches * np.asarray(cut_bytes, dtype=float) / bytes_per_second
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "cut_traffic_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 3: cut_traffic_of(cut_bytes, m, Gb/s), seconds per step per cut (numpy array)."""
import course_lib.pipeline as course_pipeline
import course_lib.pipeline.partition as course_partition

routines = ("cut_traffic", "stage_times", "stage_table", "stage_costs")
no_delegation = [(course_partition, name) for name in routines]
no_delegation += [(course_pipeline, "cut_traffic"), (course_pipeline, "stage_times")]
with forbid(*no_delegation, exercise="Exercise 3"):
    small_traffic = cut_traffic_of(np.array([1e6, 4e6]), 3, 8.0)
check_type("cut_traffic_of([1e6, 4e6], 3, 8.0)", small_traffic, np.ndarray)
check_int("len(cut_traffic_of([1e6, 4e6], 3, 8.0))", len(small_traffic), 2)
traffic_wrong = [
    (0.00075, "8 Gb/s read as 8 GB/s: a byte is 8 bits"),
    (0.003, "one direction: the gradient crosses back"),
    (0.002, "one microbatch: each of the m crosses"),
    (0.001, "one crossing, A/β: each of the m microbatches crosses both ways"),
    (0.006 / 64, "8 Gb/s read as 64 GB/s: bytes/s = Gb/s × 1e9 / 8"),
    (0.006 * 1e9 / 2**30, "Gb/s as 2**30 bits per second: link rates are decimal"),
    (6.0, "milliseconds: the answer is in seconds"),
]
check_float("cut_traffic_of([1e6, 4e6], 3, 8.0)[0]", small_traffic[0], 0.006, unit="s",
            known_wrong=distinct_hints(traffic_wrong, 0.006))  # fmt: skip
check_float("cut_traffic_of([1e6, 4e6], 3, 8.0)[1]", small_traffic[1], 0.024, unit="s")
### BEGIN HIDDEN TESTS
traffic_cases = [(cut_bytes, 8, 200.0), (cut_bytes, 1, 400.0), (np.array([3e6, 0.0, 5e5]), 16, 100.0),
                 (np.array([2.5e7]), 3, 25.0)]  # fmt: skip
with forbid(*no_delegation, exercise="Exercise 3 (hidden cases)"):
    traffic_answers = [cut_traffic_of(*case) for case in traffic_cases]
for (cuts_, m_, gbit), got in zip(traffic_cases, traffic_answers, strict=True):
    label = f"cut_traffic_of(..., {m_}, {gbit:g})"
    check_type(label, got, np.ndarray)
    check_int(f"len({label})", len(got), len(cuts_))
    model = ModelSpec.from_arrays([0.0] * (len(cuts_) + 1), [0.0] * (len(cuts_) + 1),
                                  [0] * (len(cuts_) + 1), [0] * (len(cuts_) + 1), cuts_)  # fmt: skip
    expected = course_partition.cut_traffic(model, gbit * 1e9 / 8, m_)
    for k in range(len(cuts_)):
        wrong = [
            (expected[k] / 8, "Gb/s read as GB/s: a byte is 8 bits"),
            (expected[k] / 2, "one direction: the gradient crosses back"),
            (expected[k] / m_, "one microbatch: each of the m crosses"),
            (expected[k] / (2 * m_), "one crossing, A/β: each of the m crosses both ways"),
            (expected[k] / 64, "Gb/s × 8 as GB/s: bytes/s = Gb/s × 1e9 / 8"),
            (expected[k] * 1e3, "milliseconds: the answer is in seconds"),
            (expected[k] * 1e9 / 2**30, "Gb/s as 2**30 bits per second: link rates are decimal"),
        ]
        wrong = distinct_hints(wrong, expected[k], rtol=1e-9, atol=1e-15)
        check_float(f"{label}[{k}]", got[k], expected[k], rtol=1e-9, atol=1e-15, unit="s",
                    known_wrong=wrong if expected[k] > 0 else None)  # fmt: skip
### END HIDDEN TESTS
passed("Exercise 3")

# %% [markdown]
# ### Exercise 4 — Stage memory under 1F1B (2 points)
#
# Write `stage_memory_of(num_params, activation_bytes, boundaries, num_microbatches)`: the bytes
# each stage holds under 1F1B with mixed-precision Adam, by section 3's formula, as a numpy array
# of length $p$ (stages numbered from 0). `num_params` and `activation_bytes` (stashed per
# microbatch) are per layer. The hidden tests include fewer microbatches than stages and a single
# stage.


# %% nbgrader={"grade": false, "grade_id": "stage_memory_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def stage_memory_of(num_params, activation_bytes, boundaries, num_microbatches):
    """Bytes per stage: 16 per parameter + min(m, p - s) × the stage's stash per microbatch."""
    ### BEGIN SOLUTION
    params = np.asarray(num_params, dtype=float)
    stash = np.asarray(activation_bytes, dtype=float)
    p = len(boundaries) - 1
    memory = []
    for s in range(p):
        a, b = boundaries[s], boundaries[s + 1]
        in_flight = min(num_microbatches, p - s)
        memory.append((2 + 2 + 12) * params[a:b].sum() + in_flight * stash[a:b].sum())
    return np.array(memory)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "stage_memory_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 4: stage_memory_of(...), bytes per stage under 1F1B (numpy array)."""
import course_lib.pipeline as course_pipeline
import course_lib.pipeline.formulas as course_formulas
import course_lib.pipeline.partition as course_partition
import course_lib.pipeline.versions as course_versions

routines = ("stage_memory", "stage_table", "stage_costs", "stage_in_flight", "layer_memory")
no_delegation = [(course_partition, name) for name in routines]
no_delegation += [(course_pipeline, name) for name in ("stage_memory", "simulate")]
no_delegation += [(course_formulas, "peak_in_flight_one_f_one_b")]
no_delegation += [(course_pipeline, "verify")]  # pipe10's memory rule reports each stage's peak
# pipe07's PipeDream versions: p - s held per stage, j - min(m, p - s - 1)
no_delegation += [(course_versions, n) for n in ("stashing_versions_held", "stashing_version")]
with forbid(*no_delegation, exercise="Exercise 4"):
    small_memory = stage_memory_of([10, 20, 30], [100, 200, 300], (0, 1, 2, 3), 8)
    one_stage = stage_memory_of([10, 20, 30], [100, 200, 300], (0, 3), 8)
check_type("stage_memory_of(small case)", small_memory, np.ndarray)
check_int("len(stage_memory_of(small case))", len(small_memory), 3)
warm_up = "p − s − 1 in flight: that is the warm-up, the first steady-state forward makes it p − s"
memory_wrong = [  # the stages' total, which tells every mistake apart on this case
    (5760.0, "m = 8 in flight on every stage: 1F1B keeps min(m, p − s)"),
    (1360.0, warm_up),
    (2360.0, "s + 1 in flight: reversed, the first stage keeps the most"),
    (2760.0, "p in flight on every stage: stage s keeps p − s"),
    (1560.0, "one microbatch stashed per stage: stage s keeps p − s"),
    (1240.0, "4 bytes per parameter: the optimizer's 12 are missing"),
    (1120.0, "weights only: gradients and optimizer state are missing"),
    (1720.0, "12 bytes per parameter: the weights and gradients are missing"),
    (2080.0, "18 bytes per parameter: mixed-precision Adam holds 2 + 2 + 12"),
    (2560.0, "p + 1 − s in flight: p is len(boundaries) − 1"),
]
check_float("stage_memory_of(small case).sum()", float(np.sum(small_memory)), 1960.0, unit="B",
            known_wrong=distinct_hints(memory_wrong, 1960.0))  # fmt: skip
check_array("stage_memory_of(small case)", small_memory, [460.0, 720.0, 780.0])
check_type("stage_memory_of(small case, boundaries=(0, 3))", one_stage, np.ndarray)
one_wrong = [
    (5760.0, "m = 8 in flight: a single stage runs each backward right after its forward"),
    (960.0, warm_up),
    (840.0, "4 bytes per parameter: the optimizer's 12 are missing"),
    (2160.0, "p + 1 − s in flight: p is len(boundaries) − 1"),
]
check_float("stage_memory_of(small case, boundaries=(0, 3))[0]", one_stage[0], 1560.0, unit="B",
            known_wrong=distinct_hints(one_wrong, 1560.0))  # fmt: skip
### BEGIN HIDDEN TESTS
memory_cases = [
    (num_params, activation_bytes, equal_split, 8),
    (num_params, activation_bytes, even_blocks(spec, 8), 5),
    (num_params, activation_bytes, equal_split, 2),
    (num_params, activation_bytes, (0, 27), 4),
    (num_params, activation_bytes, (0, 6, 13, 20, 27), 1),
    (np.array([3.0, 0.0, 5.0, 1.0]), np.array([10.0, 40.0, 0.0, 7.0]), (0, 1, 2, 3, 4), 3),
]
with forbid(*no_delegation, exercise="Exercise 4 (hidden cases)"):
    memory_answers = [stage_memory_of(*case) for case in memory_cases]
for (params_, stash_, bounds, m_), got in zip(memory_cases, memory_answers, strict=True):
    label = f"stage_memory_of(..., boundaries={bounds}, num_microbatches={m_})"
    check_type(label, got, np.ndarray)
    p_ = len(bounds) - 1
    check_int(f"len({label})", len(got), p_)
    P = stage_sums(params_, bounds)
    S = stage_sums(stash_, bounds)
    s_ = np.arange(p_)
    right = np.minimum(m_, p_ - s_)
    expected = 16 * P + right * S
    variants = {
        "m in flight on every stage: 1F1B keeps min(m, p − s)": 16 * P + m_ * S,
        "p − s in flight without the clamp to m": 16 * P + (p_ - s_) * S,
        "p − s − 1 in flight: the warm-up, not the peak": 16 * P + np.minimum(m_, p_ - s_ - 1) * S,
        "s + 1 in flight: reversed, the first stage keeps the most": 16 * P
        + np.minimum(m_, s_ + 1) * S,
        "4 bytes per parameter: the optimizer's 12 are missing": 4 * P + right * S,
        "weights only: gradients and optimizer state are missing": 2 * P + right * S,
        "12 bytes per parameter: weights and gradients are missing": 12 * P + right * S,
        "no parameters: only the stashed activations": right * S,
        "one stashed microbatch per stage": 16 * P + S,
        "p in flight on every stage: stage s keeps min(m, p − s)": 16 * P + min(m_, p_) * S,
        "18 bytes per parameter: mixed-precision Adam holds 2 + 2 + 12": 18 * P + right * S,
        "min(m, p) − s: clamp after subtracting, not before": 16 * P + (min(m_, p_) - s_) * S,
        "p + 1 − s in flight: p is len(boundaries) − 1": 16 * P + np.minimum(m_, p_ + 1 - s_) * S,
    }
    for k in range(p_):
        pairs = [(v[k], why) for why, v in variants.items()]
        wrong = distinct_hints(pairs, expected[k], rtol=1e-9)
        check_float(f"{label}[{k}]", got[k], expected[k], rtol=1e-9, unit="B", known_wrong=wrong)
### END HIDDEN TESTS
passed("Exercise 4")

# %% [markdown]
# ### Exercise 5 — The fastest partition that fits (2 points)
#
# Write `fastest_fitting(layer_costs, layer_memory, memory_limit)`: the boundaries (a tuple of
# ints) of the partition with the smallest slowest stage, as in Exercise 2, among those where
# every stage fits. Row $s$ of `layer_memory` holds each layer's bytes on stage $s$, section 3's
# $16P_i + \min(m, p - s)S_i$ (the setup's: $p = 4$, $m = 8$); stage $s$ with layers $a$ to
# $b - 1$ fits if `layer_memory[s, a:b].sum() <= memory_limit`. If nothing fits, raise a
# `ValueError`. Exercise 2's search plus this memory filter suffices. Hidden tests: up to 27
# layers and 4 stages, a stage exactly at the limit, a limit nothing meets.


# %% nbgrader={"grade": false, "grade_id": "fastest_fitting_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def fastest_fitting(layer_costs, layer_memory, memory_limit):
    """Boundaries of the min-max partition among those whose every stage fits memory_limit."""
    ### BEGIN SOLUTION
    costs = np.asarray(layer_costs, dtype=float)
    memory = np.asarray(layer_memory, dtype=float)
    p, n = memory.shape
    best, best_bounds = float("inf"), None
    for cuts in itertools.combinations(range(1, n), p - 1):
        bounds = (0, *cuts, n)
        stages = list(enumerate(zip(bounds[:-1], bounds[1:], strict=True)))
        if any(memory[s, a:b].sum() > memory_limit for s, (a, b) in stages):
            continue
        slowest = max(costs[a:b].sum() for _, (a, b) in stages)
        if slowest < best:
            best, best_bounds = slowest, bounds
    if best_bounds is None:
        raise ValueError(f"no partition into {p} stages fits {memory_limit} bytes")
    return best_bounds
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "fastest_fitting_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 5: fastest_fitting(costs, layer_memory, limit), the min-max partition that fits."""
import course_lib.pipeline as course_pipeline
import course_lib.pipeline.partition as course_partition

routines = ("min_max_partition", "smallest_memory_limit")
no_delegation = [(course_partition, name) for name in routines]
no_delegation += [(course_pipeline, "min_max_partition")]


def fastest_fit_bottleneck(costs, memory, limit):
    """The least slowest stage among the partitions that fit (course_lib's DP on a built table)."""
    p, n = np.shape(memory)

    def ranged(values):  # [a, b]: the sum over layers a..b-1
        prefix = np.concatenate([[0.0], np.cumsum(values)])
        grid = prefix[None, :] - prefix[:, None]
        grid[np.tril_indices(n + 1)] = np.inf
        return grid

    table = course_partition.StageCosts(ranged(costs), np.array([ranged(r) for r in memory]), n)
    return course_partition.min_max_partition(table, p, memory_limit=limit).bottleneck


def check_fitting(label, got, costs, memory, limit):
    """got is a partition into p stages that fits limit and is as fast as the best that does."""
    p, n = np.shape(memory)
    check_type(label, got, tuple, list)
    check_int(f"len({label})", len(got), p + 1)
    for k, value in enumerate(got):
        check_int(f"{label}[{k}]", value, int(value) if isinstance(value, int | np.integer) else -1)
    check_int(f"{label}[0]", got[0], 0)
    check_int(f"{label}[-1]", got[-1], n)
    for s in range(p):
        check_range(f"layers on stage {s} of {label}", got[s + 1] - got[s], 1, n,
                    what="every stage holds at least one layer; boundaries increase")  # fmt: skip
    for s in range(p):
        used = float(np.sum(memory[s][got[s] : got[s + 1]]))
        check_range(f"stage {s}'s memory (B) under {label}", used, 0.0, limit,
                    what="every stage must fit: layer_memory[s, a:b].sum() <= memory_limit")  # fmt: skip
    slowest = max(float(np.sum(costs[got[s] : got[s + 1]])) for s in range(p))
    check_float(f"slowest stage of {label}", slowest, fastest_fit_bottleneck(costs, memory, limit),
                rtol=1e-9)  # fmt: skip


def outcome(call):
    """What a call did: its result, or "raised ValueError"."""
    try:
        return call()
    except ValueError:
        return "raised ValueError"


with forbid(*no_delegation, exercise="Exercise 5"):
    visible_fit = outcome(lambda: fastest_fitting(layer_times, layer_memory, 14 * 2**30))
    nothing_fits = outcome(lambda: fastest_fitting(np.ones(2), np.full((2, 2), 9.0), 8.0))
label = "fastest_fitting(layer_times, layer_memory, 14 GiB)"
if isinstance(visible_fit, str):
    check_choice(label, visible_fit, "returned a partition",
                 {"raised ValueError": "no partition fits — but one does: stage s fits if "
                  "layer_memory[s, a:b].sum() <= memory_limit",
                  "returned a partition": "the right outcome"})  # fmt: skip
check_fitting(label, visible_fit, layer_times, layer_memory, 14 * 2**30)
check_choice(
    "fastest_fitting(ones(2), full((2, 2), 9.0), 8.0): every stage needs 9 B",
    "raised ValueError" if isinstance(nothing_fits, str) else "returned a partition",
    "raised ValueError",
    {"returned a partition": "a partition, although none fits: raise a ValueError",
     "raised ValueError": "the right outcome"},
)  # fmt: skip


### BEGIN HIDDEN TESTS
def in_flight_rows(params, stash, p, m):
    """Section 3's formula per layer: row s is 16 P_i + min(m, p - s) S_i."""
    return 16 * np.asarray(params, float) + np.minimum(m, p - np.arange(p))[:, None] * stash


lesson_rows = course_partition.layer_memory
fit_cases = [  # lesson: limits from the smallest feasible up; small: the limit binds
    (layer_times, lesson_rows(spec, 4, 8), 16 * 2**30),
    (layer_times, lesson_rows(spec, 4, 8), 13 * 2**30),
    (layer_times, lesson_rows(spec, 4, 2), 11 * 2**30),
    (layer_times, lesson_rows(spec, 3, 8), 17 * 2**30),
    (layer_times, lesson_rows(spec, 2, 8), 20 * 2**30),
    (np.array([1.0, 1.0, 1.0, 1.0, 1.0, 3.0]), in_flight_rows(np.ones(6), np.full(6, 4.0), 3, 6),
     60.0),
    (np.array([0.5, 2.0, 2.0, 2.0, 1.0, 1.0]), in_flight_rows([0.0, 1, 1, 1, 2, 1],
     np.array([3.0, 2, 2, 2, 1, 2]), 4, 2), 41.0),
    (np.ones(4), np.array([[5.0, 5.0, 5.0, 5.0], [1.0, 1.0, 1.0, 1.0]]), 10.0),  # only optimum
    # (0, 2, 4) puts exactly 10 B, the limit, on stage 0
]  # fmt: skip
with forbid(*no_delegation, exercise="Exercise 5 (hidden cases)"):
    fit_answers = [outcome(lambda case=case: fastest_fitting(*case)) for case in fit_cases]
    too_small = outcome(lambda: fastest_fitting(layer_times, lesson_rows(spec, 4, 8), 11 * 2**30))
for (costs_, memory_, limit_), got in zip(fit_cases, fit_answers, strict=True):
    label = f"fastest_fitting(..., {len(memory_)} stages, {limit_:g} B)"
    if isinstance(got, str):
        check_choice(label, got, "returned a partition",
                     {"raised ValueError": "no partition fits — but one does: a stage fits if "
                      "its memory is at most memory_limit", "returned a partition": "the right outcome"})  # fmt: skip
    check_fitting(label, got, costs_, memory_, limit_)
check_choice(
    "fastest_fitting(layer_times, lesson layer_memory, 11 GiB), which no partition fits",
    "raised ValueError" if isinstance(too_small, str) else "returned a partition",
    "raised ValueError",
    {"returned a partition": "a partition, although none fits 11 GiB: raise a ValueError",
     "raised ValueError": "the right outcome"},
)  # fmt: skip
### END HIDDEN TESTS
passed("Exercise 5")

# %% [markdown]
# ### Exercise 6 — Explained answer: six blocks each (2 points, graded by hand)
#
# A colleague splits the lesson's model into four stages of six blocks each, "perfectly
# balanced", and proposes moving blocks from the last stage to the first, "since the embedding
# is free". How many should move, and why not more? What does that buy, why might it not fit, and
# what would you run with 16 GiB per GPU? Answer in three or four sentences with numbers from
# this lesson.

# %% [markdown] nbgrader={"grade": true, "grade_id": "explain_partition", "locked": false, "points": 2, "schema_version": 3, "solution": true, "task": false}
# **Model answer** (the student release replaces this cell). Six blocks each is balanced in
# layers, not in time: the last stage also runs the output layer and loss (9 ms, about two
# blocks), so it takes 37.45 ms against 29 and sets the pace. Move one block, as the min-max
# partition does (seven on stage 0, five on the last): the slowest stage falls to 33.08 ms, 12 %
# less per microbatch (the $m = 8$ step 386 → 354 ms); a second would make stage 0 the
# bottleneck at 37.7 ms. But stage 0 holds $\min(m, p) = 4$ microbatches' activations, so each
# block there costs 0.75 + 4 × 0.45 = 2.5 GiB against 1.2 GiB on the last stage: stage 0 grows to
# 19.4 GiB, over 16 GiB (the equal split's 16.8 GiB is over too). Within 16 GiB I would run the
# memory-constrained optimum, six layers on stage 0 and seven on each other stage: its slowest
# stage, 33.72 ms, is 10 % below the equal split's (the step 386 → 359 ms, 7 %).
#
# Rubric: 1 point for the time argument (the output layer makes the last stage the bottleneck;
# one block moved speeds up the step, a second overshoots, with numbers); 1 point for the memory
# argument (in-flight count makes stage 0's blocks expensive; a partition that fits, with numbers).

# %% [markdown]
# ## Takeaways
#
# - A stage's time is its layers' forward and backward plus its cuts' transfers, both ways:
#   $t_s = \sum (t_f + t_b) + 2(A_{\text{in}} + A_{\text{out}})/\beta$. The slowest stage sets
#   the pace.
# - The embedding is heavy in parameters and nearly free to run; the output layer and loss are
#   heavy in both. Never cut before the loss.
# - The contiguous min-max partition is a dynamic program in $O(p\,n^2)$; a memory limit removes
#   the stages that do not fit.
# - Under 1F1B stage $s$ stashes $\min(m, p - s)$ microbatches: the first stage pays most for
#   every layer it holds.
# - The trap: equal layer counts are balanced neither in time nor in memory. Price each stage's
#   compute, transfers and memory before you cut.

# %% [markdown]
# ## Going further (optional, ungraded)
#
# - Overlap changes the transfer term. Megatron-LM runs 1F1B's steady state as "send forward,
#   receive backward" pairs and can overlap point-to-point traffic with compute; PipeDream's
#   partitioner (Narayanan et al. 2019, §3.1) instead treats a link as its own pipeline stage,
#   taking the maximum of compute and $2A/\beta$ rather than their sum. With full overlap a cut
#   costs only when its traffic is slower than the stage.
# - When the output layer shares the embedding's weights (Megatron-LM's default; this lesson's
#   model does not), Megatron-LM keeps a copy of the word embedding on the last stage and
#   all-reduces the two copies' gradients every step: one more message, and memory on both ends.
# - Frameworks count state differently: accumulating gradients in fp32, as Megatron-LM does by
#   default, adds 2 bytes per parameter; a sharded optimizer (ZeRO stage 1) divides the 12
#   optimizer bytes by the data-parallel degree.
# - Korthikanti et al. (2022, Appendix C) store activations for as many microbatches as fit and
#   recompute the rest, stage by stage: with $\max(0, p - S)$ microbatches outstanding, later
#   stages often need no recomputation at all. A memory-aware partitioner can weigh that per-stage
#   choice against moving layers.
