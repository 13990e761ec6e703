"""A pipeline schedule as data: the IR and the GPipe and 1F1B generators (pipe02, pipe03).

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
