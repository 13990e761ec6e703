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
    "STEP_CATEGORIES",
    "activation_bytes_per_layer",
    "lifetimes",
    "live_bytes",
    "live_bytes_by_category",
    "peak",
    "simulate_allocator",
    "training_step_events",
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
K_MIN_LARGE_ALLOC = 10485760  #: from 10 MiB a request with no cached fit gets its own segment...
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
    * a freed block merges with free neighbours in its segment and stays reserved: a segment
      goes back to the device only when it is entirely free, on :meth:`empty_cache`
      (``torch.cuda.empty_cache``) or when a ``cudaMalloc`` fails — PyTorch then frees every
      entirely free cached segment and retries (``release_cached_blocks``; not modelled here).

    ``allocated_bytes`` counts the handed-out block sizes (``torch.cuda.memory_allocated``),
    ``reserved_bytes`` the segments (``torch.cuda.memory_reserved``), ``requested_bytes`` the
    bytes asked for. Always requested <= allocated <= reserved. Not modelled: several streams,
    a device limit and the release-and-retry on a failed ``cudaMalloc``, ``max_split_size_mb``,
    expandable segments, CUDA graphs.
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
    full recompute (input replicated on t ranks)  2·s·b·h
    full recompute, tensor + sequence parallel    2·s·b·h/t
    ============================================  ==========================

    As in the paper: 16-bit (2-byte) activations, 1-byte dropout masks, one attention block, one
    MLP block (4h) and two layer norms per layer; small buffers (layer-norm statistics, biases)
    ignored. 34 = attention 11 + MLP 19 + layer norms 4 (×s·b·h); 5·a·s/h is the a·s²·b-sized
    softmax output (2 bytes), its dropout mask (1) and the dropout output (2). Selective
    recomputation drops exactly that term; full recomputation keeps only each layer's 2-byte input:
    2·s·b·h as Table 2 prints it, for an input replicated on every tensor-parallel rank; under
    sequence parallelism the layer input lies in the sequence-parallel region (§4.2.2), each rank
    holds its s/t slice, and the checkpoint is 2·s·b·h/t (Megatron-LM saves that slice; its
    ``distribute_saved_activations`` option, which splits a replicated input across the ranks,
    is switched off under sequence parallelism).
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
        return 2.0 * sbh / t if sequence_parallel else 2.0 * sbh
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


# --------------------------------------------------------------------------------------------
# a synthetic but itemized training step: the events the cost05 lesson analyses

#: Categories of :func:`training_step_events`, bottom to top of a stacked memory timeline.
STEP_CATEGORIES = ("weight", "optimizer", "gradient", "activation", "workspace")

