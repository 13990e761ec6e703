"""Tensor lifetimes, live bytes over time, the peak and its attribution, a caching-allocator model
and per-layer activation formulas (cost05).

Events are a DataFrame with one row per allocation or free: ``time`` (s), ``tensor`` (an id,
unique per allocation), ``bytes``, ``kind`` ("alloc" or "free") and optionally ``category``
(e.g. "activation", "weight", "workspace"). Errors name the offending row by its index label.

Ordering rule for events at the same time: **frees before allocations**. A tensor's lifetime is
the half-open interval [alloc time, free time) — the same [start, end) convention as every
interval in the course — so a tensor freed at t and one allocated at t are never live together,
and the live bytes at t are those after every event at t. This is also what an allocator does when
one op's output takes the memory its input just released. The rule can under-report a transient
peak if the timestamps are coarser than the real order of events; record finer timestamps rather
than guess. A tensor freed at the time it is allocated lives for zero time and contributes nothing
to live bytes (it still passes through the allocator in :func:`simulate_allocator`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray

__all__ = [
    "CachingAllocator",
    "K_LARGE_BUFFER",
    "K_MIN_BLOCK_SIZE",
    "K_MIN_LARGE_ALLOC",
    "K_ROUND_LARGE",
    "K_SMALL_BUFFER",
    "K_SMALL_SIZE",
    "Peak",
    "activation_bytes_per_layer",
    "lifetimes",
    "live_bytes",
    "peak",
    "simulate_allocator",
]

# --------------------------------------------------------------------------------------------
# lifetimes and live bytes


def lifetimes(events: pd.DataFrame) -> pd.DataFrame:
    """Validated lifetime table: tensor, bytes, category, alloc_time, free_time (NaN = never freed) (cost05).

    Raises ValueError naming the event index for: an unknown kind, a non-finite time, negative or
    missing bytes, a tensor allocated twice, a free of an unknown tensor, a double free, a free
    before the allocation, or free bytes that differ from the allocation's.
    """
    if not isinstance(events, pd.DataFrame):
        raise TypeError(f"events must be a pandas DataFrame, got {type(events).__name__}")
    missing = [c for c in ("time", "tensor", "bytes", "kind") if c not in events.columns]
    if missing:
        raise ValueError(f"events lacks columns {missing}; need time, tensor, bytes, kind")
    if len(events) == 0:
        raise ValueError("events is empty")
    ev = events.reset_index(names="_event")
    ev["_pos"] = np.arange(len(ev))
    kind = ev["kind"].astype(object)
    bad_kind = ~kind.isin(["alloc", "free"])
    if bad_kind.any():
        r = ev[bad_kind].iloc[0]
        raise ValueError(
            f"event {_label(r['_event'])}: kind must be 'alloc' or 'free', got {_label(r['kind'])}"
        )
    time = pd.to_numeric(ev["time"], errors="coerce").astype(float)
    bad_time = ~np.isfinite(time.to_numpy())
    if bad_time.any():
        r = ev[bad_time].iloc[0]
        raise ValueError(
            f"event {_label(r['_event'])}: time must be a finite number, got {_label(r['time'])}"
        )
    nbytes = pd.to_numeric(ev["bytes"], errors="coerce").astype(float)
    is_alloc = (kind == "alloc").to_numpy()
    b = nbytes.to_numpy()
    bad_bytes = (is_alloc & ~np.isfinite(b)) | (np.isfinite(b) & (b < 0)) | np.isinf(b)
    if bad_bytes.any():
        r = ev[bad_bytes].iloc[0]
        raise ValueError(
            f"event {_label(r['_event'])}: bytes must be a finite number >= 0, got {_label(r['bytes'])}"
        )
    ev["time"] = time
    ev["bytes"] = nbytes
    if "category" not in ev.columns:
        ev["category"] = "unknown"
    ev = ev.sort_values(["time", "_pos"], kind="stable")
    allocs = ev[ev["kind"] == "alloc"]
    frees = ev[ev["kind"] == "free"]
    dup = allocs["tensor"].duplicated()
    if dup.any():
        r = allocs[dup].iloc[0]
        raise ValueError(
            f"event {_label(r['_event'])}: tensor {_label(r['tensor'])} is allocated a second time; tensor "
            "ids must be unique per allocation (e.g. append a generation to reused addresses)"
        )
    unknown = ~frees["tensor"].isin(allocs["tensor"])
    if unknown.any():
        r = frees[unknown].iloc[0]
        raise ValueError(
            f"event {_label(r['_event'])}: free of unknown tensor {_label(r['tensor'])}"
        )
    dup = frees["tensor"].duplicated()
    if dup.any():
        r = frees[dup].iloc[0]
        raise ValueError(
            f"event {_label(r['_event'])}: double free of tensor {_label(r['tensor'])}"
        )
    a = allocs[["tensor", "bytes", "category", "time", "_event", "_pos"]].rename(
        columns={"time": "alloc_time", "_event": "alloc_event", "_pos": "alloc_pos"}
    )
    f = frees[["tensor", "bytes", "time", "_event", "_pos"]].rename(
        columns={
            "bytes": "free_bytes",
            "time": "free_time",
            "_event": "free_event",
            "_pos": "free_pos",
        }
    )
    life = a.merge(f, on="tensor", how="left", sort=False)
    early = life["free_time"] < life["alloc_time"]
    if early.any():
        r = life[early].iloc[0]
        raise ValueError(
            f"event {_label(r['free_event'])}: tensor {_label(r['tensor'])} is freed at {r['free_time']} "
            f"before it is allocated at {r['alloc_time']}"
        )
    mismatch = life["free_bytes"].notna() & (life["free_bytes"] != life["bytes"])
    if mismatch.any():
        r = life[mismatch].iloc[0]
        raise ValueError(
            f"event {_label(r['free_event'])}: free of tensor {_label(r['tensor'])} says {r['free_bytes']} "
            f"bytes but it was allocated with {r['bytes']}"
        )
    return life.drop(columns=["free_bytes"]).reset_index(drop=True)


def _label(x: object) -> str:
    """repr of an index label or value, with numpy scalars shown as plain Python values."""
    return repr(x.item() if isinstance(x, np.generic) else x)


def _ordered(life: pd.DataFrame) -> pd.DataFrame:
    """All alloc/free events in the canonical order: by time; at equal times frees, then
    zero-lifetime tensors (alloc, free), then allocations; then input order."""
    zero = (life["free_time"] == life["alloc_time"]).to_numpy()
    n = len(life)
    allocs = pd.DataFrame({
        "time": life["alloc_time"].to_numpy(), "kind": "alloc", "rank": np.where(zero, 1, 3),
        "pos": life["alloc_pos"].to_numpy(), "tensor": life["tensor"].to_numpy(),
        "bytes": life["bytes"].to_numpy(), "zero": zero, "row": np.arange(n),
        "event": life["alloc_event"].to_numpy(),
    })  # fmt: skip
    freed = life["free_time"].notna().to_numpy()
    frees = pd.DataFrame({
        "time": life["free_time"].to_numpy()[freed], "kind": "free",
        "rank": np.where(zero[freed], 2, 0), "pos": life["free_pos"].to_numpy()[freed],
        "tensor": life["tensor"].to_numpy()[freed], "bytes": life["bytes"].to_numpy()[freed],
        "zero": zero[freed], "row": np.arange(n)[freed],
        "event": life["free_event"].to_numpy()[freed],
    })  # fmt: skip
    out = pd.concat([allocs, frees], ignore_index=True)
    return out.sort_values(["time", "rank", "pos"], kind="stable").reset_index(drop=True)


def _levels(life: pd.DataFrame) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    ordered = _ordered(life)
    sign = np.where(ordered["kind"].to_numpy() == "alloc", 1.0, -1.0)
    delta = np.where(ordered["zero"].to_numpy(), 0.0, sign * ordered["bytes"].to_numpy())
    level = np.cumsum(delta)
    t = ordered["time"].to_numpy()
    last = np.append(np.flatnonzero(t[1:] != t[:-1]), len(t) - 1)
    return t[last], level[last]


def live_bytes(events: pd.DataFrame) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Live bytes over time: (times, bytes) with bytes[i] live on [times[i], times[i+1]) (cost05).

    One point per distinct event time, the level after every event at that time (frees before
    allocations). Sort + cumulative sum: O(n log n), no per-event Python loop.
    """
    return _levels(lifetimes(events))


