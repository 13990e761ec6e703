# %% [markdown]
# # pipe09 · Point-to-point pipeline deadlocks
#
# **Objective.** Trace communication matching, wait cycles, collective order, and buffer ownership
# instead of assuming asynchronous calls guarantee progress.
#
# **Time:** 29 min · **Level:** advanced
#
# You will be able to
# - predict whether a send/receive program completes with and without buffered sends, and say
#   why the MPI standard calls relying on buffering unsafe;
# - find a hung job's wait-for cycle, and order a ring exchange so no cycle forms for any $p$;
# - find the first collective the ranks disagree on, and the microbatch a reused send buffer
#   corrupted.
#
# **What you need:** pipe03 (1F1B) and pipe04 (an interleaved pipeline is a ring).

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
# %matplotlib inline
import matplotlib.pyplot as plt
import numpy as np

from course_lib.checks import (
    check_choice,
    check_int,
    check_names,
    check_range,
    check_type,
    distinct_hints,
    forbid,
    passed,
)
from course_lib.explorers.p2p import p2p_explorer
from course_lib.figures.p2p import buffer_timeline, program_grids, wait_for_graphs
from course_lib.pipeline.p2p import (
    Collective,
    Compute,
    Irecv,
    Isend,
    Recv,
    Send,
    Wait,
    exchange_programs,
    first_mismatching_collective,
    os_pipe_exchange,
    pipe_capacity,
    simulate_p2p,
)

rng = np.random.default_rng(9)  # the course's convention; nothing in this lesson is random

KiB, MiB = 2**10, 2**20
eager_limit = 64 * KiB  # the worked examples' transport: an assumption, not a library's default
toy_message = 64 * 256 * 2  # one microbatch: 64 tokens × hidden 256 × 2 bytes = 32 KiB
real_message = 2048 * 4096 * 2  # 2,048 tokens × hidden 4,096 × 2 bytes (bf16) = 16 MiB


def check_ring_exchange(exchange, num_ranks, nbytes, eager_limits, exercise):
    """Exercise 3's check (both grade cells): each rank's program is Send and Recv only, to and
    from both ring neighbours, and all programs together complete at every eager limit."""
    import course_lib.pipeline.p2p as course_p2p

    with forbid((course_p2p, "exchange_programs"), exercise=exercise):
        programs = [exchange(num_ranks, r, nbytes) for r in range(num_ranks)]
    for r, program in enumerate(programs):
        label = f"ring_exchange({num_ranks}, {r}, {nbytes})"
        check_type(label, program, list, tuple)
        for k, op in enumerate(program):
            check_type(f"{label}[{k}] (use only Send and Recv)", op, Send, Recv)
        peers = [(r + 1) % num_ranks, (r - 1) % num_ranks]
        wanted = [str(Send(q, nbytes)) for q in peers] + [str(Recv(q, nbytes)) for q in peers]
        check_names(f"{label}: its operations, sorted", sorted(map(str, program)), sorted(wanted),
                    ordered=True)  # fmt: skip
    for limit in eager_limits:
        blocked = [str(b) for b in simulate_p2p(programs, limit).blocked]
        run = f"simulate_p2p([ring_exchange({num_ranks}, r, {nbytes}) ...], eager_limit={limit})"
        check_names(f"{run}: blocked ranks", blocked, [])


# %% [markdown]
# ## 1. Two ranks that both send first hang only above the eager limit
#
# In the 1F1B steady state (pipe03) stage $s$ sends an activation down while stage $s + 1$
# sends a gradient up; written the obvious way, each sends, then receives. A blocking send
# returns once its buffer may be reused (MPI 4.0, §3.4); libraries pick a protocol by size:
#
# - **eager**, up to an *eager limit*: the data is copied to the receiver; the send returns at once;
# - **rendezvous**, above it: the sender waits for the matching receive.
#
# The implementation sets the limit: MPICH's CH3 device (default before MPICH 3.4) uses
# `MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE`, 131,072 bytes by default. `simulate_p2p` runs one program
# per rank under this model, for a 32 KiB toy activation and a 16 MiB real one, limit 64 KiB:


