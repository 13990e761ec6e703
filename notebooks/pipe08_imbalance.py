# %% [markdown]
# # pipe08 · Stage imbalance and repartitioning
#
# **Objective.** Locate the dependency critical path and amortize a safe partition change rather
# than treating average stage cost as throughput.
#
# **Time:** 29 min · **Level:** advanced
#
# You will be able to
# - compute GPipe's step with unequal stages exactly, and say when "sum + (m − 1) × the slowest
#   stage" is wrong;
# - walk a trace's critical path and name the stage that sets the step;
# - price a repartition against its gain per step, and say when it is safe.
#
# **What you need:** pipe01 (stages as layer ranges), pipe02 (GPipe's step), pipe03 (1F1B);
# Python with dicts, loops and pandas.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
# %matplotlib inline
import math

import matplotlib.pyplot as plt
import numpy as np

from course_lib.checks import (
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
from course_lib.explorers.imbalance import imbalance_explorer
from course_lib.figures.imbalance import break_even_curve, critical_path_grid, stage_time_bars
from course_lib.pipeline import gpipe, one_f_one_b, simulate
from course_lib.pipeline.imbalance import (
    bottleneck_stage,
    busiest_stage,
    gpipe_makespan,
    is_flush,
    jittered_timeline,
    live_stashes,
    makespan_lower_bound,
    slowest_stage_makespan,
)

rng = np.random.default_rng(8)  # the course's convention; the traces below have their own seeds
ms = 1e-3

# Synthetic "measured" per-stage costs (seconds per microbatch): stage 1 recomputes its
# activations in the backward (pipe05), stage 3 holds the output layer and the loss.
forward_cost = np.array([1.00, 1.05, 0.95, 1.40]) * ms
backward_cost = np.array([2.00, 3.15, 1.90, 2.30]) * ms
num_microbatches = 8

# Exercise 2: a synthetic profile of 1F1B on 5 stages, 5 microbatches, durations jittered ±5 %.
small_trace = (
    jittered_timeline(
        one_f_one_b(5, 5),
        np.array([0.9, 1.5, 1.7, 0.8, 1.6]) * ms,
        np.array([1.7, 3.2, 1.8, 3.3, 2.9]) * ms,
        jitter=0.05,
        seed=94,
    )
    .events.sort_values("start")
    .reset_index(drop=True)
)


def predecessors(events):
    """Row label -> the labels of the rows it may have waited for: its rank's previous action,
    then its dependencies (F(s, j) needs F(s − 1, j); B(s, j) needs F(s, j) and B(s + 1, j))."""
    num_stages = int(events["stage"].max()) + 1
    row_of = {(r.kind, r.stage, r.microbatch): r.Index for r in events.itertuples()}
    waits_for, last_on_rank = {}, {}
    for r in events.sort_values("start").itertuples():
        waits_for[r.Index] = [last_on_rank[r.rank]] if r.rank in last_on_rank else []
        last_on_rank[r.rank] = r.Index
        if r.kind == "F" and r.stage > 0:
            waits_for[r.Index].append(row_of[("F", r.stage - 1, r.microbatch)])
        if r.kind == "B":
            waits_for[r.Index].append(row_of[("F", r.stage, r.microbatch)])
            if r.stage < num_stages - 1:
                waits_for[r.Index].append(row_of[("B", r.stage + 1, r.microbatch)])
    return waits_for


# Exercise 3: another 1F1B pipeline (synthetic), and the layer that moves from stage 1 to stage 2.
ex3_forward = np.array([0.9, 1.5, 1.0, 1.1]) * ms
ex3_backward = np.array([1.8, 3.1, 2.0, 2.3]) * ms
ex3_microbatches = 8
layer_forward, layer_backward = 0.35 * ms, 0.70 * ms

# %% [markdown]
# ## 1. With unequal stages the step follows the critical path, not the average stage
#
# Stage $s$ takes $f_s$ per forward and $b_s$ per backward of one microbatch. The setup's costs
# are synthetic "measurements" of four stages: stage 1 recomputes activations in its backward
# (pipe05), stage 3 holds the output layer and the loss. Their mean, 3.44 ms per microbatch,
# invites pipe02's balanced formula, $(m + p - 1)\,\overline{(f + b)}$ = 37.8 ms for $m = 8$.
# The simulator disagrees:

# %%
p, m = len(forward_cost), num_microbatches
gpipe_run = simulate(gpipe(p, m), forward_cost, backward_cost)
average_estimate = (m + p - 1) * np.mean(forward_cost + backward_cost)
print(f"average-stage estimate   {average_estimate / ms:.2f} ms")
print(f"simulate(gpipe(4, 8))    {gpipe_run.makespan / ms:.2f} ms")
critical_path_grid(gpipe_run)
plt.show()

# %% [markdown]
# The outlined boxes are the **critical path**: a chain of actions, each starting the moment its
# predecessor ends, from time 0 to the step's end (cost01; Kelley and Walker 1959). It takes
# microbatch 0 down to stage 3, the slowest forward (1.40 ms), through all 8 of its forwards,
# then crosses to stage 1, the slowest backward (3.15 ms), and all 8 of its backwards. With
# GPipe's all-forwards-then-all-backwards order (Huang et al. 2019, §2.2, Fig. 2c) this holds for
# any costs, at zero latency:
#
# $$T_{\text{GPipe}} = \sum_s (f_s + b_s) + (m - 1)\,\big(\max_s f_s + \max_s b_s\big)$$
#
# Why: the forward phase's longest chain visits each stage once and spends its $m - 1$ extra
# cells on the largest $f_s$; the backward phase likewise (`pipeline/imbalance.py` derives it and
# tests it against the simulator).
#
# The tempting shortcut, $\sum_s (f_s + b_s) + (m - 1)\max_s (f_s + b_s)$, is right only when
# one stage is slowest in both directions. Here the slowest stage is stage 1 at 4.20 ms, but the
# path pays $1.40 + 3.15 = 4.55$ ms per extra microbatch:

# %%
print(f"formula              {gpipe_makespan(forward_cost, backward_cost, m) / ms:.2f} ms")
print(f"slowest-stage guess  {slowest_stage_makespan(forward_cost, backward_cost, m) / ms:.2f} ms")

# %% [markdown]
# ## 2. The bottleneck is the stage with the most time on the critical path
#
# 1F1B (pipe03; Narayanan et al. 2021, §2.2.1) interleaves each stage's forwards and backwards,
# so its idle gaps depend on the neighbours and no closed form holds under imbalance: simulate
# it. A bound holds for any F/B schedule: stage $s$ computes $m(f_s + b_s)$, starts only after
# microbatch 0 crossed stages $0..s-1$, and its last gradient must climb back through them:
#
# $$T \ge \max_s \Big[\sum_{k<s} (f_k + b_k) + m\,(f_s + b_s)\Big].$$
#
# With equal stages both sides are $(m + p - 1)(f + b)$; here they are not:

# %%
one_f_one_b_run = simulate(one_f_one_b(p, m), forward_cost, backward_cost)
lower_bound = makespan_lower_bound(forward_cost, backward_cost, m)
print(
    f"1F1B simulated {one_f_one_b_run.makespan / ms:.2f} ms, lower bound {lower_bound / ms:.2f} ms"
)
print(f"bottleneck stage {bottleneck_stage(one_f_one_b_run)}, "
      f"busiest stage {busiest_stage(one_f_one_b_run)}")  # fmt: skip
stage_time_bars(one_f_one_b_run, lower_bound)
plt.show()

# %% [markdown]
# Grey bars are each stage's busy time; vermillion its compute on the critical path. Stage 3 is
# busy 29.6 ms but has only 7.4 ms on the path; stage 1 has 25.2 ms. The **bottleneck** is the
# stage with the most time on the path: shortening its work there shortens the step, until
# another path takes over. Here it is also the busiest stage; Exercise 2 shows it need not be.
# The dashed average-stage estimate lies below the dotted lower bound, and both below the step.
# In a measured trace two stages that nearly tie on the path can swap from one step to the next
# under a few percent of jitter: check several steps, or the simulator, before acting on one.

# %% [markdown]
# ## 3. Moving a layer pays back over the remaining steps
#
# Moving layers off the bottleneck shortens the step by a *gain*
# $g = T_{\text{before}} - T_{\text{after}}$, both simulated. The price is the moved layers'
# model state crossing the link. We count all of it, as ZeRO does for mixed-precision Adam:
# $2 + 2 + 12 = 16$ bytes per parameter (fp16 weights and gradients; fp32 master weights,
# momentum and variance; Rajbhandari et al. 2020, §3.1, $K = 12$). That is an upper bound: at a
# flush the fp16 gradients are spent and the fp16 weights can be recast from the masters, so a
# lean move sends 12. Add a pause $t_{\text{pause}}$ to drain the pipeline and rebuild its
# communicators. Moving $N$ parameters over a link of $\beta$ bytes/s has paid for itself after
#
# $$n^\star = \Big\lceil \frac{16\,N / \beta + t_{\text{pause}}}{g} \Big\rceil \text{ steps};$$
#
# make the move if more steps remain. One block of a hidden-4096 GPT (201 M parameters) takes
# 0.13 s over 25 GB/s; the pause usually dominates. With a 5 s pause and a gain of 2.7 ms per
# step:

# %%
block_params = 12 * 4096**2 + 13 * 4096  # one transformer block, hidden 4096 (pipe01)
move_cost = 16 * block_params / 25e9 + 5.0  # seconds: transfer + pause
break_even_curve(move_cost, 41.3 * ms, 38.6 * ms, max_steps=3000)
plt.show()

# %% [markdown]
# The line is the time saved after $n$ steps: $-5.13$ s at first, zero after 1,900 steps. Round
# up, not down: after $\lfloor \text{cost}/g \rfloor$ steps the move has not quite paid back,
# unless the ratio is a whole number.

# %% [markdown]
# ## 4. A repartition is safe only at a flush
#
# A stage can hand its layers over only when no microbatch still needs them: no **stash** (a
# forward whose backward has not run) is live on it. Under PipeDream's asynchronous 1F1B each
# stash also pins the weight version its forward used, one version per in-flight microbatch
# (Narayanan et al. 2019, §3.3), so with no live stash no older version is needed either. Only a
# flushed schedule (GPipe, 1F1B) reaches no live stash on any stage, and only between steps. An
# idle rank is not enough: in GPipe, rank 0 idles 13.55 ms between its last forward and its first
# backward, holding all 8 stashes.

# %%
f_end = gpipe_run.events.query("rank == 0 and kind == 'F'")["end"].max()
live = live_stashes(gpipe_run, f_end + 1 * ms)  # one row per live (stage, microbatch) stash
print(f"GPipe at {(f_end + 1 * ms) / ms:.2f} ms, rank 0 idle: {(live['stage'] == 0).sum()} stashes "
      f"live on stage 0, {len(live)} on all stages")  # fmt: skip
for t in (0.0, one_f_one_b_run.makespan / 2, one_f_one_b_run.makespan):
    print(f"1F1B at {t / ms:5.2f} ms: flush = {is_flush(one_f_one_b_run, t)}")

# %% [markdown]
# PipeDream without flushes never reaches such a moment; its authors partition once, by
# profiling before training (Narayanan et al. 2019, §3.1).

# %% [markdown]
# ## Explore
#
# A GPT-like model of 14 blocks (`gpt_spec`, pipe01; formula costs, not measurements) on four
# stages, $m = 8$. The three cuts set each stage's first layer; the table compares the simulated
# step with the average-stage estimate, the shortcut, GPipe's formula and the bound, and prices
# the move from the even split (25 GB/s, 5 s pause). Try:
# - GPipe, cut 3 from 12 to 13: stage 3 (output layer and loss) hands a block to stage 2; the
#   step falls from 242.9 to 216.8 ms and the bottleneck moves to stage 1.
# - Switch to 1F1B: 215.9 ms, the best split for $m = 8$; its bottleneck, stage 2, is not the
#   busiest stage; the move pays back after 187 steps.
# - Drag cut 1 to 7: the step grows by 32 ms; the average stays at 214.1 ms.

# %%
imbalance_explorer()

# %% [markdown]
# ## Exercises
#
# Answer in the `YOUR CODE HERE` cells, then run the grade cell below each; hidden tests check
# more cases when graded. While a grade cell calls your function, the `course_lib` routines that
# would answer it are disabled.
#
# ### Exercise 1 — GPipe's step with measured stages (2 points)
#
# Write `gpipe_step(forward_cost, backward_cost, num_microbatches)`: GPipe's step in seconds (a
# float) at zero latency, for per-stage costs given as lists of seconds. The hidden tests
# include one stage, one microbatch, and stages where the slowest forward and the slowest
# backward are on different stages.


# %% nbgrader={"grade": false, "grade_id": "gpipe_step_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def gpipe_step(
    forward_cost: list[float], backward_cost: list[float], num_microbatches: int
) -> float:
    """GPipe's step (s) with unequal stages, zero latency."""
    ### BEGIN SOLUTION
    work = sum(forward_cost) + sum(backward_cost)  # one microbatch through every stage
    return work + (num_microbatches - 1) * (max(forward_cost) + max(backward_cost))
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "gpipe_step_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 1: gpipe_step(f, b, m), GPipe's step in seconds with unequal stages."""
import course_lib.pipeline as _pipeline
import course_lib.pipeline.imbalance as _imbalance
import course_lib.pipeline.interleaving as _interleaving

