"""Tests for course_lib.pipeline.schedule: the Schedule IR, its validation, GPipe and 1F1B orders."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from course_lib.pipeline import Action, Schedule, gpipe, one_f_one_b, simulate
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
