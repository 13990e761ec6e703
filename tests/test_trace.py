"""Tests of course_lib.trace: Kineto JSON in and out, units, errors, launch<->kernel linking."""

from __future__ import annotations

import gzip
import json
import math
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings

from course_lib import trace
from course_lib.trace import (
    GPU_CATEGORIES,
    LAUNCH_CATEGORIES,
    TraceError,
    absolute_time,
    data_path,
    link_launches,
    load_trace,
    write_trace,
)
from course_lib.tracegen import generate_dp_profile, write_dp_profile
from tests.strategies import trace_events

REAL = "real_cpu_mlp.json.gz"


def _write_raw(path: Path, doc, *, compress: bool = False) -> Path:
    data = json.dumps(doc).encode()
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


def _kineto(events: list[dict], **top) -> dict:
    return {"schemaVersion": 1, **top, "traceEvents": events}


def _x(name, ts, dur, cat="cpu_op", pid=1, tid=1, **args) -> dict:
    ev = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if args:
        ev["args"] = args
    return ev


# --------------------------------------------------------------------------------------------
# units and round trips


def test_file_microseconds_become_seconds(tmp_path):
    """ts/dur in the file are µs; the DataFrame holds seconds (1500 µs -> 1.5e-3 s)."""
    p = _write_raw(tmp_path / "t.json", _kineto([_x("op", 1500.0, 250.5)]))
    df = load_trace(p)
    assert df.loc[0, "ts"] == pytest.approx(1.5e-3, abs=1e-15)
    assert df.loc[0, "dur"] == pytest.approx(250.5e-6, abs=1e-15)


def test_write_trace_writes_microseconds(tmp_path):
    """write_trace takes seconds and writes µs rounded to 1 ns, as Kineto does."""
    p = write_trace([_x("op", 1.5e-3, 2.0e-6 + 4e-13)], tmp_path / "t.json")
    ev = json.loads(p.read_text())["traceEvents"][0]
    assert ev["ts"] == 1500.0
    assert ev["dur"] == 2.0  # 0.4 ps rounds away at 1 ns resolution


def test_round_trip_generated_profile(tmp_path):
    """A generated rank profile written (gzip and plain) and loaded back equals the original:
    same names, categories, phases, ids, args, extra fields and metadata; times to 1e-12 s."""
    df = generate_dp_profile(num_ranks=2, num_steps=1, seed=3)[1]
    for name in ("r.json.gz", "r.json"):
        back = load_trace(write_trace(df, tmp_path / name))
        assert list(back.columns) == list(df.columns)
        for col in ("name", "cat", "ph", "pid", "tid", "args", "id", "bp", "s"):
            assert back[col].tolist() == df[col].tolist(), col
        for col in trace.ARGS_COLUMNS:
            pd.testing.assert_series_equal(back[col], df[col])
        np.testing.assert_allclose(back["ts"], df["ts"], rtol=0, atol=1e-12)
        np.testing.assert_allclose(back["dur"], df["dur"], rtol=0, atol=1e-12, equal_nan=True)
        assert back.attrs["metadata"] == df.attrs["metadata"]
        assert back.attrs["base_time_ns"] == df.attrs["base_time_ns"]


@settings(max_examples=60, deadline=None)
@given(events=trace_events())
def test_round_trip_event_lists(tmp_path_factory, events):
    """Any list of valid events (seconds) survives write_trace -> load_trace: times within 1 ns,
    names, unknown categories, string pids, args and unknown top-level fields unchanged."""
    path = tmp_path_factory.mktemp("rt") / "t.json.gz"
    df = load_trace(write_trace(events, path))
    assert len(df) == len(events)
    for i, ev in enumerate(events):
        row = df.iloc[i]
        assert row["ph"] == ev["ph"]
        assert row["name"] == ev["name"]
        assert row["pid"] == ev["pid"] and row["tid"] == ev["tid"]
        if "ts" in ev:
            assert abs(row["ts"] - ev["ts"]) <= 1e-9
        else:
            assert math.isnan(row["ts"])
        if "dur" in ev:
            assert abs(row["dur"] - ev["dur"]) <= 1e-9
        if "cat" in ev:
            assert row["cat"] == ev["cat"]
        assert row["args"] == ev.get("args")
        corr = ev.get("args", {}).get("correlation")
        assert pd.isna(row["correlation"]) if corr is None else row["correlation"] == corr
        if "extra_field" in ev:
            assert row["extra_field"] == ev["extra_field"]


def test_fallback_column_extraction_matches(tmp_path, monkeypatch):
    """Without pandas' dicts_to_array the loader's plain-Python fallback gives the same frame."""
    df = generate_dp_profile(num_ranks=2, num_steps=1, seed=2)[0]
    path = write_trace(df, tmp_path / "t.json")
    fast = load_trace(path)
    monkeypatch.setattr(trace, "_dicts_to_array", None)
    slow = load_trace(path)
    pd.testing.assert_frame_equal(fast, slow)


