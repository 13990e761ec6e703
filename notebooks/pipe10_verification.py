# %% [markdown]
# # pipe10 · Pipeline schedule verification
#
# **Objective.** Validate operation identities, dependencies, versions, memory, numeric results,
# and bounded progress before trusting a throughput trace.
#
# **Time:** 29 min · **Level:** advanced
#
# You will be able to
# - check that a schedule lists every action exactly once;
# - find the events in a trace that started before their inputs were ready;
# - count live activation stashes per stage against a memory bound;
# - test numerics against a sequential reference, and say which check a fast trace fails.
#
# **What you need:** pipe02–pipe04 (schedules and their generators), pipe07 (weight versions),
# pipe09 (deadlocks); Python lists, dicts and tuples.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
# %matplotlib inline
import importlib
from importlib.resources import files

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from course_lib.checks import (
    check_choice,
    check_int,
    check_names,
    check_type,
    distinct_hints,
    forbid,
    passed,
)
from course_lib.explorers.verification import verification_explorer
from course_lib.figures.verification import faster_traces, in_flight_bars, program_grid
from course_lib.pipeline import Action, Schedule, gpipe, one_f_one_b, simulate, zero_bubble_h1
from course_lib.pipeline.verify import reference_gradients, run_schedule, verify

rng = np.random.default_rng(10)  # the course's convention; nothing in this lesson is random

t_f, t_b, t_w = 1e-3, 2e-3, 1e-3  # synthetic per-stage costs (seconds): forward, backward, W
p, m = 4, 8  # the worked example: 4 stages on 4 ranks, 8 microbatches


def as_tuples(schedule):
    """A Schedule's per-rank lists as plain (kind, stage, microbatch) tuples."""
    return [[(a.kind, a.stage, a.microbatch) for a in rank] for rank in schedule.actions]


def as_schedule(lists, num_stages, num_microbatches):
    """Per-rank tuples back to a Schedule (valid entries only), e.g. to simulate them."""
    actions = [[Action(*entry) for entry in rank] for rank in lists]
    return Schedule(num_stages, num_microbatches, len(lists), actions)


# Exercise 2's data: a profiled 1F1B step from a new runtime (synthetic; course_lib/data/README.md)
trace = pd.read_csv(str(files("course_lib") / "data" / "pipe10_trace.csv"))

# Exercise 4's data: four schedules for 4 stages, 8 microbatches, each run by an executor whose
# activation stash is first in, first out (a backward takes the oldest entry of its stage).
_zb = as_tuples(zero_bubble_h1(4, 8))
_ofob = as_tuples(one_f_one_b(4, 8))
candidates = {
    "A": as_tuples(one_f_one_b(4, 8)),
    "B": [[a for a in r if a[0] != "W"] + [a for a in r if a[0] == "W"] for r in _zb],  # W last
    "C": [r[: len(r) - (3 - s)] + r[len(r) - (3 - s) :][::-1] for s, r in enumerate(_ofob)],
    "D": as_tuples(gpipe(4, 8)),
}  # C: each rank's cool-down backwards in reverse microbatch order

IDENTITY_RULES = ("kind", "range", "duplicate", "missing")
_modules = {
    name: importlib.import_module(f"course_lib.pipeline.{name}")
    for name in ("schedule", "simulate", "stash", "verify")
}
IDENTITY_FORBIDDEN = [  # Exercise 1's grade cells: every course_lib route to the identity rules
    (_modules["verify"], "verify"), (_modules["verify"], "run_schedule"),
    (_modules["verify"]._Columns, "__init__"), (_modules["simulate"], "simulate"),
    (Schedule, "__post_init__"), (Schedule, "_first_bad"), (Schedule, "_check_action"),
    (Action, "__post_init__"), (_modules["stash"], "check_actions"),
]  # fmt: skip


def identity_reference(actions, num_stages, num_microbatches, split_backward):
    """Exercise 1's answer for ``actions`` from course_lib's verifier (used by the checks)."""
    found = verify(actions, num_stages, num_microbatches, split_backward=split_backward)
    out = {rule: [] for rule in IDENTITY_RULES}
    for v in found:
        if v.rule == "missing":
            out["missing"].append((v.action.kind, v.action.stage, v.action.microbatch))
        elif v.rule in out:
            out[v.rule].append((v.rank, v.position))
    return out


def _plain(label, items):
    check_type(label, items, list, tuple, set)
    out = []
    for k, item in enumerate(items):
        check_type(f"{label}[{k}]", item, tuple, list)
        out.append(
            str(tuple(int(x) if isinstance(x, np.integer) else x for x in item))
        )  # fmt: skip
    return out


def check_identity(label, got, expected, rules):
    """Exercise 1's check: a dict with the four keys; each named rule's entries as a set."""
    check_type(label, got, dict)
    check_names(f"the keys of {label}", [str(k) for k in got], IDENTITY_RULES)
    for rule in rules:
        name = f"{label}[{rule!r}]"
        check_names(name, _plain(name, got[rule]), [str(e) for e in expected[rule]])


