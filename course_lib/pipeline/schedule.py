"""A pipeline schedule as data: the IR and its generators (pipe02-pipe04).

Generators: gpipe (fill-drain), one_f_one_b (synchronous 1F1B), interleaved_1f1b (Megatron-LM's
interleaved 1F1B over virtual chunks) and zero_bubble_h1 (ZB-H1, split backward).

A :class:`Schedule` lists, for every rank, the ordered :class:`Action` s that rank executes. Stages
are global indices 0..num_stages-1 and stage k lives on rank ``k % num_ranks``; with
``num_stages == num_ranks`` (one stage per rank) this is the plain pipeline, with
``num_stages == num_ranks * chunks_per_rank`` it is the looping placement of interleaved
schedules (pipe04). Kind ``"B"`` is the full backward, or only the input-gradient part when the
schedule also has ``"W"`` (weight-gradient) actions, as in split-backward (zero-bubble) schedules.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ._validate import check_int, check_pipeline_shape

KINDS: tuple[str, ...] = ("F", "B", "W")
"""Action kinds: forward, backward (input gradient when split), weight gradient."""


@dataclass(frozen=True)
class Action:
    """One unit of work: ``kind`` ("F", "B" or "W") of microbatch ``microbatch`` on ``stage`` (pipe02)."""

    kind: str
    stage: int
    microbatch: int

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"Action kind must be one of {KINDS}, got {self.kind!r}")
        stage = check_int("Action stage", self.stage, minimum=0)
        microbatch = check_int("Action microbatch", self.microbatch, minimum=0)
        if stage is not self.stage:  # a numpy integer, stored as an int
            object.__setattr__(self, "stage", stage)
        if microbatch is not self.microbatch:
            object.__setattr__(self, "microbatch", microbatch)

    def __str__(self) -> str:
        return f"{self.kind}(s{self.stage},m{self.microbatch})"


@dataclass(frozen=True)
class Schedule:
    """Per-rank ordered action lists; stage k runs on rank k % num_ranks (pipe02)."""

    num_stages: int
    num_microbatches: int
    num_ranks: int
    actions: tuple[tuple[Action, ...], ...]
    name: str = ""

    def __post_init__(self) -> None:
        check_pipeline_shape(self.num_stages, self.num_microbatches)
        check_int("num_ranks", self.num_ranks)
        if self.num_stages % self.num_ranks:
            raise ValueError(
                f"num_ranks={self.num_ranks} must divide num_stages={self.num_stages} "
                "(each rank holds num_stages // num_ranks chunks)"
            )
        if isinstance(self.actions, str | bytes) or not isinstance(self.actions, Sequence):
            raise TypeError(
                f"actions must be a sequence of per-rank action sequences, got {self.actions!r}"
            )
        if len(self.actions) != self.num_ranks:
            raise ValueError(
                f"actions has {len(self.actions)} per-rank lists but num_ranks={self.num_ranks}"
            )
        frozen = tuple(tuple(rank_actions) for rank_actions in self.actions)
        for rank, rank_actions in enumerate(frozen):
            for position, action in enumerate(rank_actions):
                self._check_action(rank, position, action)
        object.__setattr__(self, "actions", frozen)

    def _check_action(self, rank: int, position: int, action: object) -> None:
        where = f"rank {rank}, position {position}"
        if not isinstance(action, Action):
            raise ValueError(f"{where}: expected an Action, got {action!r}")
        if action.kind not in KINDS:  # Action checks this too; guards object.__setattr__ edits
            raise ValueError(f"{where}: {action} has kind {action.kind!r}, not one of {KINDS}")
        if not 0 <= action.stage < self.num_stages:
            raise ValueError(
                f"{where}: {action} has stage {action.stage} outside [0, {self.num_stages - 1}]"
            )
        if not 0 <= action.microbatch < self.num_microbatches:
            raise ValueError(
                f"{where}: {action} has microbatch {action.microbatch} outside "
                f"[0, {self.num_microbatches - 1}]"
            )
        owner = self.rank_of(action.stage)
        if owner != rank:
            raise ValueError(
                f"{where}: {action} is on rank {rank} but stage {action.stage} lives on rank {owner}"
            )

    @property
    def chunks_per_rank(self) -> int:
        """Stages (virtual chunks) held by each rank: num_stages // num_ranks (pipe04)."""
        return self.num_stages // self.num_ranks

    @property
    def has_weight_actions(self) -> bool:
        """True if the schedule splits the backward: it has at least one "W" action."""
        return any(action.kind == "W" for rank_actions in self.actions for action in rank_actions)

    def rank_of(self, stage: int) -> int:
        """The rank that owns global stage ``stage``: stage % num_ranks (pipe04)."""
        return stage % self.num_ranks

    def __str__(self) -> str:
        header = (
            f"{self.name or 'schedule'}: {self.num_stages} stages, {self.num_microbatches} "
            f"microbatches, {self.num_ranks} ranks"
        )
        rows = [
            f"rank {rank}: " + " ".join(str(action) for action in rank_actions)
            for rank, rank_actions in enumerate(self.actions)
        ]
        return "\n".join([header, *rows])