def test_empty_trace(tmp_path):
    """A trace with no events loads as an empty frame with the standard columns."""
    df = load_trace(_write_raw(tmp_path / "e.json", _kineto([])))
    assert len(df) == 0
    assert {"name", "cat", "ph", "ts", "dur", "pid", "tid", "correlation"} <= set(df.columns)


def test_gzip_detected_by_magic_bytes_not_suffix(tmp_path):
    """A gzip file named .json and a plain file named .gz both load."""
    events = [_x("a", 1.0, 2.0)]
    gz_as_json = _write_raw(tmp_path / "trace.json", _kineto(events), compress=True)
    plain_as_gz = _write_raw(tmp_path / "trace.json.gz", _kineto(events))
    assert load_trace(gz_as_json)["name"].tolist() == ["a"]
    assert load_trace(plain_as_gz)["name"].tolist() == ["a"]


def test_write_gzip_flag_overrides_suffix(tmp_path):
    """gzip=True/False decides the encoding whatever the suffix; gzip output has mtime 0."""
    a = write_trace([_x("a", 1e-6, 1e-6)], tmp_path / "a.json", gzip=True)
    b = write_trace([_x("a", 1e-6, 1e-6)], tmp_path / "b.json.gz", gzip=False)
    assert a.read_bytes()[:2] == b"\x1f\x8b"
    assert a.read_bytes()[4:8] == b"\x00\x00\x00\x00"  # MTIME field
    assert b.read_bytes()[:1] == b"{"


def test_bare_array_and_unterminated_array(tmp_path):
    """The JSON Array Format loads, also without its closing bracket (allowed by the spec)."""
    events = [_x("a", 1.0, 2.0), _x("b", 3.0, 1.0)]
    p = _write_raw(tmp_path / "arr.json", events)
    assert load_trace(p)["name"].tolist() == ["a", "b"]
    q = tmp_path / "open.json"
    q.write_text(json.dumps(events)[:-1] + ",\n")
    assert load_trace(q)["name"].tolist() == ["a", "b"]
    assert load_trace(p).attrs["base_time_ns"] is None


def test_unknown_categories_and_fields_are_kept(tmp_path):
    """Unknown cats, unknown args keys and unknown top-level fields survive load and round trip;
    a top-level field named like an args column gets its own column."""
    ev = _x("mine", 10.0, 5.0, cat="my_vendor_cat", correlation=7, weird={"a": [1, 2]})
    ev["my_field"] = {"nested": True}
    ev["device"] = "top-level device"
    p = _write_raw(tmp_path / "t.json", _kineto([ev], myTopKey=[1, 2, 3]))
    df = load_trace(p)
    assert df.loc[0, "cat"] == "my_vendor_cat"
    assert df.loc[0, "args"] == {"correlation": 7, "weird": {"a": [1, 2]}}
    assert df.loc[0, "my_field"] == {"nested": True}
    assert df.loc[0, "device" + trace.TOP_LEVEL_SUFFIX] == "top-level device"
    assert df.attrs["metadata"]["myTopKey"] == [1, 2, 3]
    raw = json.loads(write_trace(df, tmp_path / "back.json").read_text())
    assert raw["myTopKey"] == [1, 2, 3]
    back = raw["traceEvents"][0]
    assert back["my_field"] == {"nested": True}
    assert back["device"] == "top-level device"
    assert back["args"]["weird"] == {"a": [1, 2]} and back["cat"] == "my_vendor_cat"


def test_correlation_columns_nullable_int(tmp_path):
    """args.correlation, External id, stream, device become Int64 with <NA> where absent; ids
    beyond 2**53 stay exact."""
    big = 2**60 + 1
    events = [
        _x("k", 1.0, 1.0, cat="kernel", correlation=big, stream=7, device=0),
        _x("op", 1.0, 1.0, **{"External id": 3}),
        {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "x"}},
    ]
    df = load_trace(_write_raw(tmp_path / "t.json", events))
    assert str(df["correlation"].dtype) == "Int64"
    assert df["correlation"].iloc[0] == big
    assert df["correlation"].isna().tolist() == [False, True, True]
    assert df["external_id"].tolist()[1] == 3
    assert df["stream"].iloc[0] == 7 and df["device"].iloc[0] == 0


def test_string_and_int_pids(tmp_path):
    """pid/tid are int64 when all are ints, object (ints and strings) when a trace mixes them."""
    ints = load_trace(_write_raw(tmp_path / "i.json", [_x("a", 1, 1, pid=3, tid=4)]))
    assert ints["pid"].dtype == np.int64
    mixed = [_x("a", 1, 1, pid=3, tid=4), _x("b", 1, 1, pid="Spans", tid="PyTorch Profiler")]
    df = load_trace(_write_raw(tmp_path / "m.json", mixed))
    assert df["pid"].tolist() == [3, "Spans"] and df["tid"].tolist() == [4, "PyTorch Profiler"]