# One transformer layer's forward ops (pre-layer-norm GPT block, Korthikanti et al. 2022, §4.1):
# (op, matmul FLOPs as (coefficient of s·b·h², coefficient of b·s²·h), outputs, inputs read).
# Outputs are (name, bytes per element of s·b·h ("sbh") or of a·s²·b ("as2b"), unit).
_LAYER_FORWARD = (
    ("ln1", (0, 0), (("ln1_out", 2, "sbh"),), ("x",)),
    ("qkv", (6, 0), (("qkv", 6, "sbh"),), ("ln1_out",)),
    ("scores", (0, 2), (("scores", 2, "as2b"),), ("qkv",)),
    ("softmax", (0, 0), (("probs", 2, "as2b"),), ("scores",)),
    ("attn_dropout", (0, 0), (("attn_mask", 1, "as2b"), ("attn_drop", 2, "as2b")), ("probs",)),
    ("attn_v", (0, 2), (("ctx", 2, "sbh"),), ("attn_drop", "qkv")),
    ("proj", (2, 0), (("proj_out", 2, "sbh"),), ("ctx",)),
    ("dropout1", (0, 0), (("mask1", 1, "sbh"), ("drop1", 2, "sbh")), ("proj_out",)),
    ("add1", (0, 0), (("resid1", 2, "sbh"),), ("x", "drop1")),
    ("ln2", (0, 0), (("ln2_out", 2, "sbh"),), ("resid1",)),
    ("fc1", (8, 0), (("fc1_out", 8, "sbh"),), ("ln2_out",)),
    ("gelu", (0, 0), (("gelu_out", 8, "sbh"),), ("fc1_out",)),
    ("fc2", (8, 0), (("fc2_out", 2, "sbh"),), ("gelu_out",)),
    ("dropout2", (0, 0), (("mask2", 1, "sbh"), ("drop2", 2, "sbh")), ("fc2_out",)),
    ("add2", (0, 0), (("out", 2, "sbh"),), ("resid1", "drop2")),
)
# Tensors each policy keeps for backward (their bytes are Table 2's rows; "x" is the layer input).
_SAVED = {
    "none": frozenset(
        "x ln1_out qkv probs attn_mask attn_drop ctx mask1 resid1 ln2_out fc1_out gelu_out "
        "mask2".split()
    ),
    "full": frozenset({"x"}),
}
_SAVED["selective"] = _SAVED["none"] - {"probs", "attn_mask", "attn_drop"}
_CORE_ATTENTION = ("scores", "softmax", "attn_dropout", "attn_v")
# Backward ops of a layer, in execution order: (op, matmul FLOPs as above, activation gradients
# allocated, weight-gradient parameter counts as (coefficient of h², of h), gradients consumed,
# saved tensors released when the op ends).
_LAYER_BACKWARD = (
    ("dropout2_bwd", (0, 0), (("d_fc2_out", 2, "sbh"),), (0, 0), (), ("mask2",)),
    ("fc2_bwd", (16, 0), (("d_gelu_out", 8, "sbh"),), (4, 1), ("d_fc2_out",), ("gelu_out",)),
    ("gelu_bwd", (0, 0), (("d_fc1_out", 8, "sbh"),), (0, 0), ("d_gelu_out",), ("fc1_out",)),
    ("fc1_bwd", (16, 0), (("d_ln2_out", 2, "sbh"),), (4, 4), ("d_fc1_out",), ("ln2_out",)),
    ("ln2_bwd", (0, 0), (("d_resid1", 2, "sbh"),), (0, 2), ("d_ln2_out", "d_out"), ("resid1",)),
    ("dropout1_bwd", (0, 0), (("d_proj_out", 2, "sbh"),), (0, 0), (), ("mask1",)),
    ("proj_bwd", (4, 0), (("d_ctx", 2, "sbh"),), (1, 1), ("d_proj_out",), ("ctx",)),
    (
        "attn_v_bwd",
        (0, 4),
        (("d_attn_drop", 2, "as2b"), ("d_qkv", 6, "sbh")),
        (0, 0),
        ("d_ctx",),
        ("attn_drop",),
    ),
    (
        "attn_dropout_bwd",
        (0, 0),
        (("d_probs", 2, "as2b"),),
        (0, 0),
        ("d_attn_drop",),
        ("attn_mask",),
    ),
    ("softmax_bwd", (0, 0), (("d_scores", 2, "as2b"),), (0, 0), ("d_probs",), ("probs",)),
    ("scores_bwd", (0, 4), (), (0, 0), ("d_scores",), ("qkv",)),
    ("qkv_bwd", (12, 0), (("d_ln1_out", 2, "sbh"),), (3, 3), ("d_qkv",), ("ln1_out",)),
    ("ln1_bwd", (0, 0), (("d_x", 2, "sbh"),), (0, 2), ("d_ln1_out", "d_resid1"), ("x",)),
)


class _StepRecorder:
    """Runs ops one after another: allocations at an op's start, frees at its end."""

    def __init__(self, flops_per_second: float, bytes_per_second: float) -> None:
        self.flops_per_second = flops_per_second
        self.bytes_per_second = bytes_per_second
        self.time = 0.0
        self.rows: list[tuple[float, str, float, str, str, str, str]] = []
        self.live: dict[str, tuple[float, str]] = {}
        self._generation: dict[str, int] = {}

    def new_id(self, name: str) -> str:
        """A fresh tensor id: the name, then name#2, name#3 ... for re-allocations (recompute)."""
        k = self._generation.get(name, 0) + 1
        self._generation[name] = k
        return name if k == 1 else f"{name}#{k}"

    def op(
        self,
        name: str,
        phase: str,
        *,
        flops: float = 0.0,
        allocs: tuple[tuple[str, float, str], ...] = (),
        frees: tuple[str, ...] = (),
        io_bytes: float | None = None,
    ) -> None:
        """One op: allocate (id, bytes, category) at the start, free ids at the end.

        Duration = FLOPs / flops_per_second + bytes moved / bytes_per_second, where bytes moved
        defaults to twice the bytes allocated (read the inputs, write the outputs).
        """
        start = self.time
        for tensor, nbytes, category in allocs:
            self.rows.append((start, tensor, nbytes, "alloc", category, name, phase))
            self.live[tensor] = (nbytes, category)
        moved = 2.0 * sum(a[1] for a in allocs) if io_bytes is None else io_bytes
        end = start + flops / self.flops_per_second + moved / self.bytes_per_second
        for tensor in frees:
            nbytes, category = self.live.pop(tensor)
            self.rows.append((end, tensor, nbytes, "free", category, name, phase))
        self.time = end


