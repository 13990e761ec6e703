"""Point-to-point programs per rank and a matching simulator with an eager limit (pipe09).

A *program* is one rank's ordered list of operations: blocking ``Send``/``Recv``, non-blocking
``Isend``/``Irecv`` (each names a handle) and the ``Wait`` on a handle, ``Collective`` calls, and
``Compute`` (time passing, optionally writing a microbatch into a named send buffer).
``simulate_p2p(programs, eager_limit)`` runs every rank's program in order and either completes or
reports the deadlock: which operation each stuck rank is blocked in, whom it waits for, and the
wait-for cycle.

Semantics (the model; an MPI or NCCL library is one implementation of it):
- Matching. The k-th send from rank a to rank b matches the k-th receive rank b posts from rank a
  (MPI's non-overtaking order without tags or wildcards; NCCL matches calls in order too).
- Eager and rendezvous. A send of ``nbytes <= eager_limit`` is *eager*: its data is copied out at
  once and the send completes when it is posted. A larger one is *rendezvous*: it completes only
  when the matching receive is posted, and its data is read then. ``eager_limit=0`` makes every
  send synchronous (MPI_Ssend; NCCL documents ncclSend as blocking). A receive completes when both
  sides have posted. Transfers take no time; ``Compute`` is what takes time.
- Non-blocking calls post the operation and return at once; ``Wait`` blocks until it completes.
- Collectives. The k-th collective call of every rank matches the k-th of every other rank
  (one group: all ranks); it completes when the last rank arrives. If the k-th calls differ in
  name the run stops there: the ranks disagree, which a real library may turn into a hang or a
  wrong result.
- Buffers. ``Compute(..., buffer="buf0", microbatch=3)`` writes microbatch 3 into ``buf0`` from
  the moment it *starts*; a send's data is what its buffer holds when the data is read (at the
  post for an eager send, at the match for a rendezvous one), so overwriting a buffer before its
  transfer read it delivers the later microbatch.
Ranks advance in rounds until no rank can: the result does not depend on the order in which ranks
are visited (sends and receives name their peer, so matching is deterministic).
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from collections import defaultdict, deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import networkx as nx
import pandas as pd

from ._p2p_checks import fmt_bytes, seconds, text, whole

__all__ = [
    "ORDERS",
    "Blocked",
    "CollectiveMismatch",
    "Collective",
    "Compute",
    "Irecv",
    "Isend",
    "Message",
    "P2PRun",
    "PipeExchange",
    "Recv",
    "Send",
    "Wait",
    "exchange_programs",
    "find_wait_cycle",
    "first_mismatching_collective",
    "os_pipe_exchange",
    "pipe_capacity",
    "simulate_p2p",
]


# --- operations -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Send:
    """Blocking send of ``nbytes`` to rank ``peer``, reading send buffer ``buffer`` (pipe09)."""

    peer: int
    nbytes: int
    buffer: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "peer", whole("Send peer", self.peer, 0))
        object.__setattr__(self, "nbytes", whole("Send nbytes", self.nbytes, 1))
        text("Send buffer", self.buffer)

    def __str__(self) -> str:
        return f"send→{self.peer} {fmt_bytes(self.nbytes)}"


@dataclass(frozen=True)
class Recv:
    """Blocking receive of ``nbytes`` from rank ``peer`` (pipe09)."""

    peer: int
    nbytes: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "peer", whole("Recv peer", self.peer, 0))
        object.__setattr__(self, "nbytes", whole("Recv nbytes", self.nbytes, 1))

    def __str__(self) -> str:
        return f"recv←{self.peer} {fmt_bytes(self.nbytes)}"


@dataclass(frozen=True)
class Isend:
    """Non-blocking send to ``peer``; ``Wait(handle)`` completes it; ``buffer`` belongs to the
    transfer until then (pipe09)."""

    peer: int
    nbytes: int
    handle: str
    buffer: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "peer", whole("Isend peer", self.peer, 0))
        object.__setattr__(self, "nbytes", whole("Isend nbytes", self.nbytes, 1))
        text("Isend handle", self.handle, empty=False)
        text("Isend buffer", self.buffer)

    def __str__(self) -> str:
        return f"isend→{self.peer} {fmt_bytes(self.nbytes)} [{self.handle}]"


@dataclass(frozen=True)
class Irecv:
    """Non-blocking receive from ``peer``; ``Wait(handle)`` completes it (pipe09)."""

    peer: int
    nbytes: int
    handle: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "peer", whole("Irecv peer", self.peer, 0))
        object.__setattr__(self, "nbytes", whole("Irecv nbytes", self.nbytes, 1))
        text("Irecv handle", self.handle, empty=False)

    def __str__(self) -> str:
        return f"irecv←{self.peer} {fmt_bytes(self.nbytes)} [{self.handle}]"


@dataclass(frozen=True)
class Wait:
    """Block until the isend/irecv that issued ``handle`` completes (pipe09)."""

    handle: str

    def __post_init__(self) -> None:
        text("Wait handle", self.handle, empty=False)

    def __str__(self) -> str:
        return f"wait [{self.handle}]"


@dataclass(frozen=True)
class Collective:
    """A collective call over all ranks, e.g. ``Collective("all_reduce")`` (pipe09)."""

    name: str

    def __post_init__(self) -> None:
        text("Collective name", self.name, empty=False)

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Compute:
    """``seconds`` of work; with ``buffer`` it writes ``microbatch`` into that send buffer from its
    start (pipe09)."""

    seconds: float
    buffer: str = ""
    microbatch: int = -1
    label: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "seconds", seconds("Compute seconds", self.seconds))
        text("Compute buffer", self.buffer)
        text("Compute label", self.label)
        minimum = 0 if self.buffer else -1
        object.__setattr__(
            self, "microbatch", whole("Compute microbatch", self.microbatch, minimum)
        )

    def __str__(self) -> str:
        name = self.label or "compute"
        return f"{name} → {self.buffer}" if self.buffer else name


OPERATIONS = (Send, Recv, Isend, Irecv, Wait, Collective, Compute)
Op = Send | Recv | Isend | Irecv | Wait | Collective | Compute


# --- results --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Blocked:
    """A rank stuck at the end of a run: the operation (its position in the program) and the
    ranks it waits for (pipe09)."""

    rank: int
    position: int
    op: str
    waits_for: tuple[int, ...]

    def __str__(self) -> str:
        if not self.waits_for:
            return f"rank {self.rank} blocked in op {self.position} ({self.op}); no rank can release it"
        peers = ", ".join(map(str, self.waits_for))
        return f"rank {self.rank} blocked in op {self.position} ({self.op}), waiting for {peers}"


@dataclass(frozen=True)
class CollectiveMismatch:
    """The first collective call (``index`` counts collectives only) on which ranks disagree:
    ``calls[r]`` is rank r's call there, "" if rank r makes no such call (pipe09)."""

    index: int
    calls: tuple[str, ...]

    def __str__(self) -> str:
        calls = ", ".join(f"rank {r}: {c or '(none)'}" for r, c in enumerate(self.calls))
        return f"collective call {self.index} differs across ranks ({calls})"