def true_peaks(lists, num_stages, num_microbatches):
    """Peak live stashes per stage, from the simulator (used by Exercise 3's checks)."""
    timeline = simulate(as_schedule(lists, num_stages, num_microbatches), t_f, t_b, t_w)
    return [int(v) for v in timeline.peak_in_flight]


def check_peaks(label, got, expected, hints=()):
    """Exercise 3's check: one int per stage; hints (values per stage, mistake) where distinct."""
    check_type(label, got, list, tuple, np.ndarray)
    check_int(f"len({label}), one entry per stage", len(got), len(expected))
    for s, want in enumerate(expected):
        known = distinct_hints([(values[s], why) for values, why in hints], want)
        check_int(f"{label}[{s}]", got[s], want, known_wrong=known)


# Exercise 5's options: the checks in section order, and what each one catches
FAST_RUN_CHECKS = ("identity", "dependency", "progress", "memory", "version", "numeric", "none")
CHECK_MEANING = {
    "identity": "an action missing, repeated, of unknown kind or out of range",
    "dependency": "an action listed on its rank before one of its direct inputs (section 3) on "
    "the same rank, or started before an input ended",
    "progress": "every action is there and no rank lists a direct same-rank input late, yet ranks "
    "wait for each other for good (a deadlock), also when the cycle returns to one rank through "
    "others",
    "memory": "more live activation stashes on a stage than the bound",
    "version": "a backward on other weights than its forward's (asynchronous updates)",
    "numeric": "gradients unlike the sequential reference while every other rule passes",
    "none": "the run passes every check",
}


# %% [markdown]
# ## 1. A trace that looks faster may have done less work
#
# A schedule is a list of actions per rank (pipe02): F is a forward, B a backward (the input
# gradient only, when W, the weight gradient, is listed too). Throughput from a trace is
# microbatches over step time: it counts what should have run, not what did. Here is 1F1B on $p = 4$ stages with $m = 8$ microbatches ($t_f = 1$ ms, $t_b = 2$ ms per stage,
# synthetic), and a generator whose cool-down loop stops one microbatch short on every rank:

# %%
correct = one_f_one_b(p, m)
short = Schedule(
    p, m, p, [[a for a in r if a != Action("B", a.stage, m - 1)] for r in correct.actions]
)
runs = {"1F1B": simulate(correct, t_f, t_b), "1F1B, cool-down one short": simulate(short, t_f, t_b)}
gain = runs["1F1B"].makespan / runs["1F1B, cool-down one short"].makespan - 1
print(f"'throughput gain': {gain:.1%}")
faster_traces(runs)
plt.show()

# %% [markdown]
# The lower trace ends 3 ms sooner: 10 % more microbatches per second, for a step that never
# computed microbatch 7's gradients. The `Schedule` constructor accepted it and the simulator ran
# it; neither checks that the work is all there. A **verifier** does, rule by rule, before anyone
# reads the step time.

# %% [markdown]
# ## 2. Identities: every action exactly once, every index in range
#
# For $p$ stages and $m$ microbatches the schedule must list, over all ranks:
#
# $$\#\{F(s, j)\} = \#\{B(s, j)\} = 1 \quad \text{for every } s \in [0, p),\ j \in [0, m),$$
#
# and $\#\{W(s, j)\} = 1$ when the backward is split (ZB-H1, pipe04). So a verifier reports each
# entry of an unknown **kind**, each stage or microbatch out of **range**, each **duplicate**
# (a repeat of an entry listed before) and each **missing** action. A recomputing schedule must
# declare its second forward as a kind of its own, or it reads as a duplicate F. `verify`
# (course_lib.pipeline.verify) returns violations naming the rule, the rank, the position in
# that rank's list and the action:

# %%
found = verify(short)
for v in found:
    print(v)
program_grid(short, found, title="1F1B, cool-down one short: every entry on the grid is fine")
plt.show()

# %% [markdown]
# Rows are ranks, boxes are list entries in program order (label: the microbatch), coloured by
# kind. No box is outlined: every entry is valid. The defect, listed below the grid, is what is
# not there.

# %% [markdown]
# ## 3. Dependencies and bounded progress
#
# An action needs its inputs (the simulator's dependencies, pipe02):
# $F(k, j)$ after $F(k-1, j)$; $B(k, j)$ after $B(k+1, j)$ and after $F(k, j)$; $W(k, j)$
# after $B(k, j)$. Two checks follow:
#
# - in the **lists**, each input listed above that sits on the same rank must be listed earlier
#   (`dependency`); an input on another rank is waited for, even when the chain behind it leads
#   back to a later entry of this rank's list, and if the waits never end, ranks cannot make
#   **progress** (a deadlock, pipe09);
# - in a **trace**, every action must start at or after the end of each dependency:
#   $\text{start}(a) \ge \text{end}(d)$. Starting exactly at the end is fine.
#
# Move rank 1's first backward to right after its first forward (1F1B without its warm-up):

