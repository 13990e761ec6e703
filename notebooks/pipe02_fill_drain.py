# %% [markdown]
# # pipe02 · Fill-drain schedules and bubbles
#
# **Objective.** Derive balanced-stage fill/drain time and distinguish elapsed idle fraction from
# overhead relative to ideal compute.
#
# **Time:** 28 min · **Level:** advanced
#
# You will be able to
# - derive the step time $(m + p - 1)(t_f + t_b)$ of a fill-drain (GPipe) pipeline from its
#   schedule grid, and add the cost of point-to-point latency;
# - compute the two numbers people both call "the bubble" — the elapsed idle fraction and the
#   overhead relative to ideal compute — and tell which one a paper quotes;
# - explain what raising the number of microbatches costs: stashed activations, kernel
#   efficiency, messages.
#
# **What you need:** pipe01 (a stage's forward and backward time). cost01's critical path helps in
# section 1. Python and numpy at the level of a list comprehension and an array slice.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
# %matplotlib inline
import matplotlib.pyplot as plt
import numpy as np

from course_lib.checks import (
    check_choice,
    check_float,
    check_int,
    check_range,
    check_type,
    forbid,
    passed,
)
from course_lib.explorers.fill_drain import fill_drain_explorer
from course_lib.figures.pipeline import (
    bubble_curves,
    fill_drain_anatomy,
    stash_curves,
)
from course_lib.memory import activation_bytes_per_layer
from course_lib.pipeline import gpipe, one_f_one_b, simulate

rng = np.random.default_rng(2)  # the course's convention; nothing in this lesson is random

# The worked example: 4 balanced stages, 8 microbatches, backward twice the forward.
num_stages, num_microbatches = 4, 8
forward_time, backward_time = 1.0e-3, 2.0e-3  # seconds per microbatch per stage

# %% [markdown]
# ## 1. A fill-drain step takes (m + p − 1)(t_f + t_b)
#
# A pipeline cuts the model into $p$ stages, one per rank, and the batch into $m$ microbatches.
# The fill-drain schedule of GPipe (Huang et al. 2019, §2.2, Fig. 2c) sends every microbatch's
# forward down the pipeline, then every backward back up, then steps the optimizer once the
# pipeline is empty (a *flush*). With balanced stages a microbatch costs $t_f$ forward and $t_b$
# backward on every stage; take $t_b \approx 2t_f$, as Narayanan et al. (2021, Fig. 3) do (the
# backward computes gradients for inputs and weights, each about one forward's work).
#
# `gpipe` builds the schedule as data, each rank's ordered list of actions (`F(s1,m3)`: the
# forward of microbatch 3 on stage 1); `simulate` starts each action once its rank is free and
# its inputs exist: a forward needs the previous stage's forward, a backward its own forward and
# the next stage's backward.

# %%
schedule = gpipe(num_stages, num_microbatches)
print(schedule)
timeline = simulate(schedule, forward_time, backward_time)
p, m, t_f, t_b = num_stages, num_microbatches, forward_time, backward_time

fill_drain_anatomy(timeline)  # the schedule grid with one chain of actions outlined
plt.show()

# %% [markdown]
# Rank 0 is on top; grey is idle. Follow the outlined chain: microbatch 0's forward takes $p - 1$
# slots to reach the last stage, which runs its $m$ forwards and then, at once, its $m$
# backwards; the last gradient climbs back in $p - 1$ slots. That is $m + p - 1$ forward and
# $m + p - 1$ backward slots, and no action on the chain waits: it is the step's critical path
# (cost01), and it spans the step:
#
# $$T_{\text{fill-drain}} = (m + p - 1)\,(t_f + t_b)$$
#
# where $p$ is `num_stages`, $m$ is `num_microbatches`, and $t_f$, $t_b$ are the forward and
# backward time of one microbatch on one stage. Every rank computes for $m(t_f + t_b)$ and idles
# the rest, $(p - 1)(t_f + t_b)$ — the bubble Narayanan et al. (2021, §2.2.1) count — in three
# triangles: waiting for its first input (**fill**), for the last gradient to come back (**drain
# F · fill B**), and after its last backward (**drain**). Here 11 forwards of 1 ms and 11
# backwards of 2 ms make 33 ms, 9 of them idle on every rank.

# %%
closed_form = (m + p - 1) * (t_f + t_b)
print(f"closed form (m + p - 1)(t_f + t_b) = {closed_form * 1e3:.1f} ms")
print(f"simulate(gpipe(4, 8), ...)          = {timeline.makespan * 1e3:.1f} ms")

