# %% [markdown]
# # pipe03 · One-forward-one-backward schedules
#
# **Objective.** Trace warmup, alternating steady state, cooldown, and the activation lifetimes of
# a synchronous 1F1B pipeline.
#
# **Time:** 28 min · **Level:** advanced
#
# You will be able to
# - write the per-stage action order of a 1F1B pipeline: its warm-up, its alternating steady
#   state and its cool-down;
# - say why 1F1B takes as long as fill-drain with balanced stages, yet stage $s$ stashes only
#   $\min(m, p - s)$ microbatches instead of $m$;
# - read an activation's lifetime off a simulated timeline and turn stash counts into memory.
#
# **What you need:** pipe02 (fill-drain schedules, the schedule grid, `simulate`). Python at the
# level of a loop over a list and a pandas filter.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
# %matplotlib inline
import matplotlib.pyplot as plt
import numpy as np

from course_lib.checks import (
    check_float,
    check_int,
    check_names,
    check_type,
    distinct_hints,
    forbid,
    passed,
)
from course_lib.explorers.one_f_one_b import one_f_one_b_explorer
from course_lib.figures.one_f_one_b import lifetime_bars, one_f_one_b_phases, stash_by_stage
from course_lib.pipeline import Action, Schedule, gpipe, one_f_one_b, simulate

rng = np.random.default_rng(3)  # the course's convention; nothing in this lesson is random

# The worked example: pipe02's 4 balanced stages and 8 microbatches, backward twice the forward.
num_stages, num_microbatches = 4, 8
forward_time, backward_time = 1.0e-3, 2.0e-3  # seconds per microbatch per stage
GiB = 2**30

# %% [markdown]
# ## 1. A 1F1B stage warms up, alternates, then cools down
#
# Fill-drain (pipe02) runs every forward before any backward, so each stage holds the
# activations of all $m$ microbatches at once. The one-forward-one-backward schedule of
# PipeDream-Flush, Megatron-LM's default (Narayanan et al. 2021, §2.2.1, Fig. 4 top), starts
# each backward as soon as it can and then keeps the stage alternating. Stage $s$ (0-based) runs
# three phases:
#
# - **warm-up**: $w_s = \min(m,\ p - s - 1)$ forwards, $F_0 \dots F_{w_s - 1}$;
# - **steady state**: $m - w_s$ pairs $F_{w_s + i},\ B_i$ for $i = 0 \dots m - w_s - 1$;
# - **cool-down**: the remaining $w_s$ backwards, in microbatch order,
#
# where $p$ is `num_stages` and $m$ is `num_microbatches`. The paper describes the warm-up only
# in words; the count $w_s$ comes from Megatron-LM: `num_warmup_microbatches` in
# `forward_backward_pipelining_without_interleaving`
# (`megatron/core/pipeline_parallel/schedules.py`, NVIDIA/Megatron-LM commit 4dabc62) is the
# pipeline size minus the rank minus 1, clamped to the number of microbatches. What the paper
# states is the resulting peak (section 2).
#
# Why $p - s - 1$: while microbatch 0
# travels down to the last stage and its gradient comes back, each of the $p - s - 1$ stages
# below needs a microbatch to work on. With the steady state's first forward, $p - s$ microbatches have
# entered stage $s$ when $B_0$ reaches it. The last stage has nothing below: $w = 0$, it runs
# $F_0, B_0, F_1, B_1, \dots$ With $m \le p - s - 1$ the stage runs out of microbatches first:
# $w_s = m$, every forward, then every backward.
#
# PyTorch 2.13's `Schedule1F1B` runs the same order but counts $\min(m, p - s)$ "warmup chunks"
# and then alternates backward-first; compare definitions before you compare counts.

# %%
schedule = one_f_one_b(num_stages, num_microbatches)
print(schedule)
timeline = simulate(schedule, forward_time, backward_time)
one_f_one_b_phases(timeline)
plt.show()

# %% [markdown]
# Rank 0 is on top. The strip under each row marks its phases; the black edges show where its
# warm-up ends and its cool-down begins. Rank 0 runs 3 forwards, then $F_3, B_0$, and waits
# 6 ms for that first gradient; from then on every rank alternates, and rank 3 (the last stage)
# alternates from its first action.

# %% [markdown]
# ## 2. The same step as fill-drain, with min(m, p − s) stashes instead of m
#
# With balanced stages and no latency, 1F1B ends when GPipe does, at $(m + p - 1)(t_f + t_b)$:
# the first forward still needs $p - 1$ slots to reach the last stage and the last gradient
# $p - 1$ to climb back, and "the time spent in the bubble is the same" (Narayanan et al. 2021,
# §2.2.1). What changes is how long activations wait. Under 1F1B stage $s$ holds at most
#
# $$\text{peak}_s = \min(m,\ p - s)$$
#
# stashes — its warm-up plus the first steady-state forward — instead of GPipe's $m$: activations
# are "stashed for $p$ or fewer microbatches" (ibid.). That sentence bounds this peak,
# $\min(m, p - s) \le p$, not the warm-up of section 1.

# %%
runs = {"GPipe": simulate(gpipe(num_stages, num_microbatches), forward_time, backward_time)}
runs["1F1B"] = timeline
for name, run in runs.items():
    print(
        f"{name}: step {run.makespan * 1e3:.1f} ms, idle {run.idle_fraction:.3f}, "
        f"peak stashes per stage {run.peak_in_flight.tolist()}"
    )
