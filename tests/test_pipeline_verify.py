"""course_lib.pipeline.verify (pipe10): every generator's schedules pass clean; mutated ones (a
duplicated, a dropped, a swapped and an out-of-range action) are caught, naming rank, position and
action; each rule on its own; verify's verdict against the simulator on every adjacent swap; the
memory peak against Timeline.peak_in_flight; weight versions against a brute-force walk and
PipeDream's p - s; the numeric model against finite differences; bad arguments raise, malformed
schedules never do."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course_lib.pipeline import (
    Action,
    Schedule,
    ScheduleDeadlock,
    Violation,
    gpipe,
    interleaved_1f1b,
    one_f_one_b,
    simulate,
    verify,
    zero_bubble_h1,
)
from course_lib.pipeline.verify import RULES, reference_gradients, run_schedule
from tests.strategies import random_pipeline_schedules

GENERATORS = {
    "gpipe": lambda p, m: gpipe(p, m),
    "1f1b": lambda p, m: one_f_one_b(p, m),
    "interleaved": lambda p, m: interleaved_1f1b(p, m, 2),
    "zb-h1": lambda p, m: zero_bubble_h1(p, m),
}
SIZES = [(1, 1), (2, 3), (3, 6), (4, 8), (4, 2)]


def _lists(schedule: Schedule) -> list[list[tuple]]:
    return [[(a.kind, a.stage, a.microbatch) for a in rank] for rank in schedule.actions]


def _rules(found: list[Violation]) -> set[str]:
    return {v.rule for v in found}


# --- clean schedules -------------------------------------------------------------------------


@pytest.mark.parametrize("name", GENERATORS)
@pytest.mark.parametrize(("p", "m"), SIZES)
def test_generators_pass_clean(name, p, m):
    """Each generator's own schedule, as a Schedule and as plain tuples, with the numeric check
    and the memory bound at the simulator's peak: no violation."""
    schedule = GENERATORS[name](p, m)
    peak = simulate(schedule, 1.0, 2.0, 1.0).peak_in_flight
    assert verify(schedule, numeric=True, max_in_flight=list(peak)) == []
    assert verify(_lists(schedule), schedule.num_stages, m, numeric=True) == []


@settings(max_examples=30, deadline=None)
@given(random_pipeline_schedules())
def test_random_valid_schedules_pass_clean(schedule):
    """Any deadlock-free topological order (the strategy's) is clean, numerics included."""
    assert verify(schedule, numeric=True) == []


# --- mutated schedules of every generator ----------------------------------------------------


@pytest.mark.parametrize("name", GENERATORS)
@pytest.mark.parametrize(("p", "m"), [(2, 3), (3, 6), (4, 8)])
def test_mutations_of_every_generator(name, p, m):
    schedule = GENERATORS[name](p, m)
    S = schedule.num_stages
    base = _lists(schedule)
    rank = len(base) - 1
    k = len(base[rank]) // 2
    target = base[rank][k]

    duplicated = [list(r) for r in base]
    duplicated[rank].insert(k + 1, target)
    assert verify(duplicated, S, m) == [
        Violation(
            "duplicate", rank, k + 1, target,
            f"{_fmt(target)} is listed before, at rank {rank} position {k}",
        )
    ]  # fmt: skip

    dropped = [list(r) for r in base]
    del dropped[rank][k]
    found = verify(dropped, S, m, numeric=True)
    assert found[0] == Violation(
        "missing", rank, None, Action(*target),
        f"{_fmt(target)} is in no rank's list (stage {target[1]} is on rank {rank})",
    )  # fmt: skip
    assert _rules(found) == {"missing", "numeric"}  # the skipped work changes the gradients

    out_of_range = [list(r) for r in base]
    out_of_range[rank][k] = (target[0], S, target[2])
    found = verify(out_of_range, S, m)
    assert [(v.rule, v.rank, v.position, v.action) for v in found] == [
        ("range", rank, k, (target[0], S, target[2])),
        ("missing", rank, None, Action(*target)),
    ]
    bad_mb = [list(r) for r in base]
    bad_mb[rank][k] = (target[0], target[1], m)
    assert "microbatch" in verify(bad_mb, S, m)[0].message

    # Swap an F with its own B on the same rank: the B now comes first.
    forward = next(i for i, a in enumerate(base[0]) if a[0] == "F")
    f = base[0][forward]
    backward = base[0].index(("B", f[1], f[2]))
    swapped = [list(r) for r in base]
    swapped[0][forward], swapped[0][backward] = swapped[0][backward], swapped[0][forward]
    found = verify(swapped, S, m)
    assert found[0] == Violation(
        "dependency", 0, forward, ("B", f[1], f[2]),
        f"B(s{f[1]},m{f[2]}) is listed before its dependency F(s{f[1]},m{f[2]}) on the same rank "
        f"(position {backward})",
    )  # fmt: skip
    assert _rules(found) <= {"dependency", "progress"}
    with pytest.raises(ScheduleDeadlock):  # the simulator agrees the order is wrong
        simulate(Schedule(S, m, len(base), [[Action(*a) for a in r] for r in swapped]), 1, 1)


