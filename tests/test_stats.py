"""Tests for course_lib.stats (cost10): closed forms against brute force and seeded Monte Carlo."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from course_lib.stats import (
    Comparison,
    bisect,
    bisection_builds,
    bootstrap_diff_ci,
    compare,
    detection_power,
    matched_throughput,
    ops_diff,
    runs_to_detect,
    self_durations,
    time_interleaved,
    trace_diff,
)
from course_lib.trace import data_path, load_trace


@pytest.fixture(scope="module")
def real_traces() -> tuple[pd.DataFrame, pd.DataFrame]:
    return (
        load_trace(data_path("regression_before.json.gz")),
        load_trace(data_path("regression_after.json.gz")),
    )


def _events(rows: list[tuple[str, float, float]], tid: int = 1) -> pd.DataFrame:
    """A tiny trace: (name, ts, dur) complete cpu_op events on one thread."""
    return pd.DataFrame(
        {
            "name": [r[0] for r in rows],
            "cat": "cpu_op",
            "ph": "X",
            "ts": [r[1] for r in rows],
            "dur": [r[2] for r in rows],
            "pid": 1,
            "tid": tid,
        }
    )


# --- matched throughput ---------------------------------------------------------------------


def test_matched_throughput_is_the_ratio_of_sums():
    """Σ work / Σ time, not the mean of per-step ratios (they differ when steps differ)."""
    work, times = [100.0, 300.0], [1.0, 2.0]
    assert matched_throughput(work, times) == pytest.approx(400 / 3)
    assert matched_throughput(work, times) != pytest.approx(np.mean([100, 150]))


@pytest.mark.parametrize(
    ("work", "times", "message"),
    [
        ([1.0, 2.0], [1.0], "2 steps but step_times has 1"),
        ([1.0, float("nan")], [1.0, 1.0], r"work\[1\] is nan"),
        ([1.0, 2.0], [1.0, 0.0], r"step_times\[1\] is not positive"),
        ([-1.0], [1.0], r"work\[0\] is negative"),
        ([], [], "at least 1"),
    ],
)
def test_matched_throughput_bad_input(work, times, message):
    with pytest.raises(ValueError, match=message):
        matched_throughput(work, times)


# --- bootstrap and comparison ---------------------------------------------------------------


def test_bootstrap_ci_is_seeded_and_brackets_the_difference():
    rng = np.random.default_rng(1)
    before, after = rng.normal(1.0, 0.05, 20), rng.normal(1.1, 0.05, 30)
    ci = bootstrap_diff_ci(before, after, seed=3)
    assert ci == bootstrap_diff_ci(before, after, seed=3)
    assert ci[0] < after.mean() - before.mean() < ci[1]


def test_bootstrap_ci_matches_a_loop_bootstrap():
    """The vectorized draw equals a plain loop of independent resamples with the same generator."""
    rng = np.random.default_rng(5)
    before, after = rng.exponential(1.0, 12), rng.exponential(1.2, 9)
    low, high = bootstrap_diff_ci(before, after, num_resamples=2000, seed=11)
    gen = np.random.default_rng(11)
    ia = gen.integers(0, after.size, size=(2000, after.size))
    ib = gen.integers(0, before.size, size=(2000, before.size))
    diffs = [after[ia[k]].mean() - before[ib[k]].mean() for k in range(2000)]
    assert (low, high) == pytest.approx(tuple(np.quantile(diffs, [0.025, 0.975])), rel=1e-12)


def test_bootstrap_ci_coverage_is_near_nominal():
    """Seeded Monte Carlo: over 1,000 pairs of normal samples the 90 % interval covers the true
    difference close to 90 % of the time. The percentile interval is a little narrow for small
    samples (its spread is the plug-in standard error, smaller by about √((n − 1)/n)), so at n = 25 the coverage sits slightly below nominal."""
    rng = np.random.default_rng(7)
    hits = 0
    for k in range(1000):
        b, a = rng.normal(1.0, 0.1, 25), rng.normal(1.05, 0.1, 25)
        low, high = bootstrap_diff_ci(b, a, confidence=0.90, num_resamples=1000, seed=k)
        hits += low < 0.05 < high
    assert 0.85 <= hits / 1000 <= 0.92


def test_bootstrap_ci_width_matches_the_normal_interval():
    """For means of large normal samples the percentile interval ≈ ±1.96 SE."""
    rng = np.random.default_rng(2)
    b, a = rng.normal(1.0, 0.1, 400), rng.normal(1.0, 0.2, 400)
    low, high = bootstrap_diff_ci(b, a, num_resamples=20_000, seed=0)
    se = math.sqrt(b.var(ddof=1) / b.size + a.var(ddof=1) / a.size)
    assert high - low == pytest.approx(2 * 1.959964 * se, rel=0.03)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"before": [1.0], "after": [1.0, 2.0]}, "before needs at least 2"),
        ({"before": [1.0, np.nan], "after": [1.0, 2.0]}, r"before\[1\] is nan"),
        ({"before": [1.0, 2.0], "after": [1.0, 2.0], "confidence": 95}, "confidence"),
        ({"before": [1.0, 2.0], "after": [1.0, 2.0], "num_resamples": 10}, "num_resamples"),
        ({"before": [[1.0, 2.0]], "after": [1.0, 2.0]}, "1-D"),
    ],
)
def test_bootstrap_ci_bad_input(kwargs, message):
    with pytest.raises(ValueError, match=message):
        bootstrap_diff_ci(**kwargs)


def test_compare_summary_and_verdicts():
    rng = np.random.default_rng(0)
    base = rng.normal(1.0, 0.02, 20)
    slow = compare(base, rng.normal(1.1, 0.02, 20))
    assert isinstance(slow, Comparison)
    assert slow.verdict == "regression" and slow.ci_low > 0
    assert slow.relative_change == pytest.approx(slow.mean_after / slow.mean_before - 1)
    pooled = math.sqrt((19 * base.var(ddof=1) + 19 * np.var(slow.mean_after, ddof=0)) / 38)
    assert slow.effect_size > 3 and pooled > 0
    assert compare(base, rng.normal(0.9, 0.02, 20)).verdict == "improvement"
    same = compare(base, rng.permutation(base))
    assert same.verdict == "inconclusive" and same.ci_low < 0 < same.ci_high


def test_cohens_d_matches_its_definition():
    b, a = np.array([1.0, 1.2, 0.9, 1.1]), np.array([1.3, 1.5, 1.4])
    pooled = math.sqrt((3 * b.var(ddof=1) + 2 * a.var(ddof=1)) / 5)
    assert compare(b, a).effect_size == pytest.approx((a.mean() - b.mean()) / pooled)


# --- runs to detect -------------------------------------------------------------------------


def test_runs_to_detect_reproduces_the_formula():
    """δ = 2 %, cv = 3 %, α = 0.05, power 0.8: 2·(1.95996 + 0.84162)²·(1.5)² = 35.3 → 36."""
    assert runs_to_detect(0.02, 0.03) == 36
    assert runs_to_detect(-0.02, 0.03) == 36
    assert runs_to_detect(0.05, 0.01) == 1  # 2·7.85·0.04 = 0.63: one run per side
    assert runs_to_detect(0.01, 0.02, power=0.9) == math.ceil(
        2 * (1.959964 + 1.281552) ** 2 * 4 - 1e-9
    )


def test_runs_to_detect_has_the_stated_power_by_monte_carlo():
    """Seeded Monte Carlo of the z-test with n = runs_to_detect(...) per side: power ≈ 0.8."""
    rng = np.random.default_rng(4)
    delta, cv = 0.03, 0.05
    n = runs_to_detect(delta, cv)
    trials = 20_000
    b = rng.normal(1.0, cv, (trials, n)).mean(axis=1)
    a = rng.normal(1.0 + delta, cv, (trials, n)).mean(axis=1)
    z = (a - b) / (cv * math.sqrt(2 / n))
    power = np.mean(np.abs(z) > 1.959964)
    assert power == pytest.approx(detection_power(n, delta, cv), abs=0.015)
    assert 0.8 <= power <= 0.84  # n is rounded up, so at least the asked power


def test_detection_power_inverts_runs_to_detect():
    for delta, cv in [(0.02, 0.03), (0.01, 0.05), (0.1, 0.02)]:
        n = runs_to_detect(delta, cv)
        assert detection_power(n, delta, cv) >= 0.8 - 1e-9
        if n > 1:
            assert detection_power(n - 1, delta, cv) < 0.8
    curve = detection_power(np.arange(1, 50), 0.02, 0.03)
    assert curve.shape == (49,) and np.all(np.diff(curve) > 0)


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((0.0, 0.03), {}, "relative_change"),
        ((0.02, 0.0), {}, "cv"),
        ((0.02, 0.03), {"alpha": 5}, "alpha"),
        ((0.02, 0.03), {"power": 1.0}, "power"),
    ],
)
def test_runs_to_detect_bad_input(args, kwargs, message):
    with pytest.raises(ValueError, match=message):
        runs_to_detect(*args, **kwargs)


def test_detection_power_bad_input():
    with pytest.raises(ValueError, match="num_runs"):
        detection_power(0, 0.02, 0.03)
    with pytest.raises(ValueError, match="cv"):
        detection_power(5, 0.02, -1.0)


# --- bisection ------------------------------------------------------------------------------


def test_bisection_builds_is_the_worst_case_of_binary_search():
    """Brute force: for every N and every culprit position, count the builds bisect() tests."""
    for n in range(1, 130):
        worst = max(bisect(lambda i, c=culprit: i >= c, n)[1] for culprit in range(n))
        assert bisection_builds(n) == worst == math.ceil(math.log2(n))
    for culprit in range(17):
        assert bisect(lambda i, c=culprit: i >= c, 17)[0] == culprit


def test_bisection_builds_is_exact_for_huge_n():
    """Integers, not floats: 2**60 + 1 candidates need 61 builds (math.log2 rounds to 60)."""
    assert bisection_builds(2**60) == 60
    assert bisection_builds(2**60 + 1) == 61
    assert math.ceil(math.log2(2**60 + 1)) == 60


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "8"])
def test_bisection_builds_bad_input(bad):
    with pytest.raises(ValueError, match="num_commits"):
        bisection_builds(bad)


# --- trace diff -----------------------------------------------------------------------------


def test_self_durations_subtract_direct_children_only():
    trace = _events(
        [("step", 0.0, 10.0), ("linear", 1.0, 5.0), ("mm", 2.0, 3.0), ("relu", 7.0, 1.0)]
    )
    assert self_durations(trace).tolist() == [4.0, 2.0, 3.0, 1.0]


def test_self_durations_keep_threads_apart():
    a = _events([("outer", 0.0, 10.0)], tid=1)
    b = _events([("inner", 1.0, 2.0)], tid=2)
    assert self_durations(pd.concat([a, b], ignore_index=True)).tolist() == [10.0, 2.0]


def test_trace_diff_classes_and_columns_as_hta():
    before = _events([("step", 0, 10), ("mm", 1, 4), ("relu", 6, 1), ("old", 8, 1)])
    after = _events([("step", 0, 14), ("mm", 1, 8), ("mm", 9.5, 1), ("new", 11, 1)])
    diff = trace_diff(before, after)
    assert diff.loc["mm", ["before_counts", "after_counts", "diff_counts"]].tolist() == [1, 2, 1]
    assert diff.loc["mm", "diff_duration"] == pytest.approx(5.0)
    assert diff.loc["step", "diff_self_duration"] == pytest.approx((14 - 10) - (10 - 6))
    assert diff.loc["mm", "counts_change_categories"] == "+"
    assert ops_diff(diff) == {
        "added": ["new"],
        "deleted": ["relu", "old"]
        if diff.index.get_loc("relu") < diff.index.get_loc("old")
        else ["old", "relu"],
        "increased": ["mm"],
        "decreased": [],
        "unchanged": ["step"],
    }
    assert list(diff.columns[:7]) == [
        "before_counts",
        "after_counts",
        "before_total_duration",
        "after_total_duration",
        "diff_counts",
        "diff_duration",
        "counts_change_categories",
    ]


def test_trace_diff_matches_a_plain_groupby_on_the_real_traces(real_traces):
    before, after = real_traces
    diff = trace_diff(before, after)
    ops = after[(after.ph == "X") & after.cat.isin(["cpu_op", "user_annotation"])]
    plain = ops.groupby("name")["dur"].agg(["size", "sum"])
    assert diff.loc[plain.index, "after_counts"].tolist() == plain["size"].tolist()
    np.testing.assert_allclose(diff.loc[plain.index, "after_total_duration"], plain["sum"])
    # Self times add up to the thread's busy time under the top-level events.
    top = ops[ops.name.str.startswith("ProfilerStep")]["dur"].sum()
    steps = diff.index.str.startswith("ProfilerStep")
    inside = diff["after_self_duration"].sum() - diff.loc[~steps, "after_self_duration"].sum()
    assert inside <= top
    assert diff["after_self_duration"].sum() == pytest.approx(top, rel=1e-6)


def test_real_traces_show_the_float64_matmuls(real_traces):
    """The captured change (output layer in float64) shows as aten::mm's self time, the largest
    growth; wrappers grow as much in total time, and the float casts appear."""
    diff = trace_diff(*real_traces)
    assert diff["diff_self_duration"].idxmax() == "aten::mm"
    assert diff["diff_duration"].idxmax() != "aten::mm"
    assert "ToCopyBackward0" in ops_diff(diff)["added"]
    assert "aten::to" in ops_diff(diff)["increased"]


def test_trace_diff_bad_input():
    with pytest.raises(ValueError, match="share no op name"):
        trace_diff(_events([("a", 0, 1)]), _events([("b", 0, 1)]))
    with pytest.raises(ValueError, match="no column 'dur'"):
        trace_diff(_events([("a", 0, 1)]).drop(columns="dur"), _events([("a", 0, 1)]))
    with pytest.raises(ValueError, match="after has no complete events"):
        trace_diff(_events([("a", 0, 1)]), _events([("a", 0, 1)]).assign(ph="i"))
    with pytest.raises(ValueError, match="change"):
        ops_diff(pd.DataFrame({"x": [1]}))


# --- measuring ------------------------------------------------------------------------------


def test_time_interleaved_tiny():
    calls = []
    table = time_interleaved(
        {"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, repeats=3
    )
    assert calls == ["a", "b"] + ["a", "b"] * 3  # one warm-up each, then interleaved
    assert table["workload"].tolist() == ["a", "b"] * 3
    assert (table["seconds"] >= 0).all()
    calls.clear()
    table = time_interleaved(
        {"a": lambda: calls.append("a"), "b": lambda: calls.append("b")},
        repeats=3,
        alternate=True,
    )
    assert calls == ["a", "b"] + ["a", "b", "b", "a", "a", "b"]  # ABBA after the warm-up
    assert table["workload"].tolist() == ["a", "b", "b", "a", "a", "b"]
    assert table["run"].tolist() == [0, 0, 1, 1, 2, 2]
    with pytest.raises(ValueError, match="workloads is empty"):
        time_interleaved({})
    with pytest.raises(ValueError, match="repeats"):
        time_interleaved({"a": lambda: None}, repeats=0)
