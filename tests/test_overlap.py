"""Tests for course_lib.overlap: interval algebra vs rasterization, HTA's overlap ratio, exposed
communication (timeline and critical path) and the bucketed all-reduce model (cost03)."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from course_lib.graph import schedule, step_graph
from course_lib.overlap import (
    bucket_step_graph,
    bucketed_allreduce_timeline,
    exposed_communication,
    exposed_on_critical_path,
    intersection,
    overlap_ratio,
    subtract,
    total_length,
    transformer_grad_tensors,
    union,
)
from tests.strategies import grid_intervals, step_dags

RES = 4  # grid_intervals puts endpoints on k / 4
CELLS = 120


def raster(intervals) -> np.ndarray:
    """Cell c = [c/RES, (c+1)/RES) is covered iff some interval contains it (exact on the grid)."""
    cov = np.zeros(CELLS, dtype=bool)
    for a, b in intervals:
        lo, hi = round(a * RES), round(b * RES)
        cov[lo:hi] = True
    return cov


def length_of(cov: np.ndarray) -> float:
    return cov.sum() / RES


def assert_canonical(u: np.ndarray) -> None:
    """Sorted, non-empty, disjoint and non-touching rows."""
    assert u.ndim == 2 and u.shape[1] == 2
    assert (u[:, 1] > u[:, 0]).all()
    assert (u[1:, 0] > u[:-1, 1]).all()


# --- interval algebra vs rasterization ---------------------------------------------------------


@given(grid_intervals())
def test_union_matches_rasterization(iv):
    """The union covers exactly the grid cells some interval covers, in canonical form."""
    u = union(iv)
    assert_canonical(u)
    np.testing.assert_array_equal(raster(u), raster(iv))
    assert total_length(iv) == length_of(raster(iv))


@given(grid_intervals(), grid_intervals())
def test_intersection_and_subtract_match_rasterization(a, b):
    """a ∩ b and a minus b cover exactly the cells covered by both / by a only."""
    ra, rb = raster(a), raster(b)
    inter, diff = intersection(a, b), subtract(a, b)
    assert_canonical(inter)
    assert_canonical(diff)
    np.testing.assert_array_equal(raster(inter), ra & rb)
    np.testing.assert_array_equal(raster(diff), ra & ~rb)
    # inclusion-exclusion on lengths
    assert total_length(a) == pytest.approx(total_length(diff) + total_length(inter))


def test_union_by_hand():
    """Overlapping and touching intervals merge; zero-length ones vanish."""
    u = union([[3, 4], [0, 1], [0.5, 2], [4, 5], [7, 7]])
    np.testing.assert_array_equal(u, [[0, 2], [3, 5]])
    assert union([]).shape == (0, 2)
    assert total_length([]) == 0.0


@pytest.mark.parametrize(
    "bad, match",
    [
        ([[0, 1, 2]], r"\(N, 2\)"),
        ([[0, 1], [2, 1.5]], r"row 1 .*end < start"),
        ([[0, 1], [0, 2], [np.nan, 3]], r"row 2 .*not finite"),
        ([[0, np.inf]], r"row 0"),
    ],
)
def test_malformed_intervals_raise_naming_the_row(bad, match):
    """Wrong shape, end < start, NaN and inf are ValueErrors naming the row."""
    with pytest.raises(ValueError, match=match):
        union(bad)
    with pytest.raises(ValueError, match=match):
        overlap_ratio(bad, [[0, 1]])


def test_large_input_is_vectorized():
    """A million intervals go through union/overlap_ratio (no per-interval Python loop); timing
    is measured in benchmarks/bench_overlap.py, here only the result is checked."""
    rng = np.random.default_rng(0)
    s = rng.uniform(0, 1e6, 1_000_000)
    iv = np.column_stack((s, s + rng.exponential(0.5, s.size)))
    u = union(iv)
    assert_canonical(u)
    assert total_length(u) <= (iv[:, 1] - iv[:, 0]).sum()
    assert 0.0 <= overlap_ratio(iv[::2], iv[1::2]) <= 1.0


# --- overlap ratio (HTA) -------------------------------------------------------------------------


def hta_overlap(comm, compute) -> float:
    """Port of HTA's get_comm_comp_overlap_value (hta/analyzers/communication_analysis.py) with
    its merge_kernel_intervals (hta/utils/utils.py): merge each kind with a cumulative max, mark
    starts/ends of comm with ±1 and of compute with ±2, and sum the time the running total is 3."""

    def merge(rows):
        df = pd.DataFrame(rows, columns=["ts", "end"], dtype=float)
        df["dur"] = df["end"] - df["ts"]
        df = df.sort_values(by="ts")
        df["end"] = df["ts"] + df["dur"]
        df["group"] = (df["ts"] > df["end"].shift().cummax()).cumsum()
        df = df.groupby("group", as_index=False).agg({"ts": "min", "end": "max"})
        return df.drop(["group"], axis=1).sort_values(by="ts")

    comm_k, comp_k = merge(comm), merge(compute)
    status = (
        pd.concat(
            [
                comm_k.melt(var_name="status", value_name="time").assign(
                    status=lambda d: d["status"].map({"ts": 1, "end": -1})
                ),
                comp_k.melt(var_name="status", value_name="time").assign(
                    status=lambda d: d["status"].map({"ts": 2, "end": -2})
                ),
            ]
        )
        .sort_values(by="time")
        .reset_index(drop=True)
    )
    status["running"] = status["status"].cumsum()
    overlap = status[status["running"].eq(3)]
    shifted = overlap.merge(status.shift(-1).dropna(), left_index=True, right_index=True)
    return float(
        (shifted["time_y"] - shifted["time_x"]).sum() / (comm_k["end"] - comm_k["ts"]).sum()
    )


@settings(deadline=None)
@given(grid_intervals(), grid_intervals())
def test_overlap_ratio_matches_rasterization_and_hta(comm, compute):
    """ratio = |comm ∩ compute| / |comm| on the raster, equal to HTA's own algorithm, in [0, 1]."""
    rc, rk = raster(comm), raster(compute)
    assume(rc.any())
    r = overlap_ratio(comm, compute)
    assert r == pytest.approx((rc & rk).sum() / rc.sum())
    assert r == pytest.approx(hta_overlap(comm, compute))
    assert 0.0 <= r <= 1.0


