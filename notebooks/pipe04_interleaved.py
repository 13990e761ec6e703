# %% [markdown]
# # pipe04 · Interleaved pipeline schedules
#
# **Objective.** Map virtual chunks to physical ranks and trade a smaller ideal bubble against
# additional boundaries and schedule constraints.
#
# **Time:** 28 min · **Level:** advanced
#
# You will be able to
# - place $v$ chunks on each of $p$ ranks (stage $k$ on rank $k \bmod p$);
# - compute the overhead $(p - 1)/(v\,m)$ and the $v\,p - 1$ messages a microbatch sends between
#   ranks, and between nodes;
# - find, with the simulator, the $v$ that minimises the step under a per-hop latency;
# - tell which $(p, m)$ Megatron-LM and PyTorch 2.13 accept.
#
# **What you need:** pipe02 (overhead, per-hop latency) and pipe03 (1F1B's warm-up); numpy at
# the level of `np.arange` and integer division.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
# %matplotlib inline
import matplotlib.pyplot as plt
import numpy as np

from course_lib.checks import (
    check_array,
    check_choice,
    check_float,
    check_int,
    check_type,
    distinct_hints,
    forbid,
    passed,
)
from course_lib.explorers.interleaved import interleaved_explorer
from course_lib.figures.interleaving import (
    chunk_placement,
    crossing_chain,
    interleaved_grids,
    step_time_curves,
)
from course_lib.pipeline import interleaved_1f1b, simulate
from course_lib.pipeline.interleaving import acceptance, crossings_per_microbatch

# The worked example: pipe02's 4 ranks and 8 microbatches, backward twice the forward.
# Nothing in this lesson is random.
num_ranks, num_microbatches = 4, 8
forward_time, backward_time = 1.0e-3, 2.0e-3  # seconds per microbatch over a rank's layers

# %% [markdown]
# ## 1. Rank r holds chunks r, r + p, …, r + (v − 1)p
#
# 1F1B (pipe03) gives each of the $p$ ranks one block of layers and idles each
# $(p - 1)(t_f + t_b)$ per step. Megatron-LM's interleaved schedule (Narayanan et al. 2021,
# "Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", §2.2.2,
# Fig. 4) cuts the model into $v\,p$ chunks and deals them out in turn: global stage $k$ lives
# on rank $k \bmod p$. With 16 layers, $p = 4$ and $v = 2$, rank 0 holds layers 0, 1, 8 and 9
# (the paper's "device 1 has layers 1, 2, 9, 10", counting from 1).
#
# A rank still holds $1/p$ of the model, so a chunk costs $t_f/v$ forward and $t_b/v$
# backward, where $t_f$ and $t_b$ are a microbatch's times over a rank's whole share and $v$ is
# `chunks_per_rank`.

# %%
chunk_placement(16, 4, 2)
plt.show()

# %% [markdown]
# Each colour is one of a rank's chunks: a microbatch's forward visits ranks 0, 1, 2, 3 and
# then rank 0 again, for stage 4.

# %% [markdown]
# ## 2. The bubble shrinks to (p − 1)/(v·m) of ideal compute
#
# `interleaved_1f1b(p, m, v)` builds Megatron-LM's per-rank order: rank $r$ warms up with
# $\min(v\,m,\ 2(p - r - 1) + (v - 1)\,p)$ chunk forwards, taking microbatches in groups of $p$
# per chunk, then alternates one forward and one backward, then drains. Simulate it with
# per-chunk costs:

# %%
runs = {
    f"v = {v}": simulate(
        interleaved_1f1b(num_ranks, num_microbatches, v), forward_time / v, backward_time / v
    )
    for v in (1, 2)
}
interleaved_grids(runs)
plt.show()
for name, run in runs.items():
    print(f"{name}: step {run.makespan * 1e3:.1f} ms, overhead {run.overhead:.2%}")

# %% [markdown]
# Hatched boxes belong to a rank's second chunk. The bubble is still $p - 1$ forward slots at
# the start and $p - 1$ backward slots at the end (Narayanan et al. 2021, §2.2.1), but a slot is
# now one chunk's, $t_f/v$ or $t_b/v$: it falls to $t_{pb} = (p - 1)(t_f + t_b)/v$ while the
# ideal compute $t_{id} = m(t_f + t_b)$ stays. So (§2.2.2)
#
# $$\text{overhead} = \frac{t_{pb}}{t_{id}} = \frac{p - 1}{v\,m},$$
#
# where $p$ is `num_ranks` and $m$ is `num_microbatches`. It is pipe02's overhead relative to
# ideal compute, not the idle fraction: 37.5 % becomes 18.75 %, 33 ms becomes 28.5 ms.
#
# Memory does not shrink with it. For $m \ge 2p$ ($m$ a multiple of $p$) rank 0's longer warm-up
# stashes $p + (p - 1)/v$ microbatches' worth of activations against $p$ under 1F1B: 5.5 against
# 4 here. At $m = p$ every chunk forward is warm-up and the peak is $p$.

