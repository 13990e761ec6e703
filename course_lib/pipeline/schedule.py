"""A pipeline schedule as data: the IR and its generators (pipe02-pipe04).

Generators: gpipe (fill-drain), one_f_one_b (synchronous 1F1B), interleaved_1f1b (Megatron-LM's
interleaved 1F1B over virtual chunks) and zero_bubble_h1 (ZB-H1, split backward).

A :class:`Schedule` lists, for every rank, the ordered :class:`Action` s that rank executes. Stages
are global indices 0..num_stages-1 and stage k lives on rank ``k % num_ranks``; with
``num_stages == num_ranks`` (one stage per rank) this is the plain pipeline, with
``num_stages == num_ranks * chunks_per_rank`` it is the looping placement of interleaved
schedules (pipe04). Kind ``"B"`` is the full backward, or only the input-gradient part when the
schedule also has ``"W"`` (weight-gradient) actions, as in split-backward (zero-bubble) schedules.

Inside, a Schedule is columns (numpy arrays of kind code, stage and microbatch over all actions in
rank order, plus per-rank offsets); the generators build those arrays directly, vectorized, and
the Action tuples of ``Schedule.actions`` are materialized only when read — so
interleaved_1f1b(64, 512, 4) (262,144 actions) is built in about 10 ms. ``Schedule(...)`` from
Action lists keeps its checks and messages; both paths are validated with vectorized checks that
name the first bad action by rank and position.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

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


_KIND_CODE: dict[str, int] = {kind: code for code, kind in enumerate(KINDS)}


def _readonly(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


def _fast_action(kind: str, stage: int, microbatch: int) -> Action:
    """An Action from values already checked (skips __post_init__; same object otherwise)."""
    action = object.__new__(Action)
    action.__dict__.update(kind=kind, stage=stage, microbatch=microbatch)
    return action


@dataclass(frozen=True, eq=False)
class Schedule:
    """Per-rank ordered action lists; stage k runs on rank k % num_ranks (pipe02).

    Stored as columns: one flat array each of kind code (index into KINDS), stage and microbatch
    over all actions in rank order, and per-rank offsets into them. ``actions`` — per-rank tuples
    of :class:`Action` — is kept when the schedule is built from Actions and materialized on first
    access when a generator built the columns directly (it is the same value either way). Two
    schedules are equal when their shape, name and every rank's action list are.
    """

    num_stages: int
    num_microbatches: int
    num_ranks: int
    actions: tuple[tuple[Action, ...], ...]
    name: str = ""

    def __post_init__(self) -> None:
        self._check_shape()
        if isinstance(self.actions, str | bytes) or not isinstance(self.actions, Sequence):
            raise TypeError(
                f"actions must be a sequence of per-rank action sequences, got {self.actions!r}"
            )
        if len(self.actions) != self.num_ranks:
            raise ValueError(
                f"actions has {len(self.actions)} per-rank lists but num_ranks={self.num_ranks}"
            )
        frozen = tuple(tuple(rank_actions) for rank_actions in self.actions)
        object.__setattr__(self, "actions", frozen)
        flat = [action for rank_actions in frozen for action in rank_actions]
        lengths = [len(rank_actions) for rank_actions in frozen]
        if not all(type(action) is Action for action in flat):
            self._raise_first_bad(frozen)  # not an Action (or a subclass): check one by one
        kind = np.array([_KIND_CODE.get(a.kind, -1) for a in flat], dtype=np.int8)
        stage = np.array([a.stage for a in flat])
        microbatch = np.array([a.microbatch for a in flat])
        if len(flat) and not (stage.dtype.kind == microbatch.dtype.kind == "i"):
            self._raise_first_bad(frozen)  # an Action edited to a non-int index
        offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        self._set_columns(kind, stage.astype(np.int64), microbatch.astype(np.int64), offsets)
        if self._first_bad() >= 0:
            self._raise_first_bad(frozen)

    @classmethod
    def _from_columns(
        cls,
        num_stages: int,
        num_microbatches: int,
        num_ranks: int,
        kind: np.ndarray,
        stage: np.ndarray,
        microbatch: np.ndarray,
        offsets: np.ndarray,
        name: str = "",
    ) -> Schedule:
        """A schedule straight from its columns (rank order; offsets delimit the ranks), checked
        by vectorized validation with the errors of the Action path; ``actions`` comes lazily."""
        self = object.__new__(cls)
        for field, value in (
            ("num_stages", num_stages),
            ("num_microbatches", num_microbatches),
            ("num_ranks", num_ranks),
            ("name", name),
        ):
            object.__setattr__(self, field, value)
        self._check_shape()
        self._set_columns(
            np.asarray(kind, dtype=np.int8),
            np.asarray(stage, dtype=np.int64),
            np.asarray(microbatch, dtype=np.int64),
            np.asarray(offsets, dtype=np.int64),
        )
        bad = self._first_bad()
        if bad >= 0:
            rank = int(np.searchsorted(self._offsets, bad, side="right")) - 1
            code, stage_, microbatch_ = (int(c[bad]) for c in self._columns)
            kind_ = KINDS[code] if 0 <= code < len(KINDS) else f"<kind code {code}>"
            self._check_action(
                rank, bad - int(self._offsets[rank]), kind_, stage_, microbatch_,
                f"{kind_}(s{stage_},m{microbatch_})",
            )  # fmt: skip
        return self

    def _check_shape(self) -> None:
        check_pipeline_shape(self.num_stages, self.num_microbatches)
        check_int("num_ranks", self.num_ranks)
        if self.num_stages % self.num_ranks:
            raise ValueError(
                f"num_ranks={self.num_ranks} must divide num_stages={self.num_stages} "
                "(each rank holds num_stages // num_ranks chunks)"
            )

    def _set_columns(
        self, kind: np.ndarray, stage: np.ndarray, microbatch: np.ndarray, offsets: np.ndarray
    ) -> None:
        object.__setattr__(self, "_columns", tuple(_readonly(c) for c in (kind, stage, microbatch)))
        object.__setattr__(self, "_offsets", _readonly(offsets))

    def _first_bad(self) -> int:
        """Flat index of the first action (rank order) that fails a check, or -1."""
        kind, stage, microbatch = self._columns
        ranks = np.repeat(np.arange(self.num_ranks, dtype=np.int64), np.diff(self._offsets))
        bad = (
            (kind < 0)
            | (kind >= len(KINDS))
            | (stage < 0)
            | (stage >= self.num_stages)
            | (microbatch < 0)
            | (microbatch >= self.num_microbatches)
            | (stage % self.num_ranks != ranks)
        )
        return int(np.argmax(bad)) if bad.any() else -1

    def _raise_first_bad(self, frozen: tuple[tuple[object, ...], ...]) -> None:
        """Walk the actions in rank order and raise the first problem (the error path)."""
        for rank, rank_actions in enumerate(frozen):
            for position, action in enumerate(rank_actions):
                if not isinstance(action, Action):
                    raise ValueError(
                        f"rank {rank}, position {position}: expected an Action, got {action!r}"
                    )
                self._check_action(
                    rank, position, action.kind, action.stage, action.microbatch, str(action)
                )

    def _check_action(
        self, rank: int, position: int, kind: str, stage: int, microbatch: int, label: str
    ) -> None:
        where = f"rank {rank}, position {position}"
        if kind not in KINDS:  # Action checks this too; guards object.__setattr__ edits
            raise ValueError(f"{where}: {label} has kind {kind!r}, not one of {KINDS}")
        if not 0 <= stage < self.num_stages:
            raise ValueError(
                f"{where}: {label} has stage {stage} outside [0, {self.num_stages - 1}]"
            )
        if not 0 <= microbatch < self.num_microbatches:
            raise ValueError(
                f"{where}: {label} has microbatch {microbatch} outside "
                f"[0, {self.num_microbatches - 1}]"
            )
        owner = self.rank_of(stage)
        if owner != rank:
            raise ValueError(
                f"{where}: {label} is on rank {rank} but stage {stage} lives on rank {owner}"
            )

    def __getattr__(self, name: str) -> object:
        if name != "actions":  # only a missing ``actions`` is computed; anything else is absent
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        kind, stage, microbatch = (c.tolist() for c in self._columns)
        letters = [KINDS[k] for k in kind]
        offsets = self._offsets.tolist()
        actions = tuple(
            tuple(map(_fast_action, letters[lo:hi], stage[lo:hi], microbatch[lo:hi]))
            for lo, hi in zip(offsets[:-1], offsets[1:], strict=True)
        )
        object.__setattr__(self, "actions", actions)
        return actions

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Schedule):
            return NotImplemented
        return (
            (self.num_stages, self.num_microbatches, self.num_ranks, self.name)
            == (other.num_stages, other.num_microbatches, other.num_ranks, other.name)
            and np.array_equal(self._offsets, other._offsets)
            and all(
                np.array_equal(a, b) for a, b in zip(self._columns, other._columns, strict=True)
            )
        )

    def __hash__(self) -> int:
        return hash(
            (
                self.num_stages,
                self.num_microbatches,
                self.num_ranks,
                self.name,
                self._offsets.tobytes(),
            )
            + tuple(c.tobytes() for c in self._columns)
        )

    @property
    def chunks_per_rank(self) -> int:
        """Stages (virtual chunks) held by each rank: num_stages // num_ranks (pipe04)."""
        return self.num_stages // self.num_ranks

    @property
    def has_weight_actions(self) -> bool:
        """True if the schedule splits the backward: it has at least one "W" action."""
        return bool((self._columns[0] == _KIND_CODE["W"]).any())

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