@dataclass(frozen=True, eq=False)
class Peak:
    """The peak of live bytes: the first time it is reached, its size, and the tensors live then (cost05)."""

    time: float
    bytes: float
    live: pd.DataFrame


def peak(events: pd.DataFrame) -> Peak:
    """Peak live bytes, when it first occurs, and the tensors live at that moment (attribution) (cost05).

    ``live`` lists tensor, bytes, category, alloc_time and free_time of every tensor with
    alloc_time <= t < free_time at the peak time t, largest first; its bytes sum to the peak.
    """
    life = lifetimes(events)
    times, level = _levels(life)
    i = int(np.argmax(level))
    t = float(times[i])
    free = life["free_time"].fillna(math.inf)
    live = life[(life["alloc_time"] <= t) & (free > t)]
    live = live[["tensor", "bytes", "category", "alloc_time", "free_time"]]
    live = live.sort_values("bytes", ascending=False, kind="stable").reset_index(drop=True)
    return Peak(time=t, bytes=float(level[i]), live=live)


# --------------------------------------------------------------------------------------------
# caching allocator model

#: Constants of PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp):
K_MIN_BLOCK_SIZE = 512  #: all sizes are rounded up to a multiple of 512 bytes
K_SMALL_SIZE = 1048576  #: largest "small" allocation: 1 MiB (small pool)
K_SMALL_BUFFER = 2097152  #: small allocations are packed in 2 MiB segments
K_LARGE_BUFFER = 20971520  #: large allocations between 1 and 10 MiB get 20 MiB segments
K_MIN_LARGE_ALLOC = 10485760  #: from 10 MiB a request gets its own segment...
K_ROUND_LARGE = 2097152  #: ...rounded up to a multiple of 2 MiB


