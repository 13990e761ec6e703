"""Tests for course_lib.pipeline.simulate: the event-driven simulator and its Timeline."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course_lib.pipeline import (
    Action,
    Schedule,
    ScheduleDeadlock,
    Timeline,
    gpipe,
    interleaved_1f1b,
    one_f_one_b,
    simulate,
    zero_bubble_h1,
)
from tests import pipeline_reference as reference
from tests.strategies import (
    PIPE_GRID_TIMES,
    PIPE_TIMES,
    pipeline_shapes,
    random_pipeline_schedules,
)

A = Action


# --- an independent ground truth: the longest path of the action DAG (networkx) -------------


def action_dag(
    schedule: Schedule, costs: dict[str, list[float]], latency: float | list[float]
) -> nx.DiGraph:
    """Nodes = actions (attribute "duration"); an edge u -> v with weight duration(u) + hop, where
    hop = the latency of the link between their stages (one number, or one per stage boundary k |
    k + 1) for a dependency crossing ranks and 0 otherwise (also 0 between consecutive actions of
    one rank); a sink "end" after every action."""
    hops = [latency] * (schedule.num_stages - 1) if np.isscalar(latency) else list(latency)
    graph = nx.DiGraph()
    rank_of = {a: r for r, acts in enumerate(schedule.actions) for a in acts}
    for a in rank_of:
        graph.add_node(a, duration=costs[a.kind][a.stage])
        graph.add_edge(a, "end", weight=costs[a.kind][a.stage])
    p = schedule.num_stages
    for a, r in rank_of.items():
        deps = []
        if a.kind == "F" and a.stage > 0:
            deps.append(A("F", a.stage - 1, a.microbatch))
        if a.kind == "B":
            deps.append(A("F", a.stage, a.microbatch))
            if a.stage < p - 1:
                deps.append(A("B", a.stage + 1, a.microbatch))
        if a.kind == "W":
            deps.append(A("B", a.stage, a.microbatch))
        for d in deps:
            hop = hops[min(d.stage, a.stage)] if rank_of[d] != r else 0.0
            graph.add_edge(d, a, weight=graph.nodes[d]["duration"] + hop)
    for acts in schedule.actions:
        for u, v in zip(acts, acts[1:], strict=False):
            weight = graph.nodes[u]["duration"]
            if not graph.has_edge(u, v) or graph.edges[u, v]["weight"] < weight:
                graph.add_edge(u, v, weight=weight)
    return graph


def earliest_starts(graph: nx.DiGraph) -> dict[Action, float]:
    """Earliest start of every action: longest weighted path into it, in topological order."""
    start: dict = {}
    for node in nx.topological_sort(graph):
        preds = list(graph.predecessors(node))
        start[node] = max((start[u] + graph.edges[u, node]["weight"] for u in preds), default=0.0)
    return start


def per_stage(draw, p: int) -> list[float]:
    return draw(st.lists(PIPE_GRID_TIMES, min_size=p, max_size=p))


@st.composite
def costed_builtin_schedules(draw):
    """GPipe, 1F1B, ZB-H1 or interleaved 1F1B (v = 2, 3 with an accepted m) and per-stage costs
    (W costs only for ZB-H1)."""
    p, m = draw(pipeline_shapes(max_stages=6, max_microbatches=8))
    generator = draw(st.sampled_from(["gpipe", "1f1b", "zb-h1", "interleaved"]))
    if generator == "interleaved":
        p = min(p, 4)
        v = draw(st.integers(2, 3))
        m = draw(st.sampled_from([j for j in range(1, 9) if j % max(1, j // p) == 0]))
        schedule = interleaved_1f1b(p, m, v)
    else:
        schedule = {"gpipe": gpipe, "1f1b": one_f_one_b, "zb-h1": zero_bubble_h1}[generator](p, m)
    n = schedule.num_stages
    weights = per_stage(draw, n) if generator == "zb-h1" else [0.0] * n
    costs = {"F": per_stage(draw, n), "B": per_stage(draw, n), "W": weights}
    return schedule, costs, draw(PIPE_GRID_TIMES)


@st.composite
def costed_builtin_schedules_per_hop(draw):
    """Built-in schedules with per-stage costs and a different latency on every hop."""
    schedule, costs, _ = draw(costed_builtin_schedules())
    hops = draw(st.lists(PIPE_GRID_TIMES, min_size=schedule.num_stages - 1,
                         max_size=schedule.num_stages - 1))  # fmt: skip
    return schedule, costs, hops


@st.composite
def costed_random_schedules(draw):
    schedule = draw(random_pipeline_schedules())
    p = schedule.num_stages
    costs = {k: per_stage(draw, p) for k in "FBW"}
    return schedule, costs, draw(PIPE_GRID_TIMES)


def _check_against_longest_path(schedule, costs, latency):
    timeline = simulate(schedule, costs["F"], costs["B"], costs["W"], p2p_latency=latency)
    graph = action_dag(schedule, costs, latency)
    assert timeline.makespan == nx.dag_longest_path_length(graph, weight="weight")
    starts = earliest_starts(graph)
    got = {
        A(k, s, j): t
        for k, s, j, t in timeline.events[["kind", "stage", "microbatch", "start"]].itertuples(
            index=False
        )
    }
    assert got == {a: t for a, t in starts.items() if a != "end"}


@given(costed_builtin_schedules())
@settings(max_examples=150, deadline=None)
def test_makespan_is_longest_path_of_action_dag_builtin(case):
    """GPipe/1F1B/ZB-H1/interleaved 1F1B with random per-stage costs and latency: makespan and
    every start time equal the longest paths of the action DAG computed independently with
    networkx (exact: grid times)."""
    _check_against_longest_path(*case)


@given(costed_random_schedules())
@settings(max_examples=150, deadline=None)
def test_makespan_is_longest_path_of_action_dag_random(case):
    """The same for random deadlock-free schedules with interleaved placement and W actions."""
    _check_against_longest_path(*case)


@given(costed_builtin_schedules_per_hop())
@settings(max_examples=100, deadline=None)
def test_per_hop_latencies_are_longest_paths_of_action_dag(case):
    """One latency per hop (stage k to k + 1, both directions): makespan and start times equal the
    longest paths of the action DAG whose cross-rank edges carry that hop's latency."""
    _check_against_longest_path(*case)