# %%
no_warmup = as_tuples(correct)
no_warmup[1].remove(("B", 1, 0))
no_warmup[1].insert(1, ("B", 1, 0))
for v in verify(no_warmup, p, m):
    print(v)

# %% [markdown]
# Every action is there once, yet rank 1 waits for a gradient that needs rank 2's next forward,
# which needs rank 1's: the verifier names each blocked rank and what it waits for. A runtime
# that skips a wait has correct lists and a shorter trace; only the trace check catches it
# (Exercise 2).

# %% [markdown]
# ## 4. Memory and weight versions
#
# Each F stashes its activations until the action that frees them: B, or W when the backward is
# split (ZB-H1, Qi et al. 2024, ICLR, Sec. 2.1; pipe04). Counted in a rank's program order,
# stage $s$'s live stashes rise by one at each F and fall by one at each release; the peak must
# fit a bound. 1F1B keeps at most $\min(m, p - s)$ on stage $s$ (pipe03; "p or fewer" in flight, Narayanan et al. 2021, §2.2.1):

# %%
bound = [min(m, p - s) for s in range(p)]
peaks = {
    "GPipe": simulate(gpipe(p, m), t_f, t_b).peak_in_flight,
    "1F1B": runs["1F1B"].peak_in_flight,
}
print(verify(gpipe(p, m), max_in_flight=bound)[0])
in_flight_bars(peaks, bound, title="peak live stashes per stage against 1F1B's bound")
plt.show()

# %% [markdown]
# GPipe keeps all 8 microbatches on every stage (outlined: above the black bound); 1F1B meets the
# bound exactly.
#
# With asynchronous PipeDream updates (weights change after each backward, Narayanan et al.
# 2019, §3.3) each B must use the weights its F used: weight stashing. Without it the verifier
# reports a B on newer weights than its forward, on 3 of 4 stages here:

# %%
unstashed = verify(correct, weight_updates="per_backward", stash_weights=False)
print(len(unstashed), "version violations; first:", unstashed[0].message)

# %% [markdown]
# ## 5. Numerics: run it against a sequential reference
#
# Passing every rule above, a schedule can still compute the wrong thing: an executor can hand a
# backward another microbatch's activations. `run_schedule` runs per-rank lists on a tiny tanh
# chain (one $4 \times 4$ weight matrix per stage, 3 samples per microbatch) and returns each
# stage's weight gradient; `reference_gradients` computes the same sum microbatch by
# microbatch. Here is 1F1B with an executor whose stash pops the newest entry (`stash="lifo"`):

# %%
reference = reference_gradients(p, m)
for policy in ("keyed", "lifo"):
    grads = run_schedule(correct, p, m, stash=policy)
    errors = [
        np.linalg.norm(g - r) / np.linalg.norm(r) for g, r in zip(grads, reference, strict=True)
    ]
    print(f"stash={policy!r}: relative error per stage", np.round(errors, 3))

# %% [markdown]
# Keyed by (stage, microbatch), the gradients match to rounding; popped newest-first, stages
# 0–2 are off by more than 100 % with every event present, ordered and within memory. The last
# stage runs each B right after its F: one stash, nothing to mix up.

# %% [markdown]
# ## Explore
#
# Pick a generator and mutate one entry (rank, position). Try:
# - "drop": one `missing`, and numeric errors on every stage for an F; for a B, on that stage
#   and the ones before it;
# - "swap with next" on 1F1B's rank 3, position 0: a dependency violation; on rank 1, any
#   position: nothing (no adjacent swap there reverses a dependency);
# - "none" with stash "lifo", then "fifo": which schedules does an oldest-first stash run
#   correctly?
# - bound 4 on GPipe, then on 1F1B: which stages break it?

# %%
verification_explorer()

# %% [markdown]
# ## Exercises
#
# Answer in the `YOUR CODE HERE` cells and run the grade cell below each; hidden tests check
# more at grading, and `course_lib` routines that would answer an exercise are disabled there.
#
# ### Exercise 1 — Implement the identity checks (3 points: 1a 2, 1b 1)
#
# Write `identity_violations(actions, num_stages, num_microbatches, split_backward)`. `actions[r]`
# is rank r's list of `(kind, stage, microbatch)` tuples, possibly malformed; read the lists in
# rank order. Return a dict with four lists (any order):
#
# - `"kind"`: `(rank, position)` of each entry whose kind is not `"F"` or `"B"` (`"W"` is valid
#   only when `split_backward` is True);
# - `"range"`: `(rank, position)` of each entry of valid kind with stage outside
#   `[0, num_stages)` or microbatch outside `[0, num_microbatches)`;
# - `"duplicate"`: `(rank, position)` of each entry of valid kind and range that repeats an
#   earlier such entry (the later ones, not the first);
# - `"missing"`: `(kind, stage, microbatch)` of each action required (F and B of every stage and
#   microbatch, W too when split) that no entry of valid kind and range provides.
#
# An action on the "wrong" rank still counts. Hidden cases drop, move and repeat actions (also
# on another rank, also malformed ones); 1a grades `"duplicate"` and `"missing"`, 1b the rest.


