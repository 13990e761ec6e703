"""Chrome-trace / PyTorch-profiler (Kineto) JSON in and out, as a pandas DataFrame (cost02).

File format (Chrome Trace Event Format, as Kineto writes it; see libkineto/src/output_json.cpp):
an object ``{"schemaVersion": 1, ..., "baseTimeNanoseconds": B, "traceEvents": [...]}`` or a bare
array of events. Each event has ``ph`` (phase: "X" complete, "i" instant, "s"/"f" flow start/end,
"M" metadata, ...), ``ts`` and ``dur`` in MICROSECONDS (floats; Kineto prints them with three
decimals, i.e. nanosecond resolution), ``pid``, ``tid``, ``cat``, ``name`` and ``args``.
``displayTimeUnit`` only changes how a viewer displays time; ``ts`` is always microseconds.

Course convention: seconds in code, microseconds only inside files. :func:`load_trace` returns
``ts`` and ``dur`` in SECONDS and :func:`write_trace` takes seconds.

Time base. Kineto writes ``ts`` relative to ``baseTimeNanoseconds``, which is the Unix time in
nanoseconds (``std::chrono::system_clock``) rounded down to a 3-month interval (7,889,238 s), so
that ``ts`` keeps nanosecond precision as a double (``ChromeTraceBaseTime`` and
``transToRelativeTime`` in libkineto/src/output_json.{h,cpp}). So

    absolute Unix time of an event (ns) = baseTimeNanoseconds + ts(µs) * 1000

which is how PyTorch's own profiler tests and Holistic Trace Analysis
(``trace_event_timestamp_to_unixtime_ns``) reconstruct it. :func:`load_trace` keeps ``ts``
relative (precise) and stores the base in ``df.attrs["base_time_ns"]`` (exact int) and
``df.attrs["base_time_s"]``; :func:`absolute_time` adds it. A trace without the key (older or
non-Kineto traces) has ``base_time_ns = None`` and its ``ts`` is whatever the writer used.

Correlation. A runtime launch (``cat`` "cuda_runtime"/"cuda_driver", e.g. ``cudaLaunchKernel``)
and the GPU activity it enqueued (``cat`` "kernel", "gpu_memcpy", "gpu_memset"; ``pid`` = device,
``tid`` = stream) carry the same ``args.correlation`` (CUPTI's correlation id). Flow events
(``ph`` "s"/"f", ``cat`` "ac2g") draw the same link in a viewer. :func:`link_launches` joins by
correlation id, never by time proximity.

Decoding. :func:`load_trace` first tries msgspec, which decodes Kineto-shaped events (the fields
above plus id/bp/s) into fixed-layout structs whose attributes become columns, with no per-event
dict. Two shortcuts serve the common Kineto file and fall back when they do not apply: ``cat``
and ``ph`` decode as shared strings when every event's are among KINETO_CATEGORIES and
CHROME_PHASES, and the top level is read once, by guessing that the traceEvents array ends at the
file's last "]" and checking the guess on the rest of the file. Any other file (unknown fields, null or non-numeric ts/dur, absent pids, not JSON) goes to
the general path (orjson, or json, to dicts). Both paths end in the same checks, so columns,
dtypes and error messages do not depend on which one read the file
(benchmarks/bench_trace.py measures the gain; tests/test_trace.py checks the agreement).
"""

from __future__ import annotations

import gc
import gzip as _gzip
import math
import os
import re
import tempfile
import zlib
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from importlib import resources
from itertools import repeat
from operator import attrgetter
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

try:  # orjson is a dependency (3-5x faster than json on large traces); json is the fallback.
    import orjson as _orjson
except ImportError:  # pragma: no cover - exercised only without orjson installed
    _orjson = None
import json as _json

try:  # msgspec decodes events straight into fixed-layout structs (the fast path of load_trace)
    import msgspec as _msgspec
except ImportError:  # pragma: no cover - exercised only without msgspec installed
    _msgspec = None

try:  # pandas' Cython row->column transposer (private; a public-API fallback is below)
    from pandas._libs.lib import dicts_to_array as _dicts_to_array
except ImportError:  # pragma: no cover
    _dicts_to_array = None

__all__ = [
    "ARGS_COLUMNS",
    "GPU_CATEGORIES",
    "LAUNCH_CATEGORIES",
    "TraceError",
    "absolute_time",
    "data_path",
    "link_launches",
    "load_trace",
    "write_trace",
]

US = 1e-6
"""Seconds per microsecond: file timestamps (µs) times US gives seconds."""

BASE_COLUMNS = ("name", "cat", "ph", "ts", "dur", "pid", "tid")
"""Top-level event fields that always get a column of their own."""