# %%
def adjacent_stages(nbytes):
    """Stage s (rank 0) and s + 1 (rank 1) in the 1F1B steady state: compute, send, receive."""
    return [
        [Compute(1e-3, label="F"), Send(1, nbytes), Recv(1, nbytes)],  # activation down
        [Compute(2e-3, label="B"), Send(0, nbytes), Recv(0, nbytes)],  # gradient up
    ]


runs = {
    "toy model, 32 KiB": simulate_p2p(adjacent_stages(toy_message), eager_limit),
    "real model, 16 MiB": simulate_p2p(adjacent_stages(real_message), eager_limit),
}
for name, run in runs.items():
    print(f"{name}: {run.describe()}")
program_grids(runs)
plt.show()

# %% [markdown]
# Rows are ranks. At 32 KiB both sends return at once (green: eager copies); at 16 MiB each send
# waits for a receive its peer posts only after its own send, so the orange-red boxes wait forever.
#
# MPI 4.0 (§3.5) files this program as "An exchange that relies on buffering" and calls a program
# "'safe' if no message buffering is required for the program to complete"; MPI 4.1 says a
# portable program "should not rely on message buffering". So the toy run is unsafe too: the
# limit may be zero, and `MPI_Ssend` completes only once its receive has started (§3.4). NCCL's
# `ncclSend` "is blocking for the GPU" unless grouped (NCCL User Guide, "Point To Point
# Communication Functions"): model NCCL with `eager_limit=0`.

# %% [markdown]
# ## 2. The kernel's pipe buffer is an eager limit you can measure
#
# Two processes joined by two pipes each write a message to the other, then read. A write returns
# once the kernel holds the bytes; a pipe holds 16 pages, 65,536 bytes with 4 KiB pages (pipe(7);
# `F_GETPIPE_SZ`). Above that both writers wait; 1 s after both start, the pair is killed.