@given(pipeline_shapes(max_stages=6, max_microbatches=8), PIPE_GRID_TIMES, PIPE_GRID_TIMES)
@settings(max_examples=50, deadline=None)
def test_scalar_latency_means_the_same_latency_on_every_hop(shape, t_f, latency):
    """p2p_latency=δ and p2p_latency=[δ] * (p - 1) (list or array) give the same events."""
    p, m = shape
    scalar = simulate(one_f_one_b(p, m), t_f, 2 * t_f, p2p_latency=latency)
    listed = simulate(one_f_one_b(p, m), t_f, 2 * t_f, p2p_latency=[latency] * (p - 1))
    array = simulate(one_f_one_b(p, m), t_f, 2 * t_f, p2p_latency=np.full(p - 1, latency))
    pd.testing.assert_frame_equal(scalar.events, listed.events)
    pd.testing.assert_frame_equal(scalar.events, array.events)


def test_gpipe_pays_each_hop_twice_by_hand():
    """GPipe p=3, m=2, t_f=1, t_b=2, hops [0.5, 0.25]: F(2,0) starts at 1 + 0.5 + 1 + 0.25 = 2.75,
    the last F ends at 4.75, the backwards climb back paying 0.25 then 0.5: makespan
    (m + p - 1)(t_f + t_b) + 2·(0.5 + 0.25) = 13.5."""
    timeline = simulate(gpipe(3, 2), 1.0, 2.0, p2p_latency=[0.5, 0.25])
    events = timeline.events.set_index(["kind", "stage", "microbatch"])
    assert events.loc[("F", 2, 0), "start"] == 2.75
    assert events.loc[("F", 2, 1), "end"] == 4.75
    assert events.loc[("B", 1, 0), "start"] == 4.75 + 2.0 + 0.25
    assert timeline.makespan == 13.5