# %% nbgrader={"grade": false, "grade_id": "identity_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def identity_violations(actions, num_stages, num_microbatches, split_backward):
    """Entries of unknown kind, out of range, duplicated, and the actions missing."""
    ### BEGIN SOLUTION
    kinds = ("F", "B", "W") if split_backward else ("F", "B")
    out = {"kind": [], "range": [], "duplicate": [], "missing": []}
    seen = set()
    for rank, rank_actions in enumerate(actions):
        for position, (kind, stage, microbatch) in enumerate(rank_actions):
            if kind not in kinds:
                out["kind"].append((rank, position))
            elif not (0 <= stage < num_stages and 0 <= microbatch < num_microbatches):
                out["range"].append((rank, position))
            elif (kind, stage, microbatch) in seen:
                out["duplicate"].append((rank, position))
            else:
                seen.add((kind, stage, microbatch))
    for kind in kinds:
        for stage in range(num_stages):
            for microbatch in range(num_microbatches):
                if (kind, stage, microbatch) not in seen:
                    out["missing"].append((kind, stage, microbatch))
    return out
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "identity_duplicate_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 1a: identity_violations finds the repeated and the missing actions."""
_visible = as_tuples(one_f_one_b(3, 4))
_visible[1].insert(4, ("F", 1, 2))  # F(s1,m2) again, right after its first listing
_visible[0].remove(("B", 0, 1))
with forbid(*IDENTITY_FORBIDDEN, exercise="Exercise 1a"):
    _got = identity_violations([list(r) for r in _visible], 3, 4, False)
check_identity(
    "identity_violations(1F1B(3, 4), F(s1,m2) twice, B(s0,m1) dropped)",
    _got,
    identity_reference(_visible, 3, 4, False),
    ("duplicate", "missing"),
)
### BEGIN HIDDEN TESTS


def _edited(schedule, drop=(), add=()):
    """A generator's tuples with entries removed (each (rank, entry)) and inserted ((rank,
    position, entry))."""
    lists = as_tuples(schedule)
    for rank, entry in drop:
        lists[rank].remove(entry)
    for rank, position, entry in add:
        lists[rank].insert(position, entry)
    return lists


from course_lib.pipeline import interleaved_1f1b as _interleaved

_hidden = [  # (label, actions, num_stages, num_microbatches, split_backward)
    ("GPipe(4, 8), B(s2,m5) dropped", _edited(gpipe(4, 8), drop=[(2, ("B", 2, 5))]), 4, 8, False),
    ("1F1B(4, 8), F(s0,m6) listed last again",
     _edited(one_f_one_b(4, 8), add=[(0, 16, ("F", 0, 6))]), 4, 8, False),
    ("ZB-H1(4, 6), W(s3,m5) dropped", _edited(zero_bubble_h1(4, 6), drop=[(3, ("W", 3, 5))]),
     4, 6, True),
    ("ZB-H1(3, 4), every W dropped",
     [[a for a in r if a[0] != "W"] for r in as_tuples(zero_bubble_h1(3, 4))], 3, 4, True),
    ("interleaved(2, 4, 2), F(s3,m1) also at the start of rank 0",
     _edited(_interleaved(2, 4, 2), add=[(0, 0, ("F", 3, 1))]), 4, 4, False),
    ("1F1B(3, 4), B(s1,m2) moved to rank 0",
     _edited(one_f_one_b(3, 4), drop=[(1, ("B", 1, 2))], add=[(0, 8, ("B", 1, 2))]), 3, 4, False),
    ("GPipe(2, 3), F(s0,m1) three times",
     _edited(gpipe(2, 3), add=[(0, 2, ("F", 0, 1)), (0, 5, ("F", 0, 1))]), 2, 3, False),
    ("1F1B(4, 8), clean", as_tuples(one_f_one_b(4, 8)), 4, 8, False),
    ("1F1B(2, 3), rank 1's list empty", [as_tuples(one_f_one_b(2, 3))[0], []], 2, 3, False),
    ("ZB-H1(2, 2), W(s1,m0) also twice at the start of rank 0",
     _edited(zero_bubble_h1(2, 2), add=[(0, 0, ("W", 1, 0)), (0, 0, ("W", 1, 0))]), 2, 2, True),
    ("1F1B(3, 4), R(s0,m2) twice on rank 0, B(s2,m4) on ranks 1 and 2",
     _edited(one_f_one_b(3, 4), add=[(0, 2, ("R", 0, 2)), (0, 5, ("R", 0, 2)),
                                     (1, 0, ("B", 2, 4)), (2, 3, ("B", 2, 4))]), 3, 4, False),
    ("1F1B(2, 3), unsplit, W(s1,m0) twice on rank 1",
     _edited(one_f_one_b(2, 3), add=[(1, 1, ("W", 1, 0)), (1, 4, ("W", 1, 0))]), 2, 3, False),
]  # fmt: skip
with forbid(*IDENTITY_FORBIDDEN, exercise="Exercise 1a (hidden cases)"):
    _answers = [identity_violations([list(r) for r in a], s, j, w) for _, a, s, j, w in _hidden]
