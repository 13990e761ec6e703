"""A pipeline-schedule verifier: identities, dependencies, placement, memory, weight versions,
bounded progress and a numeric check against a sequential reference (pipe10).

:func:`verify` takes per-rank lists of actions — :class:`~course_lib.pipeline.schedule.Action` s,
plain ``(kind, stage, microbatch)`` tuples (including ones the ``Schedule`` constructor refuses,
or that another framework emitted), or a ``Schedule`` — and returns a list of
:class:`Violation` s, each naming its rule, the rank, the position in that rank's list and the
action. A valid schedule returns an empty list. The verifier never raises on a malformed
schedule: malformed is what it reports. It raises only for bad arguments (``num_stages < 1``,
a placement naming a rank that does not exist, ...).

Rules (:data:`RULES`), in the order they are reported:

- ``malformed``: an entry that is not an Action nor a 3-sequence with int stage and microbatch,
  or a rank's list that is not a sequence;
- ``kind``: a kind that is not F, B or W (or a W when ``split_backward=False``);
- ``range``: a stage outside [0, num_stages) or a microbatch outside [0, num_microbatches);
- ``duplicate``: an action listed before (the later occurrence is reported, naming the first);
- ``missing``: an F or B (and a W when the backward is split) of some (stage, microbatch) that no
  rank lists (position None; the rank is the one the placement gives the stage);
- ``placement``: an action on a rank that does not hold its stage (default stage % num_ranks,
  the looping placement of Narayanan et al. 2021, Sec. 2.2.2);
- ``dependency``: an action listed on a rank before one of its dependencies on the same rank —
  F(k, j) before F(k + 1, j), B(k + 1, j) before B(k, j), F(s, j) before B(s, j), B(s, j)
  before W(s, j) (the simulator's dependencies). A dependency on another rank cannot be out of
  order in a list: the rank waits for it, and a wait that never ends is ``progress``;
- ``memory`` (with ``max_in_flight``): more activation stashes live on a stage than allowed — F
  adds one, the release (W when the backward is split, else B) frees it, counted in the rank's
  program order (the peak equals the simulator's ``Timeline.peak_in_flight``); the first F over
  the bound on each stage is reported, with the stage's peak;
- ``version`` (with ``weight_updates="per_backward"``): PipeDream's weight update after every
  backward of a stage (Narayanan et al. 2019, "PipeDream: Generalized Pipeline Parallelism for
  DNN Training", SOSP, Sec. 3.3). F(s, j) uses the number of updates before it as its version;
  with ``stash_weights`` its B uses the same (weight stashing), and the versions a stage holds
  (the current one and those stashed for microbatches in flight) are checked against
  ``max_versions``; without stashing, a B that runs on a newer version than its F is reported
  (the gradient is computed with other weights than the forward: PipeDream's reason for weight
  stashing). The first offending action per stage is reported. The default,
  ``weight_updates=None``, is a flushed step (GPipe, 1F1B): one version, nothing to check;
- ``progress``: the ranks run their lists in order, each action waiting for its dependencies on
  other ranks; if some ranks can never go on, each blocked rank is reported at its blocked
  position with the action it waits for and where that action is. Missing actions count as done
  here (they are ``missing``), so each defect is reported once;
- ``numeric`` (with ``numeric=True``): the schedule, run in a dependency-respecting order on a
  tiny chain of tanh layers (:func:`run_schedule`), must give every stage's weight gradient of
  the sequential reference (:func:`reference_gradients`) to ``rtol``. A skipped backward
  (or its W), or a stash that hands a backward another microbatch's activations (``stash="fifo"``
  or ``"lifo"`` for an order that does not match), shows here.

Performance: the identity, placement, dependency and memory rules are vectorized over numpy
columns (a Schedule's own columns are read directly); progress is one pass of a worklist over
plain lists; interleaved_1f1b(32, 256, 4) (65,536 actions) verifies in tens of milliseconds
(benchmarks/bench_verify.py).
"""

from __future__ import annotations

import math
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Integral

import numpy as np

from ._validate import check_duration, check_int, check_pipeline_shape
from .schedule import KINDS, Action, Schedule

__all__ = [
    "RULES",
    "STASH_POLICIES",
    "Violation",
    "reference_gradients",
    "run_schedule",
    "verify",
]