ARGS_COLUMNS: dict[str, str] = {
    "correlation": "correlation",
    "external_id": "External id",
    "stream": "stream",
    "device": "device",
}
"""Columns copied out of ``args`` (column -> args key), as nullable Int64; ``args`` keeps them too."""

LAUNCH_CATEGORIES = ("cuda_runtime", "cuda_driver")
"""Categories of host-side runtime/driver calls; launches among them carry args.correlation."""

GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")
"""Categories of device activity enqueued by a launch (pid = device, tid = stream)."""

_NO_TS_PHASES = frozenset({"M"})  # metadata events may omit ts (Kineto writes one anyway)
_GZIP_MAGIC = b"\x1f\x8b"
TOP_LEVEL_SUFFIX = " (top-level)"
"""Suffix of the column of a top-level field whose name is taken by a column from args."""
_EMPTY: dict = {}  # stands in for absent args while extracting args fields (never mutated)


class TraceError(ValueError):
    """A trace file or event list that cannot be read or written; the message names the file,
    and where it applies the event index and the field."""


# --------------------------------------------------------------------------------------------
# loading


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while building millions of acyclic containers (parsing is ~4x faster)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _read_bytes(path: Path) -> bytes:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise TraceError(f"{path}: no such trace file") from None
    except IsADirectoryError:
        raise TraceError(f"{path}: is a directory, not a trace file") from None
    except OSError as err:
        raise TraceError(f"{path}: cannot read trace file ({err})") from err
    if raw[:2] == _GZIP_MAGIC:  # gzip by magic bytes, whatever the suffix says
        try:
            raw = _gzip.decompress(raw)
        except (EOFError, OSError, zlib.error) as err:  # truncated, bad header, bad data
            raise TraceError(f"{path}: corrupt or truncated gzip data ({err})") from err
    return raw


def _parse_json(raw: bytes, path: Path) -> Any:
    def parse(data: bytes) -> Any:
        if _orjson is not None:
            return _orjson.loads(data)
        return _json.loads(data)

    try:
        return parse(raw)
    except ValueError as err:  # orjson.JSONDecodeError and json.JSONDecodeError are ValueErrors
        # The Chrome format lets the JSON Array Format omit the closing "]" (streaming writers).
        stripped = raw.strip()
        if stripped[:1] == b"[" and not stripped.endswith(b"]"):
            try:
                return parse(stripped.rstrip(b",") + b"]")
            except ValueError:
                pass
        raise TraceError(f"{path}: invalid JSON ({err})") from err


def _is_missing_array(col: np.ndarray) -> np.ndarray:
    """Elementwise "value absent": None or NaN (what the column extractors use for a gap)."""
    return pd.isna(col)


def _columns(rows: list, keys: Sequence[str]) -> dict[str, np.ndarray]:
    """Object arrays of rows' values per key (missing -> None or NaN), in one C-level pass.

    Uses pandas' Cython ``dicts_to_array`` (what ``DataFrame(list_of_dicts)`` runs, 3-4x faster
    than one ``dict.get`` pass per key); falls back to ``map(dict.get, ...)`` if it is absent.
    """
    if not keys:
        return {}
    if _dicts_to_array is not None:
        table = _dicts_to_array(rows, list(keys))
        if table.shape == (len(rows), len(keys)):
            return {k: table[:, j] for j, k in enumerate(keys)}
    out = {}
    for k in keys:  # fallback for a pandas without dicts_to_array
        col = np.empty(len(rows), dtype=object)
        col[:] = list(map(dict.get, rows, repeat(k)))
        out[k] = col
    return out


def _first_bad(col: np.ndarray, ok: Any) -> int:
    return next(i for i, v in enumerate(col.tolist()) if not ok(v))


def _float_column(col: np.ndarray, field: str, source: str) -> np.ndarray:
    """Numbers as float64 seconds-or-µs, NaN where absent; non-numbers raise TraceError."""
    try:
        return np.array(col, dtype=np.float64)  # None -> NaN
    except (TypeError, ValueError):
        i = _first_bad(col, lambda v: v is None or isinstance(v, (int, float)))
        raise TraceError(
            f"{source}: event {i}: field '{field}' must be a number, got {col[i]!r}"
        ) from None


def _int_column(col: np.ndarray, field: str, source: str) -> pd.arrays.IntegerArray:
    """Integers as nullable Int64 (<NA> where absent); anything else raises TraceError."""
    return pd.arrays.IntegerArray(*_int_values(col, field, source))