def test_overlap_ratio_merges_overlapping_kernels():
    """Two comm kernels overlapping each other count once (HTA merges before measuring)."""
    comm = [[0, 4], [2, 6]]  # merged: [0, 6), 6 s — not 8 s
    compute = [[0, 3], [1, 2], [5, 9]]  # merged: [0, 3) and [5, 9)
    assert overlap_ratio(comm, compute) == pytest.approx(4 / 6)


def test_overlap_ratio_without_communication_raises():
    """0/0 is refused with a clear message."""
    with pytest.raises(ValueError, match="undefined"):
        overlap_ratio([], [[0, 1]])
    with pytest.raises(ValueError, match="undefined"):
        overlap_ratio([[1, 1]], [[0, 1]])


@given(grid_intervals(), grid_intervals())
def test_exposed_communication_is_comm_not_overlapped(comm, compute):
    """Timeline exposure = raster cells with comm and no compute = (1 - ratio)·|∪comm|."""
    rc, rk = raster(comm), raster(compute)
    exposed = exposed_communication(comm, compute)
    assert exposed == length_of(rc & ~rk)
    if rc.any():
        assert exposed == pytest.approx((1 - overlap_ratio(comm, compute)) * length_of(rc))


# --- exposure on the critical path -------------------------------------------------------------


def brute_exposed(g: nx.DiGraph, lanes=("comm stream",)) -> float:
    """Enumerate every source->sink path; among the longest, the least communication."""
    sources = [v for v in g if g.in_degree(v) == 0]
    sinks = [v for v in g if g.out_degree(v) == 0]
    paths = []
    for s in sources:
        for t in sinks:
            if s == t:
                paths.append([s])
            else:
                paths.extend(nx.all_simple_paths(g, s, t))
    dur = nx.get_node_attributes(g, "duration")
    lengths = [sum(dur[v] for v in p) for p in paths]
    best = max(lengths)
    return min(
        sum(dur[v] for v in p if g.nodes[v]["lane"] in lanes)
        for p, length in zip(paths, lengths, strict=True)
        if length == best
    )


@settings(deadline=None)
@given(step_dags(min_nodes=1, max_nodes=8))
def test_exposed_on_critical_path_matches_path_enumeration(dag):
    """Communication on the critical path equals brute force over all source->sink paths
    (durations are exact binary fractions, so ties are exact)."""
    durations, deps, lanes = dag
    assume("comm stream" in lanes.values())
    g = step_graph(durations, deps, lanes)
    assert exposed_on_critical_path(g) == brute_exposed(g)


