"""Tests of course_lib.tracegen: deterministic multi-rank data-parallel profiles (Module 1)."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings

from course_lib.clocks import offset_bounds
from course_lib.trace import GPU_CATEGORIES, data_path, link_launches, load_trace, write_trace
from course_lib.tracegen import (
    BASE_TIME_NS,
    COMM_STREAM,
    COMPUTE_STREAM,
    generate_dp_profile,
    load_dp_profile,
    message_pairs,
    true_to_host,
    write_dp_profile,
)
from tests.strategies import dp_profile_kwargs

#: The call documented in course_lib/data/README.md for the shipped set.
SHIPPED = dict(
    num_ranks=4,
    num_layers=8,
    num_buckets=4,
    num_steps=3,
    bandwidth=20e9,
    clock_offset=2e-3,
    clock_drift=20.0,
    jitter=0.05,
    seed=0,
)


def _true(t, df: pd.DataFrame):
    """Invert the rank's host clock: t_true = (t_host − θ) / (1 + ρ·1e-6)."""
    return (t - df.attrs["clock_offset"]) / (1.0 + df.attrs["clock_drift"] * 1e-6)


def _nccl(df: pd.DataFrame) -> pd.DataFrame:
    k = df[(df["cat"] == "kernel") & df["name"].str.startswith("ncclDevKernel_AllReduce")]
    return k.sort_values("ts")


# --------------------------------------------------------------------------------------------
# determinism and the shipped data


def test_same_seed_same_bytes_different_seed_different(tmp_path):
    """Same arguments give byte-identical files; another seed changes every rank's file."""
    kw = dict(num_ranks=3, num_layers=4, num_buckets=2, num_steps=1)
    a = write_dp_profile(tmp_path / "a", seed=7, **kw)
    b = write_dp_profile(tmp_path / "b", seed=7, **kw)
    c = write_dp_profile(tmp_path / "c", seed=8, **kw)
    assert [p.name for p in a] == ["rank_0.json.gz", "rank_1.json.gz", "rank_2.json.gz"]
    for pa, pb, pc in zip(a, b, c, strict=True):
        assert pa.read_bytes() == pb.read_bytes()
        assert gzip.decompress(pa.read_bytes()) != gzip.decompress(pc.read_bytes())


def test_shipped_set_is_reproducible(tmp_path):
    """course_lib/data/dp_profile is exactly what the README's generator call writes."""
    shipped = data_path("dp_profile")
    fresh = write_dp_profile(tmp_path, **SHIPPED)
    assert sorted(p.name for p in shipped.iterdir()) == [p.name for p in fresh]
    for p in fresh:
        assert (shipped / p.name).read_bytes() == p.read_bytes(), p.name


def test_shipped_data_small():
    """Everything in course_lib/data stays well under 1 MB."""
    root = data_path("dp_profile").parent
    total = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    assert total < 500_000


def test_load_dp_profile_shipped():
    """load_dp_profile() reads the shipped ranks; each file names its rank and world size."""
    profiles = load_dp_profile()
    assert sorted(profiles) == [0, 1, 2, 3]
    for r, df in profiles.items():
        info = df.attrs["metadata"]["distributedInfo"]
        assert info == {"backend": "nccl", "rank": r, "world_size": 4}
        assert df.attrs["base_time_ns"] == BASE_TIME_NS
        assert df.attrs["metadata"]["synthetic"] == "course_lib.tracegen.generate_dp_profile"
        assert len(_nccl(df)) == 3 * 4


def test_files_do_not_reveal_true_clocks(tmp_path):
    """The written files carry no clock offsets or drifts (lessons estimate them)."""
    for p in write_dp_profile(tmp_path, num_ranks=2, num_steps=1, seed=2):
        text = gzip.decompress(p.read_bytes()).decode()
        assert "clock" not in text and "offset" not in text and "drift" not in text


# --------------------------------------------------------------------------------------------
# the model


def test_allreduce_ends_coincide_in_true_time():
    """Bucket b's all-reduce ends at the same TRUE time on every rank (the collective waits for
    the slowest rank), while the host-clock end times differ by the ranks' clock offsets."""
    profiles = generate_dp_profile(num_ranks=4, num_steps=2, clock_offset=3e-3, seed=11)
    ends_true = []
    ends_host = []
    for df in profiles.values():
        k = _nccl(df)
        ends_host.append((k["ts"] + k["dur"]).to_numpy())
        ends_true.append(_true(k["ts"] + k["dur"], df).to_numpy())
    ends_true, ends_host = np.array(ends_true), np.array(ends_host)
    assert ends_true.shape == (4, 2 * 4)
    assert np.ptp(ends_true, axis=0).max() <= 3e-9
    assert np.ptp(ends_host, axis=0).min() > 1e-4  # raw timestamps disagree


