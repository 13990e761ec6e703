"""Plausible wrong answers to pipe09_p2p_deadlock's exercises; each must lose points when graded.

``RIGHT_ANSWERS`` are answers a learner could give that are right by another route (a depth-first
search, strongly connected components, a serialised ring, zip_longest); each must keep full
marks on the grade cells it names.
"""

from __future__ import annotations

from tests.mutants import Mutant

RIGHT_VERDICTS = {
    "A": "completes",
    "B": "deadlocks",
    "C": "deadlocks",
    "D": "deadlocks",
    "E": "completes",
    "F": "deadlocks",
}
RING = ("ring_even_tests", "ring_odd_tests")


def _verdicts(**changes: str) -> dict[str, str]:
    """The Exercise 1 answer cell: the right verdicts with ``changes``."""
    verdicts = {**RIGHT_VERDICTS, **changes}
    return {"verdicts_answer": f"verdicts = {verdicts!r}\n"}


def _cycle(body: str, prelude: str = "") -> dict[str, str]:
    """The Exercise 2 solution cell with ``body`` as find_cycle's body."""
    return {"cycle_answer": f"{prelude}def find_cycle(waits_for):\n{body}\n"}


def _bfs_cycle(close: str = "[*reversed(path), start]", skip: str = "") -> str:
    """The reference breadth-first search from each rank in order; ``close`` builds the answer
    from ``path`` (the cycle's ranks, last first, without the closing rank); ``skip`` is a
    condition on (rank, peer) under which an edge is ignored."""
    condition = (
        f"\n                    if {skip}:\n                        continue" if skip else ""
    )
    return (
        "    for start in sorted(waits_for):\n"
        "        parent, frontier = {}, [start]\n"
        "        while frontier:\n"
        "            nxt = []\n"
        "            for rank in frontier:\n"
        "                for peer in waits_for.get(rank, []):"
        f"{condition}\n"
        "                    if peer == start:\n"
        "                        path = [rank]\n"
        "                        while path[-1] != start:\n"
        "                            path.append(parent[path[-1]])\n"
        f"                        return {close}\n"
        "                    if peer not in parent:\n"
        "                        parent[peer] = rank\n"
        "                        nxt.append(peer)\n"
        "            frontier = nxt\n"
        "    return []"
    )


def _dfs_cycle(found: str, back_edge: str = "peer in on_stack") -> str:
    """A depth-first search from each rank in order that returns ``found`` (``stack`` and the
    ``peer`` that closes it in scope) at the first edge satisfying ``back_edge``."""
    return (
        "    seen = set()\n"
        "\n"
        "    def dfs(node, stack, on_stack):\n"
        "        stack.append(node)\n"
        "        on_stack.add(node)\n"
        "        seen.add(node)\n"
        "        for peer in waits_for.get(node, []):\n"
        f"            if {back_edge}:\n"
        f"                return {found}\n"
        "            if peer not in seen:\n"
        "                result = dfs(peer, stack, on_stack)\n"
        "                if result:\n"
        "                    return result\n"
        "        stack.pop()\n"
        "        on_stack.discard(node)\n"
        "        return None\n"
        "\n"
        "    for start in sorted(waits_for):\n"
        "        if start not in seen:\n"
        "            result = dfs(start, [], set())\n"
        "            if result:\n"
        "                return result\n"
        "    return []"
    )


def _ring(body: str, prelude: str = "") -> dict[str, str]:
    """The Exercise 3 solution cell with ``body`` after nxt, prv (and n = nbytes)."""
    return {
        "ring_answer": (
            f"{prelude}def ring_exchange(num_ranks, rank, nbytes):\n"
            "    p, n = num_ranks, nbytes\n"
            "    nxt, prv = (rank + 1) % p, (rank - 1) % p\n"
            f"{body}\n"
        )
    }


MEGATRON = (
    "    if rank % 2 == 0:\n"
    "        return [Send(nxt, n), Recv(prv, n), Send(prv, n), Recv(nxt, n)]\n"
    "    return [Recv(prv, n), Send(nxt, n), Recv(nxt, n), Send(prv, n)]"
)
BOTH_FIRST = (
    "        return [Send(nxt, n), Send(prv, n), Recv(prv, n), Recv(nxt, n)]\n"
    "    return [Recv(prv, n), Recv(nxt, n), Send(nxt, n), Send(prv, n)]"
)


