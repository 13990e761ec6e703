# %% [markdown]
# # pipe04 · Interleaved pipeline schedules
#
# **Objective.** Map virtual chunks to physical ranks and trade a smaller ideal bubble against
# additional boundaries and schedule constraints.
#
# **Time:** 28 min · **Level:** advanced
#
# You will be able to
# - place $v$ chunks on each of $p$ ranks (stage $k$ on rank $k \bmod p$) and say which layers
#   a rank holds;
# - compute the overhead $(p - 1)/(v\,m)$ and the $v\,p - 1$ messages a microbatch sends between
#   ranks, and between nodes;
# - find, with the simulator, the $v$ that minimises the step under a per-hop latency;
# - tell which $(p, m, v)$ Megatron-LM and PyTorch 2.13 accept, and where the formula stops
#   holding.
#
# **What you need:** pipe02 (overhead versus idle fraction, per-hop latency) and pipe03 (1F1B's
# warm-up). Python and numpy at the level of `np.arange` and integer division.

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
    zero_bubble_comparison,
)
from course_lib.pipeline import interleaved_1f1b, simulate
from course_lib.pipeline.interleaving import acceptance, crossings_per_microbatch

rng = np.random.default_rng(4)  # the course's convention; nothing in this lesson is random

# The worked example: pipe02's 4 ranks and 8 microbatches, backward twice the forward.
num_ranks, num_microbatches = 4, 8
forward_time, backward_time = 1.0e-3, 2.0e-3  # seconds per microbatch over a rank's layers

# %% [markdown]
# ## 1. Rank r holds chunks r, r + p, …, r + (v − 1)p
#
# 1F1B (pipe03) gives each of the $p$ ranks one contiguous block of layers, and every rank idles
# $(p - 1)(t_f + t_b)$ per step. Megatron-LM's interleaved schedule (Narayanan et al. 2021,
# "Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", §2.2.2,
# Fig. 4) cuts the model into $v\,p$ smaller chunks instead and deals them out in turn: global
# stage $k$ lives on rank $k \bmod p$, so rank $r$ holds $v$ chunks, $p$ stages apart. With 16
# layers, $p = 4$ and $v = 2$, rank 0 holds layers 0, 1, 8 and 9 (the paper's "device 1 has
# layers 1, 2, 9, 10", counting from 1).
#
# A rank still holds $1/p$ of the model, in $v$ pieces. So a microbatch costs $t_f/v$ forward
# and $t_b/v$ backward per chunk, where $t_f$ and $t_b$ are its forward and backward time over a
# rank's whole share — the stage time of the plain pipeline, $v = 1$ (`chunks_per_rank`).

# %%
chunk_placement(16, 4, 2)
plt.show()

# %% [markdown]
# Each colour is one of a rank's chunks. A microbatch's forward now visits ranks 0, 1, 2, 3 and
# then rank 0 again, for stage 4.

# %% [markdown]
# ## 2. The bubble shrinks to (p − 1)/(v·m) of ideal compute
#
# `interleaved_1f1b(p, m, v)` builds Megatron-LM's per-rank order: rank $r$ warms up with
# $2(p - r - 1) + (v - 1)\,p$ chunk forwards, taking microbatches in groups of $p$ per chunk,
# then alternates one forward and one backward, then drains. Simulate it with per-chunk costs:

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
# Hatched boxes belong to a rank's second chunk. The fill and the drain still take $p - 1$ slots
# each, but a slot is now one chunk's $(t_f + t_b)/v$: the bubble shrinks from
# $(p - 1)(t_f + t_b)$ to $t_{pb} = (p - 1)(t_f + t_b)/v$ while the ideal compute
# $t_{id} = m(t_f + t_b)$ stays. So (Narayanan et al. 2021, §2.2.2)
#
# $$\text{overhead} = \frac{t_{pb}}{t_{id}} = \frac{p - 1}{v\,m},$$
#
# where $p$ is `num_ranks`, $m$ is `num_microbatches` and $v$ is `chunks_per_rank`. It is
# pipe02's overhead relative to ideal compute, not the idle fraction: 37.5 % becomes 18.75 %,
# 33 ms becomes 28.5 ms.
#
# Memory does not shrink with it. Rank 0's longer warm-up stashes $p + (p - 1)/v$ microbatches'
# worth of activations (a chunk's stash is $1/v$ of a microbatch's) against $p$ under 1F1B: 5.5
# against 4 here (the explorer plots it).

