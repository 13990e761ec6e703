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
# section 2. Python and numpy at the level of a list comprehension and an array slice.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
# %matplotlib inline
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import PercentFormatter

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
from course_lib.figures.pipeline import SCHEDULE_COLOURS, schedule_grid
from course_lib.memory import activation_bytes_per_layer
from course_lib.pipeline import gpipe, one_f_one_b, simulate

rng = np.random.default_rng(2)  # the course's convention; nothing in this lesson is random

# The worked example: 4 balanced stages, 8 microbatches, backward twice the forward.
num_stages, num_microbatches = 4, 8
forward_time, backward_time = 1.0e-3, 2.0e-3  # seconds per microbatch per stage

# %% [markdown]
# ## 1. Fill-drain runs every forward, then every backward
#
# A pipeline cuts the model into $p$ stages, one per rank, and the batch into $m$ microbatches.
# The fill-drain schedule of GPipe (Huang et al. 2019, §2.2, Fig. 2c) sends every microbatch's forward down
# the pipeline, then every backward back up, then steps the optimizer once the pipeline is empty
# (a *flush*). With balanced stages a microbatch costs $t_f$ forward and $t_b$ backward on every
# stage. Take $t_b \approx 2t_f$: the backward computes gradients for both the inputs and the
# weights, each about one forward's work (Narayanan et al. 2021 assume the same in their Fig. 3).
#
# In `course_lib` a schedule is data: each rank's ordered list of actions. `F(s1,m3)` is the
# forward of microbatch 3 on stage 1.

# %%
schedule = gpipe(num_stages, num_microbatches)
print(schedule)

# %% [markdown]
# `simulate` runs the lists: an action starts when its rank is free and its inputs exist (a
# forward needs the previous stage's forward of the same microbatch, a backward needs its own
# forward and the next stage's backward). `schedule_grid` draws the result; the hatching marks
# where each rank waits.

# %%
timeline = simulate(schedule, forward_time, backward_time)
p, m, t_f, t_b = num_stages, num_microbatches, forward_time, backward_time
T = timeline.makespan

ax = schedule_grid(timeline)
for s in range(p):  # where rank s waits: s·t_f, then (p - 1 - s)(t_f + t_b), then s·t_b
    waits = [(0, s * t_f), ((m + s) * t_f, (p - 1 - s) * (t_f + t_b)), (T - s * t_b, s * t_b)]
    ax.broken_barh(waits, (s - 0.4, 0.8), facecolors="none", edgecolors="grey", hatch="///", lw=0)
tag = dict(ha="center", va="center", fontweight="bold", bbox=dict(fc="white", ec="none"))
ax.text(1.5 * t_f, p - 1, "fill", **tag)
ax.text(m * t_f + (p - 1) * (t_f + t_b) / 2, 0, "drain F · fill B", **tag)
ax.text(T - 1.5 * t_b, p - 1, "drain", **tag)
plt.show()

# %% [markdown]
# Read the grid row by row (rank 0 on top). The blue staircase moves down one rank per $t_f$:
# microbatch $j$ reaches stage $s$ at time $(s + j)\,t_f$. Grey is idle, in three triangles:
# - **fill** (bottom left): rank $s$ waits $s\,t_f$ for its first input;
# - **drain F · fill B** (top middle): rank $s$ has finished its forwards and waits
#   $(p - 1 - s)(t_f + t_b)$ for the last forward to reach the end and its gradient to come back;
# - **drain** (bottom right): rank $s$ finishes $s\,t_b$ before rank 0 does.
#
# Add them up: every rank idles $s\,t_f + (p-1-s)(t_f+t_b) + s\,t_b = (p-1)(t_f+t_b)$, here
# 9 ms — the same amount on every rank, only in different places.