def _mismatch(body: str, prelude: str = "") -> dict[str, str]:
    """The Exercise 4 solution cell with ``body`` after each rank's list of collective names."""
    return {
        "mismatch_answer": (
            f"{prelude}def first_mismatch(programs):\n"
            "    calls = [[op.name for op in prog if isinstance(op, Collective)] for prog in programs]\n"
            f"{body}\n"
        )
    }


def _corrupted(value: str) -> dict[str, str]:
    return {"corrupted_answer": f"first_corrupted = {value}\n"}


MUTANTS = [
    # Exercise 1: six exchanges, completes or deadlocks.
    Mutant(
        name="asynchronous_never_deadlocks",
        why="isend waited on at once taken for non-blocking progress (D completes)",
        cells=_verdicts(D="completes"),
        grades=("verdicts_tests",),
    ),
    Mutant(
        name="small_messages_never_deadlock",
        why="every 8 KiB exchange completes, the synchronous send and recv-first included",
        cells=_verdicts(C="completes", F="completes"),
        grades=("verdicts_tests",),
    ),
    Mutant(
        name="synchronous_send_buffered",
        why="MPI_Ssend of 8 KiB treated as eager",
        cells=_verdicts(C="completes"),
        grades=("verdicts_tests",),
    ),
    Mutant(
        name="receive_first_is_safe",
        why="both ranks receiving first taken for a safe order",
        cells=_verdicts(F="completes"),
        grades=("verdicts_tests",),
    ),
    Mutant(
        name="everything_rendezvous",
        why="the eager limit ignored: the 8 KiB send-first exchange deadlocks too",
        cells=_verdicts(A="deadlocks"),
        grades=("verdicts_tests",),
    ),
    Mutant(
        name="late_wait_hangs",
        why="isend, recv, wait taken to deadlock like a blocking send",
        cells=_verdicts(E="deadlocks"),
        grades=("verdicts_tests",),
    ),
    Mutant(
        name="size_decides",
        why="only the size matters: small completes, large deadlocks",
        cells=_verdicts(C="completes", E="deadlocks", F="completes"),
        grades=("verdicts_tests",),
    ),
    Mutant(
        name="misspelled_verdict",
        why="'deadlock' instead of the stated 'deadlocks'",
        cells={
            "verdicts_answer": "verdicts = {k: 'deadlock' for k in 'BCDF'} | "
            "{'A': 'completes', 'E': 'completes'}\n"
        },  # fmt: skip
        grades=("verdicts_tests",),
    ),
    Mutant(
        name="verdict_list",
        why="a list of verdicts in order, not a dict",
        cells={"verdicts_answer": f"verdicts = {list(RIGHT_VERDICTS.values())!r}\n"},
        grades=("verdicts_tests",),
    ),
    # Exercise 2: the wait-for cycle.
    Mutant(
        name="cycle_not_closed",
        why="the cycle's ranks without the closing rank: [1, 2], not [1, 2, 1]",
        cells=_cycle(_bfs_cycle(close="list(reversed(path))")),
        grades=("cycle_tests",),
    ),
    Mutant(
        name="search_from_the_first_rank_only",
        why="one search from the smallest key: a cycle it cannot reach is missed",
        cells=_cycle(
            _bfs_cycle().replace(
                "for start in sorted(waits_for):", "for start in sorted(waits_for)[:1]:"
            )
        ),
        grades=("cycle_tests",),
    ),
    Mutant(
        name="tail_included",
        why="the depth-first stack returned whole: the ranks leading into the cycle included",
        cells=_cycle(_dfs_cycle("stack + [peer]")),
        grades=("cycle_tests",),
    ),
    Mutant(
        name="starts_where_found",
        why="the cycle from the rank where the search closed it, not from its smallest rank",
        cells=_cycle(_dfs_cycle("stack[stack.index(peer):] + [peer]")),
        grades=("cycle_tests",),
    ),
    Mutant(
        name="visited_is_a_cycle",
        why="any rank seen before counts as a cycle (a diamond of waits is not one)",
        cells=_cycle(
            _dfs_cycle(
                "stack[stack.index(peer):] + [peer] if peer in stack else stack + [peer]",
                back_edge="peer in seen",
            )
        ),
        grades=("cycle_tests",),
    ),
    Mutant(
        name="undirected_edges",
        why="waits followed in both directions: a triangle of arrows that never closes is reported",
        cells=_cycle(
            "    both = {}\n"
            "    for u, vs in waits_for.items():\n"
            "        for v in vs:\n"
            "            both.setdefault(u, set()).add(v)\n"
            "            both.setdefault(v, set()).add(u)\n"
            "    for start in sorted(both):\n"
            "        todo = [(start, None, [start])]\n"
            "        while todo:\n"
            "            node, came_from, path = todo.pop()\n"
            "            for peer in sorted(both[node]):\n"
            "                if peer == came_from:\n"
            "                    continue\n"
            "                if peer == start and len(path) > 2:\n"
            "                    return path + [start]\n"
            "                if peer not in path:\n"
            "                    todo.append((peer, node, path + [peer]))\n"
            "    return []"
        ),
        grades=("cycle_tests",),
    ),
    Mutant(
        name="mutual_waits_only",
        why="only two ranks waiting for each other (or one for itself) count as a cycle",
        cells=_cycle(
            "    for a in sorted(waits_for):\n"
            "        for b in sorted(waits_for[a]):\n"
            "            if a in waits_for.get(b, []):\n"
            "                return [a, b, a] if a != b else [a, a]\n"
            "    return []"
        ),
        grades=("cycle_tests",),
    ),
    Mutant(
        name="self_wait_ignored",
        why="a rank waiting for itself is skipped",
        cells=_cycle(_bfs_cycle(skip="peer == rank")),
        grades=("cycle_tests",),
    ),
    Mutant(
        name="edge_list",
        why="networkx.find_cycle's form: a list of (rank, rank) edges",
        cells=_cycle(
            _bfs_cycle(
                close="[(a, b) for a, b in zip([*reversed(path), start], [*reversed(path), start][1:])]"
            )
        ),
        grades=("cycle_tests",),
    ),
    Mutant(
        name="networkx_find_cycle",
        why="networkx.find_cycle, rotated to the smallest rank (right on one cycle, delegated)",
        cells=_cycle(
            "    g = nx.DiGraph([(u, v) for u, vs in waits_for.items() for v in vs])\n"
            "    try:\n"
            "        ranks = [u for u, _ in nx.find_cycle(g)]\n"
            "    except nx.NetworkXNoCycle:\n"
            "        return []\n"
            "    i = ranks.index(min(ranks))\n"
            "    ranks = ranks[i:] + ranks[:i]\n"
            "    return ranks + [ranks[0]]",
            prelude="import networkx as nx\n\n\n",
        ),
        grades=("cycle_tests",),
    ),
    Mutant(
        name="networkx_simple_cycles",
        why="the cycle through the smallest rank among networkx.simple_cycles (delegated)",
        cells=_cycle(
            "    g = nx.DiGraph([(u, v) for u, vs in waits_for.items() for v in vs])\n"
            "    cycles = list(nx.simple_cycles(g))\n"
            "    if not cycles:\n"
            "        return []\n"
            "    start = min(min(c) for c in cycles)\n"
            "    c = next(c for c in cycles if start in c)\n"
            "    i = c.index(start)\n"
            "    return c[i:] + c[:i] + [start]",
            prelude="import networkx as nx\n\n\n",
        ),
        grades=("cycle_tests",),
    ),
    Mutant(
        name="course_find_wait_cycle",
        why="course_lib's find_wait_cycle (delegated)",
        cells=_cycle(
            "    return list(find_wait_cycle(waits_for))",
            prelude="from course_lib.pipeline.p2p import find_wait_cycle\n\n\n",
        ),
        grades=("cycle_tests",),
    ),
    # Exercise 3: a ring exchange of blocking operations that completes with synchronous sends.
    Mutant(
        name="all_send_first",
        why="every rank sends to both neighbours, then receives: needs buffering",
        cells=_ring("    return [Send(nxt, n), Send(prv, n), Recv(prv, n), Recv(nxt, n)]"),
        grades=RING,
    ),
    Mutant(
        name="all_receive_first",
        why="every rank receives first: every receive waits for a send that never starts",
        cells=_ring("    return [Recv(prv, n), Recv(nxt, n), Send(nxt, n), Send(prv, n)]"),
        grades=RING,
    ),
    Mutant(
        name="even_ranks_send_both_first",
        why="parity without care for the wrap: ranks p - 1 and 0 are both even on an odd ring",
        cells=_ring("    if rank % 2 == 0:\n" + BOTH_FIRST),
        grades=("ring_odd_tests",),
    ),
    Mutant(
        name="odd_ranks_send_both_first",
        why="the opposite parity: on an odd ring ranks p - 1 and 0 both receive first",
        cells=_ring("    if rank % 2 == 1:\n" + BOTH_FIRST),
        grades=("ring_odd_tests",),
    ),
    Mutant(
        name="wrap_link_patched",
        why="rank p - 1 of an odd ring made a receiver: ranks p - 2 and p - 1 then clash",
        cells=_ring("    if rank % 2 == 0 and not (p % 2 and rank == p - 1):\n" + BOTH_FIRST),
        grades=("ring_odd_tests",),
    ),
    Mutant(
        name="lower_rank_sends_first_per_link",
        why="for each link in turn the lower rank sends first: the links still wait in a cycle",
        cells=_ring(
            "    ops = []\n"
            "    for q in (nxt, prv):\n"
            "        ops += [Send(q, n), Recv(q, n)] if rank < q else [Recv(q, n), Send(q, n)]\n"
            "    return ops"
        ),
        grades=RING,
    ),
    Mutant(
        name="send_first_when_small",
        why="send first below 64 KiB (it is eager there), a safe order above: unsafe at eager limit 0",
        cells=_ring(
            "    if n <= 64 * 1024:\n"
            "        return [Send(nxt, n), Send(prv, n), Recv(prv, n), Recv(nxt, n)]\n" + MEGATRON
        ),
        grades=RING,
    ),
    Mutant(
        name="batched_nonblocking",
        why="irecv/isend then wait: a real fix, but the exercise asks for Send and Recv only",
        cells=_ring(
            "    return [Irecv(prv, n, 'a'), Irecv(nxt, n, 'b'), Isend(nxt, n, 'c'),\n"
            "            Isend(prv, n, 'd'), Wait('a'), Wait('b'), Wait('c'), Wait('d')]"
        ),
        grades=RING,
    ),
    Mutant(
        name="one_neighbour_twice",
        why="sends to the next rank twice, none to the previous",
        cells=_ring(MEGATRON.replace("Send(prv, n)", "Send(nxt, n)")),
        grades=RING,
    ),
    Mutant(
        name="neighbours_as_a_set",
        why="the neighbours as a set: with 2 ranks, one send and one receive instead of two each",
        cells=_ring(
            "    if len({nxt, prv}) == 1:\n"
            "        return [Send(nxt, n), Recv(nxt, n)] if rank % 2 == 0 else [Recv(prv, n), Send(prv, n)]\n"
            + MEGATRON
        ),
        grades=("ring_even_tests",),
    ),
    Mutant(
        name="course_exchange_programs",
        why="course_lib's exchange_programs(p, nbytes, 'even_odd')[rank] (delegated)",
        cells=_ring(
            "    return list(exchange_programs(p, n, 'even_odd')[rank])",
            prelude="from course_lib.pipeline.p2p import exchange_programs\n\n\n",
        ),
        grades=RING,
    ),
    # Exercise 4: the first collective call that differs.
    Mutant(
        name="zip_truncates",
        why="zip() stops at the shortest rank: a rank with one call fewer goes unseen",
        cells=_mismatch(
            "    for k, names in enumerate(zip(*calls)):\n"
            "        if len(set(names)) > 1:\n"
            "            return k\n"
            "    return None"
        ),
        grades=("mismatch_tests",),
    ),
    Mutant(
        name="order_ignored",
        why="ranks compared as sorted lists of calls: the same calls in another order pass",
        cells=_mismatch(
            "    if len({tuple(sorted(c)) for c in calls}) == 1:\n"
            "        return None\n"
            "    for k in range(max(len(c) for c in calls)):\n"
            "        if len({c[k] if k < len(c) else None for c in calls}) > 1:\n"
            "            return k\n"
            "    return None"
        ),
        grades=("mismatch_tests",),
    ),
    Mutant(
        name="program_position",
        why="the position of the differing call in rank 0's program, not its index among collectives",
        cells=_mismatch(
            "    for k in range(max(len(c) for c in calls)):\n"
            "        if len({c[k] if k < len(c) else None for c in calls}) > 1:\n"
            "            where = [i for i, op in enumerate(programs[0]) if isinstance(op, Collective)]\n"
            "            return where[k] if k < len(where) else len(programs[0])\n"
            "    return None"
        ),
        grades=("mismatch_tests",),
    ),
    Mutant(
        name="counted_from_one",
        why="the index counted from 1",
        cells=_mismatch(
            "    for k in range(max(len(c) for c in calls)):\n"
            "        if len({c[k] if k < len(c) else None for c in calls}) > 1:\n"
            "            return k + 1\n"
            "    return None"
        ),
        grades=("mismatch_tests",),
    ),
    Mutant(
        name="first_two_ranks_only",
        why="only ranks 0 and 1 compared",
        cells=_mismatch(
            "    a, b = calls[0], calls[1] if len(calls) > 1 else calls[0]\n"
            "    for k in range(max(len(a), len(b))):\n"
            "        if k >= len(a) or k >= len(b) or a[k] != b[k]:\n"
            "            return k\n"
            "    return None"
        ),
        grades=("mismatch_tests",),
    ),
    Mutant(
        name="first_and_last_ranks_only",
        why="only the first and the last rank compared (zip_longest): a middle rank goes unseen",
        cells=_mismatch(
            "    pairs = itertools.zip_longest(calls[0], calls[-1])\n"
            "    for k, (a, b) in enumerate(pairs):\n"
            "        if a != b:\n"
            "            return k\n"
            "    return None",
            prelude="import itertools\n\n\n",
        ),
        grades=("mismatch_tests",),
    ),
    Mutant(
        name="minus_one_for_none",
        why="-1 when every rank agrees, not None",
        cells=_mismatch(
            "    for k in range(max(len(c) for c in calls)):\n"
            "        if len({c[k] if k < len(c) else None for c in calls}) > 1:\n"
            "            return k\n"
            "    return -1"
        ),
        grades=("mismatch_tests",),
    ),
    Mutant(
        name="course_first_mismatching_collective",
        why="course_lib's first_mismatching_collective(programs).index (delegated)",
        cells=_mismatch(
            "    found = first_mismatching_collective(programs)\n"
            "    return None if found is None else found.index"
        ),
        grades=("mismatch_tests",),
    ),
    Mutant(
        name="simulator_mismatch",
        why="the mismatch simulate_p2p reports (delegated; it also misses a skipped last call)",
        cells=_mismatch(
            "    found = simulate_p2p(programs).mismatch\n"
            "    return None if found is None else found.index"
        ),
        grades=("mismatch_tests",),
    ),
    # Exercise 5: the first microbatch a reused send buffer corrupted.
    Mutant(
        name="the_microbatch_received_instead",
        why="3: the microbatch rank 1 got in place of microbatch 1",
        cells=_corrupted("3"),
        grades=("corrupted_tests",),
    ),
    Mutant(
        name="overwrite_from_its_end",
        why="2: the overwrite counted from the end of the forward that writes the buffer",
        cells=_corrupted("2"),
        grades=("corrupted_tests",),
    ),
    Mutant(
        name="isend_copies",
        why="-1: the isend taken to copy the buffer, so nothing is corrupted",
        cells=_corrupted("-1"),
        grades=("corrupted_tests",),
    ),
    Mutant(
        name="first_microbatch",
        why="0: the first isend's buffer assumed overwritten",
        cells=_corrupted("0"),
        grades=("corrupted_tests",),
    ),
    Mutant(
        name="float_answer",
        why="the right microbatch as a float",
        cells=_corrupted("1.0"),
        grades=("corrupted_tests",),
    ),
]

