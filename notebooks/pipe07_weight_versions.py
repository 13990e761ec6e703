# %% [markdown]
# # pipe07 · Pipeline weight-version consistency
#
# **Objective.** Distinguish matching local forward/backward weights from synchronous
# global-update semantics and delayed-gradient algorithms.
#
# **Time:** 29 min · **Level:** advanced
#
# You will be able to
# - say which weight version each stage uses for a microbatch's forward and backward under a
#   flushed schedule, PipeDream's weight stashing and PipeDream-2BW, and how many versions each
#   stage stores;
# - tell "forward and backward on the same weights" (local consistency) apart from "the update
#   synchronous SGD would make" (global semantics);
# - measure what a delayed gradient costs on a quadratic: not progress per step, but the range of
#   stable step sizes.
#
# **What you need:** pipe03 (1F1B's warm-up of $p - 1 - s$ forwards on stage $s$). numpy at the
# level of a loop over an array.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
# %matplotlib inline
import matplotlib.pyplot as plt
import numpy as np

from course_lib.checks import (
    check_choice,
    check_float,
    check_int,
    check_names,
    check_type,
    distinct_hints,
    forbid,
    passed,
)
from course_lib.explorers.versions import versions_explorer
from course_lib.figures.versions import (
    delayed_loss_curves,
    flushed_steps,
    version_boxes,
    version_grids,
)
from course_lib.pipeline import gpipe, one_f_one_b, simulate
from course_lib.pipeline.versions import (
    delayed_gradient_descent,
    quadratic_loss,
    random_quadratic,
    stage_order,
    weight_versions,
)

rng = np.random.default_rng(7)  # the course's convention; the quadratic has its own seed

GiB = 2**30
bytes_per_param = 2  # bf16 weights


def stage_orders_of(schedule):
    """Per stage, the (kind, microbatch) actions in the order they ran (unit-cost simulation)."""
    timeline = simulate(schedule, 1.0, 2.0)
    return [[(a.kind, a.microbatch) for a in order] for order in stage_order(timeline)]


# Exercise 2: a synthetic 6-stage split of a 6.15e9-parameter model (embedding on stage 0, the
# output head on stage 5).
params_per_stage = [1.3e9, 0.85e9, 0.85e9, 0.85e9, 0.85e9, 1.45e9]

# Exercise 4: a synthetic quadratic f(w) = ½ wᵀAw, eigenvalues 1 to 50, and a grid of steps.
hessian = random_quadratic(8, 50.0, seed=7)
w_start = np.ones(8)
lam_max = float(np.linalg.eigvalsh(hessian).max())
step_grid = (np.arange(20) + 0.5) / 10 / lam_max  # 0.05/λ_max, 0.15/λ_max, ..., 1.95/λ_max
max_iterations = 2000

# %% [markdown]
# ## 1. A flushed step uses one weight version: large-batch synchronous SGD
#
# Stage $s$ holds the weights $W_s$ of its layers; *version* $v$ is $W_s$ after $v$ optimizer
# updates. This lesson asks which version each forward and each backward reads.
#
# GPipe (Huang et al. 2019, §2.2) and 1F1B with a flush (PipeDream-Flush, Narayanan et al. 2021,
# "Memory-Efficient Pipeline-Parallel DNN Training", ICML, §3.2) accumulate the gradients of all
# $m$ microbatches of a step and update every stage once, after the last backward. Every action
# of step $t$ reads version $t$:
#
# $$W(t+1) = W(t) - \nu \nabla f(W(t)),$$
#
# with learning rate $\nu$ and $\nabla f$ the gradient over the step's $m$ microbatches:
# synchronous SGD with batch $m \cdot b$. The price is the flush: the pipeline drains before the
# update and refills after it (pipe02's bubble).

