"""Repeated measurements, bootstrap intervals, comparisons, runs to detect, bisection, trace diff (cost10).

Conventions: times in seconds, throughput in work units per second, changes as fractions (0.02
means 2 %), every random draw from an explicit ``seed``. A "run" is one repeated measurement of
the same configuration (a step time, a benchmark's time); ``before`` is the control, ``after``
the change under test.

Sources: the percentile bootstrap is Efron & Tibshirani (1993), *An Introduction to the
Bootstrap*, §13.3 (for two samples, each is resampled independently); the runs needed to
detect a change is the two-sample normal sample-size formula (Chow, Shao & Wang, *Sample Size
Calculations in Clinical Research*, 2nd ed. 2008, §3.2.1, p. 58); bisection is binary search
over an ordered list of commits, as ``git bisect`` does (it reports "roughly k steps" left);
the trace diff follows Holistic Trace Analysis's ``TraceDiff.compare_traces`` and ``ops_diff``
(hta/trace_diff.py).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import pandas as pd

__all__ = [
    "Comparison",
    "OP_CATEGORIES",
    "bisect",
    "bisection_builds",
    "bootstrap_diff_ci",
    "compare",
    "detection_power",
    "matched_throughput",
    "ops_diff",
    "runs_to_detect",
    "self_durations",
    "time_interleaved",
    "trace_diff",
]

OP_CATEGORIES = ("cpu_op", "user_annotation", "kernel", "gpu_memcpy", "gpu_memset")
"""Event categories the trace diff compares: CPU operators, annotations and GPU activity."""


# --------------------------------------------------------------------------------------------
# input checks


def _sample(name: str, values: object, *, min_size: int = 1) -> np.ndarray:
    """A 1-D float array of finite values with at least ``min_size`` entries, or a ValueError."""
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D sequence of numbers, got shape {arr.shape}")
    if arr.size < min_size:
        raise ValueError(f"{name} needs at least {min_size} values, got {arr.size}")
    bad = ~np.isfinite(arr)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{name}[{i}] is {arr[i]}: every value must be a finite number")
    return arr


def _fraction(name: str, value: float, *, low: float = 0.0, high: float = 1.0) -> float:
    v = float(value)
    if not (low < v < high):
        raise ValueError(f"{name} must lie strictly between {low} and {high}, got {value}")
    return v


# --------------------------------------------------------------------------------------------
# throughput over matched work


def matched_throughput(work: Sequence[float], step_times: Sequence[float]) -> float:
    """Throughput Σ work / Σ time over the steps: e.g. real (non-padding) tokens per second (cost10).

    ``work[i]`` is the useful work of step i (tokens that are not padding, samples, FLOPs) and
    ``step_times[i]`` its time in seconds. The ratio of sums, not the mean of per-step ratios:
    a run's throughput is all the work it did over all the time it took.
    """
    w = _sample("work", work)
    t = _sample("step_times", step_times)
    if w.shape != t.shape:
        raise ValueError(f"work has {w.size} steps but step_times has {t.size}")
    if (w < 0).any():
        raise ValueError(f"work[{int(np.flatnonzero(w < 0)[0])}] is negative")
    if (t <= 0).any():
        raise ValueError(f"step_times[{int(np.flatnonzero(t <= 0)[0])}] is not positive")
    return float(w.sum() / t.sum())


# --------------------------------------------------------------------------------------------
# repeated runs: bootstrap interval, comparison


def bootstrap_diff_ci(
    before: Sequence[float],
    after: Sequence[float],
    *,
    confidence: float = 0.95,
    num_resamples: int = 10_000,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval of mean(after) − mean(before) (cost10).

    Each resample draws len(before) values from ``before`` and len(after) from ``after``, with
    replacement and independently; the interval is the (1 − c)/2 and (1 + c)/2 quantiles of the
    resampled differences (Efron & Tibshirani 1993, §13.3), c = ``confidence``.
    Vectorized: one (num_resamples × n) index draw per sample.
    """
    b = _sample("before", before, min_size=2)
    a = _sample("after", after, min_size=2)
    c = _fraction("confidence", confidence)
    if int(num_resamples) < 100:
        raise ValueError(f"num_resamples must be at least 100, got {num_resamples}")
    rng = np.random.default_rng(seed)
    diffs = _resampled_means(a, int(num_resamples), rng) - _resampled_means(
        b, int(num_resamples), rng
    )
    low, high = np.quantile(diffs, [(1 - c) / 2, (1 + c) / 2])
    return float(low), float(high)


