"""course_lib.pipeline.p2p (pipe09): the matching simulator against a brute-force interleaving
search, its times and delivered microbatches against hand-derived and brute-force values, the
wait-for cycle against networkx's enumeration of every cycle, the neighbour exchanges' verdicts,
the kernel's pipe buffer as a real eager limit, and bad input."""

from __future__ import annotations

import itertools
import math
import random
import sys
import time

import networkx as nx
import pytest

import course_lib.pipeline.p2p as p2p
from course_lib.pipeline.p2p import (
    ORDERS,
    Collective,
    Compute,
    Irecv,
    Isend,
    Recv,
    Send,
    Wait,
    exchange_programs,
    find_wait_cycle,
    first_mismatching_collective,
    os_pipe_exchange,
    pipe_capacity,
    simulate_p2p,
)

KiB, MiB = 2**10, 2**20
LIMITS = (0, 64 * KiB, 2**40)


# --- a brute-force reference: every interleaving of one-step moves --------------------------


def _partners(programs):
    """(rank, position) of a send/recv -> (rank, position) of its partner (k-th with k-th)."""
    sends, recvs = {}, {}
    for r, program in enumerate(programs):
        for k, op in enumerate(program):
            if isinstance(op, Send | Isend):
                sends.setdefault((r, op.peer), []).append(k)
            elif isinstance(op, Recv | Irecv):
                recvs.setdefault((r, op.peer), []).append(k)
    partner = {}
    for (src, dst), positions in sends.items():
        for s_pos, r_pos in zip(positions, recvs.get((dst, src), []), strict=False):
            partner[(src, s_pos)] = (dst, r_pos)
            partner[(dst, r_pos)] = (src, s_pos)
    return partner


def _collective_index(programs):
    index = {}
    for r, program in enumerate(programs):
        k = 0
        for pos, op in enumerate(program):
            if isinstance(op, Collective):
                index[(r, pos)] = k
                k += 1
    return index


def brute_force_outcome(programs, eager_limit):
    """Explore every interleaving of single moves (post an operation, complete it) and return the
    set of terminal states (pcs, posted flags). Knows nothing of the simulator's rounds or times."""
    p = len(programs)
    partner = _partners(programs)
    coll = _collective_index(programs)
    handles = {}  # (rank, wait position) -> (rank, isend/irecv position)
    for r, program in enumerate(programs):
        open_ = {}
        for pos, op in enumerate(program):
            if isinstance(op, Isend | Irecv):
                open_[op.handle] = pos
            elif isinstance(op, Wait):
                handles[(r, pos)] = (r, open_.pop(op.handle))

    def posted(state, r, pos):
        pcs, flags = state
        return pos < pcs[r] or (pos == pcs[r] and flags[r])

    def eager(op):
        return isinstance(op, Send | Isend) and op.nbytes <= eager_limit

    def done(state, r, pos):
        """The (posted) send/recv at (r, pos) has completed."""
        op = programs[r][pos]
        if eager(op):
            return True
        other = partner.get((r, pos))
        return other is not None and posted(state, *other)

    def moves(state):
        pcs, flags = state
        out = []
        for r in range(p):
            if pcs[r] >= len(programs[r]):
                continue
            op = programs[r][pcs[r]]
            advance = (
                tuple(pc + (q == r) for q, pc in enumerate(pcs)),
                tuple(False if q == r else f for q, f in enumerate(flags)),
            )
            post = (pcs, tuple(True if q == r else f for q, f in enumerate(flags)))
            if isinstance(op, Compute | Isend | Irecv):
                out.append(advance)
            elif isinstance(op, Send | Recv | Collective) and not flags[r]:
                out.append(post)
            elif isinstance(op, Send | Recv) and done(state, r, pcs[r]):
                out.append(advance)
            elif isinstance(op, Wait) and done(state, *handles[(r, pcs[r])]):
                out.append(advance)
            elif isinstance(op, Collective):
                k = coll[(r, pcs[r])]
                arrived = [
                    [pos for pos in range(len(programs[q])) if coll.get((q, pos)) == k]
                    for q in range(p)
                ]
                if all(a and posted(state, q, a[0]) for q, a in enumerate(arrived)):
                    if len({programs[q][a[0]].name for q, a in enumerate(arrived)}) == 1:
                        out.append(advance)
        return out

    start = ((0,) * p, (False,) * p)
    seen, terminal, todo = {start}, set(), [start]
    while todo:
        state = todo.pop()
        following = moves(state)
        if not following:
            terminal.add(state)
        for nxt in following:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return terminal