def test_critical_path_exposure_differs_from_timeline_exposure():
    """The docstring's two cases: (1) a collective fully overlapped for 10 of its 12 s, that the
    next op waits for, costs all 12 s on the critical path, while (1 - ratio)·comm = 2 s;
    (2) a non-overlapped collective that nothing waits for costs nothing."""
    g = step_graph(
        {"compute1": 10, "allreduce": 12, "compute2": 1},
        [("compute1", "compute2"), ("allreduce", "compute2")],
        {"compute1": "compute stream", "compute2": "compute stream", "allreduce": "comm stream"},
    )
    comm, compute = [[0, 12]], [[0, 10], [12, 13]]
    assert (1 - overlap_ratio(comm, compute)) * 12 == pytest.approx(2.0)
    assert exposed_communication(comm, compute) == pytest.approx(2.0)
    assert exposed_on_critical_path(g) == 12.0

    g2 = step_graph(
        {"compute": 10, "allreduce": 2, "load_data": 14, "optimizer": 1},
        [
            ("compute", "allreduce"),
            ("allreduce", "optimizer"),
            ("load_data", "optimizer"),
            ("compute", "optimizer"),
        ],
        {
            "compute": "compute stream",
            "allreduce": "comm stream",
            "load_data": "data loader",
            "optimizer": "compute stream",
        },
    )
    comm, compute = [[10, 12]], [[0, 10], [14, 15]]
    assert exposed_communication(comm, compute) == pytest.approx(2.0)
    assert exposed_on_critical_path(g2) == 0.0


def test_exposed_on_critical_path_needs_comm_lane():
    """A graph with no op on the communication lanes is an error (likely a lane-name typo)."""
    g = step_graph({"a": 1.0, "b": 2.0}, [("a", "b")], {"a": "compute stream", "b": "CPU"})
    with pytest.raises(ValueError, match="no op runs on the communication lanes"):
        exposed_on_critical_path(g)
    assert exposed_on_critical_path(g, comm_lanes=["CPU"]) == 2.0


# --- bucketed all-reduce model -------------------------------------------------------------------


def ddp_buckets(grad_bytes, cap, first_cap=None):
    """Spec of DDP's rule: walk layers last to first, skip gradient-less layers, close a bucket
    as soon as its size reaches the cap (the first bucket's cap may differ)."""
    out, cur = [], []
    for layer in reversed(range(len(grad_bytes))):
        if grad_bytes[layer] > 0:
            cur.append(layer)
            limit = first_cap if (first_cap is not None and not out) else cap
            if sum(grad_bytes[i] for i in cur) >= limit:
                out.append(tuple(cur))
                cur = []
    if cur:
        out.append(tuple(cur))
    return out


def recurrence(w, g, cap, bw, latency, optimizer_time, first_cap=None):
    """Without contention: layer ends are prefix sums in backward order and each all-reduce
    starts at max(its bucket ready, previous all-reduce end)."""
    finish, t = {}, 0.0
    for layer in reversed(range(len(w))):
        t += w[layer]
        finish[layer] = t
    prev, comm = 0.0, []
    for b in ddp_buckets(g, cap, first_cap):
        s = max(finish[b[-1]], prev)
        prev = s + latency + sum(g[i] for i in b) / bw
        comm.append((s, prev))
    return max(t, prev) + optimizer_time, comm


def grid_simulation(w, g, cap, bw, latency, contention, optimizer_time, dt, first_cap=None):
    """Brute force: advance time in steps of dt; computation progresses dt/(1 + contention) per
    step while an all-reduce runs, dt otherwise. Returns (step time, comm starts)."""
    buckets = ddp_buckets(g, cap, first_cap)
    closes = {b[-1]: k for k, b in enumerate(buckets)}
    dur = [latency + sum(g[i] for i in b) / bw for b in buckets]
    order = list(reversed(range(len(w))))
    pos, rem = 0, w[order[0]]
    ready = [None] * len(buckets)
    starts = [None] * len(buckets)
    k, comm_rem, t = 0, None, 0.0
    while True:
        changed = True
        while changed:  # settle everything that happens at this instant
            changed = False
            while pos < len(order) and rem <= 1e-12:
                if order[pos] in closes:
                    ready[closes[order[pos]]] = t
                pos += 1
                rem = w[order[pos]] if pos < len(order) else 0.0
                changed = True
            if comm_rem is not None and comm_rem <= 1e-12:
                comm_rem, k, changed = None, k + 1, True
            if comm_rem is None and k < len(buckets) and ready[k] is not None:
                comm_rem, starts[k], changed = dur[k], t, True
        if pos >= len(order) and comm_rem is None and k >= len(buckets):
            return t + optimizer_time, starts
        factor = 1.0 + contention if comm_rem is not None else 1.0
        if pos < len(order):
            rem -= dt / factor
        if comm_rem is not None:
            comm_rem -= dt
        t += dt


LAYER_TIMES = st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0, 1.5]), min_size=1, max_size=6)


@st.composite
def bucket_cases(draw):
    w = draw(LAYER_TIMES)
    g = draw(st.lists(st.sampled_from([0.0, 1.0, 2.0, 3.0, 5.0]), min_size=len(w), max_size=len(w)))
    assume(sum(g) > 0)
    cap = draw(st.sampled_from([1.0, 2.0, 4.0, 6.0, 100.0]))
    bw = draw(st.sampled_from([1.0, 2.0, 4.0, 8.0]))
    latency = draw(st.sampled_from([0.0, 0.1, 0.5]))
    return w, g, cap, bw, latency