# %% [markdown]
# ## 2. "The bubble" is two different numbers
#
# Each rank is busy $t_{id} = m(t_f + t_b)$, the *ideal* step time (no bubble), and idle for the
# rest, $t_{pb} = T - t_{id}$, the *bubble time*. Two ratios of these are both called "the
# bubble":
#
# $$\text{elapsed idle fraction} = \frac{\text{idle rank-time}}{\text{total rank-time}}
#   = \frac{p\,t_{pb}}{p\,T} = \frac{p - 1}{m + p - 1},
# \qquad
# \text{overhead relative to ideal compute} = \frac{t_{pb}}{t_{id}} = \frac{p - 1}{m}.$$
#
# Same numerator, different denominator: the first divides by the time the step takes, the second
# by the time it would take without the bubble. GPipe (Huang et al. 2019, §2.3) states the first:
# "This bubble time is $O(\frac{K-1}{M+K-1})$ amortized over the number of micro-steps $M$" ($K$
# stages). Megatron-LM (Narayanan et al. 2021, §2.2.1) states the second: "the fraction of ideal
# computation time spent in the pipeline bubble is: Bubble time fraction (pipeline bubble size)
# $= \frac{t_{pb}}{t_{id}} = \frac{p-1}{m}$". The two convert into each other:
# $\text{overhead} = \text{idle} / (1 - \text{idle})$.
#
# For $p = 4$, $m = 8$: idle $3/11 \approx 27.3\,\%$, overhead $3/8 = 37.5\,\%$. From the
# definitions, on the simulated timeline:

# %%
T = timeline.makespan
busy = timeline.busy  # seconds of work per rank: m (t_f + t_b) on every rank
idle_fraction = (p * T - busy.sum()) / (p * T)  # idle rank-time / total rank-time
overhead = (T - busy.max()) / busy.max()  # bubble time / ideal compute time
print(
    f"elapsed idle fraction {idle_fraction:.4f} = (p - 1)/(m + p - 1) = {(p - 1) / (m + p - 1):.4f}"
)
print(f"overhead vs ideal     {overhead:.4f} = (p - 1)/m         = {(p - 1) / m:.4f}")

bubble_curves(stage_counts=(4, 16), max_microbatches=128)  # both ratios against m
plt.show()

# %% [markdown]
# One colour is one pipeline. The overhead is always the larger number (beyond 100 % when
# $m < p - 1$); the gap, $(p - 1)^2 / (m(m + p - 1))$, shrinks as $m$ grows but stays large where
# pipelines run: $p = 8$, $m = 16$ gives 43.8 % against 30.4 %. The circles, `simulate()`, sit on
# the curves: the formulas are exact for balanced stages.

# %% [markdown]
# ## 3. More microbatches shrink the bubble and stash more activations
#
# Raising $m$ is the obvious cure, and it is not free. A stage keeps each microbatch's
# activations from its forward until its backward (a *stash*), and under fill-drain all $m$ are
# live before the first backward. A transformer layer with hidden size 4096, 32 heads, sequence
# length 2048 and one sequence per microbatch stashes $34\,sbh$ bytes = 272 MiB in 16-bit with
# selective recomputation (Korthikanti et al. 2022, Table 2; cost05 derives it). With 8 layers
# per stage that is 2.125 GiB per microbatch, and $m = 32$ stash 68 GiB: 68 of an 80 GiB
# accelerator's memory taken before the weights and optimizer state.
#
# Megatron-LM's 1F1B (PipeDream-Flush, pipe03) alternates one forward and one backward after a
# short warm-up: "the time spent in the bubble is the same", but activations are "stashed for $p$
# or fewer microbatches (compared to $m$ microbatches for the GPipe schedule)" (Narayanan et al.
# 2021, §2.2.1). A preview, with `Timeline.in_flight` counting live stashes:

# %%
stash_bytes = 8 * activation_bytes_per_layer(2048, 1, 4096, 32, recompute="selective")
runs = {"GPipe": timeline, "1F1B": simulate(one_f_one_b(p, m), forward_time, backward_time)}
stash_curves(runs, stage=0, bytes_per_microbatch=stash_bytes)
plt.show()

