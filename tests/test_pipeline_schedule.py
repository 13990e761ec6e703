"""Tests for course_lib.pipeline.schedule: the Schedule IR, its validation, GPipe and 1F1B orders."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course_lib.pipeline import (
    Action,
    Schedule,
    gpipe,
    interleaved_1f1b,
    one_f_one_b,
    simulate,
    zero_bubble_h1,
)
from tests import pipeline_reference as reference
from tests.strategies import pipeline_shapes, random_pipeline_schedules


def order(stage: int, text: str) -> tuple[Action, ...]:
    """Parse a hand-written order like "F0 F1 B0" for one stage."""
    return tuple(Action(token[0], stage, int(token[1:])) for token in text.split())


# --- hand-written canonical orders ----------------------------------------------------------


def test_one_f_one_b_p4_m8_by_hand():
    """1F1B, p=4, m=8: warm-up 3, 2, 1, 0 forwards, then F/B alternation, then cooldown."""
    expected = [
        "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7",
        "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 B6 B7",
        "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 F6 B5 F7 B6 B7",
        "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7",
    ]
    schedule = one_f_one_b(4, 8)
    assert schedule.actions == tuple(order(s, text) for s, text in enumerate(expected))
    assert (schedule.num_stages, schedule.num_microbatches, schedule.num_ranks) == (4, 8, 4)


def test_one_f_one_b_fewer_microbatches_than_stages_by_hand():
    """1F1B with m < p: stages whose warm-up would exceed m run all forwards, then all backwards."""
    expected = ["F0 F1 B0 B1", "F0 F1 B0 B1", "F0 B0 F1 B1"]
    assert one_f_one_b(3, 2).actions == tuple(order(s, t) for s, t in enumerate(expected))


def test_gpipe_p2_m3_by_hand():
    """GPipe: every stage runs F0..F(m-1) then B0..B(m-1) (PyTorch ScheduleGPipe order)."""
    expected = "F0 F1 F2 B0 B1 B2"
    assert gpipe(2, 3).actions == (order(0, expected), order(1, expected))


def test_action_str_is_compact():
    """An action prints as kind(stage, microbatch), e.g. F(s1,m3)."""
    assert str(Action("F", 1, 3)) == "F(s1,m3)"
    assert str(Action("W", 0, 12)) == "W(s0,m12)"


# --- structural properties over many (p, m) -------------------------------------------------


def _identity_counts(schedule: Schedule) -> dict[tuple[str, int, int], int]:
    counts: dict[tuple[str, int, int], int] = {}
    for rank_actions in schedule.actions:
        for a in rank_actions:
            counts[(a.kind, a.stage, a.microbatch)] = (
                counts.get((a.kind, a.stage, a.microbatch), 0) + 1
            )
    return counts


@given(pipeline_shapes(max_stages=12, max_microbatches=24), st.sampled_from([gpipe, one_f_one_b]))
def test_every_stage_microbatch_has_one_forward_and_one_backward(shape, generator):
    """Each (stage, microbatch) appears exactly once as F and once as B, on the rank owning it."""
    p, m = shape
    schedule = generator(p, m)
    expected = {(k, s, j): 1 for k in "FB" for s in range(p) for j in range(m)}
    assert _identity_counts(schedule) == expected
    assert not schedule.has_weight_actions
    for rank, rank_actions in enumerate(schedule.actions):
        assert all(schedule.rank_of(a.stage) == rank for a in rank_actions)


@given(pipeline_shapes(max_stages=12, max_microbatches=24))
def test_gpipe_structure(shape):
    """GPipe: on every stage all forwards (in order 0..m-1) come before all backwards (in order)."""
    p, m = shape
    for rank_actions in gpipe(p, m).actions:
        assert [a.kind for a in rank_actions] == ["F"] * m + ["B"] * m
        assert [a.microbatch for a in rank_actions] == list(range(m)) * 2


@given(pipeline_shapes(max_stages=12, max_microbatches=24))
def test_one_f_one_b_structure(shape):
    """1F1B stage s: forwards and backwards each in microbatch order; min(m, p-s) leading forwards
    and as many trailing backwards; strict F/B alternation in between; never more than
    min(m, p-s) forwards without their backward (the in-flight bound)."""
    p, m = shape
    for s, rank_actions in enumerate(one_f_one_b(p, m).actions):
        kinds = "".join(a.kind for a in rank_actions)
        bound = min(m, p - s)
        assert [a.microbatch for a in rank_actions if a.kind == "F"] == list(range(m))
        assert [a.microbatch for a in rank_actions if a.kind == "B"] == list(range(m))
        assert len(kinds) - len(kinds.lstrip("F")) == bound  # leading forwards
        assert len(kinds) - len(kinds.rstrip("B")) == bound  # trailing backwards
        middle = kinds[bound : len(kinds) - bound]
        assert middle == "BF" * (len(middle) // 2)  # steady state: B(i) then F(w+i+1) ...
        live = np.cumsum([1 if k == "F" else -1 for k in kinds])
        assert live.max() == bound and live.min() >= 0 and live[-1] == 0


@given(pipeline_shapes(max_stages=8, max_microbatches=12), st.sampled_from([gpipe, one_f_one_b]))
def test_generated_schedules_never_deadlock(shape, generator):
    """Both generators produce schedules the simulator completes (unit costs)."""
    p, m = shape
    timeline = simulate(generator(p, m), 1.0, 2.0)
    assert len(timeline.events) == 2 * p * m


# --- the IR and its validation --------------------------------------------------------------


def test_schedule_is_frozen_and_stores_tuples():
    """Lists given to Schedule are stored as tuples; fields cannot be reassigned."""
    schedule = Schedule(1, 1, 1, [[Action("F", 0, 0), Action("B", 0, 0)]], name="tiny")
    assert schedule.actions == ((Action("F", 0, 0), Action("B", 0, 0)),)
    with pytest.raises(dataclasses.FrozenInstanceError):
        schedule.name = "other"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        Action("F", 0, 0).stage = 1  # type: ignore[misc]


def test_interleaved_placement_fits_the_ir():
    """4 stages on 2 ranks (2 chunks per rank): stage k lives on rank k % 2."""
    a = Action
    schedule = Schedule(
        4,
        1,
        2,
        (
            (a("F", 0, 0), a("F", 2, 0), a("B", 2, 0), a("B", 0, 0)),
            (a("F", 1, 0), a("F", 3, 0), a("B", 3, 0), a("B", 1, 0)),
        ),
    )
    assert schedule.chunks_per_rank == 2
    assert [schedule.rank_of(k) for k in range(4)] == [0, 1, 0, 1]


def test_has_weight_actions():
    """has_weight_actions is true exactly when some action is a W."""
    a = Action
    plain = Schedule(1, 1, 1, ((a("F", 0, 0), a("B", 0, 0)),))
    split = Schedule(1, 1, 1, ((a("F", 0, 0), a("B", 0, 0), a("W", 0, 0)),))
    assert not plain.has_weight_actions
    assert split.has_weight_actions


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        (dict(num_stages=3, num_ranks=2, actions=((), ())), "num_ranks=2 must divide num_stages=3"),
        (dict(num_stages=2, num_ranks=2, actions=((),)), "1 per-rank lists but num_ranks=2"),
        (
            dict(num_stages=2, num_ranks=2, actions=((Action("F", 1, 0),), ())),
            "rank 0, position 0: F(s1,m0) is on rank 0 but stage 1 lives on rank 1",
        ),
        (
            dict(num_stages=2, num_ranks=2, actions=((Action("F", 2, 0),), ())),
            "rank 0, position 0: F(s2,m0) has stage 2 outside [0, 1]",
        ),
        (
            dict(num_stages=1, num_ranks=1, actions=((Action("F", 0, 0), Action("B", 0, 5)),)),
            "rank 0, position 1: B(s0,m5) has microbatch 5 outside [0, 1]",
        ),
        (dict(num_stages=1, num_ranks=1, actions=((("F", 0, 0),),)), "expected an Action"),
        (dict(num_stages=1, num_ranks=0, actions=()), "num_ranks must be an int >= 1"),
    ],
)
def test_schedule_validation_names_the_problem(kwargs, fragment):
    """Invalid schedules raise ValueError naming rank, position and action where relevant."""
    kwargs = {"num_microbatches": 2, **kwargs}
    with pytest.raises(ValueError) as info:
        Schedule(**kwargs)
    assert fragment in str(info.value)


def test_action_rejects_unknown_kind_and_bad_indices():
    """Action accepts only kinds F, B, W and non-negative integer indices."""
    with pytest.raises(ValueError, match="kind must be one of"):
        Action("X", 0, 0)
    with pytest.raises(ValueError, match="Action stage"):
        Action("F", -1, 0)
    with pytest.raises(TypeError, match="Action microbatch"):
        Action("F", 0, 1.0)  # type: ignore[arg-type]


def test_schedule_rechecks_kind_of_tampered_action():
    """Schedule checks kinds itself too (an Action edited past its frozen guard is caught)."""
    bad = Action("F", 0, 0)
    object.__setattr__(bad, "kind", "X")
    with pytest.raises(ValueError, match=r"rank 0, position 0: .* has kind 'X'"):
        Schedule(1, 1, 1, ((bad,),))


@pytest.mark.parametrize("generator", [gpipe, one_f_one_b])
@pytest.mark.parametrize("argument", ["num_stages", "num_microbatches"])
@pytest.mark.parametrize(
    "value, error",
    [(0, ValueError), (-3, ValueError), (True, TypeError), (4.0, TypeError), ("4", TypeError)],
)
def test_generators_reject_bad_arguments(generator, argument, value, error):
    """Non-positive counts raise ValueError, bools/floats/strings TypeError; the message names the
    argument and the value."""
    args = {"num_stages": 4, "num_microbatches": 8, argument: value}
    with pytest.raises(error) as info:
        generator(**args)
    assert argument in str(info.value)
    assert repr(value) in str(info.value) or str(value) in str(info.value)


def test_generators_accept_numpy_integers():
    """numpy integers (e.g. from a slider or an array) are valid counts."""
    assert one_f_one_b(np.int64(4), np.int32(8)) == one_f_one_b(4, 8)


@given(random_pipeline_schedules())
def test_random_schedules_satisfy_the_ir(schedule):
    """The shared random-schedule strategy builds valid Schedules (placement k % num_ranks)."""
    for rank, rank_actions in enumerate(schedule.actions):
        assert all(a.stage % schedule.num_ranks == rank for a in rank_actions)


# --- interleaved 1F1B (pipe04) ----------------------------------------------------------------


def accepted_interleaved(p: int, m: int, v: int) -> bool:
    """The acceptance rule written out: v = 1 always; else rounds = max(1, m // p) divides m."""
    return v == 1 or m % max(1, m // p) == 0


@st.composite
def interleaved_shapes(draw, max_ranks: int = 6, max_microbatches: int = 20, max_chunks: int = 4):
    """(p, m, v) that interleaved_1f1b accepts."""
    p = draw(st.integers(1, max_ranks))
    v = draw(st.integers(1, max_chunks))
    m = draw(st.integers(1, max_microbatches).filter(lambda m: accepted_interleaved(p, m, v)))
    return p, m, v


def megatron_loop_order(p: int, m: int, v: int) -> list[list[tuple[str, int, int]]]:
    """Re-derivation of Megatron-LM's loops (not the generator's closed forms): a
    lookup table of (microbatch, chunk) in groups of g per chunk (Megatron's get_schedule_table,
    g = p, or PyTorch's round size m // rounds), then per rank the warm-up loop, the 1F1B loop
    (one forward, one backward) and the cooldown loop, the backward visiting chunks in reverse
    and each chunk's microbatches counted off in order."""
    g = m // max(1, m // p)
    table = [(j, c) for start in range(0, m, g) for c in range(v) for j in range(start, start + g)]
    orders = []
    for rank in range(p):
        total = m * v
        warmup = min(total, (p - rank - 1) * 2 + (v - 1) * g)
        next_backward = [0] * v
        forwards = [("F", c * p + rank, j) for j, c in table]
        backward_chunks = [v - 1 - c for _, c in table]
        backwards = []
        for c in backward_chunks:
            backwards.append(("B", c * p + rank, next_backward[c]))
            next_backward[c] += 1
        order = forwards[:warmup]
        for k in range(total - warmup):
            order += [forwards[warmup + k], backwards[k]]
        order += backwards[total - warmup :]
        orders.append(order)
    return orders


def as_triples(schedule: Schedule) -> list[list[tuple[str, int, int]]]:
    return [[(a.kind, a.stage, a.microbatch) for a in acts] for acts in schedule.actions]


def test_interleaved_p2_m4_v2_by_hand():
    """p = 2, m = 4, v = 2 (stages 0, 2 on rank 0; 1, 3 on rank 1). Rank 0 warms up
    2·(2 - 0 - 1) + (2 - 1)·2 = 4 forwards (chunk 0 on microbatches 0, 1, then chunk 1 on 0, 1),
    rank 1 two; then F/B pairs, backwards starting from the last chunk."""
    expected = [
        "F0m0 F0m1 F2m0 F2m1 F0m2 B2m0 F0m3 B2m1 F2m2 B0m0 F2m3 B0m1 B2m2 B2m3 B0m2 B0m3",
        "F1m0 F1m1 F3m0 B3m0 F3m1 B3m1 F1m2 B1m0 F1m3 B1m1 F3m2 B3m2 F3m3 B3m3 B1m2 B1m3",
    ]

    def parse(text):
        return tuple(
            Action(t[0], int(t[1 : t.index("m")]), int(t[t.index("m") + 1 :])) for t in text.split()
        )

    schedule = interleaved_1f1b(2, 4, 2)
    assert schedule.actions == tuple(parse(text) for text in expected)
    assert (schedule.num_stages, schedule.num_ranks, schedule.chunks_per_rank) == (4, 2, 2)


@given(interleaved_shapes())
@settings(deadline=None)
def test_interleaved_equals_a_rederivation_of_megatrons_loop(shape):
    """Every accepted (p, m, v > 1): the generated per-rank order equals the loop-by-loop
    re-derivation above (PyTorch 2.13's order too: scripts/check_interleaved_against_torch.py)."""
    p, m, v = shape
    if v == 1:
        return
    assert as_triples(interleaved_1f1b(p, m, v)) == megatron_loop_order(p, m, v)


@given(interleaved_shapes())
@settings(deadline=None)
def test_interleaved_runs_every_action_once_on_its_rank_and_completes(shape):
    """Each (stage, microbatch) has one F and one B, on rank stage % p; forwards of one chunk in
    microbatch order; the simulator completes it (no deadlock)."""
    p, m, v = shape
    schedule = interleaved_1f1b(p, m, v)
    expected = {(k, s, j): 1 for k in "FB" for s in range(v * p) for j in range(m)}
    assert _identity_counts(schedule) == expected
    for rank, acts in enumerate(schedule.actions):
        assert all(a.stage % p == rank for a in acts)
        for stage in range(rank, v * p, p):
            assert [a.microbatch for a in acts if a.kind == "F" and a.stage == stage] == list(
                range(m)
            )
    assert len(simulate(schedule, 1.0, 2.0, p2p_latency=0.5).events) == 2 * v * p * m


@given(pipeline_shapes(max_stages=8, max_microbatches=20))
def test_interleaved_with_one_chunk_is_one_f_one_b(shape):
    """v = 1 is plain 1F1B, for every m."""
    p, m = shape
    assert interleaved_1f1b(p, m, 1) == one_f_one_b(p, m)


def test_interleaved_accepts_pytorchs_relaxation():
    """p = 4 accepts m = 10 (2 rounds of 5) and m = 3 (1 round of 3), as PyTorch 2.13 does;
    Megatron-LM's m % p == 0 is contained; m = 9 (2 rounds do not divide 9) is refused."""
    for m in (3, 4, 8, 10, 12):
        assert interleaved_1f1b(4, m, 2).num_stages == 8
    with pytest.raises(ValueError, match="num_microbatches=9 is not accepted") as info:
        interleaved_1f1b(4, 9, 2)
    assert "multiple of 2" in str(info.value)


@pytest.mark.parametrize(
    "args, error, fragment",
    [
        ((4, 8, 0), ValueError, "chunks_per_rank must be an int >= 1, got 0"),
        ((4, 8, -2), ValueError, "chunks_per_rank must be an int >= 1, got -2"),
        ((4, 8, 2.0), TypeError, "chunks_per_rank"),
        ((4, 8, True), TypeError, "chunks_per_rank"),
        ((0, 8, 2), ValueError, "num_ranks must be an int >= 1, got 0"),
        ((4, 0, 2), ValueError, "num_microbatches must be an int >= 1, got 0"),
        ((4, 11, 3), ValueError, "num_microbatches=11 is not accepted with num_ranks=4"),
        ((3, 7, 2), ValueError, "multiple of 2"),
    ],
)
def test_interleaved_rejects_bad_arguments(args, error, fragment):
    """chunks_per_rank < 1, non-integers and (p, m, v) outside the accepted set: clear errors
    naming the argument."""
    with pytest.raises(error) as info:
        interleaved_1f1b(*args)
    assert fragment in str(info.value)


@given(st.integers(1, 8), st.integers(1, 40), st.integers(2, 4))
def test_interleaved_acceptance_is_the_stated_rule(p, m, v):
    """interleaved_1f1b accepts (p, m, v > 1) exactly when max(1, m // p) divides m."""
    if accepted_interleaved(p, m, v):
        assert interleaved_1f1b(p, m, v).num_microbatches == m
    else:
        with pytest.raises(ValueError, match="num_microbatches"):
            interleaved_1f1b(p, m, v)


def test_interleaved_placement_error_names_rank_and_position():
    """A stage the rank does not hold (interleaved placement, 4 stages on 2 ranks)."""
    acts = ((Action("F", 0, 0), Action("F", 3, 0)), (Action("F", 1, 0),))
    with pytest.raises(ValueError) as info:
        Schedule(4, 1, 2, acts)
    assert "rank 0, position 1: F(s3,m0) is on rank 0 but stage 3 lives on rank 1" in str(
        info.value
    )


# --- ZB-H1 (pipe04) ---------------------------------------------------------------------------


def test_zero_bubble_h1_p4_m6_by_hand():
    """ZB-H1, p = 4, m = 6: stage s keeps 1F1B's F/B order and runs W(j) right after B(j + s);
    the last s W run at the end (Qi et al. 2024, Fig. 3 top)."""
    expected = [
        "F0 F1 F2 F3 B0 W0 F4 B1 W1 F5 B2 W2 B3 W3 B4 W4 B5 W5",
        "F0 F1 F2 B0 F3 B1 W0 F4 B2 W1 F5 B3 W2 B4 W3 B5 W4 W5",
        "F0 F1 B0 F2 B1 F3 B2 W0 F4 B3 W1 F5 B4 W2 B5 W3 W4 W5",
        "F0 B0 F1 B1 F2 B2 F3 B3 W0 F4 B4 W1 F5 B5 W2 W3 W4 W5",
    ]
    assert zero_bubble_h1(4, 6).actions == tuple(order(s, t) for s, t in enumerate(expected))
    assert zero_bubble_h1(4, 6).has_weight_actions


@given(pipeline_shapes(max_stages=8, max_microbatches=16))
@settings(deadline=None)
def test_zero_bubble_h1_structure(shape):
    """Each (stage, microbatch) has one F, one B and one W, in microbatch order per kind; F and B
    are in 1F1B's order; every W comes after its B; the simulator completes it."""
    p, m = shape
    schedule = zero_bubble_h1(p, m)
    expected = {(k, s, j): 1 for k in "FBW" for s in range(p) for j in range(m)}
    assert _identity_counts(schedule) == expected
    for acts, plain in zip(schedule.actions, one_f_one_b(p, m).actions, strict=True):
        assert [a for a in acts if a.kind != "W"] == list(plain)
        assert [a.microbatch for a in acts if a.kind == "W"] == list(range(m))
        position = {(a.kind, a.microbatch): i for i, a in enumerate(acts)}
        assert all(position[("W", j)] > position[("B", j)] for j in range(m))
    assert len(simulate(schedule, 1.0, 1.0, 1.0, p2p_latency=0.25).events) == 3 * p * m


@pytest.mark.parametrize("argument", ["num_stages", "num_microbatches"])
@pytest.mark.parametrize("value, error", [(0, ValueError), (2.0, TypeError)])
def test_zero_bubble_h1_rejects_bad_arguments(argument, value, error):
    """Bad counts raise, naming the argument."""
    args = {"num_stages": 4, "num_microbatches": 8, argument: value}
    with pytest.raises(error, match=argument):
        zero_bubble_h1(**args)


# --- the columnar Schedule: generators built from arrays, Action views, equality ----------------


@given(interleaved_shapes(max_ranks=7, max_microbatches=24))
@settings(deadline=None)
def test_array_generators_equal_the_action_by_action_reference(shape):
    """gpipe, one_f_one_b, zero_bubble_h1 and interleaved_1f1b, built from arrays, equal the
    action-by-action generators they replaced (tests/pipeline_reference.py), as Schedules and as
    Action tuples."""
    p, m, v = shape
    pairs = [
        (gpipe(p, m), reference.gpipe(p, m)),
        (one_f_one_b(p, m), reference.one_f_one_b(p, m)),
        (zero_bubble_h1(p, m), reference.zero_bubble_h1(p, m)),
        (interleaved_1f1b(p, m, v), reference.interleaved_1f1b(p, m, v)),
    ]
    for ours, theirs in pairs:
        assert ours == theirs and theirs == ours
        assert hash(ours) == hash(theirs)
        assert ours.actions == theirs.actions
        assert all(type(a) is Action for acts in ours.actions for a in acts)
        assert str(ours) == str(theirs)
        assert repr(ours) == repr(theirs)


def test_schedule_equality_sees_every_field():
    """Different name, order or shape: not equal (and the comparison with a non-Schedule is not
    an error)."""
    base = one_f_one_b(3, 4)
    assert base == one_f_one_b(3, 4)
    assert base != gpipe(3, 4)
    assert base != Schedule(3, 4, 3, base.actions, name="other")
    assert base != one_f_one_b(3, 5)
    assert base != "1F1B"
    swapped = list(base.actions)
    swapped[0] = swapped[0][1:] + swapped[0][:1]
    assert base != Schedule(3, 4, 3, swapped, name="1F1B")


def test_schedule_pickles_copies_and_crosses_the_grader_wire():
    """A generated schedule survives pickle, copy and the grader's JSON wire (which rebuilds a
    course dataclass through its constructor from its fields) as an equal Schedule."""
    import copy
    import pickle

    from course_lib.machinery.grader import wire

    schedule = interleaved_1f1b(3, 6, 2)
    simulate(schedule, 1.0, 1.0)  # caches the simulator's encoding on the object
    for clone in (
        pickle.loads(pickle.dumps(schedule)),
        copy.deepcopy(schedule),
        copy.copy(schedule),
        wire.loads(wire.dumps(schedule)),
    ):
        assert type(clone) is Schedule and clone == schedule
        assert clone.actions == schedule.actions
    assert dataclasses.replace(schedule, name="renamed").actions == schedule.actions


@pytest.mark.parametrize(
    "columns, fragment",
    [
        (([0], [1], [0], [0, 1, 1]), "rank 0, position 0: F(s1,m0) is on rank 0 but stage 1 lives"),
        (([0, 1], [0, 4], [0, 0], [0, 2, 2]), "rank 0, position 1: B(s4,m0) has stage 4 outside"),
        (([0, 2], [1, 1], [0, 3], [0, 0, 2]), "rank 1, position 1: W(s1,m3) has microbatch 3"),
        (([5], [0], [0], [0, 1, 1]), "rank 0, position 0: <kind code 5>(s0,m0) has kind"),
    ],
)
def test_columns_are_validated_with_rank_and_position(columns, fragment):
    """The array path (what the generators use) checks every action at once and names the first
    bad one by rank and position, like the Action path."""
    with pytest.raises(ValueError) as info:
        Schedule._from_columns(2, 2, 2, *(np.array(c) for c in columns))
    assert fragment in str(info.value)


def test_duplicate_actions_are_named_with_both_places():
    """A Schedule may list an action twice (it is data); simulating it is an error naming the
    first repeat in rank order and where it appeared first."""
    a = Action
    schedule = Schedule(
        2, 2, 2, ((a("F", 0, 0), a("F", 0, 1), a("F", 0, 0)), (a("F", 1, 0), a("F", 1, 0)))
    )
    with pytest.raises(ValueError) as info:
        simulate(schedule, 1.0, 1.0)
    assert str(info.value) == (
        "F(s0,m0) appears twice (rank 0 position 0, rank 0 position 2); "
        "each action may run at most once"
    )