stash_by_stage(runs)
plt.show()

# %% [markdown]
# One panel per stage: GPipe climbs to 8 stashes on every stage; 1F1B levels off at 4, 3, 2
# and 1. The first stage stashes the most (pipe01 balances memory with that in mind). With
# pipe02's stage of 8 transformer layers, 2.125 GiB per microbatch (Korthikanti et al. 2022,
# Table 2), $p = 8$ and $m = 32$: 68 GiB per stage under GPipe, 17 GiB on stage 0 and 2.1 GiB on
# stage 7 under 1F1B.
#
# The equal step time needs zero latency. With a per-hop latency $\delta$, GPipe pays it
# $2(p - 1)$ times (pipe02); 1F1B pays it again throughout the steady state, since each backward
# waits for a gradient the next stage has just computed and sent:

# %%
delta = 0.25e-3
for name, generator in (("GPipe", gpipe), ("1F1B", one_f_one_b)):
    run = simulate(
        generator(num_stages, num_microbatches), forward_time, backward_time, p2p_latency=delta
    )
    print(f"{name} with δ = 0.25 ms: step {run.makespan * 1e3:.1f} ms")

# %% [markdown]
# 2.5 ms more than GPipe here, and the gap grows with $m$: 1F1B buys memory with latency
# sensitivity. That is this simulator's model (messages land $\delta$ after they are sent);
# measure it on your system.

# %% [markdown]
# ## 3. An activation lives from its forward until its backward
#
# A stash is born when $F(s, j)$ starts — the layers' forward allocates the tensors their
# backward will read — and dies when $B(s, j)$ ends and frees them. The course counts the whole
# interval from the start of $F$ to the end of $B$ as the **lifetime** (`Timeline.lifetime`); a
# memory trace shows the stash growing during the forward and shrinking during the backward
# (cost05). The stashes live at a moment are the lifetimes that cover it. Since a rank runs one
# action at a time, the count on its stage moves only at its own actions, $+1$ when a forward
# starts and $-1$ when a backward ends: the order of actions fixes the peak, the timing only
# stretches it. For the same reason, counting lifetimes from $F$'s end instead would give the
# same peaks: nothing is freed while a forward runs.
#
# Little's law (Little 1961: items in a system = arrival rate × time in the system) gives the
# steady state's count: stage $s$ starts one forward every $t_f + t_b$, and each stash lives
# $(p - s)(t_f + t_b)$, so $p - s$ are live. GPipe starts a forward every $t_f$ and frees nothing
# until its last forward has run: all $m$ are live together.

# %%
lives = [timeline.lifetime(0, j) for j in range(num_microbatches)]
print("1F1B, stage 0 (ms):", [f"{a * 1e3:.0f}-{b * 1e3:.0f}" for a, b in lives])
lifetime_bars(runs, stage=0)
plt.show()

# %% [markdown]
# Each bar is one microbatch's stash on stage 0: its forward, its wait, its backward. Under
# 1F1B, microbatches 1 to 3 wait longer (14 to 18 ms) because their forwards ran back to back;
# from microbatch 4 on each lives $p(t_f + t_b) = 12$ ms and four overlap at any time. Under
# GPipe the lifetimes grow from 19 to 26 ms and all eight overlap from 7 ms to 19 ms.
#
# Everything in this lesson is simulated: balanced (or stated) stage costs and a fixed latency,
# synthetic numbers. A real profile adds uneven stages, communication kernels and jitter, but
# the order of actions on each rank reads off it exactly, and that order fixes the stash count.

# %% [markdown]
# ## Explore
#
# The explorer draws a 1F1B grid (black edges: warm-up end, cool-down start; dashed outline: the
# selected stage) and that stage's stashes under 1F1B and GPipe, with $t_f = 1$ ms,
# $t_b = 2$ ms. Try:
# - At $p = 8$, $m = 32$, move stage $s$ from 0 to 7: the 1F1B peak falls 8, 7, …, 1 while
#   GPipe's stays at 32.
# - Set $p = 8$, $m = 4$, $s = 0$: the warm-up is clamped to $m$, stage 0 runs GPipe's order
#   and both peaks are 4. Raise $s$ until they part.
# - Raise $\delta$ to 0.5 ms: GPipe's step follows its formula, 1F1B's falls behind.

# %%
one_f_one_b_explorer()

# %% [markdown]
# ## Exercises
#
# Answer in the cells marked `YOUR CODE HERE`, then run the grade cell below each: visible checks
# give quick feedback; hidden tests check more cases when the notebook is graded. While a grade
# cell calls your function, the `course_lib` routines that would answer it (the schedule
# generators, the closed forms, the stash counts and lifetimes of `Timeline`) are disabled.
#
# ### Exercise 1 — The 1F1B order of one stage (3 points)
#
# Write `one_f_one_b_order(num_stages, num_microbatches, stage)`: the list of `Action`s that
# stage `stage` (0-based) runs under section 1's schedule, `Action("F", stage, j)` for the
# forward of microbatch $j$ and `Action("B", stage, j)` for its backward. To test a whole
# pipeline, simulate
# `Schedule(p, m, p, [one_f_one_b_order(p, m, s) for s in range(p)])`: a wrong order may
# deadlock. Exercise 1a grades pipelines with $m \ge p$, among them the last stage and a single
# stage; Exercise 1b grades $m < p$, where the warm-up is clamped, down to $m = 1$.