RULES: tuple[str, ...] = (
    "malformed",
    "kind",
    "range",
    "duplicate",
    "missing",
    "placement",
    "dependency",
    "memory",
    "version",
    "progress",
    "numeric",
)
"""The verifier's rules, in the order :func:`verify` reports them."""

STASH_POLICIES: tuple[str, ...] = ("keyed", "fifo", "lifo")
"""How :func:`run_schedule` finds a backward's activations: by (stage, microbatch) — correct —
or the oldest / newest entry of the stage's stash, an executor that assumes the backward order."""

_CODE = {kind: code for code, kind in enumerate(KINDS)}
_F, _B, _W = 0, 1, 2


@dataclass(frozen=True)
class Violation:
    """One broken rule: ``rule`` (one of :data:`RULES`), the ``rank`` and ``position`` in that
    rank's list (None for an action no rank lists, or a rank- or stage-wide finding), the
    ``action`` as the list held it (for ``missing``, the Action that should be there; None for a
    stage-wide finding) and a ``message`` saying what is wrong (pipe10)."""

    rule: str
    rank: int | None
    position: int | None
    action: object
    message: str

    def __str__(self) -> str:
        where = "" if self.rank is None else f"rank {self.rank}"
        if self.position is not None:
            where += f", position {self.position}"
        return (
            f"[{self.rule}] {where}: {self.message}" if where else f"[{self.rule}] {self.message}"
        )


def _label(kind: object, stage: object, microbatch: object) -> str:
    return f"{kind}(s{stage},m{microbatch})"


def _is_index(value: object) -> bool:
    return isinstance(value, Integral) and not isinstance(value, bool | np.bool_)


def _read(actions: object) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list, list]:
    """Columns (kind code, stage, microbatch; -1 where unreadable), per-rank offsets, the
    entries as given (None for a Schedule: rebuilt when reported) and malformed findings."""
    if isinstance(actions, Schedule):
        kind, stage, microbatch = (c.astype(np.int64) for c in actions._columns)
        return kind, stage, microbatch, actions._offsets.astype(np.int64), [], []
    if isinstance(actions, str | bytes) or not isinstance(actions, Sequence):
        raise TypeError(
            "actions must be a Schedule or a sequence of per-rank action lists, "
            f"got {type(actions).__name__}"
        )
    kinds, stages, microbatches, entries, lengths, malformed = [], [], [], [], [], []
    for rank, rank_actions in enumerate(actions):
        if isinstance(rank_actions, str | bytes) or not isinstance(rank_actions, Sequence):
            malformed.append(
                Violation(
                    "malformed",
                    rank,
                    None,
                    rank_actions,
                    f"rank {rank}'s actions must be a sequence, got {type(rank_actions).__name__}",
                )
            )
            lengths.append(0)
            continue
        lengths.append(len(rank_actions))
        for position, entry in enumerate(rank_actions):
            entries.append(entry)
            problem = None
            if isinstance(entry, Action):
                kind, stage, microbatch = entry.kind, entry.stage, entry.microbatch
            elif (
                isinstance(entry, Sequence | np.ndarray)
                and not isinstance(entry, str | bytes)
                and len(entry) == 3
            ):
                kind, stage, microbatch = entry
            else:
                problem = f"{entry!r} is not an Action nor a (kind, stage, microbatch) triple"
            if problem is None and not (_is_index(stage) and _is_index(microbatch)):
                problem = (
                    f"{entry!r}: stage and microbatch must be ints, got "
                    f"{type(stage).__name__} and {type(microbatch).__name__}"
                )
            elif problem is None and max(abs(int(stage)), abs(int(microbatch))) >= 2**62:
                problem = f"{entry!r}: an index this large is no stage or microbatch"
            if problem is not None:
                malformed.append(Violation("malformed", rank, position, entry, problem))
                kinds.append(-2)
                stages.append(-1)
                microbatches.append(-1)
                continue
            try:
                code = _CODE.get(kind, -1)
            except TypeError:  # an unhashable kind
                code = -1
            kinds.append(code)
            stages.append(int(stage))
            microbatches.append(int(microbatch))
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    columns = (np.array(c, dtype=np.int64) for c in (kinds, stages, microbatches))
    return (*columns, offsets, entries, malformed)