def _alternate(warmup: np.ndarray, total: int) -> tuple[np.ndarray, np.ndarray]:
    """Positions of the k-th forward and k-th backward (k = 0..total-1) in a 1F1B-shaped order
    per row: ``warmup[r]`` forwards, then one forward and one backward alternately, then the
    remaining backwards — arrays of shape (rows, total), positions in 0..2·total-1."""
    k = np.arange(total, dtype=np.int64)[None, :]
    w = np.asarray(warmup, dtype=np.int64)[:, None]
    forward = np.where(k < w, k, 2 * k - w)
    backward = np.where(k < total - w, w + 2 * k + 1, total + k)
    return forward, backward


def _fill(rows: int, length: int, placed: list[tuple[np.ndarray, int, np.ndarray, np.ndarray]]):
    """(kind, stage, microbatch) arrays of shape (rows, length) with each (positions, kind code,
    stages, microbatches) block scattered into its positions, row by row."""
    kind = np.empty((rows, length), dtype=np.int8)
    stage = np.empty((rows, length), dtype=np.int64)
    microbatch = np.empty((rows, length), dtype=np.int64)
    row = np.arange(rows)[:, None]
    for positions, code, stages, microbatches in placed:
        kind[row, positions] = code
        stage[row, positions] = stages
        microbatch[row, positions] = microbatches
    return kind.ravel(), stage.ravel(), microbatch.ravel()