def _resampled_means(x: np.ndarray, num_resamples: int, rng: np.random.Generator) -> np.ndarray:
    return x[rng.integers(0, x.size, size=(num_resamples, x.size))].mean(axis=1)


@dataclass(frozen=True)
class Comparison:
    """Summary of before/after runs of one benchmark (cost10); times in seconds.

    ``relative_change`` = mean(after)/mean(before) − 1; ``ci_low``/``ci_high`` bound
    mean(after) − mean(before) (percentile bootstrap); ``effect_size`` is Cohen's d, the difference
    of means over the pooled standard deviation; ``verdict`` is "regression" (after slower, the
    interval above 0), "improvement" (interval below 0) or "inconclusive" (it contains 0).
    """

    mean_before: float
    mean_after: float
    relative_change: float
    ci_low: float
    ci_high: float
    effect_size: float
    verdict: str


def compare(
    before: Sequence[float],
    after: Sequence[float],
    *,
    confidence: float = 0.95,
    num_resamples: int = 10_000,
    seed: int = 0,
) -> Comparison:
    """Compare run times before and after a change: means, bootstrap CI, Cohen's d, verdict (cost10).

    Cohen's d = (mean_a − mean_b) / s_pooled, s_pooled² = ((n_b − 1)s_b² + (n_a − 1)s_a²) /
    (n_b + n_a − 2) (Cohen 1988, ch. 2). Lower times are better: an interval wholly above 0 is a
    regression.
    """
    b = _sample("before", before, min_size=2)
    a = _sample("after", after, min_size=2)
    low, high = bootstrap_diff_ci(
        b, a, confidence=confidence, num_resamples=num_resamples, seed=seed
    )
    pooled = math.sqrt(
        ((b.size - 1) * b.var(ddof=1) + (a.size - 1) * a.var(ddof=1)) / (b.size + a.size - 2)
    )
    diff = a.mean() - b.mean()
    effect = diff / pooled if pooled > 0 else math.copysign(math.inf, diff) if diff else 0.0
    verdict = "regression" if low > 0 else "improvement" if high < 0 else "inconclusive"
    return Comparison(
        mean_before=float(b.mean()),
        mean_after=float(a.mean()),
        relative_change=float(a.mean() / b.mean() - 1),
        ci_low=low,
        ci_high=high,
        effect_size=float(effect),
        verdict=verdict,
    )


# --------------------------------------------------------------------------------------------
# how many runs detect a change


def runs_to_detect(
    relative_change: float, cv: float, *, alpha: float = 0.05, power: float = 0.8
) -> int:
    """Runs per side to detect a relative change: n = ⌈2 (z_{1−α/2} + z_{power})² (cv/δ)²⌉ (cost10).

    Two independent samples of n runs, each run's time normal with coefficient of variation
    ``cv`` (standard deviation over mean), a two-sided test at level ``alpha`` that detects a true
    relative change ``relative_change`` (δ) with probability ``power`` (Chow, Shao & Wang 2008,
    §3.2.1, p. 58, two-sample parallel design, σ and δ both as fractions of the mean).
    """
    delta = abs(float(relative_change))
    if not delta > 0 or not math.isfinite(delta):
        raise ValueError(
            f"relative_change must be a non-zero finite fraction, got {relative_change}"
        )
    if not (float(cv) > 0 and math.isfinite(cv)):
        raise ValueError(f"cv must be a positive fraction (std/mean), got {cv}")
    _fraction("alpha", alpha)
    _fraction("power", power)
    z = NormalDist().inv_cdf
    n = 2 * (z(1 - alpha / 2) + z(power)) ** 2 * (cv / delta) ** 2
    return math.ceil(n - 1e-9)  # the 1e-9 keeps an exact integer from rounding up