# %% [markdown]
# ## 2. A fill-drain step takes (m + p − 1)(t_f + t_b)
#
# Follow one chain of actions. Microbatch 0's forward takes $p - 1$ slots to reach the last stage,
# which then runs its $m$ forwards back to back: the last forward leaves the pipeline after
# $m + p - 1$ forward slots. The last stage starts its backwards at once (they need only its own
# forwards), runs $m$ of them back to back, and the last microbatch's gradient climbs $p - 1$
# stages: $m + p - 1$ backward slots. No action in the chain waits, so it spans the whole step:
#
# $$T_{\text{fill-drain}} = (m + p - 1)\,(t_f + t_b)$$
#
# where $p$ is `num_stages`, $m$ is `num_microbatches`, and $t_f$, $t_b$ are the forward and
# backward time of one microbatch on one stage: the ideal $m(t_f + t_b)$ plus the bubble
# $(p - 1)(t_f + t_b)$ that Narayanan et al. (2021, §2.2.1) count. The chain is the step's
# critical path (cost01):

# %%
chain = (
    [("F", s, 0) for s in range(p - 1)]  # microbatch 0 down to the last stage
    + [("F", p - 1, j) for j in range(m)]  # the last stage's m forwards
    + [("B", p - 1, j) for j in range(m)]  # the last stage's m backwards
    + [("B", s, m - 1) for s in range(p - 2, -1, -1)]  # the last gradient back up
)
on_chain = timeline.events.set_index(["kind", "stage", "microbatch"]).loc[chain].reset_index()
on_chain["width"] = on_chain["end"] - on_chain["start"]

ax = schedule_grid(timeline, title=f"The critical path: {len(chain)} actions back to back")
for boxes in ax.collections:  # fade everything but the idle background
    boxes.set_alpha(1.0 if boxes.get_gid().endswith("idle") else 0.35)
for (kind, s), group in on_chain.groupby(["kind", "stage"]):  # redraw the chain on top
    ax.broken_barh(
        group[["start", "width"]].to_numpy(),
        (s - 0.4, 0.8),
        zorder=2,
        facecolors=SCHEDULE_COLOURS[kind],
        edgecolors="black",
        linewidths=1.5,
    )
ax.set_ylim(p + 0.3, -0.5)  # room below the last rank for the two spans
for x0, x1, what in [(0, (m + p - 1) * t_f, "forwards"), ((m + p - 1) * t_f, T, "backwards")]:
    ax.annotate("", xy=(x0, p - 0.05), xytext=(x1, p - 0.05), arrowprops=dict(arrowstyle="<->"))
    label = f"m + p − 1 = {m + p - 1} {what}: {(x1 - x0) * 1e3:g} ms"
    ax.text((x0 + x1) / 2, p, label, ha="center", va="center", bbox=dict(fc="white", ec="none"))
plt.show()

# %% [markdown]
# The outlined boxes are the chain: a staircase down, two runs along the last rank, a staircase
# back up. Eleven forwards of 1 ms and eleven backwards of 2 ms: 33 ms. The closed form and the
# simulator agree:

# %%
closed_form = (m + p - 1) * (t_f + t_b)
print(f"closed form (m + p - 1)(t_f + t_b) = {closed_form * 1e3:.1f} ms")
print(f"simulate(gpipe(4, 8), ...)          = {timeline.makespan * 1e3:.1f} ms")

# %% [markdown]
# ## 3. "The bubble" is two different numbers
#
# Each rank is busy $t_{id} = m(t_f + t_b)$ — the *ideal* step time, what the step would take
# with no pipeline bubble — and idle for the rest of the step, $t_{pb} = T - t_{id}$, the
# *bubble time*: $(p - 1)(t_f + t_b)$ here. Two ratios of these are both called "the bubble":
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
busy = timeline.busy  # seconds of work per rank: m (t_f + t_b) on every rank
idle_fraction = (p * T - busy.sum()) / (p * T)  # idle rank-time / total rank-time
overhead = (T - busy.max()) / busy.max()  # bubble time / ideal compute time
print(f"busy per rank {busy * 1e3} ms, step {T * 1e3:.0f} ms")
print(
    f"elapsed idle fraction {idle_fraction:.4f}, (p - 1)/(m + p - 1) = {(p - 1) / (m + p - 1):.4f}"
)
print(f"overhead vs ideal     {overhead:.4f}, (p - 1)/m         = {(p - 1) / m:.4f}")