# %% [markdown]
# Both schedules end at 33 ms; GPipe holds 8 stashes (17 GiB) on stage 0 for 12 ms, 1F1B never
# more than 4 (8.5 GiB). Cutting the same batch into more, smaller microbatches does not help
# either: GPipe still stashes the whole batch, and smaller microbatches run less efficient
# kernels (Narayanan et al. 2021, Fig. 7: up to 1.3× per-GPU throughput from a larger
# microbatch).

# %% [markdown]
# ## 4. Point-to-point latency stretches the fill and the drain
#
# Every hand-off between stages is a message: activations go down, gradients come up, and each
# arrives $\delta$ after it is sent. The forward of microbatch $j$ on stage $s$ now starts at
# $s\,(t_f + \delta) + j\,t_f$: the first microbatch pays $\delta$ at each of the $p - 1$ hops,
# and every later one arrives just as its stage finishes the one before. The backward climbs the
# same way. So
#
# $$T = (m + p - 1)(t_f + t_b) + 2\,(p - 1)\,\delta,$$
#
# where $\delta$ is the per-hop latency: paid $p - 1$ times in the fill and $p - 1$ times in the
# drain, independent of $m$. For $\delta = 0.25$ ms: $33 + 6 \times 0.25 = 34.5$ ms.

# %%
delta = 0.25e-3
with_latency = simulate(schedule, forward_time, backward_time, p2p_latency=delta)
print(f"closed form: {((m + p - 1) * (t_f + t_b) + 2 * (p - 1) * delta) * 1e3:.2f} ms")
print(f"simulate:    {with_latency.makespan * 1e3:.2f} ms")

# %% [markdown]
# The simulator agrees. 1F1B pays more: in its steady state each forward–backward pair waits for
# a neighbour's message, so $\delta$ is paid again and again (the explorer shows it; pipe03
# weighs the trade).
#
# The model lets a message land $\delta$ after it is sent, whether or not its receiver is ready:
# $2(p - 1)\delta$ assumes receives are posted ahead (or the message is buffered). If a stage
# posts each receive only when it needs the data, as PyTorch's `ScheduleGPipe` does (Going
# further), $\delta$ recurs per microbatch: measure it.

# %% [markdown]
# ## Explore
#
# The explorer simulates GPipe or 1F1B ($t_f = 1$ ms, $t_b = 2$ ms) and sets the closed form
# beside the simulator. Try:
# - At $p = 4$ drag $m$ from 8 to 64: the idle fraction falls like $(p-1)/(m+p-1)$ while the
#   stash panel climbs to $m$.
# - Set $p = 8$, $m = 32$ and toggle 1F1B: makespan and idle fraction do not move; the peak stash
#   on stage 0 drops from 32 to 8. Now drag the latency to 0.5 ms: GPipe's makespan grows by
#   $2(p-1)\delta$, 1F1B's by more (its "agree" column turns to "no").

# %%
fill_drain_explorer()

# %% [markdown]
# ## Exercises
#
# Answer in the cells marked `YOUR CODE HERE`, then run the grade cell below each: visible checks
# give quick feedback; hidden tests check more cases when the notebook is graded. While a grade
# cell calls your function, `course_lib`'s simulator and closed forms (and so the explorer) are
# disabled: the formulas are yours to write.
#
# ### Exercise 1 — The two bubbles of a profiled step (2 points)
#
# A profile of a balanced fill-drain pipeline gives the step time and the forward and backward
# time of one microbatch on a stage. Write
# `profiled_bubbles(step_time, num_microbatches, forward_time, backward_time)` returning the
# tuple `(idle_fraction, overhead)`: the step's elapsed idle fraction and its overhead relative
# to ideal compute, as fractions (0.25 means 25 %); times are in seconds. The measured step is
# what counts, and it may exceed section 1's formula: $p = 6$, $m = 12$, $t_f = 0.8$ ms,
# $t_b = 1.6$ ms took 42.3 ms, 1.5 ms more, because messages take time.


# %% nbgrader={"grade": false, "grade_id": "profiled_bubbles_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def profiled_bubbles(
    step_time: float, num_microbatches: int, forward_time: float, backward_time: float
) -> tuple[float, float]:
    """(elapsed idle fraction, overhead relative to ideal compute) of a profiled fill-drain step."""
    ### BEGIN SOLUTION
    ideal_compute = num_microbatches * (forward_time + backward_time)  # every rank's busy time
    bubble = step_time - ideal_compute  # every rank's idle time
    return bubble / step_time, bubble / ideal_compute
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "idle_fraction_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 1a: profiled_bubbles(...)[0], the elapsed idle fraction of a profiled step."""
import course_lib.pipeline as course_pipeline