@dataclass(frozen=True)
class Message:
    """One matched send/receive pair and what it delivered (pipe09).

    ``sent`` is the microbatch the send buffer held when the send was posted, ``delivered`` the
    one it held when the data was read (-1: the buffer is not tracked)."""

    src: int
    src_position: int
    dst: int
    dst_position: int
    nbytes: int
    protocol: str
    posted: float
    received: float
    read_at: float
    sent: int
    delivered: int

    @property
    def corrupted(self) -> bool:
        """The receiver got another microbatch than the one in the buffer at the send."""
        return self.sent != self.delivered


@dataclass(frozen=True, eq=False)
class P2PRun:
    """The outcome of ``simulate_p2p``: completed, or who is blocked where and the wait-for cycle.

    ``events`` has one row per operation that started: rank, position, kind (the operation's class
    name), peer (-1 if none), op (its text), start, end (NaN for an operation still blocked at the
    end). ``messages`` lists every matched pair. ``unmatched``
    names (rank, position) of posted sends/receives that never found their partner."""

    num_ranks: int
    eager_limit: int
    programs: tuple[tuple[Op, ...], ...] = field(repr=False)
    events: pd.DataFrame = field(repr=False)
    messages: tuple[Message, ...] = field(repr=False)
    blocked: tuple[Blocked, ...]
    cycle: tuple[int, ...]
    mismatch: CollectiveMismatch | None
    unmatched: tuple[tuple[int, int], ...]

    @property
    def completed(self) -> bool:
        """Every operation of every rank completed."""
        return not self.blocked and self.mismatch is None and not self.unmatched

    @property
    def deadlocked(self) -> bool:
        """Some rank can never finish (the opposite of ``completed``)."""
        return not self.completed

    @cached_property
    def makespan(self) -> float:
        """End of the last operation that completed, in seconds."""
        ends = self.events["end"].dropna()
        return float(ends.max()) if len(ends) else 0.0

    @property
    def corrupted(self) -> tuple[Message, ...]:
        """Messages that delivered another microbatch than the one sent (reused buffers)."""
        return tuple(m for m in self.messages if m.corrupted)

    def wait_for_graph(self) -> nx.DiGraph:
        """Blocked ranks -> the ranks they wait for; each edge carries the blocked ``op``."""
        graph = nx.DiGraph()
        graph.add_nodes_from(range(self.num_ranks))
        for b in self.blocked:
            for peer in b.waits_for:
                graph.add_edge(b.rank, peer, op=b.op, position=b.position)
        return graph

    def describe(self) -> str:
        """A verdict in words: completed, or the blocked operations, the cycle, the mismatch."""
        if self.completed:
            end = f"; the last ends at {self.makespan * 1e3:.4g} ms" if self.makespan > 0 else ""
            return f"completed: every operation matched{end}"
        lines = []
        if self.mismatch is not None:
            lines.append(f"hang: {self.mismatch}")
        if self.cycle:
            lines.append("deadlock: wait-for cycle " + " → ".join(map(str, self.cycle)))
        elif self.blocked and self.mismatch is None:
            lines.append("hang: no cycle; a blocked rank waits for a rank that has finished")
        lines += [f"  {b}" for b in self.blocked]
        lines += [f"  rank {r}'s op {p} was never matched" for r, p in self.unmatched]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.describe()