# %%
m_values = range(1, 129)
fig, (ax_idle, ax_over) = plt.subplots(1, 2, figsize=(10, 4), sharey=True, layout="constrained")
for p_, colour in [(4, "#0072B2"), (8, "#D55E00"), (16, "#CC79A7")]:
    idle = [(p_ - 1) / (k + p_ - 1) for k in m_values]
    overhead = [(p_ - 1) / k for k in m_values]
    ax_idle.plot(m_values, idle, color=colour, lw=2)
    ax_over.plot(m_values, overhead, color=colour, lw=2, label=f"p = {p_}")
    for k in (2, 8, 32, 128):  # the simulator, as circles on the curves
        run = simulate(gpipe(p_, k), forward_time, backward_time)
        ax_idle.plot(k, run.idle_fraction, "o", color=colour, mfc="white")
        ax_over.plot(k, run.overhead, "o", color=colour, mfc="white")
ax_over.plot([], [], "o", color="grey", mfc="white", label="simulate()")
for ax, value, y in [(ax_idle, "3/11 = 27.3 %", 3 / 11), (ax_over, "3/8 = 37.5 %", 3 / 8)]:
    ax.annotate(f"p = 4, m = 8:\n{value}", (8, y), (1.3, 0.08), arrowprops=dict(arrowstyle="->"))
    ax.set(xscale="log", xlim=(1, 128), ylim=(0, 1), xlabel="num_microbatches m")
    ax.set_xticks([1, 2, 4, 8, 16, 32, 64, 128], ["1", "2", "4", "8", "16", "32", "64", "128"])
    ax.minorticks_off()
    ax.grid(alpha=0.3)
ax_idle.set_title("elapsed idle fraction (p − 1)/(m + p − 1)", loc="left")
ax_over.set_title("overhead vs ideal compute (p − 1)/m", loc="left")
ax_idle.yaxis.set_major_formatter(PercentFormatter(1.0))
ax_over.legend(frameon=False)
plt.show()

# %% [markdown]
# Same colour, same $p$. The left curves never reach 100 %; the right ones leave the plot when
# $m < p - 1$, where the bubble lasts longer than the work. At every point the overhead is the
# larger number, and the gap is widest where pipelines actually run, at $m$ of a few $p$. The
# circles are `simulate()`: the formulas are exact for balanced stages.

# %% [markdown]
# ## 4. More microbatches shrink the bubble and stash more activations
#
# Raising $m$ is the obvious cure, and it is not free. A stage keeps each microbatch's
# activations from its forward until its backward (a *stash*). Under fill-drain every forward
# runs before any backward, so just before the first backward all $m$ stashes are live:
# `Timeline.in_flight(stage)` counts them over time.

# %%
times, stashed = timeline.in_flight(0)
print("time (ms):", np.round(times * 1e3, 1))
print("stashed:  ", stashed)
print("peak stashed microbatches per stage:", timeline.peak_in_flight)

# %% [markdown]
# In bytes: a transformer layer with hidden size 4096, 32 heads, sequence length 2048 and one
# sequence per microbatch stashes $34\,sbh \approx 285$ MB in 16-bit with selective
# recomputation (Korthikanti et al. 2022, Table 2; cost05 derives it). With 8 layers per stage,
# one microbatch stashes 2.3 GB on a stage, and $m = 32$ microbatches stash 73 GB — an 80 GB
# accelerator is full before the weights and optimizer state arrive.
#
# Megatron-LM replaces fill-drain by 1F1B (PipeDream-Flush): after a short warm-up each stage
# alternates one forward and one backward. "The time spent in the bubble is the same for this new
# schedule", but it "requires activations to be stashed for $p$ or fewer microbatches (compared to
# $m$ microbatches for the GPipe schedule)" (Narayanan et al. 2021, §2.2.1): $\min(m, p - s)$ on
# stage $s$. pipe03 builds it; here is the preview.

# %%
stash_bytes = 8 * activation_bytes_per_layer(2048, 1, 4096, 32, recompute="selective")
runs = {"GPipe": timeline, "1F1B": simulate(one_f_one_b(p, m), forward_time, backward_time)}

