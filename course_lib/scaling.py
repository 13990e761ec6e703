"""Strong and weak scaling efficiency against a feasible baseline, Amdahl and Gustafson, a
serial-fraction fit, and time to a training-quality target (cost08).

Conventions (SYLLABUS.md, cost08). ``num_devices`` are device counts N; the baseline N0 is the
smallest device count the job can run on (a large model may not fit on one device), and every
efficiency is normalised to it:

* strong scaling (total work fixed): E_s(N) = T(N0)·N0 / (T(N)·N), T the time of the fixed work;
* weak scaling (work per device fixed): E_w(N) = T(N0) / T(N), T the step time;
* either, from a throughput X (work per second): X(N)·N0 / (X(N0)·N), which is E_s for a fixed
  total and E_w for a fixed per-device work (:func:`efficiency_from_throughput`).

Time to target follows McCandlish et al. (2018), "An Empirical Model of Large-Batch Training",
Sec. 2: the steps S and examples E = B·S needed to reach a loss trade off as
(S/S_min − 1)(E/E_min − 1) = 1, i.e. S = S_min(1 + B_crit/B) and E = E_min(1 + B/B_crit),
with the critical batch B_crit = E_min/S_min (estimated by the gradient noise scale B_noise).

The published data of Narayanan et al. (2021), Megatron-LM, Tables 1 and 2 load with
:func:`load_megatron_table` (course_lib/data/README.md gives the source).
"""

from __future__ import annotations

import math
import multiprocessing as mp
import time
from collections.abc import Sequence

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "amdahl_speedup",
    "best_accumulation_steps",
    "efficiency_from_throughput",
    "examples_to_target",
    "fit_serial_fraction",
    "gustafson_speedup",
    "load_megatron_table",
    "measure_strong_scaling",
    "steps_to_target",
    "strong_efficiency",
    "time_to_target",
    "weak_efficiency",
]

FloatArray = NDArray[np.float64]


# --- validation -------------------------------------------------------------------------------


def _positive_vector(x: ArrayLike, name: str) -> FloatArray:
    """``x`` as a non-empty 1-D float array of finite values > 0; ValueError names the entry."""
    a = np.asarray(x, dtype=float)
    if a.ndim != 1 or len(a) == 0:
        raise ValueError(f"{name} must be a non-empty 1-D sequence, got shape {a.shape}")
    bad = ~np.isfinite(a) | (a <= 0)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"{name}[{i}] = {a[i]} must be finite and > 0")
    return a


def _devices_and_values(
    num_devices: ArrayLike, values: ArrayLike, baseline_devices: float, what: str
) -> tuple[FloatArray, FloatArray, int]:
    """Validated device counts, values and the index of the baseline among the device counts."""
    n = _positive_vector(num_devices, "num_devices")
    v = _positive_vector(values, what)
    if len(n) != len(v):
        raise ValueError(f"num_devices and {what} differ in length: {len(n)} vs {len(v)}")
    if len(np.unique(n)) != len(n):
        raise ValueError(f"num_devices has repeated device counts: {n.tolist()}")
    hits = np.flatnonzero(n == baseline_devices)
    if len(hits) == 0:
        raise ValueError(
            f"baseline_devices = {baseline_devices} is not one of num_devices {n.tolist()}: "
            "normalise to a device count you measured"
        )
    return n, v, int(hits[0])


def _fraction(x: float, name: str) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a number, got {x!r}")
    v = float(x)
    if not (math.isfinite(v) and 0.0 <= v <= 1.0):
        raise ValueError(f"{name} must be in [0, 1], got {v}")
    return v


def _positive(x: float, name: str) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a number, got {x!r}")
    v = float(x)
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f"{name} must be finite and > 0, got {v}")
    return v


# --- efficiency -------------------------------------------------------------------------------


def strong_efficiency(
    num_devices: ArrayLike, times: ArrayLike, baseline_devices: float
) -> FloatArray:
    """Strong-scaling efficiency E_s(N) = T(N0)·N0 / (T(N)·N), T the time of a fixed total work (cost08)."""
    n, t, i = _devices_and_values(num_devices, times, baseline_devices, "times")
    return t[i] * n[i] / (t * n)


def weak_efficiency(
    num_devices: ArrayLike, step_times: ArrayLike, baseline_devices: float
) -> FloatArray:
    """Weak-scaling efficiency E_w(N) = T(N0) / T(N), T the step time at fixed work per device (cost08)."""
    _, t, i = _devices_and_values(num_devices, step_times, baseline_devices, "step_times")
    return t[i] / t