# --- the simulator --------------------------------------------------------------------------


def _validate(programs: object) -> list[list[Op]]:
    """Programs as lists of operations; peers exist; every wait's handle was issued before it and
    no handle is reissued while pending; matched sends and receives agree on their size."""
    if isinstance(programs, str | bytes) or not isinstance(programs, Iterable):
        raise TypeError(
            f"programs must be a sequence of per-rank lists of operations, got {programs!r}"
        )
    checked = []
    for rank, program in enumerate(programs):
        if isinstance(program, str | bytes) or not isinstance(program, Iterable):
            raise TypeError(
                f"programs[{rank}] (rank {rank}'s program) must be a list of operations, "
                f"got {program!r}"
            )
        checked.append(list(program))
    if not checked:
        raise ValueError("programs must hold at least one rank's program")
    num_ranks = len(checked)
    sends: dict[tuple[int, int], list[tuple[int, Op]]] = defaultdict(list)
    recvs: dict[tuple[int, int], list[tuple[int, Op]]] = defaultdict(list)
    for rank, program in enumerate(checked):
        issued: dict[str, int] = {}  # handle -> position of the isend/irecv still pending
        for position, op in enumerate(program):
            where = f"rank {rank}, op {position}"
            if not isinstance(op, OPERATIONS):
                names = ", ".join(cls.__name__ for cls in OPERATIONS)
                raise TypeError(f"{where}: {op!r} is not an operation ({names})")
            if isinstance(op, Send | Recv | Isend | Irecv):
                if op.peer >= num_ranks:
                    raise ValueError(
                        f"{where} ({op}): rank {op.peer} does not exist (ranks 0..{num_ranks - 1})"
                    )
                side = sends if isinstance(op, Send | Isend) else recvs
                side[(rank, op.peer)].append((position, op))
            if isinstance(op, Isend | Irecv):
                if op.handle in issued:
                    raise ValueError(
                        f"{where} ({op}): handle {op.handle!r} is still pending from op "
                        f"{issued[op.handle]}; wait on it before reusing the name"
                    )
                issued[op.handle] = position
            elif isinstance(op, Wait):
                if op.handle not in issued:
                    raise ValueError(
                        f"{where} ({op}): no isend or irecv on rank {rank} issued handle "
                        f"{op.handle!r} before op {position} (or it was already waited on)"
                    )
                del issued[op.handle]
    for (src, dst), posted in sends.items():
        for (s_pos, s_op), (r_pos, r_op) in zip(posted, recvs.get((dst, src), []), strict=False):
            if s_op.nbytes != r_op.nbytes:
                raise ValueError(
                    f"rank {src}, op {s_pos} ({s_op}) is matched by rank {dst}, op {r_pos} "
                    f"({r_op}): the sizes differ ({s_op.nbytes} vs {r_op.nbytes} bytes)"
                )
    return checked