for (_label, _actions, _s, _j, _w), _got in zip(_hidden, _answers, strict=True):
    _want = identity_reference(_actions, _s, _j, _w)
    check_identity(f"identity_violations({_label})", _got, _want, ("duplicate", "missing"))
### END HIDDEN TESTS
passed("Exercise 1a")

# %% nbgrader={"grade": true, "grade_id": "identity_kind_range_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 1b: identity_violations flags unknown kinds and indices out of range."""
_visible = as_tuples(one_f_one_b(3, 4))
_visible[0][2] = ("R", 0, 2)  # a recompute the rules do not declare
_visible[2][7] = ("B", 2, 4)  # microbatch 4 of 4
_visible[1].append(("W", 1, 0))  # a W in an unsplit schedule
with forbid(*IDENTITY_FORBIDDEN, exercise="Exercise 1b"):
    _got = identity_violations([list(r) for r in _visible], 3, 4, False)
check_identity(
    "identity_violations(1F1B(3, 4) with R(s0,m2), B(s2,m4) and a W)",
    _got,
    identity_reference(_visible, 3, 4, False),
    ("kind", "range"),
)
### BEGIN HIDDEN TESTS
_a = as_tuples(one_f_one_b(4, 4))
_a[0][0] = ("F", -1, 0)
_a[1][1] = ("f", 1, 1)
_a[2][2] = ("", 2, 0)
_a[3][3] = ("X", 9, 9)  # unknown kind and out of range: a kind violation only
_a[3].extend([("B", 4, 0), ("B", 4, 0)])  # stage 4 of 4, twice: both out of range
_a[0].append(("F", 0, 4))
_b = as_tuples(zero_bubble_h1(3, 3))
_b[1].append(("W", 1, 3))
_b[2][0] = ("W", 2, -1)
_b[0].insert(0, ("R", 0, 0))
_hidden = [
    ("1F1B(4, 4) with six malformed entries", _a, 4, 4, False),
    ("ZB-H1(3, 3) with W(s1,m3), W(s2,m-1) and R(s0,m0)", _b, 3, 3, True),
    ("ZB-H1(3, 3) read as unsplit", as_tuples(zero_bubble_h1(3, 3)), 3, 3, False),
    ("GPipe(2, 2), clean", as_tuples(gpipe(2, 2)), 2, 2, False),
]
with forbid(*IDENTITY_FORBIDDEN, exercise="Exercise 1b (hidden cases)"):
    _answers = [identity_violations([list(r) for r in a], s, j, w) for _, a, s, j, w in _hidden]
for (_label, _actions, _s, _j, _w), _got in zip(_hidden, _answers, strict=True):
    _want = identity_reference(_actions, _s, _j, _w)
    check_identity(f"identity_violations({_label})", _got, _want, ("kind", "range"))
### END HIDDEN TESTS
passed("Exercise 1b")

# %% [markdown]
# ### Exercise 2 — The events that did not wait (2 points)
#
# `trace` (setup) is a profiled 1F1B step on 4 ranks with 6 microbatches, one row per event:
# `rank`, `kind`, `stage`, `microbatch`, `start`, `end` (seconds), sorted by start, then rank.
# Kernel times vary by up to 20 % around $t_f = 1$ ms, $t_b = 2$ ms, so many events
# start earlier than the simulator's 1F1B says without being wrong. Set `early_events` to a list
# of the `(kind, stage, microbatch)` tuples of every event that starts before one of its
# dependencies (section 3) ends (an empty list if none does).