def _per_stage(name: str, value: object, num_stages: int, minimum: int, what: str) -> np.ndarray:
    """One int per stage (>= minimum), from a sequence of num_stages of them."""
    if isinstance(value, str | bytes) or not isinstance(value, Sequence | np.ndarray):
        raise TypeError(
            f"{name} must be {what} ({num_stages} ints, one per stage), got {type(value).__name__}"
        )
    if len(value) != num_stages:
        raise ValueError(f"{name} has {len(value)} entries but num_stages={num_stages}")
    return np.array(
        [check_int(f"{name}[{s}]", v, minimum=minimum) for s, v in enumerate(value)],
        dtype=np.int64,
    )


def _check_placement(placement: object, num_stages: int, num_ranks: int) -> np.ndarray:
    """The rank of every stage: stage % num_ranks by default, else placement[s] in [0, num_ranks)."""
    if placement is None:
        return np.arange(num_stages, dtype=np.int64) % num_ranks
    ranks = _per_stage("placement", placement, num_stages, 0, "a sequence of ranks")
    bad = np.flatnonzero(ranks >= num_ranks)
    if len(bad):
        s = int(bad[0])
        raise ValueError(
            f"placement[{s}] = {int(ranks[s])}: there are only {num_ranks} ranks "
            f"(0..{num_ranks - 1})"
        )
    return ranks


def _per_stage_bound(name: str, value: object, num_stages: int) -> np.ndarray | None:
    """None, one int >= 1 for every stage, or one per stage."""
    if value is None:
        return None
    if _is_index(value):
        return np.full(num_stages, check_int(name, value))
    return _per_stage(name, value, num_stages, 1, "None, an int >= 1 or a sequence of bounds")


class _Columns:
    """The verifier's view of the input: flat columns in rank order and where each entry is."""

    def __init__(self, actions, num_stages, num_microbatches, num_ranks, placement, split):
        self.source = actions
        (self.kind, self.stage, self.microbatch, self.offsets, self.entries, self.malformed) = (
            _read(actions)
        )
        self.S, self.M, self.R = num_stages, num_microbatches, num_ranks
        n = len(self.kind)
        self.n = n
        self.rank = np.repeat(
            np.arange(len(self.offsets) - 1, dtype=np.int64), np.diff(self.offsets)
        )
        self.position = np.arange(n, dtype=np.int64) - self.offsets[self.rank]
        readable = self.kind != -2
        known = (self.kind >= 0) & (self.kind < len(KINDS))
        in_range = (
            (self.stage >= 0)
            & (self.stage < self.S)
            & (self.microbatch >= 0)
            & (self.microbatch < self.M)
        )
        self.split = bool((known & (self.kind == _W)).any()) if split is None else bool(split)
        if not self.split:
            self.unexpected_w = known & (self.kind == _W)
            known &= self.kind != _W
        else:
            self.unexpected_w = np.zeros(n, dtype=bool)
        self.bad_kind = readable & ~known
        self.bad_range = readable & known & ~in_range
        valid = readable & known & in_range
        ids = np.where(valid, (self.kind * self.S + self.stage) * self.M + self.microbatch, -1)
        size = len(KINDS) * self.S * self.M
        # First occurrence of each id: the others are duplicates.
        self.first = np.full(size, -1, dtype=np.int64)
        flat = np.flatnonzero(valid)
        self.first[ids[flat][::-1]] = flat[::-1]  # later writes win: the first occurrence
        self.duplicate = valid & (self.first[np.where(valid, ids, 0)] != np.arange(n))
        self.ok = valid & ~self.duplicate  # first occurrences of valid actions
        self.ids = ids
        self.placement = placement

    def entry(self, i: int) -> object:
        if self.entries:
            return self.entries[i]
        return Action(KINDS[self.kind[i]], int(self.stage[i]), int(self.microbatch[i]))

    def text(self, i: int) -> str:
        """An action as F(s0,m1) when its kind is known, else the entry's repr."""
        if self.kind[i] >= 0:
            return _label(KINDS[self.kind[i]], int(self.stage[i]), int(self.microbatch[i]))
        return repr(self.entry(i))

    def at(self, rule: str, i: int, message: str) -> Violation:
        return Violation(rule, int(self.rank[i]), int(self.position[i]), self.entry(i), message)

    def where(self, i: int) -> str:
        return f"rank {int(self.rank[i])} position {int(self.position[i])}"

    def dependencies(self) -> tuple[np.ndarray, np.ndarray]:
        """For each entry, the flat index of its two dependencies' first occurrences: -1 for no
        dependency or one that no rank lists (the entries that are not ``ok`` get -1)."""
        S, M = self.S, self.M
        kind, stage, mb = self.kind, self.stage, self.microbatch
        forward, backward, weight = (self.ok & (kind == k) for k in (_F, _B, _W))
        first_kind = np.where(weight, _B, _F)
        first_stage = np.where(forward, stage - 1, stage)
        has_first = (forward & (stage > 0)) | backward | weight
        has_second = backward & (stage < S - 1)

        def lookup(has, dep_kind, dep_stage):
            dep_id = (dep_kind * S + np.where(has, dep_stage, 0)) * M + np.where(has, mb, 0)
            return np.where(has, self.first[np.where(has, dep_id, 0)], -1)

        return lookup(has_first, first_kind, first_stage), lookup(has_second, _B, stage + 1)