def _fmt(entry: tuple) -> str:
    return f"{entry[0]}(s{entry[1]},m{entry[2]})"


@pytest.mark.parametrize("name", GENERATORS)
def test_every_adjacent_swap_agrees_with_the_simulator(name):
    """For every adjacent swap on every rank: verify is clean exactly when the simulator runs
    the swapped schedule; it reports dependency or progress exactly when the simulator
    deadlocks."""
    schedule = GENERATORS[name](3, 4)
    base = _lists(schedule)
    for r, rank_actions in enumerate(base):
        for k in range(len(rank_actions) - 1):
            swapped = [list(x) for x in base]
            swapped[r][k], swapped[r][k + 1] = swapped[r][k + 1], swapped[r][k]
            found = verify(swapped, schedule.num_stages, 4, numeric=True)
            try:
                built = Schedule(
                    schedule.num_stages, 4, len(base), [[Action(*a) for a in x] for x in swapped]
                )
                simulate(built, 1.0, 2.0, 0.5)
                runs = True
            except ScheduleDeadlock:
                runs = False
            assert (found == []) == runs, (r, k, found)
            if not runs:  # the order is wrong; the numeric run then misses work too
                assert _rules(found) & {"dependency", "progress"}
                assert _rules(found) <= {"dependency", "progress", "numeric"}


# --- each rule -------------------------------------------------------------------------------


def test_malformed_entries_and_ranks():
    found = verify([["junk", ("F", 0.5, 0), ("F", 0)], 7], 1, 1)
    assert [(v.rule, v.rank, v.position, v.action) for v in found[:4]] == [
        ("malformed", 0, 0, "junk"),
        ("malformed", 0, 1, ("F", 0.5, 0)),
        ("malformed", 0, 2, ("F", 0)),
        ("malformed", 1, None, 7),
    ]
    assert "stage and microbatch must be ints" in found[1].message
    huge = verify([[("F", 10**30, 0), ("F", 0, 0), ("B", 0, 0)]], 1, 1)
    assert [(v.rule, v.position) for v in huge] == [("malformed", 0)]
    assert {"missing"} == _rules(found[4:])


def test_unknown_kind_and_undeclared_w():
    actions = [[("F", 0, 0), ("X", 0, 0), (["B"], 0, 0), ("B", 0, 0), ("W", 0, 0)]]
    found = verify(actions, 1, 1)
    assert [(v.rule, v.position) for v in found] == [("kind", 1), ("kind", 2)]
    assert "'X'" in found[0].message
    found = verify(actions, 1, 1, split_backward=False)
    assert [(v.rule, v.position) for v in found] == [("kind", 1), ("kind", 2), ("kind", 4)]
    assert "split_backward=False" in found[2].message
    # Declared split, no W listed: every W is missing.
    found = verify(gpipe(2, 2), split_backward=True)
    assert {(v.rule, v.action) for v in found} == {
        ("missing", Action("W", s, j)) for s in range(2) for j in range(2)
    }