# %% nbgrader={"grade": false, "grade_id": "dependency_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
_end = {(e.kind, e.stage, e.microbatch): e.end for e in trace.itertuples()}
early_events = []
for _e in trace.itertuples():
    _k, _s, _j = _e.kind, int(_e.stage), int(_e.microbatch)
    _deps = [("F", _s - 1, _j)] if _k == "F" else [("F", _s, _j), ("B", _s + 1, _j)]
    if any(_e.start < _end[d] for d in _deps if d in _end):
        early_events.append((_k, _s, _j))
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "dependency_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 2: early_events, the (kind, stage, microbatch) of every event that started before
a dependency ended."""
check_type("early_events", early_events, list, tuple, set)
_events = set(zip(trace.kind, trace.stage.astype(int), trace.microbatch.astype(int), strict=True))
_plain_events = []
for _k, _item in enumerate(early_events):
    check_type(f"early_events[{_k}]", _item, tuple, list)
    check_int(f"len(early_events[{_k}]): (kind, stage, microbatch)", len(_item), 3)
    check_type(f"early_events[{_k}][0] (the kind)", _item[0], str)
    check_int(f"early_events[{_k}][1] (the stage)", _item[1], _item[1])
    check_int(f"early_events[{_k}][2] (the microbatch)", _item[2], _item[2])
    _plain_events.append((_item[0], int(_item[1]), int(_item[2])))
check_int(
    "events of early_events not in trace",
    len([e for e in _plain_events if e not in _events]),
    0,
)
check_int("repeats in early_events", len(_plain_events) - len(set(_plain_events)), 0)
_ties = {  # events that start exactly when a dependency ends: at the end is not before it
    ("F", 1, 0): "F(s1,m0) starts exactly when F(s0,m0) ends",
    ("B", 2, 0): "B(s2,m0) starts exactly when B(s3,m0) ends",
    ("B", 3, 0): "B(s3,m0) starts exactly when F(s3,m0) ends",
}
for _tie, _what in _ties.items():
    check_choice(
        f"is {_tie} in early_events",
        str(_tie in _plain_events),
        "False",
        {
            "True": f"{_what}: starting at a dependency's end is not before it (compare with "
            "the dependencies' ends in this trace)",
            "False": "",
        },
    )
### BEGIN HIDDEN TESTS
_right = [("B", 1, 4), ("B", 3, 2), ("F", 3, 5)]
_options = {
    str(_right): "the right events",
    "[]": "no event started early; each kind of dependency is broken once in this trace",
    str([("B", 1, 4), ("B", 3, 2)]): "only the backwards: F(k, j) also needs F(k - 1, j)",
    str([("B", 3, 2), ("F", 3, 5)]): "B(k, j) also needs B(k + 1, j)'s gradient",
    str([("B", 1, 4), ("F", 3, 5)]): "B(s, j) also needs its own forward F(s, j)",
    str([("B", 2, 4), ("F", 2, 5), ("F", 3, 2)]): "the dependencies, not the events that "
    "started before they ended",
}
_got = str(sorted(set(_plain_events)))
if _got not in _options:
    _options[_got] = (
        "not the set of events that start before one of their dependencies ends (starting "
        "earlier than the simulator's nominal run is not a violation)"
    )
check_choice("sorted(early_events)", _got, str(_right), _options)
### END HIDDEN TESTS
passed("Exercise 2")

# %% [markdown]
# ### Exercise 3 — Peak live stashes of a program order (2 points)
#
# Write `peak_stashes(actions, num_stages)`: `actions[r]` is rank r's list of valid `(kind,
# stage, microbatch)` tuples. Return, per stage, the peak number of live activation stashes when
# each rank runs its list in order: an F adds one on its stage; the release frees one (W if any
# entry is a W, else B). An action whose release is missing is never freed. A rank may hold
# several stages (interleaved).


# %% nbgrader={"grade": false, "grade_id": "memory_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def peak_stashes(actions, num_stages):
    """Peak live activation stashes per stage, counted in each rank's program order."""
    ### BEGIN SOLUTION
    release = "W" if any(a[0] == "W" for rank in actions for a in rank) else "B"
    live, peak = [0] * num_stages, [0] * num_stages
    for rank_actions in actions:
        for kind, stage, _ in rank_actions:
            if kind == "F":
                live[stage] += 1
                peak[stage] = max(peak[stage], live[stage])
            elif kind == release:
                live[stage] -= 1
    return peak
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "memory_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 3: peak_stashes(actions, num_stages), one int per stage."""
import course_lib.pipeline.formulas as _formulas
import course_lib.pipeline.imbalance as _imbalance
import course_lib.pipeline.interleaving as _interleaving
import course_lib.pipeline.partition as _partition

_simulate = importlib.import_module("course_lib.pipeline.simulate")
_verify = importlib.import_module("course_lib.pipeline.verify")

_no_delegation = [
    (_verify, "verify"), (_verify, "run_schedule"), (_simulate, "simulate"),
    (_simulate.Timeline, "in_flight"), (_simulate.Timeline, "lifetime"),
    (_imbalance, "live_stashes"), (_imbalance, "live_stashes_at"),
    (_interleaving, "rank_stash"), (_interleaving, "peak_rank_stash"),
    (_partition, "stage_in_flight"), (_formulas, "peak_in_flight_gpipe"),
    (_formulas, "peak_in_flight_one_f_one_b"), (_formulas, "peak_in_flight_zero_bubble_h1"),
]  # fmt: skip
_zb3 = as_tuples(zero_bubble_h1(3, 4))
with forbid(*_no_delegation, exercise="Exercise 3"):
    _got = peak_stashes([list(r) for r in _zb3], 3)