_names = ("gpipe_makespan", "slowest_stage_makespan", "makespan_lower_bound",
          "partition_step_time", "jittered_timeline", "critical_path", "critical_time")  # fmt: skip
_no_delegation = [(_imbalance, n) for n in _names] + [
    (_pipeline, "simulate"),
    (_pipeline, "fill_drain_makespan"),
    (_interleaving, "interleaved_makespan"),
    (_interleaving, "step_times"),
]


def _gpipe_wrong(f, b, m):
    """(value, mistake) pairs for Exercise 1's hints."""
    p, work = len(f), sum(f) + sum(b)
    slowest = max(x + y for x, y in zip(f, b, strict=True))
    return [
        (work + (m - 1) * slowest, "sum + (m − 1) × the slowest stage: that holds only when one "
         "stage has both the slowest forward and the slowest backward"),
        ((m + p - 1) * work / p, "(m + p − 1) × the average stage: imbalance ignored"),
        ((m + p - 1) * slowest, "(m + p − 1) × the slowest stage"),
        ((m + p - 1) * (max(f) + max(b)), "(m + p − 1)(max f + max b): the fill and drain run "
         "through every stage's own cost, not the slowest"),
        (work + m * (max(f) + max(b)), "m extra microbatches: the first is already in the sum"),
        (m * work, "m × the sum: no pipelining at all"),
        (work + (m - 1) * max(f), "the backwards' m − 1 extra cells are missing"),
    ]  # fmt: skip