# %%
capacity = pipe_capacity()  # None where the system does not report it (not Linux)
limit = capacity or 64 * KiB
print(f"pipe capacity: {capacity} bytes" if capacity else "pipe capacity unknown; trying 64 KiB")
try:
    for result in os_pipe_exchange([limit // 4, limit, 4 * limit], timeout=1.0):
        print(result.describe())
except OSError as error:  # some sandboxes refuse to start processes
    print(f"could not start the two processes here: {error}")

# %% [markdown]
# The lesson's only real measurement. A pipe counts all bytes in flight; the model's limit is per
# message.

# %% [markdown]
# ## 3. A deadlock is a cycle in the wait-for graph
#
# A blocked rank waits for the ranks that must act to release it (a send for its receiver, a
# collective for every rank not yet in it). Draw an arrow to each: a **deadlock** is a cycle in
# this *wait-for graph* (Coffman et al. 1971, "System Deadlocks": circular wait).
#
# An interleaved pipeline (pipe04) is a ring: rank $p - 1$ feeds rank 0. If every rank first
# sends to both neighbours, the arrows go round. Parity (even ranks send first, odd ranks receive
# first) breaks the cycle, but on a ring of odd $p$, ranks $p - 1$ and $0$ are both even:

# %%
ring_runs = {
    "4 ranks, all send first": exchange_programs(4, real_message, "send_first"),
    "4 ranks, even ranks send first": exchange_programs(4, real_message, "even_sends_first"),
    "5 ranks, even ranks send first": exchange_programs(5, real_message, "even_sends_first"),
}
ring_runs = {name: simulate_p2p(programs, eager_limit) for name, programs in ring_runs.items()}
for name, run in ring_runs.items():
    print(f"{name}: {run.describe().splitlines()[0]}")
wait_for_graphs(ring_runs)
plt.show()

# %% [markdown]
# Circles are ranks (orange-red: blocked), arrows "waits for" (the cycle thick). Right: ranks 4
# and 0 send to each other first; ranks 1 to 3 wait on them, off the cycle. Megatron-LM's
# `_p2p_ops` (`megatron/core/pipeline_parallel/p2p_communication.py`, NVIDIA/Megatron-LM commit
# `2fd6e2b`) also orders by parity, in a way that survives odd $p$ (Exercise 3). Other fixes:
# post receives first, or batch (`torch.distributed.batch_isend_irecv`, NCCL group calls).
#
# Collectives match by order, not by name: "The starting order of collective operations on a
# particular communicator defines their matching" (MPI 4.0, §6.14). One extra call on one rank
# (a logging all-reduce on the last stage) derails every call after it:

# %%
logged = [[Collective("all_reduce"), Collective("broadcast")] for _ in range(3)]
logged[2] = [Collective("all_reduce"), Collective("all_reduce"), Collective("broadcast")]
print(first_mismatching_collective(logged))

# %% [markdown]
# ## 4. An asynchronous send's buffer belongs to the transfer until its wait
#
# `isend` returns at once but is not a copy: "The sender should not modify any part of the
# send buffer after a nonblocking send operation is called, until the send completes" (MPI 4.0,
# §3.7.2; likewise PyTorch's `isend`). In the model an eager send copies its buffer at the
# `isend`, a rendezvous send reads it when the receive is posted, and a `Compute` writes from its
# start. Stage 0 reuses one buffer, waiting for the previous `isend` only after writing the next
# microbatch; stage 1 is slower:


# %%
def one_buffer(nbytes, num_microbatches=4):
    """Rank 0 writes microbatch j into buf, then waits for the isend of j - 1, then isends j."""
    rank0 = []
    for j in range(num_microbatches):
        rank0.append(Compute(1e-3, buffer="buf", microbatch=j, label=f"F{j}"))
        if j > 0:
            rank0.append(Wait(f"send{j - 1}"))  # too late: buf already holds microbatch j
        rank0.append(Isend(1, nbytes, f"send{j}", buffer="buf"))
    rank0.append(Wait(f"send{num_microbatches - 1}"))
    rank1 = [
        op
        for j in range(num_microbatches)
        for op in (Recv(0, nbytes), Compute(1.5e-3, label=f"F{j}"))
    ]
    return [rank0, rank1]


reused = simulate_p2p(one_buffer(real_message), eager_limit)
for message in reused.corrupted:
    print(f"rank 1's receive of microbatch {message.sent} delivered microbatch {message.delivered}")
print("with 32 KiB messages:", len(simulate_p2p(one_buffer(toy_message), eager_limit).corrupted))
buffer_timeline(reused)
plt.show()

# %% [markdown]
# Yellow: a transfer owns `buf`, from the `isend` until the receive reads it. A forward starting
# inside a yellow span overwrites unread data: the red arrows deliver the wrong microbatch,
# silently. Small messages survive only because the `isend` copies them. Fix: wait before
# writing, or a second buffer waited on before reuse.
#
# Sections 1, 3 and 4 are simulated (transfers take no time); a real hang sits in a send, receive
# or wait until a watchdog kills it.

# %% [markdown]
# ## Explore
#
# A neighbour exchange on a ring or chain, also with synchronous sends. Try:
# - "send first", 4 ranks: drag the size below 64 KiB; the cycle goes, yet the table says unsafe.
# - "even ranks send both first": step the ranks from 2 to 8; odd rings deadlock, chains do not.
# - "post all, then wait": nothing deadlocks.

# %%
p2p_explorer()

# %% [markdown]
# ## Exercises
#
# Answer in the `YOUR CODE HERE` cells, then run the grade cell below each (hidden tests check
# more at grading). `course_lib` routines that would answer an exercise are disabled in its grade
# cell.
#
# ### Exercise 1 — Predict (2 points)
#
# Two ranks run the same code, one message each way, eager limit 64 KiB. Complete or deadlock?
#
# | | each rank runs | message |
# |---|---|---|
# | A | `send`, then `recv` | 8 KiB |
# | B | `send`, then `recv` | 4 MiB |
# | C | `MPI_Ssend`, then `recv` | 8 KiB |
# | D | `req = isend(...)`, `req.wait()`, then `recv` | 4 MiB |
# | E | `req = isend(...)`, `recv`, then `req.wait()` | 4 MiB |
# | F | `recv`, then `send` | 8 KiB |
#
# Set `verdicts` to a dict mapping each letter to `"completes"` or `"deadlocks"`.

# %% nbgrader={"grade": false, "grade_id": "verdicts_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
verdicts = {
    "A": "completes",  # 8 KiB <= 64 KiB: both sends are eager
    "B": "deadlocks",  # rendezvous: each send waits for a receive posted after the peer's send
    "C": "deadlocks",  # a synchronous send never completes before its receive starts
    "D": "deadlocks",  # waiting at once makes the isend a blocking send
    "E": "completes",  # both receives are posted while the isends are pending
    "F": "deadlocks",  # a receive always waits for its send, whatever the size
}
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "verdicts_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 1: verdicts, a dict from "A".."F" to "completes" or "deadlocks"."""
_options = ("completes", "deadlocks")
check_type("verdicts", verdicts, dict)
check_names("the keys of verdicts", [str(k) for k in verdicts], list("ABCDEF"))
for _key in "ABCDEF":
    check_choice(f"verdicts[{_key!r}]", verdicts[_key], verdicts[_key], dict.fromkeys(_options, ""))
_b_why = (
    "both sends return before their receives are posted, as they do only below the eager limit; "
    "4 MiB is above it (section 1's 16 MiB run)"
)
check_choice("verdicts['B']", verdicts["B"], "deadlocks", {"deadlocks": "", "completes": _b_why})
### BEGIN HIDDEN TESTS
_why = {
    "A": {"deadlocks": "each send waits for its receive, but 8 KiB is below the eager limit: "
          "both sends return at once"},
    "B": {"completes": _b_why},
    "C": {"completes": "the synchronous send returns before its receive starts; it never does, "
          "at any size ('small messages never deadlock' relies on buffering)"},
    "D": {"completes": "an isend waited on at once lets each rank go on to its recv; it is a "
          "blocking send (asynchronous calls do not guarantee progress)"},
    "E": {"deadlocks": "a send finds no receive, but both receives are posted while the isends "
          "are in flight, so each send finds one"},
    "F": {"completes": "a receive returns before its send is posted; it waits for its send at "
          "any size, so both wait forever"},
}  # fmt: skip
_expected = {"A": "completes", "B": "deadlocks", "C": "deadlocks", "D": "deadlocks"}
_expected |= {"E": "completes", "F": "deadlocks"}
for _key, _right in _expected.items():
    _explain = {_right: "the right verdict", **_why[_key]}
    check_choice(f"verdicts[{_key!r}]", verdicts[_key], _right, _explain)
### END HIDDEN TESTS
passed("Exercise 1")

# %% [markdown]
# ### Exercise 2 — Find the cycle (3 points)
#
# Write `find_cycle(waits_for)`: `waits_for` maps each blocked rank to the ranks it waits for (a
# rank not a key is not blocked). Return `[r0, r1, ..., r0]`, each rank waiting for the
# next, starting and ending at the smallest rank on any cycle (any cycle through it counts), or
# `[]` if there is none. Hidden tests include a self-wait (`[3, 3]`), ranks waiting on a cycle
# from outside it, and arrows that loop only if direction is ignored. networkx's cycle routines
# are disabled too.


# %% nbgrader={"grade": false, "grade_id": "cycle_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def find_cycle(waits_for: dict[int, list[int]]) -> list[int]:
    """A wait-for cycle [r0, ..., r0] through the smallest rank on any cycle, or []."""
    ### BEGIN SOLUTION
    for start in sorted(waits_for):  # the smallest rank that can reach itself
        parent, frontier = {}, [start]
        while frontier:  # breadth-first over the ranks reachable from start
            nxt = []
            for rank in frontier:
                for peer in waits_for.get(rank, []):
                    if peer == start:
                        path = [rank]
                        while path[-1] != start:
                            path.append(parent[path[-1]])
                        return [*reversed(path), start]
                    if peer not in parent:
                        parent[peer] = rank
                        nxt.append(peer)
            frontier = nxt
    return []
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "cycle_tests", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
"""Exercise 2: find_cycle(waits_for), a closed cycle from the smallest rank on a cycle, or []."""
import networkx as _nx

import course_lib.pipeline.p2p as _p2p

_no_delegation = [(_p2p, "find_wait_cycle"), (_p2p, "simulate_p2p")] + [
    (_nx, name)
    for name in ("find_cycle", "simple_cycles", "recursive_simple_cycles", "chordless_cycles")
    if hasattr(_nx, name)
]


def _check_cycle(waits, got, start):
    """A list of ints; [] iff no cycle; else starts at `start`, closes, follows waits, simple."""
    label = f"find_cycle({waits})"
    check_type(label, got, list, tuple)
    for _k, _rank in enumerate(got):
        check_type(f"{label}[{_k}]", _rank, int)
    if start is None:
        check_int(f"len({label}) (there is no cycle)", len(got), 0)
        return
    check_int(f"{label}[0], the smallest rank on a cycle", got[0] if got else -1, start,
              known_wrong={-1: "no cycle found: there is one"})  # fmt: skip
    check_int(f"{label}[-1]: a cycle ends where it starts", got[-1], start)
    check_int(
        f"{label}: at least two entries, a rank and the same rank again", int(len(got) >= 2), 1
    )
    _missing = [(a, b) for a, b in zip(got, got[1:], strict=False) if b not in waits.get(a, [])]
    check_names(
        f"{label}: steps a→b where rank a does not wait for rank b", [str(s) for s in _missing], []
    )
    _inner = list(got[:-1])
    check_int(f"{label}: ranks visited twice before closing", len(_inner) - len(set(_inner)), 0)


with forbid(*_no_delegation, exercise="Exercise 2"):
    _visible = {
        "ring": find_cycle({0: [1], 1: [2], 2: [0]}),
        "tail": find_cycle({0: [1], 1: [2], 2: [1]}),
        "none": find_cycle({0: [1], 1: [2]}),
    }
_check_cycle({0: [1], 1: [2], 2: [0]}, _visible["ring"], 0)
_check_cycle({0: [1], 1: [2], 2: [1]}, _visible["tail"], 1)
_check_cycle({0: [1], 1: [2]}, _visible["none"], None)
### BEGIN HIDDEN TESTS
_cases = [  # (waits_for, the smallest rank on a cycle, or None)
    ({3: [3], 0: [3]}, 3),
    ({5: [6], 6: [5], 2: [3], 3: [2], 0: [2]}, 2),
    ({0: [1, 2], 1: [2]}, None),  # a triangle only if the arrows are ignored
    ({0: [1, 2], 1: [3], 2: [3]}, None),  # a diamond: rank 3 reached twice, no cycle
    ({4: [5], 5: [4], 0: [1]}, 4),  # rank 0 cannot reach the cycle
    ({0: [1, 2], 1: [2], 2: [0]}, 0),  # a collective's several waits: two cycles through 0
    ({6: [0], 0: [1], 1: [2], 2: [3], 3: [4], 4: [5], 5: [6]}, 0),
    ({0: [1], 1: [7]}, None),  # rank 7 has finished
    ({1: [2], 2: [3], 3: [1], 7: [7]}, 1),
    ({0: [3], 3: [2], 2: [1], 1: [3]}, 1),  # a search from 0 meets the cycle at 3, not at 1
    ({}, None),
]
with forbid(*_no_delegation, exercise="Exercise 2 (hidden cases)"):
    _answers = [find_cycle(dict(waits)) for waits, _ in _cases]
for (_waits, _start), _got in zip(_cases, _answers, strict=True):
    _check_cycle(_waits, _got, _start)
### END HIDDEN TESTS
passed("Exercise 2")

# %% [markdown]
# ### Exercise 3 — A ring exchange that cannot deadlock (2 points)
#
# Write `ring_exchange(num_ranks, rank, nbytes)`: rank `rank`'s program on a ring of `num_ranks`
# ≥ 2, sending `nbytes` to `(rank + 1) % num_ranks` and to `(rank - 1) % num_ranks` and receiving
# `nbytes` from each, as a list of `Send` and `Recv` only (blocking: order is everything). With 2
# ranks both neighbours are one rank. The grade cells simulate all ranks at eager limits 0 and
# 64 KiB: 3a for even `num_ranks`, 3b for odd.


# %% nbgrader={"grade": false, "grade_id": "ring_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def ring_exchange(num_ranks: int, rank: int, nbytes: int) -> list:
    """Rank's Send/Recv program for a neighbour exchange on a ring, deadlock-free for any p."""
    ### BEGIN SOLUTION
    nxt, prv = (rank + 1) % num_ranks, (rank - 1) % num_ranks
    if rank % 2 == 0:  # Megatron-LM's _p2p_ops order for even pipeline ranks
        return [Send(nxt, nbytes), Recv(prv, nbytes), Send(prv, nbytes), Recv(nxt, nbytes)]
    return [Recv(prv, nbytes), Send(nxt, nbytes), Recv(nxt, nbytes), Send(prv, nbytes)]
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ring_even_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 3a: ring_exchange on rings of even size completes with synchronous sends."""
check_ring_exchange(ring_exchange, 4, 16 * MiB, (0,), "Exercise 3a")
### BEGIN HIDDEN TESTS
for _p in (2, 4, 6, 8):
    for _nbytes in (4 * KiB, 16 * MiB):
        check_ring_exchange(ring_exchange, _p, _nbytes, (0, 64 * KiB), "Exercise 3a (hidden cases)")
### END HIDDEN TESTS
passed("Exercise 3a")

# %% nbgrader={"grade": true, "grade_id": "ring_odd_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 3b: ring_exchange on rings of odd size completes with synchronous sends."""
check_ring_exchange(ring_exchange, 5, 16 * MiB, (0,), "Exercise 3b")
### BEGIN HIDDEN TESTS
for _p in (3, 5, 7):
    for _nbytes in (4 * KiB, 16 * MiB):
        check_ring_exchange(ring_exchange, _p, _nbytes, (0, 64 * KiB), "Exercise 3b (hidden cases)")
### END HIDDEN TESTS
passed("Exercise 3b")

# %% [markdown]
# ### Exercise 4 — The first mismatching collective (1 point)
#
# Write `first_mismatch(programs)`: `programs[r]` is rank r's operations, collectives mixed with
# point-to-point operations and computes. Counting only each rank's `Collective` calls from 0,
# return the index k of the first call not the same on every rank (by `.name`; a rank with no
# k-th call differs), or `None` if all agree.


# %% nbgrader={"grade": false, "grade_id": "mismatch_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
def first_mismatch(programs: list[list]) -> int | None:
    """Index of the first collective call that differs across ranks, or None."""
    ### BEGIN SOLUTION
    calls = [[op.name for op in program if isinstance(op, Collective)] for program in programs]
    for k in range(max(len(c) for c in calls)):
        if len({c[k] if k < len(c) else None for c in calls}) > 1:
            return k
    return None
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "mismatch_tests", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Exercise 4: first_mismatch(programs), an int index among the collectives, or None."""
import course_lib.pipeline.p2p as _p2p

_no_delegation = [(_p2p, "first_mismatching_collective"), (_p2p, "simulate_p2p")]
_ar, _bc, _ag = Collective("all_reduce"), Collective("broadcast"), Collective("all_gather")


def _check_mismatch(label, got, expected, hints=()):
    if expected is None:
        check_type(f"{label} (no call differs: None)", got, type(None))
        return
    _none = [why for value, why in hints if value is None]
    if got is None and _none:  # None is not an int: say which mistake gives it
        check_type(f"{label} (None: {_none[0]})", got, int)
    check_int(label, got, expected, known_wrong=distinct_hints(hints, expected))


with forbid(*_no_delegation, exercise="Exercise 4"):
    _swapped = first_mismatch([[_ar, _bc], [_bc, _ar]])
    _skipped = first_mismatch([[_ar, _ag, _bc], [_ar, _ag]])
_check_mismatch(
    "first_mismatch([[all_reduce, broadcast], [broadcast, all_reduce]])",
    _swapped,
    0,
    [(None, "the same calls in another order still differ at call 0"), (1, "counted from 1")],
)
_check_mismatch(
    "first_mismatch([[all_reduce, all_gather, broadcast], [all_reduce, all_gather]])",
    _skipped,
    2,
    [(None, "zip() stops at the shorter rank, but a rank without a call differs")],
)
### BEGIN HIDDEN TESTS
_s, _r = Send(1, 8), Recv(0, 8)
_mismatch_cases = [  # (programs, expected, hints)
    ([[_ar, _s, _bc, _ag], [_r, _ar, _bc, _ar]], 2, [(3, "a position in the program, not among the collectives"), (4, "counted from 1")]),
    ([[_ar, _ag], [_ar, _ag], [_ar, _bc]], 1, [(None, "only ranks 0 and 1 compared")]),
    ([[_ar, _bc], [_ar, _bc, _ag]], 2, [(None, "zip() stops at the shorter rank"), (3, "counted from 1")]),
    ([[Compute(1e-3), _ar], [_ar, Compute(2e-3)]], None, [(1, "compared positions in the program")]),
    ([[_ar, _bc, _ag]], None, []),
    ([[_s, _ar], [_r, _ar]], None, []),
    ([[_ag, _ar, _bc], [_ar, _ag, _bc]], 0, [(None, "compared the sets of calls, not their order"), (1, "counted from 1")]),
    ([[_ar], [_ar], [_ar], []], 0, [(None, "zip() stops at the shorter rank")]),
    ([[_ar, _bc], [_ar, _ag], [_ar, _bc]], 1, [(None, "only the first and the last rank compared")]),
]  # fmt: skip
with forbid(*_no_delegation, exercise="Exercise 4 (hidden cases)"):
    _mismatch_answers = [
        first_mismatch([list(p) for p in progs]) for progs, _, _ in _mismatch_cases
    ]
for _k, ((_progs, _expected, _hints), _got) in enumerate(
    zip(_mismatch_cases, _mismatch_answers, strict=True)
):
    _check_mismatch(f"first_mismatch(hidden case {_k})", _got, _expected, _hints)
### END HIDDEN TESTS
passed("Exercise 4")

# %% [markdown]
# ### Exercise 5 — Which microbatch did the reused buffer corrupt? (2 points)
#
# Stage 0 double-buffers its activations; the eager limit is 64 KiB:
#
# ```python
# for j in range(6):                        # rank 0, buffers buf[0] and buf[1]
#     forward(j, out=buf[j % 2])            # 1.0 ms
#     if j >= 2:
#         reqs[j - 2].wait()                # last isend from buf[j % 2]
#     reqs[j] = isend(buf[j % 2], dst=1)    # 4 MiB
# reqs[4].wait(); reqs[5].wait()
#
# for j in range(6):                        # rank 1
#     recv(x, src=0)                        # 4 MiB
#     forward(j, x)                         # 2.5 ms
# ```
#
# Under section 4's model, set `first_corrupted` to the smallest j whose receive on rank 1
# delivers another microbatch's activation (an int), or -1 if none.

# %% nbgrader={"grade": false, "grade_id": "corrupted_answer", "locked": false, "schema_version": 3, "solution": true, "task": false}
### BEGIN SOLUTION
# Receive j is posted at 1 ms, then 1 + 2.5 j ms: receive 1 reads buf[1] at 3.5 ms, but F3
# started writing buf[1] at 3 ms (the wait for isend 1 comes after it).
first_corrupted = 1
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "corrupted_tests", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Exercise 5: first_corrupted, the first microbatch rank 1 receives wrong (an int, -1 for none)."""
check_int("first_corrupted", first_corrupted, first_corrupted)  # an int (numpy's too), not a bool
check_range("first_corrupted", first_corrupted, -1, 5, what="-1 or a microbatch 0 to 5")
_copied = "-1 would mean every isend copied its buffer; 4 MiB is above the eager limit, so an "
_copied += "isend reads its buffer when the receive is posted"
check_range("first_corrupted", first_corrupted, 0, 5, what=_copied)
### BEGIN HIDDEN TESTS
check_int(
    "first_corrupted",
    first_corrupted,
    1,
    known_wrong={
        3: "the microbatch rank 1 received in place of microbatch 1",
        2: "an overwrite counted from the end of the forward; it starts corrupting at its start",
        0: "microbatch 0, received at 1 ms, before any forward writes buf[0] again",
        4: "microbatch 4, which is received intact; look earlier",
    },
)
### END HIDDEN TESTS
passed("Exercise 5")

# %% [markdown]
# ### Exercise 6 — Explained answer: it hangs only on the big model (2 points, graded by hand)
#
# A pipeline job ran for weeks on a toy model exchanging 32 KiB activations. With hidden size
# 4,096 and 2,048 tokens per microbatch it hangs at once, two adjacent stages each in a blocking
# send to the other. In three or four sentences: why now, why is "raise the eager limit" the
# wrong fix, and what fix does not depend on the message size?

# %% [markdown] nbgrader={"grade": true, "grade_id": "explain_size_hang", "locked": false, "points": 2, "schema_version": 3, "solution": true, "task": false}
# **Model answer** (the student release replaces this cell). Both stages send, then receive.
# 32 KiB fit under the eager limit, so each send returned after a copy; 2,048 × 4,096 × 2 bytes
# = 16 MiB do not, so each send waits for a receive its peer posts after its own send: a
# wait-for cycle of two. A higher limit only moves the size that hangs and costs buffer memory;
# the limit may be zero (MPI_Ssend), and NCCL's send blocks at any size. Fix the order: post the
# receive first (irecv, `batch_isend_irecv`), or order by rank parity so one side of every link
# receives first; then test at eager limit 0.
#
# Rubric: 1 point for the mechanism with sizes (eager below the limit, rendezvous above, the
# cycle); 1 point for why the limit is the wrong lever and a size-independent fix.

# %% [markdown]
# ## Takeaways
#
# - "Both send first" completes only while sends are buffered, below the eager limit.
# - A deadlock is a cycle in the wait-for graph; break it by ordering (a parity that survives odd
#   rings), posting receives first, or batching.
# - Collectives match by call order; an `isend`'s buffer belongs to the transfer until its wait.
# - The trap: passing with small messages proves nothing. Test at eager limit 0.

# %% [markdown]
# ## Going further (optional, ungraded)
#
# - Megatron-LM's `_p2p_ops` uses `isend`/`irecv`, not blocking calls. In PyTorch's
#   ProcessGroupNCCL (`pointToPoint` in `torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp`) an
#   ungrouped send or receive runs on a two-rank communicator keyed by the pair of ranks
#   (`getKeySendRecv(rank, peer)`), with its own stream. So calls to *different* peers do not
#   queue behind each other; calls to the *same* peer run in issue order, each blocking for the
#   GPU until its match, as in this lesson's model. With a `device_id` bound at
#   `init_process_group` (eager initialisation) the calls can share the group's communicator and
#   stream, and then every call runs in issue order. With two pipeline ranks next and prev are one
#   peer, so Megatron-LM puts one direction on a second process group "to allow the overlap of
#   the independent communications"; `batch_p2p_comm` switches to `_batched_p2p_ops`.
# - PyTorch's `isend` notes that "tag is not supported with the NCCL backend": matching is by peer
#   and order only, as in the model.
# - For a hung job, ProcessGroupNCCL documents `TORCH_NCCL_DESYNC_DEBUG` ("helpful in figuring out
#   the culprit rank of collective desync") and a flight recorder of recent collectives
#   (`TORCH_NCCL_TRACE_BUFFER_SIZE`, `TORCH_NCCL_DUMP_ON_TIMEOUT`): the per-rank sequences that
#   Exercise 4 compares.
# - MPICH's default device since 3.4 is ch4, with its own eager thresholds per transport; the CH3
#   limit counts the payload plus a small eager-send header.
