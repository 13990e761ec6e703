"""course_lib.pipeline.imbalance (pipe08): GPipe's unequal-stage makespan against the simulator,
the slowest-stage shortcut equal to it only when one stage is slowest both ways, the lower bound
below every simulated 1F1B / GPipe step and met with equal stages, the critical path against a
networkx longest path, repartition bytes against a per-layer walk, break-even rounding, live
stashes against Timeline.lifetime and against a per-action replay of a schedule position, and
bad input."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from course_lib.pipeline import gpipe, interleaved_1f1b, one_f_one_b, simulate, zero_bubble_h1
from course_lib.pipeline.imbalance import (
    bottleneck_stage,
    break_even_steps,
    busiest_stage,
    critical_path,
    critical_time,
    gpipe_makespan,
    is_flush,
    live_stashes,
    live_stashes_at,
    makespan_lower_bound,
    move_layers,
    partition_step_time,
    repartition_cost,
    slowest_stage_makespan,
    stage_busy,
    stage_forward_backward,
)
from course_lib.pipeline.partition import ADAM_MIXED_PRECISION, ModelSpec, stage_times
from course_lib.pipeline.versions import stashing_version, weight_versions
from tests.strategies import PIPE_GRID_TIMES, model_specs, random_pipeline_schedules

POSITIVE_GRID = st.integers(min_value=1, max_value=32).map(lambda k: k / 8)


@st.composite
def unequal_costs(draw, max_stages: int = 6, times=PIPE_GRID_TIMES):
    p = draw(st.integers(1, max_stages))
    f = draw(st.lists(times, min_size=p, max_size=p))
    b = draw(st.lists(times, min_size=p, max_size=p))
    m = draw(st.integers(1, 10))
    return f, b, m


# --------------------------------------------------------------------------------------------
# step time with unequal stages


@settings(max_examples=150, deadline=None)
@given(unequal_costs())
def test_gpipe_makespan_is_the_simulated_step(case):
    f, b, m = case
    assert gpipe_makespan(f, b, m) == simulate(gpipe(len(f), m), f, b).makespan  # exact grid


@settings(max_examples=150, deadline=None)
@given(unequal_costs())
def test_slowest_stage_shortcut_equals_gpipe_only_when_one_stage_is_slowest_both_ways(case):
    f, b, m = case
    f, b = np.array(f), np.array(b)
    shortcut, exact = slowest_stage_makespan(f, b, m), gpipe_makespan(f, b, m)
    one_stage = bool(((f == f.max()) & (b == b.max())).any())
    if one_stage or m == 1:
        assert shortcut == exact
    else:
        assert shortcut < exact
        assert exact - shortcut == pytest.approx((m - 1) * (f.max() + b.max() - (f + b).max()))


def test_slowest_stage_shortcut_worked_example():
    # stage 1 slowest forward, stage 2 slowest backward: the shortcut misses (m - 1) x 2
    f, b, m = [1.0, 3.0, 2.0], [2.0, 2.0, 5.0], 4
    assert simulate(gpipe(3, m), f, b).makespan == 39.0 == gpipe_makespan(f, b, m)
    assert slowest_stage_makespan(f, b, m) == 15.0 + 3 * 7.0 == 36.0


@settings(max_examples=120, deadline=None)
@given(unequal_costs(), st.sampled_from([0.0, 0.25]))
def test_lower_bound_below_every_simulated_step(case, latency):
    f, b, m = case
    bound = makespan_lower_bound(f, b, m)
    p = len(f)
    for schedule in (one_f_one_b(p, m), gpipe(p, m)):
        assert bound <= simulate(schedule, f, b, p2p_latency=latency).makespan + 1e-12


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 8), st.integers(1, 16), POSITIVE_GRID, POSITIVE_GRID)
def test_lower_bound_is_met_with_equal_stages(p, m, f, b):
    bound = makespan_lower_bound([f] * p, [b] * p, m)
    assert bound == (m + p - 1) * (f + b)
    assert bound == simulate(one_f_one_b(p, m), f, b).makespan
    assert bound == simulate(gpipe(p, m), f, b).makespan


def test_one_f_one_b_strictly_above_the_bound_under_imbalance():
    # a slow first forward: the later stages wait between their 1F1B pairs; neither the bound
    # nor GPipe's closed form gives the step
    f, b, m = [4.0, 1.0, 1.0], [1.0, 1.0, 1.0], 4
    step = simulate(one_f_one_b(3, m), f, b).makespan
    assert (makespan_lower_bound(f, b, m), step, gpipe_makespan(f, b, m)) == (20.0, 22.0, 24.0)


# --------------------------------------------------------------------------------------------
# the critical path and the bottleneck stage


def _dag_longest(timeline, latency: float) -> float:
    """Longest path through the action DAG (dependencies + each rank's order), node-weighted by
    durations, edge-weighted by the hop latency across ranks: built with networkx."""
    events = timeline.events
    g = nx.DiGraph()
    key = {}
    for i, row in enumerate(events.itertuples()):
        key[(row.kind, row.stage, row.microbatch)] = i
        g.add_node(i, d=row.end - row.start, rank=row.rank)
    g.add_node("src", d=0.0)
    p = timeline.schedule.num_stages
    for i, row in enumerate(events.itertuples()):
        g.add_edge("src", i, w=0.0)
        if i and events["rank"].iloc[i - 1] == row.rank:
            g.add_edge(i - 1, i, w=0.0)
        deps = {
            "F": [("F", row.stage - 1, row.microbatch)] if row.stage else [],
            "B": [("F", row.stage, row.microbatch)]
            + ([("B", row.stage + 1, row.microbatch)] if row.stage < p - 1 else []),
            "W": [("B", row.stage, row.microbatch)],
        }[row.kind]
        for d in deps:
            u = key[d]
            g.add_edge(u, i, w=0.0 if g.nodes[u]["rank"] == row.rank else latency)
    # longest path = max over nodes of (longest arrival + duration)
    arrive = {}
    for v in nx.topological_sort(g):
        arrive[v] = max(
            (arrive[u] + g.nodes[u]["d"] + g.edges[u, v]["w"] for u in g.pred[v]), default=0.0
        )
    return max(arrive[v] + g.nodes[v]["d"] for v in g.nodes)


@settings(max_examples=40, deadline=None)
@given(random_pipeline_schedules(), st.data(), st.sampled_from([0.0, 0.5]))
def test_critical_path_is_a_zero_slack_chain_as_long_as_the_makespan(schedule, data, latency):
    p = schedule.num_stages
    f, b, w = (data.draw(st.lists(POSITIVE_GRID, min_size=p, max_size=p)) for _ in range(3))
    timeline = simulate(schedule, f, b, w, p2p_latency=latency)
    path = critical_path(timeline, latency)
    assert _dag_longest(timeline, latency) == pytest.approx(timeline.makespan)
    assert path["start"].iloc[0] == 0.0
    assert path["end"].iloc[-1] == timeline.makespan
    gaps = path["start"].to_numpy()[1:] - path["end"].to_numpy()[:-1]
    np.testing.assert_allclose(gaps, path["wait"].to_numpy()[1:], atol=1e-12)
    durations = (path["end"] - path["start"]).sum()
    assert durations + path["wait"].sum() == pytest.approx(timeline.makespan)
    assert critical_time(timeline, latency).sum() == pytest.approx(durations)
    # each step is a program-order or dependency edge
    ranks = path["rank"].to_numpy()
    for (_, u), (_, v) in zip(path.iloc[:-1].iterrows(), path.iloc[1:].iterrows(), strict=True):
        same_rank_next = u.name + 1 == v.name and u["rank"] == v["rank"]
        dependency = u["microbatch"] == v["microbatch"] and (
            (u["kind"], v["kind"]) in {("F", "F"), ("F", "B"), ("B", "W"), ("B", "B")}
        )
        assert same_rank_next or dependency
    assert len(ranks) == len(path)


@settings(max_examples=100, deadline=None)
@given(unequal_costs(times=POSITIVE_GRID))
def test_gpipe_path_runs_all_forwards_of_the_slowest_forward_stage(case):
    f, b, m = case
    f, b = np.array(f), np.array(b)
    assume((f == f.max()).sum() == 1 and (b == b.max()).sum() == 1)
    path = critical_path(simulate(gpipe(len(f), m), f, b))
    a, c = int(np.argmax(f)), int(np.argmax(b))
    on = path.groupby(["kind", "stage"]).size()
    assert on[("F", a)] == m
    assert on[("B", c)] == m
    assert len(path) == 2 * (m + len(f) - 1)


def test_bottleneck_differs_from_busiest_stage():
    # stage 1: busiest (3 + 3); stage 0 slowest forward, stage 2 slowest backward
    f, b, m = [4.0, 3.0, 1.0], [1.0, 3.0, 4.0], 8
    timeline = simulate(gpipe(3, m), f, b)
    np.testing.assert_array_equal(stage_busy(timeline), [40.0, 48.0, 40.0])
    assert busiest_stage(timeline) == 1
    np.testing.assert_array_equal(critical_time(timeline), [33.0, 6.0, 33.0])
    assert bottleneck_stage(timeline) == 0  # tie 0 / 2 goes to the lowest index


def test_stage_busy_sums_per_stage_on_interleaved_ranks():
    timeline = simulate(interleaved_1f1b(2, 4, 2), [1.0, 2.0, 3.0, 4.0], 1.0)
    np.testing.assert_array_equal(stage_busy(timeline), 4 * (np.array([1, 2, 3, 4]) + 1.0))
    np.testing.assert_array_equal(
        timeline.busy, [stage_busy(timeline)[[0, 2]].sum(), stage_busy(timeline)[[1, 3]].sum()]
    )


def test_critical_path_needs_the_simulated_latency():
    timeline = simulate(one_f_one_b(3, 4), 1.0, 2.0, p2p_latency=0.5)
    with pytest.raises(
        ValueError,
        match=r"B\(s0,m3\) starts at 20 s but no predecessor ends then at p2p_latency=0\.0",
    ):
        critical_path(timeline)
    assert critical_path(timeline, [0.5, 0.5])["wait"].sum() > 0


# --------------------------------------------------------------------------------------------
# partitions, moves and their cost


@settings(max_examples=60, deadline=None)
@given(model_specs(max_layers=8), st.data())
def test_stage_forward_backward_add_up_to_stage_times(spec, data):
    n = spec.num_layers
    p = data.draw(st.integers(1, n))
    cuts = (
        sorted(data.draw(st.sets(st.integers(1, n - 1), min_size=p - 1, max_size=p - 1)))
        if p > 1
        else []
    )
    bounds = (0, *cuts, n)
    f, b = stage_forward_backward(spec, bounds, 4.0)
    np.testing.assert_allclose(f + b, stage_times(spec, bounds, 4.0))
    step = partition_step_time(spec, bounds, 4.0, 3, "GPipe")
    assert step == pytest.approx(gpipe_makespan(f, b, 3))


def _spec(params):
    n = len(params)
    return ModelSpec.from_arrays([1.0] * n, [2.0] * n, params, [0.0] * n, [0.0] * (n - 1))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 50).map(float), min_size=2, max_size=9), st.data())
def test_repartition_bytes_per_link_match_a_per_layer_walk(params, data):
    n = len(params)
    p = data.draw(st.integers(1, n))

    def bounds():
        cuts = data.draw(st.sets(st.integers(1, n - 1), min_size=p - 1, max_size=p - 1))
        return (0, *sorted(cuts), n) if p > 1 else (0, n)

    old, new = bounds(), bounds()
    cost = repartition_cost(_spec(params), old, new, 8.0, pause=1.5)
    link = np.zeros(max(p - 1, 0))
    stage_of = lambda bs, i: max(s for s in range(p) if bs[s] <= i)  # noqa: E731
    moved = []
    for i in range(n):
        a, c = stage_of(old, i), stage_of(new, i)
        for k in range(min(a, c), max(a, c)):
            link[k] += params[i] * 16.0
        if a != c:
            moved.append((i, a, c))
    np.testing.assert_array_equal(cost.link_bytes, link)
    assert cost.transfer_time == (link.max() / 8.0 if p > 1 else 0.0)
    assert cost.total == cost.transfer_time + 1.5
    assert cost.moved == tuple(moved)


def test_repartition_cost_worked_example_and_bytes_per_param():
    spec = _spec([10.0, 20.0, 30.0, 40.0])
    new = move_layers((0, 2, 4), from_stage=0, to_stage=1)
    assert new == (0, 1, 4)
    cost = repartition_cost(spec, (0, 2, 4), new, 100.0, pause=0.25)
    assert cost.link_bytes == (20.0 * 16,)
    assert cost.transfer_time == 3.2 and cost.total == 3.45
    assert sum(ADAM_MIXED_PRECISION.values()) == 16
    weights_only = {"weights": 2.0, "gradients": 0.0, "optimizer": 0.0}
    assert repartition_cost(
        spec, (0, 2, 4), new, 100.0, bytes_per_param=weights_only
    ).link_bytes == (40.0,)


def test_move_layers_both_directions():
    assert move_layers((0, 3, 6, 9), 1, 2, 2) == (0, 3, 4, 9)
    assert move_layers((0, 3, 6, 9), 1, 0, 2) == (0, 5, 6, 9)
    assert move_layers(np.array([0, 3, 6, 9]), 2, 1) == (0, 3, 7, 9)


def test_break_even_steps():
    assert break_even_steps(3.45, 0.40, 0.35) == 69  # 68.99999999999993 -> 69, not 70
    assert break_even_steps(0.3, 1.0, 0.9) == 3  # 2.9999999999999996 counts as 3
    assert break_even_steps(1.0, 1.0, 0.7) == 4  # 3.33 rounded up
    assert break_even_steps(0.0, 1.0, 0.9) == 0
    assert break_even_steps(1.0, 1.0, 1.0) == math.inf
    assert break_even_steps(1.0, 1.0, 1.2) == math.inf


def test_break_even_from_simulated_steps():
    spec = ModelSpec.from_arrays(
        [1.0, 1.0, 1.0, 3.0], [2.0, 2.0, 2.0, 6.0], [5.0] * 4, [0.0] * 4, [0.0] * 3
    )
    old, new = (0, 2, 4), (0, 3, 4)
    before = partition_step_time(spec, old, 1e9, 8)
    after = partition_step_time(spec, new, 1e9, 8)
    assert (before, after) == (
        simulate(one_f_one_b(2, 8), [2.0, 4.0], [4.0, 8.0]).makespan,
        simulate(one_f_one_b(2, 8), [3.0, 3.0], [6.0, 6.0]).makespan,
    )
    cost = repartition_cost(spec, old, new, 1.0, pause=10.0)
    steps = break_even_steps(cost.total, before, after)
    assert steps == math.ceil((80.0 + 10.0) / (before - after))
    assert steps * (before - after) >= cost.total > (steps - 1) * (before - after)


# --------------------------------------------------------------------------------------------
# live stashes: when a repartition is unsafe


@settings(max_examples=40, deadline=None)
@given(random_pipeline_schedules(), st.data())
def test_live_stashes_match_lifetimes(schedule, data):
    p = schedule.num_stages
    f, b = (data.draw(st.lists(POSITIVE_GRID, min_size=p, max_size=p)) for _ in range(2))
    timeline = simulate(schedule, f, b, 0.5)
    t = data.draw(st.sampled_from(sorted(set(timeline.events["start"]) | {0.3, timeline.makespan})))
    expected = [
        (s, j)
        for s in range(p)
        for j in range(schedule.num_microbatches)
        if timeline.lifetime(s, j)[0] < t < timeline.lifetime(s, j)[1]
    ]
    live = live_stashes(timeline, t)
    assert list(zip(live["stage"], live["microbatch"], strict=True)) == expected
    assert is_flush(timeline, t) == (not expected)
    assert is_flush(timeline, 0.0) and is_flush(timeline, timeline.makespan)


@pytest.mark.parametrize(
    "schedule", [gpipe(4, 6), one_f_one_b(4, 6), zero_bubble_h1(4, 6), interleaved_1f1b(2, 4, 2)]
)
def test_no_flush_inside_a_step(schedule):
    timeline = simulate(schedule, 1.0, 2.0, 1.0)
    instants = np.union1d(timeline.events["start"], timeline.events["end"])
    inside = instants[(instants > 0) & (instants < timeline.makespan)]
    assert not any(is_flush(timeline, t) for t in inside)
    assert not any(is_flush(timeline, t + 0.5) for t in inside)


def test_live_stashes_carry_their_weight_versions():
    # PipeDream's stashing: F(s, j) runs on version j - (p - 1 - s) (clamped at 0), the closed
    # form of pipeline.versions; stage 0 of a 1F1B steady state holds p - s = 4 live stashes on
    # 4 different versions, all of which a move would carry
    schedule = one_f_one_b(4, 12)
    timeline = simulate(schedule, 1.0, 1.0)
    versions = weight_versions(timeline, "stashing")
    t = float(
        timeline.events.query("kind == 'F' and stage == 0 and microbatch == 8")["end"].iloc[0]
    )
    live = live_stashes(timeline, t, versions)
    expected = [
        stashing_version(s, j, 4, 12)
        for s, j in zip(live["stage"], live["microbatch"], strict=True)
    ]
    assert live["version"].tolist() == expected
    assert live.query("stage == 0")["version"].nunique() == 4
    flushed = live_stashes(timeline, t, weight_versions(timeline, "flushed"))
    assert (flushed["version"] == 0).all()
    with pytest.raises(ValueError, match="versions are for 4 stages x 12 microbatches"):
        live_stashes(simulate(one_f_one_b(4, 8), 1.0, 1.0), 1.5, versions)
    with pytest.raises(TypeError, match="versions must be a WeightVersions"):
        live_stashes(timeline, t, versions.forward)


def _replay(schedule, completed):
    """Per-action replay: the F's done and not yet released, walking each rank's prefix."""
    release = "W" if schedule.has_weight_actions else "B"
    done = {
        (a.kind, a.stage, a.microbatch)
        for r, c in enumerate(completed)
        for a in schedule.actions[r][:c]
    }
    return sorted((s, j) for (k, s, j) in done if k == "F" and (release, s, j) not in done)


@settings(max_examples=60, deadline=None)
@given(random_pipeline_schedules(), st.data())
def test_live_stashes_at_a_position_match_a_replay(schedule, data):
    timeline = simulate(schedule, 1.0, 1.0, 1.0)
    t = data.draw(st.sampled_from(sorted(set(timeline.events["end"]) | {0.0})))
    # the state at time t: every action ended by t is completed (a reachable state)
    ends = timeline.events
    completed = [
        int(((ends["rank"] == r) & (ends["end"] <= t)).sum()) for r in range(schedule.num_ranks)
    ]
    live = live_stashes_at(schedule, completed)
    assert list(zip(live["stage"], live["microbatch"], strict=True)) == _replay(schedule, completed)
    np.testing.assert_array_equal(live["rank"], live["stage"] % schedule.num_ranks)


def test_live_stashes_at_one_f_one_b_steady_state():
    schedule = one_f_one_b(4, 8)
    # rank s has done its p - s warm-up forwards: stashes min(m, p - s) = 4, 3, 2, 1
    live = live_stashes_at(schedule, [4, 3, 2, 1])
    np.testing.assert_array_equal(live.groupby("stage").size(), [4, 3, 2, 1])
    assert live_stashes_at(schedule, [0, 0, 0, 0]).empty
    assert live_stashes_at(schedule, [16, 16, 16, 16]).empty


# --------------------------------------------------------------------------------------------
# bad input


def test_bad_costs_are_named():
    with pytest.raises(ValueError, match=r"forward_cost\[1\] \(stage 1\) must be >= 0"):
        gpipe_makespan([1.0, -1.0], [1.0, 1.0], 4)
    with pytest.raises(
        ValueError, match=r"backward_cost has 1 per-stage costs but forward_cost has 2$"
    ):
        makespan_lower_bound([1.0, 1.0], [1.0], 4)
    with pytest.raises(
        ValueError, match=r"backward_cost has 3 per-stage costs but forward_cost has 2$"
    ):
        gpipe_makespan([1.0, 2.0], [1.0, 2.0, 3.0], 4)
    with pytest.raises(ValueError, match="forward_cost must be a 1-D sequence"):
        slowest_stage_makespan(1.0, [1.0], 4)
    with pytest.raises(ValueError, match="forward_cost must have at least one stage"):
        gpipe_makespan([], [], 4)
    with pytest.raises(ValueError, match="num_microbatches must be an int >= 1"):
        gpipe_makespan([1.0], [1.0], 0)


def test_bad_moves_are_named():
    with pytest.raises(
        ValueError, match=r"count = 3 layers from stage 1, which holds 3, would leave it empty"
    ):
        move_layers((0, 3, 6, 9), 1, 2, 3)
    with pytest.raises(ValueError, match="to_stage must be adjacent to from_stage = 0"):
        move_layers((0, 3, 6, 9), 0, 2)
    with pytest.raises(ValueError, match=r"from_stage must be in \[0, 2\]"):
        move_layers((0, 3, 6, 9), 3, 2)
    with pytest.raises(TypeError, match=r"boundaries\[1\] must be an int"):
        move_layers((0, 1.5, 3), 0, 1)
    with pytest.raises(ValueError, match="stage 1 holds no layer"):
        move_layers((0, 3, 3, 9), 0, 1)


def test_bad_repartition_arguments_are_named():
    spec = _spec([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"link_bandwidth \(bytes/s\) must be > 0, got 0"):
        repartition_cost(spec, (0, 1, 3), (0, 2, 3), 0.0)
    with pytest.raises(ValueError, match=r"pause \(s\) must be >= 0"):
        repartition_cost(spec, (0, 1, 3), (0, 2, 3), 1.0, pause=-1.0)
    with pytest.raises(ValueError, match="new_boundaries make 1 stages but old_boundaries make 2"):
        repartition_cost(spec, (0, 1, 3), (0, 3), 1.0)
    with pytest.raises(ValueError, match=r"step_before \(s\) must be >= 0"):
        break_even_steps(1.0, -1.0, 0.5)
    with pytest.raises(ValueError, match="schedule must be one of"):
        partition_step_time(spec, (0, 1, 3), 1.0, 4, schedule="ZB")


def test_bad_positions_and_times_are_named():
    schedule = one_f_one_b(3, 4)
    with pytest.raises(ValueError, match="completed has 2 counts but the schedule has 3 ranks"):
        live_stashes_at(schedule, [1, 1])
    with pytest.raises(ValueError, match=r"completed\[2\] = 9 exceeds rank 2's 8 actions"):
        live_stashes_at(schedule, [0, 0, 9])
    with pytest.raises(
        ValueError, match=r"not a reachable state: F\(s1,m0\) is completed but F\(s0,m0\)"
    ):
        live_stashes_at(schedule, [0, 1, 0])
    with pytest.raises(ValueError, match=r"time must be >= 0"):
        live_stashes(simulate(schedule, 1.0, 1.0), -1.0)
    with pytest.raises(TypeError, match="timeline must be a Timeline"):
        critical_path(schedule)


@pytest.mark.parametrize("generator", [gpipe, one_f_one_b])
@pytest.mark.parametrize("p, m", [(1, 3), (3, 4), (4, 8), (5, 3)])
def test_jittered_timeline_keeps_the_simulators_semantics(generator, p, m):
    """Durations stay within cost·(1 ± jitter); each action starts exactly at the latest end among
    its rank's previous action and its dependencies (0 if none), as simulate's do; jitter 0 is
    simulate's run; the seed fixes the run."""
    from course_lib.pipeline.imbalance import jittered_timeline

    rng = np.random.default_rng(p * 100 + m)
    f, b = rng.uniform(0.5, 2.0, p), rng.uniform(1.0, 4.0, p)
    schedule = generator(p, m)
    assert jittered_timeline(schedule, f, b, 0.0, 3).events.equals(simulate(schedule, f, b).events)
    run = jittered_timeline(schedule, f, b, 0.2, 7)
    assert run.events.equals(jittered_timeline(schedule, f, b, 0.2, 7).events)
    ev = run.events
    cost = np.where(ev["kind"] == "F", f[ev["stage"]], b[ev["stage"]])
    duration = (ev["end"] - ev["start"]).to_numpy()
    assert np.all(duration >= 0.8 * cost - 1e-15) and np.all(duration <= 1.2 * cost + 1e-15)
    assert not np.allclose(duration, cost)
    keys = zip(ev["kind"], ev["stage"], ev["microbatch"], ev["end"], strict=True)
    end = {(k, s, j): e for k, s, j, e in keys}
    for _rank, rows in ev.groupby("rank", sort=False):
        previous = 0.0
        for k, s, j, start, stop in zip(
            rows["kind"], rows["stage"], rows["microbatch"], rows["start"], rows["end"], strict=True
        ):
            deps = [("F", s - 1, j)] if k == "F" and s > 0 else []
            if k == "B":
                deps = [("F", s, j)] + ([("B", s + 1, j)] if s < p - 1 else [])
            assert start == max([previous] + [end[d] for d in deps])
            previous = stop


def test_jittered_timeline_bad_arguments_are_named():
    from course_lib.pipeline.imbalance import jittered_timeline

    with pytest.raises(ValueError, match="jitter must be in"):
        jittered_timeline(gpipe(2, 2), [1.0, 1.0], [2.0, 2.0], 1.0, 0)
    with pytest.raises(ValueError, match="forward_cost has 3 stages"):
        jittered_timeline(gpipe(2, 2), [1.0] * 3, [2.0] * 3, 0.1, 0)
    with pytest.raises(TypeError, match="schedule must be a Schedule"):
        jittered_timeline("gpipe", [1.0], [2.0], 0.1, 0)
    with pytest.raises(ValueError, match="no W actions"):
        jittered_timeline(zero_bubble_h1(2, 2), [1.0] * 2, [2.0] * 2, 0.1, 0)