@given(bucket_cases(), st.sampled_from([0.0, 0.3]))
def test_no_contention_matches_recurrence(case, opt):
    """contention = 0: the event-driven timeline equals the closed-form recurrence."""
    w, g, cap, bw, latency = case
    tl = bucketed_allreduce_timeline(w, g, cap, bw, latency, 0.0, opt)
    step, comm = recurrence(w, g, cap, bw, latency, opt)
    assert tl.step_time == pytest.approx(step)
    np.testing.assert_allclose(tl.comm, np.array(comm).reshape(-1, 2))
    assert tl.buckets == tuple(ddp_buckets(g, cap))
    assert tl.contention_delay == pytest.approx(0.0, abs=1e-12)


@settings(max_examples=30, deadline=None)
@given(bucket_cases(), st.sampled_from([0.0, 0.5, 2.0]), st.sampled_from([0.0, 0.25]))
def test_timeline_matches_grid_simulation(case, contention, opt):
    """The event-driven timeline agrees with a brute-force time-stepped simulation (dt = 1 ms)
    to within the grid's error."""
    w, g, cap, bw, latency = case
    dt = 1e-3
    tl = bucketed_allreduce_timeline(w, g, cap, bw, latency, contention, opt)
    step, starts = grid_simulation(w, g, cap, bw, latency, contention, opt, dt)
    tol = (len(w) + len(tl.buckets) + 2) * dt * (1 + contention) * 2
    assert tl.step_time == pytest.approx(step, abs=tol)
    np.testing.assert_allclose(tl.comm[:, 0], starts, atol=tol)


@given(bucket_cases(), st.sampled_from([0.0, 0.5, 2.0]))
def test_timeline_invariants(case, contention):
    """Overlap ratio in [0, 1]; exposed ≤ total comm; the step is at least the uncontended
    backward pass and at most the fully contended serial schedule; compute is back to back."""
    w, g, cap, bw, latency = case
    tl = bucketed_allreduce_timeline(w, g, cap, bw, latency, contention, 0.0)
    total_comm = float(tl.comm_durations.sum())
    if total_comm > 0:
        assert 0.0 <= tl.overlap_ratio <= 1.0 + 1e-12
    assert -1e-12 <= tl.exposed_comm <= total_comm + 1e-9
    assert tl.step_time >= sum(w) - 1e-9
    assert tl.step_time >= total_comm - 1e-9
    assert tl.step_time <= sum(w) * (1 + contention) + total_comm + 1e-9
    order = list(reversed(range(len(w))))
    ends = tl.compute[order, 1]
    np.testing.assert_allclose(tl.compute[order[1:], 0], ends[:-1])
    assert (np.diff(tl.comm[:, 0]) >= -1e-12).all()
    assert (tl.comm[1:, 0] >= tl.comm[:-1, 1] - 1e-12).all()  # one comm stream


@given(bucket_cases(), st.sampled_from([0.0, 0.5, 2.0]), st.floats(1.0, 4.0))
def test_step_time_non_increasing_in_bandwidth(case, contention, factor):
    """More bandwidth never makes the step slower, with or without contention."""
    w, g, cap, bw, latency = case
    slow = bucketed_allreduce_timeline(w, g, cap, bw, latency, contention).step_time
    fast = bucketed_allreduce_timeline(w, g, cap, bw * factor, latency, contention).step_time
    assert fast <= slow + 1e-9


def test_infinite_bandwidth_limit():
    """Free transfers: every collective takes 0 s, nothing is exposed, the step is the backward
    pass plus the optimizer, and the overlap ratio is undefined (nan)."""
    tl = bucketed_allreduce_timeline([1, 2, 3], [4, 4, 4], 4, math.inf, 0.0, 0.5, 0.25)
    assert tl.step_time == pytest.approx(6.25)
    assert tl.exposed_comm == 0.0
    assert math.isnan(tl.overlap_ratio)
    np.testing.assert_array_equal(tl.comm_durations, 0.0)


def test_single_bucket_is_fully_exposed():
    """One bucket holding every gradient starts only when the backward pass ends: all of its
    time is exposed, the ratio is 0 and the step is the serial sum."""
    tl = bucketed_allreduce_timeline([1, 2, 3], [4, 4, 4], 1e9, 6.0, 0.1, 0.5, 0.25)
    assert tl.buckets == ((2, 1, 0),)
    assert tl.comm[0, 0] == pytest.approx(6.0)
    assert tl.exposed_comm == pytest.approx(2.1)
    assert tl.overlap_ratio == 0.0
    assert tl.step_time == pytest.approx(6.0 + 2.1 + 0.25) == tl.serial_step_time