# %% nbgrader={"grade": false, "grade_id": "order_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def one_f_one_b_order(num_stages: int, num_microbatches: int, stage: int) -> list[Action]:
    """Actions of one stage under synchronous 1F1B: warm-up, steady F/B pairs, cool-down."""
    ### BEGIN SOLUTION
    p, m, s = num_stages, num_microbatches, stage
    warmup = min(m, p - s - 1)
    order = [Action("F", s, j) for j in range(warmup)]
    for i in range(m - warmup):
        order += [Action("F", s, warmup + i), Action("B", s, i)]
    return order + [Action("B", s, j) for j in range(m - warmup, m)]
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "order_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 1a: one_f_one_b_order(p, m, s) with m >= p, a list of Action."""
import course_lib.pipeline as course_pipeline

_routes = ("one_f_one_b", "gpipe", "interleaved_1f1b", "zero_bubble_h1")
_no_delegation = [(course_pipeline, n) for n in _routes if hasattr(course_pipeline, n)]


def _checked_order(label, got, expected, p, m, s):
    """Type, forwards before the first backward (with the usual mistakes named), then order."""
    check_type(label, got, list, tuple)
    for k, action in enumerate(got):
        check_type(f"{label}[{k}]", action, Action)
    kinds = [a.kind for a in got]
    lead = kinds.index("B") if "B" in kinds else len(kinds)
    right = expected.index(next(a for a in expected if a.startswith("B")))
    w = min(m, p - s - 1)
    hints = [
        (m, "all forwards first: that is GPipe's order"),
        (min(m, p - s) + 1, "min(m, p − s) warm-up forwards, one too many (PyTorch counts the "
         "steady state's first forward as warm-up; Megatron-LM does not)"),
        (w, "one forward short: after p − s − 1 warm-ups the steady state pairs F, then B "
         "(PyTorch's B-then-F pairs follow p − s warm-ups); or was the stage counted from 1?"),
    ]  # fmt: skip
    check_int(
        f"{label}: forwards before its first backward",
        lead,
        right,
        known_wrong=distinct_hints(hints, right),
    )
    check_names(
        f"{label}: its backwards, in the order they run",
        [str(a) for a in got if a.kind == "B"],
        [a for a in expected if a.startswith("B")],
        ordered=True,
    )
    check_names(label, [str(a) for a in got], expected, ordered=True)


with forbid(*_no_delegation, exercise="Exercise 1"):
    _small = one_f_one_b_order(3, 5, 0)
_checked_order(
    "one_f_one_b_order(3, 5, 0)",
    _small,
    "F(s0,m0) F(s0,m1) F(s0,m2) B(s0,m0) F(s0,m3) B(s0,m1) F(s0,m4) B(s0,m2) B(s0,m3) "
    "B(s0,m4)".split(),
    3,
    5,
    0,
)
### BEGIN HIDDEN TESTS
_cases = [(5, 9, 0), (5, 9, 4), (8, 16, 2), (1, 3, 0), (3, 3, 0), (6, 10, 5), (2, 7, 1), (6, 6, 0)]
with forbid(*_no_delegation, exercise="Exercise 1 (hidden cases)"):
    _orders = {case: one_f_one_b_order(*case) for case in _cases}
for (_p, _m, _s), _got in _orders.items():
    _expected = [str(a) for a in one_f_one_b(_p, _m).actions[_s]]
    _checked_order(f"one_f_one_b_order({_p}, {_m}, {_s})", _got, _expected, _p, _m, _s)
### END HIDDEN TESTS
passed("Exercise 1a")

# %% nbgrader={"grade": true, "grade_id": "order_short_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 1b: one_f_one_b_order(p, m, s) with m < p (the warm-up clamped to m)."""
import course_lib.pipeline as course_pipeline

_routes = ("one_f_one_b", "gpipe", "interleaved_1f1b", "zero_bubble_h1")
_no_delegation = [(course_pipeline, n) for n in _routes if hasattr(course_pipeline, n)]
with forbid(*_no_delegation, exercise="Exercise 1"):
    _short = one_f_one_b_order(5, 2, 0)
check_type("one_f_one_b_order(5, 2, 0)", _short, list, tuple)
for _k, _action in enumerate(_short):
    check_type(f"one_f_one_b_order(5, 2, 0)[{_k}]", _action, Action)
check_names(
    "one_f_one_b_order(5, 2, 0): fewer microbatches than p − s − 1, so every forward first",
    [str(a) for a in _short],
    ["F(s0,m0)", "F(s0,m1)", "B(s0,m0)", "B(s0,m1)"],
    ordered=True,
)
with forbid(*_no_delegation, exercise="Exercise 1"):
    _late = one_f_one_b_order(5, 3, 3)
_label = "one_f_one_b_order(5, 3, 3)"
check_type(_label, _late, list, tuple)
for _k, _action in enumerate(_late):
    check_type(f"{_label}[{_k}]", _action, Action)
