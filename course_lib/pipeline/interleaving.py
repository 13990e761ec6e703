"""Interleaved pipelines (pipe04): where the chunks live, what crosses ranks and nodes, the step
time as a function of the number of chunks, and which (p, m, v) the frameworks run.

p = num_ranks, m = num_microbatches, v = chunks_per_rank. The model's layers are cut into v·p
chunks (global stages) of equal length; global stage k holds layers [k·L/(v·p), (k+1)·L/(v·p))
and lives on rank k % p, so rank r holds chunks r, r + p, ..., r + (v - 1)·p (Narayanan et al.
2021, "Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM",
Sec. 2.2.2, Fig. 4). Megatron-LM's acceptance rule is read from NVIDIA/Megatron-LM at commit
00611e6 (:data:`MEGATRON_LM_COMMIT`), PyTorch's from 2.13's torch/distributed/pipelining.

``forward_time`` and ``backward_time`` are one microbatch's forward and backward over a rank's
whole share of the layers (the stage time of the plain, v = 1, pipeline); one chunk costs
forward_time / v and backward_time / v.

The schedule itself is :func:`course_lib.pipeline.interleaved_1f1b` and the run is
:func:`course_lib.pipeline.simulate`; this module's closed forms are checked against both in
tests/test_pipeline_interleaving.py.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ._validate import check_duration, check_hop_latencies, check_int
from .schedule import check_interleaved_shape, interleaved_1f1b
from .simulate import simulate

if TYPE_CHECKING:
    from .simulate import Timeline

MEGATRON_LM_COMMIT = "00611e6eeb0b09b5ee074750956855215ddbd67f"
"""The NVIDIA/Megatron-LM commit whose megatron/core/pipeline_parallel/schedules.py the acceptance
rule follows: ``forward_backward_pipelining_with_interleaving`` raises unless
``microbatch_group_size_per_vp_stage`` N lies in [p, m] and m % N is 0 or at least p. N defaults
to p in ModelParallelConfig.__post_init__ (megatron/core/model_parallel_config.py, read at commit
02aa3ee454b5ff16b1bf356ec36fa0cc1c26858f). Older Megatron-LM asserted m % p == 0 outright where it
picked the interleaved schedule ("number of microbatches is not divisible by pipeline-parallel
size when using interleaved schedule")."""

__all__ = [
    "MEGATRON_LM_COMMIT",
    "Acceptance",
    "Crossings",
    "acceptance",
    "best_chunks_per_rank",
    "crossings_per_microbatch",
    "interleaved_makespan",
    "layer_ranks",
    "peak_rank_stash",
    "rank_layers",
    "rank_stash",
    "stage_ranks",
    "stash_rule_holds",
    "step_times",
]


def stage_ranks(num_ranks: int, chunks_per_rank: int) -> np.ndarray:
    """Rank of each of the v·p global stages: stage k on rank k % p (looping placement) (pipe04)."""
    p = check_int("num_ranks", num_ranks)
    v = check_int("chunks_per_rank", chunks_per_rank)
    return np.arange(v * p, dtype=np.int64) % p


def layer_ranks(num_layers: int, num_ranks: int, chunks_per_rank: int) -> np.ndarray:
    """Rank holding each layer: layer l is in chunk l // (L/(v·p)), on rank chunk % p (pipe04).

    ``num_layers`` L must be a multiple of v·p (every chunk holds L/(v·p) layers). With L = 16,
    p = 4, v = 2, rank 0 holds layers 0, 1, 8, 9 (Narayanan et al. 2021, Sec. 2.2.2: "device 1
    has layers 1, 2, 9, 10", counting from 1).
    """
    layers = check_int("num_layers", num_layers)
    p = check_int("num_ranks", num_ranks)
    v = check_int("chunks_per_rank", chunks_per_rank)
    if layers % (v * p):
        raise ValueError(
            f"num_layers={layers} must be a multiple of chunks_per_rank·num_ranks = {v}·{p} = "
            f"{v * p}: every chunk holds the same number of layers"
        )
    per_chunk = layers // (v * p)
    return (np.arange(layers, dtype=np.int64) // per_chunk) % p


def rank_layers(num_layers: int, num_ranks: int, chunks_per_rank: int, rank: int) -> np.ndarray:
    """Layers held by ``rank``, ascending: v runs of L/(v·p) consecutive layers, p chunks apart (pipe04)."""
    owners = layer_ranks(num_layers, num_ranks, chunks_per_rank)
    rank = check_int("rank", rank, minimum=0)
    if rank >= num_ranks:
        raise ValueError(
            f"rank must be in [0, {num_ranks - 1}] (num_ranks={num_ranks}), got {rank}"
        )
    return np.flatnonzero(owners == rank)


@dataclass(frozen=True)
class Crossings:
    """Forward hand-offs of one microbatch between consecutive chunks (the backward crosses the
    same boundaries back): to another rank, to another node, and the wrap-arounds from rank p - 1
    back to rank 0 (pipe04)."""

    between_ranks: int
    between_nodes: int
    wrap_arounds: int


def crossings_per_microbatch(
    num_ranks: int, chunks_per_rank: int, ranks_per_node: int | None = None
) -> Crossings:
    """Count, hop by hop along the v·p - 1 stage boundaries, the forward messages one microbatch
    sends to another rank, to another node, and from rank p - 1 back to rank 0 (pipe04).

    Hop k hands stage k's output to stage k + 1, from rank k % p to rank (k + 1) % p; rank r sits
    on node r // ranks_per_node (default: all ranks on one node). For p > 1 every hop changes
    rank: v·p - 1 crossings, against p - 1 without interleaving; v - 1 of them are the
    wrap-arounds from rank p - 1 to rank 0. With p = 1 every chunk is on the same rank: none.
    """
    p = check_int("num_ranks", num_ranks)
    v = check_int("chunks_per_rank", chunks_per_rank)
    g = p if ranks_per_node is None else check_int("ranks_per_node", ranks_per_node)
    if p % g:
        raise ValueError(
            f"ranks_per_node={g} must divide num_ranks={p} (whole nodes of consecutive ranks)"
        )
    ranks = stage_ranks(p, v)
    src, dst = ranks[:-1], ranks[1:]
    return Crossings(
        between_ranks=int(np.count_nonzero(src != dst)),
        between_nodes=int(np.count_nonzero(src // g != dst // g)),
        wrap_arounds=int(np.count_nonzero((src == p - 1) & (dst == 0) & (src != dst))),
    )


def interleaved_makespan(
    num_ranks: int,
    num_microbatches: int,
    chunks_per_rank: int,
    forward_time: float,
    backward_time: float,
    p2p_latency: float = 0.0,
) -> float:
    """Interleaved 1F1B step: max(v·m + p - 1, m + v·p - 1)·(t_f + t_b)/v + 2·c·δ, c = v·p - 1
    crossings (0 on one rank) (pipe04).

    Two bounds, in slots of one chunk's t_f/v + t_b/v. A rank runs v·m chunk-microbatches and
    waits p - 1 slots to fill and drain: (v·m + p - 1) slots, so the overhead relative to ideal
    compute m(t_f + t_b) is (p - 1)/(v·m) (Narayanan et al. 2021, Sec. 2.2.2). Microbatch 0
    crosses all v·p chunks in turn and the last starts m - 1 slots later: (m + v·p - 1) slots.
    The first is larger when m >= p (the (p - 1)/(v·m) regime); with m < p, which PyTorch accepts,
    the microbatches cannot fill the loop round the ranks and the chain bound sets the step.
    Exact at δ = 0 for every (p, m, v) :func:`interleaved_1f1b` accepts (tests: the simulator).

    A per-hop latency δ adds 2·c·δ — each crossing once down, once up — while it hides behind
    the other chunks' work: the simulator agrees exactly for v >= 2, m a multiple of p (or
    m < p) and δ <= min(t_f, t_b)/v. Elsewhere (plain 1F1B, whose steady state waits on every
    message; PyTorch's groups of more than p microbatches; a δ longer than a chunk) the latency
    costs more, and this raises ValueError: simulate the schedule instead.
    """
    p, m, v = check_interleaved_shape(num_ranks, num_microbatches, chunks_per_rank)
    t_f = check_duration("forward_time", forward_time)
    t_b = check_duration("backward_time", backward_time)
    delta = check_duration("p2p_latency", p2p_latency)
    compute = max(v * m + p - 1, m + v * p - 1) * (t_f + t_b) / v
    if delta == 0.0 or p == 1:
        return compute
    if v == 1:
        raise ValueError(
            "with p2p_latency > 0 and chunks_per_rank=1 (plain 1F1B) every steady-state message "
            "waits on a neighbour; the closed form does not hold: simulate the schedule instead"
        )
    if m % p and m > p:
        raise ValueError(
            f"with p2p_latency > 0 and num_microbatches={m} (not a multiple of num_ranks={p}: "
            "PyTorch's longer groups) the closed form does not hold: simulate the schedule instead"
        )
    if delta > min(t_f, t_b) / v:
        raise ValueError(
            f"p2p_latency={delta} s is longer than a chunk's min(t_f, t_b)/v = "
            f"{min(t_f, t_b) / v} s: it no longer hides and the closed form does not hold; "
            "simulate the schedule instead"
        )
    return compute + 2 * (v * p - 1) * delta


def step_times(
    num_ranks: int,
    num_microbatches: int,
    forward_time: float,
    backward_time: float,
    p2p_latency: float | list[float] | np.ndarray = 0.0,
    chunks: Iterable[int] = (1, 2, 4),
) -> dict[int, float]:
    """Simulated step time (s) for each v in ``chunks``: simulate(interleaved_1f1b(p, m, v),
    t_f/v, t_b/v, p2p_latency) (pipe04).

    ``p2p_latency`` is one latency for every hop between ranks (seconds) — a message costs the
    same whatever v, since the activation at a cut has the same size — or, for a single v, one
    latency per hop of its v·p - 1.
    """
    p = check_int("num_ranks", num_ranks)
    m = check_int("num_microbatches", num_microbatches)
    t_f = check_duration("forward_time", forward_time)
    t_b = check_duration("backward_time", backward_time)
    if isinstance(chunks, str | bytes) or not isinstance(chunks, Iterable):
        raise TypeError(f"chunks must be a sequence of chunks_per_rank values, got {chunks!r}")
    values = [check_int("chunks", v) for v in chunks]
    if not values:
        raise ValueError("chunks must name at least one chunks_per_rank value")
    if len(set(values)) != len(values):
        raise ValueError(f"chunks repeats a value: {values}")
    times = {}
    for v in values:
        schedule = interleaved_1f1b(p, m, v)  # raises, naming (p, m, v), if not accepted
        latency = check_hop_latencies("p2p_latency", p2p_latency, v * p)
        times[v] = simulate(schedule, t_f / v, t_b / v, p2p_latency=latency).makespan
    return times


def best_chunks_per_rank(
    num_ranks: int,
    num_microbatches: int,
    forward_time: float,
    backward_time: float,
    p2p_latency: float = 0.0,
    chunks: Iterable[int] = (1, 2, 4),
) -> int:
    """The v in ``chunks`` with the shortest simulated step (:func:`step_times`); the smallest v
    among steps equal to within 1e-9 relative (pipe04). At zero latency that is the largest v:
    the bubble (p - 1)(t_f + t_b)/v only shrinks; a latency makes every extra crossing cost."""
    times = step_times(
        num_ranks, num_microbatches, forward_time, backward_time, p2p_latency, chunks
    )
    shortest = min(times.values())
    return min(v for v, t in times.items() if t <= shortest * (1 + 1e-9))


@dataclass(frozen=True)
class Acceptance:
    """Whether Megatron-LM and PyTorch 2.13 run interleaved 1F1B at (p, m, v), and why (pipe04).

    ``rounds`` = max(1, m // p) and ``group_size`` = m // rounds are PyTorch's (the microbatches
    a chunk runs in a row); ``overhead_formula_holds`` says whether the simulated overhead is
    (p - 1)/(v·m) (m >= p, or v = 1), ``reason`` explains the verdicts in a sentence or two.
    """

    num_ranks: int
    num_microbatches: int
    chunks_per_rank: int
    megatron: bool
    pytorch: bool
    rounds: int
    group_size: int
    overhead_formula_holds: bool
    reason: str


def acceptance(num_ranks: int, num_microbatches: int, chunks_per_rank: int) -> Acceptance:
    """Megatron-LM's and PyTorch 2.13's rules for interleaved 1F1B at (p, m, v), explained (pipe04).

    Megatron-LM (``forward_backward_pipelining_with_interleaving`` at commit 00611e6,
    :data:`MEGATRON_LM_COMMIT`, with its default microbatch group size N = p): v > 1 needs m to be
    a multiple of p; v = 1 runs the plain 1F1B schedule, any m. PyTorch 2.13
    (``torch.distributed.pipelining.ScheduleInterleaved1F1B``):
    rounds = max(1, m // p) and m % rounds == 0, whatever v — so p = 4 takes m = 10 (2 rounds of
    5) and m = 3 (1 round), and refuses m = 9. The course's interleaved_1f1b accepts what PyTorch
    accepts (and any m at v = 1).
    """
    p = check_int("num_ranks", num_ranks)
    m = check_int("num_microbatches", num_microbatches)
    v = check_int("chunks_per_rank", chunks_per_rank)
    rounds = max(1, m // p)
    megatron = v == 1 or m % p == 0
    pytorch = m % rounds == 0
    holds = v == 1 or m >= p
    why_class = " (its ScheduleInterleaved1F1B; Schedule1F1B takes any m)" if v == 1 else ""
    if v == 1:
        why_megatron = "v = 1 is Megatron's plain 1F1B schedule, any m"
    elif megatron:
        why_megatron = f"m = {m} is a multiple of p = {p}"
    else:
        why_megatron = f"m = {m} is not a multiple of p = {p}"
    verdict = "accepts" if pytorch else "refuses"
    why_pytorch = (
        f"PyTorch {verdict}{why_class}: rounds = max(1, {m} // {p}) = {rounds}, and "
        f"{m} % {rounds} = {m % rounds}"
    )
    reason = f"Megatron-LM {'accepts' if megatron else 'refuses'}: {why_megatron}. {why_pytorch}."
    if pytorch and not holds:
        reason += (
            f" With m < p the loop of {p} ranks is longer than the {m} microbatches that fill it: "
            f"the step is (m + v·p - 1) chunk slots, more than (p - 1)/(v·m) predicts."
        )
    return Acceptance(p, m, v, megatron, pytorch, rounds, m // rounds, holds, reason)


def rank_stash(timeline: Timeline, rank: int) -> tuple[np.ndarray, np.ndarray]:
    """Live activation stashes of all the chunks on ``rank`` as a step function: counts[k] chunk
    stashes on [times[k], times[k+1]); one chunk's stash is 1/v of a microbatch's (pipe04).

    The sum of Timeline.in_flight over the rank's stages (a stash freed and another created at
    the same instant are netted there, as in_flight does).
    """
    schedule = timeline.schedule
    rank = check_int("rank", rank, minimum=0)
    if rank >= schedule.num_ranks:
        raise ValueError(
            f"rank must be in [0, {schedule.num_ranks - 1}] (num_ranks={schedule.num_ranks}), "
            f"got {rank}"
        )
    stages = range(rank, schedule.num_stages, schedule.num_ranks)
    curves = [timeline.in_flight(stage) for stage in stages]
    edges = np.concatenate([t for t, _ in curves])
    steps = np.concatenate([np.diff(np.r_[0, c]) for _, c in curves])
    times, inverse = np.unique(edges, return_inverse=True)
    net = np.bincount(inverse.ravel(), weights=steps, minlength=len(times))
    return times, np.cumsum(net).astype(np.int64)


def peak_rank_stash(num_ranks: int, num_microbatches: int, chunks_per_rank: int) -> float:
    """Peak activations stashed on rank 0 under interleaved 1F1B, in microbatches (pipe04).

    Rank 0 runs w = min(v·m, 2(p - 1) + (v - 1)·g) warm-up chunk forwards (g = m // max(1, m // p)
    microbatches per round, p when p divides m; w = min(m, p - 1) at v = 1, plain 1F1B) before its
    first backward, then one more forward: min(v·m, w + 1) chunk stashes of 1/v of a microbatch
    each. Exact against the simulator (:func:`rank_stash`) for every accepted (p, m, v) (tests).

    The rule p + (p - 1)/v (against p for 1F1B: interleaving stashes more, not less) is this
    value only for v >= 2 with m a multiple of p and m >= 2p (or p = 1): then w + 1 = v·p + p - 1
    <= v·m. At m = p the warm-up 2(p - 1) + (v - 1)·p reaches v·m, every chunk forward is warm-up
    and the peak is p (p = 4, m = 4, v = 2: 4, not 5.5); :func:`stash_rule_holds` says which
    case applies. Refused (p, m, v) raise ValueError naming the rule (PyTorch 2.13's).
    """
    p, m, v = check_interleaved_shape(num_ranks, num_microbatches, chunks_per_rank)
    if v == 1:
        return float(min(m, p))
    group = m // max(1, m // p)
    warmup = min(v * m, 2 * (p - 1) + (v - 1) * group)
    return min(v * m, warmup + 1) / v


def stash_rule_holds(num_ranks: int, num_microbatches: int, chunks_per_rank: int) -> bool:
    """Whether rank 0's peak stash is p + (p - 1)/v microbatches (pipe04): v >= 2, m a multiple
    of p and m >= 2p, or a single rank. At m = p every chunk forward is warm-up and the peak is p;
    PyTorch's groups of more than p microbatches (m not a multiple of p) peak elsewhere
    (:func:`peak_rank_stash` gives every case). Refused (p, m, v) raise ValueError."""
    p, m, v = check_interleaved_shape(num_ranks, num_microbatches, chunks_per_rank)
    return v >= 2 and (p == 1 or (m % p == 0 and m >= 2 * p))