def _uniform_offsets(rows: int, length: int) -> np.ndarray:
    return np.arange(rows + 1, dtype=np.int64) * length


def gpipe(num_stages: int, num_microbatches: int) -> Schedule:
    """Fill-drain (GPipe, Huang et al. 2019): each stage runs F0..F(m-1), then B0..B(m-1) (pipe02).

    The backward order 0..m-1 is that of PyTorch's ``torch.distributed.pipelining.ScheduleGPipe``;
    the GPipe paper's figure draws the backwards in reverse microbatch order, which has the same
    makespan for balanced stages. One stage per rank.
    """
    p, m = check_pipeline_shape(num_stages, num_microbatches)
    return _one_stage_per_rank(p, m, np.full(p, m), "GPipe")


def _one_stage_per_rank(p: int, m: int, warmup: np.ndarray, name: str) -> Schedule:
    """Stage s on rank s: ``warmup[s]`` forwards, then F/B alternation, then the backwards, each
    kind in microbatch order (GPipe: warm-up m; 1F1B: min(m, p - s - 1))."""
    forward, backward = _alternate(warmup, m)
    stages = np.arange(p, dtype=np.int64)[:, None]
    microbatches = np.arange(m, dtype=np.int64)[None, :]
    columns = _fill(
        p, 2 * m, [(forward, 0, stages, microbatches), (backward, 1, stages, microbatches)]
    )
    return Schedule._from_columns(p, m, p, *columns, _uniform_offsets(p, 2 * m), name=name)


def one_f_one_b(num_stages: int, num_microbatches: int) -> Schedule:
    """Synchronous 1F1B (PipeDream-Flush): stage s runs min(m, p-s-1) warm-up F, then F/B, then B (pipe03).

    Stage s runs w = min(m, p - s - 1) warm-up forwards F0..F(w-1), then alternates F(w+i), B(i)
    for i = 0..m-w-1, then cools down with the remaining backwards B(m-w)..B(m-1) in order
    (Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters Using
    Megatron-LM", Fig. 4 top; the same order as PyTorch's ``Schedule1F1B``). One stage per rank.
    """
    p, m = check_pipeline_shape(num_stages, num_microbatches)
    return _one_stage_per_rank(p, m, np.minimum(m, p - np.arange(p) - 1), "1F1B")


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