def simulate_p2p(programs: Sequence[Sequence[Op]], eager_limit: int = 0) -> P2PRun:
    """Run every rank's program: match sends with receives in order, eager below ``eager_limit``
    bytes (inclusive), rendezvous above; report completion or the blocked ranks and the wait-for
    cycle (pipe09)."""
    ranks = _validate(programs)
    eager_limit = whole("eager_limit", eager_limit, 0)
    p = len(ranks)
    pc = [0] * p
    clock = [0.0] * p
    posted_here = [False] * p  # the current operation of the rank is posted (waiting to complete)
    send_posts: dict[tuple[int, int], list[float]] = defaultdict(list)  # (src, dst) -> post times
    recv_posts: dict[tuple[int, int], list[float]] = defaultdict(list)  # (dst, src) -> post times
    send_index: dict[tuple[int, int], int] = defaultdict(int)
    recv_index: dict[tuple[int, int], int] = defaultdict(int)
    coll_posts: list[list[tuple[float, str]]] = [[] for _ in range(p)]
    requests: dict[tuple[int, str], tuple[str, int, int, float, bool]] = {}  # -> kind, peer, k, t
    current_k = [0] * p  # k of the current blocking send/recv/collective, once posted
    events: list[tuple[int, int, str, float, float]] = []
    mismatch: CollectiveMismatch | None = None

    def completion(kind: str, rank: int, peer: int, k: int, posted: float, eager: bool):
        """Completion time of a posted send/recv (None while its partner has not posted)."""
        if kind == "send":
            if eager:
                return posted
            partner = recv_posts[(peer, rank)]
        else:
            partner = send_posts[(peer, rank)]
        return max(posted, partner[k]) if k < len(partner) else None

    def step(r: int) -> bool:
        """Advance rank r by one operation if it can; True if it did."""
        nonlocal mismatch
        op = ranks[r][pc[r]]
        t = clock[r]
        peer = _peer(op, r, requests)
        end = None
        if isinstance(op, Compute):
            end = t + op.seconds
        elif isinstance(op, Send | Isend | Recv | Irecv):
            kind = "send" if isinstance(op, Send | Isend) else "recv"
            eager = kind == "send" and op.nbytes <= eager_limit
            if not posted_here[r]:
                key = (r, op.peer)
                index = send_index if kind == "send" else recv_index
                current_k[r] = index[key]
                index[key] += 1
                (send_posts if kind == "send" else recv_posts)[key].append(t)
                posted_here[r] = True
                if isinstance(op, Isend | Irecv):
                    requests[(r, op.handle)] = (kind, op.peer, current_k[r], t, eager)
            if isinstance(op, Isend | Irecv):
                end = t
            else:
                end = completion(kind, r, op.peer, current_k[r], t, eager)
        elif isinstance(op, Wait):
            done = completion(*_request_args(requests[(r, op.handle)], r))
            if done is not None:
                end = max(t, done)
                del requests[(r, op.handle)]
        elif isinstance(op, Collective):
            if not posted_here[r]:
                current_k[r] = len(coll_posts[r])
                coll_posts[r].append((t, op.name))
                posted_here[r] = True
            k = current_k[r]
            if all(len(posts) > k for posts in coll_posts):
                names = {posts[k][1] for posts in coll_posts}
                if len(names) > 1:  # it can never complete; the other ranks carry on
                    mismatch = CollectiveMismatch(k, tuple(posts[k][1] for posts in coll_posts))
                    return False
                end = max(posts[k][0] for posts in coll_posts)
        if end is None:
            return False
        events.append((r, pc[r], type(op).__name__, peer, str(op), t, end))
        clock[r] = end
        pc[r] += 1
        posted_here[r] = False
        return True

    progress = True
    while progress:
        progress = False
        for r in range(p):
            while pc[r] < len(ranks[r]) and step(r):
                progress = True

    blocked = []
    for r in range(p):
        if pc[r] >= len(ranks[r]):
            continue
        op = ranks[r][pc[r]]
        if isinstance(op, Send | Recv):
            waits = (op.peer,)
        elif isinstance(op, Wait):
            waits = (requests[(r, op.handle)][1],)
        elif isinstance(op, Collective):
            k = current_k[r] if posted_here[r] else len(coll_posts[r])
            waits = tuple(q for q in range(p) if len(coll_posts[q]) <= k)  # () if mismatched
        else:  # pragma: no cover - a Compute or a non-blocking post always advances
            waits = ()
        events.append(
            (r, pc[r], type(op).__name__, _peer(op, r, requests), str(op), clock[r], math.nan)
        )
        blocked.append(Blocked(r, pc[r], str(op), waits))

    current = {(b.rank, b.position) for b in blocked}
    unmatched = []  # posted sends/receives whose partner never posted (a blocked one aside)
    for key in set(send_posts) | set(recv_posts):
        src, dst = key
        sent, received = len(send_posts[key]), len(recv_posts[(dst, src)])
        for k in range(received, sent):
            unmatched.append((src, _position_of(ranks[src], "send", dst, k)))
        for k in range(sent, received):
            unmatched.append((dst, _position_of(ranks[dst], "recv", src, k)))
    unmatched = [u for u in unmatched if u not in current]
    starts = {(event[0], event[1]): event[-2] for event in events}
    messages = _messages(ranks, send_posts, recv_posts, eager_limit, starts)
    cycle = find_wait_cycle({b.rank: b.waits_for for b in blocked})
    columns = ["rank", "position", "kind", "peer", "op", "start", "end"]
    frame = pd.DataFrame(events, columns=columns)
    frame = frame.sort_values(["rank", "position"], kind="stable").reset_index(drop=True)
    return P2PRun(
        num_ranks=p,
        eager_limit=eager_limit,
        programs=tuple(tuple(program) for program in ranks),
        events=frame,
        messages=messages,
        blocked=tuple(blocked),
        cycle=cycle,
        mismatch=mismatch,
        unmatched=tuple(sorted(unmatched)),
    )