def _int_values(col: np.ndarray, field: str, source: str) -> tuple[np.ndarray, np.ndarray]:
    """(int64 values, missing mask) of an object column of integers; see _int_column."""
    n = len(col)
    try:
        f = np.array(col, dtype=np.float64)
    except (TypeError, ValueError):
        f = None
    if f is not None:
        mask = np.isnan(f)
        vals = np.where(mask, 0.0, f)
        if np.all(vals == np.trunc(vals)) and np.all(np.abs(vals) < 2.0**53):
            return vals.astype(np.int64), mask
    # exact path: big integers, or something that is not an integer at all
    mask = _is_missing_array(col)
    present = col[~mask].tolist()
    if all(type(v) is int for v in present):
        try:
            vals = np.zeros(n, dtype=np.int64)
            vals[~mask] = present
            return vals, mask
        except OverflowError:
            raise TraceError(f"{source}: field '{field}' does not fit a 64-bit integer") from None
    i = _first_bad(col, lambda v: v is None or type(v) is int or (type(v) is float and v != v))
    raise TraceError(f"{source}: event {i}: field '{field}' must be an integer, got {col[i]!r}")


def _id_column(col: np.ndarray) -> np.ndarray:
    """pid/tid: int64 when every value is an int, else object (real traces mix in strings)."""
    if pd.api.types.infer_dtype(col, skipna=False) == "integer":
        try:
            return col.astype(np.int64)
        except OverflowError:
            pass
    out = col.copy()
    out[_is_missing_array(col)] = None
    return out


def _frame_from_events(events: list, source: str, time_scale: float) -> pd.DataFrame:
    """Build the event DataFrame from a list of event dicts (C-level passes, no per-event Python)."""
    if set(map(type, events)) - {dict}:
        i = next(i for i, e in enumerate(events) if type(e) is not dict)
        raise TraceError(f"{source}: event {i} is not a JSON object: {events[i]!r:.80}")
    n = len(events)
    all_keys: set[str] = set().union(*events) if n else set()
    extra_keys = sorted(all_keys - set(BASE_COLUMNS) - {"args"})
    raw = _columns(events, [*BASE_COLUMNS, "args", *extra_keys])
    if n == 0:
        raw = {k: np.empty(0, dtype=object) for k in [*BASE_COLUMNS, "args", *extra_keys]}
    return _frame_from_columns(raw, extra_keys, source, time_scale)


def _frame_from_columns(
    raw: dict[str, np.ndarray],
    extra_keys: Sequence[str],
    source: str,
    time_scale: float,
    *,
    none_only: bool = False,
) -> pd.DataFrame:
    """Validate and type the raw columns (object arrays, None or NaN where a field is absent;
    ts/dur may already be float64 with NaN) into the event DataFrame. Both decoders end here,
    so they raise the same errors and give the same columns. ``none_only``: the object columns
    mark absence with None only (never NaN), so they are used as they are, without a copy."""
    n = len(raw["ph"])
    ph = raw["ph"]
    # under none_only absence is None alone, so `== None` (one identity pass) suffices
    ph_missing = (ph == None) if none_only else _is_missing_array(ph)  # noqa: E711
    if ph_missing.any():
        i = int(np.flatnonzero(ph_missing)[0])
        raise TraceError(f"{source}: event {i}: missing field 'ph'")

    ts = _float_column(raw["ts"], "ts", source)
    dur = _float_column(raw["dur"], "dur", source)
    missing_ts = np.flatnonzero(np.isnan(ts))
    if missing_ts.size:
        i = next((i for i in missing_ts.tolist() if ph[i] not in _NO_TS_PHASES), None)
        if i is not None:
            raise TraceError(f"{source}: event {i} (ph '{ph[i]}'): missing field 'ts'")
    negative = np.flatnonzero(dur < 0)
    if negative.size:
        i = int(negative[0])
        raise TraceError(
            f"{source}: event {i} ({raw['name'][i]!r}): field 'dur' is negative ({dur[i]})"
        )
    missing_dur = np.flatnonzero(np.isnan(dur))
    if missing_dur.size:
        x_no_dur = missing_dur[ph[missing_dur] == "X"]
        if x_no_dur.size:
            i = int(x_no_dur[0])
            raise TraceError(f"{source}: event {i} (ph 'X'): missing field 'dur'")

    args = raw["args"]
    args_missing = (args == None) if none_only else _is_missing_array(args)  # noqa: E711
    if not none_only:
        args = args.copy()
        args[args_missing] = None
    has_args = ~args_missing
    present = args[has_args].tolist()
    if set(map(type, present)) - {dict}:
        i = _first_bad(args, lambda a: a is None or type(a) is dict)
        raise TraceError(
            f"{source}: event {i}: field 'args' must be an object, got {args[i]!r:.80}"
        )
    # args fields, converted over the events that have args and scattered back (<NA> elsewhere)
    from_present = _columns(present, list(ARGS_COLUMNS.values())) if present else {}
    args_ints: dict[str, pd.arrays.IntegerArray] = {}
    for column, key in ARGS_COLUMNS.items():
        vals, mask = np.zeros(n, dtype=np.int64), np.ones(n, dtype=bool)
        if present:
            try:
                vals[has_args], mask[has_args] = _int_values(from_present[key], "", source)
            except TraceError:  # again over all events, for the message's event index
                full = np.full(n, None, dtype=object)
                full[has_args] = from_present[key]
                _int_values(full, f"args.{key}", source)
                raise
        args_ints[column] = pd.arrays.IntegerArray(vals, mask)

    cols: dict[str, Any] = {
        "name": pd.array(raw["name"], dtype="str"),
        "cat": pd.array(raw["cat"], dtype="str"),
        "ph": pd.array(ph, dtype="str"),
        "ts": ts * time_scale if time_scale != 1.0 else ts,
        "dur": dur * time_scale if time_scale != 1.0 else dur,
        "pid": _id_column(raw["pid"]),
        "tid": _id_column(raw["tid"]),
    }
    cols.update(args_ints)
    cols["args"] = args
    for key in extra_keys:
        col = raw[key]
        if not none_only:
            col = col.copy()
            col[_is_missing_array(col)] = None
        column = f"{key}{TOP_LEVEL_SUFFIX}" if key in cols else key  # e.g. a top-level "device"
        cols[column] = pd.Series(col, dtype=object, copy=False)
    return pd.DataFrame(cols, copy=False)