def test_buckets_follow_ddp_rule_and_first_bucket_cap():
    """A bucket closes once its size reaches the cap; DDP's small first bucket closes after
    the first gradient; layers without gradients are in no bucket."""
    g = [3, 3, 0, 3, 3]
    assert bucketed_allreduce_timeline([1] * 5, g, 5, 1).buckets == ((4, 3), (1, 0))
    assert bucketed_allreduce_timeline([1] * 5, g, 7, 1).buckets == ((4, 3, 1), (0,))
    tl = bucketed_allreduce_timeline([1] * 5, g, 5, 1, first_bucket_bytes=1)
    assert tl.buckets == ((4,), (3, 1), (0,))
    assert tl.buckets == tuple(ddp_buckets(g, 5, first_cap=1))


def test_high_overlap_ratio_with_a_slower_step():
    """Under contention a higher overlap ratio can come with a slower step: 1-byte buckets
    overlap 87.5 % of their communication yet lose to 4-byte buckets (50 %) and even to a
    single bucket that overlaps nothing, because they pay the latency eight times and slow
    the backward pass. Without contention the small buckets win."""
    w, g = [1.0] * 8, [1.0] * 8
    small, mid, one = (
        bucketed_allreduce_timeline(w, g, cap, 2.0, 0.2, 3.0) for cap in (1.0, 4.0, 8.0)
    )
    assert small.overlap_ratio == pytest.approx(0.875) and mid.overlap_ratio == pytest.approx(0.5)
    assert one.overlap_ratio == 0.0
    assert small.step_time == pytest.approx(12.375)
    assert mid.step_time == pytest.approx(11.85)
    assert one.step_time == pytest.approx(12.2)
    assert small.step_time > mid.step_time and small.step_time > one.step_time
    uncontended = bucketed_allreduce_timeline(w, g, 1.0, 2.0, 0.2, 0.0)
    assert uncontended.step_time == pytest.approx(8.7)
    assert uncontended.step_time < one.step_time


@given(bucket_cases(), st.sampled_from([0.0, 0.5, 2.0, 5.0]), st.sampled_from([0.0, 0.3]))
def test_overlap_saves_time_over_serial_by_closed_form(case, contention, opt):
    """With the same buckets, overlapping O seconds of communication hides O and stretches the
    backward pass by O·c/(1+c), so whenever the last all-reduce ends after the backward pass,
    step = serial_step_time - O/(1 + c): overlap never loses to the serial schedule in this
    model (it can lose to a different bucketing, see above)."""
    w, g, cap, bw, latency = case
    tl = bucketed_allreduce_timeline(w, g, cap, bw, latency, contention, opt)
    overlapped = float(tl.comm_durations.sum()) - tl.exposed_comm
    assert tl.contention_delay == pytest.approx(overlapped * contention / (1 + contention))
    assert tl.step_time <= tl.serial_step_time + 1e-9
    if tl.comm[-1, 1] >= tl.backward_end:
        assert tl.step_time == pytest.approx(tl.serial_step_time - overlapped / (1 + contention))


@settings(max_examples=30, deadline=None)
@given(
    bucket_cases(),
    st.sampled_from([0.5, 1.0, 3.0, 1e9]),
    st.sampled_from([0.0, 0.5, 2.0]),
    st.sampled_from([0.0, 0.25]),
)
def test_first_bucket_cap_matches_brute_force(case, first_cap, contention, opt):
    """DDP's small first bucket: the buckets follow the spec ddp_buckets(first_cap=...), and the
    timeline equals the recurrence without contention and the time-stepped simulation with it."""
    w, g, cap, bw, latency = case
    tl = bucketed_allreduce_timeline(
        w, g, cap, bw, latency, contention, opt, first_bucket_bytes=first_cap
    )
    assert tl.buckets == tuple(ddp_buckets(g, cap, first_cap))
    if contention == 0.0:
        step, comm = recurrence(w, g, cap, bw, latency, opt, first_cap)
        assert tl.step_time == pytest.approx(step)
        np.testing.assert_allclose(tl.comm, np.array(comm).reshape(-1, 2))
    dt = 1e-3
    step, starts = grid_simulation(w, g, cap, bw, latency, contention, opt, dt, first_cap)
    tol = (len(w) + len(tl.buckets) + 2) * dt * (1 + contention) * 2
    assert tl.step_time == pytest.approx(step, abs=tol)
    np.testing.assert_allclose(tl.comm[:, 0], starts, atol=tol)


