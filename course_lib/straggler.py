"""Stragglers: barrier time, rank waits, the order statistics of the maximum, and extrapolation
under stated assumptions (cost06).

A synchronous step (a gradient all-reduce, a barrier) ends when its slowest required rank
arrives. Completion matrices are ``(num_steps, num_ranks)`` float arrays of seconds: entry
``[s, r]`` is when rank ``r`` finished its work in step ``s``, measured from the step's start.

* The barrier time of a step is the row maximum, and each rank waits ``max - own``.
* If each rank is slow in a step with probability ``p``, independently, a step has at least one
  slow rank with probability ``1 - (1 - p)**n`` (Dean & Barroso 2013, "The Tail at Scale",
  CACM 56(2): p = 0.01, n = 100 gives 0.634).
* The maximum of ``n`` independent draws with CDF ``F`` has CDF ``F(x)**n`` (David & Nagaraja,
  *Order Statistics*, 3rd ed. 2003, §2.1), so ``E[max] = ∫₀^∞ (1 − F^n) dx − ∫_{−∞}^0 F^n dx``;
  for N(0, 1): 1.4236 at n = 8, 2.5076 at n = 100, 3.2482 at n = 1024.
* Both extrapolations assume independent, identically distributed ranks. A slowdown shared by
  the ranks of a host (:func:`prob_slow_step_hosts`) or a rank that is always slow breaks them.

Everything random takes an explicit seed. Bad input (NaN, negative times, probabilities outside
[0, 1], a rank count that is not a whole number of hosts) raises ValueError naming the argument.
"""

from __future__ import annotations

import math
import multiprocessing
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "MonteCarloMax",
    "barrier_times",
    "expected_max",
    "expected_max_monte_carlo",
    "expected_max_normal",
    "exercise_run",
    "measure_completion",
    "normal_cdf",
    "persistent_stragglers",
    "prob_slow_step",
    "prob_slow_step_hosts",
    "rank_waits",
    "simulate_slow_steps",
    "slowest_counts",
    "synthetic_completion",
]

FloatArray = NDArray[np.float64]

# --------------------------------------------------------------------------------------------
# validation