def training_step_events(
    num_layers: int = 12,
    seq_len: int = 1024,
    micro_batch: int = 4,
    hidden: int = 768,
    num_heads: int = 12,
    vocab_size: int = 50257,
    recompute: Literal["none", "selective", "full"] = "none",
    flops_per_second: float = 100e12,
    bytes_per_second: float = 1.5e12,
) -> pd.DataFrame:
    """Alloc/free events of one mixed-precision training step of a GPT-style transformer (cost05).

    One device, no parallelism, bf16 weights, activations and gradients, Adam with fp32 master
    weights and moments (2 + 2 + 12 = 16 bytes per parameter, Rajbhandari et al. 2020, §3.1), a
    tied token embedding and no position table. Deterministic: the same arguments give the same
    events. Phases: setup (the state, at time 0), forward, backward,
    optimizer (``optimizer.step()`` then ``zero_grad(set_to_none=True)``).

    * weight, optimizer: allocated at time 0 and never freed (they outlive the step);
    * activation: tensors saved for backward — per layer exactly the itemized tensors of
      Korthikanti et al. 2022 §4.1 under ``recompute`` (their bytes sum to
      :func:`activation_bytes_per_layer`), plus the head's layer-norm input and output and the
      fp32 log-probabilities the cross-entropy keeps (4·s·b·V bytes);
    * workspace: transient — forward intermediates not saved, activation gradients, the loss's
      fp32 gradients, optimizer scratch; freed when their consumer ends;
    * gradient: weight gradients, allocated by the backward op that computes them, freed by
      ``zero_grad`` at the end.

    ``selective`` drops the a·s²·b tensors and reruns the core attention (QKᵀ, softmax, dropout,
    attention over V; §5) just before the layer's attention backward; ``full`` keeps only each
    layer's input and reruns the whole layer forward before its backward. Op duration = matmul
    FLOPs / ``flops_per_second`` + bytes moved / ``bytes_per_second`` (twice the bytes an op
    allocates; 28 bytes per parameter for the Adam update: fp32 master, m, v read and written,
    bf16 gradient read, bf16 weight written). Columns: time (s), tensor, bytes, kind, category,
    op, phase.
    """
    L = _count(num_layers, "num_layers")
    s = _count(seq_len, "seq_len")
    b = _count(micro_batch, "micro_batch")
    h = _count(hidden, "hidden")
    a = _count(num_heads, "num_heads")
    v = _count(vocab_size, "vocab_size")
    if recompute not in ("none", "selective", "full"):
        raise ValueError(f"recompute must be 'none', 'selective' or 'full', got {recompute!r}")
    for name, rate in (
        ("flops_per_second", flops_per_second),
        ("bytes_per_second", bytes_per_second),
    ):
        if (
            isinstance(rate, bool)
            or not isinstance(rate, int | float)
            or not rate > 0
            or not math.isfinite(rate)
        ):
            raise ValueError(f"{name} must be a finite number > 0, got {rate!r}")

    unit = {"sbh": float(s * b * h), "as2b": float(a * s * s * b)}
    sbh2, bs2h = float(s * b * h * h), float(b * s * s * h)
    layer_params = 12.0 * h * h + 13.0 * h
    head_params = float(v * h + 2 * h)  # tied embedding / output layer, final layer norm
    rec = _StepRecorder(float(flops_per_second), float(bytes_per_second))

    # Parameters and optimizer state: live before the step starts and after it ends.
    groups = [(f"L{i}", layer_params) for i in range(L)] + [("head", head_params)]
    rec.op(
        "model and optimizer state",
        "setup",
        allocs=tuple(
            (f"{g}.{kind}", per_param * n, category)
            for g, n in groups
            for kind, per_param, category in (
                ("weights", 2.0, "weight"),
                ("adam", 12.0, "optimizer"),
            )
        ),
        io_bytes=0.0,
    )

    def layer_forward(i: int, saved: frozenset[str], recomputing: bool = False) -> dict[str, str]:
        """Run a layer's ops; returns name -> tensor id of what it allocated (plus "out")."""
        ops = _LAYER_FORWARD
        ids = {"x": f"L{i}.x"}
        last_use: dict[str, str] = {}
        for op, _, outs, reads in ops:
            for name in reads:
                last_use[name] = op
            for name, _, _ in outs:
                last_use.setdefault(name, op)  # never read in forward (dropout masks)
        for op, (c_sbh2, c_bs2h), outs, _reads in ops:
            allocs = []
            for name, per_elem, u in outs:
                if name == "out" and i + 1 <= L:
                    ids[name] = rec.new_id(f"L{i + 1}.x" if i + 1 < L else "head.x")
                else:
                    ids[name] = rec.new_id(f"L{i}.{name}")
                keep = name in saved or (name == "out" and not recomputing)
                allocs.append(
                    (ids[name], per_elem * unit[u], "activation" if keep else "workspace")
                )
            frees = tuple(
                ids[n]
                for n, last in last_use.items()
                if last == op and n not in saved and n != "out" and n in ids
            )
            rec.op(
                f"L{i}.{op}_recompute" if recomputing else f"L{i}.{op}",
                "backward" if recomputing else "forward",
                flops=c_sbh2 * sbh2 + c_bs2h * bs2h,
                allocs=tuple(allocs),
                frees=frees,
            )
        return ids

    # Forward: embedding, layers, head, loss.
    rec.op("embedding", "forward", allocs=(("L0.x", 2.0 * unit["sbh"], "activation"),))
    saved = _SAVED[recompute]
    kept: list[dict[str, str]] = []
    for i in range(L):
        kept.append(layer_forward(i, saved))
    sbv = float(s * b * v)
    rec.op("ln_f", "forward", allocs=(("head.ln_out", 2.0 * unit["sbh"], "activation"),))
    rec.op(
        "lm_head",
        "forward",
        flops=2.0 * s * b * h * v,
        allocs=(("head.logits", 2.0 * sbv, "workspace"),),
    )
    rec.op(
        "logits_to_fp32",
        "forward",
        allocs=(("head.logits_fp32", 4.0 * sbv, "workspace"),),
        frees=("head.logits",),
    )
    rec.op(
        "log_softmax",
        "forward",
        allocs=(("head.log_probs", 4.0 * sbv, "activation"),),
        frees=("head.logits_fp32",),
    )
    rec.op("nll_loss", "forward", io_bytes=4.0 * s * b)

    # Backward: loss and head, then the layers in reverse.
    rec.op("nll_loss_bwd", "backward", allocs=(("head.d_log_probs", 4.0 * sbv, "workspace"),))
    rec.op(
        "log_softmax_bwd", "backward",
        allocs=(("head.d_logits_fp32", 4.0 * sbv, "workspace"),),
        frees=("head.d_log_probs", "head.log_probs"),
    )  # fmt: skip
    rec.op(
        "logits_to_fp32_bwd",
        "backward",
        allocs=(("head.d_logits", 2.0 * sbv, "workspace"),),
        frees=("head.d_logits_fp32",),
    )
    rec.op(
        "lm_head_bwd",
        "backward",
        flops=4.0 * s * b * h * v,
        allocs=(
            ("head.d_ln_out", 2.0 * unit["sbh"], "workspace"),
            ("head.grad", 2.0 * v * h, "gradient"),
        ),
        frees=("head.d_logits", "head.ln_out"),
    )
    rec.op(
        "ln_f_bwd",
        "backward",
        allocs=(
            (f"L{L - 1}.d_out", 2.0 * unit["sbh"], "workspace"),
            ("head.ln_f.grad", 4.0 * h, "gradient"),
        ),
        frees=("head.d_ln_out", "head.x"),
    )

    for i in reversed(range(L)):
        ids = kept[i]
        if recompute == "full":  # rerun the layer forward, keeping everything (as "none")
            ids = layer_forward(i, _SAVED["none"], recomputing=True)
            rec.op(f"L{i}.recompute_done", "backward", frees=(ids["out"],), io_bytes=0.0)
        grads = {"d_out": f"L{i}.d_out"}
        for op, (c_sbh2, c_bs2h), outs, (w_h2, w_h), consumed, released in _LAYER_BACKWARD:
            if op == "attn_v_bwd" and recompute == "selective":
                # Rerun the core attention (QKᵀ, softmax, dropout, attention over V; §5): its
                # a·s²·b tensors are kept for the backward that follows, the context is not.
                core = tuple(o for o in _LAYER_FORWARD if o[0] in _CORE_ATTENTION)
                for fop, (f_sbh2, f_bs2h), fouts, _reads in core:
                    allocs = []
                    for name, per_elem, u in fouts:
                        ids[name] = rec.new_id(f"L{i}.{name}")
                        temporary = name in ("scores", "ctx")
                        category = "workspace" if temporary else "activation"
                        allocs.append((ids[name], per_elem * unit[u], category))
                    frees = {"softmax": (ids["scores"],), "attn_v": (ids["ctx"],)}.get(fop, ())
                    rec.op(
                        f"L{i}.{fop}_recompute",
                        "backward",
                        flops=f_sbh2 * sbh2 + f_bs2h * bs2h,
                        allocs=tuple(allocs),
                        frees=frees,
                    )
            allocs = []
            for name, per_elem, u in outs:
                target = f"L{i - 1}.d_out" if name == "d_x" and i > 0 else f"L{i}.{name}"
                if name == "d_x" and i == 0:
                    target = "embedding.d_x"
                grads[name] = target
                allocs.append((target, per_elem * unit[u], "workspace"))
            if w_h2 or w_h:
                allocs.append(
                    (
                        f"L{i}.{op.removesuffix('_bwd')}.grad",
                        2.0 * (w_h2 * h * h + w_h * h),
                        "gradient",
                    )
                )
            frees = tuple(grads[g] for g in consumed) + tuple(ids[t] for t in released)
            rec.op(
                f"L{i}.{op}",
                "backward",
                flops=c_sbh2 * sbh2 + c_bs2h * bs2h,
                allocs=tuple(allocs),
                frees=frees,
            )
    # The tied embedding's gradient accumulates into head.grad (already allocated).
    rec.op("embedding_bwd", "backward", frees=("embedding.d_x",), io_bytes=2.0 * unit["sbh"])

    # Optimizer: Adam per group with an fp32 scratch the size of its parameters, then zero_grad.
    for g, n in groups:
        rec.op(f"{g}.adam_step", "optimizer", allocs=((f"{g}.adam_scratch", 4.0 * n, "workspace"),),
               frees=(f"{g}.adam_scratch",), io_bytes=28.0 * n)  # fmt: skip
    grads_left = tuple(t for t, (_, c) in rec.live.items() if c == "gradient")
    rec.op("zero_grad", "optimizer", frees=grads_left, io_bytes=0.0)
    return pd.DataFrame(
        rec.rows, columns=["time", "tensor", "bytes", "kind", "category", "op", "phase"]
    )