routines = ("fill_drain_makespan", "fill_drain_idle_fraction", "fill_drain_overhead", "simulate")
no_delegation = [(course_pipeline, name) for name in routines]
with forbid(*no_delegation, exercise="Exercise 1"):
    section_2 = profiled_bubbles(33.0e-3, 8, 1.0e-3, 2.0e-3)  # section 2's pipeline, no latency
check_type("profiled_bubbles(33 ms, 8, 1 ms, 2 ms)", section_2, tuple, list)
check_int("len(profiled_bubbles(33 ms, 8, 1 ms, 2 ms))", len(section_2), 2)
check_float(
    "profiled_bubbles(33 ms, 8, 1 ms, 2 ms)[0]",
    section_2[0],
    3 / 11,
    known_wrong={3 / 8: "the overhead relative to ideal compute, the other 'bubble'"},
)
### BEGIN HIDDEN TESTS
profiles = [  # (step_time, m, t_f, t_b): measured steps longer than the formula's
    (42.3e-3, 12, 0.8e-3, 1.6e-3),
    (0.1, 32, 0.5e-3, 1.5e-3),
    (70.2e-3, 16, 1.2e-3, 2.4e-3),
    (34.5e-3, 8, 1.0e-3, 2.0e-3),
]
with forbid(*no_delegation, exercise="Exercise 1 (hidden cases)"):
    profiled = [profiled_bubbles(*case) for case in profiles]
for (step, m_, tf_, tb_), got in zip(profiles, profiled, strict=True):
    check_type(f"profiled_bubbles({step}, {m_}, {tf_}, {tb_})", got, tuple, list)
    check_int(f"len(profiled_bubbles({step}, {m_}, {tf_}, {tb_}))", len(got), 2)
    ideal_ = m_ * (tf_ + tb_)
    check_float(
        f"profiled_bubbles({step}, {m_}, {tf_}, {tb_})[0]",
        got[0],
        (step - ideal_) / step,
        known_wrong={
            (step - ideal_) / ideal_: "the overhead relative to ideal compute, the other 'bubble'",
            100 * (step - ideal_) / step: "a percentage, not a fraction",
            ideal_ / step: "the busy fraction, not the idle one",
            1 - m_ * tf_ / step: "an ideal compute of m·t_f: the backwards are missing",
        },
    )
### END HIDDEN TESTS
passed("Exercise 1a")

# %% nbgrader={"grade": true, "grade_id": "overhead_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 1b: profiled_bubbles(...)[1], the overhead relative to ideal compute."""
import course_lib.pipeline as course_pipeline

routines = ("fill_drain_makespan", "fill_drain_idle_fraction", "fill_drain_overhead", "simulate")
no_delegation = [(course_pipeline, name) for name in routines]
with forbid(*no_delegation, exercise="Exercise 1"):
    section_2 = profiled_bubbles(33.0e-3, 8, 1.0e-3, 2.0e-3)  # section 2's pipeline, no latency
check_type("profiled_bubbles(33 ms, 8, 1 ms, 2 ms)", section_2, tuple, list)
check_int("len(profiled_bubbles(33 ms, 8, 1 ms, 2 ms))", len(section_2), 2)
check_float(
    "profiled_bubbles(33 ms, 8, 1 ms, 2 ms)[1]",
    section_2[1],
    3 / 8,
    known_wrong={
        3 / 11: "the elapsed idle fraction, the other 'bubble'",
        11 / 8: "step / ideal compute: the overhead is that ratio minus 1",
    },
)
### BEGIN HIDDEN TESTS
profiles = [  # (step_time, m, t_f, t_b): measured steps longer than the formula's
    (42.3e-3, 12, 0.8e-3, 1.6e-3),
    (0.1, 32, 0.5e-3, 1.5e-3),
    (70.2e-3, 16, 1.2e-3, 2.4e-3),
    (34.5e-3, 8, 1.0e-3, 2.0e-3),
]
with forbid(*no_delegation, exercise="Exercise 1 (hidden cases)"):
    profiled = [profiled_bubbles(*case) for case in profiles]