def test_missing_names_every_absent_action_and_its_rank():
    found = verify([[("F", 0, 0)], [("F", 1, 0)]], 2, 2)
    assert [(v.rule, v.rank, v.position, str(v.action)) for v in found] == [
        ("missing", 0, None, "F(s0,m1)"),
        ("missing", 1, None, "F(s1,m1)"),
        ("missing", 0, None, "B(s0,m0)"),
        ("missing", 0, None, "B(s0,m1)"),
        ("missing", 1, None, "B(s1,m0)"),
        ("missing", 1, None, "B(s1,m1)"),
    ]


def test_placement_default_and_given():
    schedule = one_f_one_b(2, 2)
    moved = _lists(schedule)[::-1]  # stage 1's list on rank 0 and stage 0's on rank 1
    found = verify(moved, 2, 2)
    assert _rules(found) == {"placement"}
    assert found[0] == Violation(
        "placement", 0, 0, ("F", 1, 0), "F(s1,m0) is on rank 0 but stage 1 is held by rank 1"
    )
    assert verify(moved, 2, 2, placement=[1, 0], numeric=True) == []
    # A placement the Schedule constructor cannot express: stages 0-1 on rank 0, 2-3 on rank 1.
    four = _lists(one_f_one_b(4, 3))
    blocks = [four[0] + four[1], four[2] + four[3]]
    found = verify(blocks, 4, 3, placement=[0, 0, 1, 1])
    assert _rules(found) == {"dependency"}  # rank 0 lists all of stage 0 before stage 1


def test_dependency_each_kind():
    """B before W, and a forward before its upstream forward, on one rank."""
    found = verify([[("F", 0, 0), ("W", 0, 0), ("B", 0, 0)]], 1, 1)
    assert found == [
        Violation(
            "dependency", 0, 1, ("W", 0, 0),
            "W(s0,m0) is listed before its dependency B(s0,m0) on the same rank (position 2)",
        )
    ]  # fmt: skip
    chain = [[("F", 1, 0), ("F", 0, 0), ("B", 1, 0), ("B", 0, 0)]]
    found = verify(chain, 2, 1, placement=[0, 0])
    assert [(v.rule, v.position, v.action) for v in found] == [("dependency", 0, ("F", 1, 0))]
    upward = [[("F", 0, 0), ("F", 1, 0), ("B", 0, 0), ("B", 1, 0)]]
    found = verify(upward, 2, 1, placement=[0, 0])
    assert [(v.rule, v.position, v.action) for v in found] == [("dependency", 2, ("B", 0, 0))]


def test_progress_reports_each_blocked_rank():
    """Rank 1 starts with microbatch 1, rank 0 wants B(s1,m0) first: each waits for the other,
    and no rank lists anything out of its own order."""
    actions = [
        [("F", 0, 0), ("B", 0, 0), ("F", 0, 1), ("B", 0, 1)],
        [("F", 1, 1), ("F", 1, 0), ("B", 1, 0), ("B", 1, 1)],
    ]
    found = verify(actions, 2, 2)
    assert found == [
        Violation(
            "progress", 0, 1, ("B", 0, 0),
            "rank 0 is blocked at B(s0,m0): it waits for B(s1,m0) at rank 1 position 2, behind "
            "rank 1's blocked position 0 (deadlock)",
        ),
        Violation(
            "progress", 1, 0, ("F", 1, 1),
            "rank 1 is blocked at F(s1,m1): it waits for F(s0,m1) at rank 0 position 2, behind "
            "rank 0's blocked position 1 (deadlock)",
        ),
    ]  # fmt: skip
    with pytest.raises(ScheduleDeadlock):
        simulate(Schedule(2, 2, 2, [[Action(*a) for a in r] for r in actions]), 1, 1)