# --- a small timeline worked by hand --------------------------------------------------------


def test_gpipe_two_stages_by_hand():
    """GPipe p=2, m=2, t_f=1, t_b=2, latency 0.5: every start and end as computed on paper."""
    timeline = simulate(gpipe(2, 2), 1.0, 2.0, p2p_latency=0.5)
    expected = pd.DataFrame(
        [
            (0, "F", 0, 0, 0.0, 1.0),
            (0, "F", 0, 1, 1.0, 2.0),
            (0, "B", 0, 0, 6.0, 8.0),  # waits for B(1,0) ending at 5.5, plus 0.5
            (0, "B", 0, 1, 8.0, 10.0),
            (1, "F", 1, 0, 1.5, 2.5),  # F(0,0) ends at 1, plus 0.5
            (1, "F", 1, 1, 2.5, 3.5),
            (1, "B", 1, 0, 3.5, 5.5),
            (1, "B", 1, 1, 5.5, 7.5),
        ],
        columns=["rank", "kind", "stage", "microbatch", "start", "end"],
    )
    got = timeline.events
    assert list(got.columns) == ["rank", "kind", "stage", "microbatch", "start", "end"]
    assert got[["rank", "stage", "microbatch"]].to_numpy().tolist() == (
        expected[["rank", "stage", "microbatch"]].to_numpy().tolist()
    )
    assert got["kind"].tolist() == expected["kind"].tolist()
    np.testing.assert_array_equal(got[["start", "end"]].to_numpy(), expected[["start", "end"]])
    assert timeline.makespan == 10.0
    np.testing.assert_array_equal(timeline.busy, [6.0, 6.0])
    assert timeline.idle_fraction == pytest.approx(1 - 12 / 20)
    assert timeline.ideal_compute == 6.0
    assert timeline.overhead == pytest.approx(10 / 6 - 1)


def test_lifetimes_p4_m8_by_hand():
    """Stage 0, microbatch 0 with t_f=1, t_b=2: its stash lives [0, 12] under 1F1B (the backward
    wave returns right after F(3,0)) and [0, 19] under GPipe (after all 8 forwards on stage 3)."""
    assert simulate(one_f_one_b(4, 8), 1.0, 2.0).lifetime(0, 0) == (0.0, 12.0)
    assert simulate(gpipe(4, 8), 1.0, 2.0).lifetime(0, 0) == (0.0, 19.0)
    # The last stage frees each stash right after its own F and B: [3 + 3j, 3 + 3j + 3].
    assert simulate(one_f_one_b(4, 8), 1.0, 2.0).lifetime(3, 5) == (18.0, 21.0)


def test_per_stage_costs_are_used_per_stage():
    """A sequence of costs applies stage by stage: busy time of rank s = m (f_s + b_s)."""
    timeline = simulate(one_f_one_b(3, 4), [1.0, 2.0, 3.0], np.array([0.5, 0.25, 4.0]))
    np.testing.assert_allclose(timeline.busy, [4 * 1.5, 4 * 2.25, 4 * 7.0])
    durations = timeline.events["end"] - timeline.events["start"]
    f0 = timeline.events[(timeline.events["kind"] == "F") & (timeline.events["stage"] == 1)]
    assert (durations[f0.index] == 2.0).all()