# %% [markdown]
# ## 2. Without a flush, weight stashing keeps each stage consistent, not the pipeline
#
# PipeDream (Narayanan et al. 2019, "PipeDream: Generalized Pipeline Parallelism for DNN
# Training", SOSP, §3.3) removes the flush: 1F1B runs a stream of microbatches and a stage
# updates its weights after every backward. In steady state microbatch $j$'s forward on stage
# $s$ comes after $j - (p - 1 - s)$ backwards of that stage ($p - 1 - s$ is pipe03's warm-up),
# so it reads version $j - (p - 1 - s)$.
#
# By the time $j$'s backward reaches stage $s$, the stage has updated $p - 1 - s$ more times; a
# backward on the newest weights would differentiate a function the forward never computed.
# **Weight stashing** keeps the version each in-flight microbatch's forward used and runs its
# backward on it: **$p - s$ versions** on stage $s$ in steady state.
#
# The versions still differ *across* stages: on 4 stages, microbatch $j$ sees version $j - 3$ on
# stage 0 and $j$ on stage 3, a model that never existed as a whole. With 0-indexed stages (the
# paper counts from 1),
#
# $$W(t+1) = W(t) - \nu \nabla f\big(W_0(t - p + 1), W_1(t - p + 2), \ldots, W_{p-1}(t)\big).$$
#
# `weight_versions` replays a simulated timeline and counts, stage by stage, the updates before
# each action; `version_boxes` pairs each action with its version. Four stages, 12 microbatches:

# %%
p, m = 4, 4
stream = simulate(one_f_one_b(p, 3 * m), 1.0, 2.0)  # forward 1, backward 2 (time units)
stashed = weight_versions(stream, "stashing")
double = weight_versions(stream, "2bw", microbatches_per_batch=m)
print("microbatch 5, version per stage (stashing):", stashed.forward[:, 5].tolist())
print("versions held per stage (stashing):        ", stashed.held.tolist())
print("microbatch 5, version per stage (2BW):     ", double.forward[:, 5].tolist())
print("versions held per stage (2BW):             ", double.held.tolist())
version_grids(
    {
        "Flushed 1F1B (PipeDream-Flush): 3 steps of 4 microbatches, one version per step": (
            flushed_steps(p, m, 3)
        ),
        "PipeDream, weight stashing: an update after every backward": version_boxes(
            stream, stashed
        ),
        "PipeDream-2BW: an update after every batch of m = 4 microbatches": version_boxes(
            stream, double
        ),
    },
    highlight=5,
)
plt.show()

# %% [markdown]
# Each box is an action, numbered and coloured by the version it reads (colours repeat every six
# versions); hatched boxes are backwards; microbatch 5 is outlined. Top: one version per step,
# and the 12 microbatches take 63 time units against 45 without flushes. Middle: a new version
# after every backward; microbatch 5 reads versions 2, 3, 4, 5 going down the stages, each
# forward and its backward on the same number. Bottom: 2BW, section 3.

# %% [markdown]
# ## 3. Double buffering keeps two versions and a one-step-stale gradient
#
# PipeDream-2BW (Narayanan et al. 2021, §3.1) groups the stream into batches of $m \ge p$
# microbatches and updates once per batch. A batch runs, on every stage, the version that was
# newest when its first microbatch entered the pipeline; its update lands while the next batch
# is in flight on the version before, so each stage holds **two versions** (the double buffer).
# Batches 0 and 1 both run on version 0 (batch 0's update is not in when batch 1 enters); after
# that, each batch runs on the weights right after the update of the batch two before it
# (version $v$ is the weights after $v$ updates, so batch 0's update makes version 1). Every
# stage uses the same version for a microbatch, one consistent model, but the gradient is one
# update stale, a delayed-gradient algorithm rather than synchronous SGD:
#
# $$W(t+1) = W(t) - \nu \nabla f(W(t-1)).$$