fig, ax = plt.subplots(figsize=(10, 3.2), layout="constrained")
for (name, run), colour in zip(runs.items(), ["#0072B2", "#D55E00"], strict=True):
    t, count = run.in_flight(0)
    label = f"{name}: step {run.makespan * 1e3:.0f} ms, peak {count.max()} microbatches"
    ax.step(t * 1e3, count, where="post", color=colour, lw=2.2, label=label)
ax.set(xlabel="time (ms)", ylabel="stashed microbatches", xlim=(0, T * 1e3), ylim=(0, m + 1))
to_gb = (lambda n: n * stash_bytes / 1e9, lambda gb: gb * 1e9 / stash_bytes)
ax.secondary_yaxis("right", functions=to_gb).set_ylabel("GB at 2.3 GB each")
ax.grid(alpha=0.3)
ax.legend(frameon=False, loc="upper right")
ax.set_title("Activations stashed on stage 0, p = 4, m = 8", loc="left")
plt.show()
print(
    "peak stashed per stage: GPipe",
    runs["GPipe"].peak_in_flight,
    "1F1B",
    runs["1F1B"].peak_in_flight,
)

# %% [markdown]
# Both schedules end at 33 ms; GPipe holds 8 stashes (18 GB) on stage 0 for 12 ms, 1F1B never
# more than 4 (9 GB). Under fill-drain, memory grows with $m$ at a fixed microbatch size. Keeping
# the batch and cutting it into more, smaller microbatches does not help either: GPipe still
# stashes the whole batch, and smaller microbatches run less efficient kernels (Narayanan et al.
# 2021, Fig. 7: up to 1.3× per-GPU throughput from a larger microbatch).

# %% [markdown]
# ## 5. Point-to-point latency stretches the fill and the drain
#
# Every hand-off between stages is a message: activations go down, gradients come up, and each
# arrives $\delta$ after it is sent. The forward of microbatch $j$ on stage $s$ now starts at
# $s\,(t_f + \delta) + j\,t_f$: the first microbatch pays $\delta$ at each of the $p - 1$ hops,
# and every later one arrives while its stage is still busy with the one before. The backward
# climbs the same way. So
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

# %%
latencies = np.linspace(0.0, 1.0e-3, 11)
closed = [((m + p - 1) * (t_f + t_b) + 2 * (p - 1) * d) * 1e3 for d in latencies]
fig, ax = plt.subplots(figsize=(8, 3.6), layout="constrained")
ax.plot(latencies * 1e3, closed, lw=2, label="closed form (m + p − 1)(t_f + t_b) + 2(p − 1)δ")
for generator, marker, colour in [(gpipe, "o", "#1f77b4"), (one_f_one_b, "s", "#D55E00")]:
    spans = [simulate(generator(p, m), t_f, t_b, p2p_latency=d).makespan * 1e3 for d in latencies]
    label = f"simulate({generator.__name__}({p}, {m}), …)"
    ax.plot(latencies * 1e3, spans, marker, color=colour, mfc="white", label=label)
ax.set(xlabel="per-hop latency δ (ms)", ylabel="step time (ms)")
ax.grid(alpha=0.3)
ax.legend(frameon=False)
ax.set_title("Latency adds 2(p − 1) = 6 ms per ms of δ to GPipe", loc="left")
plt.show()

# %% [markdown]
# The GPipe circles sit on the line: 6 ms of step time per ms of latency, for any $m$. The 1F1B
# squares leave it as soon as $\delta > 0$: in 1F1B's steady state each forward–backward pair
# waits for its neighbours' messages, so $\delta$ is paid again and again, not only in the fill
# and the drain. "The same bubble as GPipe" holds at zero latency only; pipe03 weighs that trade.

# %% [markdown]
# ## Explore
#
# The explorer simulates GPipe or 1F1B with $t_f = 1$ ms, $t_b = 2$ ms and shows the grid, the
# stashes on stage 0, and the closed form next to the simulator. Try:
# - Start at $p = 4$, $m = 8$ and drag $m$ up to 64: the idle fraction falls like
#   $(p-1)/(m+p-1)$ while the stash panel climbs to $m$ — every point of idle you remove costs a
#   microbatch of activations.
# - Set $p = 8$, $m = 32$ and toggle 1F1B: makespan and idle fraction do not move; the peak stash
#   on stage 0 drops from 32 to 8.
# - Back on GPipe, drag the latency to 0.5 ms: the staircases get steeper and the makespan row
#   grows by $2(p-1)\delta$, still equal to the simulator. Toggle 1F1B: the "agree" column turns
#   to "no".
# - Set $p = 16$, $m = 16$: half the rank-time is idle. How large must $m$ be to get below 20 %?