def _peer(op: Op, rank: int, requests: Mapping) -> int:
    """The rank an operation exchanges with (a wait: its request's peer), -1 for none."""
    if isinstance(op, Send | Recv | Isend | Irecv):
        return op.peer
    if isinstance(op, Wait) and (rank, op.handle) in requests:
        return requests[(rank, op.handle)][1]
    return -1


def _request_args(request: tuple[str, int, int, float, bool], rank: int):
    kind, peer, k, posted, eager = request
    return kind, rank, peer, k, posted, eager


def _position_of(program: list[Op], kind: str, peer: int, k: int) -> int:
    """Position in ``program`` of its k-th send (or receive) with ``peer``."""
    types = (Send, Isend) if kind == "send" else (Recv, Irecv)
    seen = -1
    for position, op in enumerate(program):
        if isinstance(op, types) and op.peer == peer:
            seen += 1
            if seen == k:
                return position
    raise AssertionError("unreachable: the operation was posted")  # pragma: no cover


def _messages(ranks, send_posts, recv_posts, eager_limit, starts) -> tuple[Message, ...]:
    """Every matched pair, with the microbatch its send buffer held at the post and at the read.

    ``starts[(rank, position)]`` is the start time of each operation that ran. A ``Compute`` that
    writes a buffer counts from its start; a read at the post sees the writes before the send in
    program order, a later rendezvous read also every write that started by then."""
    writes: dict[tuple[int, str], list[tuple[float, int, int]]] = defaultdict(list)
    for rank, program in enumerate(ranks):
        for position, op in enumerate(program):
            if isinstance(op, Compute) and op.buffer and (rank, position) in starts:
                writes[(rank, op.buffer)].append(
                    (starts[(rank, position)], position, op.microbatch)
                )

    def holds(rank: int, buffer: str, before: int, by: float) -> int:
        visible = [
            (start, position, microbatch)
            for start, position, microbatch in writes.get((rank, buffer), [])
            if position < before or start <= by
        ]
        return max(visible)[2] if visible else -1

    out = []
    for (src, dst), posts in send_posts.items():
        sends = [
            (pos, op)
            for pos, op in enumerate(ranks[src])
            if isinstance(op, Send | Isend) and op.peer == dst
        ]
        recvs = [
            pos
            for pos, op in enumerate(ranks[dst])
            if isinstance(op, Recv | Irecv) and op.peer == src
        ]
        for k, (posted, r_posted) in enumerate(zip(posts, recv_posts[(dst, src)], strict=False)):
            s_pos, s_op = sends[k]
            eager = s_op.nbytes <= eager_limit
            read_at = posted if eager else max(posted, r_posted)
            buffer = s_op.buffer
            sent = holds(src, buffer, s_pos, -math.inf) if buffer else -1
            late = read_at > posted
            delivered = holds(src, buffer, s_pos, read_at if late else -math.inf) if buffer else -1
            out.append(
                Message(
                    src=src,
                    src_position=s_pos,
                    dst=dst,
                    dst_position=recvs[k],
                    nbytes=s_op.nbytes,
                    protocol="eager" if eager else "rendezvous",
                    posted=posted,
                    received=max(posted, r_posted),
                    read_at=read_at,
                    sent=sent,
                    delivered=delivered,
                )
            )
    return tuple(sorted(out, key=lambda m: (m.src, m.src_position)))