def random_programs(rng: random.Random):
    """2-3 ranks, up to 4 communication steps each; sizes fixed per (src, dst) pair."""
    p = rng.choice([2, 3])
    size = {(a, b): rng.choice([4 * KiB, 4 * MiB]) for a in range(p) for b in range(p)}
    programs = []
    for r in range(p):
        program, n = [], 0
        for _ in range(rng.randint(1, 4)):
            kind = rng.choice(["send", "recv", "isend", "irecv", "coll", "compute"])
            peer = rng.choice([q for q in range(p) if q != r] + ([r] if rng.random() < 0.1 else []))
            if kind == "send":
                program.append(Send(peer, size[(r, peer)]))
            elif kind == "recv":
                program.append(Recv(peer, size[(peer, r)]))
            elif kind in ("isend", "irecv"):
                h = f"h{n}"
                n += 1
                op = (
                    Isend(peer, size[(r, peer)], h)
                    if kind == "isend"
                    else Irecv(peer, size[(peer, r)], h)
                )
                program.append(op)
                if rng.random() < 0.5:
                    program.append(Compute(rng.choice([0.0, 1e-3])))
                program.append(Wait(h))
            elif kind == "coll":
                program.append(Collective(rng.choice(["all_reduce", "barrier"])))
            else:
                program.append(Compute(rng.choice([0.5e-3, 1e-3])))
        programs.append(program)
    return programs


@pytest.mark.parametrize("seed", range(6))
def test_simulator_matches_every_interleaving(seed):
    """Brute force: every interleaving of post/complete moves ends in one and the same state
    (matching is deterministic), and that state is the simulator's: the ranks it reports blocked
    are stuck at those positions, the others finished; completed iff no rank is stuck and no
    posted operation lacks a partner."""
    rng = random.Random(seed)
    for _ in range(60):
        programs = random_programs(rng)
        limit = rng.choice(LIMITS)
        terminal = brute_force_outcome(programs, limit)
        assert len(terminal) == 1, programs
        (pcs, _flags) = next(iter(terminal))
        run = simulate_p2p(programs, limit)
        stuck = {r: pc for r, pc in enumerate(pcs) if pc < len(programs[r])}
        assert {b.rank: b.position for b in run.blocked} == stuck
        partner = _partners(programs)

        def reached(r, k, pcs=pcs, flags=_flags):
            return k < pcs[r] or (k == pcs[r] and flags[r])

        orphans = sorted(
            (r, k)
            for r, program in enumerate(programs)
            for k, op in enumerate(program)
            if isinstance(op, Send | Isend | Recv | Irecv)
            and reached(r, k)
            and stuck.get(r) != k
            and not ((r, k) in partner and reached(*partner[(r, k)]))
        )
        assert sorted(run.unmatched) == orphans
        assert run.completed == (not stuck and not orphans)


def _moved(op, relabel):
    if isinstance(op, Send | Recv | Isend | Irecv):
        return type(op)(**{**op.__dict__, "peer": relabel[op.peer]})
    return op


@pytest.mark.parametrize("seed", range(3))
def test_outcome_does_not_depend_on_rank_numbering(seed):
    """Relabel the ranks (a permutation, peers remapped): the same operations block, times equal."""
    rng = random.Random(100 + seed)
    for _ in range(40):
        programs = random_programs(rng)
        p = len(programs)
        perm = list(range(p))
        rng.shuffle(perm)
        relabel = {old: new for new, old in enumerate(perm)}

        permuted = [[_moved(op, relabel) for op in programs[old]] for old in perm]
        for limit in (0, 2**40):
            a, b = simulate_p2p(programs, limit), simulate_p2p(permuted, limit)
            assert {(relabel[x.rank], x.position) for x in a.blocked} == {
                (x.rank, x.position) for x in b.blocked
            }
            ends_a = {
                (relabel[r], k): e for r, k, e in a.events[["rank", "position", "end"]].values
            }
            ends_b = {(r, k): e for r, k, e in b.events[["rank", "position", "end"]].values}
            assert ends_a.keys() == ends_b.keys()
            for key, end in ends_a.items():
                assert (math.isnan(end) and math.isnan(ends_b[key])) or end == ends_b[key]