def verify(
    actions: object,
    num_stages: int | None = None,
    num_microbatches: int | None = None,
    *,
    num_ranks: int | None = None,
    placement: Sequence[int] | None = None,
    split_backward: bool | None = None,
    max_in_flight: int | Sequence[int] | None = None,
    weight_updates: str | None = None,
    stash_weights: bool = True,
    max_versions: int | Sequence[int] | None = None,
    numeric: bool = False,
    stash: str = "keyed",
    rtol: float = 1e-9,
) -> list[Violation]:
    """Every violation of :data:`RULES` in ``actions`` -> list of :class:`Violation` (pipe10).

    ``actions``: a Schedule, or per-rank sequences of Actions or (kind, stage, microbatch)
    tuples. ``num_stages`` and ``num_microbatches`` are what the schedule must cover (for a
    Schedule they default to its own); ``num_ranks`` defaults to the number of per-rank lists
    (a different value is an error); ``placement[s]`` is the rank that holds stage s (default
    s % num_ranks). ``split_backward``: whether every (stage, microbatch) needs a W; None infers
    it (True if any W is listed). ``max_in_flight``: a bound on live activation stashes, one int
    or one per stage. ``weight_updates``: None (flushed step) or "per_backward" (PipeDream), with
    ``stash_weights`` and ``max_versions`` (see the module docstring). ``numeric``: also run the
    schedule on a tiny tanh chain with ``stash`` ("keyed", "fifo", "lifo") and compare each
    stage's weight gradient with the sequential reference to relative tolerance ``rtol``.

    Violations come rule by rule in :data:`RULES` order, each rule's in rank and position order
    (``missing``: in kind, stage, microbatch order). Raises only for bad arguments.
    """
    if isinstance(actions, Schedule):
        num_stages = actions.num_stages if num_stages is None else num_stages
        num_microbatches = (
            actions.num_microbatches if num_microbatches is None else num_microbatches
        )
    if num_stages is None or num_microbatches is None:
        raise TypeError("verify needs num_stages and num_microbatches for per-rank action lists")
    S, M = check_pipeline_shape(num_stages, num_microbatches)
    lists = actions.num_ranks if isinstance(actions, Schedule) else None
    if lists is None:
        if isinstance(actions, str | bytes) or not isinstance(actions, Sequence):
            raise TypeError(
                "actions must be a Schedule or a sequence of per-rank action lists, "
                f"got {type(actions).__name__}"
            )
        lists = len(actions)
    if lists < 1:
        raise ValueError("actions has no per-rank lists: a schedule needs at least one rank")
    if num_ranks is not None and check_int("num_ranks", num_ranks) != lists:
        raise ValueError(f"num_ranks={num_ranks} but actions has {lists} per-rank lists")
    R = lists
    where = _check_placement(placement, S, R)
    if split_backward is not None and not isinstance(split_backward, bool | np.bool_):
        raise TypeError(f"split_backward must be None, True or False, got {split_backward!r}")
    bound = _per_stage_bound("max_in_flight", max_in_flight, S)
    if weight_updates not in (None, "per_backward"):
        raise ValueError(f"weight_updates must be None or 'per_backward', got {weight_updates!r}")
    if not isinstance(stash_weights, bool | np.bool_):
        raise TypeError(f"stash_weights must be True or False, got {stash_weights!r}")
    versions_bound = _per_stage_bound("max_versions", max_versions, S)
    if not isinstance(numeric, bool | np.bool_):
        raise TypeError(f"numeric must be True or False, got {numeric!r}")
    if stash not in STASH_POLICIES:
        raise ValueError(f"stash must be one of {STASH_POLICIES}, got {stash!r}")
    rtol = check_duration("rtol", rtol)

    cols = _Columns(actions, S, M, R, where, split_backward)
    found: list[Violation] = list(cols.malformed)
    found += _identity(cols)
    found += _placement(cols)
    deps = cols.dependencies()
    found += _dependency(cols, deps)
    if bound is not None:
        found += _memory(cols, bound)
    if weight_updates == "per_backward":
        found += _versions(cols, bool(stash_weights), versions_bound)
    order, blocked = _progress(cols, deps)
    found += blocked
    if numeric:
        found += _numeric(cols, order, stash, rtol)
    return found