def test_allreduce_waits_for_bucket_and_slowest_rank():
    """With no jitter: each NCCL kernel starts after its bucket's last weight-grad GEMM ends (on
    that rank), and end − (latest start over ranks) = bucket bytes / bandwidth exactly."""
    layer_bytes, bw, layers, buckets = 40e6, 10e9, 6, 3
    profiles = generate_dp_profile(
        num_ranks=3,
        num_layers=layers,
        num_buckets=buckets,
        num_steps=2,
        bandwidth=bw,
        layer_param_bytes=layer_bytes,
        jitter=0.0,
        seed=4,
    )
    starts, ends = [], []
    for df in profiles.values():
        k = _nccl(df)
        wgrad = df[df["name"] == "ampere_sgemm_64x64_nt"].sort_values("ts")
        wgrad_end = (wgrad["ts"] + wgrad["dur"]).to_numpy().reshape(2, layers)
        ready = wgrad_end[:, [1, 3, 5]].ravel()  # buckets [5,4], [3,2], [1,0]: 2nd, 4th, 6th
        assert (k["ts"].to_numpy() > ready).all()
        starts.append(_true(k["ts"], df).to_numpy())
        ends.append(_true(k["ts"] + k["dur"], df).to_numpy())
    starts, ends = np.array(starts), np.array(ends)
    np.testing.assert_allclose(ends[0] - starts.max(axis=0), 2 * layer_bytes / bw, atol=3e-9)


def test_queue_delays_at_least_minimum():
    """Every launch is linked to its kernel, and queue delay = kernel start − launch end is at
    least min_queue_delay (host clocks scale it by 1 + ρ·1e-6; timestamps are rounded to 1 ns)."""
    q = 10e-6
    profiles = generate_dp_profile(num_ranks=3, num_steps=2, min_queue_delay=q, seed=9)
    for df in profiles.values():
        links = link_launches(df)
        assert links["launch_name"].notna().all()
        assert len(links) == df["cat"].isin(GPU_CATEGORIES).sum()
        bound = q * (1 - abs(df.attrs["clock_drift"]) * 1e-6) - 2e-9
        assert links["queue_delay"].min() >= bound
        assert links["queue_delay"].min() < 5 * q  # the bound is approached (GPU idle)
        assert links["queue_delay"].max() > 1e-3  # the CPU runs ms ahead of the GPU


def test_clock_offsets_and_drift_applied():
    """Timestamps are host_r(t) = θ_r + (1 + ρ_r·1e-6)·t of the clock-free profile's times."""
    kw = dict(num_ranks=3, num_steps=1, seed=21)
    ideal = generate_dp_profile(clock_offset=0.0, clock_drift=0.0, **kw)
    offsets, drifts = (0.0, 1.5e-3, -2e-3), (0.0, 50.0, -30.0)
    skewed = generate_dp_profile(clock_offset=offsets, clock_drift=drifts, **kw)
    for r in range(3):
        a, b = ideal[r], skewed[r]
        assert b.attrs["clock_offset"] == offsets[r] and b.attrs["clock_drift"] == drifts[r]
        timed = a["ph"] != "M"
        assert a.loc[timed, "name"].tolist() == b.loc[timed, "name"].tolist()
        expect = true_to_host(a.loc[timed, "ts"], offset=offsets[r], drift=drifts[r])
        np.testing.assert_allclose(b.loc[timed, "ts"], expect, rtol=0, atol=1.5e-9)
        x = a["ph"] == "X"
        end_a = a.loc[x, "ts"] + a.loc[x, "dur"]
        expect_end = true_to_host(end_a, offset=offsets[r], drift=drifts[r])
        np.testing.assert_allclose(b.loc[x, "ts"] + b.loc[x, "dur"], expect_end, atol=1.5e-9)


def test_default_clocks_rank0_reference():
    """Scalar clock_offset/clock_drift are magnitudes: rank 0 keeps the true clock, other ranks
    draw offsets within ±clock_offset and drifts within ±clock_drift, deterministically."""
    p = generate_dp_profile(num_ranks=5, num_steps=1, clock_offset=4e-3, clock_drift=30.0, seed=3)
    offs = [df.attrs["clock_offset"] for df in p.values()]
    drs = [df.attrs["clock_drift"] for df in p.values()]
    assert offs[0] == 0.0 and drs[0] == 0.0
    assert all(0 < abs(o) <= 4e-3 for o in offs[1:]) and all(abs(d) <= 30.0 for d in drs)
    assert len(set(offs)) == 5