# %%
fill_drain_explorer()

# %% [markdown]
# ## Exercises
#
# Answer in the cells marked `YOUR CODE HERE`, then run the grade cell below each: its visible
# checks give quick feedback; hidden tests check more cases when the notebook is graded. The
# formulas are yours to write: while a grade cell calls your function, it disables
# `course_lib`'s simulator and closed forms.
#
# ### Exercise 1 — Implement the fill-drain makespan (2 points)
#
# Write `fill_drain_makespan_impl(num_stages, num_microbatches, forward_time, backward_time)`: the
# makespan in seconds (a float) of a fill-drain pipeline with balanced stages and no latency.


# %% nbgrader={"grade": false, "grade_id": "makespan_impl_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def fill_drain_makespan_impl(
    num_stages: int, num_microbatches: int, forward_time: float, backward_time: float
) -> float:
    """Makespan (s) of a balanced fill-drain (GPipe) pipeline without latency."""
    ### BEGIN SOLUTION
    return (num_microbatches + num_stages - 1) * (forward_time + backward_time)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "makespan_impl_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 1: fill_drain_makespan_impl(p, m, t_f, t_b) in seconds, without course_lib's routines."""
import course_lib.pipeline as course_pipeline

routines = ("fill_drain_makespan", "fill_drain_idle_fraction", "fill_drain_overhead", "simulate")
no_delegation = [(course_pipeline, name) for name in routines]
with forbid(*no_delegation, exercise="Exercise 1"):
    small_case = fill_drain_makespan_impl(3, 4, 1.0e-3, 2.0e-3)
check_float(
    "fill_drain_makespan_impl(3, 4, 1 ms, 2 ms)",
    small_case,
    0.018,
    unit="s",
    known_wrong={
        0.021: "(m + p)(t_f + t_b): one slot too many",
        0.012: "m(t_f + t_b): the ideal compute, without fill and drain",
        0.006: "(m + p − 1)·t_f: the backwards are missing",
    },
)
### BEGIN HIDDEN TESTS
makespan_cases = {  # (p, m, t_f, t_b) -> makespan (s), computed once with simulate(gpipe(p, m), ...)
    (4, 8, 1.0e-3, 2.0e-3): 0.033,
    (6, 12, 0.5e-3, 1.2e-3): 0.0289,
    (8, 3, 2.0e-3, 4.0e-3): 0.06,
    (5, 1, 1.0e-3, 3.0e-3): 0.02,
    (1, 5, 1.0e-3, 2.0e-3): 0.015,
    (16, 64, 0.8e-3, 1.7e-3): 0.1975,
}
with forbid(*no_delegation, exercise="Exercise 1 (hidden cases)"):
    makespan_answers = {case: fill_drain_makespan_impl(*case) for case in makespan_cases}
for (p_, m_, tf_, tb_), expected in makespan_cases.items():
    check_float(
        f"fill_drain_makespan_impl({p_}, {m_}, {tf_}, {tb_})",
        makespan_answers[(p_, m_, tf_, tb_)],
        expected,
        unit="s",
        known_wrong={
            p_ * m_ * (tf_ + tb_): "p·m·(t_f + t_b): every stage's work in turn, no pipelining",
            (m_ + p_) * (tf_ + tb_): "(m + p)(t_f + t_b): one slot too many",
            (m_ + 2 * p_ - 2) * (tf_ + tb_): "(m + 2(p − 1))(t_f + t_b): the bubble counted twice",
            m_ * (tf_ + tb_): "m(t_f + t_b): the ideal compute, without fill and drain",
            (m_ + p_ - 1) * tf_ + m_ * tb_: "the fill counted for the forwards only",
            (m_ + p_ - 1) * tf_: "(m + p − 1)·t_f: the backwards are missing",
        },
    )