@given(costed_random_schedules())
def test_events_table_shape_and_order(case):
    """One row per action, sorted by rank then start, rank order equal to the schedule's lists;
    end - start equals the action's cost; Timeline metrics follow their definitions."""
    schedule, costs, latency = case
    timeline = simulate(schedule, costs["F"], costs["B"], costs["W"], p2p_latency=latency)
    events = timeline.events
    assert len(events) == sum(len(acts) for acts in schedule.actions)
    assert events["rank"].is_monotonic_increasing
    for rank, acts in enumerate(schedule.actions):
        mine = events[events["rank"] == rank]
        assert mine["start"].is_monotonic_increasing
        assert [A(k, s, j) for k, s, j in mine[["kind", "stage", "microbatch"]].to_numpy()] == list(
            acts
        )
        assert (mine["start"].to_numpy()[1:] >= mine["end"].to_numpy()[:-1]).all()
    expected_duration = [costs[k][s] for k, s in events[["kind", "stage"]].to_numpy()]
    np.testing.assert_array_equal(events["end"] - events["start"], expected_duration)
    busy = [sum(costs[a.kind][a.stage] for a in acts) for acts in schedule.actions]
    np.testing.assert_allclose(timeline.busy, busy)
    if timeline.makespan > 0:
        rank_time = schedule.num_ranks * timeline.makespan
        assert timeline.idle_fraction == pytest.approx(1 - sum(busy) / rank_time)
    if max(busy) > 0:
        assert timeline.overhead == pytest.approx(timeline.makespan / max(busy) - 1)


def test_timeline_is_frozen():
    """Timeline is a frozen dataclass and its arrays are read-only."""
    timeline = simulate(gpipe(2, 2), 1.0, 1.0)
    assert isinstance(timeline, Timeline)
    with pytest.raises(AttributeError):
        timeline.schedule = gpipe(3, 3)  # type: ignore[misc]
    with pytest.raises(ValueError):
        timeline.busy[0] = 0.0
    with pytest.raises(ValueError):
        timeline.peak_in_flight[0] = 0


def test_zero_costs_and_pure_latency():
    """All-zero costs: makespan 0, idle 0, overhead 0. Zero compute but latency: overhead infinite."""
    timeline = simulate(gpipe(3, 2), 0.0, 0.0)
    assert (timeline.makespan, timeline.idle_fraction, timeline.overhead) == (0.0, 0.0, 0.0)
    timeline = simulate(gpipe(3, 2), 0.0, 0.0, p2p_latency=1.0)
    assert timeline.makespan == 4.0  # 2 (p - 1) hops
    assert timeline.idle_fraction == 1.0
    assert math.isinf(timeline.overhead)


# --- stashes: lifetime, in-flight step function, peaks --------------------------------------


def stash_intervals(timeline: Timeline) -> dict[int, list[tuple[float, float]]]:
    """Brute force, row by row: per stage, (F start, release end) of each stash; the release is
    W if the schedule is split, else B; a stash never released lives until the makespan."""
    release = "W" if timeline.schedule.has_weight_actions else "B"
    born, freed = {}, {}
    for row in timeline.events.itertuples(index=False):
        if row.kind == "F":
            born[(row.stage, row.microbatch)] = row.start
        if row.kind == release:
            freed[(row.stage, row.microbatch)] = row.end
    intervals: dict[int, list[tuple[float, float]]] = {}
    for (stage, j), start in born.items():
        intervals.setdefault(stage, []).append((start, freed.get((stage, j), timeline.makespan)))
    return intervals


def live_at(intervals: list[tuple[float, float]], t: float) -> int:
    """Brute force: the stashes with start <= t < end."""
    return sum(start <= t < end for start, end in intervals)


@given(costed_random_schedules())
@settings(max_examples=100, deadline=None)
def test_in_flight_matches_brute_force_count(case):
    """The in-flight step function equals a direct count of live stashes at every breakpoint and
    midpoint; peak_in_flight is its maximum."""
    schedule, costs, latency = case
    timeline = simulate(schedule, costs["F"], costs["B"], costs["W"], p2p_latency=latency)
    intervals = stash_intervals(timeline)
    for stage in range(schedule.num_stages):
        times, counts = timeline.in_flight(stage)
        assert times.shape == counts.shape
        assert np.all(np.diff(times) > 0)
        probes = np.concatenate([times, (times[:-1] + times[1:]) / 2])
        for t in probes:
            k = np.searchsorted(times, t, side="right") - 1
            assert counts[k] == live_at(intervals.get(stage, []), t)
        peak = max((live_at(intervals.get(stage, []), t) for t in probes), default=0)
        assert timeline.peak_in_flight[stage] == peak
        if len(counts):
            assert counts[-1] == 0