def test_messages_bound_true_offsets():
    """Send/receive pairs are causal in true time (receive ≥ send + p2p_latency), and the dPRO
    interval from clocks.offset_bounds contains every rank pair's true offset θ_A − θ_B."""
    lat = 5e-6
    profiles = generate_dp_profile(
        num_ranks=4, num_steps=2, clock_offset=2e-3, clock_drift=0.0, p2p_latency=lat, seed=13
    )
    pairs = message_pairs(profiles)
    assert len(pairs) == 2 * 4 * 4 * 2  # steps × buckets × ranks × two ring neighbours
    assert pairs["msg_id"].is_unique
    theta = {r: df.attrs["clock_offset"] for r, df in profiles.items()}
    send_true = pairs["send_ts"] - pairs["src"].map(theta)
    recv_true = pairs["recv_ts"] - pairs["dst"].map(theta)
    assert (recv_true - send_true >= lat - 2e-9).all()
    for a, b in [(0, 1), (1, 2), (2, 3), (3, 0)]:
        ab = pairs[(pairs["src"] == a) & (pairs["dst"] == b)][["send_ts", "recv_ts"]]
        ba = pairs[(pairs["src"] == b) & (pairs["dst"] == a)][["send_ts", "recv_ts"]]
        interval = offset_bounds(ab.to_numpy(), ba.to_numpy())
        assert interval.lower < theta[a] - theta[b] < interval.upper


def test_step_structure_and_magnitudes():
    """Per rank and step: one ProfilerStep and DataLoader on the CPU, num_buckets NCCL kernels on
    the comm stream, compute kernels on the compute stream with pid = device; ms-scale kernels,
    µs-scale launches; the optimizer kernel starts after the step's last all-reduce ends."""
    profiles = generate_dp_profile(num_ranks=2, num_layers=4, num_buckets=2, num_steps=3, seed=1)
    for r, df in profiles.items():
        assert (df["name"].str.startswith("ProfilerStep#")).sum() == 3
        assert (df["name"] == "DataLoader").sum() == 3
        kernels = df[df["cat"] == "kernel"]
        assert set(kernels["pid"]) == {r}
        assert set(kernels["tid"]) == {COMPUTE_STREAM, COMM_STREAM}
        nccl = _nccl(df)
        assert len(nccl) == 3 * 2 and set(nccl["tid"]) == {COMM_STREAM}
        gemm = kernels[kernels["name"].str.startswith("ampere_sgemm")]
        assert 0.5e-3 < gemm["dur"].median() < 5e-3
        launches = df[df["name"] == "cudaLaunchKernel"]
        assert 1e-6 < launches["dur"].median() < 30e-6
        opt = kernels[kernels["name"].str.startswith("multi_tensor_apply")].sort_values("ts")
        last_ar_end = (nccl["ts"] + nccl["dur"]).to_numpy().reshape(3, 2)[:, -1]
        assert (opt["ts"].to_numpy() >= last_ar_end).all()
        flows = df[df["cat"] == "ac2g"]
        starts, finishes = flows[flows["ph"] == "s"], flows[flows["ph"] == "f"]
        assert (
            sorted(starts["id"])
            == sorted(finishes["id"])
            == sorted(df.loc[df["cat"].isin(GPU_CATEGORIES), "correlation"])
        )


def test_written_profile_loads_identically(tmp_path):
    """load_dp_profile(write_dp_profile(...)) gives the generated frames back (times to 1e-12)."""
    kw = dict(num_ranks=2, num_steps=1, seed=6)
    gen = generate_dp_profile(**kw)
    write_dp_profile(tmp_path, **kw)
    loaded = load_dp_profile(tmp_path)
    for r in gen:
        assert loaded[r]["name"].tolist() == gen[r]["name"].tolist()
        np.testing.assert_allclose(loaded[r]["ts"], gen[r]["ts"], rtol=0, atol=1e-12)
        pd.testing.assert_series_equal(loaded[r]["correlation"], gen[r]["correlation"])