def _events_and_metadata(doc: Any, source: str) -> tuple[list, dict]:
    """The event list and the other top-level keys of a parsed trace (general path)."""
    if isinstance(doc, dict):
        if "traceEvents" not in doc:
            raise TraceError(f"{source}: JSON object has no 'traceEvents' array")
        events = doc["traceEvents"]
        metadata = {k: v for k, v in doc.items() if k != "traceEvents"}
    elif isinstance(doc, list):
        events, metadata = doc, {}
    else:
        raise TraceError(f"{source}: expected an object with 'traceEvents' or an array")
    if not isinstance(events, list):
        raise TraceError(f"{source}: 'traceEvents' must be an array")
    return events, metadata


# Top-level event fields of the Chrome Trace Event Format beyond BASE_COLUMNS and args. The fast
# path decodes events with exactly these fields; an event with any other field sends the whole
# file to the general path (orjson + dicts), which keeps every field.
_FORMAT_FIELDS = ("id", "bp", "s")  # what Kineto writes: flow id and binding point, instant scope
_NO_ID = -(2**63)  # an absent pid/tid in the int64 decoding (such a file goes to the general path)

KINETO_CATEGORIES = (
    # libkineto's ActivityType names (the toString table in libkineto/src/ActivityType.cpp,
    # pytorch/kineto commit d659be20083885b536d7115a4da6fdbb9befd15b)
    "cpu_op",
    "user_annotation",
    "gpu_user_annotation",
    "gpu_memcpy",
    "gpu_memset",
    "kernel",
    "external_correlation",
    "cuda_runtime",
    "cuda_driver",
    "cpu_instant_event",
    "python_function",
    "overhead",
    "mtia_runtime",
    "mtia_ccp_events",
    "cuda_sync",
    "glow_runtime",
    "cuda_profiler_range",
    "hpu_op",
    "xpu_runtime",
    "collective_comm",
    # flow and span categories seen in the course's real torch traces (course_lib/data/*.json.gz):
    # "ac2g" (launch -> GPU flow), "fwdbwd" (forward -> backward flow), "Trace" (profiler span)
    "ac2g",
    "fwdbwd",
    "Trace",
    # course_lib.tracegen's point-to-point transfers (pipeline lessons)
    "p2p",
)
"""Event categories the fast decoder reads as shared strings (one object per category instead
of one per event). Only a speed hint: a file with any other category (or a non-string ``cat``)
is read by the next decoder, which keeps it, and load_trace returns the same frame either way."""

CHROME_PHASES = (
    *("B", "E", "X", "i", "I", "C"),  # duration, complete, instant (I: deprecated), counter
    *("b", "n", "e", "S", "T", "p", "F"),  # async (S/T/p/F: the deprecated async phases)
    *("s", "t", "f", "P", "N", "O", "D"),  # flow, sample, object
    *("M", "V", "v", "R", "c", "(", ")"),  # metadata, memory dump, mark, clock sync, context
)
"""Phase letters of the Trace Event Format (Google's "Trace Event Format" document, its phase
table), read as shared strings by the fast decoder; any other ``ph`` takes the next decoder."""