# %% [markdown]
# ## 4. A delay costs the range of stable step sizes, not progress per step
#
# Staleness is a delay $d$ in $W(t+1) = W(t) - \nu \nabla f(W(t-d))$. On a quadratic
# $f(w) = \tfrac12 w^\top A w$ the gradient is $A w$, and along an eigenvector of $A$ with
# eigenvalue $\lambda$ the error follows $x(t+1) = x(t) - q\,x(t - d)$ with $q = \nu\lambda$.
# That recursion converges iff $0 < q < 2\cos\big(d\pi/(2d+1)\big)$ (Levin and May 1976, "A note
# on difference-delay equations", Theoretical Population Biology 9): $q < 2$ for $d = 0$,
# $q < 1$ for $d = 1$, $q < 0.618$ for $d = 2$ (the course's tests check it against the roots
# of $z^{d+1} - z^d + q$).
#
# On a synthetic quadratic (8 dimensions, eigenvalues 1 to 50, $w(t) = w(0)$ for $t < 0$),
# `delayed_gradient_descent` runs every delay at one small step (left) and each delay at the
# step of `step_grid` that ends lowest after 400 iterations (right):

# %%
delayed_loss_curves(hessian, w_start, (0, 1, 2, 4), 0.3 / lam_max, step_grid, 400)
plt.show()

# %% [markdown]
# Left: at $\nu = 0.3/\lambda_{\max}$ the four curves coincide; a small step hides the delay.
# Right: delay 0 may take $\nu$ close to $2/\lambda_{\max}$, delay 1 only below
# $1/\lambda_{\max}$, delay 4 below $0.35/\lambda_{\max}$, and the tuned runs slow
# accordingly. Near a minimum a real loss behaves like a quadratic: stale gradients force a
# smaller learning rate.

# %% [markdown]
# ## Explore
#
# The version grid for a 1F1B stream of 3 batches of $m$ microbatches. Try:
# - PipeDream, $p = 4$: drag microbatch $j$ from 0 to 11; the versions along the outline go
#   $j - 3, \ldots, j$ in steady state, and the staleness row reads 3, 2, 1, 0.
# - PipeDream, drag $p$ from 2 to 8: stage 0 stores $p$ versions.
# - 2BW: every stage reads the same version and holds 2 ($m < p$ is raised to $p$).
# - Flushed: staleness 0, one version, and the idle gaps.

# %%
versions_explorer()

# %% [markdown]
# ## Exercises
#
# Answer in the `YOUR CODE HERE` cells, then run the grade cell below each (hidden tests check
# more at grading). `course_lib` routines that would answer an exercise are disabled in its grade
# cell.
#
# ### Exercise 1 — The versions a microbatch uses on each stage (3 points)
#
# Write `microbatch_versions(stage_orders, microbatch)`. `stage_orders[s]` lists the actions of
# stage $s$ in the order they ran, as `(kind, microbatch)` tuples with kind `"F"` or `"B"`
# (`stage_orders_of(schedule)` in the setup builds it). Under PipeDream's weight stashing (an
# update after every backward, no flush), return a list with, for each stage, the version
# `microbatch`'s forward (and so its backward) ran on, as ints. Hidden tests include orders that
# are not 1F1B, where no closed form applies, and a stream with $m < p$.


# %% nbgrader={"grade": false, "grade_id": "versions_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def microbatch_versions(stage_orders: list, microbatch: int) -> list[int]:
    """Per stage, the weight version microbatch's forward and backward use under stashing."""
    ### BEGIN SOLUTION
    versions = []
    for order in stage_orders:
        updates = 0
        for kind, j in order:
            if kind == "F" and j == microbatch:
                versions.append(updates)
                break
            if kind == "B":
                updates += 1
    return versions
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "versions_tests", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
"""Exercise 1: microbatch_versions(stage_orders, microbatch), one int version per stage."""
import importlib as _importlib

import course_lib.pipeline.imbalance as _imbalance
import course_lib.pipeline.versions as _versions

_verify = _importlib.import_module(
    "course_lib.pipeline.verify"
)  # the package's verify is a function

_no_delegation = [
    (_versions, name)
    for name in ("weight_versions", "stashing_version", "stashing_versions_held", "stage_order",
                 "stage_columns", "two_bw_version")
] + [(_verify, "verify"), (_imbalance, "live_stashes"), (_imbalance, "live_stashes_at")]  # fmt: skip