# %% [markdown]
# ## 3. Every chunk boundary is a message between ranks
#
# The price is on the wire. A microbatch's forward crosses $v\,p - 1$ chunk boundaries instead
# of $p - 1$; with stage $k$ on rank $k \bmod p$ each joins two different ranks (when $p > 1$),
# and its backward crosses them all again. The activation at a cut does not shrink with $v$, so
# point-to-point traffic grows about $v$-fold (Narayanan et al. 2021, §2.2.2). $v - 1$ of the
# hand-offs wrap from rank $p - 1$ back to rank 0, and on a cluster those two ranks usually sit
# on different nodes:

# %%
crossing_chain(8, chunks=(1, 4), ranks_per_node=4)
plt.show()
print(crossings_per_microbatch(8, 4, ranks_per_node=4))

# %% [markdown]
# Two nodes of four ranks: at $v = 4$ a forward makes 31 hand-offs instead of 7, and 7 between
# the nodes instead of 1 — one per pass (rank 3 to 4), one per wrap (rank 7 to 0).

# %% [markdown]
# ## 4. With latency there is a best v
#
# As in pipe02, each message arrives $\delta$ after it is sent. For $v \ge 2$, $m$ a multiple of
# $p$ and $\delta \le \min(t_f, t_b)/v$ (the shorter of a chunk's forward and backward), the
# simulator adds exactly $2(v\,p - 1)\,\delta$, each crossing once down and once up:
#
# $$T(v) = m\,(t_f + t_b) + \frac{(p - 1)(t_f + t_b)}{v} + 2\,(v\,p - 1)\,\delta,$$
#
# smallest near $v^* = \sqrt{(p - 1)(t_f + t_b)/(2\,p\,\delta)}$. A longer $\delta$ lands in the
# steady state too, and plain 1F1B ($v = 1$) pays it there at any $\delta$: then only the
# simulator answers.

# %%
step_time_curves(8, 16, 1.0e-3, 2.0e-3, latencies=(0.0, 0.1e-3, 0.2e-3))
plt.show()

# %% [markdown]
# $p = 8$, $m = 16$. The stars mark the best $v$: 8 without latency, 4 at $\delta = 0.1$ ms
# ($v^* \approx 3.6$), 3 at 0.2 ms ($v^* \approx 2.6$). The crosses, the formula, are missing
# where it fails: at $v = 1$, and at $v = 6$ and 8 with $\delta = 0.2$ ms $> t_f/v$.
#
# These timings are synthetic: balanced chunks, one fixed $\delta$, no bandwidth term. On a real
# cluster $\delta$ differs inside and between nodes and depends on whether transfers overlap
# compute: measure one activation message both ways before you trust a best $v$.

# %% [markdown]
# ## 5. Accepted is not the same as efficient
#
# Megatron-LM's `forward_backward_pipelining_with_interleaving`
# (`megatron/core/pipeline_parallel/schedules.py`, NVIDIA/Megatron-LM commit `00611e6`) runs a
# chunk's microbatches in groups of $p$ by default, and then refuses an $m$ that is not a
# multiple of $p$. PyTorch 2.13's `ScheduleInterleaved1F1B`
# (`torch/distributed/pipelining/schedules.py`) relaxes it: with rounds $= \max(1, m // p)$,
# $m$ must be a multiple of rounds, and a chunk runs $m$ // rounds microbatches in a row. So
# $p = 4$ accepts $m = 10$ (2 rounds of 5) and $m = 3$ (1 round) and refuses $m = 9$. The
# course's `interleaved_1f1b` accepts what PyTorch accepts (any $m$ at $v = 1$).
#
# With $m < p$ the microbatches cannot fill the loop round the ranks: the step is
# $(m + v\,p - 1)(t_f + t_b)/v$, more than the formula's $(v\,m + p - 1)(t_f + t_b)/v$:

# %%
for m in (8, 10, 3, 9):
    verdict = acceptance(num_ranks, m, 2)
    says = {True: "accepts", False: "refuses"}
    line = (
        f"p = 4, m = {m:2d}, v = 2: Megatron-LM {says[verdict.megatron]}, "
        f"PyTorch {says[verdict.pytorch]} (rounds {verdict.rounds})"
    )
    if verdict.pytorch:
        run = simulate(interleaved_1f1b(num_ranks, m, 2), forward_time / 2, backward_time / 2)
        line += f", overhead {run.overhead:.2%} against (p − 1)/(v·m) = {3 / (2 * m):.2%}"
    print(line)