_kinds = [a.kind for a in _late]
check_int(
    f"{_label}: forwards before its first backward (m < p, but p − s − 1 = 1 < m)",
    _kinds.index("B") if "B" in _kinds else len(_kinds),
    2,
    known_wrong={
        3: "every forward first: GPipe's order, or min(m, p − s) warm-ups then F/B pairs",
        1: "one forward short: after the warm-up the steady state pairs F, then B; "
        "or was the stage counted from 1?",
    },
)
check_names(
    _label,
    [str(a) for a in _late],
    "F(s3,m0) F(s3,m1) B(s3,m0) F(s3,m2) B(s3,m1) B(s3,m2)".split(),
    ordered=True,
)
### BEGIN HIDDEN TESTS
_cases = [
    (8, 3, 0), (8, 3, 4), (8, 3, 5), (8, 3, 7), (4, 1, 0), (4, 1, 3), (6, 4, 1), (6, 4, 2),
    (2, 1, 0), (3, 2, 1),
]  # fmt: skip
with forbid(*_no_delegation, exercise="Exercise 1 (hidden cases)"):
    _orders = {case: one_f_one_b_order(*case) for case in _cases}
for (_p, _m, _s), _got in _orders.items():
    _label = f"one_f_one_b_order({_p}, {_m}, {_s})"
    check_type(_label, _got, list, tuple)
    for _k, _action in enumerate(_got):
        check_type(f"{_label}[{_k}]", _action, Action)
    _expected = [str(a) for a in one_f_one_b(_p, _m).actions[_s]]
    check_int(f"{_label}: number of actions", len(_got), 2 * _m)
    check_names(_label, [str(a) for a in _got], _expected, ordered=True)
### END HIDDEN TESTS
passed("Exercise 1b")

# %% [markdown]
# ### Exercise 2 — Warm-up forwards per stage (1 point)
#
# Write `warmup_forwards(num_stages, num_microbatches)`: a list of $p$ ints, the warm-up
# forwards of stages $0, 1, \dots, p - 1$, counted as Megatron-LM counts them (section 1), not
# as PyTorch does. The hidden tests include $m < p$ and a single stage.


# %% nbgrader={"grade": false, "grade_id": "warmup_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def warmup_forwards(num_stages: int, num_microbatches: int) -> list[int]:
    """Warm-up forwards of every stage of a 1F1B pipeline, stage 0 first."""
    ### BEGIN SOLUTION
    return [min(num_microbatches, num_stages - s - 1) for s in range(num_stages)]
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "warmup_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 2: warmup_forwards(p, m), the warm-up forwards of every stage (a list of ints)."""
import course_lib.pipeline as course_pipeline
import course_lib.pipeline.versions as course_versions

_routes = (
    "one_f_one_b_warmup", "one_f_one_b", "interleaved_1f1b", "zero_bubble_h1",
    "peak_in_flight_one_f_one_b", "stage_in_flight",
)  # fmt: skip
_no_delegation = [(course_pipeline, n) for n in _routes if hasattr(course_pipeline, n)]
# pipe07's PipeDream versions: j - min(m, p - s - 1), and p - s versions held per stage
_no_delegation += [(course_versions, n) for n in ("stashing_version", "stashing_versions_held")]
_pytorch = "PyTorch's count, with the steady state's first forward"
_gpipe = "m: GPipe's order"
_one_based = "a stage counted from 1"
_unclamped = "p − s − 1 without the clamp at m"
_below_m = "m − 1: when m ≤ p − s − 1 every forward is a warm-up forward, all m of them"
_expected = {
    (5, 7): [
        (4, {5: _pytorch, 7: _gpipe, 3: _one_based, 0: "stage p − 1's count: stage 0 comes first"}),
        (3, {4: _pytorch, 7: _gpipe, 2: _one_based}),
        (2, {3: _pytorch, 7: _gpipe, 1: _one_based}),
        (1, {2: _pytorch, 7: _gpipe}),
        (0, {1: _pytorch, 7: _gpipe}),
    ],
    (4, 2): [  # m < p: the clamp at m
        (2, {3: _unclamped, 1: _below_m}),
        (2, {1: _below_m}),
        (1, {2: _pytorch + ", or " + _gpipe, 0: _one_based}),
        (0, {1: _pytorch, 2: _gpipe}),
    ],
}
for (_p, _m), _rows in _expected.items():
    with forbid(*_no_delegation, exercise="Exercise 2"):
        _got = warmup_forwards(_p, _m)
    _label = f"warmup_forwards({_p}, {_m})"
    check_type(_label, _got, list, tuple)
    check_int(f"len({_label})", len(_got), _p)
    for _s, (_right, _known) in enumerate(_rows):
        check_int(f"{_label}[{_s}]", _got[_s], _right, known_wrong=_known)
### BEGIN HIDDEN TESTS
_cases = [(8, 3), (1, 5), (5, 1), (6, 6), (16, 64), (3, 2), (7, 3)]
with forbid(*_no_delegation, exercise="Exercise 2 (hidden cases)"):
    _answers = {case: warmup_forwards(*case) for case in _cases}
for (_p, _m), _got in _answers.items():
    _label = f"warmup_forwards({_p}, {_m})"
    check_type(_label, _got, list, tuple)
    check_int(f"len({_label})", len(_got), _p)
    for _s, _value in enumerate(_got):
        _right = min(_m, _p - _s - 1)
        _hints = [
            (min(_m, _p - _s), "min(m, p − s): " + _pytorch),
            (_p - _s - 1, "p − s − 1 without the clamp at m"),
            (_m, "m: every forward before the first backward, GPipe's order"),
            (max(0, min(_m, _p - _s - 2)), "min(m, p − s − 2): a stage counted from 1"),
            (min(_m, _p - _s) - 1, "the 1F1B peak minus one: clamp the warm-up itself at m"),
        ]
        check_int(f"{_label}[{_s}]", _value, _right, known_wrong=distinct_hints(_hints, _right))