def _check_versions(label, got, expected, hints=()):
    check_type(label, got, list, tuple)
    check_int(f"len({label}) (one version per stage)", len(got), len(expected))
    _pairs = [(tuple(h), why) for h, why in hints]
    _named = distinct_hints(_pairs, tuple(expected))
    _why = _named.get(tuple(int(v) if isinstance(v, int) else -999 for v in got), "")
    for _s, (_v, _e) in enumerate(zip(got, expected, strict=True)):
        check_int(f"{label}[{_s}]" + (f" (looks like {_why})" if _why else ""), _v, _e)


_visible = {
    "1f1b": stage_orders_of(one_f_one_b(4, 8)),
    "gpipe": stage_orders_of(gpipe(3, 4)),
}
with forbid(*_no_delegation, exercise="Exercise 1"):
    _got_1f1b = microbatch_versions(_visible["1f1b"], 5)
    _got_gpipe = microbatch_versions(_visible["gpipe"], 2)
_check_versions(
    "microbatch_versions(1F1B p=4 m=8, 5)",
    _got_1f1b,
    [2, 3, 4, 5],
    [([5, 5, 5, 5], "the version current at the backward (no stashing), which here equals j"),
     ([3, 4, 5, 6], "versions counted from 1"), ([5, 4, 3, 2], "stages reversed"),
     ([1, 2, 3, 4], "j - (p - s) : stages counted from 1")],
)  # fmt: skip
_check_versions(
    "microbatch_versions(GPipe order p=3 m=4, no flush, 2)",
    _got_gpipe,
    [0, 0, 0],
    [([0, 1, 2], "the 1F1B closed form j - (p - 1 - s), but this order runs every forward "
      "before any backward: count the backwards that ran before each forward"),
     ([2, 2, 2], "the version current at the backward (no stashing), which here equals j"),
     ([1, 1, 1], "versions counted from 1")],
)  # fmt: skip
### BEGIN HIDDEN TESTS
_F, _B = "F", "B"
_hidden = [  # (stage_orders, microbatch, expected)
    (stage_orders_of(one_f_one_b(5, 12)), 2, [0, 0, 0, 1, 2]),
    (stage_orders_of(one_f_one_b(4, 10)), 9, [6, 7, 8, 9]),
    (stage_orders_of(one_f_one_b(6, 3)), 1, [0, 0, 0, 0, 0, 1]),  # m < p: warm-up min(m, p-1-s)
    (stage_orders_of(one_f_one_b(3, 6)), 0, [0, 0, 0]),
    # stage 0 fill-drain, stage 1 1F1B: no closed form in p
    ([[(_F, 0), (_F, 1), (_F, 2), (_F, 3), (_B, 0), (_B, 1), (_B, 2), (_B, 3)],
      [(_F, 0), (_B, 0), (_F, 1), (_B, 1), (_F, 2), (_B, 2), (_F, 3), (_B, 3)]], 3, [0, 3]),
    # forwards out of index order, backwards last-in first-out
    ([[(_F, 1), (_F, 0), (_B, 1), (_B, 0), (_F, 2), (_B, 2)]], 0, [0]),
    ([[(_F, 1), (_F, 0), (_B, 1), (_B, 0), (_F, 2), (_B, 2)]], 2, [2]),
    ([[(_F, 0), (_F, 1), (_B, 1), (_F, 2), (_B, 0), (_F, 3), (_B, 2), (_B, 3)]], 3, [2]),
    # a higher-numbered microbatch's backward before a lower-numbered forward: it still updates
    ([[(_F, 1), (_B, 1), (_F, 0), (_B, 0)]], 0, [1]),
]  # fmt: skip
with forbid(*_no_delegation, exercise="Exercise 1 (hidden cases)"):
    _answers = [microbatch_versions([list(o) for o in orders], j) for orders, j, _ in _hidden]