if _msgspec is not None:

    def _event_struct(
        name: str, id_type: Any, id_default: Any, cat_type: Any = Any, ph_type: Any = Any
    ) -> type:
        return _msgspec.defstruct(
            name,
            [
                ("name", Any, None),
                ("cat", cat_type, None),
                ("ph", ph_type, None),
                ("ts", float, math.nan),  # a number (int or float) or absent; else general path
                ("dur", float, math.nan),
                ("pid", id_type, id_default),
                ("tid", id_type, id_default),
                ("args", Any, None),
                *((k, Any, _msgspec.UNSET) for k in _FORMAT_FIELDS),  # UNSET: absent
            ],
            forbid_unknown_fields=True,
            gc=False,  # events hold no cycles; untracked structs cost the collector nothing
        )

    # First decoder: cat and ph as Literals, which msgspec returns as the one shared str object
    # of each value (no per-event string); pid/tid as int64. A file with another cat or ph takes
    # the second (cat/ph any JSON value), one whose pids/tids mix in strings ("Spans") the third.
    _decode_typed = _msgspec.json.Decoder(
        list[
            _event_struct(
                "_EventTyped",
                int,
                _NO_ID,
                Literal[(*KINETO_CATEGORIES, None)],
                Literal[(*CHROME_PHASES, None)],
            )
        ]
    ).decode
    _decode_int_ids = _msgspec.json.Decoder(list[_event_struct("_Event", int, _NO_ID)]).decode
    _decode_any_ids = _msgspec.json.Decoder(list[_event_struct("_EventAnyIds", Any, None)]).decode
    _decode_top = _msgspec.json.Decoder(dict[str, _msgspec.Raw]).decode  # values stay unparsed
    _decode_any = _msgspec.json.Decoder().decode


_EVENTS_KEY = b'"traceEvents"'
_AFTER_KEY = re.compile(rb"[ \t\r\n]*:[ \t\r\n]*\[")  # JSON whitespace, the colon, the '['


def _decode_events(body: Any) -> tuple[list, bool]:
    """Events as structs, by the narrowest decoder that takes every event: (events, int ids).
    Raises msgspec's error when none does."""
    try:
        return _decode_typed(body), True
    except _msgspec.ValidationError:
        pass
    try:
        return _decode_int_ids(body), True
    except _msgspec.ValidationError:
        return _decode_any_ids(body), False


def _split_top(raw: bytes) -> tuple[memoryview, dict] | None:
    """Guess where the traceEvents array of ``{..., "traceEvents": [...], ...}`` is without
    scanning it: (the guessed array, the other top-level keys), or None when the guess is wrong.

    The guess: the array starts at the '[' after the first '"traceEvents"' key text and ends at
    the file's last ']'. The check: the file with that span replaced by ``null`` must decode to
    an object whose "traceEvents" is that null, with the key text nowhere else and no \\u escape
    (which could spell the key another way). Then the key is the top-level one and its value
    starts where the guess starts; if it ends earlier (a later key's value holds a ']'), the
    guessed span is not one JSON value and decoding it fails, so the caller must not take a
    decoding failure of the guessed span as the file's.
    """
    k = raw.find(_EVENTS_KEY)
    if k < 0:
        return None
    m = _AFTER_KEY.match(raw, k + len(_EVENTS_KEY))
    if m is None:
        return None
    start = m.end() - 1  # the '['
    end = raw.rfind(b"]")
    if end < start:  # cut short
        return None
    rest = raw[:start] + b"null" + raw[end + 1 :]
    if rest.count(_EVENTS_KEY) != 1 or b"\\u" in rest:
        return None
    try:
        top = _decode_any(rest)
    except _msgspec.MsgspecError:
        return None
    if type(top) is not dict or "traceEvents" not in top or top["traceEvents"] is not None:
        return None
    del top["traceEvents"]
    return memoryview(raw)[start : end + 1], top


def _object_events(raw: bytes) -> tuple[list | None, bool, dict]:
    """(events, int ids, metadata) of a trace object, events None without a traceEvents key.

    Reads the top level once when :func:`_split_top`'s guess holds (Kineto writes the array
    last), else scans it (msgspec Raw values) first. Raises msgspec's error when the events do
    not decode."""
    split = _split_top(raw)
    guessed = 0
    if split is not None:
        body, metadata = split
        guessed = len(body)
        try:
            return (*_decode_events(body), metadata)
        except _msgspec.MsgspecError:
            pass  # the guessed span may reach into a later key's value: scan to find out
        finally:
            body.release()
            del body, split
    top = _decode_top(raw)
    if "traceEvents" not in top:
        return None, False, {}
    body = top.pop("traceEvents")
    if len(memoryview(body)) == guessed:  # the guess was the array: its failure is the file's
        raise _msgspec.ValidationError("traceEvents: no event decoder takes every event")
    metadata = {k: _decode_any(v) for k, v in top.items()}
    return (*_decode_events(body), metadata)