def test_in_flight_nets_float_near_ties_no_false_dip():
    """1F1B(4, 8) at t_f = 1 ms, t_b = 2 ms: on stage 3, B3 ends at 0.015000000000000001 s and F4
    starts at 0.015000000000000003 s (float rounding of the same instant). They are netted as one
    instant, so the count stays at 1 until the last backward (it dipped to 0 at 15 ms when the
    edges were compared exactly); every stage's peak is still min(m, p - s)."""
    timeline = simulate(one_f_one_b(4, 8), 1e-3, 2e-3)
    freed, born = timeline.lifetime(3, 3)[1], timeline.lifetime(3, 4)[0]
    assert freed != born and abs(freed - born) < 1e-9 * timeline.makespan  # a real near-tie
    times, counts = timeline.in_flight(3)
    assert counts.tolist() == [1] * 8 + [0]
    assert np.all(np.diff(times) > 1e-9 * timeline.makespan)
    assert timeline.peak_in_flight.tolist() == [4, 3, 2, 1]
    for stage in range(4):
        assert np.all(timeline.in_flight(stage)[1][:-1] > 0)  # no stage empties mid-step


def test_in_flight_nets_float_near_ties_no_false_peak():
    """The opposite rounding: B0 ends at 0.1 + 0.2 = 0.30000000000000004 and F1 starts at 0.3.
    Compared exactly the birth comes first and the count reads 2; netted as one instant it is 1,
    as the order F0 B0 F1 B1 says."""
    schedule = Schedule(1, 2, 1, ((A("F", 0, 0), A("B", 0, 0), A("F", 0, 1), A("B", 0, 1)),))
    events = pd.DataFrame(
        {
            "rank": [0, 0, 0, 0],
            "kind": ["F", "B", "F", "B"],
            "stage": [0, 0, 0, 0],
            "microbatch": [0, 0, 1, 1],
            "start": [0.0, 0.1, 0.3, 0.4],
            "end": [0.1, 0.1 + 0.2, 0.4, 0.6],
        }
    )
    timeline = Timeline(schedule, events)
    assert timeline.lifetime(0, 0)[1] > timeline.lifetime(0, 1)[0]  # the birth sorts first
    times, counts = timeline.in_flight(0)
    assert counts.tolist() == [1, 1, 0]
    assert times.tolist() == [0.0, 0.3, 0.6]  # the netted instant is its earliest edge
    assert timeline.peak_in_flight.tolist() == [1]


def test_in_flight_keeps_edges_further_apart_than_the_tolerance():
    """Edges 1e-6 × makespan apart are separate instants: a stash freed just after the next one
    is born is a real overlap (peak 2)."""
    schedule = Schedule(1, 2, 1, ((A("F", 0, 0), A("B", 0, 0), A("F", 0, 1), A("B", 0, 1)),))
    events = pd.DataFrame(
        {
            "rank": [0] * 4,
            "kind": ["F", "B", "F", "B"],
            "stage": [0] * 4,
            "microbatch": [0, 0, 1, 1],
            "start": [0.0, 1.0, 2.0, 3.0],
            "end": [1.0, 2.0 + 4e-6, 3.0, 4.0],
        }
    )
    times, counts = Timeline(schedule, events).in_flight(0)
    assert counts.tolist() == [1, 2, 1, 0]
    assert times.tolist() == [0.0, 2.0, 2.0 + 4e-6, 4.0]


def test_lifetime_ends_at_weight_gradient_when_split():
    """With W actions, a stash lives until its W ends (not its B)."""
    schedule = Schedule(
        2,
        1,
        2,
        (
            (A("F", 0, 0), A("B", 0, 0), A("W", 0, 0)),
            (A("F", 1, 0), A("B", 1, 0), A("W", 1, 0)),
        ),
    )
    timeline = simulate(schedule, 1.0, 1.0, weight_cost=[2.0, 3.0])
    assert timeline.lifetime(1, 0) == (1.0, 6.0)  # F 1-2, B 2-3, W 3-6
    assert timeline.lifetime(0, 0) == (0.0, 6.0)  # F 0-1, B 3-4, W 4-6