# %% [markdown]
# ## Explore
#
# The explorer simulates interleaved 1F1B ($t_f = 1$ ms, $t_b = 2$ ms per rank) beside each
# closed form. Try:
# - $p = 8$, $m = 16$: step $v$ from 1 to 8. Rank 0's peak stash jumps from 8 to 11.5 at
#   $v = 2$, then falls towards $p$. At $m = 8 = p$ it stays 8: every forward is warm-up.
# - $m = 16$, $\delta = 0.2$ ms: the step bottoms out at $v = 3$; the closed form goes blank at
#   $v = 1$ and from $v = 6$ on.
# - $p = 4$, $m = 3$: accepted, but the overhead row disagrees; $m = 9$ is refused.

# %%
interleaved_explorer()

# %% [markdown]
# ## Exercises
#
# Answer in the cells marked `YOUR CODE HERE`, then run the grade cell below each: visible checks
# give quick feedback, hidden tests more cases at grading. While a grade cell calls your
# function, the `course_lib` routines that would answer it are disabled.
#
# ### Exercise 1 — Which rank holds each layer (2 points)
#
# Write `layer_owner(num_layers, num_ranks, chunks_per_rank)` returning a numpy array of ints,
# one per layer (0-based): the rank that holds the layer under section 1's placement.
# `num_layers` is a multiple of $v\,p$. The hidden tests include a single rank ($p = 1$) and a
# single chunk per rank ($v = 1$).