### END HIDDEN TESTS
passed("Exercise 2")

# %% [markdown]
# ### Exercise 3 — Peak stashes, read from the order (2 points)
#
# Write `peak_stashes(schedule)`: for a `Schedule` with one stage per rank and only F and B
# actions, a list with, for each stage, the largest number of microbatches whose activations it
# holds at once (section 3's lifetimes). Any valid order may come in, not only GPipe's or 1F1B's:
# the visible check's stage 0 runs `F0 B0 F1 F2 F3 F4 B1 F5 F6 F7 B2 B3 B4 B5 B6 B7`.
# `schedule.actions[r]` is rank r's list of actions; you do not need to simulate. Besides `Timeline`'s stash counts,
# cost05's `live_bytes` and `peak` are disabled while your function runs.


# %% nbgrader={"grade": false, "grade_id": "peak_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def peak_stashes(schedule: Schedule) -> list[int]:
    """Peak live activation stashes of every stage, from the per-rank order of actions."""
    ### BEGIN SOLUTION
    peaks = [0] * schedule.num_stages
    for rank_actions in schedule.actions:
        live = 0
        for action in rank_actions:
            live += 1 if action.kind == "F" else -1
            peaks[action.stage] = max(peaks[action.stage], live)
    return peaks
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "peak_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 3: peak_stashes(schedule), per stage, from the order of a one-stage-per-rank schedule."""
import course_lib.memory as course_memory
import course_lib.pipeline as course_pipeline
import course_lib.pipeline.imbalance as course_imbalance

_routes = (
    "peak_in_flight_one_f_one_b", "peak_in_flight_gpipe", "peak_in_flight_zero_bubble_h1",
    "stage_in_flight",
)  # fmt: skip
_no_delegation = [
    (course_pipeline.Timeline, "in_flight"),
    (course_pipeline.Timeline, "lifetime"),
    *[(course_pipeline, n) for n in _routes if hasattr(course_pipeline, n)],
    *[(course_memory, n) for n in ("lifetimes", "live_bytes", "peak", "live_bytes_by_category")],
    # pipe08's live stashes and pipe10's verifier (its memory rule reports each stage's peak)
    *[(course_imbalance, n) for n in ("live_stashes", "live_stashes_at", "is_flush")],
    (course_pipeline, "verify"),
]


def _custom(rows, name):
    """A Schedule from one string per rank/stage, e.g. "F0 B0 F1 B1"."""
    actions = [[Action(t[0], s, int(t[1:])) for t in row.split()] for s, row in enumerate(rows)]
    m = 1 + max(a.microbatch for rank in actions for a in rank)
    return Schedule(len(rows), m, len(rows), actions, name=name)


def _checked_peaks(got, schedule, expected, label):
    p, m = schedule.num_stages, schedule.num_microbatches
    check_type(label, got, list, tuple)
    check_int(f"len({label})", len(got), p)
    for s, value in enumerate(got):
        kinds = [a.kind for a in schedule.actions[s]]
        before_b = kinds.index("B") if "B" in kinds else len(kinds)
        streak = longest = 0
        for kind in kinds:
            streak = streak + 1 if kind == "F" else 0
            longest = max(longest, streak)
        hints = [
            (longest, "the longest run of forwards: stashes of earlier forwards are still live"),
            (min(m, p - s), "min(m, p − s): the 1F1B formula, but this order is not 1F1B's"),
            (m, "m: GPipe's peak, every forward before any backward"),
            (before_b, "the forwards before the first backward: a later burst can hold more"),
            (min(m, p - s - 1), "min(m, p − s − 1): the 1F1B warm-up, not the peak"),
            (expected[s] - 1, "one short: a stash is live from the moment its forward starts"),
        ]
        check_int(
            f"{label}[{s}]", value, expected[s], known_wrong=distinct_hints(hints, expected[s])
        )


_visible = _custom(
    ["F0 B0 F1 F2 F3 F4 B1 F5 F6 F7 B2 B3 B4 B5 B6 B7"]
    + ["F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7"] * 2,
    "v",
)
with forbid(*_no_delegation, exercise="Exercise 3"):
    _small = peak_stashes(_visible)
_checked_peaks(_small, _visible, [6, 1, 1], "peak_stashes(visible 3-stage schedule)")
### BEGIN HIDDEN TESTS
_schedules = {
    "one_f_one_b(5, 9)": one_f_one_b(5, 9),
    "one_f_one_b(8, 3)": one_f_one_b(8, 3),
    "one_f_one_b(1, 4)": one_f_one_b(1, 4),
    "gpipe(3, 5)": gpipe(3, 5),
    "1F1B with p - s warm-ups (4, 6)": _custom(
        ["F0 F1 F2 F3 F4 B0 F5 B1 B2 B3 B4 B5", "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5",
         "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 B4 B5", "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 B5"],
        "early",
    ),
    "two bursts (2, 8)": _custom(
        ["F0 F1 F2 B0 F3 F4 F5 F6 B1 F7 B2 B3 B4 B5 B6 B7",
         "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7"],
        "two bursts",
    ),
    "bursts (2, 6)": _custom(
        ["F0 F1 F2 B0 B1 F3 F4 F5 B2 B3 B4 B5", "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5"], "bursts"
    ),
}  # fmt: skip
with forbid(*_no_delegation, exercise="Exercise 3 (hidden cases)"):
    _answers = {label: peak_stashes(s) for label, s in _schedules.items()}