@pytest.mark.parametrize("name", GENERATORS)
@pytest.mark.parametrize(("p", "m"), [(3, 6), (4, 8), (4, 3)])
def test_memory_peak_is_the_simulators(name, p, m):
    """max_in_flight at Timeline.peak_in_flight is clean; one less flags exactly the stages
    whose peak is above it, at the first F over the bound, with the peak in the message."""
    schedule = GENERATORS[name](p, m)
    peak = simulate(schedule, 1.0, 2.0, 0.5).peak_in_flight
    assert [v for v in verify(schedule, max_in_flight=list(peak)) if v.rule == "memory"] == []
    bound = [max(int(x) - 1, 1) for x in peak]
    found = verify(schedule, max_in_flight=bound)
    assert [int(v.action.stage) for v in found] == [s for s, x in enumerate(peak) if x > 1]
    for v in found:
        s = v.action.stage
        assert v.rule == "memory" and v.action.kind == "F"
        assert f"(peak {int(peak[s])})" in v.message
        on_stage = [a for a in schedule.actions[v.rank][: v.position + 1] if a.stage == s]
        release = "W" if schedule.has_weight_actions else "B"
        live = sum(a.kind == "F" for a in on_stage) - sum(a.kind == release for a in on_stage)
        assert live == bound[s] + 1


def _versions_brute(schedule: Schedule) -> list[int]:
    """Peak weight versions per stage under per-backward updates with stashing, walking each
    stage's list and recounting the set of versions after every action."""
    release = "W" if schedule.has_weight_actions else "B"
    peaks = []
    for s in range(schedule.num_stages):
        current, stashed, peak = 0, {}, 1
        for a in schedule.actions[schedule.rank_of(s)]:
            if a.stage != s:
                continue
            if a.kind == "F":
                stashed[a.microbatch] = current
            if a.kind == release:
                del stashed[a.microbatch]
                current += 1
            peak = max(peak, len(set(stashed.values()) | {current}))
        peaks.append(peak)
    return peaks


@pytest.mark.parametrize("name", GENERATORS)
@pytest.mark.parametrize(("p", "m"), [(3, 6), (4, 8), (4, 3), (2, 4)])
def test_weight_versions_against_brute_force(name, p, m):
    schedule = GENERATORS[name](p, m)
    peaks = _versions_brute(schedule)
    kwargs = {"weight_updates": "per_backward"}
    assert verify(schedule, max_versions=peaks, **kwargs) == []
    found = verify(schedule, max_versions=[max(x - 1, 1) for x in peaks], **kwargs)
    assert sorted(v.action.stage for v in found) == [s for s, x in enumerate(peaks) if x > 1]
    assert all(v.rule == "version" for v in found)


@pytest.mark.parametrize("p", [2, 3, 4, 5])
def test_pipedream_holds_p_minus_s_versions_in_1f1b(p):
    """PipeDream (Narayanan et al. 2019, Sec. 3.3): with per-backward updates and weight
    stashing, stage s of a steady 1F1B pipeline holds p - s versions."""
    assert _versions_brute(one_f_one_b(p, 3 * p)) == [p - s for s in range(p)]
    found = verify(one_f_one_b(p, 3 * p), weight_updates="per_backward", max_versions=1)
    assert [v.rank for v in found] == list(range(p - 1))


def test_without_weight_stashing_a_backward_on_newer_weights_is_reported():
    found = verify(one_f_one_b(3, 4), weight_updates="per_backward", stash_weights=False)
    assert [(v.rule, v.rank, v.position, str(v.action)) for v in found] == [
        ("version", 0, 5, "B(s0,m1)"),  # F0 F1 F2 B0 F3 B1: B0's update came between F1 and B1
        ("version", 1, 4, "B(s1,m1)"),  # F0 F1 B0 F2 B1
    ]
    assert "version 1 but its forward used version 0" in found[0].message
    # GPipe: every F before the first update, so every B after the first sees a newer version.
    assert [v.rank for v in verify(gpipe(2, 2), weight_updates="per_backward",
                                   stash_weights=False)] == [0, 1]  # fmt: skip
    # The last stage of 1F1B runs F, B alternately: no B ever sees a newer version.
    assert verify(one_f_one_b(1, 5), weight_updates="per_backward", stash_weights=False) == []


# --- the numeric check -----------------------------------------------------------------------