# --- wait-for cycles ------------------------------------------------------------------------


def find_wait_cycle(waits_for: Mapping[int, Iterable[int]]) -> tuple[int, ...]:
    """A cycle of a wait-for graph (rank -> ranks it waits for) as (r0, r1, ..., r0), starting at
    the smallest rank on any cycle and, among its shortest cycles, the lexicographically first;
    () if the graph has none (pipe09)."""
    graph = nx.DiGraph()
    for rank, peers in waits_for.items():
        graph.add_node(rank)
        graph.add_edges_from((rank, peer) for peer in peers)
    on_cycle = set(nx.nodes_with_selfloops(graph))
    for component in nx.strongly_connected_components(graph):
        if len(component) > 1:
            on_cycle |= component
    if not on_cycle:
        return ()
    start = min(on_cycle)
    if graph.has_edge(start, start):
        return (start, start)
    # Breadth-first from start with sorted successors: the first path back is the shortest, and
    # among the shortest the lexicographically first.
    parent = {start: None}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for succ in sorted(graph.successors(node)):
            if succ == start:
                path = [node]
                while parent[path[-1]] is not None:
                    path.append(parent[path[-1]])
                return (*reversed(path), start)
            if succ not in parent:
                parent[succ] = node
                queue.append(succ)
    raise AssertionError("unreachable: start lies on a cycle")  # pragma: no cover


# --- collectives ----------------------------------------------------------------------------


def first_mismatching_collective(programs: Sequence[Sequence[Op]]) -> CollectiveMismatch | None:
    """The first collective call (counting collectives only, from 0) whose name differs across
    ranks, a rank without such a call included; None if every rank calls the same sequence
    (pipe09)."""
    names = [
        [op.name for op in program if isinstance(op, Collective)] for program in _validate(programs)
    ]
    longest = max(len(seq) for seq in names)
    for k in range(longest):
        calls = tuple(seq[k] if k < len(seq) else "" for seq in names)
        if len(set(calls)) > 1:
            return CollectiveMismatch(k, calls)
    return None


# --- neighbour exchanges --------------------------------------------------------------------

ORDERS: dict[str, str] = {
    "send_first": "every rank sends to both neighbours, then receives from both",
    "recv_first": "every rank receives from both neighbours, then sends to both",
    "isend_wait": "isend to each neighbour and wait on it at once, then receive",
    "even_odd": "Megatron-LM's _p2p_ops order by rank parity (p2p_communication.py, "
    "NVIDIA/Megatron-LM commit 2fd6e2b), which survives odd rings; pipe09's Exercise 3 asks for "
    "such an order, so it is not spelled out here",
    "even_sends_first": "even ranks send to both neighbours first, odd ranks receive from both first",
    "nonblocking": "post both irecvs and both isends, then wait on all four (batch_isend_irecv, "
    "ncclGroupStart/End)",
}
"""The neighbour-exchange orders exchange_programs builds, in words (pipe09)."""


