"""Tests for course_lib.memory: live bytes and the peak vs a per-time brute force, event
validation, the caching-allocator model (PyTorch's constants and invariants) and the per-layer
activation formulas vs an itemized tensor list (cost05)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course_lib.memory import (
    K_LARGE_BUFFER,
    K_SMALL_BUFFER,
    CachingAllocator,
    activation_bytes_per_layer,
    lifetimes,
    live_bytes,
    live_bytes_by_category,
    peak,
    simulate_allocator,
    training_step_events,
)
from tests.strategies import alloc_events, allocator_ops

MiB = 1 << 20


def events(rows, index=None):
    df = pd.DataFrame(rows, columns=["time", "tensor", "bytes", "kind", "category"])
    if index is not None:
        df.index = index
    return df


def brute_live(df: pd.DataFrame):
    """Per event time t, in a Python loop: bytes of every tensor with alloc <= t < free."""
    allocs, frees = {}, {}
    for _, r in df.iterrows():
        (allocs if r["kind"] == "alloc" else frees)[r["tensor"]] = r
    times = sorted(set(df["time"]))
    levels = []
    for t in times:
        level = 0.0
        for name, a in allocs.items():
            f = frees.get(name)
            if a["time"] <= t and (f is None or f["time"] > t):
                level += a["bytes"]
        levels.append(level)
    return np.array(times, dtype=float), np.array(levels)


# --- live bytes and the peak ---------------------------------------------------------------------


@settings(deadline=None)
@given(alloc_events())
def test_live_bytes_matches_brute_force(df):
    """The sort + cumsum sweep equals, at every event time, the sum over tensors alive then."""
    times, level = live_bytes(df)
    bt, bl = brute_live(df)
    np.testing.assert_array_equal(times, bt)
    np.testing.assert_array_equal(level, bl)


@settings(deadline=None)
@given(alloc_events())
def test_peak_and_attribution_match_brute_force(df):
    """The peak is the brute-force maximum, at its first time; the tensors listed as live there
    are exactly those alive then and sum to the peak; the sum of all allocations is never below."""
    p = peak(df)
    bt, bl = brute_live(df)
    i = int(np.argmax(bl))
    assert (p.time, p.bytes) == (bt[i], bl[i])
    assert p.live["bytes"].sum() == p.bytes
    life = lifetimes(df)
    alive = {
        r.tensor
        for r in life.itertuples()
        if r.alloc_time <= p.time and not (r.free_time <= p.time) and r.free_time != r.alloc_time
    }
    assert set(p.live["tensor"]) == alive
    assert df.loc[df["kind"] == "alloc", "bytes"].sum() >= p.bytes


def test_free_before_alloc_at_the_same_time():
    """A tensor freed at t and one allocated at t are never live together: peak 100, not 200."""
    df = events(
        [
            (0, "a", 100, "alloc", "act"),
            (1, "a", 100, "free", "act"),
            (1, "b", 100, "alloc", "act"),
            (2, "b", 100, "free", "act"),
        ]
    )
    times, level = live_bytes(df)
    np.testing.assert_array_equal(times, [0, 1, 2])
    np.testing.assert_array_equal(level, [100, 100, 0])
    assert peak(df).bytes == 100


def test_peak_attribution_by_hand():
    """Workspace w lives only inside [2, 3): it is in the peak at t = 2 with a and b."""
    df = events([
        (0, "a", 400, "alloc", "activation"), (1, "b", 300, "alloc", "activation"),
        (2, "w", 500, "alloc", "workspace"), (3, "w", 500, "free", "workspace"),
        (4, "b", 300, "free", "activation"), (5, "a", 400, "free", "activation"),
        (6, "g", 1000, "alloc", "gradient"),
    ])  # fmt: skip
    p = peak(df)
    assert (p.time, p.bytes) == (2.0, 1200.0)
    assert list(p.live["tensor"]) == ["w", "a", "b"]  # largest first
    assert list(p.live["category"]) == ["workspace", "activation", "activation"]
    # summing per-op allocations overstates the peak
    assert df.loc[df["kind"] == "alloc", "bytes"].sum() == 2200


def test_zero_lifetime_tensor_is_never_live():
    """Allocated and freed at the same time: contributes nothing (half-open lifetime)."""
    df = events(
        [(0, "a", 100, "alloc", "x"), (1, "t", 999, "alloc", "x"), (1, "t", 999, "free", "x")]
    )
    assert peak(df).bytes == 100
    np.testing.assert_array_equal(live_bytes(df)[1], [100, 100])


def test_never_freed_tensor_stays_live_and_category_is_optional():
    """A tensor without a free is live to the end; a missing category column becomes 'unknown'."""
    df = pd.DataFrame(
        {"time": [0, 1], "tensor": ["w", "x"], "bytes": [10, 5], "kind": ["alloc", "alloc"]}
    )
    p = peak(df)
    assert p.bytes == 15 and set(p.live["category"]) == {"unknown"}


@pytest.mark.parametrize(
    "rows, match",
    [
        (
            [(0, "a", 10, "alloc", "x"), (1, "b", 10, "free", "x")],
            "event 11: free of unknown tensor 'b'",
        ),
        (
            [(0, "a", 10, "alloc", "x"), (1, "a", 10, "free", "x"), (2, "a", 10, "free", "x")],
            "event 12: double free of tensor 'a'",
        ),
        ([(0, "a", -5, "alloc", "x")], "event 10: bytes must be a finite number >= 0"),
        (
            [(0, "a", 10, "alloc", "x"), (1, "a", 10, "alloc", "x")],
            "event 11: tensor 'a' is allocated a second time",
        ),
        (
            [(2, "a", 10, "alloc", "x"), (1, "a", 10, "free", "x")],
            "event 11: tensor 'a' is freed at 1.0 before it is allocated",
        ),
        ([(0, "a", 10, "malloc", "x")], "event 10: kind must be"),
        ([(np.nan, "a", 10, "alloc", "x")], "event 10: time must be a finite"),
        (
            [(0, "a", 10, "alloc", "x"), (1, "a", 20, "free", "x")],
            "event 11: free of tensor 'a' says 20",
        ),
    ],
)
def test_bad_events_name_the_event_index(rows, match):
    """Unknown free, double free, negative bytes, re-allocation, free before alloc, unknown kind,
    NaN time and inconsistent free sizes: ValueError naming the event's index label."""
    df = events(rows, index=range(10, 10 + len(rows)))
    with pytest.raises(ValueError, match=match):
        live_bytes(df)