@pytest.mark.parametrize("seed", range(3))
def test_a_program_safe_without_buffering_completes_at_any_eager_limit(seed):
    """MPI's 'safe' (completes with synchronous sends) implies completion at every eager limit."""
    rng = random.Random(200 + seed)
    for _ in range(80):
        programs = random_programs(rng)
        if simulate_p2p(programs, 0).completed:
            assert all(simulate_p2p(programs, limit).completed for limit in LIMITS)


# --- times and buffers ----------------------------------------------------------------------


def test_two_stage_exchange_hangs_only_above_the_eager_limit():
    def exchange(n):
        return [
            [Compute(1e-3), Send(1, n), Recv(1, n)],
            [Compute(2e-3), Send(0, n), Recv(0, n)],
        ]

    small = simulate_p2p(exchange(16 * KiB), 64 * KiB)
    assert small.completed and small.cycle == ()
    # Eager: rank 0's send completes at its post (1 ms); its receive waits for rank 1's send (2 ms).
    ends = small.events.set_index(["rank", "position"])["end"]
    assert ends[(0, 1)] == pytest.approx(1e-3) and ends[(0, 2)] == pytest.approx(2e-3)
    assert ends[(1, 2)] == pytest.approx(2e-3)
    assert [m.protocol for m in small.messages] == ["eager", "eager"]
    big = simulate_p2p(exchange(4 * MiB), 64 * KiB)
    assert big.deadlocked and big.cycle == (0, 1, 0)
    assert [(b.rank, b.position, b.waits_for) for b in big.blocked] == [(0, 1, (1,)), (1, 1, (0,))]
    assert "cycle 0 → 1 → 0" in big.describe()
    exact = simulate_p2p(exchange(64 * KiB), 64 * KiB)  # the limit is inclusive
    assert exact.completed
    assert simulate_p2p(exchange(16 * KiB), 0).deadlocked  # MPI_Ssend: small messages too


def test_rendezvous_send_completes_when_its_receive_is_posted():
    programs = [[Send(1, MiB), Compute(1e-3)], [Compute(3e-3), Recv(0, MiB)]]
    run = simulate_p2p(programs, 0)
    ends = run.events.set_index(["rank", "position"])["end"]
    assert ends[(0, 0)] == pytest.approx(3e-3) and ends[(0, 1)] == pytest.approx(4e-3)
    (message,) = run.messages
    assert (message.posted, message.read_at, message.received) == pytest.approx((0, 3e-3, 3e-3))
    eager = simulate_p2p(programs, MiB)
    assert eager.events.set_index(["rank", "position"])["end"][(0, 1)] == pytest.approx(1e-3)


def _reused_double_buffer(m=6, t0=1e-3, t1=2.5e-3, nbytes=4 * MiB):
    """Rank 0 writes microbatch j into buf[j % 2], waits for the isend of j - 2 only after that
    write, then isends j; rank 1 receives and computes t1 per microbatch."""
    r0 = []
    for j in range(m):
        r0.append(Compute(t0, buffer=f"buf{j % 2}", microbatch=j, label=f"F{j}"))
        if j >= 2:
            r0.append(Wait(f"r{j - 2}"))
        r0.append(Isend(1, nbytes, f"r{j}", buffer=f"buf{j % 2}"))
    r0 += [Wait(f"r{m - 2}"), Wait(f"r{m - 1}")]
    r1 = []
    for j in range(m):
        r1 += [Recv(0, nbytes), Compute(t1, label=f"F{j}")]
    return [r0, r1]