for (step, m_, tf_, tb_), got in zip(profiles, profiled, strict=True):
    check_type(f"profiled_bubbles({step}, {m_}, {tf_}, {tb_})", got, tuple, list)
    check_int(f"len(profiled_bubbles({step}, {m_}, {tf_}, {tb_}))", len(got), 2)
    ideal_ = m_ * (tf_ + tb_)
    idle_ = (step - ideal_) / step
    check_float(
        f"profiled_bubbles({step}, {m_}, {tf_}, {tb_})[1]",
        got[1],
        (step - ideal_) / ideal_,
        known_wrong={
            idle_: "the elapsed idle fraction, the other 'bubble'",
            100 * (step - ideal_) / ideal_: "a percentage, not a fraction",
            step / ideal_: "step / ideal compute: the overhead is that ratio minus 1",
            step / (m_ * tf_) - 1: "an ideal compute of m·t_f: the backwards are missing",
            idle_ / (1 + idle_): "idle / (1 + idle): the conversion is idle / (1 − idle)",
        },
    )
### END HIDDEN TESTS
passed("Exercise 1b")

# %% [markdown]
# ### Exercise 2 — Fewest microbatches for an idle target (2 points)
#
# Write `min_microbatches(num_stages, max_idle_percent)`: the smallest number of microbatches
# $m \ge 1$ for which a balanced fill-drain pipeline without latency has an elapsed idle
# fraction strictly below `max_idle_percent` percent (an int from 1 to 99); return an int. Where
# the idle fraction equals the target, that $m$ is not enough: compare exactly, in integers, not
# with floats that may round your way. The hidden tests include such exact boundaries and a
# single stage (which never idles: $m = 1$).


# %% nbgrader={"grade": false, "grade_id": "min_microbatches_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def min_microbatches(num_stages: int, max_idle_percent: int) -> int:
    """Smallest m with (p - 1)/(m + p - 1) < max_idle_percent / 100 (balanced fill-drain)."""
    ### BEGIN SOLUTION
    # 100 (p - 1) < k (m + p - 1)  <=>  m > (p - 1)(100 - k) / k
    return (num_stages - 1) * (100 - max_idle_percent) // max_idle_percent + 1
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "min_microbatches_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 2: min_microbatches(p, k), the smallest m with idle fraction < k % (an int)."""
import course_lib.pipeline as course_pipeline
import course_lib.pipeline.accumulation as course_accumulation
import course_lib.pipeline.imbalance as course_imbalance
import course_lib.pipeline.interleaving as course_interleaving

routines = ("fill_drain_makespan", "fill_drain_idle_fraction", "fill_drain_overhead", "simulate")
later = ("interleaved_overhead", "zero_bubble_h1_bubble")  # pipe04's closed forms at v = 1, t_w = 0
no_delegation = [(course_pipeline, name) for name in routines + later] + [
    # every other balanced-pipeline step of the course: pipe04's, pipe06's, pipe08's closed forms
    (course_interleaving, "interleaved_makespan"),
    (course_accumulation, "step_times"),
    *[(course_imbalance, n) for n in ("gpipe_makespan", "slowest_stage_makespan")],
    (course_imbalance, "makespan_lower_bound"),
]
with forbid(*no_delegation, exercise="Exercise 2"):
    small_case = min_microbatches(4, 40)
check_int(
    "min_microbatches(4, 40)",
    small_case,
    5,
    known_wrong={8: "the overhead (p − 1)/m below 40 %, not the elapsed idle fraction"},
)
### BEGIN HIDDEN TESTS
fewest_cases = {  # (p, k) -> smallest m with (p - 1)/(m + p - 1) < k/100, by exhaustive search
    (8, 10): 64,
    (4, 25): 10,
    (16, 5): 286,
    (6, 15): 29,
    (5, 30): 10,
    (1, 10): 1,
    (4, 75): 2,  # (p - 1)(100/k - 1) = 0.9999999999999998 in floats
    (8, 7): 94,  # (p - 1)/(k/100) - (p - 1) = 92.99999999999999 in floats
    (30, 29): 72,  # (p - 1)/(m + p - 1) * 100 < k holds in floats at m = 71
    (6, 40): 8,  # round((p - 1)(100 - k)/k) + 1 = 9
    (8, 60): 5,  # less than p microbatches
}
with forbid(*no_delegation, exercise="Exercise 2 (hidden cases)"):
    fewest_answers = {case: min_microbatches(*case) for case in fewest_cases}