def test_reference_gradients_match_finite_differences():
    S, M = 3, 2
    grads = reference_gradients(S, M, seed=4)
    g = np.random.default_rng(4)
    weights = [g.normal(0.0, 0.5, (4, 4)) for _ in range(S)]
    inputs = [g.normal(size=(3, 4)) for _ in range(M)]
    targets = [g.normal(size=(3, 4)) for _ in range(M)]

    def loss(ws):
        total = 0.0
        for x, t in zip(inputs, targets, strict=True):
            for w in ws:
                x = np.tanh(x @ w)
            total += 0.5 * np.sum((x - t) ** 2) / x.shape[0]
        return total / M

    eps = 1e-6
    for s in range(S):
        for a, b in [(0, 0), (1, 3), (3, 2)]:
            up = [w.copy() for w in weights]
            down = [w.copy() for w in weights]
            up[s][a, b] += eps
            down[s][a, b] -= eps
            numeric = (loss(up) - loss(down)) / (2 * eps)
            assert grads[s][a, b] == pytest.approx(numeric, rel=1e-6, abs=1e-10)


@pytest.mark.parametrize("name", GENERATORS)
def test_run_schedule_equals_the_reference(name):
    schedule = GENERATORS[name](3, 5)
    got = run_schedule(schedule, schedule.num_stages, 5, seed=2)
    want = reference_gradients(schedule.num_stages, 5, seed=2)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-15)


def test_run_schedule_refuses_a_stage_or_microbatch_mismatch():
    """Lists for 2 stages run as 3 (or 3 as 2) would give all-zero or partial gradients
    silently: run_schedule names the mismatch; verify still reports, never raises."""
    two, three = _lists(one_f_one_b(2, 3)), _lists(one_f_one_b(3, 3))
    with pytest.raises(ValueError, match=r"stages \[0, 1\] but num_stages=3"):
        run_schedule(two, 3, 3)
    with pytest.raises(ValueError, match=r"stages \[0, 1, 2\] but num_stages=2"):
        run_schedule(three, 2, 3)
    with pytest.raises(
        ValueError, match=r"F\(s0,m2\) at rank 0 position 3, but num_microbatches=2"
    ):
        run_schedule(two, 2, 2)
    with pytest.raises(ValueError, match="Schedule for 2 stages and 3 microbatches"):
        run_schedule(one_f_one_b(2, 3), 3, 3)
    assert {v.rule for v in verify(two, 3, 3)} == {"missing"}
    assert {v.rule for v in verify(three, 2, 3)} == {"range"}
    dropped = [[a for a in r if a != ("B", 1, 2)] for r in two]  # still every stage: runs
    grads = run_schedule(dropped, 2, 3)
    assert len(grads) == 2 and np.linalg.norm(grads[1]) > 0


def test_a_stash_in_the_wrong_order_is_caught_numerically():
    """GPipe's paper draws the backwards in reverse microbatch order: a FIFO stash then hands
    each backward another microbatch's activations (LIFO is right); in the forward order the
    reverse holds. Identity, dependency and progress rules see nothing either way."""
    p, m = 3, 4
    reverse = [
        [("F", s, j) for j in range(m)] + [("B", s, j) for j in reversed(range(m))]
        for s in range(p)
    ]
    assert verify(reverse, p, m, numeric=True, stash="lifo") == []
    found = verify(reverse, p, m, numeric=True, stash="fifo")
    assert [(v.rule, v.rank, v.position, v.action) for v in found] == [
        ("numeric", s, None, None) for s in range(p)
    ]
    assert "relative error" in found[0].message
    assert verify(gpipe(p, m), numeric=True, stash="fifo") == []
    assert _rules(verify(gpipe(p, m), numeric=True, stash="lifo")) == {"numeric"}


def test_a_dropped_w_changes_only_its_stage():
    actions = _lists(zero_bubble_h1(3, 4))
    actions[1].remove(("W", 1, 2))
    found = verify(actions, 3, 4, numeric=True)
    assert [(v.rule, v.rank) for v in found] == [("missing", 1), ("numeric", 1)]