def test_missing_columns_and_empty_events_raise():
    """Required columns are named; an empty table is an error."""
    with pytest.raises(ValueError, match="lacks columns"):
        live_bytes(pd.DataFrame({"time": [0.0]}))
    with pytest.raises(ValueError, match="empty"):
        live_bytes(events([]))


# --- caching allocator ---------------------------------------------------------------------------


def check_invariants(a: CachingAllocator) -> None:
    """requested <= allocated <= reserved; blocks tile their segments; stats match the blocks;
    no two free neighbours are left unmerged."""
    assert 0 <= a.requested_bytes <= a.allocated_bytes <= a.reserved_bytes
    seg = a.segments()
    if len(seg) == 0:
        assert a.reserved_bytes == 0 and a.allocated_bytes == 0
        return
    assert seg.drop_duplicates("segment")["segment_size"].sum() == a.reserved_bytes
    used = seg[seg["tensor"].notna()]
    assert used["size"].sum() == a.allocated_bytes
    assert used["requested"].sum() == a.requested_bytes
    for _, blocks in seg.groupby("segment"):
        offsets, sizes = blocks["offset"].to_numpy(), blocks["size"].to_numpy()
        assert offsets[0] == 0
        np.testing.assert_array_equal(offsets[1:], (offsets + sizes)[:-1])
        assert offsets[-1] + sizes[-1] == blocks["segment_size"].iloc[0]
        free = blocks["tensor"].isna().to_numpy()
        assert not (free[1:] & free[:-1]).any()
        assert (sizes % 512 == 0).all()