for (p_, k_), expected in fewest_cases.items():
    wrong = {
        100 * (p_ - 1) // k_ + 1: "the overhead (p − 1)/m, not the elapsed idle fraction",
        p_ * (100 - k_) // k_ + 1: "p/(m + p): p hops between p stages, not p − 1",
        4 * p_: "GPipe's rule of thumb m ≥ 4p",
        max(p_, expected): "at least p microbatches: the exercise sets no such floor",
        expected + 1: "one microbatch too many: the bound rounded, not floor(bound) + 1",
        expected - 1: "one microbatch short where the idle fraction equals the target exactly: "
        "idle ≤ target, or a float comparison that rounded your way",
    }
    check_int(
        f"min_microbatches({p_}, {k_})",
        fewest_answers[(p_, k_)],
        expected,
        known_wrong={value: why for value, why in wrong.items() if value != expected},
    )
### END HIDDEN TESTS
passed("Exercise 2")

# %% [markdown]
# ### Exercise 3 — Makespan over links of different latency (3 points)
#
# Eight stages on two 4-GPU nodes cross six hops inside a node and one, slower, between the
# nodes. Write
# `fill_drain_makespan_hops(num_microbatches, forward_time, backward_time, hop_latencies)`: the
# makespan in seconds (a float) of a balanced fill-drain pipeline whose hop from stage $s$ to
# $s + 1$ delivers each message `hop_latencies[s]` seconds after it is sent, both ways, as in
# section 4. The pipeline has `len(hop_latencies) + 1` stages. The hidden tests include zero
# latencies (section 1's step), an empty list (one stage) and the two-node example (synthetic)
# `[0.05e-3] * 3 + [0.4e-3] + [0.05e-3] * 3`.


# %% nbgrader={"grade": false, "grade_id": "latency_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def fill_drain_makespan_hops(
    num_microbatches: int, forward_time: float, backward_time: float, hop_latencies: list[float]
) -> float:
    """Makespan (s) of a balanced fill-drain pipeline with a latency per hop."""
    ### BEGIN SOLUTION
    num_stages = len(hop_latencies) + 1
    compute = (num_microbatches + num_stages - 1) * (forward_time + backward_time)
    return compute + 2 * sum(hop_latencies)  # each hop once in the fill, once in the drain
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "latency_tests", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
"""Exercise 3: fill_drain_makespan_hops(m, t_f, t_b, hop_latencies) in seconds."""
import course_lib.pipeline as course_pipeline
import course_lib.pipeline.accumulation as course_accumulation
import course_lib.pipeline.imbalance as course_imbalance
import course_lib.pipeline.interleaving as course_interleaving

routines = ("fill_drain_makespan", "fill_drain_idle_fraction", "fill_drain_overhead", "simulate")
later = ("interleaved_overhead", "zero_bubble_h1_bubble")  # pipe04's closed forms at v = 1, t_w = 0
no_delegation = [(course_pipeline, name) for name in routines + later] + [
    # every other balanced-pipeline step of the course: pipe04's, pipe06's, pipe08's closed forms
    (course_interleaving, "interleaved_makespan"),
    (course_accumulation, "step_times"),
    *[(course_imbalance, n) for n in ("gpipe_makespan", "slowest_stage_makespan")],
    (course_imbalance, "makespan_lower_bound"),
]
with forbid(*no_delegation, exercise="Exercise 3"):
    small_case = fill_drain_makespan_hops(4, 1.0e-3, 2.0e-3, [0.1e-3, 0.2e-3])
    no_latency = fill_drain_makespan_hops(5, 1.0e-3, 2.0e-3, [0.0, 0.0])