def _completion(completion: ArrayLike, name: str = "completion") -> FloatArray:
    """``completion`` as a validated (steps, ranks) float array; ValueError names the bad entry."""
    try:
        c = np.asarray(completion, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a (steps, ranks) array of seconds") from None
    if c.ndim != 2 or c.shape[0] == 0 or c.shape[1] == 0:
        raise ValueError(
            f"{name} must be a non-empty (steps, ranks) 2-D array, got shape {c.shape}"
        )
    bad = ~np.isfinite(c)
    if bad.any():
        s, r = (int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"{name}[{s}, {r}] = {c[s, r]}: completion times must be finite")
    neg = c < 0
    if neg.any():
        s, r = (int(i) for i in np.argwhere(neg)[0])
        raise ValueError(f"{name}[{s}, {r}] = {c[s, r]}: completion times must be >= 0 seconds")
    return c


def _probability(p: float, name: str) -> float:
    if isinstance(p, bool):
        raise ValueError(f"{name} must be a probability, got {p!r}")
    try:
        v = float(p)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a probability, got {p!r}") from None
    if not 0.0 <= v <= 1.0:  # also rejects NaN
        raise ValueError(f"{name} must be in [0, 1], got {p!r}")
    return v


def _count(n: int, name: str, minimum: int = 1) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise ValueError(f"{name} must be an int, got {n!r}")
    if n < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {n}")
    return int(n)


def _hosts(num_ranks: int, ranks_per_host: int) -> int:
    n = _count(num_ranks, "num_ranks")
    g = _count(ranks_per_host, "ranks_per_host")
    if n % g:
        raise ValueError(
            f"num_ranks = {n} is not a whole number of hosts of ranks_per_host = {g} ranks"
        )
    return n // g


# --------------------------------------------------------------------------------------------
# barrier time and waits


def barrier_times(completion: ArrayLike) -> FloatArray:
    """Per step, when the last rank arrives: ``max_r completion[s, r]`` (s; cost06)."""
    return _completion(completion).max(axis=1)


def rank_waits(completion: ArrayLike) -> FloatArray:
    """Seconds each rank waits at each step's barrier: ``max_r c[s, r] − c[s, r]`` (cost06)."""
    c = _completion(completion)
    return c.max(axis=1, keepdims=True) - c


def slowest_counts(completion: ArrayLike) -> NDArray[np.int64]:
    """Per rank, the number of steps in which it arrived last (ties go to the lower rank; cost06)."""
    c = _completion(completion)
    return np.bincount(c.argmax(axis=1), minlength=c.shape[1]).astype(np.int64)


def persistent_stragglers(completion: ArrayLike, min_fraction: float = 0.5) -> tuple[int, ...]:
    """Ranks that arrive last in more than ``min_fraction`` of the steps (cost06).

    Under iid ranks each rank is last in about 1/n of the steps, so a rank last in most steps is
    persistently slow; a rank with one large transient delay raises its mean, not this count.
    """
    f = _probability(min_fraction, "min_fraction")
    counts = slowest_counts(completion)
    steps = int(counts.sum())
    return tuple(int(r) for r in np.flatnonzero(counts > f * steps))


# --------------------------------------------------------------------------------------------
# probability of a slow step


def prob_slow_step(p_slow: float, num_ranks: int) -> float:
    """P(at least one of n iid ranks is slow) = 1 − (1 − p)^n (Dean & Barroso 2013; cost06)."""
    p = _probability(p_slow, "p_slow")
    n = _count(num_ranks, "num_ranks")
    return float(-math.expm1(n * math.log1p(-p))) if p < 1 else 1.0


def prob_slow_step_hosts(
    p_rank: float, p_host: float, num_ranks: int, ranks_per_host: int
) -> float:
    """Host-correlated model: 1 − (1 − p_host)^(n/g) · (1 − p_rank)^n (cost06).

    Each host of ``ranks_per_host`` (g) ranks has, independently per step, a slowdown with
    probability ``p_host`` that slows all its ranks; each rank has, in addition, its own slowdown
    with probability ``p_rank``. A rank is then slow with probability
    1 − (1 − p_host)(1 − p_rank), but the n ranks give only n/g independent host draws.
    """
    ph = _probability(p_host, "p_host")
    pr = _probability(p_rank, "p_rank")
    hosts = _hosts(num_ranks, ranks_per_host)
    if ph == 1.0 or pr == 1.0:
        return 1.0
    return float(-math.expm1(hosts * math.log1p(-ph) + num_ranks * math.log1p(-pr)))


def simulate_slow_steps(
    p_rank: float,
    p_host: float,
    num_steps: int,
    num_ranks: int,
    ranks_per_host: int,
    *,
    seed: int,
) -> NDArray[np.bool_]:
    """Seeded (steps, ranks) bool matrix: rank slow if its own or its host's slowdown hits (cost06)."""
    ph = _probability(p_host, "p_host")
    pr = _probability(p_rank, "p_rank")
    hosts = _hosts(num_ranks, ranks_per_host)
    steps = _count(num_steps, "num_steps")
    rng = np.random.default_rng(seed)
    host_hit = rng.random((steps, hosts)) < ph
    rank_hit = rng.random((steps, num_ranks)) < pr
    return rank_hit | np.repeat(host_hit, ranks_per_host, axis=1)


# --------------------------------------------------------------------------------------------
# the expected maximum


def normal_cdf(x: ArrayLike) -> FloatArray:
    """Φ(x) = erfc(−x/√2)/2, elementwise (float array)."""
    a = np.asarray(x, dtype=float)
    return 0.5 * np.asarray(_erfc(-a / math.sqrt(2.0)), dtype=float)


_erfc = np.frompyfunc(math.erfc, 1, 1)


def _gauss_legendre(
    func: Callable[[FloatArray], FloatArray], lower: float, upper: float, panels: int
) -> float:
    """∫ func over [lower, upper] by composite 16-point Gauss-Legendre on equal panels."""
    if upper <= lower:
        return 0.0
    nodes, weights = np.polynomial.legendre.leggauss(16)
    edges = np.linspace(lower, upper, panels + 1)
    half = (edges[1:] - edges[:-1])[:, None] / 2
    mid = (edges[1:] + edges[:-1])[:, None] / 2
    x = (mid + half * nodes[None, :]).ravel()
    y = np.asarray(func(x), dtype=float).reshape(panels, 16)
    return float((half * y * weights[None, :]).sum())


def expected_max(
    num_ranks: int,
    cdf: Callable[[FloatArray], ArrayLike],
    lower: float,
    upper: float,
    *,
    panels: int = 400,
) -> float:
    """E[max of n iid] = ∫₀^∞ (1 − F^n) dx − ∫_{−∞}^0 F^n dx, numerically (cost06).

    ``cdf`` is F, vectorized over a float array; the distribution is taken to lie in
    [``lower``, ``upper``] (F = 0 below, F = 1 above: choose them where F is 0 and 1 to double
    precision). The maximum's CDF is F^n (David & Nagaraja 2003, §2.1); the formula is
    E[Y] = ∫₀^∞ P(Y > y) dy − ∫_{−∞}^0 P(Y ≤ y) dy with Y the maximum. Integration is composite
    16-point Gauss-Legendre on ``panels`` panels of each side of 0.
    """
    n = _count(num_ranks, "num_ranks")
    lo, hi = float(lower), float(upper)
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        raise ValueError(f"need finite lower < upper, got lower = {lower!r}, upper = {upper!r}")

    def cdf_n(x: FloatArray) -> FloatArray:
        f = np.asarray(cdf(x), dtype=float)
        if f.shape != x.shape:
            raise ValueError(f"cdf returned shape {f.shape} for input shape {x.shape}")
        if not np.all((f >= -1e-12) & (f <= 1 + 1e-12)):
            raise ValueError("cdf returned values outside [0, 1] (or NaN)")
        return np.clip(f, 0.0, 1.0) ** n

    positive = max(lo, 0.0) + _gauss_legendre(lambda x: 1.0 - cdf_n(x), max(lo, 0.0), hi, panels)
    negative = _gauss_legendre(cdf_n, lo, min(hi, 0.0), panels)
    # Below lower F = 0 (no contribution); above upper F = 1; if upper < 0 the max is < 0:
    if hi < 0:
        positive = 0.0
        negative += -hi  # ∫_hi^0 F^n dx with F = 1
    return positive - negative


def expected_max_normal(num_ranks: int, mean: float = 0.0, std: float = 1.0) -> float:
    """E[max of n iid N(mean, std²)] = mean + std · E[max of n N(0, 1)] by the integral (cost06).

    1 − Φ^n is computed as −expm1(n · log1p(−Φ(−x))) so the upper tail keeps its precision.
    """
    n = _count(num_ranks, "num_ranks")
    mu, sigma = float(mean), float(std)
    if not math.isfinite(mu):
        raise ValueError(f"mean must be finite, got {mean!r}")
    if not (math.isfinite(sigma) and sigma >= 0):
        raise ValueError(f"std must be finite and >= 0, got {std!r}")

    def upper_tail(x: FloatArray) -> FloatArray:  # 1 − Φ(x)^n, x >= 0
        sf = normal_cdf(-x)
        return -np.expm1(n * np.log1p(-sf))

    width = 12.0 + math.sqrt(2 * math.log(n))  # Φ^n is 1 to double precision beyond
    positive = _gauss_legendre(upper_tail, 0.0, width, 400)
    negative = _gauss_legendre(lambda x: normal_cdf(x) ** n, -40.0, 0.0, 400)
    return mu + sigma * (positive - negative)


@dataclass(frozen=True)
class MonteCarloMax:
    """A seeded Monte Carlo estimate of E[max]: mean, its standard error, trials (cost06)."""

    mean: float
    std_error: float
    num_trials: int


def expected_max_monte_carlo(
    num_ranks: int,
    sample: Callable[[np.random.Generator, tuple[int, int]], ArrayLike],
    *,
    num_trials: int = 100_000,
    seed: int = 0,
) -> MonteCarloMax:
    """Mean of the row maxima of ``sample(rng, (trials, n))`` draws, in chunks (cost06).

    ``sample(rng, shape)`` returns iid draws of one rank's time; the standard error is the
    sample standard deviation of the maxima over √trials.
    """
    n = _count(num_ranks, "num_ranks")
    trials = _count(num_trials, "num_trials", minimum=2)
    rng = np.random.default_rng(seed)
    chunk = max(1, 2_000_000 // n)
    maxima = np.empty(trials)
    for start in range(0, trials, chunk):
        k = min(chunk, trials - start)
        draws = np.asarray(sample(rng, (k, n)), dtype=float)
        if draws.shape != (k, n):
            raise ValueError(f"sample returned shape {draws.shape}, expected {(k, n)}")
        maxima[start : start + k] = draws.max(axis=1)
    if not np.all(np.isfinite(maxima)):
        raise ValueError("sample returned NaN or infinite values")
    return MonteCarloMax(
        float(maxima.mean()), float(maxima.std(ddof=1) / math.sqrt(trials)), trials
    )


# --------------------------------------------------------------------------------------------
# synthetic completion matrices


def synthetic_completion(
    num_steps: int,
    num_ranks: int,
    *,
    mean: float,
    rank_std: float,
    host_std: float = 0.0,
    ranks_per_host: int = 1,
    slow_ranks: Mapping[int, float] | None = None,
    spikes: Sequence[tuple[int, int, float]] = (),
    seed: int,
) -> FloatArray:
    """Seeded (steps, ranks) completion times in seconds (synthetic; cost06).

    ``mean + host_std·Z_host + rank_std·Z_rank`` with independent standard normals Z per step and
    host (shared by the host's ``ranks_per_host`` ranks) and per step and rank; then each rank in
    ``slow_ranks`` is multiplied by its factor (a persistent straggler), and each
    ``(step, rank, seconds)`` in ``spikes`` adds a one-off delay (a transient one). Clipped at 0.
    """
    steps = _count(num_steps, "num_steps")
    hosts = _hosts(num_ranks, ranks_per_host)
    for name, value in (("mean", mean), ("rank_std", rank_std), ("host_std", host_std)):
        if not (math.isfinite(float(value)) and float(value) >= 0):
            raise ValueError(f"{name} must be finite and >= 0, got {value!r}")
    rng = np.random.default_rng(seed)
    host = np.repeat(rng.standard_normal((steps, hosts)), ranks_per_host, axis=1)
    c = mean + host_std * host + rank_std * rng.standard_normal((steps, num_ranks))
    for rank, factor in (slow_ranks or {}).items():
        if not 0 <= rank < num_ranks:
            raise ValueError(f"slow_ranks: rank {rank} is not in [0, {num_ranks})")
        if not (math.isfinite(factor) and factor > 0):
            raise ValueError(f"slow_ranks[{rank}] = {factor!r} must be a factor > 0")
        c[:, rank] *= factor
    for step, rank, extra in spikes:
        if not (0 <= step < steps and 0 <= rank < num_ranks):
            raise ValueError(
                f"spikes: ({step}, {rank}) is outside the ({steps}, {num_ranks}) matrix"
            )
        c[step, rank] += extra
    return np.maximum(c, 0.0)


_EXERCISE_RUNS: dict[str, dict[str, object]] = {
    "ex1": {
        "num_steps": 40,
        "num_ranks": 8,
        "rank_std": 2e-3,
        "slow_ranks": {3: 1.05},
        "spikes": [(17, 6, 0.3)],
        "seed": 61,
    },
    "run_b": {
        "num_steps": 400,
        "num_ranks": 64,
        "rank_std": 1e-3,
        "host_std": 3e-3,
        "ranks_per_host": 8,
        "seed": 65,
    },
}


def exercise_run(name: str) -> FloatArray:
    """One of cost06's synthetic exercise matrices (100 ms of work per step), by name.

    Generated by :func:`synthetic_completion`; the lesson asks you to find out what is in them,
    so analyse the matrix. The parameters in ``_EXERCISE_RUNS`` are the exercises' answers in
    plain sight: reading them (or printing them) is reading the answer, not finding it.
    """
    if name not in _EXERCISE_RUNS:
        raise ValueError(f"name must be one of {sorted(_EXERCISE_RUNS)}, got {name!r}")
    kw = dict(_EXERCISE_RUNS[name])
    steps, ranks = kw.pop("num_steps"), kw.pop("num_ranks")
    return synthetic_completion(steps, ranks, mean=0.1, **kw)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# a real measurement: identical numpy work in N processes


_MARGIN = 0.5  # s beyond ``timeout`` before measure_completion gives up


def _work(buffer: FloatArray, out: FloatArray, repeats: int) -> float:
    for _ in range(repeats):
        np.sqrt(buffer, out=out)
        np.multiply(out, 1.000001, out=out)
    return float(out[-1])


def _measure_worker(
    rank: int,
    num_workers: int,
    num_steps: int,
    work_size: int,
    repeats: int,
    barrier: object,
    starts: object,
    ends: object,
    timeout: float,
) -> None:
    a = np.arange(1.0, work_size + 1.0)
    out = np.empty_like(a)
    _work(a, out, 1)  # touch the pages before timing
    for step in range(num_steps + 1):  # step 0 is a warm-up, dropped
        barrier.wait(timeout)  # type: ignore[attr-defined]
        t0 = time.perf_counter()
        _work(a, out, repeats)
        t1 = time.perf_counter()
        starts[step * num_workers + rank] = t0  # type: ignore[index]
        ends[step * num_workers + rank] = t1  # type: ignore[index]


def measure_completion(
    num_workers: int,
    num_steps: int = 10,
    *,
    work_size: int = 50_000,
    repeats: int = 4,
    timeout: float = 5.0,
) -> FloatArray:
    """A real (steps, workers) completion matrix: each of ``num_workers`` processes does the same
    numpy work per step after a shared barrier (cost06).

    Entry [s, r] is worker r's finish minus the earliest start in step s (seconds, one monotonic
    clock: time.perf_counter is CLOCK_MONOTONIC on Linux). Workers are forked processes
    (multiprocessing, no sockets). ``timeout`` (s) bounds the whole measurement (plus a 0.5 s
    margin) and each barrier wait: the parent polls the workers, and as soon as one fails (a
    broken barrier) or the deadline passes it kills them all and raises TimeoutError, so a stuck
    worker never hangs the caller.
    """
    n = _count(num_workers, "num_workers")
    steps = _count(num_steps, "num_steps")
    size = _count(work_size, "work_size")
    reps = _count(repeats, "repeats")
    if not (math.isfinite(float(timeout)) and float(timeout) > 0):
        raise ValueError(f"timeout must be > 0 seconds, got {timeout!r}")
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    barrier = ctx.Barrier(n)
    starts = ctx.RawArray("d", (steps + 1) * n)
    ends = ctx.RawArray("d", (steps + 1) * n)
    args = (n, steps, size, reps, barrier, starts, ends, float(timeout))
    procs = [ctx.Process(target=_measure_worker, args=(r, *args), daemon=True) for r in range(n)]
    deadline = time.monotonic() + float(timeout) + _MARGIN
    try:
        for p in procs:
            p.start()
        # Poll: stop at the first worker that fails (a broken barrier) or at the deadline.
        while any(p.exitcode is None for p in procs):
            failed = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
            if failed or time.monotonic() > deadline:
                codes = [p.exitcode for p in procs]
                raise TimeoutError(
                    f"measure_completion: workers did not finish within {timeout} s "
                    f"(exit codes {codes}; None = still running, then terminated)"
                )
            time.sleep(0.005)
        if any(p.exitcode != 0 for p in procs):
            codes = [p.exitcode for p in procs]
            raise TimeoutError(f"measure_completion: a worker failed (exit codes {codes})")
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()
        for p in procs:
            p.join(0.5)
            if p.is_alive():  # a stopped (SIGSTOP) process ignores SIGTERM until resumed
                p.kill()
                p.join(0.5)
    t0 = np.frombuffer(starts, dtype=float).reshape(steps + 1, n)[1:]
    t1 = np.frombuffer(ends, dtype=float).reshape(steps + 1, n)[1:]
    return t1 - t0.min(axis=1, keepdims=True)