# %% [markdown]
# ## 3. Every chunk boundary is a message between ranks
#
# The price is on the wire. A microbatch's forward crosses $v\,p - 1$ chunk boundaries instead
# of $p - 1$, and with stage $k$ on rank $k \bmod p$ each one joins two different ranks (when
# $p > 1$); its backward crosses them all again. Each message carries the same activation
# whatever $v$ (the tensor at a cut does not shrink), so point-to-point traffic grows about
# $v$-fold — the cost Narayanan et al. (2021, §2.2.2) set against the smaller bubble. Of the
# $v\,p - 1$ hand-offs, $v - 1$ wrap around from rank $p - 1$ back to rank 0, and on a cluster
# those two ranks usually sit on different nodes:

# %%
crossing_chain(8, chunks=(1, 4), ranks_per_node=4)
plt.show()
print(crossings_per_microbatch(8, 4, ranks_per_node=4))

# %% [markdown]
# Eight ranks on two nodes of four: with $v = 4$ a forward makes 31 hand-offs instead of 7, and
# 7 of them cross between the nodes instead of 1 — one per pass round the ranks (rank 3 to 4) and
# one per wrap-around (rank 7 to 0).

# %% [markdown]
# ## 4. With latency there is a best v
#
# As in pipe02, each message arrives $\delta$ after it is sent. For $v \ge 2$, $m$ a multiple of
# $p$ and $\delta \le \min(t_f, t_b)/v$ (no longer than one chunk's work), the simulator adds
# exactly $2(v\,p - 1)\,\delta$: each crossing once down and once up, everything else hidden
# behind other chunks' work. So
#
# $$T(v) = m\,(t_f + t_b) + \frac{(p - 1)(t_f + t_b)}{v} + 2\,(v\,p - 1)\,\delta,$$
#
# a bubble falling as $1/v$ against latency rising with $v$, smallest near
# $v^* = \sqrt{(p - 1)(t_f + t_b)/(2\,p\,\delta)}$. A longer $\delta$ lands in the steady state
# too, and plain 1F1B ($v = 1$) pays it there at any $\delta$ (pipe02's explorer showed it):
# then only the simulator answers.

# %%
step_time_curves(8, 16, 1.0e-3, 2.0e-3, latencies=(0.0, 0.1e-3, 0.2e-3))
plt.show()

# %% [markdown]
# $p = 8$, $m = 16$. The stars mark the best $v$: 8 without latency, 4 at $\delta = 0.1$ ms
# ($v^* \approx 3.6$), 3 at 0.2 ms ($v^* \approx 2.6$). The crosses, the formula, are missing
# where it fails: at $v = 1$, and at $v = 6$ and 8 with $\delta = 0.2$ ms, more than $t_f/v$.
#
# These timings are synthetic: balanced chunks, one fixed $\delta$ per message, no bandwidth
# term, no send that blocks compute. On a real cluster $\delta$ differs inside a node and between
# nodes and depends on whether the framework overlaps transfers with compute; measure the time of
# one activation message both ways before you trust a best $v$.

# %% [markdown]
# ## 5. Accepted is not the same as efficient
#
# Megatron-LM's `forward_backward_pipelining_with_interleaving` (2025 sources,
# `megatron/core/pipeline_parallel/schedules.py`) refuses an $m$ that is not a multiple of $p$:
# its microbatch group size defaults to $p$. PyTorch 2.13's `ScheduleInterleaved1F1B`
# (`torch/distributed/pipelining/schedules.py`) relaxes it: with rounds $= \max(1, m // p)$,
# $m$ must be a multiple of rounds, and each chunk then runs $m$ // rounds microbatches in a row.
# So $p = 4$ accepts $m = 10$ (2 rounds of 5) and $m = 3$ (1 round) and refuses $m = 9$. The
# course's `interleaved_1f1b` accepts what PyTorch accepts (and any $m$ at $v = 1$, plain 1F1B).
#
# With $m < p$ the microbatches cannot fill the loop round the ranks: microbatch 0 must cross
# all $v\,p$ chunks before rank 0 has anything else to run, and the step becomes
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
# The explorer simulates interleaved 1F1B with $t_f = 1$ ms and $t_b = 2$ ms per rank and sets
# each closed form beside the simulator. Try:
# - $p = 8$, $m = 16$: step $v$ from 1 to 8. The overhead follows $(p - 1)/(v\,m)$; rank 0's
#   peak stash jumps from 8 to 11.5 at $v = 2$, then falls towards $p$ as $p + (p - 1)/v$.
# - Drag $\delta$ to 0.2 ms and step $v$ again: the step bottoms out at $v = 3$; at $v = 6$ and 8
#   the closed-form column goes blank.
# - $p = 4$, $m = 3$: accepted, but the overhead row disagrees; $m = 9$ is refused.

# %%
interleaved_explorer()