@settings(max_examples=150, deadline=None)
@given(allocator_ops())
def test_allocator_invariants_hold_after_every_operation(ops):
    """reserved >= allocated >= requested after every malloc/free; after freeing everything
    nothing is allocated but memory stays reserved until empty_cache releases all of it."""
    a = CachingAllocator()
    for op, tensor, nbytes in ops:
        if op == "malloc":
            size = a.malloc(tensor, nbytes)
            assert size == 0 if nbytes == 0 else size >= max(nbytes, 512)
        else:
            a.free(tensor)
        check_invariants(a)
    live = {t for op, t, _ in ops if op == "malloc"} - {t for op, t, _ in ops if op == "free"}
    reserved = a.reserved_bytes
    for t in live:
        a.free(t)
    check_invariants(a)
    assert a.allocated_bytes == 0 and a.reserved_bytes == reserved
    assert a.empty_cache() == reserved
    assert a.reserved_bytes == 0


def test_allocator_small_requests_round_and_pack_in_2mib():
    """1 byte takes a 512-byte block in a fresh 2 MiB segment; the next small ones share it."""
    a = CachingAllocator()
    assert a.malloc("x", 1) == 512
    assert (a.requested_bytes, a.allocated_bytes, a.reserved_bytes) == (1, 512, K_SMALL_BUFFER)
    assert a.malloc("y", 1000) == 1024
    assert a.reserved_bytes == K_SMALL_BUFFER
    assert a.malloc("z", 0) == 0  # empty tensors take no block
    assert a.allocated_bytes == 1536


def test_allocator_medium_requests_share_a_20mib_segment():
    """Requests between 1 and 10 MiB reserve 20 MiB and split it; the rest is reused."""
    a = CachingAllocator()
    a.malloc("a", 3 * MiB)
    assert (a.allocated_bytes, a.reserved_bytes) == (3 * MiB, K_LARGE_BUFFER)
    a.malloc("b", 3 * MiB)
    assert (a.allocated_bytes, a.reserved_bytes) == (6 * MiB, K_LARGE_BUFFER)


def test_allocator_large_requests_get_own_rounded_segment():
    """>= 10 MiB: own segment rounded to 2 MiB; a remainder of exactly 1 MiB is not split off
    (large-pool blocks split only if > 1 MiB remains), so 11 MiB counts 12 MiB as allocated."""
    a = CachingAllocator()
    assert a.malloc("a", 11 * MiB) == 12 * MiB
    assert (a.requested_bytes, a.allocated_bytes, a.reserved_bytes) == (
        11 * MiB,
        12 * MiB,
        12 * MiB,
    )
    b = CachingAllocator()
    assert b.malloc("a", 10 * MiB + 1) == 10 * MiB + 512  # 2 MiB - 512 B remain: split
    assert b.reserved_bytes == 12 * MiB


@pytest.mark.parametrize(
    "nbytes, allocated, reserved",
    [
        (MiB, MiB, K_SMALL_BUFFER),  # rounded size <= 1 MiB: small pool
        (MiB + 1, MiB + 512, K_LARGE_BUFFER),  # rounded to 1 MiB + 512: large pool
        (10 * MiB - 512, 10 * MiB - 512, K_LARGE_BUFFER),  # below 10 MiB: a 20 MiB segment
        (10 * MiB, 10 * MiB, 10 * MiB),  # from 10 MiB: its own segment
        (19 * MiB + 1, 20 * MiB, 20 * MiB),  # 1 MiB - 512 remain: not split
    ],
)
def test_allocator_size_boundaries(nbytes, allocated, reserved):
    """The boundaries of PyTorch's size rules on a fresh allocator (cost05, Exercise 3):
    kSmallSize is inclusive, kMinLargeAlloc exclusive, and a large block splits only if more than
    1 MiB would remain (c10/cuda/CUDACachingAllocator.cpp: get_pool, get_allocation_size,
    should_split)."""
    a = CachingAllocator()
    a.malloc("x", nbytes)
    assert (a.allocated_bytes, a.reserved_bytes) == (allocated, reserved)