with forbid(*_no_delegation, exercise="Exercise 1"):
    _visible = gpipe_step([1.0 * ms, 2.0 * ms, 1.5 * ms], [3.0 * ms, 2.5 * ms, 2.0 * ms], 5)
check_float(
    "gpipe_step([1, 2, 1.5] ms, [3, 2.5, 2] ms, 5)",
    _visible,
    32.0 * ms,
    unit="s",
    known_wrong=distinct_hints(
        _gpipe_wrong([1.0 * ms, 2.0 * ms, 1.5 * ms], [3.0 * ms, 2.5 * ms, 2.0 * ms], 5), 32.0 * ms
    ),
)
### BEGIN HIDDEN TESTS
_cases = [  # (f, b, m) in seconds; expected: simulate(gpipe(p, m), f, b).makespan
    ([1.0e-3, 1.05e-3, 0.95e-3, 1.4e-3], [2.0e-3, 3.15e-3, 1.9e-3, 2.3e-3], 16),
    ([0.8e-3, 1.1e-3, 0.9e-3, 1.0e-3, 0.7e-3, 1.3e-3], [2.6e-3, 2.0e-3, 1.9e-3, 2.1e-3, 1.5e-3, 2.2e-3], 12),
    ([2.0e-3], [4.5e-3], 7),
    ([1.2e-3, 0.9e-3, 1.6e-3], [2.4e-3, 3.0e-3, 2.8e-3], 1),
    ([1.0e-3, 1.0e-3], [2.0e-3, 2.0e-3], 8),
    ([0.5e-3, 1.5e-3, 0.6e-3, 0.7e-3, 0.9e-3, 0.8e-3, 0.6e-3, 0.75e-3], [1.9e-3, 1.2e-3, 1.3e-3, 1.4e-3, 1.5e-3, 1.1e-3, 1.2e-3, 1.6e-3], 32),
]  # fmt: skip
_expected = [0.082, 0.061, 0.0455, 0.0119, 0.027, 0.12295]
with forbid(*_no_delegation, exercise="Exercise 1 (hidden cases)"):
    _answers = [gpipe_step(list(f), list(b), m_) for f, b, m_ in _cases]