def test_write_atomic_failure_leaves_old_file(tmp_path, monkeypatch):
    """A failing write (invalid event, or os.replace failing) leaves the previous file intact and
    no temporary file behind."""
    target = tmp_path / "t.json"
    write_trace([_x("good", 1e-6, 1e-6)], target)
    before = target.read_bytes()
    with pytest.raises(TraceError, match="negative"):
        write_trace([_x("good", 1e-6, 1e-6), _x("bad", 1e-6, -1e-6)], target)

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        write_trace([_x("other", 2e-6, 1e-6)], target)
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.json"]


def test_write_missing_directory(tmp_path):
    """Writing into a directory that does not exist is a TraceError naming the path."""
    with pytest.raises(TraceError, match="does not exist"):
        write_trace([_x("a", 1e-6, 1e-6)], tmp_path / "nope" / "t.json")


# --------------------------------------------------------------------------------------------
# errors: one exception type, naming the file, the event index and the field


def test_missing_file(tmp_path):
    p = tmp_path / "absent.json"
    with pytest.raises(TraceError, match="no such trace file") as err:
        load_trace(p)
    assert str(p) in str(err.value)
    assert isinstance(err.value, ValueError)


def test_invalid_json(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text('{"traceEvents": [{"ph": "X", "ts": 1, ')
    with pytest.raises(TraceError, match="invalid JSON") as err:
        load_trace(p)
    assert str(p) in str(err.value)


def test_truncated_gzip(tmp_path):
    p = tmp_path / "cut.json.gz"
    full = gzip.compress(json.dumps(_kineto([_x("a", 1, 1)] * 50)).encode())
    p.write_bytes(full[: len(full) // 2])
    with pytest.raises(TraceError, match="truncated gzip") as err:
        load_trace(p)
    assert str(p) in str(err.value)
    corrupt = tmp_path / "corrupt.json.gz"
    corrupt.write_bytes(full[:12] + bytes(b ^ 0x55 for b in full[12:]))
    with pytest.raises(TraceError, match="corrupt or truncated gzip"):
        load_trace(corrupt)


@pytest.mark.parametrize(
    ("bad_event", "expected"),
    [
        ({"ph": "X", "name": "k", "dur": 1.0, "pid": 0, "tid": 0}, r"event 2 \(ph 'X'\): .*'ts'"),
        (_x("k", 5.0, -1.0), r"event 2 .*'dur' is negative"),
        ({"ph": "X", "name": "k", "ts": 5.0, "pid": 0, "tid": 0}, r"event 2 \(ph 'X'\): .*'dur'"),
        ({"name": "k", "ts": 5.0, "dur": 1.0}, r"event 2: missing field 'ph'"),
        (_x("k", "soon", 1.0), r"event 2: field 'ts' must be a number"),
        ({**_x("k", 1.0, 1.0), "args": [1, 2]}, r"event 2: field 'args' must be an object"),
        (_x("k", 1.0, 1.0, correlation="abc"), r"event 2: field 'args.correlation' must be"),
        ("not an event", r"event 2 is not a JSON object"),
    ],
)
def test_bad_event_names_file_index_and_field(tmp_path, bad_event, expected):
    """Each malformed event raises TraceError naming the file, the event index and the field."""
    p = _write_raw(tmp_path / "t.json", _kineto([_x("a", 1, 1), _x("b", 2, 1), bad_event]))
    with pytest.raises(TraceError, match=expected) as err:
        load_trace(p)
    assert str(err.value).startswith(str(p))


def test_metadata_and_instant_events_need_no_dur(tmp_path):
    """ph "M" may omit ts and dur; ph "i" and flow events need ts but no dur."""
    events = [
        {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "x"}},
        {"ph": "i", "s": "g", "name": "Record Window End", "pid": "", "tid": "", "ts": 9.0},
        {"ph": "s", "id": 1, "pid": 0, "tid": 0, "ts": 1.0, "cat": "ac2g", "name": "ac2g"},
    ]
    df = load_trace(_write_raw(tmp_path / "t.json", events))
    assert df["dur"].isna().all() and math.isnan(df.loc[0, "ts"])
    with pytest.raises(TraceError, match=r"event 0 \(ph 'i'\): missing field 'ts'"):
        load_trace(_write_raw(tmp_path / "u.json", [{"ph": "i", "name": "x"}]))


def test_not_a_trace(tmp_path):
    """A JSON object without traceEvents, or a scalar, is rejected with the file named."""
    with pytest.raises(TraceError, match="no 'traceEvents'"):
        load_trace(_write_raw(tmp_path / "a.json", {"events": []}))
    with pytest.raises(TraceError, match="expected an object"):
        load_trace(_write_raw(tmp_path / "b.json", 42))


def test_write_rejects_event_without_ts(tmp_path):
    """write_trace validates like load_trace, so a written file always loads."""
    with pytest.raises(TraceError, match=r"event 1 \(ph 'X'\): missing field 'ts'"):
        write_trace([_x("a", 1e-6, 1e-6), {"ph": "X", "dur": 1.0}], tmp_path / "t.json")
    assert not (tmp_path / "t.json").exists()


# --------------------------------------------------------------------------------------------
# the real PyTorch profiler trace


def test_real_trace_structure():
    """The shipped torch 2.13 CPU trace: 329 events, its categories, two ProfilerSteps, string
    pids, baseTimeNanoseconds, and every value equal to the raw JSON converted to seconds."""
    path = data_path(REAL)
    df = load_trace(path)
    raw = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    assert len(df) == len(raw) == 329
    counts = df["cat"].value_counts()
    assert counts["cpu_op"] == 288 and counts["user_annotation"] == 6
    assert counts["fwdbwd"] == 24 and counts["Trace"] == 1
    steps = df[df["name"].str.startswith("ProfilerStep#")]
    assert sorted(steps["name"]) == ["ProfilerStep#2", "ProfilerStep#3"]
    assert ((steps["dur"] > 1e-4) & (steps["dur"] < 1.0)).all()  # seconds, not µs
    assert "Spans" in set(df["pid"]) and "" in set(df["pid"])
    assert df.attrs["base_time_ns"] == 1_790_857_026_000_000_000
    for col in ("ts", "dur"):
        file_us = np.array([e.get(col, np.nan) for e in raw], dtype=float)
        np.testing.assert_allclose(df[col] / trace.US, file_us, rtol=1e-15, equal_nan=True)
    # each cpu_op of a step lies inside its ProfilerStep annotation
    for _, step in steps.iterrows():
        inside = df[
            (df["cat"] == "cpu_op")
            & (df["ts"] >= step["ts"])
            & (df["ts"] + df["dur"] <= step["ts"] + step["dur"])
        ]
        assert len(inside) > 50


def test_real_trace_absolute_time():
    """base + ts is the capture time (2026-11-30, UTC), within Kineto's 3-month base window."""
    df = load_trace(data_path(REAL))
    t = absolute_time(df[df["ph"] == "X"])
    assert ((t - df.attrs["base_time_s"]).between(0, 7_889_238)).all()
    start = pd.Timestamp(t.min(), unit="s", tz="UTC")
    assert start.date().isoformat() == "2026-11-30"


def test_absolute_time_needs_base(tmp_path):
    df = load_trace(_write_raw(tmp_path / "t.json", [_x("a", 1, 1)]))
    with pytest.raises(ValueError, match="baseTimeNanoseconds"):
        absolute_time(df)


def test_data_path_unknown_file():
    with pytest.raises(FileNotFoundError, match="real_cpu_mlp"):
        data_path("no_such_file.json")


# --------------------------------------------------------------------------------------------
# link_launches


def _launch_kernel_trace() -> list[dict]:
    """Two launches whose kernels run in the opposite order: the kernel nearest in time to
    launch A belongs to launch B. One kernel starts before its launch returns (negative delay),
    one runtime call launches nothing, and one launch (graph) enqueues two kernels."""
    return [
        _x("cudaLaunchKernel", 10.0, 5.0, cat="cuda_runtime", correlation=1),  # A: ends 15
        _x("cudaLaunchKernel", 20.0, 5.0, cat="cuda_runtime", correlation=2),  # B: ends 25
        _x("cudaStreamSynchronize", 30.0, 50.0, cat="cuda_runtime", correlation=3),
        _x("cudaGraphLaunch", 40.0, 5.0, cat="cuda_runtime", correlation=4),
        _x("kB", 16.0, 10.0, cat="kernel", pid=0, tid=7, correlation=2, stream=7, device=0),
        _x("kA", 60.0, 10.0, cat="kernel", pid=0, tid=8, correlation=1, stream=8, device=0),
        _x("g1", 44.0, 1.0, cat="kernel", pid=0, tid=7, correlation=4, stream=7, device=0),
        _x("g2", 46.0, 1.0, cat="kernel", pid=0, tid=7, correlation=4, stream=7, device=0),
        _x("memcpy", 90.0, 1.0, cat="gpu_memcpy", pid=0, tid=7, correlation=9, stream=7),
    ]


def test_link_launches_by_correlation_not_time(tmp_path):
    """Kernels join their launch by correlation id: kA -> launch A although launch B is nearer;
    kB's queue delay is negative (kept); a graph launch links both kernels; a GPU event whose
    launch is not in the trace keeps NaN launch columns."""
    df = load_trace(_write_raw(tmp_path / "t.json", _launch_kernel_trace()))
    links = link_launches(df).set_index("kernel_name")
    assert links.loc["kA", "launch_start"] == pytest.approx(10e-6)
    assert links.loc["kA", "queue_delay"] == pytest.approx(45e-6)
    assert links.loc["kB", "launch_start"] == pytest.approx(20e-6)
    assert links.loc["kB", "queue_delay"] == pytest.approx(-9e-6)
    assert links.loc[["g1", "g2"], "launch_name"].tolist() == ["cudaGraphLaunch"] * 2
    assert math.isnan(links.loc["memcpy", "launch_start"])
    assert "cudaStreamSynchronize" not in set(links["launch_name"].dropna())
    assert list(links.index) == ["kB", "g1", "g2", "kA", "memcpy"]  # by kernel start
    assert links.loc["kA", "launch_index"] == 0 and links.loc["kA", "kernel_index"] == 5


def test_link_launches_duplicate_correlation_needs_by():
    """Concatenated ranks repeat correlation ids: without by= it is an error, with by=["rank"]
    each kernel joins the launch of its own rank."""
    profiles = generate_dp_profile(num_ranks=2, num_steps=1, seed=1)
    both = pd.concat([df.assign(rank=r) for r, df in profiles.items()], ignore_index=True)
    with pytest.raises(ValueError, match="by="):
        link_launches(both)
    links = link_launches(both, by=["rank"])
    assert links["launch_name"].notna().all()
    for r, df in profiles.items():
        own = link_launches(df)
        mine = links[links["rank"] == r].reset_index(drop=True)
        np.testing.assert_allclose(mine["queue_delay"], own["queue_delay"])


def test_link_launches_generated_every_kernel_linked():
    """On generated data every kernel and memcpy has its launch, launch and GPU op share the
    External id, and no launch is used twice."""
    df = generate_dp_profile(num_ranks=3, num_steps=2, seed=5)[2]
    links = link_launches(df)
    gpu = df[df["cat"].isin(trace.GPU_CATEGORIES)]
    assert len(links) == len(gpu)
    assert links["launch_name"].notna().all()
    assert not links["launch_index"].duplicated().any()
    ext_launch = df.loc[links["launch_index"], "external_id"].to_numpy()
    ext_kernel = df.loc[links["kernel_index"], "external_id"].to_numpy()
    assert (ext_launch == ext_kernel).all()
    assert set(links["launch_name"]) == {"cudaLaunchKernel", "cudaMemcpyAsync", "cuLaunchKernelEx"}


def test_link_launches_missing_columns():
    with pytest.raises(ValueError, match="lacks columns"):
        link_launches(pd.DataFrame({"name": ["a"]}))


# --------------------------------------------------------------------------------------------
# the two decoders: msgspec structs (fast path) and orjson dicts (general path) agree


def _general_only(monkeypatch):
    monkeypatch.setattr(trace, "_fast_columns", lambda raw: None)


def _took_fast_path(monkeypatch, path) -> bool:
    """Load ``path`` once with a spy on the fast path; True if it produced the columns."""
    taken = []
    real = trace._fast_columns

    def spy(raw):
        out = real(raw)
        taken.append(out is not None)
        return out

    monkeypatch.setattr(trace, "_fast_columns", spy)
    load_trace(path)
    monkeypatch.setattr(trace, "_fast_columns", real)
    return taken == [True]


def _assert_same_load(path, monkeypatch):
    fast = load_trace(path)
    with monkeypatch.context() as m:
        _general_only(m)
        general = load_trace(path)
    pd.testing.assert_frame_equal(fast, general, check_exact=True)
    assert fast["args"].tolist() == general["args"].tolist()
    assert fast.attrs == general.attrs


@pytest.mark.skipif(trace._msgspec is None, reason="msgspec not installed")
@pytest.mark.parametrize(
    ("events", "fast_expected"),
    [
        # Kineto-shaped: int ids, flow events with id/bp, instants with s, metadata without dur
        (None, True),
        # string pids/tids (as real traces have) take the second msgspec decoder
        ([_x("a", 1.0, 2.0, pid="Spans", tid="x"), _x("b", 2, 1, correlation=7)], True),
        # a missing pid: object column with None (general path)
        ([{"ph": "i", "s": "t", "name": "x", "ts": 1.0, "tid": 1}, _x("b", 2, 1)], False),
        # a pid beyond int64 (general path: object column); a bool tid (second decoder)
        ([_x("a", 1, 1, pid=2**63), _x("b", 2, 1)], False),
        ([_x("a", 1, 1, tid=True), _x("b", 2, 1)], True),
        # integer ts, null args, a top-level "device" beside args.device
        ([{**_x("a", 3, 4), "args": None}, {**_x("b", 5, 6, device=1), "device": "cpu"}], False),
        # a field outside the Chrome format -> general path, which keeps it
        ([{**_x("a", 1.0, 2.0), "extra_field": [1, "x"]}], False),
        # null ts on a metadata event -> general path
        ([{"ph": "M", "name": "m", "ts": None, "pid": 0, "tid": 0}], False),
    ],
)
def test_fast_and_general_paths_agree(tmp_path, monkeypatch, events, fast_expected):
    """Whichever decoder reads a file, load_trace returns the same frame, args and attrs; and
    the files the fast path is meant for do take it (so the comparison is not vacuous)."""
    if events is None:
        df = generate_dp_profile(num_ranks=2, num_steps=1, seed=5)[1]
        paths = [write_trace(df, tmp_path / "r.json"), write_trace(df, tmp_path / "r.json.gz")]
    else:
        paths = [
            _write_raw(tmp_path / "t.json", _kineto(events, baseTimeNanoseconds=7)),
            _write_raw(tmp_path / "bare.json", events),  # the JSON Array Format
        ]
    for path in paths:
        _assert_same_load(path, monkeypatch)
        assert _took_fast_path(monkeypatch, path) is fast_expected


def test_real_trace_same_on_both_paths(monkeypatch):
    """The shipped torch trace (string pids, flow events) loads identically on both decoders."""
    path = data_path(REAL)
    _assert_same_load(path, monkeypatch)
    if trace._msgspec is not None:
        assert _took_fast_path(monkeypatch, path)


@pytest.mark.parametrize(
    ("bad_event", "expected"),
    [
        ({"ph": "X", "name": "k", "dur": 1.0, "pid": 0, "tid": 0}, r"event 2 \(ph 'X'\): .*'ts'"),
        (_x("k", 5.0, -1.0), r"event 2 \('k'\): field 'dur' is negative \(-1.0\)"),
        ({"ph": "X", "name": "k", "ts": 5.0, "pid": 0, "tid": 0}, r"event 2 \(ph 'X'\): .*'dur'"),
        (_x("k", 1.0, 1.0, correlation=1.5), r"event 2: field 'args.correlation' must be"),
        ({**_x("k", 1.0, 1.0), "args": "x"}, r"event 2: field 'args' must be an object"),
    ],
)
@pytest.mark.parametrize("general", [False, True], ids=["default", "general-path"])
def test_bad_event_same_error_on_both_paths(tmp_path, monkeypatch, bad_event, expected, general):
    """Missing ts/dur, negative dur, bad args: the same message, naming file and event index,
    whichever decoder read the file (the fast path hands its columns to the same checks)."""
    if general:
        _general_only(monkeypatch)
    events = [_x("a", 1, 1), {"ph": "s", "id": 1, "bp": "e", "ts": 1, "pid": 0, "tid": 0}]
    p = _write_raw(tmp_path / "t.json", _kineto([*events, bad_event]))
    with pytest.raises(TraceError, match=expected) as err:
        load_trace(p)
    assert str(err.value).startswith(f"{p}: event 2")


@pytest.mark.parametrize(
    "content",
    [b"this is not JSON", b"", b'{"traceEvents": [{"ph": "X"', b"[{]", b"\x00\x01binary"],
)
def test_not_json_names_the_file(tmp_path, content):
    """A file that is not JSON (text, empty, cut short, binary) is a TraceError naming it."""
    p = tmp_path / "notjson.json"
    p.write_bytes(content)
    with pytest.raises(TraceError, match="invalid JSON") as err:
        load_trace(p)
    assert str(err.value).startswith(str(p))


# --------------------------------------------------------------------------------------------
# the fast path's two shortcuts (shared cat/ph strings; reading the top level once) and their
# fallbacks: whichever route reads a file, the frame, args and attrs are the general path's


def _route(monkeypatch, path) -> tuple:
    """Load ``path`` with spies: (split guess held, scanned the top level, decoder that took the
    events or None for the general path). Restores the real functions afterwards."""
    seen = {"split": None, "scan": False, "decoder": None}
    with monkeypatch.context() as m:
        real_split = trace._split_top

        def split(raw):
            out = real_split(raw)
            seen["split"] = out is not None
            return out

        m.setattr(trace, "_split_top", split)
        real_top = trace._decode_top

        def top(raw):
            seen["scan"] = True
            return real_top(raw)

        m.setattr(trace, "_decode_top", top)

        def spy(name):
            real = getattr(trace, name)

            def decode(body):
                out = real(body)
                seen["decoder"] = name
                return out

            return decode

        for name in ("_decode_typed", "_decode_int_ids", "_decode_any_ids"):
            m.setattr(trace, name, spy(name))
        real_fast = trace._fast_columns

        def fast(raw):
            out = real_fast(raw)
            if out is None:
                seen["decoder"] = None
            return out

        m.setattr(trace, "_fast_columns", fast)
        load_trace(path)
    return seen["split"], seen["scan"], seen["decoder"]


_KNOWN = [
    _x("aten::mm", 1.5, 2.25, correlation=11, **{"External id": 3}),
    _x("cudaLaunchKernel", 2.0, 0.5, cat="cuda_runtime", correlation=12),
    _x("gemm", 3.0, 1.0, cat="kernel", pid=0, tid=7, correlation=12, stream=7, device=0),
    {"ph": "s", "id": 12, "pid": 1, "tid": 1, "ts": 2.0, "cat": "ac2g", "name": "ac2g"},
    {"ph": "f", "id": 12, "pid": 0, "tid": 7, "ts": 3.0, "cat": "ac2g", "name": "ac2g", "bp": "e"},
    {"ph": "i", "s": "t", "pid": 1, "tid": 1, "ts": 4.0, "cat": "p2p", "name": "send"},
    {"ph": "M", "pid": 1, "tid": 0, "name": "process_name", "args": {"name": "python"}},
]
_META = {
    "schemaVersion": 1,
    "deviceProperties": [{"id": 0, "name": "GPU"}],
    "displayTimeUnit": "ms",
}


def _raw_file(path: Path, text: str | bytes, *, compress: bool = False) -> Path:
    data = text.encode() if isinstance(text, str) else text
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


def _doc(events, before=_META, after=None, **dumps) -> str:
    return json.dumps({**before, "traceEvents": events, **(after or {})}, **dumps)


_CASES = {
    # Kineto's layout: metadata first, the array last -> one pass, shared strings
    "kineto": (_doc(_KNOWN), (True, False, "_decode_typed")),
    "pretty, trailing newlines": (_doc(_KNOWN, indent=2) + "\n\n", (True, False, "_decode_typed")),
    "tabs and CRLF": (_doc(_KNOWN).replace(": ", ":\t\r\n "), (True, False, "_decode_typed")),
    # no events: the general path (it gives the empty columns their dtypes)
    "empty event list": (_doc([]), (True, False, None)),
    # the guess holds on the rest ({..., "traceEvents": null}) but "[], "x": [1]" is no array
    "empty list, metadata after": (_doc([], after={"x": [1]}), (True, True, None)),
    # a category outside KINETO_CATEGORIES, a non-string cat, a phase outside CHROME_PHASES:
    # the second decoder (cat/ph as any JSON value)
    "unknown category": (
        _doc([*_KNOWN, _x("a", 5, 1, cat="my_cat")]),
        (True, False, "_decode_int_ids"),
    ),
    "numeric category": (_doc([*_KNOWN, _x("a", 5, 1, cat=7)]), (True, False, "_decode_int_ids")),
    "unknown phase": (
        _doc([*_KNOWN, {**_x("a", 5, 1), "ph": "Z"}]),
        (True, False, "_decode_int_ids"),
    ),
    # missing/null fields stay None (cat, name, args) on the shared-string decoder
    "missing and null fields": (
        _doc(
            [
                *_KNOWN,
                {"ph": "X", "ts": 1, "dur": 0, "pid": 1, "tid": 1},
                {**_x("b", 2, 1), "cat": None, "args": None},
            ]
        ),
        (True, False, "_decode_typed"),
    ),
    # string pids: the third decoder
    "string pids": (_doc([*_KNOWN, _x("a", 5, 1, pid="Spans")]), (True, False, "_decode_any_ids")),
    "string pids, unknown category": (
        _doc([*_KNOWN, _x("a", 5, 1, pid="Spans", cat="zz")]),
        (True, False, "_decode_any_ids"),
    ),
    # a later top-level key whose value holds ']': the guess reaches into it and fails, the scan
    # finds the array
    "later key holds ']'": (_doc(_KNOWN, after={"later": [1, [2]]}), (True, True, "_decode_typed")),
    "later string holds ']'": (_doc(_KNOWN, after={"note": "a]b"}), (False, True, "_decode_typed")),
    # a later key holding the text "traceEvents" (as a value, or a nested key) is not trusted
    "later value 'traceEvents'": (
        _doc(_KNOWN, after={"note": "traceEvents"}),
        (False, True, "_decode_typed"),
    ),
    "later nested key": (
        _doc(_KNOWN, after={"m": {"traceEvents": [1]}}),
        (False, True, "_decode_typed"),
    ),
    "metadata before and after": (
        _doc(_KNOWN, after={"traceName": "x.json", "baseTimeNanoseconds": 17}),
        (True, False, "_decode_typed"),
    ),
    # an earlier nested "traceEvents": the first key text is not the top-level key
    "earlier nested key": (
        _doc(_KNOWN, before={"m": {"traceEvents": [0]}}),
        (False, True, "_decode_typed"),
    ),
    # the key spelled with an escape: only the scan reads it
    "escaped key": (
        _doc(_KNOWN).replace('"traceEvents"', '"trace\\u0045vents"'),
        (False, True, "_decode_typed"),
    ),
    "escape in metadata": (
        _doc(_KNOWN, before={"host": "caf\\u00e9"}),
        (False, True, "_decode_typed"),
    ),
    # a field outside the format: the guess held, so its failure is the file's (no rescan)
    "unknown field": (_doc([*_KNOWN, {**_x("a", 5, 1), "extra": 1}]), (True, True, None)),
    "unknown field, later ']'": (
        _doc([*_KNOWN, {**_x("a", 5, 1), "extra": 1}], after={"l": [1]}),
        (True, True, None),
    ),
    # the array is not an array / is absent: general path, its error
    "bare array": (json.dumps(_KNOWN), (None, False, "_decode_typed")),
}


@pytest.mark.skipif(trace._msgspec is None, reason="msgspec not installed")
@pytest.mark.parametrize("compress", [False, True], ids=["json", "gzip"])
@pytest.mark.parametrize("case", list(_CASES))
def test_shortcuts_and_fallbacks_agree_with_general_path(tmp_path, monkeypatch, case, compress):
    """Each file takes the route it is meant to (so the comparison is not vacuous), and loads
    to exactly the general path's frame, args and attrs (assert_frame_equal, check_exact)."""
    text, expected = _CASES[case]
    path = _raw_file(tmp_path / "t.json", text, compress=compress)
    split, scan, decoder = _route(monkeypatch, path)
    assert (split, scan, decoder) == expected
    _assert_same_load(path, monkeypatch)


def _course_traces(tmp_path) -> list[Path]:
    """The shipped torch traces (cost02's, cost10's before/after), the shipped tracegen set
    (data/dp_profile) and fresh tracegen outputs, plain and gzip."""
    paths = [data_path(n) for n in (REAL, "regression_before.json.gz", "regression_after.json.gz")]
    paths += sorted(data_path("dp_profile").glob("rank_*.json.gz"))
    ranks = generate_dp_profile(num_ranks=2, num_steps=2, seed=11)
    paths += [
        write_trace(ranks[0], tmp_path / "r0.json"),
        write_trace(ranks[1], tmp_path / "r1.json.gz"),
    ]
    paths += write_dp_profile(tmp_path / "dp", num_ranks=2, num_steps=1, seed=3)
    return paths


@pytest.mark.skipif(trace._msgspec is None, reason="msgspec not installed")
def test_course_traces_take_the_one_pass_route_and_agree(tmp_path, monkeypatch):
    """Every trace the course ships or generates is read in one pass (no scan of the top
    level), by a msgspec decoder, and loads exactly as on the general path."""
    paths = _course_traces(tmp_path)
    assert len(paths) == 11
    for path in paths:
        split, scan, decoder = _route(monkeypatch, path)
        assert (split, scan) == (True, False), path
        assert decoder is not None, path
        _assert_same_load(path, monkeypatch)
    # the shipped torch traces have only known categories and phases but string pids
    assert _route(monkeypatch, data_path(REAL))[2] == "_decode_any_ids"


@pytest.mark.parametrize(
    ("after", "cat"),
    [({}, "cpu_op"), ({}, "my_cat"), ({"later": [1]}, "cpu_op"), ({"later": [1]}, "my_cat")],
    ids=["one-pass", "unknown-category", "scan", "scan-unknown-category"],
)
@pytest.mark.parametrize(
    ("bad_event", "expected"),
    [
        ({"ph": "X", "name": "k", "dur": 1.0, "pid": 0, "tid": 0}, r"event 2 \(ph 'X'\): .*'ts'"),
        (_x("k", 5.0, -1.0), r"event 2 \('k'\): field 'dur' is negative \(-1.0\)"),
        (_x("k", 1.0, 1.0, correlation=1.5), r"event 2: field 'args.correlation' must be"),
    ],
)
def test_bad_event_same_error_on_every_route(tmp_path, bad_event, expected, after, cat):
    """The error names file, event and field on each route of the fast path."""
    events = [_x("a", 1, 1, cat=cat), {"ph": "s", "id": 1, "bp": "e", "ts": 1, "pid": 0, "tid": 0}]
    p = _raw_file(tmp_path / "t.json", _doc([*events, bad_event], after=after))
    with pytest.raises(TraceError, match=expected) as err:
        load_trace(p)
    assert str(err.value).startswith(f"{p}: event 2")


def test_known_categories_and_phases_are_strings():
    """The shared-string sets hold distinct strings, the GPU and launch categories among them."""
    for names in (trace.KINETO_CATEGORIES, trace.CHROME_PHASES):
        assert len(set(names)) == len(names) and all(type(n) is str for n in names)
    assert set(GPU_CATEGORIES + LAUNCH_CATEGORIES) <= set(trace.KINETO_CATEGORIES)