def test_first_bucket_of_the_lesson_model_is_one_matrix():
    """cost03's model: with DDP's 1 MiB first bucket, the first bucket is the last layer's MLP
    down matrix alone (16 MiB, larger than the cap), and the others follow the 25 MiB rule."""
    w, g = transformer_grad_tensors()
    mib = 2.0**20
    tl = bucketed_allreduce_timeline(w, g, 25 * mib, 12e9, first_bucket_bytes=mib)
    assert tl.buckets[0] == (95,)
    assert tl.bucket_sizes[0] == 16 * mib
    assert tl.buckets[1:] == tuple(ddp_buckets(np.r_[g[:95], 0.0], 25 * mib))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(layer_backward_times=[1, 2], layer_grad_bytes=[1]), "differ in length"),
        (dict(layer_backward_times=[1, -2]), r"layer_backward_times\[1\]"),
        (dict(layer_grad_bytes=[0, 0]), "nothing to all-reduce"),
        (dict(bucket_bytes=0), "bucket_bytes"),
        (dict(bandwidth=0), "bandwidth"),
        (dict(latency=math.nan), "latency"),
        (dict(contention=-1), "contention"),
    ],
)
def test_bucket_timeline_validates(kwargs, match):
    """Bad inputs are ValueErrors naming the argument (and element)."""
    args = dict(layer_backward_times=[1, 2], layer_grad_bytes=[1, 1], bucket_bytes=1, bandwidth=1.0)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        bucketed_allreduce_timeline(**args)


# --- communication slowed by computation (comm_contention) and the step graph of a timeline ----


def grid_simulation_both(w, g, cap, bw, latency, contention, comm_contention, optimizer_time, dt):
    """Brute force with both slowdowns: per time step dt, computation progresses dt/(1 + c) while
    an all-reduce runs and the all-reduce progresses dt/(1 + c') while computation runs.
    Returns (step time, comm starts, comm ends)."""
    buckets = ddp_buckets(g, cap)
    closes = {b[-1]: k for k, b in enumerate(buckets)}
    dur = [latency + sum(g[i] for i in b) / bw for b in buckets]
    order = list(reversed(range(len(w))))
    pos, rem = 0, w[order[0]]
    ready = [None] * len(buckets)
    starts, ends = [None] * len(buckets), [None] * len(buckets)
    k, comm_rem, t = 0, None, 0.0
    while True:
        changed = True
        while changed:  # settle everything that happens at this instant
            changed = False
            while pos < len(order) and rem <= 1e-12:
                if order[pos] in closes:
                    ready[closes[order[pos]]] = t
                pos += 1
                rem = w[order[pos]] if pos < len(order) else 0.0
                changed = True
            if comm_rem is not None and comm_rem <= 1e-12:
                ends[k] = t
                comm_rem, k, changed = None, k + 1, True
            if comm_rem is None and k < len(buckets) and ready[k] is not None:
                comm_rem, starts[k], changed = dur[k], t, True
        if pos >= len(order) and comm_rem is None and k >= len(buckets):
            return t + optimizer_time, starts, ends
        computing = pos < len(order)
        if computing:
            rem -= dt / (1.0 + contention if comm_rem is not None else 1.0)
        if comm_rem is not None:
            comm_rem -= dt / (1.0 + comm_contention if computing else 1.0)
        t += dt


@settings(max_examples=30, deadline=None)
@given(
    bucket_cases(),
    st.sampled_from([0.0, 0.5, 2.0]),
    st.sampled_from([0.0, 0.5, 1.5]),
    st.sampled_from([0.0, 0.25]),
)
def test_comm_contention_matches_grid_simulation(case, contention, comm_contention, opt):
    """With the collective slowed too, the event-driven timeline still agrees with a brute-force
    time-stepped simulation (dt = 1 ms) to within the grid's error."""
    w, g, cap, bw, latency = case
    dt = 1e-3
    tl = bucketed_allreduce_timeline(
        w, g, cap, bw, latency, contention, opt, comm_contention=comm_contention
    )
    step, starts, ends = grid_simulation_both(
        w, g, cap, bw, latency, contention, comm_contention, opt, dt
    )
    tol = (len(w) + len(tl.buckets) + 2) * dt * (1 + contention) * (1 + comm_contention) * 2
    assert tl.step_time == pytest.approx(step, abs=tol)
    np.testing.assert_allclose(tl.comm[:, 0], starts, atol=tol)
    np.testing.assert_allclose(tl.comm[:, 1], ends, atol=tol)