def test_allocator_reuse_is_best_fit_and_pools_are_separate():
    """Freed blocks stay reserved and are reused best-fit; a small request never takes a block
    from the large pool."""
    a = CachingAllocator()
    for name, size in (("p", 12 * MiB), ("q", 16 * MiB), ("r", 14 * MiB)):
        a.malloc(name, size)
    a.free("q")
    a.free("r")
    reserved = a.reserved_bytes
    assert a.malloc("s", 13 * MiB) == 14 * MiB  # the 14 MiB block, not the 16 MiB one
    assert a.reserved_bytes == reserved
    seg = a.segments()
    assert seg.loc[seg["tensor"] == "s", "segment"].item() == 2
    a.malloc("tiny", 100)
    assert a.reserved_bytes == reserved + K_SMALL_BUFFER


def test_allocator_frees_merge_neighbours():
    """Blocks freed next to each other merge back into one free block of the segment."""
    a = CachingAllocator()
    for name in "abc":
        a.malloc(name, 4096)
    a.free("a")
    a.free("c")
    a.free("b")
    seg = a.segments()
    assert len(seg) == 1 and seg["size"].item() == K_SMALL_BUFFER


def test_allocator_rejects_bad_calls():
    """Double allocation, unknown frees and non-integer sizes are errors."""
    a = CachingAllocator()
    a.malloc("a", 10)
    with pytest.raises(ValueError, match="already allocated"):
        a.malloc("a", 10)
    with pytest.raises(ValueError, match="unknown tensor"):
        a.free("b")
    with pytest.raises(ValueError, match="integer"):
        a.malloc("c", -1)
    with pytest.raises(ValueError, match="integer"):
        a.malloc("c", 1.5)


@settings(deadline=None)
@given(alloc_events())
def test_simulated_allocator_tracks_live_bytes(df):
    """Replaying events: requested bytes after each time equal live_bytes, and reserved >=
    allocated >= requested throughout."""
    sim = simulate_allocator(df)
    assert (sim["reserved"] >= sim["allocated"]).all()
    assert (sim["allocated"] >= sim["requested"]).all()
    last = sim.groupby("time", sort=True).tail(1)
    times, level = live_bytes(df)
    np.testing.assert_array_equal(last["time"].to_numpy(), times)
    np.testing.assert_array_equal(last["requested"].to_numpy(), level)


# --- activation memory per layer (Korthikanti et al. 2022) ---------------------------------------

# Stored tensors of one transformer layer, Section 4.1 of the paper: (size in units of s·b·h or
# a·s²·b, "sbh" | "ass b", split by t under tensor parallelism alone).
ATTENTION = [
    (2, "sbh", False),  # QKV input (layer-norm output), replicated across TP ranks
    (4, "sbh", True),  # Q and K for QKᵀ
    (2, "as2b", True),  # softmax output
    (1, "as2b", True),  # softmax dropout mask
    (2, "as2b", True),  # dropout output (attention over values)
    (2, "sbh", True),  # V
    (2, "sbh", True),  # output-projection input
    (1, "sbh", False),  # attention dropout mask
]
MLP = [
    (2, "sbh", False),  # first linear input
    (8, "sbh", True),  # GeLU input (4h)
    (8, "sbh", True),  # second linear input (GeLU output)
    (1, "sbh", False),  # dropout mask
]
LAYER_NORMS = [(2, "sbh", False), (2, "sbh", False)]