for _label, _sched in _schedules.items():
    _expected = simulate(_sched, 1.0, 2.0).peak_in_flight.tolist()
    _checked_peaks(_answers[_label], _sched, _expected, f"peak_stashes({_label})")
### END HIDDEN TESTS
passed("Exercise 3")

# %% [markdown]
# ### Exercise 4 — A stash's lifetime on a timeline (2 points)
#
# Write `stash_lifetime(events, stage, microbatch)`: the tuple `(start, end)` in seconds of the
# stash of `microbatch` on `stage`, by section 3's definition, in a simulated timeline's `events`
# (a DataFrame with columns `rank, kind, stage, microbatch, start, end`, times in seconds). The
# hidden timelines have unequal stage costs and a point-to-point latency; they include GPipe and
# 1F1B, the first stage and the last.


# %% nbgrader={"grade": false, "grade_id": "lifetime_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def stash_lifetime(events, stage: int, microbatch: int) -> tuple[float, float]:
    """(start, end) in seconds of one stash (section 3), read off a timeline's events table."""
    ### BEGIN SOLUTION
    mine = events[(events["stage"] == stage) & (events["microbatch"] == microbatch)]
    forward = mine[mine["kind"] == "F"].iloc[0]
    backward = mine[mine["kind"] == "B"].iloc[0]
    return float(forward["start"]), float(backward["end"])
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "lifetime_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 4: stash_lifetime(events, stage, microbatch) -> (start, end) in seconds."""
import course_lib.pipeline as course_pipeline
import course_lib.pipeline.imbalance as course_imbalance

_no_delegation = [
    (course_pipeline.Timeline, "lifetime"),
    (course_pipeline.Timeline, "in_flight"),
    *[(course_imbalance, n) for n in ("live_stashes", "live_stashes_at")],  # pipe08's born/freed
]


def _action_time(events, kind, stage, microbatch, column):
    """start or end (s) of one action of a timeline's events; NaN if there is no such action."""
    rows = events[(events["kind"] == kind) & (events["stage"] == stage)]
    rows = rows[rows["microbatch"] == microbatch][column]
    return float(rows.iloc[0]) if len(rows) else float("nan")


def _stage_edge(events, stage, column, pick):
    """The first start (pick=min) or last end (pick=max) of any action on ``stage``, in s."""
    return float(pick(events.loc[events["stage"] == stage, column]))


def _checked_lifetime(got, right, events, stage, j, label):
    """(start, end) against ``right``, naming the neighbouring action times a mistake gives."""
    check_type(label, got, tuple, list)
    check_int(f"len({label})", len(got), 2)
    t = _action_time
    starts = [
        (
            t(events, "F", stage, j, "end"),
            "the forward's end: the stash is allocated while it runs",
        ),
        (t(events, "B", stage, j, "start"), "the backward's start"),
        (t(events, "F", stage, j + 1, "start"), "the next microbatch's forward"),
        (t(events, "F", stage, j - 1, "start"), "the previous microbatch's forward"),
        (t(events, "F", stage + 1, j, "start"), "the next stage's forward"),
        (t(events, "F", stage - 1, j, "start"), "the previous stage's forward"),
        (1e3 * right[0], "milliseconds: the events' times are in seconds"),
        (_stage_edge(events, stage, "start", min), "the stage's first forward, any microbatch"),
    ]
    ends = [
        (
            t(events, "B", stage, j, "start"),
            "the backward's start: it frees the stash when it ends",
        ),
        (t(events, "F", stage, j, "end"), "the forward's end"),
        (t(events, "B", stage, j + 1, "end"), "the next microbatch's backward"),
        (t(events, "B", stage, j - 1, "end"), "the previous microbatch's backward"),
        (t(events, "B", stage + 1, j, "end"), "the next stage's backward: the gradient's arrival"),
        (t(events, "B", stage - 1, j, "end"), "the previous stage's backward"),
        (1e3 * right[1], "milliseconds: the events' times are in seconds"),
        (right[1] - right[0], "the duration: the tuple is (start, end)"),
        (_stage_edge(events, stage, "end", max), "the stage's last backward, any microbatch"),
    ]
    for k, (name, hints) in enumerate((("start", starts), ("end", ends))):
        known = distinct_hints(hints, right[k], rtol=1e-6, atol=1e-12)
        check_float(f"{label}[{k}], the {name}", got[k], right[k], unit="s", known_wrong=known)


_visible = simulate(
    one_f_one_b(3, 4), [1e-3, 1.5e-3, 1.2e-3], [2e-3, 2.6e-3, 2.2e-3], p2p_latency=0.3e-3
)
with forbid(*_no_delegation, exercise="Exercise 4"):
    _small = stash_lifetime(_visible.events, 1, 2)