def live_bytes_by_category(events: pd.DataFrame) -> tuple[NDArray[np.float64], pd.DataFrame]:
    """Live bytes over time by category: (times, a column per category) summing to live_bytes (cost05).

    Same times and ordering rule as :func:`live_bytes`; columns in :data:`STEP_CATEGORIES` order
    for those present, then any other category in order of first allocation. Vectorized: one sort
    and a cumulative sum per category (:func:`_stacked_levels`, which the explorer shares).
    """
    life = lifetimes(events)
    present = list(dict.fromkeys(life["category"].astype(str)))
    order = [c for c in STEP_CATEGORIES if c in present] + [
        c for c in present if c not in STEP_CATEGORIES
    ]
    freed = life["free_time"].notna().to_numpy()
    nbytes = life["bytes"].to_numpy(dtype=float)
    category = life["category"].astype(str).to_numpy(dtype=object)
    times, levels = _stacked_levels(
        np.concatenate(
            [life["alloc_time"].to_numpy(dtype=float), life["free_time"].to_numpy()[freed]]
        ),
        np.concatenate([nbytes, nbytes[freed]]),
        np.concatenate([np.ones(len(life), dtype=bool), np.zeros(int(freed.sum()), dtype=bool)]),
        np.concatenate([category, category[freed]]),
        order,
    )
    return times, pd.DataFrame(dict(zip(order, levels, strict=True)), columns=order)


def _stacked_levels(
    time: NDArray[np.float64],
    nbytes: NDArray[np.float64],
    is_alloc: NDArray[np.bool_],
    category: NDArray[np.object_],
    categories: list[str] | tuple[str, ...],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The sweep by category, without validation: (distinct times, levels[category, time]).

    One event per array element, in any order. Sorted by time with frees before allocations,
    the level of each category after the last event at each time (so a tensor allocated and freed
    at one time adds nothing). Used by :func:`live_bytes_by_category` and by cost05's explorer on
    the generator's events, which need no validation.
    """
    order = np.lexsort((is_alloc, time))  # by time; at equal times frees (False) first
    t = time[order]
    delta = np.where(is_alloc[order], nbytes[order], -nbytes[order])
    last = np.append(np.flatnonzero(t[1:] != t[:-1]), len(t) - 1)
    cat = category[order]
    levels = np.vstack(
        [np.cumsum(np.where(cat == c, delta, 0.0))[last] for c in categories]
    ).reshape(len(categories), len(last))
    return t[last], levels