def _identity(cols: _Columns) -> list[Violation]:
    out = []
    for i in np.flatnonzero(cols.bad_kind | cols.unexpected_w).tolist():
        entry = cols.entry(i)
        kind = entry.kind if isinstance(entry, Action) else entry[0]
        reason = (
            "is a W but the backward is declared unsplit (split_backward=False)"
            if cols.unexpected_w[i]
            else f"has kind {kind!r}, not one of {KINDS}"
        )
        out.append(cols.at("kind", i, f"{cols.text(i)} {reason}"))
    for i in np.flatnonzero(cols.bad_range).tolist():
        s, j = int(cols.stage[i]), int(cols.microbatch[i])
        what = (
            f"stage {s} outside [0, {cols.S - 1}]"
            if not 0 <= s < cols.S
            else f"microbatch {j} outside [0, {cols.M - 1}]"
        )
        out.append(cols.at("range", i, f"{cols.text(i)} has {what}"))
    for i in np.flatnonzero(cols.duplicate).tolist():
        first = int(cols.first[cols.ids[i]])
        out.append(
            cols.at("duplicate", i, f"{cols.text(i)} is listed before, at {cols.where(first)}")
        )
    kinds = (_F, _B, _W) if cols.split else (_F, _B)
    size = cols.S * cols.M
    for code in kinds:
        absent = np.flatnonzero(cols.first[code * size : (code + 1) * size] < 0)
        for flat in absent.tolist():
            s, j = divmod(flat, cols.M)
            action = Action(KINDS[code], s, j)
            owner = int(cols.placement[s])
            out.append(
                Violation(
                    "missing",
                    owner,
                    None,
                    action,
                    f"{action} is in no rank's list (stage {s} is on rank {owner})",
                )
            )
    return out


def _placement(cols: _Columns) -> list[Violation]:
    valid = (cols.kind >= 0) & ~cols.bad_kind & ~cols.bad_range & ~cols.unexpected_w
    stage = np.where(valid, cols.stage, 0)
    wrong = valid & (cols.placement[stage] != cols.rank)
    return [
        cols.at(
            "placement",
            i,
            f"{cols.text(i)} is on rank {int(cols.rank[i])} but stage {int(cols.stage[i])} is "
            f"held by rank {int(cols.placement[cols.stage[i]])}",
        )
        for i in np.flatnonzero(wrong).tolist()
    ]


def _dependency(cols: _Columns, deps: tuple[np.ndarray, np.ndarray]) -> list[Violation]:
    index = np.arange(cols.n)
    late = np.zeros(cols.n, dtype=bool)
    which = np.full(cols.n, -1, dtype=np.int64)
    for dep in deps:
        safe = np.where(dep >= 0, dep, 0)
        after = (dep >= 0) & (cols.rank[safe] == cols.rank) & (dep > index)
        which = np.where(after & ~late, dep, which)
        late |= after
    return [
        cols.at(
            "dependency",
            i,
            f"{cols.text(i)} is listed before its dependency {cols.text(int(which[i]))} on the "
            f"same rank (position {int(cols.position[which[i]])})",
        )
        for i in np.flatnonzero(late).tolist()
    ]


def _stage_order(cols: _Columns) -> np.ndarray:
    """Flat indices of the ok actions grouped by stage, each stage's in rank-list order."""
    ok = np.flatnonzero(cols.ok)
    return ok[np.argsort(cols.stage[ok], kind="stable")]