for (_f, _b, _m), _got, _want in zip(_cases, _answers, _expected, strict=True):
    check_float(f"gpipe_step({_f}, {_b}, {_m})", _got, _want, unit="s",
                known_wrong=distinct_hints(_gpipe_wrong(_f, _b, _m), _want))  # fmt: skip
### END HIDDEN TESTS
passed("Exercise 1")

# %% [markdown]
# ### Exercise 2 — The bottleneck stage of a trace (3 points)
#
# A profiler gives one row per action: columns `rank`, `kind` (`"F"` or `"B"`), `stage`,
# `microbatch`, `start`, `end` (seconds); stage $s$ on rank $s$, hand-offs instant. Durations vary
# as measured ones do. Write `bottleneck_from_trace(events)`: the stage (an int) with the most
# compute time on the critical path. Walk back from the action that ends last, each time to the
# predecessor that ends last, until an action has none; the setup's `predecessors(events)` maps
# each row label to its candidates (the rank's previous action and the dependencies). The hidden
# traces are GPipe and 1F1B runs of 3 to 5 stages; `small_trace` (setup) is the visible one.
# `course_lib`'s critical-path routines, its simulator and networkx's longest-path routines are
# disabled.


# %% nbgrader={"grade": false, "grade_id": "bottleneck_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def bottleneck_from_trace(events) -> int:
    """The stage with the most compute time on the trace's critical path."""
    ### BEGIN SOLUTION
    waits_for = predecessors(events)
    on_path = {}
    i = events["end"].idxmax()  # the action that ends last
    while True:
        s = int(events.at[i, "stage"])
        on_path[s] = on_path.get(s, 0.0) + events.at[i, "end"] - events.at[i, "start"]
        if not waits_for[i]:
            break
        i = max(waits_for[i], key=events["end"].get)  # the one it waited for: ends last
    return max(on_path, key=on_path.get)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "bottleneck_tests", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