RIGHT_ANSWERS = [
    Mutant(
        name="verdicts_built_in_a_loop",
        why="the same verdicts built from two groups",
        cells={
            "verdicts_answer": "verdicts = dict.fromkeys('BCDF', 'deadlocks') | "
            "dict.fromkeys('AE', 'completes')\n"
        },  # fmt: skip
        grades=("verdicts_tests",),
    ),
    Mutant(
        name="cycle_by_depth_first_search_per_start",
        why="for each rank in order, a depth-first search for a path back to it",
        cells=_cycle(
            "    def back(start, node, path, seen):\n"
            "        for peer in waits_for.get(node, []):\n"
            "            if peer == start:\n"
            "                return path + [start]\n"
            "            if peer not in seen:\n"
            "                seen.add(peer)\n"
            "                found = back(start, peer, path + [peer], seen)\n"
            "                if found:\n"
            "                    return found\n"
            "        return None\n"
            "\n"
            "    for start in sorted(waits_for):\n"
            "        found = back(start, start, [start], {start})\n"
            "        if found:\n"
            "            return found\n"
            "    return []"
        ),
        grades=("cycle_tests",),
    ),
    Mutant(
        name="cycle_from_strongly_connected_components",
        why="networkx's strongly connected components find the ranks on cycles; the path is searched by hand",
        cells=_cycle(
            "    g = nx.DiGraph([(u, v) for u, vs in waits_for.items() for v in vs])\n"
            "    on_cycle = {u for u, v in g.edges if u == v}\n"
            "    for component in nx.strongly_connected_components(g):\n"
            "        if len(component) > 1:\n"
            "            on_cycle |= component\n"
            "    if not on_cycle:\n"
            "        return []\n"
            "    start = min(on_cycle)\n"
            "    component = next(c for c in nx.strongly_connected_components(g) if start in c)\n"
            "    parent, frontier = {}, [start]\n"
            "    while frontier:\n"
            "        later = []\n"
            "        for u in frontier:\n"
            "            for v in sorted(waits_for.get(u, [])):\n"
            "                if v == start:\n"
            "                    path = [u]\n"
            "                    while path[-1] != start:\n"
            "                        path.append(parent[path[-1]])\n"
            "                    return [*reversed(path), start]\n"
            "                if v in component and v not in parent:\n"
            "                    parent[v] = u\n"
            "                    later.append(v)\n"
            "        frontier = later",
            prelude="import networkx as nx\n\n\n",
        ),
        grades=("cycle_tests",),
    ),
    Mutant(
        name="cycle_as_tuple",
        why="the reference search returning a tuple",
        cells=_cycle(
            _bfs_cycle(close="(*reversed(path), start)").replace("return []", "return ()")
        ),
        grades=("cycle_tests",),
    ),
    Mutant(
        name="ring_serialised_from_rank_0",
        why="rank 0 sends first, every other rank receives first: slow (p steps) but safe",
        cells=_ring(
            "    if rank == 0:\n"
            "        return [Send(nxt, n), Recv(prv, n), Send(prv, n), Recv(nxt, n)]\n"
            "    return [Recv(prv, n), Send(nxt, n), Recv(nxt, n), Send(prv, n)]"
        ),
        grades=RING,
    ),
    Mutant(
        name="ring_two_shifts_parity_fixed",
        why="shift right then left, each by parity, the last rank of an odd ring a receiver",
        cells=_ring(
            "    sender = rank % 2 == 0 and not (p % 2 == 1 and rank == p - 1)\n"
            "    right = [Send(nxt, n), Recv(prv, n)] if sender else [Recv(prv, n), Send(nxt, n)]\n"
            "    left = [Send(prv, n), Recv(nxt, n)] if sender else [Recv(nxt, n), Send(prv, n)]\n"
            "    return right + left"
        ),
        grades=RING,
    ),
    Mutant(
        name="ring_megatron_as_tuple",
        why="Megatron-LM's order as a tuple",
        cells=_ring(MEGATRON.replace("return [", "return (").replace(")]", "))")),
        grades=RING,
    ),
    Mutant(
        name="mismatch_zip_longest",
        why="itertools.zip_longest with a fill value",
        cells=_mismatch(
            "    for k, names in enumerate(itertools.zip_longest(*calls, fillvalue=None)):\n"
            "        if len(set(names)) > 1:\n"
            "            return k\n"
            "    return None",
            prelude="import itertools\n\n\n",
        ),
        grades=("mismatch_tests",),
    ),
    Mutant(
        name="mismatch_against_rank_0_numpy",
        why="each rank compared with rank 0, the index a numpy integer",
        cells=_mismatch(
            "    width = max(len(c) for c in calls)\n"
            "    padded = np.array([c + [''] * (width - len(c)) for c in calls])\n"
            "    differs = (padded != padded[0]).any(axis=0)\n"
            "    return np.argmax(differs) if differs.any() else None",
            prelude="import numpy as np\n\n\n",
        ),
        grades=("mismatch_tests",),
    ),
    Mutant(
        name="corrupted_numpy_int",
        why="the right microbatch as a numpy integer (an int of numpy's type)",
        cells=_corrupted("np.int64(1)"),
        grades=("corrupted_tests",),
    ),
]