def _memory(cols: _Columns, bound: np.ndarray) -> list[Violation]:
    order = _stage_order(cols)
    if not len(order):
        return []
    release = _W if cols.split else _B
    kind, stage = cols.kind[order], cols.stage[order]
    step = np.where(kind == _F, 1, np.where(kind == release, -1, 0))
    count = np.cumsum(step)
    starts = np.flatnonzero(np.r_[True, stage[1:] != stage[:-1]])
    base = np.repeat(np.r_[0, count][starts], np.diff(np.r_[starts, len(order)]))
    live = count - base  # stashes live after each action, per stage
    over = np.flatnonzero(live > bound[stage])
    peaks = np.maximum.reduceat(live, starts)
    peak_of = dict(zip(stage[starts].tolist(), peaks.tolist(), strict=True))
    out, seen = [], set()
    for k in over.tolist():
        s = int(stage[k])
        if s in seen:
            continue
        seen.add(s)
        i = int(order[k])
        out.append(
            cols.at(
                "memory",
                i,
                f"{cols.text(i)} makes {int(live[k])} activation stashes live on stage {s}, "
                f"above max_in_flight={int(bound[s])} (peak {peak_of[s]})",
            )
        )
    return out


def _versions(cols: _Columns, stash_weights: bool, bound: np.ndarray | None) -> list[Violation]:
    """PipeDream's per-backward updates, walked per stage in program order (one dict per stage)."""
    out = []
    order = _stage_order(cols).tolist()
    kind, stage, mb = cols.kind.tolist(), cols.stage.tolist(), cols.microbatch.tolist()
    update = _W if cols.split else _B
    state: dict[int, tuple[list, dict, Counter]] = {}
    reported: set[int] = set()
    for i in order:
        s = stage[i]
        current, used, held = state.setdefault(s, ([0], {}, Counter()))
        k, j = kind[i], mb[i]
        if k == _F:
            used[j] = current[0]
            held[current[0]] += 1
        elif k == _B and j in used and not stash_weights and s not in reported:
            if used[j] != current[0]:
                reported.add(s)
                out.append(
                    cols.at(
                        "version",
                        i,
                        f"{cols.text(i)} runs on weight version {current[0]} but its forward "
                        f"used version {used[j]}: without weight stashing the gradient is "
                        "computed with other weights than the forward",
                    )
                )
        if k == update:
            if j in used:
                v = used.pop(j)
                held[v] -= 1
                if not held[v]:
                    del held[v]
            current[0] += 1
        if (k == _F or k == update) and bound is not None and stash_weights:
            versions = len(held) + (current[0] not in held)
            if versions > bound[s] and s not in reported:
                reported.add(s)
                out.append(
                    cols.at(
                        "version",
                        i,
                        f"after {cols.text(i)} stage {s} holds {versions} weight versions (the "
                        f"current one and those stashed for microbatches in flight), above "
                        f"max_versions={int(bound[s])}",
                    )
                )
    return out


def _progress(
    cols: _Columns, deps: tuple[np.ndarray, np.ndarray]
) -> tuple[list[int], list[Violation]]:
    """Run every rank's ok actions in list order, each waiting for its dependencies on other
    ranks. Returns the flat indices in the order they ran, and one violation per blocked rank."""
    rank = cols.rank
    cross = [np.where((d >= 0) & (rank[np.where(d >= 0, d, 0)] != rank), d, -1) for d in deps]
    first, second = cross[0].tolist(), cross[1].tolist()
    ok = cols.ok
    program = [
        np.flatnonzero(ok[lo:hi]) + lo
        for lo, hi in zip(cols.offsets[:-1], cols.offsets[1:], strict=True)
    ]
    lists = [p.tolist() for p in program]
    done = bytearray(cols.n + 1)  # index -1 (no cross-rank dependency) reads done[-1] = 1
    done[-1] = 1
    pointer = [0] * len(lists)
    waiting: dict[int, list[int]] = {}
    ready = list(range(len(lists)))
    ran: list[int] = []
    while ready:
        r = ready.pop()
        items, k = lists[r], pointer[r]
        while k < len(items):
            i = items[k]
            a = first[i]
            if not done[a]:
                break
            a = second[i]
            if not done[a]:
                break
            done[i] = 1
            ran.append(i)
            woken = waiting.pop(i, None)
            if woken:
                ready.extend(woken)
            k += 1
        pointer[r] = k
        if k < len(items):
            waiting.setdefault(a, []).append(r)
    out = []
    for r, items in enumerate(lists):
        if pointer[r] >= len(items):
            continue
        i = items[pointer[r]]
        a = first[i] if not done[first[i]] else second[i]
        dep_rank = int(rank[a])
        dep_items = lists[dep_rank]
        blocked_at = (
            int(cols.position[dep_items[pointer[dep_rank]]])
            if pointer[dep_rank] < len(dep_items)
            else None
        )
        out.append(
            cols.at(
                "progress",
                i,
                f"rank {r} is blocked at {cols.text(i)}: it waits for {cols.text(a)} at "
                f"{cols.where(a)}, behind rank {dep_rank}'s blocked position {blocked_at} "
                "(deadlock)",
            )
        )
    return ran, out