def itemized(s, b, h, a, t, sp, recompute):
    """Sum the itemized tensors: under tensor parallelism the split ones are divided by t, under
    sequence parallelism every one is; selective recomputation drops the a·s²·b tensors; full
    recomputation keeps only the layer input (2·s·b·h, its s/t slice under sequence parallelism)."""
    if recompute == "full":  # the layer input: sharded along s under sequence parallelism
        return 2 * s * b * h / t if sp else 2 * s * b * h
    total = 0.0
    for size, unit, split in ATTENTION + MLP + LAYER_NORMS:
        if unit == "as2b" and recompute == "selective":
            continue
        amount = size * (s * b * h if unit == "sbh" else a * s * s * b)
        total += amount / t if (split or sp) else amount
    return total


@given(
    st.integers(1, 8192),
    st.integers(1, 16),
    st.integers(1, 128).map(lambda k: 128 * k),
    st.sampled_from([8, 16, 32, 64, 96, 128]),
    st.sampled_from([1, 2, 4, 8]),
    st.booleans(),
    st.sampled_from(["none", "selective", "full"]),
)
def test_activation_formula_matches_itemized_tensors(s, b, h, a, t, sp, recompute):
    """Every row of Table 2 equals the sum of the stored tensors it stands for."""
    got = activation_bytes_per_layer(s, b, h, a, t, sp, recompute)
    assert got == pytest.approx(itemized(s, b, h, a, t, sp, recompute), rel=1e-12)


def test_activation_table_rows():
    """The published rows, literally, for s = 2048, b = 1, h = 12288, a = 96, t = 8."""
    s, b, h, a, t = 2048, 1, 12288, 96, 8
    sbh = s * b * h
    row = lambda **kw: activation_bytes_per_layer(s, b, h, a, **kw)  # noqa: E731
    assert row() == pytest.approx(sbh * (34 + 5 * a * s / h))
    assert row(tensor_parallel=t) == pytest.approx(sbh * (10 + 24 / t + 5 * a * s / (h * t)))
    assert row(tensor_parallel=t, sequence_parallel=True) == pytest.approx(
        sbh / t * (34 + 5 * a * s / h)
    )
    assert row(tensor_parallel=t, recompute="selective") == pytest.approx(sbh * (10 + 24 / t))
    assert row(tensor_parallel=t, sequence_parallel=True, recompute="selective") == pytest.approx(
        34 * sbh / t
    )
    assert row(tensor_parallel=t, recompute="full") == 2 * sbh
    # full recomputation under sequence parallelism: each rank checkpoints its s/t slice
    assert row(tensor_parallel=t, sequence_parallel=True, recompute="full") == 2 * sbh / t
    assert row(recompute="full") == row(sequence_parallel=True, recompute="full") == 2 * sbh
    # selective recomputation removes most of it: 5as/h = 80 of 114 units at this size
    assert row(recompute="selective") / row() == pytest.approx(34 / 114)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(seq_len=0), "seq_len"),
        (dict(hidden=2.5), "hidden"),
        (dict(tensor_parallel=True), "tensor_parallel"),
        (dict(recompute="some"), "recompute"),
        (dict(sequence_parallel="yes"), "sequence_parallel"),
    ],
)
def test_activation_bad_inputs(kwargs, match):
    """Non-positive or non-integer sizes and unknown options are ValueErrors."""
    args = dict(seq_len=128, micro_batch=1, hidden=256, num_heads=4)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        activation_bytes_per_layer(**args)


# --- the synthetic training step (training_step_events) ------------------------------------------


def _live_at(life: pd.DataFrame, t: float) -> pd.DataFrame:
    """Tensors alive at time t under the half-open [alloc, free) convention."""
    return life[(life["alloc_time"] <= t) & (life["free_time"].fillna(np.inf) > t)]