def test_skipped_backward_runs_faster_and_leaks_its_stash():
    """Dropping B(0, 1) from GPipe still simulates (nothing waits for it) and looks faster; the
    stash of (0, 1) is never freed and lives until the makespan."""
    full = gpipe(2, 2)
    acts = list(full.actions[0])
    acts.remove(A("B", 0, 1))
    skipped = Schedule(2, 2, 2, (tuple(acts), full.actions[1]))
    honest, cheat = simulate(full, 1.0, 1.0), simulate(skipped, 1.0, 1.0)
    assert cheat.makespan < honest.makespan
    assert cheat.lifetime(0, 1) == (1.0, cheat.makespan)


def test_lifetime_and_in_flight_reject_bad_indices():
    """Out-of-range stage/microbatch and an F that never runs give clear errors."""
    timeline = simulate(gpipe(2, 2), 1.0, 1.0)
    with pytest.raises(ValueError, match="stage must be in"):
        timeline.lifetime(2, 0)
    with pytest.raises(ValueError, match="microbatch must be in"):
        timeline.lifetime(0, 2)
    with pytest.raises(ValueError, match="stage must be in"):
        timeline.in_flight(5)
    with pytest.raises(TypeError, match="stage"):
        timeline.in_flight(0.0)  # type: ignore[arg-type]
    partial = simulate(Schedule(1, 2, 1, ((A("F", 0, 0), A("B", 0, 0)),)), 1.0, 1.0)
    with pytest.raises(ValueError, match=r"F\(s0,m1\) is not in the schedule"):
        partial.lifetime(0, 1)


# --- deadlocks and bad input ----------------------------------------------------------------


def test_cross_rank_wait_cycle_deadlocks():
    """Rank 1 runs F(1,1) before F(1,0), which needs F(0,1) — behind rank 0's B(0,0), which needs
    B(1,0) — behind rank 1's blocked F(1,1): a wait cycle, reported rank by rank."""
    schedule = Schedule(
        2,
        2,
        2,
        (
            (A("F", 0, 0), A("B", 0, 0), A("F", 0, 1), A("B", 0, 1)),
            (A("F", 1, 1), A("F", 1, 0), A("B", 1, 0), A("B", 1, 1)),
        ),
    )
    with pytest.raises(ScheduleDeadlock) as info:
        simulate(schedule, 1.0, 1.0)
    message = str(info.value)
    assert "rank 0 blocked at position 1 on B(s0,m0): needs B(s1,m0)" in message
    assert "rank 1 blocked at position 0 on F(s1,m1): needs F(s0,m1)" in message
    assert isinstance(info.value, ValueError)


def test_backward_before_its_own_forward_deadlocks():
    """A backward listed before its own forward on the same rank can never start."""
    schedule = Schedule(1, 1, 1, ((A("B", 0, 0), A("F", 0, 0)),))
    with pytest.raises(ScheduleDeadlock, match=r"rank 0 blocked at position 0 on B\(s0,m0\)"):
        simulate(schedule, 1.0, 1.0)


def test_missing_dependency_deadlocks_and_says_so():
    """A forward whose upstream forward is in no list blocks forever; the message says so."""
    schedule = Schedule(2, 1, 2, ((A("B", 0, 0),), (A("F", 1, 0), A("B", 1, 0))))
    with pytest.raises(ScheduleDeadlock) as info:
        simulate(schedule, 1.0, 1.0)
    assert "needs F(s0,m0), which is in no rank's action list" in str(info.value)


def test_duplicate_action_is_rejected():
    """An action listed twice is an error naming both positions."""
    schedule = Schedule(1, 1, 1, ((A("F", 0, 0), A("F", 0, 0), A("B", 0, 0)),))
    with pytest.raises(ValueError, match=r"F\(s0,m0\) appears twice \(rank 0 position 0"):
        simulate(schedule, 1.0, 1.0)