def test_reused_send_buffer_delivers_the_later_microbatch():
    """Hand-derived: rank 1 posts receive j at 1 + 2.5 j ms - 1.5 (j >= 1); buf1 is rewritten by
    F3 from 3 ms, before receive 1 reads it at 3.5 ms: microbatch 1 gets 3, 2 gets 4, 3 gets 5."""
    run = simulate_p2p(_reused_double_buffer(), 64 * KiB)
    assert run.completed
    assert [(m.sent, m.delivered) for m in run.messages] == [
        (0, 0), (1, 3), (2, 4), (3, 5), (4, 4), (5, 5),
    ]  # fmt: skip
    assert [m.read_at for m in run.messages] == pytest.approx(
        [1e-3, 3.5e-3, 6e-3, 8.5e-3, 11e-3, 13.5e-3]
    )
    assert [m.sent for m in run.corrupted] == [1, 2, 3]
    # Below the eager limit the data is copied at the isend: nothing is corrupted in this model.
    assert not simulate_p2p(_reused_double_buffer(), 8 * MiB).corrupted


def test_delivered_microbatch_matches_a_brute_force_replay():
    """Brute force: for every message, the delivered microbatch is that of the latest write to its
    buffer (ordered by start, then position) among writes before the send in program order or, for
    a rendezvous read after the post, started by the read."""
    rng = random.Random(7)
    for _ in range(40):
        m = rng.randint(2, 6)
        t0, t1 = rng.choice([0.5e-3, 1e-3, 2e-3]), rng.choice([0.7e-3, 1.5e-3, 3e-3])
        programs = _reused_double_buffer(m, t0, t1)
        for limit in (0, 2**40):
            run = simulate_p2p(programs, limit)
            starts = run.events.set_index(["rank", "position"])["start"]
            for msg in run.messages:
                buffer = programs[0][msg.src_position].buffer
                writes = [
                    (starts[(0, k)], k, op.microbatch)
                    for k, op in enumerate(programs[0])
                    if isinstance(op, Compute) and op.buffer == buffer
                ]
                late = msg.read_at > msg.posted
                seen = [
                    w for w in writes if w[1] < msg.src_position or (late and w[0] <= msg.read_at)
                ]
                assert msg.delivered == max(seen)[2]
                assert msg.sent == max(w for w in writes if w[1] < msg.src_position)[2]


def test_collectives_in_different_orders_stop_at_the_first_mismatch():
    programs = [
        [Collective("all_reduce"), Collective("all_gather")],
        [Collective("all_reduce"), Collective("all_gather")],
        [Collective("all_reduce"), Collective("broadcast"), Collective("all_gather")],
    ]
    run = simulate_p2p(programs)
    assert run.deadlocked and run.cycle == ()
    assert run.mismatch.index == 1
    assert run.mismatch.calls == ("all_gather", "all_gather", "broadcast")
    assert [b.position for b in run.blocked] == [1, 1, 1]
    assert first_mismatching_collective(programs) == run.mismatch
    # A rank that skips the last one: the others wait for it, no cycle, no mismatch in the run.
    skipped = [[Collective("all_reduce"), Collective("barrier")], [Collective("all_reduce")]]
    run = simulate_p2p(skipped)
    assert run.mismatch is None and run.cycle == () and run.blocked[0].waits_for == (1,)
    assert "finished" in run.describe()
    assert first_mismatching_collective(skipped).calls == ("barrier", "")
    assert (
        first_mismatching_collective([[Collective("a"), Send(1, 8)], [Recv(0, 8), Collective("a")]])
        is None
    )


def test_first_mismatching_collective_against_a_direct_comparison():
    rng = random.Random(11)
    names = ["all_reduce", "all_gather", "broadcast"]
    for _ in range(200):
        p = rng.randint(1, 4)
        base = [rng.choice(names) for _ in range(rng.randint(0, 5))]
        seqs = []
        for _ in range(p):
            seq = list(base)
            if seq and rng.random() < 0.5:
                k = rng.randrange(len(seq))
                seq[k] = rng.choice(names) if rng.random() < 0.5 else seq[k]
            if rng.random() < 0.2:
                seq = seq[: rng.randint(0, len(seq))]
            seqs.append(seq)
        programs = [[Compute(0.0)] + [Collective(n) for n in seq] for seq in seqs]
        expected = None
        for k in range(max(map(len, seqs))):
            calls = tuple(s[k] if k < len(s) else "" for s in seqs)
            if len(set(calls)) > 1:
                expected = (k, calls)
                break
        got = first_mismatching_collective(programs)
        assert (got.index, got.calls) == expected if expected else got is None