@settings(max_examples=25, deadline=None)
@given(
    st.integers(1, 4),
    st.integers(1, 64).map(lambda k: 16 * k),
    st.integers(1, 4),
    st.sampled_from([(64, 2), (128, 4), (256, 8)]),
    st.integers(8, 2000),
    st.sampled_from(["none", "selective", "full"]),
)
def test_step_saves_exactly_the_table_2_activations(L, s, b, shape, v, recompute):
    """At the end of the forward pass each layer holds, as "activation", exactly the bytes of
    activation_bytes_per_layer under the policy; the head holds 2sbh + 2sbh + 4sbV (layer-norm
    input and output, fp32 log-probs); nothing else of the forward pass is left."""
    h, a = shape
    ev = training_step_events(L, s, b, h, a, v, recompute=recompute)
    life = lifetimes(ev)
    end = ev.loc[ev["phase"] == "forward", "time"].max()
    live = _live_at(life, end)
    acts = live[live["category"] == "activation"]
    for i in range(L):
        mine = acts[acts["tensor"].str.startswith(f"L{i}.")]
        assert mine["bytes"].sum() == activation_bytes_per_layer(s, b, h, a, recompute=recompute)
    head = acts[acts["tensor"].str.startswith("head.")]
    assert head["bytes"].sum() == 4 * s * b * h + 4 * s * b * v
    assert set(live["category"]) <= {"weight", "optimizer", "activation"}


@settings(max_examples=25, deadline=None)
@given(
    st.integers(1, 4),
    st.integers(1, 32).map(lambda k: 32 * k),
    st.integers(1, 4),
    st.sampled_from([(64, 2), (128, 4)]),
    st.integers(8, 500),
    st.sampled_from(["none", "selective", "full"]),
)
def test_step_state_and_gradients_balance(L, s, b, shape, v, recompute):
    """Weights + optimizer state are 14 bytes per parameter (2 + 12) from time 0 to the end;
    weight gradients add 2 bytes per parameter during backward and zero_grad frees them all, so
    the step ends where it began; every tensor but the state is freed; ids are unique."""
    h, a = shape
    ev = training_step_events(L, s, b, h, a, v, recompute=recompute)
    params = L * (12 * h * h + 13 * h) + v * h + 2 * h
    allocs = ev[ev["kind"] == "alloc"]
    by_cat = allocs.groupby("category")["bytes"].sum()
    assert by_cat["weight"] == 2 * params and by_cat["optimizer"] == 12 * params
    assert by_cat["gradient"] == 2 * params
    assert allocs["tensor"].is_unique
    life = lifetimes(ev)
    never_freed = life[life["free_time"].isna()]
    assert set(never_freed["category"]) == {"weight", "optimizer"}
    assert (never_freed["alloc_time"] == 0).all()
    times, level = live_bytes(ev)
    assert level[-1] == 14 * params
    assert set(ev["phase"]) == {"setup", "forward", "backward", "optimizer"}
    assert ev["time"].is_monotonic_increasing


@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
@pytest.mark.parametrize("s, b", [(256, 4), (512, 2), (1024, 1), (1024, 4), (2048, 16)])
def test_step_peak_falls_early_in_backward(s, b, recompute):
    """With at least 1024 tokens per micro-batch the peak is in the first 10% of the backward
    pass (the loss gradients land on top of every saved activation), and its live tensors are
    the activations, the loss workspaces and the state."""
    ev = training_step_events(seq_len=s, micro_batch=b, recompute=recompute)
    p = peak(ev)
    bwd = ev.loc[ev["phase"] == "backward", "time"]
    assert bwd.min() <= p.time <= bwd.min() + 0.1 * (bwd.max() - bwd.min())
    assert ev.loc[ev["kind"] == "alloc", "bytes"].sum() > p.bytes  # summing overstates it
    assert set(p.live.loc[p.live["category"] == "workspace", "tensor"]) == {
        "head.d_log_probs",
        "head.d_logits_fp32",
    }