@pytest.mark.parametrize(
    "kwargs, error, fragment",
    [
        (dict(forward_cost=-1.0), ValueError, "forward_cost must be >= 0"),
        (dict(backward_cost=float("nan")), ValueError, "backward_cost must be finite"),
        (dict(weight_cost=float("inf")), ValueError, "weight_cost must be finite"),
        (dict(forward_cost=[1.0, 2.0]), ValueError, "forward_cost has 2 per-stage costs"),
        (dict(forward_cost=[1.0, -2.0, 1.0]), ValueError, "forward_cost[1] (stage 1) must be >= 0"),
        (
            dict(backward_cost=[1.0, 1.0, float("nan")]),
            ValueError,
            "backward_cost[2] (stage 2) must be finite",
        ),
        (dict(forward_cost=np.ones((3, 1))), ValueError, "forward_cost must be a number or a 1-D"),
        (dict(forward_cost=True), TypeError, "forward_cost"),
        (dict(forward_cost="1.0"), TypeError, "forward_cost"),
        (dict(p2p_latency=-0.1), ValueError, "p2p_latency must be >= 0"),
        (dict(p2p_latency=[0.1]), ValueError, "p2p_latency has 1 per-hop latencies"),
        (dict(p2p_latency=[0.1, -0.1]), ValueError, "p2p_latency[1] (stage 1 -> 2) must be >= 0"),
        (dict(p2p_latency="0.1"), TypeError, "p2p_latency"),
    ],
)
def test_bad_costs_are_rejected_with_the_argument_named(kwargs, error, fragment):
    """Negative, NaN or infinite costs, wrong-length sequences and non-numbers raise clear errors
    naming the argument (and the stage for a per-stage sequence)."""
    args = {"forward_cost": 1.0, "backward_cost": 2.0, **kwargs}
    with pytest.raises(error) as info:
        simulate(gpipe(3, 2), **args)
    assert fragment in str(info.value)


def test_simulate_rejects_non_schedule():
    """Only a Schedule can be simulated."""
    with pytest.raises(TypeError, match="schedule must be a Schedule"):
        simulate([[A("F", 0, 0)]], 1.0, 1.0)  # type: ignore[arg-type]


@given(pipeline_shapes(max_stages=5, max_microbatches=6), PIPE_TIMES, PIPE_TIMES)
def test_scalar_and_per_stage_costs_agree(shape, t_f, t_b):
    """A scalar cost means the same cost on every stage; lists, arrays and Series are accepted."""
    p, m = shape
    a = simulate(one_f_one_b(p, m), t_f, t_b)
    b = simulate(one_f_one_b(p, m), [t_f] * p, np.full(p, t_b))
    c = simulate(one_f_one_b(p, m), pd.Series([t_f] * p), tuple([t_b] * p))
    pd.testing.assert_frame_equal(a.events, b.events)
    pd.testing.assert_frame_equal(a.events, c.events)


# --- the fast simulator against the reference (the simulator before the columnar rewrite) -----


def _outcome(run):
    """("events", DataFrame) or (exception type, message) of ``run()``."""
    try:
        result = run()
    except (ValueError, TypeError) as exc:
        return type(exc), str(exc)
    return "events", result


def assert_same_outcome(schedule, costs, latency):
    """Identical events tables (exact floats, dtypes, order) or the same error and message."""
    args = (costs["F"], costs["B"], costs["W"])
    ours = _outcome(lambda: simulate(schedule, *args, p2p_latency=latency).events)
    theirs = _outcome(lambda: reference.simulate_events(schedule, *args, p2p_latency=latency))
    assert ours[0] == theirs[0]
    if ours[0] == "events":
        pd.testing.assert_frame_equal(ours[1], theirs[1], check_exact=True)
    else:
        assert ours[1] == theirs[1]