_at_b = true_peaks([[a for a in r if a[0] != "W"] for r in _zb3], 3, 4)
check_peaks(
    "peak_stashes(ZB-H1(3, 4))",
    _got,
    true_peaks(_zb3, 3, 4),
    [(_at_b, "freed at B; this schedule lists W, which frees the stash")],
)
### BEGIN HIDDEN TESTS
from course_lib.pipeline import interleaved_1f1b as _interleaved

_cases = [  # (label, lists, num_stages, num_microbatches)
    ("GPipe(4, 8)", as_tuples(gpipe(4, 8)), 4, 8),
    ("1F1B(4, 8)", as_tuples(one_f_one_b(4, 8)), 4, 8),
    ("ZB-H1(4, 8)", as_tuples(zero_bubble_h1(4, 8)), 4, 8),
    ("ZB-H1(4, 8), every W moved to the end", candidates["B"], 4, 8),
    ("interleaved(2, 4, 2)", as_tuples(_interleaved(2, 4, 2)), 4, 4),
    ("1F1B(4, 8), B(s, 0) dropped on every stage",
     [[a for a in r if a[0] != "B" or a[2] != 0] for r in as_tuples(one_f_one_b(4, 8))], 4, 8),
    ("two stages, rank 0 runs F0 F1 B0 F2 F3 F4 B1 B2 B3 B4",
     [[("F", 0, 0), ("F", 0, 1), ("B", 0, 0), ("F", 0, 2), ("F", 0, 3), ("F", 0, 4), ("B", 0, 1),
       ("B", 0, 2), ("B", 0, 3), ("B", 0, 4)],
      [a for j in range(5) for a in (("F", 1, j), ("B", 1, j))]], 2, 5),
]  # fmt: skip
with forbid(*_no_delegation, exercise="Exercise 3 (hidden cases)"):
    _answers = [peak_stashes([list(r) for r in lists], s) for _, lists, s, _ in _cases]
for (_label, _lists, _s, _j), _got in zip(_cases, _answers, strict=True):
    _want = true_peaks(_lists, _s, _j)
    _hints = [
        ([_j] * _s, "every forward of the stage, as if nothing were ever freed"),
        ([w - 1 for w in _want], "one short: count the F's stash before comparing with the peak"),
    ]
    if any(a[0] == "W" for r in _lists for a in r):
        _hints.append(
            (true_peaks([[a for a in r if a[0] != "W"] for r in _lists], _s, _j), "freed at B")
        )
    check_peaks(f"peak_stashes({_label})", _got, _want, _hints)
### END HIDDEN TESTS
passed("Exercise 3")

# %% [markdown]
# ### Exercise 4 — Which schedule computes the wrong gradient? (1 point)
#
# `candidates` (setup): four schedules for 4 stages, 8 microbatches. A is 1F1B; B is ZB-H1 with
# each rank's W's moved to the end of its list; C is 1F1B with each rank's cool-down backwards
# in reverse microbatch order; D is GPipe. All pass `verify`'s identity, dependency and progress
# rules. The executor takes a backward's activations from the oldest entry of its stage's
# stash. Predict from each stage's order of B's, then run them (`run_schedule(...,
# stash="fifo")` against `reference_gradients(4, 8)`); set `wrong_schedule` to the letter of the
# one whose gradients differ, or `"none"`.

# %% nbgrader={"grade": false, "grade_id": "numeric_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
_ref = reference_gradients(4, 8)
for _name, _lists in candidates.items():
    _grads = run_schedule(_lists, 4, 8, stash="fifo")
    if not all(np.allclose(g, r, rtol=1e-9, atol=0) for g, r in zip(_grads, _ref, strict=True)):
        wrong_schedule = _name
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "numeric_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 4: wrong_schedule, "A", "B", "C", "D" or "none"."""
_why = {
    "A": "1F1B runs each stage's backwards in forward order, which an oldest-first stash matches",
    "B": "W's run late, but a W finds its input gradient by (stage, microbatch); the stash order "
    "is that of the B's, which still follow the forwards",
    "C": "",
    "D": "GPipe runs every backward in forward order after all forwards: oldest first is right",
    "none": "one schedule pops another microbatch's activations on its reversed stages",
}
check_choice("wrong_schedule", wrong_schedule, wrong_schedule, _why)
### BEGIN HIDDEN TESTS
check_choice("wrong_schedule", wrong_schedule, "C", _why)
### END HIDDEN TESTS
passed("Exercise 4")