def detection_power(
    num_runs: int | np.ndarray, relative_change: float, cv: float, *, alpha: float = 0.05
) -> float | np.ndarray:
    """Power of the two-sided two-sample z-test with n runs per side: Φ(δ/(cv·√(2/n)) − z_{1−α/2}) (cost10).

    The inverse of :func:`runs_to_detect` (the far tail, below −z, is left out, as there).
    """
    n = np.asarray(num_runs, dtype=float)
    if (n < 1).any():
        raise ValueError(f"num_runs must be at least 1, got {num_runs}")
    if not float(cv) > 0:
        raise ValueError(f"cv must be a positive fraction (std/mean), got {cv}")
    _fraction("alpha", alpha)
    nd = NormalDist()
    shift = abs(float(relative_change)) / (float(cv) * np.sqrt(2.0 / n)) - nd.inv_cdf(1 - alpha / 2)
    out = np.vectorize(nd.cdf, otypes=[float])(shift)
    return float(out) if np.ndim(num_runs) == 0 else out


# --------------------------------------------------------------------------------------------
# bisection over commits


def bisection_builds(num_commits: int) -> int:
    """Builds to test, worst case, to find the first bad commit among N candidates: ⌈log₂ N⌉ (cost10).

    Convention: the last good commit and the first known-bad one are already built and measured;
    the N candidates are the commits after the good one up to and including the known-bad one, so
    any of them may be the culprit. Each test halves the candidates (binary search, as
    ``git bisect``); integers only, ``(N − 1).bit_length()``, so no float log rounds.
    """
    if isinstance(num_commits, bool) or not isinstance(num_commits, (int, np.integer)):
        raise ValueError(f"num_commits must be an int, got {type(num_commits).__name__}")
    if num_commits < 1:
        raise ValueError(f"num_commits must be at least 1, got {num_commits}")
    return int(num_commits - 1).bit_length()