_label = "stash_lifetime(3-stage 1F1B, stage 1, mb 2)"
_checked_lifetime(_small, (9.4e-3, 17.6e-3), _visible.events, 1, 2, _label)
### BEGIN HIDDEN TESTS
_ms = 1e-3
_timelines = {
    "1F1B(5, 7)": simulate(
        one_f_one_b(5, 7),
        [1.0 * _ms, 1.3 * _ms, 0.9 * _ms, 1.1 * _ms, 1.2 * _ms],
        [2.1 * _ms, 2.5 * _ms, 1.9 * _ms, 2.3 * _ms, 2.6 * _ms],
        p2p_latency=[0.2 * _ms, 0.4 * _ms, 0.1 * _ms, 0.3 * _ms],
    ),
    "GPipe(4, 6)": simulate(gpipe(4, 6), 1.2 * _ms, 2.0 * _ms, p2p_latency=0.5 * _ms),
    "1F1B(6, 3)": simulate(one_f_one_b(6, 3), 0.8 * _ms, 1.7 * _ms, p2p_latency=0.25 * _ms),
    "1F1B(1, 3)": simulate(one_f_one_b(1, 3), 0.7 * _ms, 1.6 * _ms),
}
_pairs = {
    "1F1B(5, 7)": [(0, 0), (0, 5), (2, 3), (4, 6), (4, 0), (3, 1)],
    "GPipe(4, 6)": [(0, 5), (3, 2), (1, 0)],
    "1F1B(6, 3)": [(0, 2), (5, 1), (2, 0)],
    "1F1B(1, 3)": [(0, 1)],
}
with forbid(*_no_delegation, exercise="Exercise 4 (hidden cases)"):
    _answers = {
        (name, pair): stash_lifetime(_timelines[name].events, *pair)
        for name, pairs in _pairs.items()
        for pair in pairs
    }
for (_name, (_s, _j)), _got in _answers.items():
    _events = _timelines[_name].events
    _right = _timelines[_name].lifetime(_s, _j)
    _checked_lifetime(
        _got, _right, _events, _s, _j, f"stash_lifetime({_name}, stage {_s}, mb {_j})"
    )
### END HIDDEN TESTS
passed("Exercise 4")

# %% [markdown]
# ### Exercise 5 — How much memory 1F1B saves (1 point)
#
# A stage holds `state_bytes` (weights, gradients and optimizer state) plus `stash_bytes` for each
# live microbatch. Write
# `memory_ratio(num_stages, num_microbatches, stage, state_bytes, stash_bytes)`: the stage's peak
# memory under GPipe divided by its peak under 1F1B, a float. The visible checks are stages 0 and
# 7 of $p = 8$, $m = 32$ with 20 GiB of state and 2 GiB per microbatch; the hidden tests include
# $m < p$ and other stages.


# %% nbgrader={"grade": false, "grade_id": "memory_ratio_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def memory_ratio(
    num_stages: int, num_microbatches: int, stage: int, state_bytes: float, stash_bytes: float
) -> float:
    """Peak memory of a stage under GPipe over its peak under 1F1B."""
    ### BEGIN SOLUTION
    m = num_microbatches
    one_f_one_b_peak = min(m, num_stages - stage)
    return (state_bytes + m * stash_bytes) / (state_bytes + one_f_one_b_peak * stash_bytes)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "memory_ratio_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 5: memory_ratio(p, m, s, state_bytes, stash_bytes), GPipe's peak over 1F1B's."""
import course_lib.pipeline as course_pipeline
import course_lib.pipeline.imbalance as course_imbalance
import course_lib.pipeline.versions as course_versions

_routes = (
    "peak_in_flight_one_f_one_b", "peak_in_flight_gpipe", "peak_in_flight_zero_bubble_h1",
    "stage_in_flight", "stage_memory", "stage_table",
)  # fmt: skip
_no_delegation = [
    (course_pipeline.Timeline, "in_flight"),
    *[(course_pipeline, n) for n in _routes if hasattr(course_pipeline, n)],
    # pipe08's live stashes and pipe10's verifier (its memory rule reports each stage's peak)
    *[(course_imbalance, n) for n in ("live_stashes", "live_stashes_at", "is_flush")],
    (course_pipeline, "verify"),
    # pipe07's PipeDream versions: p - s held per stage, j - min(m, p - s - 1)
    *[(course_versions, n) for n in ("stashing_versions_held", "stashing_version")],
]
_visible_cases = {  # stage: (right ratio, named mistakes), on p = 8, m = 32, 20 GiB + 2 GiB each
    0: (
        84 / 36,
        {
            4.0: "the activations alone: the state is there under both schedules",
            84 / 34: "p − s − 1 stashes under 1F1B: the warm-up, not the peak",
            84 / 38: "p − s + 1 stashes: a stage counted from 1",
            36 / 84: "1F1B's peak over GPipe's: the ratio upside down",
            2.0: "rounded down: // instead of /",
            1.0: "p stashes under GPipe: it holds all m",
        },
    ),
    7: (
        84 / 22,
        {
            84 / 36: "min(m, p) on every stage: the peak depends on the stage",
            84 / 20: "p − s − 1 stashes under 1F1B: the warm-up, not the peak",
            84 / 24: "p − s + 1 stashes: a stage counted from 1",
        },
    ),
}
for _s, (_right, _wrong) in _visible_cases.items():
    with forbid(*_no_delegation, exercise="Exercise 5"):
        _small = memory_ratio(8, 32, _s, 20 * GiB, 2 * GiB)
    check_float(f"memory_ratio(8, 32, {_s}, 20 GiB, 2 GiB)", _small, _right, known_wrong=_wrong)
### BEGIN HIDDEN TESTS
_cases = [
    (8, 4, 0, 20 * GiB, 2 * GiB),
    (12, 40, 11, 16 * GiB, 1 * GiB),
    (16, 64, 3, 12 * GiB, 1.5 * GiB),
    (4, 4, 0, 0.0, 1 * GiB),
    (6, 24, 2, 30 * GiB, 0.5 * GiB),
    (1, 8, 0, 5 * GiB, 1 * GiB),
    (8, 6, 1, 10 * GiB, 3 * GiB),
]
with forbid(*_no_delegation, exercise="Exercise 5 (hidden cases)"):
    _answers = {case: memory_ratio(*case) for case in _cases}