def interleaved_1f1b(num_ranks: int, num_microbatches: int, chunks_per_rank: int) -> Schedule:
    """Interleaved 1F1B (Narayanan et al. 2021, Sec. 2.2.2, Fig. 4 bottom) over v chunks per rank (pipe04).

    p = num_ranks, m = num_microbatches, v = chunks_per_rank; num_stages = v·p and global stage k
    (chunk k // p) lives on rank k % p. Per rank, in the order of Megatron-LM's
    ``forward_backward_pipelining_with_interleaving`` (megatron/core/pipeline_parallel/
    schedules.py at NVIDIA/Megatron-LM commit 00611e6, 2025, default microbatch group size p; the 2022 megatron/schedules.py
    differs only for m == p, where every rank ran all forwards first): w = min(m·v,
    2(p - rank - 1) + (v - 1)·p)
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

    With per-chunk costs t_f/v, t_b/v and zero latency the simulated overhead is exactly
    (p - 1)/(v·m) for every accepted m >= p, and larger for m < p (see
    :func:`course_lib.pipeline.formulas.interleaved_overhead`); each microbatch crosses v·p - 1
    rank boundaries each way (:func:`course_lib.pipeline.formulas.boundary_crossings`).
    """
    p, m, v = check_interleaved_shape(num_ranks, num_microbatches, chunks_per_rank)
    if v == 1:
        return one_f_one_b(p, m)
    g = m // max(1, m // p)  # microbatches per round: p when p divides m
    total = m * v
    rank = np.arange(p, dtype=np.int64)[:, None]
    warmup = np.minimum(total, 2 * (p - rank[:, 0] - 1) + (v - 1) * g)
    forward, backward = _alternate(warmup, total)
    k = np.arange(total, dtype=np.int64)[None, :]
    chunk = (k // g) % v
    microbatch = (k // (g * v)) * g + k % g
    columns = _fill(
        p,
        2 * total,
        [
            (forward, 0, chunk * p + rank, microbatch),
            (backward, 1, (v - 1 - chunk) * p + rank, microbatch),
        ],
    )
    return Schedule._from_columns(
        v * p, m, p, *columns, _uniform_offsets(p, 2 * total), name="interleaved 1F1B"
    )


def zero_bubble_h1(num_stages: int, num_microbatches: int) -> Schedule:
    """ZB-H1 (Qi et al. 2024, "Zero Bubble Pipeline Parallelism", ICLR 2024, Sec. 2.1, Fig. 3 top) (pipe04).

    The backward is split into B (input gradient, on the critical path) and W (weight gradient,
    free to move). Stage s keeps 1F1B's order of F and B — min(m, p - s - 1) warm-up forwards,
    then F/B alternation, then the remaining B — and runs W(j) right after B(j + s): the W
    passes start s microbatches late, so every stage holds the same number of stashes as the
    first (counted until W), and the deferred W fill the drain bubble. The last s W run at the
    end. This is the order PyTorch 2.13's ``ScheduleInterleavedZeroBubble`` gives one stage per
    rank (checked by scripts/check_interleaved_against_torch.py). One stage per rank, any m.

    Under the simulator (zero latency, m >= p, t_w <= min(t_f, t_b)) each stage idles exactly
    (p - 1)(t_f + t_b - t_w), against 1F1B's (p - 1)(t_f + t_b + t_w): a third when the three are
    equal (:func:`course_lib.pipeline.formulas.zero_bubble_h1_bubble`). Counted until W, every
    stage peaks at min(m, p) stashes — 1F1B's stage-0 peak, so the peak over stages is unchanged,
    but stages s > 0 hold s more than under 1F1B
    (:func:`course_lib.pipeline.formulas.peak_in_flight_zero_bubble_h1`).
    """
    p, m = check_pipeline_shape(num_stages, num_microbatches)
    stage = np.arange(p, dtype=np.int64)[:, None]
    j = np.arange(m, dtype=np.int64)[None, :]
    forward, backward = _alternate(np.minimum(m, p - stage[:, 0] - 1), m)
    # Sort keys: F and B keep their 1F1B order (even keys); W(j) goes right after B(j + s), or,
    # when j + s >= m, after everything in microbatch order.
    after = np.take_along_axis(backward, np.minimum(j + stage, m - 1), axis=1)
    weight = np.where(j + stage < m, 2 * after + 1, 4 * m + j)
    keys = np.concatenate([2 * forward, 2 * backward, weight], axis=1)
    order = np.argsort(keys, axis=1, kind="stable")
    kinds = np.repeat(np.array([0, 1, 2], dtype=np.int8), m)[order]
    microbatches = np.tile(j[0], 3)[order]
    stages = np.broadcast_to(stage, (p, 3 * m))
    return Schedule._from_columns(
        p, m, p, kinds.ravel(), stages.ravel(), microbatches.ravel(), _uniform_offsets(p, 3 * m),
        name="ZB-H1",
    )  # fmt: skip