def exchange_programs(
    num_ranks: int,
    nbytes: int,
    order: str = "send_first",
    *,
    ring: bool = True,
    compute_time: float = 0.0,
) -> tuple[tuple[Op, ...], ...]:
    """Every rank sends ``nbytes`` to its next and previous rank and receives from both, in
    ``order`` (one of ORDERS); ``ring`` wraps rank p - 1 to rank 0, else the ends have one
    neighbour; each rank first computes ``compute_time`` seconds (pipe09).

    Megatron-LM's isend/irecv order in _p2p_ops is modelled as blocking operations in issue
    order: NCCL's contract ("blocking for the GPU" unless grouped). PyTorch's ProcessGroupNCCL
    gives each peer pair its own communicator and stream by default, so there only calls to the
    same peer (or all calls, when they share one communicator) run in issue order."""
    p = whole("num_ranks", num_ranks, 1)
    nbytes = whole("nbytes", nbytes, 1)
    if order not in ORDERS:
        raise ValueError(f"order must be one of {sorted(ORDERS)}, got {order!r}")
    if not isinstance(ring, bool):
        raise TypeError(f"ring must be a bool, got {ring!r}")
    compute_time = seconds("compute_time", compute_time)
    programs = []
    for r in range(p):
        nxt = (r + 1) % p if ring or r + 1 < p else None
        prv = (r - 1) % p if ring or r > 0 else None
        send_next = [Send(nxt, nbytes)] if nxt is not None else []
        send_prev = [Send(prv, nbytes)] if prv is not None else []
        recv_next = [Recv(nxt, nbytes)] if nxt is not None else []
        recv_prev = [Recv(prv, nbytes)] if prv is not None else []
        even = r % 2 == 0
        if order == "send_first":
            ops = send_next + send_prev + recv_prev + recv_next
        elif order == "recv_first":
            ops = recv_prev + recv_next + send_next + send_prev
        elif order == "even_odd":
            ops = (
                send_next + recv_prev + send_prev + recv_next
                if even
                else recv_prev + send_next + recv_next + send_prev
            )
        elif order == "even_sends_first":
            ops = (
                send_next + send_prev + recv_prev + recv_next
                if even
                else recv_prev + recv_next + send_next + send_prev
            )
        elif order == "isend_wait":
            ops = []
            for name, send in (("next", send_next), ("prev", send_prev)):
                for s in send:
                    ops += [Isend(s.peer, nbytes, f"send_{name}"), Wait(f"send_{name}")]
            ops += recv_prev + recv_next
        else:  # nonblocking
            posts = [Irecv(o.peer, nbytes, "recv_prev") for o in recv_prev]
            posts += [Irecv(o.peer, nbytes, "recv_next") for o in recv_next]
            posts += [Isend(o.peer, nbytes, "send_next") for o in send_next]
            posts += [Isend(o.peer, nbytes, "send_prev") for o in send_prev]
            ops = posts + [Wait(o.handle) for o in posts]
        if compute_time > 0:
            ops = [Compute(compute_time, label="forward"), *ops]
        programs.append(tuple(ops))
    return tuple(programs)


# --- a real eager limit: the kernel's pipe buffer -------------------------------------------


@dataclass(frozen=True)
class PipeExchange:
    """Two OS processes that both wrote ``nbytes`` to each other over os.pipe before reading:
    ``started`` (both signalled ready within the start-up timeout), then ``completed`` within the
    timeout or not (then killed); ``seconds`` counts from the moment both were ready, or is the
    start-up time waited if they never were (pipe09)."""

    nbytes: int
    capacity: int | None
    started: bool
    completed: bool
    seconds: float

    def describe(self) -> str:
        """The outcome in words. A pair that never started gets no time: ``seconds`` is then the
        wait until a child failed (possibly ~0 s) or the start-up timeout, not a hang's length."""
        if not self.started:
            outcome = "the processes did not start (not a hang)"
        elif self.completed:
            outcome = f"completed {self.seconds * 1e3:.1f} ms after both processes were ready"
        else:
            outcome = f"still blocked {self.seconds:.1f} s after both were ready: killed"
        return f"{self.nbytes:>9,} bytes each way: {outcome}"


def pipe_capacity() -> int | None:
    """Capacity in bytes of a new os.pipe() (fcntl F_GETPIPE_SZ, Linux; 16 pages by default since
    Linux 2.6.11, 65,536 bytes with 4 KiB pages, pipe(7)); None where not reported (pipe09)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not on Windows
        return None
    op = getattr(fcntl, "F_GETPIPE_SZ", None)
    if op is None:  # pragma: no cover - not Linux
        return None
    read_end, write_end = os.pipe()
    try:
        return int(fcntl.fcntl(write_end, op))
    finally:
        os.close(read_end)
        os.close(write_end)


_BOTH_WRITE_FIRST = """\
import os, sys
out, inp, ready, n = map(int, sys.argv[1:])
os.write(ready, b"r")
os.close(ready)
view = memoryview(bytes(n))
while view:
    view = view[os.write(out, view):]