def gpipe(num_stages: int, num_microbatches: int) -> Schedule:
    """Fill-drain (GPipe, Huang et al. 2019): each stage runs F0..F(m-1), then B0..B(m-1) (pipe02).

    The backward order 0..m-1 is that of PyTorch's ``torch.distributed.pipelining.ScheduleGPipe``;
    the GPipe paper's figure draws the backwards in reverse microbatch order, which has the same
    makespan for balanced stages. One stage per rank.
    """
    p, m = check_pipeline_shape(num_stages, num_microbatches)
    actions = tuple(
        tuple(Action("F", s, j) for j in range(m)) + tuple(Action("B", s, j) for j in range(m))
        for s in range(p)
    )
    return Schedule(p, m, p, actions, name="GPipe")


def _one_f_one_b_stage(num_stages: int, num_microbatches: int, stage: int) -> tuple[Action, ...]:
    """Stage s of 1F1B: w = min(m, p-s-1) warm-up forwards, alternate F(w+i), B(i), cool down."""
    p, m, s = num_stages, num_microbatches, stage
    warmup = min(m, p - s - 1)
    order = [Action("F", s, j) for j in range(warmup)]
    for i in range(m - warmup):
        order += [Action("F", s, warmup + i), Action("B", s, i)]
    order += [Action("B", s, j) for j in range(m - warmup, m)]
    return tuple(order)


def one_f_one_b(num_stages: int, num_microbatches: int) -> Schedule:
    """Synchronous 1F1B (PipeDream-Flush): stage s runs min(m, p-s-1) warm-up F, then F/B, then B (pipe03).

    Stage s runs w = min(m, p - s - 1) warm-up forwards F0..F(w-1), then alternates F(w+i), B(i)
    for i = 0..m-w-1, then cools down with the remaining backwards B(m-w)..B(m-1) in order
    (Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters Using
    Megatron-LM", Fig. 4 top; the same order as PyTorch's ``Schedule1F1B``). One stage per rank.
    """
    p, m = check_pipeline_shape(num_stages, num_microbatches)
    actions = tuple(_one_f_one_b_stage(p, m, s) for s in range(p))
    return Schedule(p, m, p, actions, name="1F1B")