def efficiency_from_throughput(
    num_devices: ArrayLike, throughput: ArrayLike, baseline_devices: float
) -> FloatArray:
    """Scaling efficiency X(N)·N0 / (X(N0)·N) from a throughput X (work/s), E_s or E_w (cost08)."""
    n, x, i = _devices_and_values(num_devices, throughput, baseline_devices, "throughput")
    return x * n[i] / (x[i] * n)


# --- Amdahl, Gustafson, serial fraction -------------------------------------------------------


def amdahl_speedup(num_devices: ArrayLike, serial_fraction: float) -> FloatArray:
    """Amdahl (1967): speed-up 1 / (s + (1 − s)/N) of a fixed work whose fraction s is serial (cost08)."""
    n = _positive_vector(np.atleast_1d(num_devices), "num_devices")
    s = _fraction(serial_fraction, "serial_fraction")
    return 1.0 / (s + (1.0 - s) / n)


def gustafson_speedup(num_devices: ArrayLike, serial_fraction: float) -> FloatArray:
    """Gustafson (1988): scaled speed-up N − s(N − 1) when the parallel work grows with N (cost08)."""
    n = _positive_vector(np.atleast_1d(num_devices), "num_devices")
    s = _fraction(serial_fraction, "serial_fraction")
    return n - s * (n - 1.0)


def fit_serial_fraction(num_devices: ArrayLike, times: ArrayLike, baseline_devices: float) -> float:
    """Serial fraction s = a / (a + b/N0) of the least-squares fit T(N) = a + b/N (Amdahl, baseline N0) (cost08).

    a is the time that does not shrink with N, b/N the part that does; at the baseline the time
    is a + b/N0, of which a is serial. a is clipped at 0 (a negative intercept means no serial
    part is visible in the data). Needs at least two device counts.
    """
    n, t, i = _devices_and_values(num_devices, times, baseline_devices, "times")
    if len(n) < 2:
        raise ValueError("fit_serial_fraction needs at least two device counts, got one")
    x = 1.0 / n
    design = np.column_stack([np.ones_like(x), x])
    (a, b), *_ = np.linalg.lstsq(design, t, rcond=None)
    if b <= 0:
        raise ValueError(
            "the times do not fall with more devices (fitted b <= 0): no parallel part to fit"
        )
    a = max(float(a), 0.0)
    return a / (a + b / n[i])


# --- time to a training-quality target (McCandlish et al. 2018) -------------------------------


def steps_to_target(batch_size: ArrayLike, min_steps: float, noise_scale: float) -> FloatArray:
    """Optimizer steps to a target loss, S = S_min·(1 + B_noise/B) (McCandlish et al. 2018, Sec. 2) (cost08)."""
    b = _positive_vector(np.atleast_1d(batch_size), "batch_size")
    return _positive(min_steps, "min_steps") * (1.0 + _positive(noise_scale, "noise_scale") / b)


def examples_to_target(
    batch_size: ArrayLike, min_examples: float, noise_scale: float
) -> FloatArray:
    """Training examples to a target loss, E = E_min·(1 + B/B_noise) (McCandlish et al. 2018, Sec. 2) (cost08)."""
    b = _positive_vector(np.atleast_1d(batch_size), "batch_size")
    return _positive(min_examples, "min_examples") * (
        1.0 + b / _positive(noise_scale, "noise_scale")
    )


def time_to_target(
    batch_size: ArrayLike, step_time: ArrayLike, min_steps: float, noise_scale: float
) -> FloatArray:
    """Wall time to a target loss, S(B)·T_step(B) = S_min(1 + B_noise/B)·T_step(B) (cost08)."""
    b = _positive_vector(np.atleast_1d(batch_size), "batch_size")
    t = _positive_vector(np.broadcast_to(np.asarray(step_time, dtype=float), b.shape), "step_time")
    return steps_to_target(b, min_steps, noise_scale) * t