check_float(
    "fill_drain_makespan_hops(4, 1 ms, 2 ms, [0.1 ms, 0.2 ms])",
    small_case,
    0.0186,
    unit="s",
    known_wrong={
        0.0183: "each hop's latency paid once: the gradients cross it again on the way back",
        0.018: "no latency at all",
        0.0156: "len(hop_latencies) stages: p − 1 hops link p stages",
    },
)
check_float(
    "fill_drain_makespan_hops(5, 1 ms, 2 ms, [0, 0])",
    no_latency,
    0.021,
    unit="s",
    known_wrong={
        0.015: "m(t_f + t_b): the ideal compute, without fill and drain",
        0.024: "(m + p)(t_f + t_b): one slot too many",
        0.045: "p·m·(t_f + t_b): every stage's work in turn, no pipelining",
        0.007: "(m + p − 1)·t_f: the backwards are missing",
    },
)
### BEGIN HIDDEN TESTS
two_nodes = [0.05e-3] * 3 + [0.4e-3] + [0.05e-3] * 3
hop_cases = {  # (m, t_f, t_b, hops) -> makespan (s), computed once with
    # simulate(gpipe(len(hops) + 1, m), t_f, t_b, p2p_latency=list(hops) or 0.0).makespan
    (32, 0.6e-3, 1.2e-3, tuple(two_nodes)): 0.0716,
    (32, 0.6e-3, 1.2e-3, (50e-6,) * 7): 0.0709,
    (5, 1.0e-3, 2.0e-3, ()): 0.015,
    (3, 1.0e-3, 2.0e-3, (0.5e-3,)): 0.013,
    (16, 0.5e-3, 1.0e-3, (0.02e-3,) * 3 + (0.3e-3,) + (0.02e-3,) * 3 + (0.3e-3,)): 0.03744,
    (8, 1.0e-3, 2.0e-3, (0.0,) * 3): 0.033,
    (12, 0.5e-3, 1.2e-3, (0.0,) * 5): 0.0289,
    (3, 2.0e-3, 4.0e-3, (0.0,) * 7): 0.06,
    (1, 1.0e-3, 3.0e-3, (0.0,) * 4): 0.02,
    (64, 0.8e-3, 1.7e-3, (0.0,) * 15): 0.1975,
}
with forbid(*no_delegation, exercise="Exercise 3 (hidden cases)"):
    hop_answers = {case: fill_drain_makespan_hops(*case[:3], list(case[3])) for case in hop_cases}
for (m_, tf_, tb_, hops_), expected in hop_cases.items():
    p_ = len(hops_) + 1
    compute = (m_ + p_ - 1) * (tf_ + tb_)
    latency = 2 * sum(hops_)
    wrong = {
        compute + sum(hops_): "each hop's latency paid once: the gradients cross it again",
        compute: "no latency at all",
        compute + m_ * latency: "every microbatch pays every hop: in the steady state the "
        "messages hide behind compute",
        compute + 2 * (p_ - 1) * max(hops_, default=0.0): "the slowest hop's latency on every hop",
        expected - (tf_ + tb_): "len(hop_latencies) stages: p − 1 hops link p stages",
        p_ * m_ * (tf_ + tb_) + latency: "p·m·(t_f + t_b): every stage's work in turn",
        expected + (tf_ + tb_): "(m + p)(t_f + t_b): one slot too many",
        expected + (p_ - 1) * (tf_ + tb_): "(m + 2(p − 1))(t_f + t_b): the bubble counted twice",
        m_ * (tf_ + tb_) + latency: "m(t_f + t_b): the ideal compute, without fill and drain",
        expected - (p_ - 1) * tb_: "the fill counted for the forwards only",
        (m_ + p_ - 1) * tf_ + latency: "(m + p − 1)·t_f: the backwards are missing",
    }
    check_float(
        f"fill_drain_makespan_hops({m_}, {tf_}, {tb_}, {list(hops_)})",
        hop_answers[(m_, tf_, tb_, hops_)],
        expected,
        unit="s",
        known_wrong={value: why for value, why in wrong.items() if abs(value - expected) > 1e-12},
    )
### END HIDDEN TESTS
passed("Exercise 3")

# %% [markdown]
# ### Exercise 4 — Which bubble is 37.5 %? (1 point)
#
# A report quotes "a pipeline bubble of 37.5 %" for a balanced fill-drain pipeline with $p = 4$
# stages and $m = 5$ microbatches. Which quantity does it quote? Set `bubble_definition` to one
# of the strings
# - `"idle"`: the elapsed idle fraction, idle rank-time over total rank-time;
# - `"overhead"`: the overhead relative to ideal compute, bubble time over ideal compute time;
# - `"neither"`: neither gives 37.5 % at $p = 4$, $m = 5$.

# %% nbgrader={"grade": false, "grade_id": "bubble_choice_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
bubble_definition = "idle"  # (p - 1)/(m + p - 1) = 3/8; the overhead (p - 1)/m is 3/5
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "bubble_choice_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 4: which definition gives a 37.5 % bubble at p = 4, m = 5 ("idle", "overhead", "neither")."""
stated = {
    "idle": "the elapsed idle fraction",
    "overhead": "the overhead relative to ideal compute",
    "neither": "neither definition",
}
# Visible: the answer is one of the three strings (any of them passes here).
check_choice("bubble_definition", bubble_definition, bubble_definition, stated)
### BEGIN HIDDEN TESTS
check_choice(
    "bubble_definition",
    bubble_definition,
    "idle",
    {
        "idle": "the elapsed idle fraction, (p − 1)/(m + p − 1)",
        "overhead": "the overhead relative to ideal compute, (p − 1)/m: compute it at m = 5, "
        "not at section 2's m = 8",
        "neither": "neither definition — compute both at p = 4, m = 5 again",
    },
)
### END HIDDEN TESTS
passed("Exercise 4")