### END HIDDEN TESTS
passed("Exercise 1")

# %% [markdown]
# ### Exercise 2 — The two bubbles of a profiled step (2 points)
#
# A profile of a balanced fill-drain pipeline with $p = 6$ stages and $m = 12$ microbatches
# shows $t_f = 0.8$ ms and $t_b = 1.6$ ms per microbatch on every stage, and a step of 42.3 ms:
# 1.5 ms more than section 2's formula, because messages between stages take time. From these
# measurements, set `profiled_idle_fraction` to the step's elapsed idle fraction and
# `profiled_overhead` to its overhead relative to ideal compute, both floats (a fraction: 0.25
# means 25 %). Three significant figures are enough.

# %% nbgrader={"grade": false, "grade_id": "two_bubbles_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
profiled_step = 42.3e-3
ideal_compute = 12 * (0.8e-3 + 1.6e-3)  # every rank's busy time
profiled_idle_fraction = (profiled_step - ideal_compute) / profiled_step
profiled_overhead = (profiled_step - ideal_compute) / ideal_compute
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "idle_fraction_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 2a: the elapsed idle fraction of the profiled step (a fraction, 3 significant figures)."""
check_range(
    "profiled_idle_fraction", profiled_idle_fraction, 0.0, 1.0, what="a fraction of rank-time"
)
### BEGIN HIDDEN TESTS
check_float(  # 1 - 12 (0.8 + 1.6) ms / 42.3 ms = 13.5 / 42.3
    "profiled_idle_fraction",
    profiled_idle_fraction,
    13.5 / 42.3,
    rtol=2e-3,
    known_wrong={
        13.5 / 28.8: "the overhead relative to ideal compute, the other 'bubble'",
        5 / 17: "(p − 1)/(m + p − 1), the formula without latency, not the profiled step",
        12.0 / 42.3: "(p − 1)(t_f + t_b) over the step: the bubble without its latency",
        1 - 9.6 / 42.3: "an ideal compute of m·t_f: the backwards are missing",
    },
)
### END HIDDEN TESTS
passed("Exercise 2a")

# %% nbgrader={"grade": true, "grade_id": "overhead_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 2b: the overhead relative to ideal compute of the profiled step (3 significant figures)."""
check_range("profiled_overhead", profiled_overhead, 0.0, 5.0, what="a fraction, not a percentage")
### BEGIN HIDDEN TESTS
check_float(  # (42.3 - 28.8) ms / 28.8 ms
    "profiled_overhead",
    profiled_overhead,
    13.5 / 28.8,
    rtol=2e-3,
    known_wrong={
        13.5 / 42.3: "the elapsed idle fraction, the other 'bubble'",
        5 / 12: "(p − 1)/m, the formula without latency, not the profiled step",
        42.3 / 28.8: "step / ideal compute: the overhead is that ratio minus 1",
        42.3 / 9.6 - 1: "an ideal compute of m·t_f: the backwards are missing",
    },
)
### END HIDDEN TESTS
passed("Exercise 2b")

# %% [markdown]
# ### Exercise 3 — Fewest microbatches for an idle target (2 points)
#
# Write `min_microbatches(num_stages, max_idle_percent)`: the smallest number of microbatches
# $m \ge 1$ for which a balanced fill-drain pipeline without latency has an elapsed idle
# fraction strictly below `max_idle_percent` percent (an int from 1 to 99). Return an int. Mind
# the boundary: where the idle fraction equals the target, that $m$ is not enough. Compare
# exactly, in integers, not with floats that may round your way.


# %% nbgrader={"grade": false, "grade_id": "min_microbatches_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def min_microbatches(num_stages: int, max_idle_percent: int) -> int:
    """Smallest m with (p - 1)/(m + p - 1) < max_idle_percent / 100 (balanced fill-drain)."""
    ### BEGIN SOLUTION
    # 100 (p - 1) < k (m + p - 1)  <=>  m > (p - 1)(100 - k) / k
    return (num_stages - 1) * (100 - max_idle_percent) // max_idle_percent + 1
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "min_microbatches_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 3: min_microbatches(p, k), the smallest m with idle fraction < k % (an int)."""
import course_lib.pipeline as course_pipeline