@dataclass
class _Block:
    segment: int
    offset: int
    size: int
    tensor: object = None  # None = free
    requested: int = 0


@dataclass
class _Segment:
    id: int
    pool: Literal["small", "large"]
    size: int
    blocks: list[_Block]


class CachingAllocator:
    """Single-stream model of PyTorch's CUDA caching allocator: rounding, pools, segments, best-fit reuse, splitting (cost05).

    Follows c10/cuda/CUDACachingAllocator.cpp with the default configuration:

    * a request of n bytes is rounded up to a multiple of 512 (``round_size``; 0 bytes takes no
      block, as PyTorch returns an empty pointer);
    * rounded sizes <= 1 MiB use the small pool, larger ones the large pool;
    * the smallest free block of the pool that fits is reused (best fit; ties to the lowest
      address); if none fits, a new segment is reserved from the device (``cudaMalloc``): 2 MiB
      for a small request, 20 MiB for a request below 10 MiB, otherwise the request rounded up to
      a multiple of 2 MiB (``get_allocation_size``);
    * a block larger than the request is split when the remainder is >= 512 bytes (small pool) or
      > 1 MiB (large pool) (``should_split``); otherwise the whole block is handed out;
    * a freed block merges with free neighbours in its segment and stays reserved: segments go
      back to the device only on :meth:`empty_cache` (``torch.cuda.empty_cache``).

    ``allocated_bytes`` counts the handed-out block sizes (``torch.cuda.memory_allocated``),
    ``reserved_bytes`` the segments (``torch.cuda.memory_reserved``), ``requested_bytes`` the
    bytes asked for. Always requested <= allocated <= reserved. Not modelled: several streams,
    out-of-memory retries, ``max_split_size_mb``, expandable segments, CUDA graphs.
    """

    def __init__(self) -> None:
        self._segments: list[_Segment] = []
        self._live: dict[object, _Block | None] = {}
        self._next_segment = 0
        self.requested_bytes = 0
        self.allocated_bytes = 0
        self.reserved_bytes = 0

    # --- PyTorch's size rules
    @staticmethod
    def round_size(nbytes: int) -> int:
        """Rounded request: max(512, 512·ceil(n / 512)) (``round_size``) (cost05)."""
        if nbytes < K_MIN_BLOCK_SIZE:
            return K_MIN_BLOCK_SIZE
        return K_MIN_BLOCK_SIZE * ((nbytes + K_MIN_BLOCK_SIZE - 1) // K_MIN_BLOCK_SIZE)

    @staticmethod
    def allocation_size(size: int) -> int:
        """Segment size reserved for a rounded request with no reusable block (``get_allocation_size``) (cost05)."""
        if size <= K_SMALL_SIZE:
            return K_SMALL_BUFFER
        if size < K_MIN_LARGE_ALLOC:
            return K_LARGE_BUFFER
        return K_ROUND_LARGE * ((size + K_ROUND_LARGE - 1) // K_ROUND_LARGE)

    # --- operations
    def malloc(self, tensor: object, nbytes: int) -> int:
        """Allocate ``nbytes`` for ``tensor``; returns the size of the block handed out (cost05)."""
        if tensor in self._live:
            raise ValueError(f"tensor {tensor!r} is already allocated")
        n = self._nbytes(nbytes)
        if n == 0:
            self._live[tensor] = None
            return 0
        size = self.round_size(n)
        pool = "small" if size <= K_SMALL_SIZE else "large"
        block = self._best_fit(pool, size)
        if block is None:
            seg_size = self.allocation_size(size)
            seg = _Segment(self._next_segment, pool, seg_size, [])
            self._next_segment += 1
            block = _Block(seg.id, 0, seg_size)
            seg.blocks.append(block)
            self._segments.append(seg)
            self.reserved_bytes += seg_size
        seg = self._segment(block.segment)
        remaining = block.size - size
        split = remaining >= K_MIN_BLOCK_SIZE if pool == "small" else remaining > K_SMALL_SIZE
        if split:
            rest = _Block(block.segment, block.offset + size, remaining)
            block.size = size
            seg.blocks.insert(seg.blocks.index(block) + 1, rest)
        block.tensor = tensor
        block.requested = n
        self._live[tensor] = block
        self.allocated_bytes += block.size
        self.requested_bytes += n
        return block.size

    def free(self, tensor: object) -> None:
        """Free ``tensor``'s block: it merges with free neighbours and stays reserved (cost05)."""
        if tensor not in self._live:
            raise ValueError(f"free of unknown tensor {tensor!r} (not allocated, or freed twice)")
        block = self._live.pop(tensor)
        if block is None:
            return
        self.allocated_bytes -= block.size
        self.requested_bytes -= block.requested
        block.tensor, block.requested = None, 0
        blocks = self._segment(block.segment).blocks
        i = blocks.index(block)
        if i + 1 < len(blocks) and blocks[i + 1].tensor is None:
            block.size += blocks.pop(i + 1).size
        if i > 0 and blocks[i - 1].tensor is None:
            blocks[i - 1].size += block.size
            blocks.pop(i)

    def empty_cache(self) -> int:
        """Return every wholly free segment to the device; returns the bytes released (cost05)."""
        keep, released = [], 0
        for seg in self._segments:
            if len(seg.blocks) == 1 and seg.blocks[0].tensor is None:
                released += seg.size
            else:
                keep.append(seg)
        self._segments = keep
        self.reserved_bytes -= released
        return released

    def segments(self) -> pd.DataFrame:
        """Snapshot: one row per block — segment, pool, offset, size, tensor (None if free), requested (cost05)."""
        rows = [
            {"segment": s.id, "pool": s.pool, "segment_size": s.size, "offset": b.offset,
             "size": b.size, "tensor": b.tensor, "requested": b.requested}
            for s in self._segments
            for b in s.blocks
        ]  # fmt: skip
        cols = ["segment", "pool", "segment_size", "offset", "size", "tensor", "requested"]
        return pd.DataFrame(rows, columns=cols)

    # --- helpers
    @staticmethod
    def _nbytes(nbytes: int) -> int:
        if isinstance(nbytes, bool):
            raise ValueError(f"bytes must be an integer >= 0, got {nbytes!r}")
        try:
            f = float(nbytes)
        except (TypeError, ValueError):
            raise ValueError(f"bytes must be an integer >= 0, got {nbytes!r}") from None
        if not math.isfinite(f) or f < 0 or f != int(f):
            raise ValueError(f"bytes must be an integer >= 0, got {nbytes!r}")
        return int(f)

    def _segment(self, sid: int) -> _Segment:
        for s in self._segments:
            if s.id == sid:
                return s
        raise KeyError(sid)  # pragma: no cover - internal invariant

    def _best_fit(self, pool: str, size: int) -> _Block | None:
        best: _Block | None = None
        for seg in self._segments:
            if seg.pool != pool:
                continue
            for b in seg.blocks:
                if b.tensor is None and b.size >= size:
                    if best is None or (b.size, b.segment, b.offset) < (
                        best.size,
                        best.segment,
                        best.offset,
                    ):
                        best = b
        return best


def simulate_allocator(
    events: pd.DataFrame, allocator: CachingAllocator | None = None
) -> pd.DataFrame:
    """Replay alloc/free events through a CachingAllocator: requested, allocated, reserved after each event (cost05).

    Events are validated and ordered as in :func:`live_bytes` (at equal times: frees, then
    zero-lifetime tensors, then allocations). Returns one row per event with columns time, kind,
    tensor, bytes, event (the input index label), requested, allocated, reserved.
    """
    life = lifetimes(events)
    ordered = _ordered(life)
    alloc = CachingAllocator() if allocator is None else allocator
    req, al, res = [], [], []
    for kind, tensor, nbytes in zip(
        ordered["kind"].to_numpy(),
        ordered["tensor"].to_numpy(),
        ordered["bytes"].to_numpy(),
        strict=True,
    ):
        if kind == "alloc":
            alloc.malloc(tensor, int(nbytes) if float(nbytes).is_integer() else nbytes)
        else:
            alloc.free(tensor)
        req.append(alloc.requested_bytes)
        al.append(alloc.allocated_bytes)
        res.append(alloc.reserved_bytes)
    out = ordered[["time", "kind", "tensor", "bytes", "event"]].copy()
    out["requested"] = np.array(req, dtype=float)
    out["allocated"] = np.array(al, dtype=float)
    out["reserved"] = np.array(res, dtype=float)
    return out


# --------------------------------------------------------------------------------------------
# activation memory per transformer layer


def activation_bytes_per_layer(
    seq_len: int,
    micro_batch: int,
    hidden: int,
    num_heads: int,
    tensor_parallel: int = 1,
    sequence_parallel: bool = False,
    recompute: Literal["none", "selective", "full"] = "none",
) -> float:
    """Activation bytes stored per transformer layer (Korthikanti et al. 2022, Table 2) (cost05).

    With s = seq_len, b = micro_batch, h = hidden, a = num_heads, t = tensor_parallel:

    ============================================  ==========================
    no parallelism                                s·b·h·(34 + 5·a·s/h)
    tensor parallel                               s·b·h·(10 + 24/t + 5·a·s/(h·t))
    tensor + sequence parallel                    (s·b·h/t)·(34 + 5·a·s/h)
    tensor parallel + selective recompute         s·b·h·(10 + 24/t)
    tensor + sequence parallel + selective        34·s·b·h/t
    full recompute                                2·s·b·h
    ============================================  ==========================

    As in the paper: 16-bit (2-byte) activations, 1-byte dropout masks, one attention block, one
    MLP block (4h) and two layer norms per layer; small buffers (layer-norm statistics, biases)
    ignored. 34 = attention 11 + MLP 19 + layer norms 4 (×s·b·h); 5·a·s/h is the a·s²·b-sized
    softmax output (2 bytes), its dropout mask (1) and the dropout output (2). Selective
    recomputation drops exactly that term; full recomputation keeps only each layer's 2-byte input
    (the table's row, not divided by t).
    """
    s = _count(seq_len, "seq_len")
    b = _count(micro_batch, "micro_batch")
    h = _count(hidden, "hidden")
    a = _count(num_heads, "num_heads")
    t = _count(tensor_parallel, "tensor_parallel")
    if not isinstance(sequence_parallel, bool):
        raise ValueError(f"sequence_parallel must be True or False, got {sequence_parallel!r}")
    if recompute not in ("none", "selective", "full"):
        raise ValueError(f"recompute must be 'none', 'selective' or 'full', got {recompute!r}")
    sbh = float(s) * b * h
    if recompute == "full":
        return 2.0 * sbh
    attention_scores = 5.0 * a * s / h if recompute == "none" else 0.0
    if sequence_parallel:
        return sbh / t * (34.0 + attention_scores)
    return sbh * (10.0 + 24.0 / t + attention_scores / t)


def _count(value: int, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value}")
    return int(value)
