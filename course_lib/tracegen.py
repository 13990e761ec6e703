"""Synthetic, deterministic profiles of a data-parallel training step on several ranks (Module 1).

:func:`generate_dp_profile` simulates ``num_steps`` training steps of a transformer-like model with
``num_layers`` layers on ``num_ranks`` data-parallel ranks and returns, per rank, the events a
PyTorch profiler (Kineto) trace would hold, in the same DataFrame form :func:`course_lib.trace.
load_trace` returns. :func:`write_dp_profile` writes one Kineto JSON per rank (``rank_<r>.json.gz``).
Everything is synthetic (the metadata says so), and the same arguments give byte-identical files.

What one step holds, per rank (CPU thread ``pid`` = a process id, ``tid`` = ``pid``; GPU events
``pid`` = device, ``tid`` = stream):

* ``ProfilerStep#k`` (user_annotation) spanning the step; ``Optimizer.zero_grad#AdamW.zero_grad``;
  ``DataLoader`` (user_annotation, CPU only, the GPU idles meanwhile);
* the input copy: cpu_op ``aten::copy_`` -> ``cudaMemcpyAsync`` -> gpu_memcpy on the compute
  stream (:data:`COMPUTE_STREAM`);
* ``DistributedDataParallel.forward``: per layer cpu_ops ``aten::linear`` and ``aten::gelu``, each
  launching one kernel (``cudaLaunchKernel``, cat cuda_runtime) on the compute stream;
* backward, layers in reverse: ``GeluBackward0`` (one kernel) and ``AddmmBackward0`` (data-grad
  and weight-grad GEMMs); a layer's gradient is ready when its weight-grad kernel ends;
* gradient buckets (layers grouped from the last one, as DDP does): when the CPU has launched the
  last backward kernel of a bucket it runs ``record_param_comms`` (``cudaEventRecord``,
  ``cudaStreamWaitEvent``, ``cuLaunchKernelEx`` (cat cuda_driver)); the NCCL kernel
  ``ncclDevKernel_AllReduce_Sum_f32_RING_*`` runs on :data:`COMM_STREAM` and starts when the
  bucket is ready on the GPU, its launch has arrived and the previous all-reduce is done.
  Cross-rank coupling: a collective finishes when the slowest rank has arrived, so bucket b's
  all-reduce ENDS AT THE SAME TRUE TIME on every rank: end = max_r(start_r) + bytes_b / bandwidth
  (``bandwidth`` is the algorithm bandwidth, bytes/s, as nccl-tests' algbw; the duration is
  jittered once per collective, shared by all ranks). Early ranks' NCCL kernels are longer: they
  wait.
* ``Optimizer.step#AdamW.step`` (cpu_op ``aten::_fused_adamw_`` -> one kernel) starts on the GPU
  after the last all-reduce; ``aten::item`` copies the loss to the host (memcpy DtoH) and
  ``cudaStreamSynchronize`` blocks the CPU until the GPU is done, so steps do not pipeline.

Every launch and the GPU activity it enqueued share ``args.correlation``; flow events ``ph``
"s"/"f", cat "ac2g", ``id`` = correlation link them as Kineto does. Queue delay (kernel start -
launch end) is at least ``min_queue_delay`` in true time; the CPU runs ahead, so most are ms long.

Clocks. Rank r's timestamps are read on its own host clock (GPU times are mapped to the host
clock, as CUPTI/Kineto do); every rank is modelled as a host of its own, whereas processes on one
real host read the same clock:  host_r(t) = θ_r + (1 + ρ_r·1e-6)·t  with t the true time in
seconds since ``baseTimeNanoseconds``, θ_r = ``clock_offset`` (s), ρ_r = ``clock_drift`` (ppm) —
the model of :class:`course_lib.clocks.DriftFit`. So t_A = t_B + (θ_A − θ_B) at t ≈ 0, the
convention t_A = t_B + θ of course_lib.clocks. Rank 0 is the reference clock (θ_0 = ρ_0 = 0)
unless explicit per-rank sequences are given. The true values are in ``df.attrs`` of the
generated frames ("clock_offset", "clock_drift"), never in the written files.

Messages for clock alignment (the choice documented here): during each all-reduce every rank
exchanges one message with each ring neighbour in both directions, recorded as instant events
(``ph`` "i", cat "p2p", name "send" or "recv", on the communication stream) with args
``{"msg_id", "peer", "bytes"}`` (an invention of this generator: real Kineto traces record
NCCL kernels, not the messages inside them). A send is stamped when the rank's NCCL kernel
starts; the matching receive when the message has arrived (at least ``p2p_latency`` later, true
time) and the receiver has itself reached the collective. :func:`message_pairs` turns them into a table (msg_id, src,
dst, send_ts, recv_ts), the input of :func:`course_lib.clocks.offset_bounds`.

Not modelled: slow-down of kernels that overlap communication (SM and memory-bandwidth
contention; :func:`course_lib.overlap.bucketed_allreduce_timeline` has a contention factor), the
autograd engine's separate backward thread (all CPU events are on one thread here), NCCL's real
protocol choice (the ``_LL``/``_SIMPLE`` suffix only follows message size), persistent stragglers.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from course_lib.trace import _frame_from_events, data_path, load_trace, write_trace

__all__ = [
    "BASE_TIME_NS",
    "COMM_STREAM",
    "COMPUTE_STREAM",
    "SIDE_STREAM",
    "generate_dp_profile",
    "load_dp_profile",
    "message_pairs",
    "true_to_host",
    "with_copies_and_syncs",
    "write_dp_profile",
]

COMPUTE_STREAM = 7
"""Stream id (GPU event tid) of the compute stream (PyTorch's default stream shows as 7)."""
COMM_STREAM = 20
"""Stream id (GPU event tid) of the NCCL communication stream."""
SIDE_STREAM = 24
"""Stream id of the side stream :func:`with_copies_and_syncs` puts its prefetch on."""
BASE_TIME_NS = 1_790_857_026_000_000_000
"""baseTimeNanoseconds of generated traces: a Unix time (ns) on Kineto's 3-month grid (2026-10)."""
GPUS_PER_HOST = 8
"""Rank r uses device r % GPUS_PER_HOST."""
CPU_PID0 = 41_000
"""Host process id of rank r is CPU_PID0 + r (its main thread id is the same)."""


def true_to_host(t: Any, *, offset: float, drift: float) -> Any:
    """Host clock reading of true time t: offset + (1 + drift·1e-6)·t (s; drift in ppm) (cost02)."""
    return offset + (1.0 + drift * 1e-6) * t


def _per_rank(value: float | Sequence[float], name: str, num_ranks: int, rng) -> np.ndarray:
    """Scalar x -> rank 0 gets 0, others U(-x, x) from ``rng``; a sequence is taken as given."""
    if isinstance(value, (int, float, np.integer, np.floating)):
        x = float(value)
        if not math.isfinite(x) or x < 0:
            raise ValueError(
                f"{name} must be a finite magnitude >= 0 or a per-rank sequence, got {value!r}"
            )
        out = rng.uniform(-x, x, size=num_ranks)
        out[0] = 0.0
        return out
    arr = np.asarray(value, dtype=float)
    if arr.shape != (num_ranks,) or not np.all(np.isfinite(arr)):
        raise ValueError(
            f"{name} must be a scalar or {num_ranks} finite per-rank values, got {value!r}"
        )
    return arr


def _check_positive(**kwargs: float) -> None:
    for name, v in kwargs.items():
        if not (
            isinstance(v, (int, float, np.integer, np.floating)) and math.isfinite(v) and v > 0
        ):
            raise ValueError(f"{name} must be a positive finite number, got {v!r}")


def _buckets(num_layers: int, num_buckets: int) -> list[list[int]]:
    """Layers grouped into buckets from the last layer backwards (DDP's reverse order)."""
    order = list(range(num_layers - 1, -1, -1))
    return [list(map(int, b)) for b in np.array_split(order, num_buckets)]


def _nccl_name(nbytes: float) -> str:
    # Cosmetic protocol suffix: NCCL picks LL for small messages and SIMPLE for large ones
    # (the real choice depends on size and topology).
    proto = "LL" if nbytes < 64 * 1024 else "SIMPLE"
    return f"ncclDevKernel_AllReduce_Sum_f32_RING_{proto}"


class _Rank:
    """Event builder for one rank, in true time (seconds)."""

    def __init__(self, rank: int, rng: np.random.Generator, jitter: float, cfg: dict) -> None:
        self.rank = rank
        self.rng = rng
        self.jitter = jitter
        self.cfg = cfg
        self.pid = CPU_PID0 + rank
        self.tid = self.pid
        self.device = rank % GPUS_PER_HOST
        self.events: list[dict] = []
        self.corr = 1
        self.ext = 1
        self.stream_free = {COMPUTE_STREAM: 0.0, COMM_STREAM: 0.0}
        self.t = 0.0  # CPU cursor

    # -- noise -------------------------------------------------------------------------------
    def noisy(self, mean: float) -> float:
        """Mean-preserving lognormal jitter: mean·exp(σz − σ²/2)."""
        s = self.jitter
        return mean * math.exp(s * self.rng.standard_normal() - 0.5 * s * s) if s else mean

    def queue_delay(self) -> float:
        q = self.cfg["min_queue_delay"]
        return q + q * self.rng.exponential()

    # -- events ------------------------------------------------------------------------------
    def cpu(self, cat: str, name: str, start: float, end: float, args: dict | None = None) -> dict:
        ev = {
            "ph": "X",
            "cat": cat,
            "name": name,
            "pid": self.pid,
            "tid": self.tid,
            "ts": start,
            "dur": end - start,
        }
        if args:
            ev["args"] = args
        self.events.append(ev)
        return ev

    def next_ext(self) -> int:
        self.ext += 1
        return self.ext - 1

    def runtime(self, name: str, ext: int, cat: str = "cuda_runtime") -> tuple[int, float, float]:
        """A runtime/driver call at the CPU cursor; returns (correlation, start, end)."""
        corr = self.corr
        self.corr += 1
        start = self.t
        end = start + self.noisy(self.cfg["launch_time"])
        self.cpu(cat, name, start, end, {"External id": ext, "correlation": corr})
        self.t = end
        return corr, start, end

    def gpu(
        self,
        cat: str,
        name: str,
        stream: int,
        corr: int,
        ext: int,
        launch_end: float,
        duration: float,
        not_before: float = 0.0,
        args: dict | None = None,
        start: float | None = None,
    ) -> tuple[float, float]:
        """Place a GPU activity after its launch, its stream and ``not_before``; add its flow."""
        if start is None:
            start = max(launch_end + self.queue_delay(), self.stream_free[stream], not_before)
        end = start + duration
        self.stream_free[stream] = end
        a = {"device": self.device, "stream": stream, "correlation": corr, "External id": ext}
        if args:
            a.update(args)
        self.events.append(
            {
                "ph": "X",
                "cat": cat,
                "name": name,
                "pid": self.device,
                "tid": stream,
                "ts": start,
                "dur": duration,
                "args": a,
            }
        )
        self.events.append(
            {
                "ph": "f",
                "id": corr,
                "pid": self.device,
                "tid": stream,
                "ts": start,
                "cat": "ac2g",
                "name": "ac2g",
                "bp": "e",
            }
        )
        return start, end

    def flow_start(self, corr: int, ts: float) -> None:
        self.events.append(
            {
                "ph": "s",
                "id": corr,
                "pid": self.pid,
                "tid": self.tid,
                "ts": ts,
                "cat": "ac2g",
                "name": "ac2g",
            }
        )

    def op(
        self,
        name: str,
        kernels: Sequence[tuple[str, float]],
        stream: int = COMPUTE_STREAM,
        cat: str = "kernel",
        launch: str = "cudaLaunchKernel",
    ) -> list[tuple[float, float]]:
        """A cpu_op at the CPU cursor launching ``kernels`` (name, GPU duration) in order."""
        c = self.cfg
        ext = self.next_ext()
        start = self.t
        self.t += self.noisy(c["op_time"])
        spans = []
        for kname, kdur in kernels:
            corr, lstart, lend = self.runtime(launch, ext)
            self.flow_start(corr, lstart)
            spans.append(self.gpu(cat, kname, stream, corr, ext, lend, self.noisy(kdur)))
            self.t += self.noisy(c["launch_gap"])
        self.cpu("cpu_op", name, start, self.t, {"External id": ext})
        self.t += self.noisy(c["op_gap"])
        return spans


def _validate(
    num_ranks: int, num_layers: int, num_buckets: int, num_steps: int, seed: int, jitter: float
) -> None:
    for name, v, lo in (
        ("num_ranks", num_ranks, 1),
        ("num_layers", num_layers, 1),
        ("num_steps", num_steps, 1),
        ("num_buckets", num_buckets, 1),
    ):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
            raise ValueError(f"{name} must be an integer >= {lo}, got {v!r}")
    if num_buckets > num_layers:
        raise ValueError(f"num_buckets ({num_buckets}) cannot exceed num_layers ({num_layers})")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    if not (isinstance(jitter, (int, float)) and math.isfinite(jitter) and 0 <= jitter <= 1):
        raise ValueError(f"jitter must be in [0, 1] (lognormal sigma), got {jitter!r}")


def generate_dp_profile(
    *,
    num_ranks: int = 4,
    num_layers: int = 8,
    num_buckets: int = 4,
    num_steps: int = 2,
    bandwidth: float = 20e9,
    clock_offset: float | Sequence[float] = 2e-3,
    clock_drift: float | Sequence[float] = 20.0,
    jitter: float = 0.05,
    seed: int = 0,
    layer_param_bytes: float = 12 * 1024**2 * 4,
    forward_time: float = 1.6e-3,
    backward_time: float = 3.2e-3,
    data_time: float = 3e-3,
    optimizer_time: float | None = None,
    input_bytes: float = 2 * 8 * 1024 * 8,
    h2d_bandwidth: float = 20e9,
    op_time: float = 20e-6,
    launch_time: float = 6e-6,
    min_queue_delay: float = 4e-6,
    p2p_latency: float = 5e-6,
    start_time: float = 0.05,
) -> dict[int, pd.DataFrame]:
    """Simulated Kineto events of a data-parallel training step per rank, host clocks applied (Module 1).

    Returns {rank: DataFrame} in :func:`course_lib.trace.load_trace`'s form (ts, dur in seconds on
    the rank's host clock, see the module docstring for the model). Defaults: a 12·h² parameter
    layer with h = 1024 in fp32 (``layer_param_bytes`` ≈ 50 MB of gradients), GPU forward and
    backward times per layer (s), ``bandwidth`` = all-reduce algorithm bandwidth (bytes/s),
    ``clock_offset`` (s) and ``clock_drift`` (ppm) as magnitudes (rank 0 = 0, others uniform in
    ±magnitude) or per-rank sequences, ``jitter`` = σ of mean-preserving lognormal noise on
    durations. ``optimizer_time`` defaults to 7 passes of fp32 optimizer state over 1.5 TB/s of
    HBM: 7·Σ layer_param_bytes / 1.5e12. ``df.attrs`` holds rank, clock_offset, clock_drift,
    metadata (written as the file's top-level keys). Same arguments, same result.
    """
    _validate(num_ranks, num_layers, num_buckets, num_steps, seed, jitter)
    _check_positive(
        bandwidth=bandwidth,
        layer_param_bytes=layer_param_bytes,
        forward_time=forward_time,
        backward_time=backward_time,
        data_time=data_time,
        input_bytes=input_bytes,
        h2d_bandwidth=h2d_bandwidth,
        op_time=op_time,
        launch_time=launch_time,
        min_queue_delay=min_queue_delay,
        p2p_latency=p2p_latency,
        start_time=start_time,
    )
    if optimizer_time is None:
        optimizer_time = 7 * num_layers * layer_param_bytes / 1.5e12
    _check_positive(optimizer_time=optimizer_time)

    clock_rng = np.random.default_rng([seed, 3])
    offsets = _per_rank(clock_offset, "clock_offset", num_ranks, clock_rng)
    drifts = _per_rank(clock_drift, "clock_drift", num_ranks, clock_rng)
    if np.any(np.abs(drifts) >= 1e5):
        raise ValueError(f"clock_drift is in ppm and must be far below 1e6, got {drifts.tolist()}")
    if np.any(start_time + offsets < 0):
        raise ValueError(
            "start_time + clock_offset must be >= 0 on every rank (Kineto writes no "
            f"negative ts): start_time={start_time}, offsets={offsets.tolist()}"
        )

    cfg = {
        "op_time": op_time,
        "launch_time": launch_time,
        "min_queue_delay": min_queue_delay,
        "launch_gap": 0.15 * op_time,
        "op_gap": 0.25 * op_time,
    }
    ranks = [_Rank(r, np.random.default_rng([seed, 1, r]), jitter, cfg) for r in range(num_ranks)]
    comm_rng = np.random.default_rng([seed, 2])
    buckets = _buckets(num_layers, num_buckets)
    bucket_bytes = [len(b) * layer_param_bytes for b in buckets]
    last_layer_of = {b[-1]: i for i, b in enumerate(buckets)}
    peers_of = {
        r: sorted({(r + 1) % num_ranks, (r - 1) % num_ranks} - {r}) for r in range(num_ranks)
    }
    msg_id = 0

    for rk in ranks:
        rk.t = start_time + rk.rng.uniform(0.0, 200e-6)

    for step in range(num_steps):
        pending = {}  # rank -> per-bucket (corr, ext, launch_end, ready)
        step_start = {}
        for rk in ranks:
            step_start[rk.rank] = (rk.t, rk.next_ext())
            z0 = rk.t
            rk.t += rk.noisy(15e-6)
            rk.cpu(
                "user_annotation",
                "Optimizer.zero_grad#AdamW.zero_grad",
                z0,
                rk.t,
                {"External id": rk.next_ext()},
            )
            rk.t += rk.noisy(cfg["op_gap"])
            d0 = rk.t
            rk.t += rk.noisy(data_time)
            rk.cpu("user_annotation", "DataLoader", d0, rk.t, {"External id": rk.next_ext()})
            rk.t += rk.noisy(cfg["op_gap"])
            # input copy host -> device
            rk.op(
                "aten::copy_",
                [("Memcpy HtoD (Pinned -> Device)", input_bytes / h2d_bandwidth + 2e-6)],
                cat="gpu_memcpy",
                launch="cudaMemcpyAsync",
            )
            f0 = rk.t
            ext_fwd = rk.next_ext()
            for _layer in range(num_layers):
                rk.op("aten::linear", [("ampere_sgemm_128x64_tn", 0.85 * forward_time)])
                rk.op(
                    "aten::gelu",
                    [("vectorized_elementwise_kernel<GeluCUDAKernelImpl>", 0.15 * forward_time)],
                )
            rk.cpu(
                "user_annotation",
                "DistributedDataParallel.forward",
                f0,
                rk.t,
                {"External id": ext_fwd},
            )
            rk.t += rk.noisy(cfg["op_gap"])
            per_bucket: list[tuple[int, int, float, float]] = [None] * num_buckets  # type: ignore
            for layer in range(num_layers - 1, -1, -1):
                rk.op(
                    "autograd::engine::evaluate_function: GeluBackward0",
                    [
                        (
                            "vectorized_elementwise_kernel<GeluBackwardCUDAKernelImpl>",
                            0.1 * backward_time,
                        )
                    ],
                )
                spans = rk.op(
                    "autograd::engine::evaluate_function: AddmmBackward0",
                    [
                        ("ampere_sgemm_128x64_nn", 0.45 * backward_time),
                        ("ampere_sgemm_64x64_nt", 0.45 * backward_time),
                    ],
                )
                if layer in last_layer_of:
                    b = last_layer_of[layer]
                    ready = spans[-1][1]  # weight-grad GEMM of the bucket's last layer ends
                    ext = rk.next_ext()
                    c0 = rk.t
                    rk.t += rk.noisy(0.5 * op_time)
                    rk.runtime("cudaEventRecord", ext)
                    rk.runtime("cudaStreamWaitEvent", ext)
                    corr, lstart, lend = rk.runtime("cuLaunchKernelEx", ext, cat="cuda_driver")
                    rk.flow_start(corr, lstart)
                    rk.t += rk.noisy(0.5 * op_time)
                    nelems = int(bucket_bytes[b] // 4)
                    rk.cpu(
                        "cpu_op",
                        "record_param_comms",
                        c0,
                        rk.t,
                        {
                            "External id": ext,
                            "Collective name": "allreduce",
                            "In msg nelems": nelems,
                            "Out msg nelems": nelems,
                            "Group size": num_ranks,
                            "dtype": "Float",
                        },
                    )
                    rk.t += rk.noisy(cfg["op_gap"])
                    per_bucket[b] = (corr, ext, lend, ready)
            pending[rk.rank] = per_bucket

        # all-reduces: coupled across ranks, one bucket after the other on the comm stream
        for b in range(num_buckets):
            arrive = {}
            for rk in ranks:
                corr, ext, lend, ready = pending[rk.rank][b]
                arrive[rk.rank] = max(
                    lend + rk.queue_delay(),
                    ready + rk.noisy(2e-6),  # cross-stream event wait
                    rk.stream_free[COMM_STREAM],
                )
            duration = bucket_bytes[b] / bandwidth
            if jitter:
                duration *= math.exp(jitter * comm_rng.standard_normal() - 0.5 * jitter**2)
            end = max(arrive.values()) + duration
            nelems = int(bucket_bytes[b] // 4)
            for rk in ranks:
                corr, ext, lend, ready = pending[rk.rank][b]
                start = arrive[rk.rank]
                rk.gpu(
                    "kernel",
                    _nccl_name(bucket_bytes[b]),
                    COMM_STREAM,
                    corr,
                    ext,
                    lend,
                    end - start,
                    start=start,
                    args={
                        "Collective name": "allreduce",
                        "In msg nelems": nelems,
                        "Out msg nelems": nelems,
                        "Group size": num_ranks,
                        "dtype": "Float",
                    },
                )
            chunk = int(bucket_bytes[b] // num_ranks)
            for rk in ranks:  # ring-neighbour messages, both directions
                for q in peers_of[rk.rank]:
                    send = arrive[rk.rank] + 1e-6
                    latency = p2p_latency * (1.0 + comm_rng.exponential())
                    recv = max(arrive[q] + 1e-6, send + latency)
                    for owner, name, peer, ts in (
                        (rk, "send", q, send),
                        (ranks[q], "recv", rk.rank, recv),
                    ):
                        owner.events.append(
                            {
                                "ph": "i",
                                "s": "t",
                                "cat": "p2p",
                                "name": name,
                                "pid": owner.device,
                                "tid": COMM_STREAM,
                                "ts": ts,
                                "args": {"msg_id": msg_id, "peer": peer, "bytes": chunk},
                            }
                        )
                    msg_id += 1

        # optimizer (after the last all-reduce on the GPU), loss.item(), host sync
        comm_done = max(rk.stream_free[COMM_STREAM] for rk in ranks)
        for rk in ranks:
            o0 = rk.t
            ext_opt = rk.next_ext()
            rk.t += rk.noisy(0.5 * op_time)
            ext = rk.next_ext()
            a0 = rk.t
            rk.t += rk.noisy(op_time)
            corr, lstart, lend = rk.runtime("cudaLaunchKernel", ext)
            rk.flow_start(corr, lstart)
            rk.gpu(
                "kernel",
                "multi_tensor_apply_kernel<FusedAdamMathFunctor>",
                COMPUTE_STREAM,
                corr,
                ext,
                lend,
                rk.noisy(optimizer_time),
                not_before=comm_done + rk.noisy(2e-6),  # cross-stream event wait
            )
            rk.t += rk.noisy(cfg["launch_gap"])
            rk.cpu("cpu_op", "aten::_fused_adamw_", a0, rk.t, {"External id": ext})
            rk.cpu(
                "user_annotation", "Optimizer.step#AdamW.step", o0, rk.t, {"External id": ext_opt}
            )
            rk.t += rk.noisy(cfg["op_gap"])
            ext = rk.next_ext()
            i0 = rk.t
            rk.t += rk.noisy(0.5 * op_time)
            corr, lstart, lend = rk.runtime("cudaMemcpyAsync", ext)
            rk.flow_start(corr, lstart)
            _, copy_end = rk.gpu(
                "gpu_memcpy",
                "Memcpy DtoH (Device -> Pageable)",
                COMPUTE_STREAM,
                corr,
                ext,
                lend,
                2e-6,
            )
            s_corr = rk.corr
            rk.corr += 1
            s0 = rk.t
            rk.t = max(s0, copy_end) + rk.noisy(8e-6)
            rk.cpu(
                "cuda_runtime",
                "cudaStreamSynchronize",
                s0,
                rk.t,
                {"External id": ext, "correlation": s_corr},
            )
            rk.t += rk.noisy(0.25 * op_time)
            rk.cpu("cpu_op", "aten::item", i0, rk.t, {"External id": ext})
            rk.t += rk.noisy(cfg["op_gap"])
            s_start, s_ext = step_start[rk.rank]
            rk.cpu("user_annotation", f"ProfilerStep#{step}", s_start, rk.t, {"External id": s_ext})
            rk.t += rk.noisy(4 * op_time)

    out = {}
    for rk in ranks:
        events = _metadata_events(rk, num_ranks) + _apply_clock(
            rk.events, float(offsets[rk.rank]), float(drifts[rk.rank])
        )
        df = _frame_from_events(events, f"generated rank {rk.rank}", 1.0)
        metadata = {
            "schemaVersion": 1,
            "deviceProperties": [
                {
                    "id": rk.device,
                    "name": "NVIDIA A100-SXM4-80GB",
                    "computeMajor": 8,
                    "computeMinor": 0,
                    "numSms": 108,
                }
            ],
            "distributedInfo": {"backend": "nccl", "rank": rk.rank, "world_size": num_ranks},
            "synthetic": "course_lib.tracegen.generate_dp_profile",
            "displayTimeUnit": "ms",
            "baseTimeNanoseconds": BASE_TIME_NS,
            "traceName": f"rank_{rk.rank}.json.gz",
        }
        df.attrs.update(
            {
                "source": f"generated rank {rk.rank}",
                "metadata": metadata,
                "base_time_ns": BASE_TIME_NS,
                "base_time_s": BASE_TIME_NS * 1e-9,
                "rank": rk.rank,
                "clock_offset": float(offsets[rk.rank]),
                "clock_drift": float(drifts[rk.rank]),
            }
        )
        out[rk.rank] = df
    return out


def _metadata_events(rk: _Rank, num_ranks: int) -> list[dict]:
    def meta(name: str, pid: int, tid: int, args: dict) -> dict:
        return {"ph": "M", "name": name, "pid": pid, "tid": tid, "ts": 0.0, "args": args}

    return [
        meta("process_name", rk.pid, 0, {"name": "python"}),
        meta("process_labels", rk.pid, 0, {"labels": "CPU"}),
        meta("thread_name", rk.pid, rk.tid, {"name": f"thread {rk.tid} (python)"}),
        meta("process_name", rk.device, 0, {"name": "python"}),
        meta("process_labels", rk.device, 0, {"labels": f"GPU {rk.device}"}),
        meta("thread_name", rk.device, COMPUTE_STREAM, {"name": f"stream {COMPUTE_STREAM}"}),
        meta("thread_name", rk.device, COMM_STREAM, {"name": f"stream {COMM_STREAM} (NCCL)"}),
    ]


def _apply_clock(events: list[dict], offset: float, drift: float) -> list[dict]:
    """True -> host time, rounded to whole nanoseconds (start and end), sorted by host ts."""
    scale = 1.0 + drift * 1e-6
    out = []
    for e in events:
        e = dict(e)
        start_ns = round((offset + scale * e["ts"]) * 1e9)
        if "dur" in e:
            end_ns = round((offset + scale * (e["ts"] + e["dur"])) * 1e9)
            e["dur"] = (end_ns - start_ns) * 1e-9
        e["ts"] = start_ns * 1e-9
        out.append(e)
    out.sort(key=lambda e: (e["ts"], -e.get("dur", 0.0)))  # parents before children
    return out


def write_dp_profile(directory: str | os.PathLike[str], **kwargs: Any) -> list[Path]:
    """Write generate_dp_profile(**kwargs) as one Kineto file per rank, rank_<r>.json.gz (Module 1)."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    profiles = generate_dp_profile(**kwargs)
    return [write_trace(df, d / f"rank_{r}.json.gz") for r, df in sorted(profiles.items())]


def load_dp_profile(directory: str | os.PathLike[str] | None = None) -> dict[int, pd.DataFrame]:
    """{rank: load_trace(rank_<r>.json[.gz])} of a directory, default the shipped set (Module 1)."""
    d = Path(directory) if directory is not None else data_path("dp_profile")
    pattern = re.compile(r"rank_(\d+)\.json(\.gz)?$")
    files = {int(m.group(1)): p for p in d.iterdir() if (m := pattern.match(p.name))}
    if not files:
        raise FileNotFoundError(f"no rank_<r>.json[.gz] files in {d}")
    return {r: load_trace(files[r]) for r in sorted(files)}


def message_pairs(profiles: Mapping[int, pd.DataFrame]) -> pd.DataFrame:
    """Send/receive pairs: msg_id, src, dst, send_ts (src's clock), recv_ts (dst's clock) (cost02)."""
    sends, recvs = [], []
    for rank, df in profiles.items():
        p2p = df[(df["cat"] == "p2p") & df["name"].isin(["send", "recv"])]
        if p2p.empty:
            continue
        table = pd.DataFrame(
            {
                "msg_id": [a["msg_id"] for a in p2p["args"]],
                "peer": [a["peer"] for a in p2p["args"]],
                "rank": rank,
                "ts": p2p["ts"].to_numpy(),
                "name": p2p["name"].to_numpy(),
            }
        )
        sends.append(table[table["name"] == "send"])
        recvs.append(table[table["name"] == "recv"])
    cols = ["msg_id", "src", "dst", "send_ts", "recv_ts"]
    if not sends or not recvs:
        return pd.DataFrame({c: pd.Series(dtype=float if c.endswith("ts") else int) for c in cols})
    s = pd.concat(sends).rename(columns={"rank": "src", "peer": "dst", "ts": "send_ts"})
    r = pd.concat(recvs).rename(columns={"rank": "dst", "peer": "src", "ts": "recv_ts"})
    pairs = s[["msg_id", "src", "dst", "send_ts"]].merge(
        r[["msg_id", "src", "dst", "recv_ts"]],
        on=["msg_id", "src", "dst"],
        how="inner",
        validate="one_to_one",
    )
    return pairs.sort_values("msg_id").reset_index(drop=True)[cols]


def with_copies_and_syncs(
    profiles: Mapping[int, pd.DataFrame], *, seed: int = 3
) -> dict[int, pd.DataFrame]:
    """Each rank's profile plus a prefetch during every step's last all-reduce (cost03).

    SYNTHETIC, for cost03's exercise. During every step's last all-reduce (which runs after the
    backward pass, when no other kernel computes) four GPU events are added per rank:

    * ``Memcpy HtoD (Pinned -> Device)`` (cat gpu_memcpy): the next batch, prefetched on
      :data:`SIDE_STREAM`;
    * ``Memset (Device)`` (cat gpu_memset, same stream);
    * ``vectorized_elementwise_kernel<MulFunctor>`` (cat kernel, same stream): the prefetched batch
      normalized, a computation kernel;
    * ``Stream Sync`` (cat cuda_sync, on the compute stream): CUPTI's record of the host blocking
      in ``cudaStreamSynchronize``. Its stream id is valid; those of ``Event Sync`` and
      ``Context Sync`` are not (CUPTI: not valid for cuEventSynchronize, cuCtxSynchronize) and
      Kineto writes them as stream -1.

    Holistic Trace Analysis 0.5.0 counts the kernel as computation and the copy, the memset and
    the sync as neither, so the overlap ratio differs from the plain profile's, and differs again
    if copies or syncs are counted as computation (as HTA <= 0.2.0 does with ``Stream Sync``).
    Positions are fractions of the all-reduce, drawn from ``seed``; the input frames are not
    modified.
    """
    rng = np.random.default_rng(seed)
    out: dict[int, pd.DataFrame] = {}
    for rank in sorted(profiles):
        df = profiles[rank]
        steps = df[df["name"].str.startswith("ProfilerStep#")].sort_values("ts")
        nccl = df[df["name"].str.startswith("nccl") & (df["cat"] == "kernel")]
        template = nccl.iloc[0]
        corr = int(df["correlation"].max()) + 1
        rows = []
        for _, step in steps.iterrows():
            inside = nccl[(nccl["ts"] >= step["ts"]) & (nccl["ts"] < step["ts"] + step["dur"])]
            last = inside.sort_values("ts").iloc[-1]
            a, d = float(last["ts"]), float(last["dur"])
            copy_start = a + rng.uniform(0.06, 0.10) * d
            copy_dur = rng.uniform(0.18, 0.24) * d
            memset_start = copy_start + copy_dur + 0.02 * d
            kernel_start = memset_start + 0.07 * d
            kernel_dur = rng.uniform(0.10, 0.14) * d
            sync_start = a + rng.uniform(0.66, 0.70) * d
            for name, cat, stream, ts, dur in (
                ("Memcpy HtoD (Pinned -> Device)", "gpu_memcpy", SIDE_STREAM, copy_start, copy_dur),
                ("Memset (Device)", "gpu_memset", SIDE_STREAM, memset_start, 0.05 * d),
                (
                    "vectorized_elementwise_kernel<MulFunctor>",
                    "kernel",
                    SIDE_STREAM,
                    kernel_start,
                    kernel_dur,
                ),
                (
                    "Stream Sync",
                    "cuda_sync",
                    COMPUTE_STREAM,
                    sync_start,
                    rng.uniform(0.2, 0.26) * d,
                ),
            ):
                device = int(template["device"])
                rows.append(
                    {
                        "name": name,
                        "cat": cat,
                        "ph": "X",
                        "ts": ts,
                        "dur": dur,
                        "pid": int(template["pid"]),
                        "tid": stream,
                        "correlation": corr,
                        "external_id": pd.NA,
                        "stream": stream,
                        "device": device,
                        "args": {"device": device, "stream": stream, "correlation": corr},
                    }
                )
                corr += 1
        extra = pd.DataFrame(rows).astype(
            {
                "correlation": df["correlation"].dtype,
                "external_id": df["external_id"].dtype,
                "stream": df["stream"].dtype,
                "device": df["device"].dtype,
            }
        )
        both = pd.concat([df, extra], ignore_index=True)
        out[rank] = both.sort_values("ts", kind="stable").reset_index(drop=True)
    return out