"""Exercise 2: bottleneck_from_trace(events), the stage with the most compute on the critical path."""
import networkx as _nx

import course_lib.graph as _graph
import course_lib.pipeline as _pipeline
import course_lib.pipeline.imbalance as _imbalance

_names = ("critical_path", "critical_time", "bottleneck_stage", "busiest_stage", "stage_busy",
          "jittered_timeline", "is_flush", "live_stashes")  # fmt: skip
_no_delegation = (
    [(_imbalance, n) for n in _names]
    + [(_pipeline, "simulate")]
    + [(_graph, n) for n in ("critical_path", "step_time", "schedule", "slack", "what_if",
                             "path_bounds", "step_graph")]  # fmt: skip
    + [(_nx, n) for n in ("dag_longest_path", "dag_longest_path_length", "topological_sort",
                          "single_source_bellman_ford", "bellman_ford_predecessor_and_distance")]
)  # fmt: skip


def _trace_wrong(ev):
    """(value, mistake) pairs for Exercise 2's hints, from the trace itself."""
    dur = (ev["end"] - ev["start"]).to_numpy()
    p_ = int(ev["stage"].max()) + 1
    busy = np.bincount(ev["stage"].to_numpy(), weights=dur, minlength=p_)
    slow_f = ev.assign(d=dur)[ev["kind"] == "F"].groupby("stage")["d"].mean().idxmax()
    slow_b = ev.assign(d=dur)[ev["kind"] == "B"].groupby("stage")["d"].mean().idxmax()
    return [
        (int(np.argmax(busy)), "the busiest stage: busy time off the critical path does not set "
         "the step"),
        (int(slow_f), "the stage with the slowest forwards"),
        (int(slow_b), "the stage with the slowest backwards"),
        (int(ev.loc[ev["end"].idxmax(), "stage"]), "the stage of the action that ends last "
         "(B(0, m − 1) in these schedules): did your walk stop early or skip a dependency?"),
    ]  # fmt: skip


with forbid(*_no_delegation, exercise="Exercise 2"):
    _visible = bottleneck_from_trace(small_trace.copy())
check_int("bottleneck_from_trace(small_trace)", _visible, 4,
          known_wrong=distinct_hints(_trace_wrong(small_trace), 4))  # fmt: skip