def bisect(is_bad: Callable[[int], bool], num_commits: int) -> tuple[int, int]:
    """Binary search for the first bad of candidates 0..N−1 (N−1 known bad): (culprit, builds tested) (cost10).

    ``is_bad(i)`` builds and measures candidate i. The brute-force check of
    :func:`bisection_builds`: it never tests the known-bad end.
    """
    bisection_builds(num_commits)  # validates num_commits
    lo, hi = 0, num_commits - 1  # hi is known bad
    tested = 0
    while lo < hi:
        mid = (lo + hi) // 2
        tested += 1
        if is_bad(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo, tested


# --------------------------------------------------------------------------------------------
# trace diff


def self_durations(trace: pd.DataFrame) -> pd.Series:
    """Each complete event's self time: its dur minus its direct children's, per (pid, tid) (cost10).

    Events on one thread nest by time (a child lies within its parent); a stack sweep over events
    sorted by (pid, tid, ts, −dur) finds each event's parent. Index as ``trace``; seconds.
    """
    x = trace[trace["ph"] == "X"]
    self_time = pd.Series(np.nan, index=trace.index, dtype=float)
    if x.empty:
        return self_time
    order = x.assign(_neg=-x["dur"]).sort_values(["pid", "tid", "ts", "_neg"], kind="stable")
    keys = list(zip(order["pid"].astype(str), order["tid"].astype(str), strict=True))
    starts = order["ts"].to_numpy(float)
    durs = order["dur"].to_numpy(float)
    ends = starts + durs
    own = durs.copy()
    stack: list[int] = []
    tol = 1e-9  # Kineto timestamps have ns resolution
    for i in range(len(starts)):
        while stack and (keys[stack[-1]] != keys[i] or starts[i] >= ends[stack[-1]] - tol):
            stack.pop()
        if stack and ends[i] <= ends[stack[-1]] + tol:
            own[stack[-1]] -= durs[i]
        stack.append(i)
    self_time.loc[order.index] = np.maximum(own, 0.0)
    return self_time


def _summary(trace: pd.DataFrame, name: str, categories: Sequence[str]) -> pd.DataFrame:
    for column in ("name", "cat", "ph", "dur"):
        if column not in trace.columns:
            raise ValueError(f"{name} has no column {column!r} (load it with load_trace)")
    ops = trace[(trace["ph"] == "X") & trace["cat"].isin(categories)]
    if ops.empty:
        raise ValueError(f"{name} has no complete events of categories {list(categories)}")
    own = self_durations(trace).loc[ops.index]
    return (
        ops.assign(_self=own)
        .groupby("name")
        .agg(counts=("dur", "size"), total_duration=("dur", "sum"), self_duration=("_self", "sum"))
    )


def trace_diff(
    before: pd.DataFrame, after: pd.DataFrame, *, categories: Sequence[str] = OP_CATEGORIES
) -> pd.DataFrame:
    """Per-op counts and total durations of two traces and their differences, as HTA's TraceDiff (cost10).

    One row per op name found in either trace (index "name"), columns as HTA's
    ``compare_traces`` with the labels "before"/"after": before_counts, after_counts,
    before_total_duration, after_total_duration (inclusive time, seconds), diff_counts and
    diff_duration (after − before), counts_change_categories ("+", "-", "="); plus what HTA does
    not give: before/after_self_duration and diff_self_duration (time outside child ops), and
    ``change`` — the op's class in HTA's ``ops_diff``: "added", "deleted", "increased",
    "decreased", "unchanged" (by count). Raises ValueError when the traces share no op.

    Unlike HTA, which compares one iteration of one rank by default and keeps every event of it,
    this compares whole traces (all their steps) and only the complete events of ``categories``.
    """
    b = _summary(before, "before", categories)
    a = _summary(after, "after", categories)
    if not b.index.intersection(a.index).size:
        raise ValueError(
            "before and after share no op name: they are not traces of the same program "
            f"(before has e.g. {list(b.index[:3])}, after {list(a.index[:3])})"
        )
    diff = pd.concat([b.add_prefix("before_"), a.add_prefix("after_")], axis=1).fillna(0.0)
    for side in ("before", "after"):
        diff[f"{side}_counts"] = diff[f"{side}_counts"].astype(int)
    diff["diff_counts"] = diff["after_counts"] - diff["before_counts"]
    diff["diff_duration"] = diff["after_total_duration"] - diff["before_total_duration"]
    diff["diff_self_duration"] = diff["after_self_duration"] - diff["before_self_duration"]
    diff["counts_change_categories"] = np.select(
        [diff["diff_counts"] > 0, diff["diff_counts"] < 0], ["+", "-"], "="
    )
    diff["change"] = np.select(
        [
            diff["before_counts"].eq(0),
            diff["after_counts"].eq(0),
            diff["diff_counts"] > 0,
            diff["diff_counts"] < 0,
        ],
        ["added", "deleted", "increased", "decreased"],
        "unchanged",
    )
    columns = [
        "before_counts",
        "after_counts",
        "before_total_duration",
        "after_total_duration",
        "diff_counts",
        "diff_duration",
        "counts_change_categories",
        "before_self_duration",
        "after_self_duration",
        "diff_self_duration",
        "change",
    ]
    diff = diff[columns].sort_values("diff_duration", ascending=False, kind="stable")
    diff.index.name = "name"
    return diff


def ops_diff(diff: pd.DataFrame) -> dict[str, list[str]]:
    """Op names by class, as HTA's ``TraceDiff.ops_diff``: added, deleted, increased, decreased, unchanged (cost10)."""
    if "change" not in diff.columns:
        raise ValueError("diff has no 'change' column: pass the result of trace_diff")
    classes = ("added", "deleted", "increased", "decreased", "unchanged")
    return {c: diff.index[diff["change"] == c].tolist() for c in classes}


# --------------------------------------------------------------------------------------------
# measuring on this machine


def time_interleaved(
    workloads: Mapping[str, Callable[[], object]],
    *,
    repeats: int = 15,
    budget: float = 2.0,
    alternate: bool = False,
) -> pd.DataFrame:
    """Time each workload ``repeats`` times, interleaved A, B, A, B, …; one row per run (cost10).

    Columns: workload, run, seconds (``time.perf_counter``). Interleaving spreads a slow period
    of the machine over all workloads instead of one. ``alternate=True`` reverses the order on
    every other run (A, B, B, A, A, B, …: an ABBA design), so no workload always runs first.
    Stops early (fewer runs) once ``budget`` seconds have passed, so it never runs long on a
    loaded machine; one warm-up call each first.
    """
    if not workloads:
        raise ValueError("workloads is empty: give at least one name -> callable")
    if int(repeats) < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    for fn in workloads.values():
        fn()
    rows = []
    deadline = time.perf_counter() + float(budget)
    items = list(workloads.items())
    for run in range(int(repeats)):
        for name, fn in items[::-1] if alternate and run % 2 else items:
            start = time.perf_counter()
            fn()
            rows.append((name, run, time.perf_counter() - start))
        if time.perf_counter() > deadline:
            break
    return pd.DataFrame(rows, columns=["workload", "run", "seconds"])