def _fast_columns(raw: bytes) -> tuple[dict[str, np.ndarray], list[str], dict] | None:
    """Decode with msgspec into structs and take columns from their attributes (no event dicts).

    Returns (raw columns, extra keys, metadata), or None when the file is outside what this path
    handles (not JSON, not the expected shape, a null/non-number ts or dur, an event with a field
    not in the format, ...): the general path then decodes it and gives the same
    frame or error. Absent and null fields both come out as None, as in the general path.
    """
    if _msgspec is None:
        return None
    head = raw[:64].lstrip()[:1]
    try:
        if head == b"{":
            events, int_ids, metadata = _object_events(raw)
            if events is None:
                return None
        elif head == b"[":
            metadata = {}
            events, int_ids = _decode_events(raw)
        else:
            return None
    except _msgspec.MsgspecError:
        return None
    n = len(events)
    if n == 0:  # no events: the general path's empty columns (object pid/tid, not int64)
        return None
    cols: dict[str, np.ndarray] = {}
    for key in ("ts", "dur"):
        cols[key] = np.fromiter(map(attrgetter(key), events), dtype=np.float64, count=n)
    for key in ("pid", "tid"):
        if int_ids:
            try:
                ids = np.fromiter(map(attrgetter(key), events), dtype=np.int64, count=n)
            except OverflowError:  # beyond int64: the general path makes it an object column
                return None
            if (ids == _NO_ID).any():  # absent (or that very id): the general path
                return None
            cols[key] = ids
        else:
            cols[key] = np.fromiter(map(attrgetter(key), events), dtype=object, count=n)
    for key in ("name", "cat", "ph", "args"):
        cols[key] = np.fromiter(map(attrgetter(key), events), dtype=object, count=n)
    # A field that no event has is not a column; one that only some events have is None in the
    # others (absent and null alike, as in the general path).
    extra_keys = []
    for key in _FORMAT_FIELDS:
        col = np.fromiter(map(attrgetter(key), events), dtype=object, count=n)
        unset = col == _msgspec.UNSET
        if unset.all():
            continue
        col[unset] = None
        cols[key] = col
        extra_keys.append(key)
    return cols, sorted(extra_keys), metadata