# --- arguments, malformed input and the violation's form -------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"num_stages": 0}, ValueError, "num_stages"),
        ({"num_microbatches": 1.5}, TypeError, "num_microbatches"),
        ({"num_ranks": 3}, ValueError, "num_ranks=3 but actions has 2"),
        ({"placement": [0]}, ValueError, "placement has 1 entries"),
        ({"placement": [0, 2]}, ValueError, r"placement\[1\] = 2"),
        ({"placement": "01"}, TypeError, "placement"),
        ({"max_in_flight": 0}, ValueError, "max_in_flight"),
        ({"max_in_flight": [1, 0]}, ValueError, r"max_in_flight\[1\]"),
        ({"max_versions": [1]}, ValueError, "max_versions has 1"),
        ({"weight_updates": "2bw"}, ValueError, "weight_updates"),
        ({"stash_weights": 1}, TypeError, "stash_weights"),
        ({"stash": "random"}, ValueError, "stash must be one of"),
        ({"split_backward": "yes"}, TypeError, "split_backward"),
        ({"rtol": -1.0}, ValueError, "rtol"),
        ({"numeric": "yes"}, TypeError, "numeric"),
    ],
)
def test_bad_arguments_raise(kwargs, error, match):
    args = {"num_stages": 2, "num_microbatches": 2, **kwargs}
    with pytest.raises(error, match=match):
        verify(_lists(gpipe(2, 2)), **args)


def test_bad_actions_argument_raises():
    with pytest.raises(TypeError, match="actions must be"):
        verify(5, 1, 1)
    with pytest.raises(TypeError, match="num_stages and num_microbatches"):
        verify([[("F", 0, 0)]])
    with pytest.raises(ValueError, match="no per-rank lists"):
        verify([], 1, 1)


def test_a_schedule_is_checked_against_the_shape_asked_for():
    found = verify(gpipe(2, 3), 2, 4)
    assert {(v.rule, str(v.action)) for v in found} == {
        ("missing", f"{k}(s{s},m3)") for k in "FB" for s in range(2)
    }
    found = verify(gpipe(2, 3), 2, 2)
    assert _rules(found) == {"range"} and len(found) == 4


ENTRY = st.one_of(
    st.tuples(
        st.sampled_from(["F", "B", "W", "X", 3, None]),
        st.integers(-1, 3) | st.floats(0, 2) | st.none(),
        st.integers(-1, 3) | st.text(max_size=1),
    ),
    st.text(max_size=2),
    st.integers(),
    st.lists(st.integers(0, 2), max_size=4),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(ENTRY, max_size=8) | st.integers(), min_size=1, max_size=3),
       st.booleans())  # fmt: skip
def test_never_raises_on_malformed_schedules(actions, numeric):
    found = verify(actions, 3, 3, numeric=numeric, max_in_flight=2,
                   weight_updates="per_backward", max_versions=2)  # fmt: skip
    assert all(isinstance(v, Violation) and v.rule in RULES for v in found)
    assert found  # nothing here covers all 18 actions of 3 stages x 3 microbatches
    ranks = [v.rank for v in found if v.rank is not None]
    assert all(0 <= r < len(actions) for r in ranks)


def test_violation_str_names_rule_rank_position():
    v = verify([[("F", 0, 0), ("F", 0, 0), ("B", 0, 0)]], 1, 1)[0]
    assert (
        str(v) == "[duplicate] rank 0, position 1: F(s0,m0) is listed before, at rank 0 position 0"
    )


def test_large_schedule_is_clean():
    """interleaved_1f1b(32, 256, 4): 65,536 actions (timed in benchmarks/bench_verify.py)."""
    schedule = interleaved_1f1b(32, 256, 4)
    assert verify(schedule) == []
    broken = _lists(schedule)
    broken[5][100] = broken[5][99]
    found = verify(broken, 128, 256)
    assert [(v.rule, v.rank, v.position) for v in found[:1]] == [("duplicate", 5, 100)]
    assert _rules(found) == {"duplicate", "missing"}