for _k, ((_orders, _j, _expected), _got) in enumerate(zip(_hidden, _answers, strict=True)):
    _check_versions(f"microbatch_versions(hidden case {_k}, {_j})", _got, _expected)
### END HIDDEN TESTS
passed("Exercise 1")

# %% [markdown]
# ### Exercise 2 — Weight memory of the stashed versions (2 points)
#
# A model is split over $p = 6$ stages with `params_per_stage` parameters (setup; synthetic),
# bf16 weights (`bytes_per_param` = 2 bytes). It runs PipeDream's asynchronous 1F1B with weight
# stashing in steady state. Set `version_gib` to a list of 6 floats: the memory, in GiB ($2^{30}$
# bytes), of all weight versions stage $s$ stores (the current one included; optimizer state and
# gradients not counted). Three significant digits are enough.

# %% nbgrader={"grade": false, "grade_id": "memory_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
version_gib = [
    (6 - s) * params_per_stage[s] * bytes_per_param / GiB for s in range(6)
]  # p - s versions
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "memory_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 2: version_gib, 6 floats: GiB of stored weight versions per stage (stashing)."""
check_type("version_gib", version_gib, list, tuple, np.ndarray)
check_int("len(version_gib) (one value per stage)", len(version_gib), 6)
for _s in range(6):
    check_float(f"version_gib[{_s}]", version_gib[_s], version_gib[_s], rtol=1.0)  # a number
_last = 1.45e9 * bytes_per_param / GiB  # one copy of stage 5's weights, GiB
check_float(
    "version_gib[5]",
    version_gib[5],
    _last,
    rtol=5e-3,
    unit="GiB",
    known_wrong=distinct_hints(
        [(6 * _last, "p versions on every stage (or s + 1: stage 0, not the last, stores most)"),
         (2 * _last, "two copies on the last stage: p - s + 1 counts the current version twice "
          "(2BW also stores two; so do 4-byte weights, but they are bf16)"),
         (0.0, "p - s - 1: the current version counts"),
         (_last * GiB / 1e9, "GB (1e9 bytes), not GiB")],
        _last,
        rtol=5e-3,
    ),
)  # fmt: skip
### BEGIN HIDDEN TESTS
_right = [(6 - _s) * params_per_stage[_s] * 2 / GiB for _s in range(6)]
for _s in range(6):
    _n = params_per_stage[_s] * 2 / GiB
    _hints = [
        ((5 - _s) * _n, "p - s - 1 versions: the current version counts too"),
        ((7 - _s) * _n, "p - s + 1 versions: counts the current version twice"),
        ((_s + 1) * _n, "s + 1 versions: stage 0, not the last, stores the most"),
        (6 * _n, "p versions on every stage"),
        (2 * _n, "two versions: that is PipeDream-2BW"),
        (_n, "one version: that is a flushed schedule"),
        (2 * _right[_s], "4 bytes per parameter; the weights are bf16"),
        (_right[_s] * GiB / 1e9, "GB (1e9 bytes), not GiB"),
    ]
    check_float(f"version_gib[{_s}]", version_gib[_s], _right[_s], rtol=5e-3, unit="GiB",
                known_wrong=distinct_hints(_hints, _right[_s], rtol=5e-3))  # fmt: skip
### END HIDDEN TESTS
passed("Exercise 2")

# %% [markdown]
# ### Exercise 3 — The version 2BW gives a microbatch (1 point)
#
# Write `version_2bw(microbatch, microbatches_per_batch)`: under PipeDream-2BW (1F1B, $p \ge 2$
# stages, batches of $m \ge p$ microbatches), the weight version, an int, that microbatch
# `microbatch` (counted from 0) runs its forward and backward on. Section 3's rule in words is
# all you need. Hidden tests include microbatches of batches 0 and 1 and several $m$.