def _ratio(state, stash, gpipe_count, one_f_one_b_count):
    return (state + gpipe_count * stash) / (state + one_f_one_b_count * stash)


for (_p, _m, _s, _state, _stash), _got in _answers.items():
    _right = _ratio(_state, _stash, _m, min(_m, _p - _s))
    _hints = [
        (_m / min(_m, _p - _s), "the activations alone: the state is there under both schedules"),
        (
            _ratio(_state, _stash, _m, min(_m, _p - _s - 1)),
            "min(m, p − s − 1) stashes: the warm-up, not the peak",
        ),
        (_ratio(_state, _stash, _m, _p - _s), "p − s stashes without the clamp at m"),
        (
            _ratio(_state, _stash, _m, min(_m, _p - _s + 1)),
            "min(m, p − s + 1): a stage counted from 1",
        ),
        (1 / _right, "1F1B's peak over GPipe's: the ratio upside down"),
        (
            _ratio(_state, _stash, _m, min(_m, _p)),
            "min(m, p) on every stage: the peak depends on the stage",
        ),
        (_ratio(_state, _stash, _p, min(_m, _p - _s)), "p stashes under GPipe: it holds all m"),
        (float(_right // 1), "rounded down: // instead of /"),
    ]
    check_float(
        f"memory_ratio({_p}, {_m}, {_s}, {_state / GiB:g} GiB, {_stash / GiB:g} GiB)",
        _got,
        _right,
        known_wrong=distinct_hints(_hints, _right, rtol=1e-6, atol=1e-12),
    )
### END HIDDEN TESTS
passed("Exercise 5")

# %% [markdown]
# ### Exercise 6 — Explained answer: stage 0 runs out of memory (2 points, graded by hand)
#
# An 8-stage 1F1B pipeline with $m = 32$ microbatches runs out of memory on stage 0, while
# stage 7 uses half of its memory. Explain in three or four sentences, with numbers from this
# lesson, why the stages differ, and weigh two fixes: (a) $m = 64$ microbatches of half the size
# (the same batch), (b) moving one transformer layer from stage 0 to stage 7.

# %% [markdown] nbgrader={"grade": true, "grade_id": "explain_stage_memory", "locked": false, "points": 2, "schema_version": 3, "solution": true, "task": false}
# **Model answer** (the student release replaces this cell). Under 1F1B stage $s$ stashes
# $\min(m, p - s)$ microbatches: 8 on stage 0, only 1 on stage 7, so stage 0 holds 8× the
# activations with the same layers (stage 7's logits and loss narrow the gap but do not close
# it). (a) helps here, unlike under GPipe (pipe02): stage 0 still holds $\min(64, 8) = 8$
# stashes, each half the size, so its activation memory halves, and the overhead $(p - 1)/m$
# falls from 22 % to 11 %; the price is smaller, less efficient kernels and twice the messages,
# so measure $t_f + t_b$ at the smaller microbatch. (b) moves memory where it is free but makes
# stage 7 slower than the others, and the slowest stage sets every step: it trades step time for
# memory, unless stage 7's layers were the lighter ones.
#
# Rubric: 1 point for the per-stage counts $\min(m, p - s)$ (8 against 1) explaining the
# difference; 1 point for weighing both fixes correctly (a: count stays 8, bytes halve, kernel
# efficiency is the cost; b: imbalance slows the whole pipeline).

# %% [markdown]
# ## Takeaways
#
# - Stage $s$ of a 1F1B pipeline runs $w_s = \min(m, p - s - 1)$ warm-up forwards, $m - w_s$
#   forward/backward pairs and $w_s$ cool-down backwards.
# - With balanced stages and no latency its step equals fill-drain's, $(m + p - 1)(t_f + t_b)$;
#   a per-hop latency costs it more than fill-drain.
# - A stash lives from its forward's start to its backward's end; the per-rank order fixes how
#   many overlap: $\min(m, p - s)$ under 1F1B, $m$ under GPipe; under 1F1B, more microbatches
#   of the same size cost no activation memory once $m \ge p$.
# - The trap: counting the warm-up as the peak. The warm-up is $p - s - 1$, the peak $p - s$,
#   both clamped at $m$ — and frameworks count the warm-up differently for the same order.

# %% [markdown]
# ## Going further (optional, ungraded)
#
# - Megatron-LM (`schedules.py` at commit 4dabc62, section 1) runs each steady-state pair
#   forward first, then backward. PyTorch 2.13's
#   `Schedule1F1B` (`torch/distributed/pipelining/schedules.py`) sets
#   `warmup_chunks = min(n_microbatches, num_stages - stage_index)`, then runs "1B1F" pairs, and
#   raises a ValueError when there are fewer microbatches than stages.
# - PipeDream (Narayanan et al. 2019, SOSP) ran 1F1B without a flush: forwards of the next batch
#   overlap backwards of this one, which needs several weight versions per stage (pipe07).
# - Splitting each backward into its input-gradient and weight-gradient halves lets the
#   weight-gradient work fill much of the bubble without raising any stage above the first
#   stage's $\min(m, p)$ stashes: the ZB-H1 schedule of Qi et al. (2024), which pipe04 simulates.
