"""Collective-communication cost models, nccl-tests bandwidths, alpha-beta fits and a loopback
benchmark (cost07).

Conventions: sizes in bytes, times in seconds, bandwidths in bytes per second (the lesson prints
GB/s = 1e9 B/s, as nccl-tests does). ``alpha`` is the latency of one message (s), ``beta`` the
transfer time per byte of one link (s/B, the inverse of the link bandwidth), ``gamma`` the
reduction (addition) time per byte (s/B).

* **Algorithm and bus bandwidth** (NVIDIA nccl-tests, doc/PERFORMANCE.md): algbw = S / t, and
  busbw = algbw × a factor that makes the number comparable with the bandwidth of one link for
  any rank count n: 2(n-1)/n for all-reduce, (n-1)/n for all-gather, reduce-scatter and
  all-to-all, 1 for broadcast and reduce. For all-gather and reduce-scatter S is the size of the
  *total* array, the per-rank count × n × the element size.
* **Ring all-reduce** (a reduce-scatter then an all-gather around a ring, Patarasuk & Yuan 2009,
  "Bandwidth optimal all-reduce algorithms for clusters of workstations", JPDC 69(2)):
  T = 2(n-1)·α + 2·((n-1)/n)·S·β + ((n-1)/n)·S·γ.
* **Binomial-tree all-reduce**: a binomial-tree reduce to one root followed by a binomial-tree
  broadcast of the whole buffer, in the α-β-γ cost model of Thakur, Rabenseifner & Gropp 2005
  ("Optimization of collective communication operations in MPICH", IJHPCA 19(1)):
  T = 2⌈log₂ n⌉·(α + S·β) + ⌈log₂ n⌉·S·γ. NCCL's tree algorithm (a pipelined double binary
  tree) is a different model: it splits the buffer into chunks and overlaps the levels.
* **Fit**: time = α + β·S by ordinary least squares over a message-size sweep.

The loopback benchmark (:func:`pingpong_sweep`, :func:`ring_allreduce_measure`) runs between
local processes over a Unix socket pair (multiprocessing's duplex Pipe), optionally with busy processes competing for the cores. It measures
this machine's kernel and memory copies, not a network: see the lesson for what a cluster shows.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from course_lib.validate import choice, nonnegative_array, number, whole_count

__all__ = [
    "COLLECTIVES",
    "AlphaBeta",
    "algorithm_bandwidth",
    "bus_bandwidth",
    "busbw_factor",
    "fit_alpha_beta",
    "pingpong_sweep",
    "ring_all_reduce_time",
    "ring_allreduce_measure",
    "ring_tree_crossover",
    "simulate_ring_all_reduce",
    "synthetic_sweep",
    "tree_all_reduce_time",
]

FloatArray = NDArray[np.float64]

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "reduce")
"""The collectives whose bus-bandwidth factor nccl-tests documents (doc/PERFORMANCE.md)."""


# --- bandwidths (nccl-tests) -----------------------------------------------------------------


def busbw_factor(collective: str, num_ranks: int) -> float:
    """busbw / algbw: 2(n-1)/n all-reduce; (n-1)/n all-gather, reduce-scatter, all-to-all; 1
    broadcast, reduce (nccl-tests doc/PERFORMANCE.md, "Summary"; cost07)."""
    c, n = choice(collective, "collective", COLLECTIVES), whole_count(num_ranks, "num_ranks")
    if c == "all_reduce":
        return 2.0 * (n - 1) / n
    if c in ("all_gather", "reduce_scatter", "all_to_all"):
        return (n - 1) / n
    return 1.0


def algorithm_bandwidth(size_bytes: ArrayLike, time: ArrayLike) -> FloatArray | float:
    """algbw = S / t in B/s (nccl-tests doc/PERFORMANCE.md; S the total array size for all-gather
    and reduce-scatter; cost07)."""
    s = nonnegative_array(size_bytes, "size_bytes")
    t = nonnegative_array(time, "time")
    if (t == 0).any():
        raise ValueError("time must be > 0 (a zero time has no bandwidth)")
    out = s / t
    return float(out) if out.ndim == 0 else out


def bus_bandwidth(algbw: ArrayLike, collective: str, num_ranks: int) -> FloatArray | float:
    """busbw = algbw × busbw_factor(collective, n), comparable with one link's bandwidth
    (nccl-tests doc/PERFORMANCE.md; cost07)."""
    a = nonnegative_array(algbw, "algbw")
    out = a * busbw_factor(collective, num_ranks)
    return float(out) if out.ndim == 0 else out


# --- alpha-beta cost models ------------------------------------------------------------------


def ring_all_reduce_time(
    size_bytes: ArrayLike, num_ranks: int, alpha: float, beta: float, gamma: float = 0.0
) -> FloatArray | float:
    """Ring all-reduce, T = 2(n-1)α + 2((n-1)/n)Sβ + ((n-1)/n)Sγ (reduce-scatter + all-gather;
    Patarasuk & Yuan 2009; cost07). 0 for one rank."""
    s = nonnegative_array(size_bytes, "size_bytes")
    n = whole_count(num_ranks, "num_ranks")
    a, b, g = number(alpha, "alpha"), number(beta, "beta"), number(gamma, "gamma")
    out = 2 * (n - 1) * a + 2 * ((n - 1) / n) * s * b + ((n - 1) / n) * s * g
    return float(out) if out.ndim == 0 else out


def tree_all_reduce_time(
    size_bytes: ArrayLike, num_ranks: int, alpha: float, beta: float, gamma: float = 0.0
) -> FloatArray | float:
    """Binomial-tree reduce + binomial-tree broadcast, T = 2⌈log₂ n⌉(α + Sβ) + ⌈log₂ n⌉Sγ
    (Thakur, Rabenseifner & Gropp 2005; not NCCL's pipelined double binary tree; cost07)."""
    s = nonnegative_array(size_bytes, "size_bytes")
    n = whole_count(num_ranks, "num_ranks")
    a, b, g = number(alpha, "alpha"), number(beta, "beta"), number(gamma, "gamma")
    levels = (n - 1).bit_length()  # ⌈log₂ n⌉ exactly
    out = 2 * levels * (a + s * b) + levels * s * g
    return float(out) if out.ndim == 0 else out


def ring_tree_crossover(num_ranks: int, alpha: float, beta: float, gamma: float = 0.0) -> float:
    """Size S* (bytes) where the ring and binomial-tree all-reduce take equal time: the tree is
    faster below it, the ring above. With L = ⌈log₂ n⌉ and f = (n-1)/n,
    S* = 2(n-1-L)α / ((2β + γ)(L - f)) (equate the two models; cost07). 0.0 when the ring is
    never slower (n <= 3: n - 1 <= L); inf when β = γ = 0 (the ring always pays more α)."""
    n = whole_count(num_ranks, "num_ranks")
    a, b, g = number(alpha, "alpha"), number(beta, "beta"), number(gamma, "gamma")
    levels, f = (n - 1).bit_length(), (n - 1) / n
    if n - 1 <= levels:
        return 0.0
    per_byte = (2 * b + g) * (levels - f)
    if per_byte == 0:
        return math.inf if a > 0 else 0.0
    return 2 * (n - 1 - levels) * a / per_byte


def simulate_ring_all_reduce(
    buffers: ArrayLike, alpha: float = 0.0, beta: float = 0.0, gamma: float = 0.0
) -> tuple[FloatArray, float, FloatArray]:
    """Run a ring all-reduce step by step on an (n, count) array of per-rank buffers (cost07).

    Reduce-scatter (n-1 steps: rank r sends chunk r-k, adds the chunk it receives), then
    all-gather (n-1 steps: forward the reduced chunks). Each step costs α + (largest chunk)·β,
    plus (largest chunk)·γ for the additions of the reduce-scatter; every rank sends to its right
    neighbour at once. Returns (the reduced buffers, the elapsed time, bytes sent per rank) — the
    brute force that :func:`ring_all_reduce_time` and the busbw factor are tested against.
    """
    x = np.array(buffers, dtype=float)
    if x.ndim != 2 or x.shape[0] < 1:
        raise ValueError(f"buffers must be a 2-D (num_ranks, count) array, got shape {x.shape}")
    n, count = x.shape
    a, b, g = number(alpha, "alpha"), number(beta, "beta"), number(gamma, "gamma")
    bounds = np.linspace(0, count, n + 1).round().astype(int)
    chunk = [slice(bounds[i], bounds[i + 1]) for i in range(n)]
    item = x.itemsize
    sent = np.zeros(n)
    elapsed = 0.0
    for k in range(n - 1):  # reduce-scatter
        outgoing = [x[r, chunk[(r - k) % n]].copy() for r in range(n)]
        for r in range(n):
            dst, c = (r + 1) % n, (r - k) % n
            x[dst, chunk[c]] += outgoing[r]
            sent[r] += outgoing[r].size * item
        biggest = max(o.size for o in outgoing) * item
        elapsed += a + biggest * b + biggest * g
    for k in range(n - 1):  # all-gather
        outgoing = [x[r, chunk[(r + 1 - k) % n]].copy() for r in range(n)]
        for r in range(n):
            dst, c = (r + 1) % n, (r + 1 - k) % n
            x[dst, chunk[c]] = outgoing[r]
            sent[r] += outgoing[r].size * item
        biggest = max(o.size for o in outgoing) * item
        elapsed += a + biggest * b
    return x, elapsed, sent


# --- fitting ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class AlphaBeta:
    """A fitted latency-bandwidth line, time = alpha + beta · size (cost07)."""

    alpha: float  # s, the time of an empty message
    beta: float  # s/B, 1 / bandwidth

    @property
    def bandwidth(self) -> float:
        """1 / beta in B/s (inf if beta is 0)."""
        return math.inf if self.beta == 0 else 1.0 / self.beta


def fit_alpha_beta(sizes: ArrayLike, times: ArrayLike, *, relative: bool = False) -> AlphaBeta:
    """Least squares of time = α + β·S over a message-size sweep (cost07).

    Ordinary least squares by default: minimise Σ (t_i − α − βS_i)². With ``relative=True``,
    minimise the relative residuals Σ ((t_i − α − βS_i) / t_i)² instead, so that on a sweep
    whose sizes grow geometrically the small messages (which carry α) count as much as the
    large ones (which carry β). Needs at least two distinct sizes; sizes >= 0 and times > 0,
    finite, of equal length.
    """
    s = nonnegative_array(sizes, "sizes").ravel()
    t = nonnegative_array(times, "times").ravel()
    if len(s) != len(t):
        raise ValueError(f"sizes and times differ in length: {len(s)} vs {len(t)}")
    if len(np.unique(s)) < 2:
        raise ValueError(
            "sizes must hold at least two distinct message sizes to fit α and β, "
            f"got {np.unique(s).tolist()}"
        )
    if (t == 0).any():
        raise ValueError(f"times[{int(np.argmax(t == 0))}] = 0: a message takes time")
    w = 1.0 / t**2 if relative else np.ones_like(t)
    w = w / w.sum()
    mean_s, mean_t = np.dot(w, s), np.dot(w, t)
    ds = s - mean_s
    beta = float(np.dot(w * ds, t - mean_t) / np.dot(w * ds, ds))
    alpha = float(mean_t - beta * mean_s)
    return AlphaBeta(alpha=alpha, beta=beta)


def synthetic_sweep(
    sizes: ArrayLike,
    alpha: float,
    beta: float,
    *,
    noise: float = 0.03,
    seed: int = 0,
) -> FloatArray:
    """Benchmark-like times (α + βS)·exp(ε), ε ~ N(0, noise²), seeded — SYNTHETIC (cost07)."""
    s = nonnegative_array(sizes, "sizes")
    a, b = number(alpha, "alpha"), number(beta, "beta")
    sd = number(noise, "noise")
    rng = np.random.default_rng(seed)
    return (a + b * s) * np.exp(rng.normal(0.0, sd, size=s.shape))


# --- the loopback benchmark (real measurements on this machine) ------------------------------


def _context() -> multiprocessing.context.BaseContext:
    """fork on Linux (fast, nothing to import in the child), spawn elsewhere."""
    if sys.platform.startswith("linux"):
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def _spin(seconds: float) -> None:
    """A competing process: keep one core busy for `seconds`."""
    end = time.perf_counter() + seconds
    x = 0
    while time.perf_counter() < end:
        x += 1


def _echo(conn, max_bytes: int, timeout: float) -> None:
    """Ping-pong partner: send every message straight back; stop on an empty one or a timeout."""
    buf = bytearray(max(max_bytes, 1))
    try:
        conn.send_bytes(b"r")  # ready: the parent starts its clock only after this arrives
        while conn.poll(timeout):
            n = conn.recv_bytes_into(buf)
            if n == 0:
                break
            conn.send_bytes(buf, 0, n)
    except (EOFError, OSError):
        pass
    finally:
        conn.close()


def _start_competitors(ctx, competitors: int, seconds: float) -> list:
    procs = [ctx.Process(target=_spin, args=(seconds,), daemon=True) for _ in range(competitors)]
    for p in procs:
        p.start()
    return procs


def _stop(procs: list) -> None:
    for p in procs:
        if p.is_alive():
            p.terminate()
    for p in procs:
        p.join(1.0)


def _spread(samples: FloatArray) -> tuple[float, float, float]:
    return tuple(float(v) for v in np.percentile(samples, [50, 10, 90]))  # type: ignore[return-value]


def pingpong_sweep(
    sizes: Sequence[int],
    *,
    repeats: int = 15,
    competitors: int = 0,
    timeout: float = 2.0,
    start_timeout: float = 60.0,
) -> pd.DataFrame:
    """Real one-way message times between two local processes over a socket pair (cost07).

    For each size, `repeats` round trips (after one warm-up); one-way time = round trip / 2.
    ``competitors`` busy processes run meanwhile. Returns a DataFrame: size_bytes, time (median
    one-way, s), p10, p90, repeats. The partner sends a ready byte once it runs; raises
    TimeoutError if that byte takes more than ``start_timeout`` seconds (process start-up, slow
    under the spawn start method, is never timed) or an echo more than ``timeout`` seconds (the
    partner and competitors are always stopped).
    """
    s = [int(v) for v in nonnegative_array(list(sizes), "sizes")]
    if not s or min(s) < 1:
        raise ValueError("sizes must be a non-empty list of message sizes >= 1 byte")
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    ctx = _context()
    parent, child = ctx.Pipe(duplex=True)
    partner = ctx.Process(target=_echo, args=(child, max(s), timeout), daemon=True)
    others = _start_competitors(ctx, competitors, 4 * timeout + start_timeout)
    rows = []
    try:
        partner.start()
        child.close()
        if not parent.poll(start_timeout):  # start-up (slow under spawn) is not timed
            raise TimeoutError(
                f"pingpong_sweep: the partner did not start within {start_timeout} s"
            )
        parent.recv_bytes()
        buf = bytearray(max(s))
        for size in s:
            payload = os.urandom(size)
            samples = []
            for i in range(repeats + 1):
                start = time.perf_counter()
                parent.send_bytes(payload)
                if not parent.poll(timeout):
                    raise TimeoutError(f"pingpong_sweep: no echo of {size} B within {timeout} s")
                parent.recv_bytes_into(buf)
                if i:  # the first round trip is a warm-up
                    samples.append((time.perf_counter() - start) / 2)
            med, lo, hi = _spread(np.array(samples))
            rows.append((size, med, lo, hi, repeats))
        parent.send_bytes(b"")
    finally:
        parent.close()
        _stop([partner, *others])
    return pd.DataFrame(rows, columns=["size_bytes", "time", "p10", "p90", "repeats"])


_DIRECT_SEND_BYTES = 32 * 1024
"""Chunks up to this size are sent before receiving (they fit a Unix socket's buffer)."""


def _ring_rank(
    rank, n, count, repeats, left, right, barrier, results, timeout, start_timeout
) -> None:
    """One rank of the process ring: `repeats` numpy ring all-reduces of `count` float64."""
    rng = np.random.default_rng(rank)
    bounds = np.linspace(0, count, n + 1).round().astype(int)
    chunk = [slice(bounds[i], bounds[i + 1]) for i in range(n)]
    incoming = np.empty(int(np.diff(bounds).max()) if n > 1 else 1)
    times, totals = [], []
    try:
        for i in range(repeats + 1):
            data = rng.random(count)
            original_sum = data.copy()
            barrier.wait(start_timeout if i == 0 else timeout)  # the first waits for start-up
            start = time.perf_counter()
            for phase in ("reduce_scatter", "all_gather"):
                for k in range(n - 1):
                    send_c = (rank - k) % n if phase == "reduce_scatter" else (rank + 1 - k) % n
                    recv_c = (send_c - 1) % n
                    outgoing = memoryview(data[chunk[send_c]])
                    sender = None
                    if outgoing.nbytes <= _DIRECT_SEND_BYTES:  # fits the socket buffer
                        right.send_bytes(outgoing)
                    else:  # a large chunk: send while receiving, or the ring deadlocks
                        sender = threading.Thread(target=right.send_bytes, args=(outgoing,))
                        sender.start()
                    if not left.poll(timeout):
                        raise TimeoutError(f"rank {rank}: nothing from the left within {timeout} s")
                    m = left.recv_bytes_into(incoming) // 8
                    if phase == "reduce_scatter":
                        data[chunk[recv_c]] += incoming[:m]
                    else:
                        data[chunk[recv_c]] = incoming[:m]
                    if sender is not None:
                        sender.join(timeout)
            times.append((start, time.perf_counter()))
            totals.append((float(original_sum.sum()), float(data.sum())))
        results.send(("done", rank, times[1:], totals))
    except Exception as exc:  # reported to the parent, which raises
        results.send(("error", rank, repr(exc), False))
    finally:
        results.close()


def ring_allreduce_measure(
    num_ranks: int = 3,
    size_bytes: int = 4 * 2**20,
    *,
    repeats: int = 5,
    competitors: int = 0,
    timeout: float = 2.0,
    start_timeout: float = 60.0,
) -> dict[str, float]:
    """Real ring all-reduce of `size_bytes` of float64 among `num_ranks` local processes (cost07).

    Reduce-scatter then all-gather over socket pairs between ring neighbours, numpy additions; every
    rank checks that all ranks end with the same total. Time of one all-reduce = the slowest
    rank's, from a common barrier. Returns median, p10, p90 (s), size_bytes, num_ranks,
    repeats. The first barrier waits up to ``start_timeout`` s for every rank to start (slow under
    the spawn start method, never timed); TimeoutError if a rank stalls for ``timeout`` s after
    that; every process is stopped.
    """
    n = whole_count(num_ranks, "num_ranks")
    if n < 2:
        raise ValueError(f"num_ranks must be >= 2 for a ring, got {n}")
    count = int(number(size_bytes, "size_bytes", positive=True)) // 8
    if count < n:
        raise ValueError(f"size_bytes must hold at least num_ranks float64s, got {size_bytes}")
    ctx = _context()
    links = [ctx.Pipe(duplex=True) for _ in range(n)]  # links[r]: rank r -> rank r + 1
    barrier = ctx.Barrier(n)
    report_r, report_w = ctx.Pipe(duplex=False)
    procs = [
        ctx.Process(
            target=_ring_rank,
            args=(r, n, count, repeats, links[(r - 1) % n][0], links[r][1], barrier)
            + (report_w, timeout, start_timeout),
            daemon=True,
        )
        for r in range(n)
    ]
    others = _start_competitors(ctx, competitors, 4 * timeout + start_timeout)
    per_rank: dict[int, list[float]] = {}
    totals: dict[int, list[tuple[float, float]]] = {}
    try:
        for p in procs:
            p.start()
        report_w.close()
        for recv_end, send_end in links:
            recv_end.close()
            send_end.close()
        for _ in range(n):
            if not report_r.poll(start_timeout + timeout * (repeats + 2)):
                raise TimeoutError(f"ring_allreduce_measure: a rank stalled for {timeout} s")
            kind, rank, a, b = report_r.recv()
            if kind == "error":
                raise RuntimeError(f"ring_allreduce_measure: rank {rank} failed: {a}")
            per_rank[rank], totals[rank] = a, b
    finally:
        report_r.close()
        _stop([*procs, *others])
    # Every repeat: the reduced buffer's sum on each rank equals the sum of all ranks' inputs.
    sums = np.array([totals[r] for r in range(n)])  # (rank, repeat, [input sum, output sum])
    expected = sums[:, :, 0].sum(axis=0)
    if not np.allclose(sums[:, :, 1], expected, rtol=1e-9):
        raise RuntimeError("ring_allreduce_measure: the ranks' results differ from the sum")
    # (rank, repeat, [start, end]) on the shared monotonic clock: an all-reduce runs from the
    # moment the last rank enters it until the last rank leaves it.
    spans = np.array([per_rank[r] for r in range(n)])
    samples = spans[:, :, 1].max(axis=0) - spans[:, :, 0].max(axis=0)
    med, lo, hi = _spread(samples)
    return {
        "num_ranks": n,
        "size_bytes": count * 8,
        "time": med,
        "p10": lo,
        "p90": hi,
        "repeats": repeats,
    }