# %% [markdown]
# ### Exercise 5 — Which check catches each fast run? (1 point)
#
# Each run reports more throughput than a trusted baseline. Set `fails` to a dict from each
# letter to the first check, in section order, that it fails (`verify` with the right
# arguments, or the trace check): `"identity"`, `"dependency"`, `"progress"`, `"memory"`,
# `"version"`, `"numeric"`, or `"none"`. Answers may repeat.
#
# | | what you see |
# |---|---|
# | A | 1F1B, hung at 41 ms; rank 2's list has no B of microbatch 5 |
# | B | interleaved 1F1B, 4 ranks, 8 stages (rank 0 holds stages 0 and 4), hung; rank 0 lists B(s0,m3) before B(s4,m3) |
# | C | 1F1B whose recomputed forwards are emitted as a second F(s, j) just before each B(s, j); peak memory is lower |
# | D | the baseline's schedule and lists, with a fused kernel, 6 % faster: every event once, in list order, within memory; B(s2,m9) starts exactly when B(s3,m9) ends; gradients match the reference |

# %% nbgrader={"grade": false, "grade_id": "fast_trace_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
fails = {
    "A": "identity",  # B(s2,m5) missing: the hang follows from it (progress counts it as done)
    "B": "progress",  # B(s0,m3) waits on rank 1, which waits through stages 2-3 for B(s4,m3)
    "C": "identity",  # a second F(s, j) is a duplicate unless declared as its own kind
    "D": "none",  # starting at a dependency's end is allowed
}
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "fast_trace_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 5: fails, a dict from "A".."D" to the check that catches each run, or "none"."""
check_type("fails", fails, dict)
check_names("the keys of fails", [str(k) for k in fails], list("ABCD"))
for _key in "ABCD":
    check_choice(f"fails[{_key!r}]", fails[_key], fails[_key], dict.fromkeys(FAST_RUN_CHECKS, ""))
### BEGIN HIDDEN TESTS
_why = {
    "A": {"progress": "the job hung, but because B(s2,m5) is in no list: identity comes first "
          "(verify counts a missing action as done when it checks progress)"},
    "B": {"dependency": "B(s4,m3) is not one of B(s0,m3)'s inputs (that is B(s1,m3), on rank "
          "1); it is only reached through ranks 1-3: a cross-rank wait that never ends"},
    "C": {"memory": "memory went down, not up; the second F(s, j) repeats an action",
          "none": "a second F(s, j) is a repeat unless declared as its own kind (section 2)"},
    "D": {"dependency": "starting exactly at a dependency's end is allowed (section 3)"},
}  # fmt: skip
for _key, _right in {"A": "identity", "B": "progress", "C": "identity", "D": "none"}.items():
    _explain = dict(CHECK_MEANING) | {
        k: f"{CHECK_MEANING[k]}; {why}" for k, why in _why[_key].items()
    }
    check_choice(f"fails[{_key!r}]", fails[_key], _right, _explain)
### END HIDDEN TESTS
passed("Exercise 5")

# %% [markdown]
# ### Exercise 6 — Explained answer: verify returned nothing (2 points, graded by hand)
#
# A colleague's new schedule is 9 % faster than 1F1B on the same model, and
# `verify(schedule)` (default arguments) returns `[]`. In three or four sentences: what has that
# call not checked, what do you run before you believe the 9 %, and why is "the loss curve looked
# the same for 100 steps" not enough?

# %% [markdown] nbgrader={"grade": true, "grade_id": "explain_clean_verify", "locked": false, "points": 2, "schema_version": 3, "solution": true, "task": false}
# **Model answer** (the student release replaces this cell). With default arguments `verify`
# checks identities, placement, list dependencies and progress, but no memory bound
# (`max_in_flight`), no weight versions (`weight_updates`) and no numerics (`numeric=False`);
# and it checks the lists, not what the runtime did. So I run it with the job's memory bound and
# `numeric=True` under the real executor's stash policy, and check the profiled trace itself:
# every event once, each starting after its dependencies end. A loss curve is a noisy, aggregate
# signal: a skipped microbatch or a mixed-up stash changes the gradient by a fraction that 100
# steps of loss do not resolve, while the gradient comparison is exact to rounding.
#
# Rubric: 1 point for naming the unchecked rules (memory, versions, numerics, and the trace vs
# the lists); 1 point for a concrete check to run and why the loss curve cannot stand in for it.

# %% [markdown]
# ## Takeaways
#
# - Count before you time: one F and one B (and W when split) per (stage, microbatch); a
#   missing action makes a trace shorter, not wrong-looking.
# - Dependencies hold in the lists and in the trace: start at or after each dependency's end.
# - Stashes must fit the memory bound; asynchronous updates need each B on its F's weights.
# - An executor can pass every ordering rule and still mix up microbatches: compare gradients
#   with a sequential reference.
# - The trap: trusting a throughput gain before the step is shown to do all the work, in order,
#   in memory, with the right numbers.