# %% nbgrader={"grade": false, "grade_id": "layer_owner_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def layer_owner(num_layers: int, num_ranks: int, chunks_per_rank: int) -> np.ndarray:
    """The rank holding each of the num_layers layers (0-based), as a numpy array of ints."""
    ### BEGIN SOLUTION
    per_chunk = num_layers // (chunks_per_rank * num_ranks)
    return (np.arange(num_layers) // per_chunk) % num_ranks
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "layer_owner_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 1: layer_owner(L, p, v), the rank of every layer (a numpy array of ints)."""
import course_lib.pipeline.interleaving as course_interleaving

_routes = ("layer_ranks", "rank_layers", "stage_ranks")
_no_delegation = [(course_interleaving, name) for name in _routes]


def _checked_owner(label, got, layers, p, v):
    """An ndarray of one rank per layer; a known mistake named; then every layer's rank."""
    check_type(label, got, np.ndarray)
    check_int(f"len({label})", len(got), layers)
    expected = course_interleaving.layer_ranks(layers, p, v)
    layer, per_chunk = np.arange(layers), layers // (v * p)
    mistakes = [
        (layer // (layers // p), "blocks of L/p layers per rank: no interleaving"),
        (layer % p, "layer l on rank l mod p: a chunk holds L/(v·p) layers, not one"),
        (expected + 1, "ranks counted from 1"),
        ((layer // per_chunk) // p, "the rank's local chunk index, not the rank"),
        ((layer // (layers // v)) % p, "chunks of L/v layers: v per model, not v per rank"),
        ((layer // per_chunk) % v, "chunk mod v: global stage k lives on rank k mod p"),
        (p - 1 - expected, "ranks reversed: stage 0 lives on rank 0"),
    ]

    def text(ranks):
        return " ".join(f"{x:g}" for x in np.asarray(ranks, dtype=float).tolist())

    hints = distinct_hints([(text(wrong), why) for wrong, why in mistakes], text(expected))
    if got.dtype.kind in "fiu" and text(got) in hints:
        check_choice(label, text(got), text(expected), {**hints, text(expected): "right"})
    check_array(label, got, expected)


with forbid(*_no_delegation, exercise="Exercise 1"):
    _small = {case: layer_owner(*case) for case in [(12, 2, 3), (6, 1, 3)]}
for (_layers, _p, _v), _got in _small.items():
    _checked_owner(f"layer_owner({_layers}, {_p}, {_v})", _got, _layers, _p, _v)
### BEGIN HIDDEN TESTS
_cases = [
    (16, 4, 2),
    (24, 4, 3),
    (8, 8, 1),
    (8, 1, 4),
    (32, 4, 4),
    (48, 8, 2),
    (20, 5, 2),
    (9, 3, 1),
]
with forbid(*_no_delegation, exercise="Exercise 1 (hidden cases)"):
    _owners = {case: layer_owner(*case) for case in _cases}
for (_layers, _p, _v), _got in _owners.items():
    _checked_owner(f"layer_owner({_layers}, {_p}, {_v})", _got, _layers, _p, _v)
### END HIDDEN TESTS
passed("Exercise 1")

# %% [markdown]
# ### Exercise 2 — The overhead for v = 1, 2, 4 (1 point)
#
# Write `interleaved_overheads(num_ranks, num_microbatches)` returning the tuple of the
# overheads relative to ideal compute (fractions, 0.25 means 25 %) for $v = 1$, 2 and 4, in that
# order, from section 2's formula ($m$ a multiple of $p$): `simulate` is disabled here.


# %% nbgrader={"grade": false, "grade_id": "overheads_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def interleaved_overheads(num_ranks: int, num_microbatches: int) -> tuple[float, float, float]:
    """The overheads relative to ideal compute at v = 1, 2 and 4, as fractions."""
    ### BEGIN SOLUTION
    return tuple((num_ranks - 1) / (v * num_microbatches) for v in (1, 2, 4))
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "overheads_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 2: interleaved_overheads(p, m) = (overhead at v = 1, 2, 4), fractions."""
import course_lib.pipeline as course_pipeline
import course_lib.pipeline.accumulation as course_accumulation
import course_lib.pipeline.imbalance as course_imbalance
import course_lib.pipeline.interleaving as course_interleaving

_no_delegation = [
    (course_pipeline, "interleaved_overhead"),
    (course_pipeline, "fill_drain_overhead"),
    (course_pipeline, "simulate"),
    (course_interleaving, "interleaved_makespan"),
    (course_interleaving, "step_times"),
    # the v = 1 step or bubble from any closed form of the course (then / v gives the rest)
    *[(course_pipeline, n) for n in ("fill_drain_makespan", "fill_drain_idle_fraction")],
    (course_pipeline, "zero_bubble_h1_bubble"),
    (course_accumulation, "step_times"),
    *[(course_imbalance, n) for n in ("gpipe_makespan", "slowest_stage_makespan")],
    (course_imbalance, "makespan_lower_bound"),
]


def _checked_overheads(label, got, p, m):
    """A tuple of three fractions, each with the usual mistakes named."""
    check_type(label, got, tuple, list)
    check_int(f"len({label})", len(got), 3)
    for value, v in zip(got, (1, 2, 4), strict=True):
        right = (p - 1) / (v * m)
        mistakes = [
            ((p - 1) / m, "(p − 1)/m: the chunks per rank v are missing"),
            ((p - 1) / (v * m + p - 1), "the elapsed idle fraction, not the overhead"),
            ((v * p - 1) / m, "(v·p − 1)/m: v·p stages on v·p ranks, not v chunks per rank"),
            ((v * p - 1) / (v * m), "(v·p − 1)/(v·m): the slots are chunks, but p − 1 of them"),
            (100 * right, "a percentage, not a fraction"),
            (v * (p - 1) / m, "v·(p − 1)/m: multiplied by v instead of divided"),
            ((m - 1) / (v * p), "(m − 1)/(v·p): p and m swapped"),
            ((p - 1) // (v * m), "integer division (//): the overhead is a fraction"),
        ]
        check_float(
            f"{label}[v = {v}]",
            value,
            right,
            known_wrong=distinct_hints(mistakes, right, rtol=1e-6),
        )


with forbid(*_no_delegation, exercise="Exercise 2"):
    _small = interleaved_overheads(8, 16)
_checked_overheads("interleaved_overheads(8, 16)", _small, 8, 16)
### BEGIN HIDDEN TESTS
_cases = [(4, 8), (16, 64), (1, 4), (6, 12), (2, 2), (8, 40)]
with forbid(*_no_delegation, exercise="Exercise 2 (hidden cases)"):
    _answers = {case: interleaved_overheads(*case) for case in _cases}
for (_p, _m), _got in _answers.items():
    _checked_overheads(f"interleaved_overheads({_p}, {_m})", _got, _p, _m)
### END HIDDEN TESTS
passed("Exercise 2")

# %% [markdown]
# ### Exercise 3 — Messages per microbatch (3 points)
#
# Write `transfers_per_microbatch(num_ranks, chunks_per_rank, ranks_per_node)` returning the
# tuple `(between_ranks, between_nodes)` of ints: how many forward hand-offs one microbatch makes
# from one rank to another, and how many of those go from one node to another. Rank $r$ sits on
# node $r$ // `ranks_per_node`, which divides `num_ranks`. Count the forward only. Graded in two
# cells (1 + 2 points); the hidden tests include a single rank and a single node.


# %% nbgrader={"grade": false, "grade_id": "transfers_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def transfers_per_microbatch(
    num_ranks: int, chunks_per_rank: int, ranks_per_node: int
) -> tuple[int, int]:
    """(forward hand-offs between ranks, of which between nodes) of one microbatch."""
    ### BEGIN SOLUTION
    ranks = np.arange(chunks_per_rank * num_ranks) % num_ranks  # rank of each stage
    src, dst = ranks[:-1], ranks[1:]
    between_ranks = int(np.sum(src != dst))
    between_nodes = int(np.sum(src // ranks_per_node != dst // ranks_per_node))
    return between_ranks, between_nodes
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "rank_transfers_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 3a: transfers_per_microbatch(p, v, g)[0], forward hand-offs between ranks."""
import course_lib.pipeline as course_pipeline
import course_lib.pipeline.interleaving as course_interleaving

_no_delegation = [
    (course_pipeline, "boundary_crossings"),
    (course_pipeline, "simulate"),
    (course_interleaving, "crossings_per_microbatch"),
    (course_interleaving, "stage_ranks"),
    (course_interleaving, "layer_ranks"),
]


def _checked_ranks(label, got, p, v):
    check_type(label, got, tuple, list)
    check_int(f"len({label})", len(got), 2)
    right = v * p - 1 if p > 1 else 0
    mistakes = [
        (v * (p - 1), "v·(p − 1): the wrap-arounds from rank p − 1 to rank 0 are missing"),
        (v * p, "v·p: the chunks, not the boundaries between them"),
        (p - 1, "p − 1: the plain pipeline's hand-offs, without interleaving"),
        (2 * right, "both directions: the exercise counts the forward only"),
        (v * p - 1, "v·p − 1 on a single rank: there no hand-off leaves the rank"),
    ]
    check_int(f"{label}[0]", got[0], right, known_wrong=distinct_hints(mistakes, right))


with forbid(*_no_delegation, exercise="Exercise 3"):
    _small = {case: transfers_per_microbatch(*case) for case in [(8, 2, 4), (1, 4, 1)]}
for (_p, _v, _g), _got in _small.items():
    _checked_ranks(f"transfers_per_microbatch({_p}, {_v}, {_g})", _got, _p, _v)
### BEGIN HIDDEN TESTS
_cases = [(8, 1, 4), (4, 3, 4), (1, 4, 1), (6, 2, 2), (16, 2, 8), (2, 3, 1), (16, 4, 4)]
with forbid(*_no_delegation, exercise="Exercise 3 (hidden cases)"):
    _answers = {case: transfers_per_microbatch(*case) for case in _cases}
for (_p, _v, _g), _got in _answers.items():
    _checked_ranks(f"transfers_per_microbatch({_p}, {_v}, {_g})", _got, _p, _v)
### END HIDDEN TESTS
passed("Exercise 3a")

# %% nbgrader={"grade": true, "grade_id": "node_transfers_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 3b: transfers_per_microbatch(p, v, g)[1], forward hand-offs between nodes."""
import course_lib.pipeline as course_pipeline
import course_lib.pipeline.interleaving as course_interleaving

_no_delegation = [
    (course_pipeline, "boundary_crossings"),
    (course_pipeline, "simulate"),
    (course_interleaving, "crossings_per_microbatch"),
    (course_interleaving, "stage_ranks"),
    (course_interleaving, "layer_ranks"),
]


def _checked_nodes(label, got, p, v, g):
    check_type(label, got, tuple, list)
    check_int(f"len({label})", len(got), 2)
    n = p // g
    right = v * (n - 1) + (v - 1) * (n > 1)
    mistakes = [
        (v * (n - 1), "one per pass only: each wrap from rank p − 1 to rank 0 changes node too"),
        (v * (n - 1) + v - 1, "wrap-arounds counted between nodes on a single node"),
        (n - 1, "the plain pipeline's node crossings, without interleaving"),
        (2 * right, "both directions: the exercise counts the forward only"),
        (
            v * (n - 1) + v * (n > 1),
            "v wrap-arounds: there are v − 1 (the last pass ends the model)",
        ),
        (v * (g - 1) + (v - 1) * (g > 1), "ranks_per_node used as the number of nodes"),
        ((v * p - 1) * (g > 1), "node r mod ranks_per_node: rank r sits on node r // it"),
    ]
    check_int(f"{label}[1]", got[1], right, known_wrong=distinct_hints(mistakes, right))


with forbid(*_no_delegation, exercise="Exercise 3"):
    _small = {case: transfers_per_microbatch(*case) for case in [(8, 2, 4), (4, 3, 4)]}
for (_p, _v, _g), _got in _small.items():
    _checked_nodes(f"transfers_per_microbatch({_p}, {_v}, {_g})", _got, _p, _v, _g)
### BEGIN HIDDEN TESTS
_cases = [(8, 1, 4), (4, 3, 4), (1, 4, 1), (6, 2, 2), (16, 2, 8), (2, 3, 1), (16, 4, 4)]
with forbid(*_no_delegation, exercise="Exercise 3 (hidden cases)"):
    _answers = {case: transfers_per_microbatch(*case) for case in _cases}
for (_p, _v, _g), _got in _answers.items():
    _checked_nodes(f"transfers_per_microbatch({_p}, {_v}, {_g})", _got, _p, _v, _g)
### END HIDDEN TESTS
passed("Exercise 3b")

# %% [markdown]
# ### Exercise 4 — The best v under a latency (2 points)
#
# Write `best_chunks(num_ranks, num_microbatches, forward_time, backward_time, p2p_latency,
# candidates)`: the $v$ among `candidates` whose simulated step,
# `simulate(interleaved_1f1b(p, m, v), t_f / v, t_b / v, p2p_latency=δ).makespan`, is the
# shortest, as an int (`simulate` and `interleaved_1f1b` stay usable). Times are in seconds, as
# in section 4. Steps within 1e-9 s of the shortest tie: return the smallest such $v$. Simulate
# every candidate: section 4's formula, and so $v^*$, does not hold for all of them. The hidden
# tests include a single rank, where every $v$ ties.


# %% nbgrader={"grade": false, "grade_id": "best_chunks_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def best_chunks(
    num_ranks: int,
    num_microbatches: int,
    forward_time: float,
    backward_time: float,
    p2p_latency: float,
    candidates: tuple[int, ...],
) -> int:
    """The candidate v with the shortest simulated step (smallest v among ties within 1 ns)."""
    ### BEGIN SOLUTION
    steps = {}
    for v in candidates:
        schedule = interleaved_1f1b(num_ranks, num_microbatches, v)
        run = simulate(schedule, forward_time / v, backward_time / v, p2p_latency=p2p_latency)
        steps[v] = run.makespan
    shortest = min(steps.values())
    return min(v for v, step in steps.items() if step <= shortest + 1e-9)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "best_chunks_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 4: best_chunks(p, m, t_f, t_b, δ, candidates), the v with the shortest step (an int)."""
import course_lib.pipeline.interleaving as course_interleaving

_no_delegation = [
    (course_interleaving, "best_chunks_per_rank"),
    (course_interleaving, "step_times"),
    (course_interleaving, "interleaved_makespan"),
]


def _smallest_tie(steps):
    return min(v for v, t in steps.items() if t <= min(steps.values()) + 1e-9)


def _checked_best(label, got, case):
    """An int, the simulator's best v, with the usual mistakes named."""
    p, m, t_f, t_b, delta, candidates = case
    steps = course_interleaving.step_times(p, m, t_f, t_b, delta, candidates)
    right = _smallest_tie(steps)
    no_latency = course_interleaving.step_times(p, m, t_f, t_b, 0.0, candidates)
    formula = {
        v: m * (t_f + t_b) + (p - 1) * (t_f + t_b) / v + 2 * (v * p - 1) * delta for v in candidates
    }
    v_star = np.sqrt((p - 1) * (t_f + t_b) / (2 * p * delta)) if delta > 0 else np.inf
    ties = [v for v, t in steps.items() if t <= min(steps.values()) + 1e-9]
    by_formula = _smallest_tie(formula)
    nearest = min(sorted(candidates), key=lambda v: abs(v - v_star))
    closed_forms = [
        (by_formula, "section 4's formula: it does not hold for every v, so simulate each"),
        (nearest, "the v nearest v*: the formula's optimum, not the simulator's"),
    ]
    if by_formula == nearest:  # one hint for both closed-form routes
        closed_forms = [(by_formula, "section 4's formula or its v*: neither holds for every v")]
    mistakes = [
        (_smallest_tie(no_latency), "the best v without latency: every crossing costs δ"),
        *closed_forms,
        (max(ties), "the largest of the tied v: return the smallest"),
        (min(candidates, key=steps.get), "the float minimum: steps within 1e-9 s tie"),
    ]
    check_int(label, got, right, known_wrong=distinct_hints(mistakes, right))


_visible = [
    (8, 16, 1.0e-3, 2.0e-3, 1.0e-3, (1, 2, 4, 8)),
    (1, 4, 1.0e-3, 2.0e-3, 0.2e-3, (4, 1, 2, 3, 6)),
]
with forbid(*_no_delegation, exercise="Exercise 4"):
    _small = [best_chunks(*case) for case in _visible]
_checked_best("best_chunks(8, 16, 1 ms, 2 ms, 1 ms, (1, 2, 4, 8))", _small[0], _visible[0])
_checked_best("best_chunks(1, 4, 1 ms, 2 ms, 0.2 ms, (4, 1, 2, 3, 6))", _small[1], _visible[1])
### BEGIN HIDDEN TESTS
_cases = [
    (8, 16, 1.0e-3, 2.0e-3, 0.1e-3, (1, 2, 3, 4, 6, 8)),
    (4, 12, 0.6e-3, 1.2e-3, 0.4e-3, (1, 2, 3, 4)),
    (8, 32, 0.4e-3, 1.0e-3, 0.6e-3, (1, 2, 4, 8)),
    (16, 32, 1.0e-3, 2.0e-3, 0.05e-3, (1, 2, 4, 8)),
    (1, 6, 1.0e-3, 2.0e-3, 0.3e-3, (2, 4, 1)),
    (1, 6, 0.7e-3, 1.3e-3, 0.3e-3, (4, 1, 2, 3, 6)),
    (4, 8, 1.0e-3, 2.0e-3, 0.0, (1, 2, 4, 8)),
    (4, 8, 1.0e-3, 2.0e-3, 1.5e-3, (1, 2, 4)),
    (6, 12, 0.8e-3, 1.6e-3, 0.15e-3, (1, 2, 3, 4, 6)),
    (8, 24, 0.5e-3, 1.2e-3, 0.08e-3, (2, 3, 4, 6)),
    (2, 4, 1.0e-3, 2.0e-3, 0.2e-3, (1, 2, 3, 4)),
]
with forbid(*_no_delegation, exercise="Exercise 4 (hidden cases)"):
    _answers = [best_chunks(*case) for case in _cases]
for _case, _got in zip(_cases, _answers, strict=True):
    _checked_best(f"best_chunks{_case}", _got, _case)
### END HIDDEN TESTS
passed("Exercise 4")

# %% [markdown]
# ### Exercise 5 — Does PyTorch run it? (1 point)
#
# Write `pytorch_accepts(num_ranks, num_microbatches)` returning a bool: whether PyTorch 2.13's
# `ScheduleInterleaved1F1B` accepts `num_microbatches` microbatches on `num_ranks` ranks (any
# $v \ge 2$), by section 5's rule; `interleaved_1f1b` and `acceptance` are disabled here.


# %% nbgrader={"grade": false, "grade_id": "pytorch_accepts_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def pytorch_accepts(num_ranks: int, num_microbatches: int) -> bool:
    """Whether PyTorch 2.13's ScheduleInterleaved1F1B runs num_microbatches on num_ranks ranks."""
    ### BEGIN SOLUTION
    rounds = max(1, num_microbatches // num_ranks)
    return num_microbatches % rounds == 0
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "pytorch_accepts_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 5: pytorch_accepts(p, m), PyTorch 2.13's rule for interleaved 1F1B (a bool)."""
import course_lib.pipeline as course_pipeline
import course_lib.pipeline.interleaving as course_interleaving
import course_lib.pipeline.schedule as course_schedule

_no_delegation = [
    (course_interleaving, "acceptance"),
    (course_schedule, "check_interleaved_shape"),
    (course_pipeline, "interleaved_1f1b"),
    (course_interleaving, "interleaved_makespan"),
    (course_interleaving, "peak_rank_stash"),
]


def _verdict(ok):
    return "accepts" if ok else "refuses"


def _checked_accepts(label, got, p, m):
    """A bool, compared as a verdict; a hint names the rule only if no other gives that verdict."""
    check_type(label, bool(got) if type(got) is np.bool_ else got, bool)
    rounds = max(1, m // p)
    right = _verdict(m % rounds == 0)
    mistakes = [
        (_verdict(m % p == 0), "m % p == 0 is Megatron-LM's rule (its default group size p)"),
        (_verdict(m >= p), "m ≥ p: PyTorch also runs m < p, in one round"),
        (_verdict(m % -(-m // p) == 0), "rounds = ceil(m / p): PyTorch floors, max(1, m // p)"),
        (
            _verdict(m % rounds == 0 and m // rounds >= p),
            "groups of at least p: Megatron-Core's range [p, m], not PyTorch's rule",
        ),
    ]
    wrong = "refuses" if right == "accepts" else "accepts"
    why = f"rounds = max(1, {m} // {p}) = {rounds}, and {m} % {rounds} = {m % rounds}"
    hint = distinct_hints(mistakes, right).get(wrong, "")
    if wrong == "refuses" and all(verdict == "accepts" for verdict, _ in mistakes):
        hint = "every rule runs it: did a disabled course_lib routine raise inside a try?"
    options = {
        right: f"PyTorch {right}: {why}",
        wrong: f"PyTorch does not {wrong[:-1]}: {why}" + (f" ({hint})" if hint else ""),
    }
    check_choice(label, _verdict(got), right, options)


with forbid(*_no_delegation, exercise="Exercise 5"):
    _small = {case: pytorch_accepts(*case) for case in [(4, 8), (4, 6), (4, 3), (4, 9)]}
for (_p, _m), _got in _small.items():
    _checked_accepts(f"pytorch_accepts({_p}, {_m})", _got, _p, _m)
### BEGIN HIDDEN TESTS
_cases = [(4, 14), (8, 20), (8, 12), (6, 15), (1, 7), (2, 5), (16, 40), (16, 50), (3, 10),
          (5, 12), (8, 5), (6, 6), (4, 13)]  # fmt: skip
with forbid(*_no_delegation, exercise="Exercise 5 (hidden cases)"):
    _answers = {case: pytorch_accepts(*case) for case in _cases}
for (_p, _m), _got in _answers.items():
    _checked_accepts(f"pytorch_accepts({_p}, {_m})", _got, _p, _m)
### END HIDDEN TESTS
passed("Exercise 5")

# %% [markdown]
# ### Exercise 6 — Explained answer: v = 8 on two nodes (2 points, graded by hand)
#
# Your $p = 8$ pipeline runs 1F1B on two nodes of four GPUs, $m = 16$, $t_f = 1$ ms and
# $t_b = 2$ ms per rank. A colleague reads that interleaving divides the bubble by $v$ and
# proposes $v = 8$. What does it buy, what does it cost, and what would you measure before
# deciding? Answer in three or four sentences with numbers from this lesson.

# %% [markdown] nbgrader={"grade": true, "grade_id": "explain_interleaving", "locked": false, "points": 2, "schema_version": 3, "solution": true, "task": false}
# **Model answer** (the student release replaces this cell). On paper the overhead falls from
# $7/16 \approx 44\,\%$ to $7/128 \approx 5.5\,\%$: the 21 ms bubble becomes 2.6 ms, the 69 ms
# step 50.6 ms. But a microbatch's forward then makes 63 hand-offs between ranks instead of 7,
# 15 of them between the nodes instead of 1, and its backward as many: 2,016 messages per step
# instead of 224 — at $\delta = 0.1$ ms per hop the simulator gives 63.2 ms at $v = 8$ against
# 59.5 ms at $v = 4$ — and rank 0 stashes 8.9 microbatches instead of 8. Measure one activation
# message inside a node and between nodes (and whether it overlaps compute) and a 1/8-size
# chunk's kernel time, then simulate $v = 2, 4, 8$ with those numbers.
#
# Rubric: 1 point for the bubble gain with numbers set against the growth in messages (between
# ranks and between nodes); 1 point for a concrete measurement plan (message latency inside and
# between nodes, overlap, small-chunk kernel efficiency) or the memory cost, with numbers.

# %% [markdown]
# ## Takeaways
#
# - With $v$ chunks per rank, stage $k$ on rank $k \bmod p$, the overhead relative to ideal
#   compute falls to $(p - 1)/(v\,m)$ (Narayanan et al. 2021, §2.2.2).
# - A microbatch's forward makes $v\,p - 1$ hand-offs between ranks instead of $p - 1$, and as
#   many backward; count those between nodes apart.
# - Under a per-hop latency the step has a best $v$: find it with the simulator.
# - The trap: reading $(p - 1)/(v\,m)$ as the step's gain. The bubble shrinks; the messages,
#   rank 0's stash and the $(p, m)$ rules do not.

# %% [markdown]
# ## Going further (optional, ungraded)
#
# - **Split the backward instead.** Zero-bubble schedules (Qi et al. 2024, "Zero Bubble Pipeline
#   Parallelism", ICLR 2024, §2.1, Fig. 3 top) split each backward into B, the input gradient the
#   previous stage waits for, and W, the weight gradient nothing waits for. ZB-H1 keeps 1F1B's
#   order of F and B and defers each stage's W to fill the drain: with $t_f = t_b = t_w$ it idles
#   $(p - 1)(t_f + t_b - t_w)$ per stage against 1F1B's $(p - 1)(t_f + t_b + t_w)$, a third, and
#   every stage holds $p$ stashes until their W — 1F1B's peak on stage 0, now on every stage. No
#   extra messages, no chunks: the cell below simulates both ($p = 4$, $m = 8$, $t_f = t_b = t_w = 1$ ms, so 1F1B's
#   whole backward is 2 ms).
# - **Megatron-Core's knob.** At the same commit, `microbatch_group_size_per_vp_stage` $N$ (the
#   microbatches a chunk runs in a row, default $p$) is tunable: it must lie in $[p, m]$, and
#   $m \bmod N$ must be 0 or at least $p$. Older Megatron-LM asserted $m \bmod p = 0$ outright.
# - **PyTorch at $v = 1$.** `ScheduleInterleaved1F1B` with one stage per rank still warms up
#   $2(p - r - 1)$ forwards, more than 1F1B's $p - r - 1$; the course's `interleaved_1f1b(p, m, 1)`
#   is plain 1F1B, as Megatron-LM runs without virtual stages.

# %%
from course_lib.pipeline import one_f_one_b, zero_bubble_h1

for name, run in {
    "1F1B": simulate(one_f_one_b(4, 8), 1.0e-3, 2.0e-3),
    "ZB-H1": simulate(zero_bubble_h1(4, 8), 1.0e-3, 1.0e-3, 1.0e-3),
}.items():
    idle = (run.makespan - run.ideal_compute) * 1e3
    print(
        f"{name}: step {run.makespan * 1e3:.0f} ms, idle {idle:.0f} ms per stage, "
        f"peak stashes per stage {[int(k) for k in run.peak_in_flight]}"
    )