@settings(max_examples=25, deadline=None)
@given(kw=dp_profile_kwargs())
def test_invariants_random_configs(kw):
    """For any small configuration: durations ≥ 0, every GPU op linked to its launch, queue
    delays ≥ min_queue_delay (up to clock scaling), all-reduce ends coincide in true time."""
    profiles = generate_dp_profile(**kw)
    assert sorted(profiles) == list(range(kw["num_ranks"]))
    ends = []
    for df in profiles.values():
        assert (df["dur"].dropna() >= 0).all()
        links = link_launches(df)
        assert links["launch_name"].notna().all()
        bound = 4e-6 * (1 - abs(df.attrs["clock_drift"]) * 1e-6) - 2e-9
        assert (links["queue_delay"] >= bound).all()
        k = _nccl(df)
        assert len(k) == kw["num_steps"] * kw["num_buckets"]
        ends.append(_true(k["ts"] + k["dur"], df).to_numpy())
    assert np.ptp(np.array(ends), axis=0).max() <= 3e-9


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(num_buckets=9, num_layers=8), "num_buckets"),
        (dict(num_ranks=0), "num_ranks"),
        (dict(bandwidth=-1.0), "bandwidth"),
        (dict(clock_offset=(0.0, 1e-3)), "clock_offset"),
        (dict(clock_drift=float("nan")), "clock_drift"),
        (dict(jitter=2.0), "jitter"),
        (dict(seed=-1), "seed"),
        (dict(clock_offset=(0.0, -1.0, 0.0, 0.0)), "start_time"),
    ],
)
def test_bad_arguments(kwargs, match):
    """Invalid arguments raise ValueError naming the parameter."""
    with pytest.raises(ValueError, match=match):
        generate_dp_profile(**kwargs)


def test_load_dp_profile_empty_dir(tmp_path):
    with pytest.raises(FileNotFoundError, match="rank_"):
        load_dp_profile(tmp_path)


def test_message_pairs_single_rank():
    """One rank exchanges no messages: an empty table with the documented columns."""
    pairs = message_pairs(generate_dp_profile(num_ranks=1, num_steps=1))
    assert pairs.empty and list(pairs.columns) == ["msg_id", "src", "dst", "send_ts", "recv_ts"]


def test_generated_frame_matches_load_trace_schema(tmp_path):
    """Generated frames have load_trace's columns and dtypes, so lessons treat both alike."""
    gen = generate_dp_profile(num_ranks=1, num_steps=1)[0]
    path = Path(tmp_path) / "r.json"
    loaded = load_trace(write_trace(gen, path))
    assert list(loaded.columns) == list(gen.columns)
    assert list(loaded.dtypes) == list(gen.dtypes)


# --------------------------------------------------------------------------------------------
# cost03's exercise trace


def test_with_copies_and_syncs_adds_a_prefetch_during_each_last_allreduce():
    """Four GPU events per step and rank, all inside the step's last all-reduce: a copy, a memset
    and a computation kernel on SIDE_STREAM, and a Stream Sync with a valid stream (the compute
    stream; Kineto writes stream -1 only for Event and Context Sync). The input frames are not
    modified, columns and dtypes are kept, rows stay sorted by time, and the seed decides the
    positions."""
    from course_lib.tracegen import SIDE_STREAM, with_copies_and_syncs

    plain = load_dp_profile()
    before = {r: df.copy() for r, df in plain.items()}
    traces = with_copies_and_syncs(plain)
    for r, df in plain.items():
        pd.testing.assert_frame_equal(df, before[r])
    expected = {
        "Memcpy HtoD (Pinned -> Device)": ("gpu_memcpy", SIDE_STREAM),
        "Memset (Device)": ("gpu_memset", SIDE_STREAM),
        "vectorized_elementwise_kernel<MulFunctor>": ("kernel", SIDE_STREAM),
        "Stream Sync": ("cuda_sync", COMPUTE_STREAM),
    }
    for r, df in traces.items():
        assert list(df.columns) == list(plain[r].columns)
        assert df.dtypes.equals(plain[r].dtypes)
        assert df["ts"].is_monotonic_increasing
        added = df.merge(plain[r][["ts", "name"]], how="left", indicator=True)
        added = added[added["_merge"] == "left_only"]
        assert len(df) == len(plain[r]) + 12 and len(added) == 12
        for name, (cat, stream) in expected.items():
            rows = added[added["name"] == name]
            assert len(rows) == 3
            assert (rows["cat"] == cat).all() and (rows["stream"] == stream).all()
            assert (rows["tid"] == stream).all() and (rows["dur"] > 0).all()
        steps = plain[r][plain[r]["name"].str.startswith("ProfilerStep#")]
        for _, step in steps.iterrows():
            in_step = (added["ts"] >= step["ts"]) & (added["ts"] < step["ts"] + step["dur"])
            last = _nccl(plain[r])
            last = last[(last["ts"] >= step["ts"]) & (last["ts"] < step["ts"] + step["dur"])]
            last = last.iloc[-1]
            events = added[in_step]
            assert len(events) == 4
            assert (events["ts"] >= last["ts"]).all()
            assert (events["ts"] + events["dur"] <= last["ts"] + last["dur"]).all()
    again = with_copies_and_syncs(plain)
    other = with_copies_and_syncs(plain, seed=4)
    for r in traces:
        pd.testing.assert_frame_equal(traces[r], again[r])
        assert not np.allclose(traces[r]["ts"], other[r]["ts"])