# --------------------------------------------------------------------------------------------
# the numeric check: a chain of tanh layers, one per stage


def _model(num_stages: int, num_microbatches: int, seed: int, width: int, batch: int):
    g = np.random.default_rng(seed)
    weights = [g.normal(0.0, 1.0 / math.sqrt(width), (width, width)) for _ in range(num_stages)]
    inputs = [g.normal(size=(batch, width)) for _ in range(num_microbatches)]
    targets = [g.normal(size=(batch, width)) for _ in range(num_microbatches)]
    return weights, inputs, targets


def reference_gradients(
    num_stages: int, num_microbatches: int, *, seed: int = 0, width: int = 4, batch: int = 3
) -> list[np.ndarray]:
    """Each stage's weight gradient, microbatch after microbatch, stage after stage (pipe10).

    The model: stage s computes y = tanh(x · W_s) (W_s of shape (width, width), N(0, 1/width),
    seeded); microbatch j has its own input and target (batch × width). The loss is the mean over
    the m microbatches of ½ · mean over the batch of Σ (y_last - target)². Checked against
    finite differences in the tests.
    """
    S, M = check_pipeline_shape(num_stages, num_microbatches)
    weights, inputs, targets = _model(
        S,
        M,
        check_int("seed", seed, minimum=0),
        check_int("width", width),
        check_int("batch", batch),
    )
    grads = [np.zeros_like(w) for w in weights]
    for x, t in zip(inputs, targets, strict=True):
        acts = [x]
        for w in weights:
            acts.append(np.tanh(acts[-1] @ w))
        dy = (acts[-1] - t) / (x.shape[0] * M)
        for s in range(S - 1, -1, -1):
            dz = dy * (1.0 - acts[s + 1] ** 2)
            grads[s] += acts[s].T @ dz
            dy = dz @ weights[s].T
    return grads


def run_schedule(
    actions: object,
    num_stages: int,
    num_microbatches: int,
    order: Sequence[int] | None = None,
    *,
    stash: str = "keyed",
    seed: int = 0,
    width: int = 4,
    batch: int = 3,
) -> list[np.ndarray]:
    """Each stage's weight gradient when ``actions`` run on the model of
    :func:`reference_gradients` (pipe10).

    ``actions``: a Schedule or per-rank lists; they run in ``order`` (flat indices into the
    rank-major list, default the verifier's progress order: each rank in its list order, waiting
    for dependencies on other ranks). F(s, j) takes microbatch j's activation from stage s - 1
    (stage 0: its input), stashes (input, output) and sends the output on; B(s, j) takes the
    gradient stage s + 1 sent for microbatch j (the last stage: the loss gradient), takes a
    stash entry — by key (s, j) with ``stash="keyed"``, the stage's oldest ("fifo") or newest
    ("lifo") otherwise — sends the input gradient back and, unsplit, adds the weight gradient;
    split, W(s, j) adds it. An action whose input is not there (never sent, stash empty) does
    nothing. Messages are tagged by microbatch; only the stash policy can mix microbatches up.
    A shape mismatch raises ValueError (a Schedule of another shape, lists whose stages are not
    exactly 0..num_stages - 1, a microbatch out of range): run silently, it would give zero or
    partial gradients. Malformed schedules are :func:`verify`'s to report.
    """
    S, M = check_pipeline_shape(num_stages, num_microbatches)
    if stash not in STASH_POLICIES:
        raise ValueError(f"stash must be one of {STASH_POLICIES}, got {stash!r}")
    weights, inputs, targets = _model(
        S,
        M,
        check_int("seed", seed, minimum=0),
        check_int("width", width),
        check_int("batch", batch),
    )
    if isinstance(actions, Schedule):
        num_lists = actions.num_ranks
    elif isinstance(actions, str | bytes) or not isinstance(actions, Sequence):
        raise TypeError(
            f"actions must be a Schedule or per-rank lists, got {type(actions).__name__}"
        )
    else:
        num_lists = len(actions)
    if isinstance(actions, Schedule) and (actions.num_stages, actions.num_microbatches) != (S, M):
        raise ValueError(
            f"actions is a Schedule for {actions.num_stages} stages and "
            f"{actions.num_microbatches} microbatches, but num_stages={S} and "
            f"num_microbatches={M}"
        )
    cols = _Columns(actions, S, M, num_lists, _check_placement(None, S, num_lists), None)
    known = (cols.kind >= 0) & (cols.kind < len(KINDS))
    listed = set(cols.stage[known].tolist())
    if listed - set(range(S)) or set(range(S)) - listed:
        raise ValueError(
            f"actions list stages {sorted(listed)} but num_stages={S}: run_schedule needs "
            f"every stage 0..{S - 1} listed and no other (verify() reports such schedules)"
        )
    outside = known & ((cols.microbatch < 0) | (cols.microbatch >= M))
    if outside.any():
        i = int(np.flatnonzero(outside)[0])
        raise ValueError(
            f"actions list {cols.text(i)} at {cols.where(i)}, but num_microbatches={M}: "
            "run_schedule needs microbatches in 0..num_microbatches - 1 (verify() reports "
            "such schedules)"
        )
    if order is None:
        order, _ = _progress(cols, cols.dependencies())
    else:
        order = [check_int(f"order[{k}]", i, minimum=0) for k, i in enumerate(order)]
        if any(i >= cols.n for i in order):
            raise ValueError(f"order has an index >= the number of actions ({cols.n})")
    return _execute(cols, order, weights, inputs, targets, stash)