@given(
    bucket_cases(),
    st.sampled_from([0.0, 0.5, 2.0, 5.0]),
    st.sampled_from([0.0, 0.25, 1.0, 3.0]),
    st.sampled_from([0.0, 0.3]),
)
def test_overlap_pays_by_closed_form_with_both_slowdowns(case, contention, comm_contention, opt):
    """With the same buckets, O seconds of overlap do O/(1+c) of computation and O/(1+c') of
    communication: step = serial - O·(1/(1+c) + 1/(1+c') - 1), so overlapping beats the serial
    schedule exactly when c·c' < 1 (and loses when c·c' > 1)."""
    w, g, cap, bw, latency = case
    c, cc = contention, comm_contention
    tl = bucketed_allreduce_timeline(w, g, cap, bw, latency, c, opt, comm_contention=cc)
    overlapped = total_length(tl.comm) - tl.exposed_comm
    gain = overlapped * (1 / (1 + c) + 1 / (1 + cc) - 1)
    assert tl.step_time == pytest.approx(tl.serial_step_time - gain, abs=1e-9)
    assert tl.contention_delay == pytest.approx(overlapped * c / (1 + c), abs=1e-9)
    if overlapped > 1e-9 and c * cc < 1:
        assert tl.step_time < tl.serial_step_time
    if overlapped > 1e-9 and c * cc > 1:
        assert tl.step_time > tl.serial_step_time


def test_overlap_loses_when_both_slow_each_other_enough():
    """Four 2-s layers, one 3-s all-reduce per layer: with c = c' = 1.5 (c·c' > 1) the overlapped
    step is slower than backward-then-all-reduce with the same buckets; with c = c' = 0.5 it is
    faster, and at c = 1, c' = 1 (together exactly as fast as one at a time) it ties."""
    w, g = [2.0] * 4, [1.0] * 4
    serial = 8.0 + 12.0 + 1.0
    for c, cc, sign in ((1.5, 1.5, 1), (0.5, 0.5, -1), (1.0, 1.0, 0)):
        tl = bucketed_allreduce_timeline(w, g, 1.0, 1 / 3, 0.0, c, 1.0, comm_contention=cc)
        assert tl.serial_step_time == pytest.approx(serial)
        diff = tl.step_time - serial
        assert diff == pytest.approx(0.0, abs=1e-9) if sign == 0 else diff * sign > 0


def test_comm_contention_zero_is_the_default_model():
    """comm_contention = 0 gives exactly the model without the argument."""
    args = ([1.0, 0.5, 1.5, 1.0], [2.0, 3.0, 1.0, 2.0], 3.0, 2.0, 0.1, 0.7, 0.2)
    a = bucketed_allreduce_timeline(*args)
    b = bucketed_allreduce_timeline(*args, comm_contention=0.0)
    np.testing.assert_array_equal(a.comm, b.comm)
    np.testing.assert_array_equal(a.compute, b.compute)
    assert a.step_time == b.step_time


@given(bucket_cases(), st.sampled_from([0.0, 0.5, 2.0]), st.sampled_from([0.0, 1.0]))
def test_bucket_step_graph_reproduces_the_timeline(case, contention, comm_contention):
    """The ASAP schedule of bucket_step_graph(timeline) has the timeline's layer, all-reduce and
    optimizer intervals and its step time."""
    w, g, cap, bw, latency = case
    tl = bucketed_allreduce_timeline(
        w, g, cap, bw, latency, contention, 0.25, comm_contention=comm_contention
    )
    sched = schedule(bucket_step_graph(tl)).set_index("op")
    for i in range(len(w)):
        assert sched.loc[f"backward L{i}", ["start", "end"]].tolist() == pytest.approx(
            tl.compute[i].tolist(), abs=1e-9
        )
    for k in range(len(tl.buckets)):
        assert sched.loc[f"all-reduce b{k}", ["start", "end"]].tolist() == pytest.approx(
            tl.comm[k].tolist(), abs=1e-9
        )
    assert sched["end"].max() == pytest.approx(tl.step_time, abs=1e-9)
    assert sched.loc["optimizer", "start"] == pytest.approx(tl.optimizer[0], abs=1e-9)


def test_critical_path_comm_of_a_comm_bound_timeline():
    """Four 2-ms layers, one 3-ms all-reduce each, 1-ms optimizer: the all-reduces queue back to
    back from 2 ms to 14 ms. The timeline shows 6 ms of comm with no compute (ratio 0.5), but all
    12 ms of communication is on the critical path, and 20 % faster all-reduces save
    0.2 × 12 ms = 2.4 ms, not 0.2 × 6 ms."""
    w, g = [2e-3] * 4, [1.0] * 4
    tl = bucketed_allreduce_timeline(w, g, 1.0, 1 / 3e-3, optimizer_time=1e-3)
    assert tl.step_time == pytest.approx(15e-3)
    assert tl.overlap_ratio == pytest.approx(0.5)
    assert tl.exposed_comm == pytest.approx(6e-3)
    assert exposed_on_critical_path(bucket_step_graph(tl)) == pytest.approx(12e-3)
    faster = bucketed_allreduce_timeline(w, g, 1.0, 1 / 2.4e-3, optimizer_time=1e-3)
    assert tl.step_time - faster.step_time == pytest.approx(2.4e-3)