def test_step_small_batch_peaks_in_the_optimizer():
    """With few tokens the activations are small and the peak moves to the optimizer step, where
    every weight gradient and the head's fp32 scratch are live."""
    ev = training_step_events(seq_len=256, micro_batch=1)
    p = peak(ev)
    assert ev.loc[ev["time"] == p.time, "phase"].eq("optimizer").any()
    assert "head.adam_scratch" in set(p.live["tensor"])


def test_step_durations_follow_the_flop_count():
    """With memory traffic made free, forward time is L(24sbh² + 4bs²h) + 2sbhV FLOPs over the
    rate, backward twice that, plus one layer forward per layer under full recomputation and the
    4bs²h core attention under selective recomputation (Korthikanti et al. 2022, §5)."""
    L, s, b, h, a, v, rate = 3, 256, 2, 128, 4, 1000, 1e12
    layer = 24 * s * b * h * h + 4 * b * s * s * h
    head = 2 * s * b * h * v
    for recompute, extra in (("none", 0), ("selective", 4 * b * s * s * h), ("full", layer)):
        ev = training_step_events(
            L, s, b, h, a, v, recompute=recompute, flops_per_second=rate, bytes_per_second=1e300
        )
        span = ev.groupby("phase")["time"].agg(["min", "max"])
        fwd = span.loc["forward", "max"] - span.loc["forward", "min"]
        bwd = span.loc["backward", "max"] - span.loc["backward", "min"]
        assert fwd == pytest.approx((L * layer + head) / rate, rel=1e-9)
        assert bwd == pytest.approx((2 * (L * layer + head) + L * extra) / rate, rel=1e-9)


def test_step_is_deterministic_and_valid():
    """The same arguments give identical events, which pass lifetimes() validation."""
    a, b = training_step_events(num_layers=2), training_step_events(num_layers=2)
    pd.testing.assert_frame_equal(a, b)
    assert len(lifetimes(a)) == (a["kind"] == "alloc").sum()


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(num_layers=0), "num_layers"),
        (dict(vocab_size=1.5), "vocab_size"),
        (dict(recompute="partial"), "recompute"),
        (dict(flops_per_second=0), "flops_per_second"),
        (dict(bytes_per_second=float("nan")), "bytes_per_second"),
    ],
)
def test_step_bad_inputs(kwargs, match):
    """Non-positive sizes, unknown policies and non-positive rates are ValueErrors naming the
    argument."""
    with pytest.raises(ValueError, match=match):
        training_step_events(**kwargs)


@settings(deadline=None)
@given(alloc_events())
def test_live_bytes_by_category_sums_to_live_bytes(df):
    """Per category, the level at each event time is the brute-force sum over that category's
    live tensors; the columns add up to live_bytes exactly, on the same times."""
    times, levels = live_bytes_by_category(df)
    t_all, total = live_bytes(df)
    np.testing.assert_array_equal(times, t_all)
    np.testing.assert_array_equal(levels.sum(axis=1).to_numpy(), total)
    life = lifetimes(df)
    for category in levels.columns:
        mine = life[life["category"] == category]
        for t, got in zip(times, levels[category], strict=True):
            alive = mine[(mine["alloc_time"] <= t) & (mine["free_time"].fillna(np.inf) > t)]
            assert got == alive["bytes"].sum()


def test_live_bytes_by_category_orders_step_categories_first():
    """Known categories come in STEP_CATEGORIES order, others after them by first allocation."""
    df = events([
        (0, "x", 5, "alloc", "zeta"), (0, "a", 1, "alloc", "activation"),
        (1, "w", 2, "alloc", "weight"), (2, "y", 3, "alloc", "alpha"),
    ])  # fmt: skip
    _, levels = live_bytes_by_category(df)
    assert list(levels.columns) == ["weight", "activation", "zeta", "alpha"]