routines = ("fill_drain_makespan", "fill_drain_idle_fraction", "fill_drain_overhead", "simulate")
no_delegation = [(course_pipeline, name) for name in routines]
with forbid(*no_delegation, exercise="Exercise 3"):
    small_case = min_microbatches(4, 40)
check_type("min_microbatches(4, 40)", small_case, int)
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
}
with forbid(*no_delegation, exercise="Exercise 3 (hidden cases)"):
    fewest_answers = {case: min_microbatches(*case) for case in fewest_cases}
for (p_, k_), expected in fewest_cases.items():
    got = fewest_answers[(p_, k_)]
    check_type(f"min_microbatches({p_}, {k_})", got, int)
    check_int(
        f"min_microbatches({p_}, {k_})",
        got,
        expected,
        known_wrong={
            expected - 1: f"idle ≤ {k_} % — at m = {expected - 1} the idle fraction is not below",
            100 * (p_ - 1) // k_ + 1: "the overhead (p − 1)/m, not the elapsed idle fraction",
            p_ * (100 - k_) // k_ + 1: "p/(m + p): p hops between p stages, not p − 1",
            4 * p_: "GPipe's rule of thumb m ≥ 4p",
        },
    )
### END HIDDEN TESTS
passed("Exercise 3")

# %% [markdown]
# ### Exercise 4 — Makespan over links of different latency (2 points)
#
# Real pipelines cross links of different speed: eight stages on two 4-GPU nodes make six hops
# inside a node and one, between stages 3 and 4, over the network. Write
# `fill_drain_makespan_hops(num_microbatches, forward_time, backward_time, hop_latencies)`: the
# makespan in seconds (a float) of a balanced fill-drain pipeline whose hop from stage $s$ to
# $s + 1$ delivers each message `hop_latencies[s]` seconds after it is sent, in both directions.
# The pipeline has `len(hop_latencies) + 1` stages; an empty list is a single stage. The two-node
# example (synthetic numbers) is `[0.05e-3] * 3 + [0.4e-3] + [0.05e-3] * 3`. Extend the argument
# of section 5.


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


# %% nbgrader={"grade": true, "grade_id": "latency_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 4: fill_drain_makespan_hops(m, t_f, t_b, hop_latencies) in seconds."""
import course_lib.pipeline as course_pipeline

routines = ("fill_drain_makespan", "fill_drain_idle_fraction", "fill_drain_overhead", "simulate")
no_delegation = [(course_pipeline, name) for name in routines]
with forbid(*no_delegation, exercise="Exercise 4"):
    small_case = fill_drain_makespan_hops(4, 1.0e-3, 2.0e-3, [0.1e-3, 0.2e-3])
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
### BEGIN HIDDEN TESTS
two_nodes = [0.05e-3] * 3 + [0.4e-3] + [0.05e-3] * 3
hop_cases = {  # (m, t_f, t_b, hops) -> makespan (s), computed once with
    # simulate(gpipe(len(hops) + 1, m), t_f, t_b, p2p_latency=list(hops)).makespan
    (32, 0.6e-3, 1.2e-3, tuple(two_nodes)): 0.0716,
    (32, 0.6e-3, 1.2e-3, (50e-6,) * 7): 0.0709,
    (5, 1.0e-3, 2.0e-3, ()): 0.015,
    (3, 1.0e-3, 2.0e-3, (0.5e-3,)): 0.013,
    (16, 0.5e-3, 1.0e-3, (0.02e-3,) * 3 + (0.3e-3,) + (0.02e-3,) * 3 + (0.3e-3,)): 0.03744,
}
with forbid(*no_delegation, exercise="Exercise 4 (hidden cases)"):
    hop_answers = {case: fill_drain_makespan_hops(*case[:3], list(case[3])) for case in hop_cases}