def _execute(cols, order, weights, inputs, targets, stash) -> list[np.ndarray]:
    S, M = cols.S, cols.M
    acts = {(0, j): x for j, x in enumerate(inputs)}
    grads_in: dict[tuple[int, int], np.ndarray] = {}
    stashes: dict[int, dict | deque] = {}
    pending: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
    dW = [np.zeros_like(w) for w in weights]
    valid = cols.ok | cols.duplicate  # a listed duplicate runs again
    kind, stage, mb = cols.kind.tolist(), cols.stage.tolist(), cols.microbatch.tolist()
    scale = 1.0 / (inputs[0].shape[0] * M)
    for i in order:
        if not valid[i]:
            continue
        k, s, j = kind[i], stage[i], mb[i]
        if k == _F:
            x = acts.get((s, j))
            if x is None:
                continue
            y = np.tanh(x @ weights[s])
            store = stashes.setdefault(s, {} if stash == "keyed" else deque())
            if stash == "keyed":
                store[j] = (x, y)
            else:
                store.append((x, y))
            if s + 1 < S:
                acts[(s + 1, j)] = y
            else:
                grads_in[(s, j)] = (y - targets[j]) * scale
        elif k == _B:
            dy = grads_in.pop((s, j), None)
            store = stashes.get(s)
            if dy is None or not store or (stash == "keyed" and j not in store):
                continue
            x, y = (
                store.pop(j)
                if stash == "keyed"
                else store.popleft()
                if stash == "fifo"
                else store.pop()
            )
            dz = dy * (1.0 - y**2)
            if s > 0:
                grads_in[(s - 1, j)] = dz @ weights[s].T
            if cols.split:
                pending[(s, j)] = (x, dz)
            else:
                dW[s] += x.T @ dz
        else:
            got = pending.pop((s, j), None)
            if got is not None:
                dW[s] += got[0].T @ got[1]
    return dW


def _numeric(cols: _Columns, order: list[int], stash: str, rtol: float) -> list[Violation]:
    weights, inputs, targets = _model(cols.S, cols.M, 0, 4, 3)
    got = _execute(cols, order, weights, inputs, targets, stash)
    want = reference_gradients(cols.S, cols.M)
    out = []
    for s, (g, w) in enumerate(zip(got, want, strict=True)):
        error = float(np.linalg.norm(g - w) / max(np.linalg.norm(w), 1e-300))
        if error > rtol:
            out.append(
                Violation(
                    "numeric",
                    int(cols.placement[s]),
                    None,
                    None,
                    f"stage {s}'s weight gradient differs from the sequential reference "
                    f"(relative error {error:.3g} > rtol={rtol:g})",
                )
            )
    return out