# --- wait-for cycles ------------------------------------------------------------------------


def _random_graph(rng: random.Random):
    n = rng.randint(1, 7)
    return {
        u: sorted(rng.sample(range(n), rng.randint(0, min(2, n))))
        for u in range(n)
        if rng.random() < 0.85
    }


def test_find_wait_cycle_against_every_cycle():
    """Brute force over networkx.simple_cycles: () iff acyclic; otherwise a closed simple cycle
    of the graph starting at the smallest rank on any cycle, no longer than any cycle through it,
    and the lexicographically first of those."""
    rng = random.Random(5)
    for _ in range(500):
        waits = _random_graph(rng)
        graph = nx.DiGraph()
        graph.add_nodes_from(waits)
        graph.add_edges_from((u, v) for u, vs in waits.items() for v in vs)
        cycles = [list(c) for c in nx.simple_cycles(graph)]
        got = find_wait_cycle(waits)
        if not cycles:
            assert got == ()
            continue
        start = min(min(c) for c in cycles)
        through = []
        for c in cycles:
            if start in c:
                i = c.index(start)
                through.append((*c[i:], *c[:i], start))
        best = min(through, key=lambda c: (len(c), c))
        assert got == best


def test_find_wait_cycle_edge_cases():
    assert find_wait_cycle({}) == ()
    assert find_wait_cycle({3: [3]}) == (3, 3)
    assert find_wait_cycle({0: [1], 1: [2], 2: [1]}) == (1, 2, 1)  # rank 0 waits on the cycle
    assert find_wait_cycle({0: [1], 2: [1], 0.5: []}) == ()
    assert find_wait_cycle({5: (4,), 4: (5,), 1: (2,), 2: (1,)}) == (1, 2, 1)


# --- neighbour exchanges --------------------------------------------------------------------


def _completes(order: str, p: int, ring: bool, synchronous: bool) -> bool:
    """The expected verdict of each order (derived by hand; see ORDERS)."""
    if order == "nonblocking" or (p == 1 and not ring):  # (a lone chain rank has no neighbour)
        return True
    if p == 1:  # a rank exchanging with itself: blocking sends to self need buffering
        return not synchronous and order in (
            "send_first",
            "isend_wait",
            "even_odd",
            "even_sends_first",
        )
    if order == "recv_first":
        return False
    if order in ("send_first", "isend_wait"):
        return not synchronous
    if order == "even_sends_first" and ring and p % 2 == 1:
        return not synchronous
    return True


@pytest.mark.parametrize("order", sorted(ORDERS))
def test_exchange_orders_complete_or_deadlock_as_derived(order):
    for p, ring, limit in itertools.product(range(1, 9), (True, False), (0, 64 * KiB)):
        programs = exchange_programs(p, 4 * MiB if limit == 0 else 4 * KiB, order, ring=ring)
        run = simulate_p2p(programs, limit)
        assert run.completed == _completes(order, p, ring, synchronous=limit == 0), (p, ring, limit)
        if run.deadlocked and order != "recv_first" and p > 1:
            assert run.cycle, run.describe()


def test_exchange_programs_send_to_and_receive_from_both_neighbours():
    for order, p, ring in itertools.product(ORDERS, range(1, 7), (True, False)):
        for r, program in enumerate(
            exchange_programs(p, 1024, order, ring=ring, compute_time=1e-3)
        ):
            assert isinstance(program[0], Compute)
            neighbours = sorted(
                {(r + 1) % p, (r - 1) % p} if ring else {q for q in (r - 1, r + 1) if 0 <= q < p}
            )
            expected = sorted(q for q in neighbours for _ in range(1 + (ring and p == 2)))
            expected = expected if not (ring and p == 1) else [0, 0]
            sent = sorted(op.peer for op in program if isinstance(op, Send | Isend))
            got = sorted(op.peer for op in program if isinstance(op, Recv | Irecv))
            assert sent == got == expected