def test_comm_contention_validates():
    """A negative or NaN comm_contention is a ValueError naming the argument."""
    for bad in (-0.5, math.nan):
        with pytest.raises(ValueError, match="comm_contention"):
            bucketed_allreduce_timeline([1, 2], [1, 1], 1, 1.0, comm_contention=bad)


def test_transformer_grad_tensors_count_12h2_per_layer():
    """Four weight matrices per layer (3h², h², 4h², 4h²): 12h² parameters and the whole
    layer_backward_time per layer, shares proportional to parameters, forward order."""
    w, g = transformer_grad_tensors(
        num_layers=3, hidden=8, layer_backward_time=1.2, bytes_per_param=2
    )
    assert len(w) == len(g) == 12
    np.testing.assert_allclose(g[:4], np.array([3, 1, 4, 4]) * 64 * 2)
    assert g.sum() == pytest.approx(3 * 12 * 64 * 2)
    assert w.sum() == pytest.approx(3 * 1.2)
    np.testing.assert_allclose(w / w.sum(), g / g.sum())
    for bad, match in ((dict(num_layers=0), "num_layers"), (dict(hidden=0), "hidden")):
        with pytest.raises(ValueError, match=match):
            transformer_grad_tensors(**bad)


# --- cost03's exercise trace -----------------------------------------------------------------


def _hta_050_classes(gpu: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """HTA 0.5.0's communication and computation masks (hta/utils/utils.py, ported)."""
    comm = gpu["name"].str.match(r"^nccl.*Kernel")
    memory = gpu["name"].str.match(r"(^Memcpy)|(^Memset)|(^dma)")
    other = gpu["name"].str.match(r"(^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)")
    return comm, ~comm & ~memory & ~other


def _hta_020_compute(gpu: pd.DataFrame) -> pd.Series:
    """HTA 0.2.0's computation mask: neither "ncclKernel" nor "Memcpy"/"Memset" in the name."""
    return ~gpu["name"].str.contains("ncclKernel") & ~gpu["name"].str.contains("Memcpy|Memset")


def test_exercise_trace_separates_hta_classes():
    """tracegen.with_copies_and_syncs adds a copy, a memset, a normalization kernel and a Stream
    Sync during every step's last all-reduce: HTA 0.5.0's classes count the kernel, so the ratio
    rises above the plain trace's, and the same as a split of the kernel category; counting the
    copies, the sync (as HTA 0.2.0's classes do) or both as computation raises it further, each
    by a different amount, and so does leaving the side stream's kernel out."""
    from course_lib.tracegen import COMPUTE_STREAM, load_dp_profile, with_copies_and_syncs

    plain = load_dp_profile()
    traces = with_copies_and_syncs(plain)
    iv = lambda e: np.column_stack([e["ts"], e["ts"] + e["dur"]])  # noqa: E731
    for r, df in traces.items():
        gpu = df[df["stream"].notna()]
        comm, compute = _hta_050_classes(gpu)
        hta = overlap_ratio(iv(gpu[comm]), iv(gpu[compute]))
        k = df[df["cat"] == "kernel"]
        nccl = k["name"].str.startswith("nccl")
        assert hta == pytest.approx(overlap_ratio(iv(k[nccl]), iv(k[~nccl])), rel=1e-12)
        pk = plain[r][plain[r]["cat"] == "kernel"]
        pnccl = pk["name"].str.startswith("nccl")
        without_kernel = overlap_ratio(iv(pk[pnccl]), iv(pk[~pnccl]))
        on_compute_stream = overlap_ratio(
            iv(k[nccl]), iv(k[~nccl & (k["stream"] == COMPUTE_STREAM)])
        )
        assert on_compute_stream == pytest.approx(without_kernel, rel=1e-12)
        assert hta > without_kernel + 0.02
        is_sync = gpu["name"] == "Stream Sync"
        assert _hta_020_compute(gpu)[is_sync].all() and not compute[is_sync].any()
        memory = gpu["name"].str.match(r"^(Memcpy|Memset)")
        memory_as_compute = overlap_ratio(iv(gpu[comm]), iv(gpu[compute | memory]))
        sync_as_compute = overlap_ratio(iv(gpu[comm]), iv(gpu[compute | is_sync]))
        everything = overlap_ratio(iv(gpu[comm]), iv(gpu[~comm]))
        assert memory_as_compute > hta + 0.03 and sync_as_compute > hta + 0.03
        assert abs(memory_as_compute - sync_as_compute) > 1e-3
        assert everything > max(memory_as_compute, sync_as_compute) + 0.03