### BEGIN HIDDEN TESTS
_traces = [  # (generator, f, b, m, seed): synthetic profiles, ±5 % jitter
    (one_f_one_b, [1.15, 1.58, 1.52, 1.48, 1.11], [2.41, 3.6, 2.52, 3.19, 2.08], 6, 1),
    (one_f_one_b, [1.49, 1.02, 1.16, 0.85, 0.8], [2.67, 1.98, 2.93, 2.12, 1.66], 5, 11),
    (gpipe, [0.95, 1.1, 0.83, 0.86], [1.67, 1.96, 2.02, 1.59], 7, 32),
    (one_f_one_b, [0.83, 1.34, 0.95, 1.57, 1.25], [1.81, 3.34, 1.8, 2.53, 2.27], 5, 47),
    (gpipe, [1.15, 0.85, 1.08], [2.44, 1.68, 2.52], 7, 40),
    (one_f_one_b, [1.0, 1.05, 0.95, 1.4], [2.0, 3.15, 1.9, 2.3], 8, 3),
    (one_f_one_b, [1.53, 1.27, 1.54], [3.6, 2.2, 3.46], 5, 89),
    (gpipe, [1.5, 1.8, 2.8], [2.9, 3.1, 3.2], 7, 81),  # backwards alone on the path pick stage 1
]
_events = []
for _gen, _f, _b, _m, _seed in _traces:
    _run = jittered_timeline(_gen(len(_f), _m), np.array(_f) * ms, np.array(_b) * ms, 0.05, _seed)
    _events.append((_run, _run.events.sort_values("start").reset_index(drop=True)))
with forbid(*_no_delegation, exercise="Exercise 2 (hidden cases)"):
    _answers = [bottleneck_from_trace(ev.copy()) for _, ev in _events]
for (_gen, _f, _b, _m, _seed), (_run, _ev), _got in zip(_traces, _events, _answers, strict=True):
    _want = bottleneck_stage(_run)
    _path = _imbalance.critical_path(_run)
    _backward = _path["kind"] == "B"
    _backward_only = (_path["end"] - _path["start"])[_backward].groupby(_path["stage"][_backward])
    _hints = _trace_wrong(_ev) + [(int(_backward_only.sum().idxmax()), "only the backwards "
                                   "counted; forwards on the path are compute too")]  # fmt: skip
    check_int(f"bottleneck_from_trace({_gen.__name__} trace, p = {len(_f)}, m = {_m})", _got,
              _want, known_wrong=distinct_hints(_hints, _want))  # fmt: skip
### END HIDDEN TESTS
passed("Exercise 2")

# %% [markdown]
# ### Exercise 3 — Gain from moving one layer (2 points)
#
# The setup's `ex3_forward`, `ex3_backward` (seconds, four stages) describe a 1F1B pipeline with
# `ex3_microbatches` = 8. Stage 1's last layer, costing `layer_forward` and `layer_backward`,
# moves to stage 2. Set `gain_one_layer` to the step time saved, in seconds (a float; positive
# if the step gets shorter), at zero latency.

# %% nbgrader={"grade": false, "grade_id": "gain_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
_moved = np.array([0.0, -1.0, 1.0, 0.0])
_after_f, _after_b = ex3_forward + _moved * layer_forward, ex3_backward + _moved * layer_backward
_schedule = one_f_one_b(len(ex3_forward), ex3_microbatches)
gain_one_layer = (
    simulate(_schedule, ex3_forward, ex3_backward).makespan
    - simulate(_schedule, _after_f, _after_b).makespan
)
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "gain_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 3: gain_one_layer, the 1F1B step time saved by moving the layer (seconds)."""
check_range("gain_one_layer", gain_one_layer, -0.01, 0.01,
            what="seconds per step: a few ms at most, not milliseconds as numbers")  # fmt: skip
### BEGIN HIDDEN TESTS
check_float(
    "gain_one_layer",
    gain_one_layer,
    1.7 * ms,
    unit="s",
    rtol=1e-6,
    known_wrong={
        3.85 * ms: "GPipe's gain (its formula, or the slowest-stage shortcut): 1F1B's steps "
        "come from the simulator",
        0.85 * ms: "the change of the lower bound, not of the simulated step",
        0.0: "the average stage's change: moving work does not change the average",
        -1.7 * ms: "step_after − step_before: the gain is before − after",
        1.4 * ms: "only the forward cost moved; the layer's backward moves with it",
        4.45 * ms: "the layer moved to stage 0, not to stage 2",
        6.3 * ms: "the layer left stage 1 but was not added to stage 2",
    },
)
### END HIDDEN TESTS
passed("Exercise 3")