# %% nbgrader={"grade": false, "grade_id": "staleness_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def version_2bw(microbatch: int, microbatches_per_batch: int) -> int:
    """The weight version microbatch j (counted from 0) runs on under PipeDream-2BW."""
    ### BEGIN SOLUTION
    return max(microbatch // microbatches_per_batch - 1, 0)  # §3.1, input k = j + 1
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "staleness_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 3: version_2bw(microbatch, microbatches_per_batch), an int version under 2BW."""
import course_lib.explorers.versions as _explorer_versions
import course_lib.pipeline.versions as _versions

_no_2bw_delegation = [
    (_versions, name)
    for name in ("weight_versions", "two_bw_version", "stage_order", "stage_columns")
] + [(_explorer_versions, "stream")]  # fmt: skip


def _check_2bw(j, m, expected, hints=()):
    with forbid(*_no_2bw_delegation, exercise="Exercise 3"):
        _got = version_2bw(j, m)
    _label = f"version_2bw({j}, {m})"
    check_int(_label, _got, _got)  # an int (numpy's too), not a float or bool
    check_int(_label, _got, expected, known_wrong=distinct_hints(list(hints), expected))


_check_2bw(
    40,
    8,
    4,
    [(5, "the batch index: a fresh gradient, synchronous SGD; 2BW's batch reads the version "
      "before"), (3, "two updates stale (or the paper's 1-indexed formula applied to j): batch "
      "b - 2's update makes version b - 1 (version v = the weights after v updates)"),
     (37, "PipeDream's stashing on stage 0, j - (p - 1)"), (40, "an update per microbatch")],
)  # fmt: skip
_boundary = "off by one at the batch boundary: j counted from 0, batch ⌊j/m⌋"
# j = 15 is the last microbatch of batch 1: an off-by-one there gives 1, which is also the batch
# index, but a batch-index answer already failed (40, 8) above, so the hint names the boundary.
_check_2bw(15, 8, 0, [(1, _boundary)])
_check_2bw(3, 8, 0, [(-1, "batch 0 has no older version: it runs on version 0")])
### BEGIN HIDDEN TESTS
for _j, _m, _want in [
    (0, 4, 0), (7, 8, 0), (8, 8, 0), (31, 8, 2), (16, 8, 1), (23, 8, 1), (5, 4, 0), (12, 4, 2),
    (47, 6, 6), (100, 12, 7), (59, 20, 1), (60, 20, 2),
]:  # fmt: skip
    # where a boundary off-by-one is wrong it equals the batch index: distinct_hints drops both
    _off = {max((_j + 1) // _m - 1, 0), max(-(-_j // _m) - 1, 0)}
    _check_2bw(_j, _m, _want, [(_v, _boundary) for _v in sorted(_off)]
               + [(_j // _m, "the batch index: no staleness")])  # fmt: skip
### END HIDDEN TESTS
passed("Exercise 3")

# %% [markdown]
# ### Exercise 4 — Delayed gradients, each tuned (2 points)
#
# On the setup's quadratic (`hessian`, start `w_start`), run $w(t+1) = w(t) - \nu A\, w(t - d)$
# with $w(t) = w(0)$ for $t < 0$. For each delay $d = 0, 1, 2$, try every $\nu$ in `step_grid`
# and find the fewest iterations $t \le$ `max_iterations` after which
# $f(w(t)) \le 10^{-6} f(w(0))$ (runs that never get there do not count). Set `tuned_steps` to a
# tuple of 3 ints, for $d = 0, 1, 2$. Check: for $d = 0$ it is 137. Large steps diverge and
# overflow: run them inside `with np.errstate(over="ignore", invalid="ignore"):`.


# %% nbgrader={"grade": false, "grade_id": "tuned_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
def _fewest(delay):
    best = None
    for nu in step_grid:
        with np.errstate(over="ignore", invalid="ignore"):
            runs = delayed_gradient_descent(hessian, w_start, nu, delay, max_iterations)
            ratio = quadratic_loss(hessian, runs) / quadratic_loss(hessian, w_start)
        hits = np.flatnonzero(ratio <= 1e-6)
        if len(hits) and (best is None or hits[0] < best):
            best = int(hits[0])
    return best


tuned_steps = tuple(_fewest(d) for d in (0, 1, 2))
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "tuned_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 4: tuned_steps, 3 ints: fewest iterations to 1e-6 of the loss for d = 0, 1, 2."""
check_type("tuned_steps", tuned_steps, tuple, list)
check_int("len(tuned_steps) (d = 0, 1, 2)", len(tuned_steps), 3)
for _d in range(3):
    if tuned_steps[_d] is None:
        check_type(f"tuned_steps[{_d}] (None: no step of the grid tried reaches 1e-6; a step "
                   "that diverges for d = 0 may converge for smaller ones: tune each delay)",
                   tuned_steps[_d], int)  # fmt: skip
check_int(
    "tuned_steps[0]",
    tuned_steps[0],
    137,
    known_wrong={138: "iterates counted from 1 (w(0) is iteration 0)",
                 162: "the squared norm of w, not the loss f(w)"},
)  # fmt: skip
### BEGIN HIDDEN TESTS
_tuned_hints = {
    1: [(279, "one too many: iterates counted from 1, or w(t) = 0 before the start (it is "
         "w(0))"), (329, "the squared norm of w, not the loss"), (479, "a delay of d + 1"),
        (594, "every delay at one small step, not each at its own best"), (137, "no delay")],
    2: [(480, "iterates counted from 1"), (481, "w(t) = 0 before the start (it is w(0))"),
        (569, "the squared norm of w, not the loss"), (755, "a delay of d + 1"),
        (589, "every delay at one small step, not each at its own best"), (278, "delay 1")],
}  # fmt: skip
for _d, _right in ((1, 278), (2, 479)):
    check_int(f"tuned_steps[{_d}]", tuned_steps[_d], _right,
              known_wrong=distinct_hints(_tuned_hints[_d], _right))  # fmt: skip
### END HIDDEN TESTS
passed("Exercise 4")

# %% [markdown]
# ### Exercise 5 — Which schedules are synchronous SGD? (2 points)
#
# Set `synchronous` to the set of keys whose updates are exactly those of synchronous SGD on
# the whole batch, $W(t+1) = W(t) - \nu \nabla f(W(t))$ on every stage:
#
# | key | schedule |
# |---|---|
# | `"gpipe"` | GPipe: all forwards, then all backwards, one update per step |
# | `"1f1b_flush"` | 1F1B with a flush every step (PipeDream-Flush, Megatron-LM's default) |
# | `"interleaved_flush"` | interleaved 1F1B, $v$ chunks per rank, a flush every step (pipe04) |
# | `"zb_h1"` | ZB-H1: backward split into B and W, a flush every step (pipe04) |
# | `"pipedream"` | asynchronous 1F1B with weight stashing, an update after every backward |
# | `"no_stash"` | asynchronous 1F1B without weight stashing |
# | `"2bw"` | PipeDream-2BW: two versions, an update every $m \ge p$ microbatches |

# %% nbgrader={"grade": false, "grade_id": "synchronous_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
synchronous = {"gpipe", "1f1b_flush", "interleaved_flush", "zb_h1"}
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "synchronous_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 5: synchronous, a set of keys among the seven schedules."""
_keys = ("gpipe", "1f1b_flush", "interleaved_flush", "zb_h1", "pipedream", "no_stash", "2bw")
check_type("synchronous", synchronous, set, frozenset, list, tuple)
for _key in synchronous:
    check_choice("an element of synchronous", _key, _key, dict.fromkeys(_keys, ""))
_why = {
    "pipedream": "stashing makes each stage's forward and backward agree, but microbatch j reads "
    "version j - (p - 1 - s): a different, stale version on each stage",
    "2bw": "one consistent version per batch, but the gradient is one update stale: "
    "W(t+1) = W(t) - ν∇f(W(t-1))",
}
for _key in ("pipedream", "2bw"):
    if _key in synchronous:
        check_choice(f"{_key!r} in synchronous", "yes", "no", {"yes": _why[_key], "no": ""})
### BEGIN HIDDEN TESTS
_why |= {
    "no_stash": "without a flush or stashing a backward even runs on other weights than its "
    "forward",
    "gpipe": "GPipe flushes: every action of a step reads one version",
    "1f1b_flush": "1F1B with a flush updates once per step, after every backward: synchronous",
    "interleaved_flush": "chunks change the order, not the semantics: a flush per step",
    "zb_h1": "splitting the backward moves the W actions, not the update: a flush per step",
}
_expected = {"gpipe", "1f1b_flush", "interleaved_flush", "zb_h1"}
for _key in _keys:
    _is = "yes" if _key in synchronous else "no"
    _want = "yes" if _key in _expected else "no"
    check_choice(f"{_key!r} in synchronous", _is, _want, {_want: "", ("no" if _want == "yes" else "yes"): _why[_key]})  # fmt: skip
check_names("synchronous", [str(k) for k in synchronous], sorted(_expected))
### END HIDDEN TESTS
passed("Exercise 5")

# %% [markdown]
# ### Exercise 6 — Explained answer: "stashing makes it synchronous" (2 points, graded by hand)
#
# A colleague argues that PipeDream with weight stashing "computes every gradient with the
# weights its forward used, so it trains exactly like data-parallel SGD". In three or four
# sentences, using microbatch $j$ on a 4-stage pipeline: what does stashing guarantee, what does
# it not, and what would you use if you need synchronous semantics?

# %% [markdown] nbgrader={"grade": true, "grade_id": "explain_stashing", "locked": false, "points": 2, "schema_version": 3, "solution": true, "task": false}
# **Model answer** (the student release replaces this cell). Stashing guarantees local
# consistency: on each stage, microbatch $j$'s backward runs on the version its forward used, so
# each stage's gradient is a true gradient of the function it computed. It does not make the
# versions agree across stages or fresh: $j$ reads version $j - 3$ on stage 0 and $j$ on stage 3,
# a model that never existed, and stage 0's update applies a gradient 3 updates stale. That is a
# delayed-gradient algorithm: it needs a smaller learning rate ($\nu\lambda < 1$ already at one
# step of delay) and stores $p - s$ weight copies. For synchronous semantics, flush every step
# (GPipe, PipeDream-Flush, interleaved 1F1B, ZB-H1) and pay the bubble; 2BW is in between: one
# consistent version, one step stale, two copies.
#
# Rubric: 1 point for local consistency versus per-stage versions $j - (p - 1 - s)$ (stale,
# different across stages); 1 point for the consequence (delayed gradients, step size or
# memory) and a flushed schedule as the synchronous alternative.

# %% [markdown]
# ## Takeaways
#
# - A flushed schedule (GPipe, 1F1B, interleaved, ZB-H1) reads one version per step: synchronous
#   SGD on the whole batch, paid for with the bubble.
# - Weight stashing keeps each stage's forward and backward on one version and stores $p - s$
#   versions on stage $s$; the versions still differ across stages and are stale.
# - 2BW stores two versions and applies one-step-stale gradients.
# - A delay $d$ shrinks the stable step range, so tuned runs converge more slowly.
# - The trap: "forward and backward use the same weights" is local consistency, not synchronous
#   SGD. Ask which version every stage reads and how stale the gradient is.

# %% [markdown]
# ## Going further (optional, ungraded)
#
# - PipeDream also describes *vertical sync* (SOSP 2019, §3.3): each microbatch carries the
#   version stage 0 used, and every stage runs it on that version, so the model is consistent
#   across stages but the gradient is still stale. Narayanan et al. 2021 note that under
#   PipeDream's default semantics the updates of each stage have different delay terms.
# - 2BW's two versions need $m \ge p$: a batch must finish on every stage before the one after
#   next enters (this course's `weight_versions` refuses $m < p$ for that reason).
# - Delay-aware algorithms change the update instead of the schedule: PipeMare (Yang et al.
#   2021, MLSys) shrinks each stage's learning rate by its delay during warm-up and corrects the
#   weight discrepancy. The stability bound of section 4 is why such a correction is needed.