def best_accumulation_steps(
    num_devices: int,
    micro_batch: int,
    micro_time: float,
    allreduce_time: float,
    noise_scale: float,
    max_accumulation: int = 4096,
) -> int:
    """k in 1..max_accumulation minimising time to target on a fixed cluster (cost08).

    Each of N devices runs k microbatches of b examples (gradient accumulation), then one
    all-reduce: global batch B = N·b·k, step time k·t_micro + t_allreduce, steps
    S_min(1 + B_noise/B). Time ∝ (1 + B_noise/B)(k·t_micro + t_allreduce); the smallest k wins a
    tie. Exhaustive over k (the continuous optimum is B* = sqrt(B_noise·N·b·t_allreduce/t_micro)).
    """
    n = int(_positive(num_devices, "num_devices"))
    b = int(_positive(micro_batch, "micro_batch"))
    t_micro = _positive(micro_time, "micro_time")
    t_ar = float(allreduce_time)
    if not (math.isfinite(t_ar) and t_ar >= 0):
        raise ValueError(f"allreduce_time must be finite and >= 0, got {allreduce_time}")
    noise = _positive(noise_scale, "noise_scale")
    k = np.arange(1, int(_positive(max_accumulation, "max_accumulation")) + 1, dtype=float)
    cost = (1.0 + noise / (n * b * k)) * (k * t_micro + t_ar)
    return int(np.argmin(cost)) + 1


# --- published data ---------------------------------------------------------------------------


def load_megatron_table(table: int) -> pd.DataFrame:
    """Narayanan et al. (2021), Megatron-LM, Table 1 (weak scaling, 1.7B-1T on 32-3072 A100s) or
    Table 2 (PTD-P vs ZeRO-3, 175B and 530B) as a DataFrame (course_lib/data/README.md) (cost08)."""
    from course_lib.trace import data_path

    if table not in (1, 2) or isinstance(table, bool):
        raise ValueError(f"table must be 1 or 2 (Narayanan et al. 2021), got {table!r}")
    return pd.read_csv(data_path(f"narayanan2021_table{table}.csv"))


# --- a real measurement: fixed work split over worker processes -------------------------------


def _work(size: int, repeats: int) -> float:
    """One task: `repeats` element-wise passes over `size` floats (no BLAS threads involved)."""
    a = np.linspace(0.0, 1.0, size)
    for _ in range(repeats):
        np.sin(a, out=a)
    return float(a[-1])


def _run_tasks(tasks: int, size: int, repeats: int, conn) -> None:  # pragma: no cover - child
    for _ in range(tasks):
        _work(size, repeats)
    conn.send(True)
    conn.close()


def measure_strong_scaling(
    worker_counts: Sequence[int],
    total_tasks: int = 8,
    size: int = 100_000,
    repeats: int = 4,
    trials: int = 3,
    timeout: float = 5.0,
) -> pd.DataFrame:
    """Wall time of a fixed work (total_tasks tasks) split over N processes, median of trials (cost08).

    Each N starts N processes (fork where available), gives each total_tasks/N tasks (N must
    divide total_tasks), and times from the first start to the last result over a pipe, so
    process start-up is in the time, as a serial part. Columns: num_devices, time (median, s),
    low, high (min and max over trials). A worker that does not answer within ``timeout`` seconds
    is killed and a RuntimeError raised: the measurement never hangs.
    """
    total = int(_positive(total_tasks, "total_tasks"))
    counts = [int(_positive(c, "worker_counts")) for c in worker_counts]
    if not counts:
        raise ValueError("worker_counts is empty")
    for c in counts:
        if total % c:
            raise ValueError(f"worker count {c} does not divide total_tasks = {total}")
    methods = mp.get_all_start_methods()
    ctx = mp.get_context("fork" if "fork" in methods else "spawn")
    rows = []
    for c in counts:
        samples = []
        for _ in range(int(_positive(trials, "trials"))):
            pipes, procs = [], []
            start = time.perf_counter()
            for _ in range(c):
                parent, child = ctx.Pipe(duplex=False)
                p = ctx.Process(target=_run_tasks, args=(total // c, size, repeats, child))
                p.start()
                child.close()
                pipes.append(parent)
                procs.append(p)
            try:
                for parent in pipes:
                    left = timeout - (time.perf_counter() - start)
                    if left <= 0 or not parent.poll(left):
                        raise RuntimeError(f"a worker did not finish within {timeout} s")
                    parent.recv()
                samples.append(time.perf_counter() - start)
            finally:
                for p in procs:
                    p.join(timeout=0.5)
                    if p.is_alive():
                        p.kill()
                        p.join()
        rows.append((c, float(np.median(samples)), float(min(samples)), float(max(samples))))
    return pd.DataFrame(rows, columns=["num_devices", "time", "low", "high"])