def test_even_odd_is_megatron_order():
    """Megatron-LM's _p2p_ops: even ranks send next, receive prev, send prev, receive next; odd
    ranks receive prev, send next, receive next, send prev."""
    programs = exchange_programs(4, 8, "even_odd")
    assert [str(op) for op in programs[2]] == [
        "send→3 8 B",
        "recv←1 8 B",
        "send→1 8 B",
        "recv←3 8 B",
    ]
    assert [str(op) for op in programs[1]] == [
        "recv←0 8 B",
        "send→2 8 B",
        "recv←2 8 B",
        "send→0 8 B",
    ]


# --- the kernel's pipe buffer ---------------------------------------------------------------


@pytest.mark.skipif(sys.platform != "linux", reason="F_GETPIPE_SZ is Linux's")
def test_os_pipe_exchange_completes_below_the_pipe_capacity_and_hangs_above():
    capacity = pipe_capacity()
    assert isinstance(capacity, int) and capacity >= 4096
    small, large = os_pipe_exchange([capacity // 4, 4 * capacity], timeout=1.0)
    assert small.started and small.completed and small.capacity == capacity
    assert small.seconds < 1.0
    assert large.started and not large.completed and large.seconds == 1.0


@pytest.mark.skipif(sys.platform != "linux", reason="F_GETPIPE_SZ is Linux's")
def test_os_pipe_exchange_does_not_count_start_up(monkeypatch):
    """Children that take 1.2 s to start, with a 0.5 s timeout: the small pair still completes
    (the timeout counts from both ready signals, not from the launch) and the large one is still
    reported blocked after exactly the timeout."""
    slow = "import time\ntime.sleep(1.2)\n" + p2p._BOTH_WRITE_FIRST
    monkeypatch.setattr(p2p, "_BOTH_WRITE_FIRST", slow)
    capacity = pipe_capacity()
    start = time.perf_counter()
    small, large = os_pipe_exchange([capacity // 4, 4 * capacity], timeout=0.5)
    assert time.perf_counter() - start >= 1.2 + 0.5
    assert small.started and small.completed and small.seconds < 0.5
    assert large.started and not large.completed and large.seconds == 0.5


@pytest.mark.skipif(sys.platform != "linux", reason="F_GETPIPE_SZ is Linux's")
def test_os_pipe_exchange_reports_a_pair_that_never_started(monkeypatch):
    """A pair that does not signal within start_timeout is killed and reported as not started
    (not as blocked); one whose child exits before signalling is reported at once."""
    never = "import time\ntime.sleep(30)\n" + p2p._BOTH_WRITE_FIRST
    monkeypatch.setattr(p2p, "_BOTH_WRITE_FIRST", never)
    (late,) = os_pipe_exchange([8], timeout=0.2, start_timeout=0.8)
    assert not late.started and not late.completed and late.seconds == 0.8
    monkeypatch.setattr(p2p, "_BOTH_WRITE_FIRST", "import sys\nsys.exit(1)\n")
    start = time.perf_counter()
    (died,) = os_pipe_exchange([8], timeout=0.2, start_timeout=20.0)
    assert not died.started and not died.completed and died.seconds < 10.0
    assert time.perf_counter() - start < 10.0


@pytest.mark.skipif(sys.platform != "linux", reason="F_GETPIPE_SZ is Linux's")
def test_os_pipe_exchange_describes_each_outcome(monkeypatch):
    """The lesson prints describe(): a completed pair's time in ms, a blocked pair's timeout, and a
    pair that never started with no time at all (a child that dies at once waited ~0 s, which
    must not read as "did not start within 0 s")."""
    capacity = pipe_capacity()
    small, large = os_pipe_exchange([capacity // 4, 4 * capacity], timeout=0.3)
    assert small.describe().startswith(f"{capacity // 4:>9,} bytes each way: completed ")
    assert small.describe().endswith(" ms after both processes were ready")
    ms = float(small.describe().split("completed ")[1].split(" ms")[0])
    assert ms == pytest.approx(small.seconds * 1e3, abs=0.05)
    assert large.describe() == (
        f"{4 * capacity:>9,} bytes each way: still blocked 0.3 s after both were ready: killed"
    )
    monkeypatch.setattr(p2p, "_BOTH_WRITE_FIRST", "import sys\nsys.exit(1)\n")
    (died,) = os_pipe_exchange([8], timeout=0.2, start_timeout=20.0)
    assert died.seconds < 10.0  # the wait until the child failed, not the start-up timeout
    assert died.describe() == "        8 bytes each way: the processes did not start (not a hang)"


# --- bad input ------------------------------------------------------------------------------


def test_bad_input_names_the_rank_and_the_operation():
    with pytest.raises(ValueError, match=r"rank 1, op 1 \(recv←5 8 B\): rank 5 does not exist"):
        simulate_p2p([[Send(1, 8)], [Compute(0.0), Recv(5, 8)]])
    with pytest.raises(ValueError, match=r"rank 0, op 1 \(wait \[h\]\): no isend or irecv.*'h'"):
        simulate_p2p([[Compute(0.0), Wait("h")], []])
    with pytest.raises(ValueError, match=r"rank 0, op 2 .*handle 'h' is still pending from op 0"):
        simulate_p2p([[Isend(1, 8, "h"), Compute(0.0), Isend(1, 8, "h")], [Recv(1, 8)]])
    with pytest.raises(ValueError, match=r"rank 0, op 0 \(wait \[h\]\)"):
        simulate_p2p([[Wait("h"), Isend(1, 8, "h")], [Recv(0, 8)]])
    with pytest.raises(ValueError, match=r"already waited"):
        simulate_p2p([[Isend(1, 8, "h"), Wait("h"), Wait("h")], [Recv(0, 8)]])
    with pytest.raises(ValueError, match=r"rank 0, op 0 \(send→1 8 B\) is matched by rank 1, op 0"):
        simulate_p2p([[Send(1, 8)], [Recv(0, 16)]])
    with pytest.raises(TypeError, match=r"rank 0, op 1: 'send' is not an operation"):
        simulate_p2p([[Compute(0.0), "send"], []])
    with pytest.raises(TypeError, match=r"programs\[1\]"):
        simulate_p2p([[], 3])
    with pytest.raises(TypeError, match="programs must be a sequence"):
        simulate_p2p("send")
    with pytest.raises(ValueError, match="at least one rank"):
        simulate_p2p([])
    with pytest.raises(ValueError, match="eager_limit must be an int >= 0"):
        simulate_p2p([[]], eager_limit=-1)
    with pytest.raises(TypeError, match="eager_limit"):
        simulate_p2p([[]], eager_limit=1.5)


def test_bad_operations_are_refused_when_built():
    with pytest.raises(ValueError, match="Send peer must be an int >= 0"):
        Send(-1, 8)
    with pytest.raises(ValueError, match="Recv nbytes must be an int >= 1"):
        Recv(0, 0)
    with pytest.raises(TypeError, match="Isend nbytes"):
        Isend(0, 8.0, "h")
    with pytest.raises(ValueError, match="Irecv handle must be a non-empty str"):
        Irecv(0, 8, "")
    with pytest.raises(TypeError, match="Wait handle must be a str"):
        Wait(3)
    with pytest.raises(ValueError, match="Collective name"):
        Collective("")
    with pytest.raises(ValueError, match="Compute seconds"):
        Compute(-1.0)
    with pytest.raises(ValueError, match="Compute microbatch must be an int >= 0"):
        Compute(1.0, buffer="buf", microbatch=-1)
    with pytest.raises(TypeError, match="Send peer"):
        Send(True, 8)


def test_bad_exchange_and_pipe_arguments():
    with pytest.raises(ValueError, match="order must be one of"):
        exchange_programs(4, 8, "sendrecv")
    with pytest.raises(ValueError, match="num_ranks must be an int >= 1"):
        exchange_programs(0, 8)
    with pytest.raises(TypeError, match="ring must be a bool"):
        exchange_programs(2, 8, ring="yes")
    with pytest.raises(ValueError, match="timeout must be > 0"):
        os_pipe_exchange([8], timeout=0)
    with pytest.raises(ValueError, match="start_timeout must be > 0"):
        os_pipe_exchange([8], start_timeout=0)
    with pytest.raises(ValueError, match=r"sizes\[1\] must be an int >= 1"):
        os_pipe_exchange([8, 0])