# %% [markdown]
# ### Exercise 4 — Break-even steps (2 points)
#
# Write `break_even(num_params, link_bandwidth, pause, step_before, step_after)`: the fewest
# steps (an int) after which moving `num_params` parameters to the adjacent stage has paid for
# itself, at section 3's 16 bytes per parameter, over a link of `link_bandwidth` bytes/s; `pause`
# and the steps in seconds, the step always shorter after. The hidden tests include a cost that
# is a whole number of steps' gain.


# %% nbgrader={"grade": false, "grade_id": "break_even_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def break_even(
    num_params: float, link_bandwidth: float, pause: float, step_before: float, step_after: float
) -> int:
    """Fewest steps n with n × (step_before − step_after) ≥ the move's cost."""
    ### BEGIN SOLUTION
    cost = 16 * num_params / link_bandwidth + pause  # 2 + 2 + 12 bytes per parameter (ZeRO)
    return math.ceil(cost / (step_before - step_after))
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "break_even_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 4: break_even(N, beta, pause, before, after), an int number of steps."""
import course_lib.pipeline.imbalance as _imbalance

_no_delegation = [(_imbalance, "break_even_steps"), (_imbalance, "repartition_cost")]


def _even_wrong(n, beta, pause, before, after):
    """(value, mistake) pairs for Exercise 4's hints."""
    gain = before - after
    return [
        (math.ceil((2 * n / beta + pause) / gain), "2 bytes per parameter: the weights alone"),
        (math.ceil((4 * n / beta + pause) / gain), "4 bytes per parameter: weights and gradients "
         "without the optimizer state"),
        (math.ceil((12 * n / beta + pause) / gain), "12 bytes per parameter (a lean move): this "
         "departs from section 3's 16 B/param convention"),
        (math.ceil(16 * n / beta / gain), "no pause: the flush and restart cost time too"),
        (math.ceil((128 * n / beta + pause) / gain), "bits, not bytes, over the link"),
        (math.floor((16 * n / beta + pause) / gain), "rounded down: after that many steps the move "
         "has not yet paid back"),
        (math.floor((16 * n / beta + pause) / gain) + 1, "floor + 1: where the cost is a whole "
         "number of gains, that number of steps is enough"),
        (math.ceil((16 * n / beta + pause) / after), "the cost divided by the new step, not by the "
         "gain"),
    ]  # fmt: skip


_case = (201_379_840, 25e9, 2.5, 43.1 * ms, 41.4 * ms)
with forbid(*_no_delegation, exercise="Exercise 4"):
    _visible = break_even(*_case)
check_int("break_even(201_379_840, 25e9, 2.5, 43.1 ms, 41.4 ms)", _visible, 1547,
          known_wrong=distinct_hints(_even_wrong(*_case), 1547))  # fmt: skip
### BEGIN HIDDEN TESTS
_cases = {  # (N, beta, pause, before, after) -> ceil(cost / gain), computed with fractions
    (1.5625e9, 25e9, 3.0, 0.75, 0.5): 16,
    (201_379_840, 25e9, 3.0, 0.0431, 0.0414): 1841,
    (402_759_680, 12.5e9, 6.0, 0.2417, 0.2296): 539,
    (50_358_272, 50e9, 1.5, 0.0912, 0.0897): 1011,
    (1.6e9, 12.5e9, 0.5, 0.512, 0.4955): 155,
    (805_519_360, 25e9, 0.0, 0.3, 0.2875): 42,
}
with forbid(*_no_delegation, exercise="Exercise 4 (hidden cases)"):
    _answers = {c: break_even(*c) for c in _cases}
for _c, _want in _cases.items():
    check_int(f"break_even{_c}", _answers[_c], _want,
              known_wrong=distinct_hints(_even_wrong(*_c), _want))  # fmt: skip
### END HIDDEN TESTS
passed("Exercise 4")

# %% [markdown]
# ### Exercise 5 — When may layers move? (1 point)
#
# A four-stage job moves one layer from stage 2 to stage 3. For each moment, is the move safe?
#
# | | schedule | moment |
# |---|---|---|
# | A | GPipe | after the optimizer step, before the next step's first forward |
# | B | GPipe | rank 0 idle between its last forward and its first backward |
# | C | 1F1B | stage 3 has run its last backward of the step; stages 0–2 are still draining |
# | D | PipeDream (asynchronous 1F1B, weight stashing) | right after stage 3 applies an update |
# | E | 1F1B | every stage has run its last backward and the optimizer has stepped |
#
# Set `move_safe` to a dict mapping each letter to `"safe"` or `"unsafe"`.