left = n
while left:
    chunk = os.read(inp, left)
    if not chunk:
        sys.exit(3)
    left -= len(chunk)
"""


def os_pipe_exchange(
    sizes: Iterable[int], timeout: float = 1.5, *, start_timeout: float = 30.0
) -> tuple[PipeExchange, ...]:
    """For each size, two processes that each write ``size`` bytes into a pipe to the other and
    only then read (a write larger than the pipe's buffer blocks until the other side reads); all
    pairs run at once (pipe09).

    Each process writes one byte on its pair's ready pipe once its interpreter has started; a
    pair's ``timeout`` seconds count from the moment both have, so start-up is never taken for a
    hang. A pair still running ``timeout`` seconds after that is killed (``completed`` False); a
    pair not ready within ``start_timeout`` seconds of its launch is killed too and reported with
    ``started`` False."""
    import select

    sizes = [whole(f"sizes[{i}]", n, 1) for i, n in enumerate(sizes)]
    timeout, start_timeout = seconds("timeout", timeout), seconds("start_timeout", start_timeout)
    if timeout <= 0:
        raise ValueError("timeout must be > 0 seconds")
    if start_timeout <= 0:
        raise ValueError("start_timeout must be > 0 seconds")
    capacity = pipe_capacity()
    pairs: list[list[subprocess.Popen]] = []
    ready_fds: list[int] = []
    launched: list[float] = []
    try:
        for n in sizes:
            a_to_b, b_to_a, ready = os.pipe(), os.pipe(), os.pipe()
            procs: list[subprocess.Popen] = []
            pairs.append(procs)
            ready_fds.append(ready[0])
            launched.append(time.perf_counter())
            try:
                for out, inp in ((a_to_b[1], b_to_a[0]), (b_to_a[1], a_to_b[0])):
                    procs.append(
                        subprocess.Popen(
                            [sys.executable, "-I", "-S", "-c", _BOTH_WRITE_FIRST]
                            + [str(out), str(inp), str(ready[1]), str(n)],
                            pass_fds=(out, inp, ready[1]),
                            stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL,
                        )
                    )
            finally:  # the parent keeps only the ready pipe's read end
                for fd in (*a_to_b, *b_to_a, ready[1]):
                    os.close(fd)
        signals = [0] * len(pairs)
        ready_at: dict[int, float] = {}
        done_at: dict[int, float] = {}
        failed: dict[int, float] = {}  # both closed the ready pipe without signalling twice

        def pending(i: int, now: float) -> bool:
            if i in done_at or i in failed:
                return False
            if i in ready_at:
                return now < ready_at[i] + timeout
            return now < launched[i] + start_timeout

        while True:
            now = time.perf_counter()
            waiting = [i for i in range(len(pairs)) if pending(i, now)]
            if not waiting:
                break
            starting = {ready_fds[i]: i for i in waiting if i not in ready_at}
            readable, _, _ = select.select(list(starting), [], [], 0.005)
            if not starting:
                time.sleep(0.005)
            for fd in readable:
                i = starting[fd]
                data = os.read(fd, 2)
                signals[i] += len(data)
                if signals[i] >= 2:
                    ready_at[i] = time.perf_counter()
                elif not data:
                    failed[i] = time.perf_counter()
            for i in waiting:
                if (
                    i in ready_at
                    and i not in done_at
                    and all(p.poll() is not None for p in pairs[i])
                ):
                    done_at[i] = time.perf_counter()
    finally:
        for procs in pairs:
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
                proc.wait()
        for fd in ready_fds:
            os.close(fd)
    results = []
    for i, (n, procs) in enumerate(zip(sizes, pairs, strict=True)):
        started = i in ready_at
        if i in done_at:
            spent = done_at[i] - ready_at[i]
        elif started:
            spent = timeout
        else:
            spent = failed[i] - launched[i] if i in failed else start_timeout
        completed = i in done_at and all(proc.returncode == 0 for proc in procs)
        results.append(PipeExchange(n, capacity, started, completed, spent))
    return tuple(results)