def load_trace(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a Chrome/Kineto trace (JSON or gzip, by magic bytes): one row per event, times in s (cost02).

    Columns: name, cat, ph, ts, dur (seconds; NaN where absent), pid, tid (int64, or object when
    the trace mixes in strings such as "Spans"), correlation, external_id, stream, device
    (nullable Int64 from args "correlation", "External id", "stream", "device"), args (the event's
    args dict, or None) and one object column per other top-level field (e.g. "id", "bp", "s").
    Unknown categories and fields are kept. ``df.attrs``: "source" (path), "metadata" (top-level
    keys other than traceEvents), "base_time_ns" (Kineto's baseTimeNanoseconds or None),
    "base_time_s". Raises TraceError naming the file (and event index and field) on a missing
    file, invalid JSON, truncated gzip, an event without ts (ph other than "M"), an "X" event
    without dur, or a negative dur.
    """
    p = Path(path)
    source = str(p)
    with _gc_paused():
        raw = _read_bytes(p)
        fast = _fast_columns(raw)
        if fast is not None:
            del raw
            cols, extra_keys, metadata = fast
            del fast
            df = _frame_from_columns(cols, extra_keys, source, US, none_only=True)
            del cols
        else:  # general path: orjson (or json) to event dicts; any valid trace, every error
            doc = _parse_json(raw, p)
            del raw
            events, metadata = _events_and_metadata(doc, source)
            del doc
            df = _frame_from_events(events, source, US)
            del events
    base = metadata.get("baseTimeNanoseconds")
    if base is not None and (type(base) is not int):
        raise TraceError(f"{source}: 'baseTimeNanoseconds' must be an integer, got {base!r}")
    df.attrs["source"] = source
    df.attrs["metadata"] = metadata
    df.attrs["base_time_ns"] = base
    df.attrs["base_time_s"] = None if base is None else base * 1e-9
    return df


def absolute_time(df: pd.DataFrame, column: str = "ts") -> pd.Series:
    """Unix time in seconds of a time column: baseTimeNanoseconds·1e-9 + ts (cost02).

    Float64 seconds since 1970 resolve about 0.24 µs; keep ``ts`` (relative) for precise
    differences. Raises ValueError when the trace has no baseTimeNanoseconds.
    """
    base = df.attrs.get("base_time_ns")
    if base is None:
        raise ValueError(
            "trace has no baseTimeNanoseconds (df.attrs['base_time_ns'] is None): its ts are not "
            "relative to a known Unix time"
        )
    return df[column] + base * 1e-9


def data_path(name: str) -> Path:
    """Path of a file or folder shipped in course_lib/data, e.g. "real_cpu_mlp.json.gz" (cost02)."""
    path = Path(str(resources.files("course_lib") / "data" / name))
    if not path.exists():
        available = sorted(p.name for p in path.parent.iterdir()) if path.parent.exists() else []
        raise FileNotFoundError(f"no data file {name!r} in course_lib/data; have {available}")
    return path


# --------------------------------------------------------------------------------------------
# writing


def _missing(v: Any) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))


def _records_from_frame(df: pd.DataFrame) -> list[dict]:
    """DataFrame rows -> event dicts (times still in seconds); derived args columns go back into
    args (a column value that is not NA wins over the args entry)."""
    columns = [c for c in df.columns if c not in ARGS_COLUMNS and c != "args"]
    lists = {c: df[c].tolist() for c in columns}
    args_list = df["args"].tolist() if "args" in df.columns else [None] * len(df)
    derived = {
        key: df[c].astype("Int64").tolist() for c, key in ARGS_COLUMNS.items() if c in df.columns
    }
    records = []
    for i in range(len(df)):
        rec = {}
        for c in columns:
            v = lists[c][i]
            if not _missing(v):
                rec[c.removesuffix(TOP_LEVEL_SUFFIX)] = v
        a = args_list[i]
        a = dict(a) if isinstance(a, dict) else None
        for key, values in derived.items():
            v = values[i]
            if not _missing(v):
                if a is None:
                    a = {}
                a[key] = int(v)
        if a is not None:
            rec["args"] = a
        records.append(rec)
    return records


def _to_file_units(records: Sequence[Mapping], source: str) -> list[dict]:
    """Validate events (seconds) and convert ts/dur to microseconds rounded to 1 ns."""
    out = []
    for i, e in enumerate(records):
        if not isinstance(e, Mapping):
            raise TraceError(f"{source}: event {i} is not a dict: {e!r:.80}")
        rec = dict(e)
        ph = rec.get("ph")
        if not isinstance(ph, str):
            raise TraceError(f"{source}: event {i}: missing field 'ph'")
        for field in ("ts", "dur"):
            v = rec.get(field)
            if _missing(v):
                rec.pop(field, None)
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
                raise TraceError(
                    f"{source}: event {i}: field '{field}' must be a number, got {v!r}"
                )
            if not math.isfinite(v):
                raise TraceError(f"{source}: event {i}: field '{field}' is not finite ({v})")
            rec[field] = round(float(v) * 1e6, 3)
        if "ts" not in rec and ph not in _NO_TS_PHASES:
            raise TraceError(f"{source}: event {i} (ph '{ph}'): missing field 'ts'")
        if "dur" in rec and rec["dur"] < 0:
            raise TraceError(f"{source}: event {i}: field 'dur' is negative ({e.get('dur')} s)")
        if ph == "X" and "dur" not in rec:
            raise TraceError(f"{source}: event {i} (ph 'X'): missing field 'dur'")
        out.append(rec)
    return out


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(f"cannot write {type(obj).__name__} to JSON: {obj!r:.80}")


def _dumps(doc: Any) -> bytes:
    if _orjson is not None:
        return _orjson.dumps(doc, default=_json_default)
    return _json.dumps(doc, default=_json_default, separators=(",", ":")).encode()


def write_trace(
    events: pd.DataFrame | Sequence[Mapping[str, Any]],
    path: str | os.PathLike[str],
    *,
    metadata: Mapping[str, Any] | None = None,
    gzip: bool | None = None,
) -> Path:
    """Write events (ts/dur in SECONDS) as Kineto-style JSON in microseconds; atomic (cost02).

    ``events`` is a DataFrame as :func:`load_trace` returns (extra columns become top-level
    fields; correlation/external_id/stream/device go into args) or a list of event dicts in the
    same units. ``metadata``: top-level keys written before ``traceEvents`` (e.g.
    baseTimeNanoseconds); default: the DataFrame's ``attrs["metadata"]`` if any. ``gzip``: True,
    False, or None for "path ends in .gz" (written with mtime 0, so output is byte-reproducible).
    Timestamps are rounded to 1 ns, as Kineto writes them. The file appears only complete
    (temporary file + os.replace). Returns the path. Raises TraceError on invalid events.
    """
    p = Path(path)
    source = str(p)
    if isinstance(events, pd.DataFrame):
        if metadata is None:
            metadata = events.attrs.get("metadata")
        records = _records_from_frame(events)
    elif isinstance(events, (list, tuple)):
        records = list(events)
    else:
        raise TraceError(
            f"{source}: events must be a DataFrame or a list of dicts, got {type(events).__name__}"
        )
    records = _to_file_units(records, source)
    doc: dict[str, Any] = dict(metadata or {})
    doc.pop("traceEvents", None)
    doc["traceEvents"] = records
    try:
        data = _dumps(doc)
    except TypeError as err:
        raise TraceError(f"{source}: cannot serialise events ({err})") from err
    use_gzip = p.name.endswith(".gz") if gzip is None else bool(gzip)
    if use_gzip:
        data = _gzip.compress(data, compresslevel=6, mtime=0)
    if not p.parent.is_dir():
        raise TraceError(f"{source}: directory {p.parent} does not exist")
    fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return p


# --------------------------------------------------------------------------------------------
# launch <-> kernel correlation


def link_launches(df: pd.DataFrame, *, by: Sequence[str] = ()) -> pd.DataFrame:
    """Join GPU activity to the runtime launch that enqueued it by correlation id (cost02).

    One row per GPU event (cat in GPU_CATEGORIES), sorted by kernel_start, with: correlation,
    launch_name, kernel_name, kernel_cat, device, stream, launch_pid, launch_tid, launch_start,
    launch_end, kernel_start, kernel_end (s), queue_delay = kernel_start − launch_end (s; can be
    negative in real traces — data, not an error), launch_index and kernel_index (row labels in
    ``df``). GPU events whose launch is not in ``df`` keep NaN launch columns. Never matches by time.
    ``by``: extra key columns (e.g. ["rank"] for a concatenation of several ranks' traces, whose
    correlation ids repeat). Raises ValueError when two launches share a key.
    """
    keys = [*by, "correlation"]
    missing = [c for c in [*keys, "cat", "name", "ts", "dur", "pid", "tid"] if c not in df.columns]
    if missing:
        raise ValueError(f"link_launches: DataFrame lacks columns {missing}")
    corr = df["correlation"]
    is_launch = df["cat"].isin(LAUNCH_CATEGORIES).to_numpy(dtype=bool) & corr.notna().to_numpy(
        dtype=bool
    )
    is_gpu = df["cat"].isin(GPU_CATEGORIES).to_numpy(dtype=bool)
    launches = pd.DataFrame(
        {
            **{k: df[k].to_numpy()[is_launch] for k in by},
            "correlation": corr.array[is_launch],
            "launch_name": df["name"].array[is_launch],
            "launch_pid": df["pid"].to_numpy()[is_launch],
            "launch_tid": df["tid"].to_numpy()[is_launch],
            "launch_start": df["ts"].to_numpy()[is_launch],
            "launch_end": (df["ts"] + df["dur"]).to_numpy()[is_launch],
            "launch_index": df.index.to_numpy()[is_launch],
        }
    )
    dup = launches.duplicated(keys, keep=False)
    if dup.any():
        first = launches[dup].iloc[0]
        raise ValueError(
            f"link_launches: several launch events share {dict(first[keys])} (correlation ids "
            "are unique only within one process); for a concatenation of traces from several "
            "processes pass by=[<column naming the process>]"
        )
    gpu = pd.DataFrame(
        {
            **{k: df[k].to_numpy()[is_gpu] for k in by},
            "correlation": corr.array[is_gpu],
            "kernel_name": df["name"].array[is_gpu],
            "kernel_cat": df["cat"].array[is_gpu],
            "device": df["device"].array[is_gpu] if "device" in df else pd.NA,
            "stream": df["stream"].array[is_gpu] if "stream" in df else pd.NA,
            "kernel_start": df["ts"].to_numpy()[is_gpu],
            "kernel_end": (df["ts"] + df["dur"]).to_numpy()[is_gpu],
            "kernel_index": df.index.to_numpy()[is_gpu],
        }
    )
    out = gpu.merge(launches, on=keys, how="left", sort=False, validate="many_to_one")
    out["queue_delay"] = out["kernel_start"] - out["launch_end"]
    order = [
        *by,
        "correlation",
        "launch_name",
        "kernel_name",
        "kernel_cat",
        "device",
        "stream",
        "launch_pid",
        "launch_tid",
        "launch_start",
        "launch_end",
        "kernel_start",
        "kernel_end",
        "queue_delay",
        "launch_index",
        "kernel_index",
    ]
    return out[order].sort_values("kernel_start", kind="stable").reset_index(drop=True)