for (m_, tf_, tb_, hops_), expected in hop_cases.items():
    p_ = len(hops_) + 1
    compute = (m_ + p_ - 1) * (tf_ + tb_)
    wrong = {
        compute + sum(hops_): "each hop's latency paid once: the gradients cross it again",
        compute: "no latency at all",
        compute + 2 * m_ * sum(hops_): "every microbatch pays every hop: in the steady state the "
        "messages hide behind compute",
        compute + 2 * (p_ - 1) * max(hops_, default=0.0): "the slowest hop's latency on every hop",
        expected - (tf_ + tb_): "len(hop_latencies) stages: p − 1 hops link p stages",
    }
    check_float(
        f"fill_drain_makespan_hops({m_}, {tf_}, {tb_}, {list(hops_)})",
        hop_answers[(m_, tf_, tb_, hops_)],
        expected,
        unit="s",
        known_wrong={value: why for value, why in wrong.items() if abs(value - expected) > 1e-12},
    )
### END HIDDEN TESTS
passed("Exercise 4")

# %% [markdown]
# ### Exercise 5 — Which bubble is 37.5 %? (1 point)
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
"""Exercise 5: which definition gives a 37.5 % bubble at p = 4, m = 5 ("idle", "overhead", "neither")."""
check_type("bubble_definition", bubble_definition, str)
### BEGIN HIDDEN TESTS
check_choice(
    "bubble_definition",
    bubble_definition,
    "idle",
    {
        "idle": "the elapsed idle fraction, (p − 1)/(m + p − 1) = 3/8 = 37.5 % here",
        "overhead": "the overhead relative to ideal compute, (p − 1)/m = 3/5 = 60 % here "
        "(37.5 % is the overhead of section 3's m = 8, not of m = 5)",
        "neither": "neither definition gives 37.5 % — yet (p − 1)/(m + p − 1) = 3/8 does",
    },
)
### END HIDDEN TESTS
passed("Exercise 5")

# %% [markdown]
# ### Exercise 6 — Explained answer: 256 microbatches (2 points, graded by hand)
#
# Your pipeline runs $p = 8$ stages with $m = 32$ microbatches of 8 sequences each (a batch of 256
# sequences). A colleague wants the elapsed idle fraction under 5 % and proposes $m = 256$
# microbatches of one sequence each. What does that buy, what does it cost, and what would you
# measure first? Answer in four to six sentences with numbers from this lesson.

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
# - A balanced fill-drain step takes $(m + p - 1)(t_f + t_b)$: every rank idles
#   $(p - 1)(t_f + t_b)$, in the fill, in the middle and in the drain.
# - Point-to-point latency is paid on the $p - 1$ hops of the fill and of the drain:
#   $+\,2(p - 1)\delta$ for GPipe, whatever $m$.
# - More microbatches shrink the bubble only while they stay efficient and their activations fit:
#   fill-drain stashes all $m$ on every stage, 1F1B at most $p - s$ (pipe03).
# - The trap: "the bubble" is two numbers. The elapsed idle fraction $(p-1)/(m+p-1)$ divides by
#   the step time; the overhead $(p-1)/m$ (Megatron-LM's "bubble time fraction") divides by ideal
#   compute. 27.3 % and 37.5 % describe the same pipeline; ask for the denominator before you
#   compare.

# %% [markdown]
# ## Going further (optional, ungraded)
#
# Three things the sources say that the lesson does not need.
#
# - GPipe's rule of thumb is measured, not derived: "we found the bubble overhead to be
#   negligible when $M \ge 4 \times K$", which the authors say holds "partly because
#   re-computation during the backward pass can be scheduled earlier" (Huang et al. 2019, §2.3).
#   The balanced model at $m = 4p$, $p = 4$ still gives idle $3/19 \approx 16\,\%$.
# - The two definitions blur even inside one paper: Narayanan et al. (2021) caption their Fig. 6,
#   which plots $(p - 1)/m$, "fraction of time spent idling due to pipeline flush".
# - Narayanan et al. (2021, §3.4, Eq. 1) choose the microbatch size $b$ with this lesson's model:
#   a batch of $b'$ sequences per pipeline computes for $(b'/b + p - 1)\,(t_f(b) + t_b(b))$, so a
#   larger $b$ buys faster kernels with fewer microbatches and a larger bubble.