# %% nbgrader={"grade": false, "grade_id": "safety_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
move_safe = {
    "A": "safe",  # a flush: no stash, one weight version
    "B": "unsafe",  # idle is not empty: rank 0 holds all m stashes; stage 2, the sender, holds some
    "C": "unsafe",  # stage 2, which sends the layer, still holds stashes its backwards need
    "D": "unsafe",  # never flushed: stashes and older weight versions are in flight
    "E": "safe",  # between steps of a flushed schedule
}
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "safety_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 5: move_safe, a dict from "A".."E" to "safe" or "unsafe"."""
check_type("move_safe", move_safe, dict)
check_names("the keys of move_safe", [str(k) for k in move_safe], list("ABCDE"))
for _key in "ABCDE":
    check_choice(f"move_safe[{_key!r}]", move_safe[_key], move_safe[_key],
                 {"safe": "", "unsafe": ""})  # fmt: skip
### BEGIN HIDDEN TESTS
_why = {
    "A": ("safe", "a stash is live; GPipe between steps holds none"),
    "B": ("unsafe", "an idle rank is an empty one; rank 0 still holds all its stashes; "
          "stage 2, which sends the layer, holds stashes too, and microbatches still need its "
          "layers"),
    "C": ("unsafe", "the receiving stage being done is enough; stage 2, which sends the layer, "
          "still holds stashes its backwards need"),
    "D": ("unsafe", "a finished update makes the weights consistent; PipeDream never flushes, "
          "so stashes and older versions stay in flight"),
    "E": ("safe", "something is still in flight; after the last backward and the optimizer step "
          "nothing is"),
}  # fmt: skip
for _key, (_right, _wrong_reading) in _why.items():
    _other = "unsafe" if _right == "safe" else "safe"
    check_choice(f"move_safe[{_key!r}]", move_safe[_key], _right,
                 {_right: "the right verdict", _other: f"it assumes {_wrong_reading}"})  # fmt: skip
### END HIDDEN TESTS
passed("Exercise 5")

# %% [markdown]
# ### Exercise 6 — Explained answer: the dashboard's step (2 points, graded by hand)
#
# A dashboard averages the worked example's stage costs (section 1) and predicts a 1F1B step of
# $(m + p - 1) \times 3.44$ ms = 37.8 ms; the profile shows 41.3 ms, and a colleague blames
# point-to-point latency. In three or four sentences with numbers from this lesson: where do the
# 3.5 ms come from, which stage would you relieve, and how would you decide whether to move a
# layer?

# %% [markdown] nbgrader={"grade": true, "grade_id": "explain_dashboard_step", "locked": false, "points": 2, "schema_version": 3, "solution": true, "task": false}
# **Model answer** (the student release replaces this cell). The simulation has no latency at
# all and still takes 41.3 ms: the average treats the stages as balanced, but the step follows
# the critical path, and 25.2 ms of it is stage 1's compute (its 3.15 ms backwards); even the
# lower bound, 39.65 ms, is above the average's 37.8 ms. Stage 1 is the bottleneck (most time on
# the path), so I would move a layer off it, simulating the 1F1B step after the move to get
# the gain $g$. The move costs $16N/\beta$ plus the pause; it is worth it if more than
# $\lceil \text{cost}/g \rceil$ steps remain, and I would apply it at the next flush between
# steps, never mid-step.
#
# Rubric: 1 point for the critical path through stage 1 (not latency, not the average) with
# numbers; 1 point for the decision: simulated gain, cost with 16 B/param (or 12 for a lean move,
# said so) and pause, break-even against the remaining steps, applied at a flush.

# %% [markdown]
# ## Takeaways
#
# - GPipe's step with unequal stages is $\sum_s (f_s + b_s) + (m - 1)(\max_s f_s + \max_s b_s)$;
#   simulate 1F1B and check it against the lower bound.
# - The bottleneck is the stage with the most compute on the critical path, not necessarily the
#   busiest.
# - A move costs up to 16 bytes per parameter plus a pause, repays after
#   $\lceil \text{cost}/\text{gain} \rceil$ steps, and is safe only at a flush.
# - The trap: the average stage as throughput. Walk the critical path, then price the change.