@given(st.one_of(costed_builtin_schedules(), costed_builtin_schedules_per_hop()))
@settings(max_examples=200, deadline=None)
def test_fast_simulator_equals_reference_on_builtin_schedules(case):
    """GPipe, 1F1B, ZB-H1 and interleaved 1F1B, random per-stage costs, scalar or per-hop
    latency: the events table equals the reference simulator's exactly."""
    assert_same_outcome(*case)


@given(costed_random_schedules())
@settings(max_examples=200, deadline=None)
def test_fast_simulator_equals_reference_on_random_valid_schedules(case):
    """Random deadlock-free schedules (interleaved placement, W actions): identical events."""
    assert_same_outcome(*case)


@st.composite
def scrambled_schedules(draw):
    """Random per-rank orders of all actions of a random shape, often deadlocking, sometimes with
    actions dropped (a dependency in no list) or one repeated (a duplicate), with costs on the
    grid and a latency."""
    num_ranks = draw(st.integers(1, 3))
    chunks = draw(st.integers(1, 2))
    m = draw(st.integers(1, 3))
    p = num_ranks * chunks
    kinds = "FBW" if draw(st.booleans()) else "FB"
    per_rank = []
    for rank in range(num_ranks):
        acts = [A(k, s, j) for k in kinds for s in range(rank, p, num_ranks) for j in range(m)]
        acts = draw(st.permutations(acts))
        keep = draw(st.lists(st.booleans(), min_size=len(acts), max_size=len(acts)))
        if draw(st.booleans()):  # drop some
            acts = [a for a, k in zip(acts, keep, strict=True) if k]
        per_rank.append(list(acts))
    if draw(st.booleans()):  # repeat one action somewhere on its own rank
        rank = draw(st.integers(0, num_ranks - 1))
        if per_rank[rank]:
            again = draw(st.sampled_from(per_rank[rank]))
            per_rank[rank].insert(draw(st.integers(0, len(per_rank[rank]))), again)
    schedule = Schedule(p, m, num_ranks, per_rank, name="scrambled")
    costs = {k: per_stage(draw, p) for k in "FBW"}
    return schedule, costs, draw(PIPE_GRID_TIMES)


@given(scrambled_schedules())
@settings(max_examples=300, deadline=None)
def test_fast_simulator_equals_reference_on_scrambled_schedules(case):
    """Deadlocking, incomplete and duplicated schedules: the same ScheduleDeadlock report (every
    blocked rank, its position, the missing dependency and where it is) or the same duplicate
    error as the reference, word for word; identical events when the scramble happens to run."""
    assert_same_outcome(*case)


@pytest.mark.parametrize(
    "build",
    [
        lambda: gpipe(8, 32),
        lambda: one_f_one_b(16, 64),
        lambda: zero_bubble_h1(8, 24),
        lambda: interleaved_1f1b(16, 64, 4),
        lambda: interleaved_1f1b(4, 10, 3),
        lambda: interleaved_1f1b(6, 4, 2),
    ],
)
def test_fast_simulator_equals_reference_at_explorer_size(build):
    """Larger built-in cases (up to the pipe04 explorer's p = 16, m = 64, v = 4) with per-hop
    latencies: identical events tables."""
    schedule = build()
    n = schedule.num_stages
    rng = np.random.default_rng(n)
    costs = {k: (rng.integers(0, 33, n) / 8).tolist() for k in "FBW"}
    assert_same_outcome(schedule, costs, (rng.integers(0, 9, n - 1) / 8).tolist())


def test_simulation_is_cached_per_schedule_but_not_shared():
    """The compiled encoding is reused for one schedule; each run gets its own events arrays."""
    schedule = one_f_one_b(4, 8)
    a, b = simulate(schedule, 1.0, 2.0), simulate(schedule, 1.0, 3.0, p2p_latency=0.5)
    assert a.makespan == 33.0 and b.makespan != a.makespan
    a.events.loc[0, "start"] = 99.0  # a caller's edit stays in its own table
    assert simulate(schedule, 1.0, 2.0).events.loc[0, "start"] == 0.0