def check_interleaved_shape(
    num_ranks: object, num_microbatches: object, chunks_per_rank: object
) -> tuple[int, int, int]:
    """Validate (p, m, v) for :func:`interleaved_1f1b` and return them as ints.

    Accepted: v = 1 with any m (plain 1F1B); v > 1 with rounds = max(1, m // p) dividing m — the
    rule of PyTorch 2.13's ``ScheduleInterleaved1F1B``, which contains Megatron-LM's m % p == 0.
    """
    p = check_int("num_ranks", num_ranks)
    m = check_int("num_microbatches", num_microbatches)
    v = check_int("chunks_per_rank", chunks_per_rank)
    rounds = max(1, m // p)
    if v > 1 and m % rounds:
        below, above = rounds * (m // rounds), rounds * (m // rounds + 1)
        raise ValueError(
            f"num_microbatches={m} is not accepted with num_ranks={p}, chunks_per_rank={v}: "
            f"the interleaved schedule runs rounds = max(1, m // p) = {rounds} rounds of equal "
            f"size, so m must be a multiple of {rounds} (PyTorch 2.13's rule; Megatron-LM asks "
            f"m % p == 0) — e.g. m = {below} or {above}, any m < {2 * p}, or a multiple of p={p}"
        )
    return p, m, v


def _interleaved_rank(p: int, m: int, v: int, rank: int) -> tuple[Action, ...]:
    """Rank ``rank`` of interleaved 1F1B: warm-up forwards, F/B pairs, cooldown backwards.

    g = m // max(1, m // p) microbatches per round (g = p when p divides m). The k-th forward runs
    chunk (k // g) % v on microbatch (k // (g v)) g + k % g; the k-th backward the same microbatch
    of chunk v - 1 - (k // g) % v. Warm-up: min(m v, 2 (p - rank - 1) + (v - 1) g) forwards.
    """
    g = m // max(1, m // p)
    total = m * v
    warmup = min(total, 2 * (p - rank - 1) + (v - 1) * g)

    def forward(k: int) -> Action:
        return Action("F", ((k // g) % v) * p + rank, (k // (g * v)) * g + k % g)

    def backward(k: int) -> Action:
        return Action("B", (v - 1 - (k // g) % v) * p + rank, (k // (g * v)) * g + k % g)

    order = [forward(k) for k in range(warmup)]
    for k in range(total - warmup):
        order += [forward(warmup + k), backward(k)]
    order += [backward(k) for k in range(total - warmup, total)]
    return tuple(order)


def interleaved_1f1b(num_ranks: int, num_microbatches: int, chunks_per_rank: int) -> Schedule:
    """Interleaved 1F1B (Narayanan et al. 2021, Sec. 2.2.2, Fig. 4 bottom) over v chunks per rank (pipe04).

    p = num_ranks, m = num_microbatches, v = chunks_per_rank; num_stages = v·p and global stage k
    (chunk k // p) lives on rank k % p. Per rank, in the order of Megatron-LM's
    ``forward_backward_pipelining_with_interleaving`` (megatron/core/pipeline_parallel/
    schedules.py, default microbatch group size p): w = min(m·v, 2(p - rank - 1) + (v - 1)·p)
    warm-up forwards, then one forward and one backward alternately, then the remaining backwards.
    Microbatches go in groups of p per chunk: the k-th forward runs chunk (k // p) % v on
    microbatch (k // (p·v))·p + k % p; backwards visit the chunks in reverse (v - 1 - (k // p) % v).

    Accepted (p, m, v): v = 1 with any m returns :func:`one_f_one_b` (p, m) itself (Megatron
    runs the plain schedule without virtual stages); v > 1 needs rounds = max(1, m // p) to divide
    m, the rule of PyTorch 2.13's ``ScheduleInterleaved1F1B`` (e.g. p = 4 accepts m = 10 and
    m = 3). Megatron-LM requires m % p == 0; for those m both give the same order. For PyTorch's
    extra m the groups have g = m // rounds microbatches instead of p (g replaces p in the
    formulas above) — PyTorch 2.13's per-rank order, checked action for action by
    scripts/check_interleaved_against_torch.py. Anything else raises ValueError naming the
    argument; chunks_per_rank < 1 too.
    """
    p, m, v = check_interleaved_shape(num_ranks, num_microbatches, chunks_per_rank)
    if v == 1:
        return one_f_one_b(p, m)
    actions = tuple(_interleaved_rank(p, m, v, rank) for rank in range(p))
    return Schedule(v * p, m, p, actions, name="interleaved 1F1B")


def _zero_bubble_h1_stage(p: int, m: int, s: int) -> tuple[Action, ...]:
    """Stage s of ZB-H1: the 1F1B order with B the input gradient, W(j) right after B(j + s)."""
    warmup = min(m, p - s - 1)
    order = [Action("F", s, j) for j in range(warmup)]

    def backward(k: int) -> list[Action]:
        done = [Action("B", s, k)]
        if k >= s:  # W waits s backwards: the delay that fills the drain of later stages
            done.append(Action("W", s, k - s))
        return done

    for k in range(m - warmup):
        order += [Action("F", s, warmup + k), *backward(k)]
    for k in range(m - warmup, m):
        order += backward(k)
    order += [Action("W", s, j) for j in range(max(0, m - s), m)]
    return tuple(order)


def zero_bubble_h1(num_stages: int, num_microbatches: int) -> Schedule:
    """ZB-H1 (Qi et al. 2024, "Zero Bubble Pipeline Parallelism", ICLR 2024, Sec. 2.1, Fig. 3 top) (pipe04).

    The backward is split into B (input gradient, on the critical path) and W (weight gradient,
    free to move). Stage s keeps 1F1B's order of F and B — min(m, p - s - 1) warm-up forwards,
    then F/B alternation, then the remaining B — and runs W(j) right after B(j + s): the W
    passes start s microbatches late, so every stage holds the same number of stashes as the
    first (counted until W), and the deferred W fill the drain bubble. The last s W run at the
    end. This is the order PyTorch 2.13's ``ScheduleInterleavedZeroBubble`` gives one stage per
    rank. One stage per rank.
    """
    p, m = check_pipeline_shape(num_stages, num_microbatches)
    actions = tuple(_zero_bubble_h1_stage(p, m, s) for s in range(p))
    return Schedule(p, m, p, actions, name="ZB-H1")