# %% [markdown]
# ## Exercises
#
# Answer in the cells marked `YOUR CODE HERE`, then run the grade cell below each: visible checks
# give quick feedback; hidden tests check more cases when the notebook is graded. While a grade
# cell calls your function, `course_lib`'s interleaving models and closed forms (and so the
# explorer) are disabled; `simulate` and `interleaved_1f1b` stay usable where an exercise asks
# for them.
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
    ]

    def text(ranks):
        return " ".join(f"{x:g}" for x in np.asarray(ranks, dtype=float).tolist())

    hints = distinct_hints([(text(wrong), why) for wrong, why in mistakes], text(expected))
    if got.dtype.kind in "fiu" and text(got) in hints:
        check_choice(label, text(got), text(expected), {**hints, text(expected): "right"})
    check_array(label, got, expected)


with forbid(*_no_delegation, exercise="Exercise 1"):
    _small = layer_owner(12, 2, 3)
_checked_owner("layer_owner(12, 2, 3)", _small, 12, 2, 3)
### BEGIN HIDDEN TESTS
_cases = [
    (16, 4, 2),
    (24, 4, 3),
    (8, 8, 1),
    (6, 1, 3),
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
# order: balanced chunks, no latency, $m$ a multiple of $p$.


# %% nbgrader={"grade": false, "grade_id": "overheads_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def interleaved_overheads(num_ranks: int, num_microbatches: int) -> tuple[float, float, float]:
    """The overheads relative to ideal compute at v = 1, 2 and 4, as fractions."""
    ### BEGIN SOLUTION
    return tuple((num_ranks - 1) / (v * num_microbatches) for v in (1, 2, 4))
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "overheads_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 2: interleaved_overheads(p, m) = (overhead at v = 1, 2, 4), fractions."""
import course_lib.pipeline as course_pipeline
import course_lib.pipeline.interleaving as course_interleaving

_no_delegation = [
    (course_pipeline, "interleaved_overhead"),
    (course_pipeline, "fill_drain_overhead"),
    (course_pipeline, "simulate"),
    (course_interleaving, "interleaved_makespan"),
    (course_interleaving, "step_times"),
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
# node $r$ // `ranks_per_node`, which divides `num_ranks`. Count the forward only (the backward
# repeats it). Graded in two cells (1 + 2 points); the hidden tests include a single rank and a
# single node.


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
    _small = transfers_per_microbatch(4, 2, 2)
_checked_ranks("transfers_per_microbatch(4, 2, 2)", _small, 4, 2)
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
    ]
    check_int(f"{label}[1]", got[1], right, known_wrong=distinct_hints(mistakes, right))


with forbid(*_no_delegation, exercise="Exercise 3"):
    _small = transfers_per_microbatch(4, 2, 2)
_checked_nodes("transfers_per_microbatch(4, 2, 2)", _small, 4, 2, 2)
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
# shortest, as an int. Times are in seconds, per microbatch over a rank's whole share of layers.
# Steps within 1e-9 s of the shortest tie: return the smallest such $v$. Simulate every
# candidate: section 4's formula does not hold for all of them. The hidden tests include a single
# rank, where every $v$ ties.


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


def _checked_best(label, got, case):
    """An int, the simulator's best v, with the usual mistakes named."""
    p, m, t_f, t_b, delta, candidates = case
    steps = course_interleaving.step_times(p, m, t_f, t_b, delta, candidates)
    right = min(v for v, t in steps.items() if t <= min(steps.values()) + 1e-9)
    no_latency = course_interleaving.step_times(p, m, t_f, t_b, 0.0, candidates)
    mistakes = [
        (min(no_latency, key=no_latency.get), "the best v without latency: every crossing costs δ"),
        (max(v for v, t in steps.items() if t <= min(steps.values()) + 1e-9), "the largest tie"),
    ]
    check_int(label, got, right, known_wrong=distinct_hints(mistakes, right))


_visible = (4, 8, 1.0e-3, 2.0e-3, 0.1e-3, (1, 2, 3, 4, 6, 8))
with forbid(*_no_delegation, exercise="Exercise 4"):
    _small = best_chunks(*_visible)
_checked_best("best_chunks(4, 8, 1 ms, 2 ms, 0.1 ms, (1, 2, 3, 4, 6, 8))", _small, _visible)
### BEGIN HIDDEN TESTS
_cases = [
    (8, 16, 1.0e-3, 2.0e-3, 0.1e-3, (1, 2, 3, 4, 6, 8)),
    (4, 12, 0.6e-3, 1.2e-3, 0.4e-3, (1, 2, 3, 4)),
    (8, 32, 0.4e-3, 1.0e-3, 0.6e-3, (1, 2, 4, 8)),
    (16, 32, 1.0e-3, 2.0e-3, 0.05e-3, (1, 2, 4, 8)),
    (1, 6, 1.0e-3, 2.0e-3, 0.3e-3, (2, 4, 1)),
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
# $v \ge 2$), by section 5's rule.


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


def _checked_accepts(label, got, p, m):
    """A bool, compared as a verdict; the hint names the rule a wrong verdict follows."""
    check_type(label, got, bool, np.bool_)
    rounds = max(1, m // p)
    right = "accepts" if m % rounds == 0 else "refuses"
    megatron = "accepts" if m % p == 0 else "refuses"
    wrong = "refuses" if right == "accepts" else "accepts"
    why = f"rounds = max(1, {m} // {p}) = {rounds}, and {m} % {rounds} = {m % rounds}"
    if wrong == megatron:
        why += " — m % p == 0 is Megatron-LM's rule, which PyTorch relaxes"
    options = {right: f"PyTorch {right}: {why}", wrong: f"PyTorch does not {wrong[:-1]}: {why}"}
    check_choice(label, "accepts" if got else "refuses", right, options)


with forbid(*_no_delegation, exercise="Exercise 5"):
    _small = pytorch_accepts(4, 10)
_checked_accepts("pytorch_accepts(4, 10)", _small, 4, 10)
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
# step 50.6 ms. But each microbatch's forward then makes 63 hand-offs between ranks instead of
# 7, 15 of them between the nodes instead of 1 (one per pass, plus every wrap from rank 7 to
# rank 0), and its backward as many: 2,016 messages per step instead of 224, each paying an
# activation's full latency — with $\delta = 0.1$ ms on every hop the simulator gives 63.2 ms at
# $v = 8$ against 59.5 ms at $v = 4$, and a 1/8 chunk hides at most $t_f/8 = 0.125$ ms of it.
# Rank 0 also stashes 8.9 microbatches instead of 8. Before deciding, measure one activation
# message inside a node and between the nodes (and whether the framework overlaps it with
# compute) and the kernel time of a 1/8-size chunk, then simulate $v = 2, 4, 8$ with those
# numbers.
#
# Rubric: 1 point for the bubble gain with numbers set against the growth in messages (between
# ranks and between nodes); 1 point for a concrete measurement plan (message latency inside and
# between nodes, overlap, small-chunk kernel efficiency) or the memory cost, with numbers.

# %% [markdown]
# ## Takeaways
#
# - With $v$ chunks per rank, stage $k$ on rank $k \bmod p$, the overhead relative to ideal
#   compute falls to $(p - 1)/(v\,m)$ (Narayanan et al. 2021, §2.2.2); rank 0 stashes more, not
#   less.
# - A microbatch's forward makes $v\,p - 1$ hand-offs between ranks instead of $p - 1$, the
#   $v - 1$ wrap-arounds included, and as many backward; count those between nodes apart.
# - Under a per-hop latency the step has a best $v$; find it with the simulator, since the
#   latency formula holds only while $\delta$ hides behind a chunk.
# - The trap: reading $(p - 1)/(v\,m)$ as the step's gain. The bubble shrinks; the messages, the
#   memory and the $(p, m)$ rules do not. PyTorch 2.13 accepts $m$ that Megatron-LM refuses, and
#   with $m < p$ the formula no longer holds.

# %% [markdown]
# ## Going further (optional, ungraded)
#
# - **Split the backward instead.** Zero-bubble schedules (Qi et al. 2024, "Zero Bubble Pipeline
#   Parallelism", ICLR 2024, §2.1, Fig. 3 top) split each backward into B, the input gradient the
#   previous stage waits for, and W, the weight gradient nothing waits for. ZB-H1 keeps 1F1B's
#   order of F and B and defers each stage's W to fill the drain: with $t_f = t_b = t_w$ it idles
#   $(p - 1)(t_f + t_b - t_w)$ per stage against 1F1B's $(p - 1)(t_f + t_b + t_w)$, a third,
#   and every stage holds $p$ stashes until their W — 1F1B's peak on stage 0, now on every stage.
#   No extra messages, no chunks: the simulator agrees (below, $p = 4$, $m = 8$, 1 ms each).
# - **Megatron-Core's knob.** Current Megatron-Core makes the group of microbatches a chunk runs
#   in a row tunable (`microbatch_group_size_per_vp_stage`, default $p$): it must lie in
#   $[p, m]$, and the remainder $m \bmod N$ must be 0 or at least $p$.
# - **PyTorch at $v = 1$.** `ScheduleInterleaved1F1B` with one stage per rank still warms up
#   $2(p - r - 1)$ forwards, more than 1F1B's $p - r - 1$; the course's `interleaved_1f1b(p, m, 1)`
#   is plain 1F1B, as Megatron-LM runs without virtual stages.

# %%
zero_bubble_comparison(4, 8, 1.0e-3, 1.0e-3, 1.0e-3)
plt.show()