# %% [markdown]
# ### Exercise 5 — Explained answer: 256 microbatches (2 points, graded by hand)
#
# Your pipeline runs $p = 8$ stages with $m = 32$ microbatches of 8 sequences each (a batch of 256
# sequences). A colleague wants the elapsed idle fraction under 5 % and proposes $m = 256$
# microbatches of one sequence each. What does that buy, what does it cost, and what would you
# measure first? Answer in three or four sentences with numbers from this lesson.

# %% [markdown] nbgrader={"grade": true, "grade_id": "explain_many_microbatches", "locked": false, "points": 2, "schema_version": 3, "solution": true, "task": false}
# **Model answer** (the student release replaces this cell). On paper the idle fraction falls from
# $7/39 \approx 18\,\%$ to $7/263 \approx 2.7\,\%$, meeting the goal. But the step time, not the
# idle fraction, is what matters: each microbatch shrinks from 8 sequences to 1, and $t_f$, $t_b$
# fall by much less than 8× because small matrix multiplications run less efficiently (Narayanan
# et al. 2021, Fig. 7), so the total work $m(t_f + t_b)$ grows and can cancel the 15 points of idle
# saved. Memory does not improve under fill-drain: each stage still stashes the whole batch's
# activations (256 × 1 instead of 32 × 8 sequences); 1F1B would cut it to 8 microbatches of one
# sequence. There are 8× more point-to-point messages, each with a fixed launch cost and latency.
# First measure $t_f + t_b$ of one stage at microbatch sizes 1 and 8 and compare the predicted
# steps, $263\,(t_f + t_b)_{b=1}$ against $39\,(t_f + t_b)_{b=8}$.
#
# Rubric: 1 point for judging by step time (kernel efficiency of small microbatches, with
# numbers); 1 point for memory or messages reasoned correctly and a concrete first measurement.

# %% [markdown]
# ## Takeaways
#
# - A balanced fill-drain step takes $(m + p - 1)(t_f + t_b)$; every rank idles
#   $(p - 1)(t_f + t_b)$ of it.
# - Latency adds $2(p - 1)\delta$ to GPipe's step, whatever $m$, if receives are posted ahead.
# - More microbatches shrink the bubble only while they stay efficient and their activations fit:
#   fill-drain stashes all $m$ on every stage.
# - The trap: "the bubble" is two numbers. The elapsed idle fraction $(p-1)/(m+p-1)$ divides by
#   the step, the overhead $(p-1)/m$ (Megatron-LM's "bubble time fraction") by ideal compute:
#   27.3 % and 37.5 % describe one pipeline. Ask for the denominator before you compare.

# %% [markdown]
# ## Going further (optional, ungraded)
#
# The evidence behind section 4's caveat, and three things the sources say that the lesson does
# not need.
#
# - Why receives matter for section 4: NCCL point-to-point is two-sided, the peer must call
#   `ncclRecv` (NCCL User Guide, "Point-to-point communication"), and PyTorch's `ScheduleGPipe`
#   (`torch.distributed.pipelining`) posts the receive for microbatch $i$ just before that
#   microbatch's forward and waits on it at once.
# - GPipe's rule of thumb is measured, not derived: "we found the bubble overhead to be
#   negligible when $M \ge 4 \times K$", which the authors say holds "partly because
#   re-computation during the backward pass can be scheduled earlier" (Huang et al. 2019, §2.3).
#   The balanced model at $m = 4p$, $p = 4$ still gives idle $3/19 \approx 16\,\%$.
# - The two definitions blur even inside one paper: Narayanan et al. (2021) caption their Fig. 6,
#   which plots $(p - 1)/m$, "fraction of time spent idling due to pipeline flush".
# - Narayanan et al. (2021, §3.4, Eq. 1) choose the microbatch size $b$ with this lesson's model:
#   a batch of $b'$ sequences per pipeline computes for $(b'/b + p - 1)\,(t_f(b) + t_b(b))$, so a
#   larger $b$ buys faster kernels with fewer microbatches and a larger bubble.
