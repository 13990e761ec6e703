"""Plausible wrong answers to cost10_regression_triage's exercises; each must lose points.

``RIGHT_ANSWERS`` are answers right by another route (a loop for a vectorized draw, another seed,
pandas for numpy, typed-in z values); each must keep full marks.
"""

from __future__ import annotations

from tests.mutants import Mutant


def _throughput(body: str) -> dict[str, str]:
    return {
        "throughput_answer": (
            "def tokens_per_second(real_tokens, step_times) -> float:\n"
            "    w, t = np.asarray(real_tokens, float), np.asarray(step_times, float)\n"
            f"{body}\n"
        )
    }


def _bootstrap(body: str) -> dict[str, str]:
    return {
        "bootstrap_answer": (
            "def bootstrap_ci(before, after, confidence, num_resamples, seed):\n"
            "    gen = np.random.default_rng(seed)\n"
            "    b, a = np.asarray(before, float), np.asarray(after, float)\n"
            f"{body}\n"
        )
    }


_RESAMPLE = (
    "    mb = b[gen.integers(0, b.size, (num_resamples, b.size))].mean(axis=1)\n"
    "    ma = a[gen.integers(0, a.size, (num_resamples, a.size))].mean(axis=1)\n"
)


def _op(body: str) -> dict[str, str]:
    return {"regression_op_answer": f"def regression_op(diff):\n{body}\n"}


def _runs(body: str) -> dict[str, str]:
    return {
        "runs_answer": (
            "def runs_per_side(relative_change, cv):\n"
            "    z = NormalDist().inv_cdf\n"
            "    d, s = relative_change, cv\n"
            f"{body}\n"
        )
    }


MUTANTS = [
    # Exercise 1: throughput over matched work.
    Mutant(
        name="mean_of_ratios",
        why="the mean of per-step throughputs instead of Σ tokens / Σ time",
        cells=_throughput("    return float(np.mean(w / t))"),
        grades=("throughput_tests",),
    ),
    Mutant(
        name="median_of_ratios",
        why="the median of per-step throughputs",
        cells=_throughput("    return float(np.median(w / t))"),
        grades=("throughput_tests",),
    ),
    Mutant(
        name="sum_over_mean_time",
        why="Σ tokens over the mean step time",
        cells=_throughput("    return float(w.sum() / t.mean())"),
        grades=("throughput_tests",),
    ),
    Mutant(
        name="tokens_per_ms",
        why="tokens per millisecond",
        cells=_throughput("    return float(w.sum() / (t.sum() * 1e3))"),
        grades=("throughput_tests",),
    ),
    Mutant(
        name="throughput_delegates",
        why="calls course_lib.stats.matched_throughput, which the grade cell forbids",
        cells=_throughput("    return matched_throughput(w, t)"),
        grades=("throughput_tests",),
    ),
    # Exercise 2: the padding verdict.
    Mutant(
        name="padded_tokens_verdict",
        why="reads the dashboard's padded tokens per second, which rose",
        cells={"padding_answer": 'padding_verdict = "improvement"'},
        grades=("padding_tests",),
    ),
    Mutant(
        name="no_change_verdict",
        why="calls it no change",
        cells={"padding_answer": 'padding_verdict = "no_change"'},
        grades=("padding_tests",),
    ),
    # Exercise 3: the percentile bootstrap.
    Mutant(
        name="ninety_percent",
        why="quantiles 0.05 and 0.95 whatever the confidence",
        cells=_bootstrap(
            _RESAMPLE
            + "    low, high = np.quantile(ma - mb, [0.05, 0.95])\n"
            + "    return float(low), float(high)"
        ),
        grades=("bootstrap_tests",),
    ),
    Mutant(
        name="normal_approximation",
        why="mean difference ± 1.96 standard errors instead of the resampled quantiles",
        cells=_bootstrap(
            "    d = a.mean() - b.mean()\n"
            "    se = np.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)\n"
            "    z = NormalDist().inv_cdf((1 + confidence) / 2)\n"
            "    return float(d - z * se), float(d + z * se)"
        ),
        grades=("bootstrap_tests",),
    ),
    Mutant(
        name="before_minus_after",
        why="the interval of mean(before) − mean(after)",
        cells=_bootstrap(
            _RESAMPLE
            + "    c = confidence\n"
            + "    low, high = np.quantile(mb - ma, [(1 - c) / 2, (1 + c) / 2])\n"
            + "    return float(low), float(high)"
        ),
        grades=("bootstrap_tests",),
    ),
    Mutant(
        name="pooled_resampling",
        why="both samples drawn from the pooled runs: the null distribution, centred on 0",
        cells=_bootstrap(
            "    p = np.concatenate([b, a])\n"
            "    mb = p[gen.integers(0, p.size, (num_resamples, b.size))].mean(axis=1)\n"
            "    ma = p[gen.integers(0, p.size, (num_resamples, a.size))].mean(axis=1)\n"
            "    c = confidence\n"
            "    low, high = np.quantile(ma - mb, [(1 - c) / 2, (1 + c) / 2])\n"
            "    return float(low), float(high)"
        ),
        grades=("bootstrap_tests",),
    ),
    Mutant(
        name="paired_indices",
        why="one index draw for both samples, as if the runs were paired (unequal sizes break it)",
        cells=_bootstrap(
            "    n = min(a.size, b.size)\n"
            "    idx = gen.integers(0, n, (num_resamples, n))\n"
            "    c = confidence\n"
            "    d = a[idx].mean(axis=1) - b[idx].mean(axis=1)\n"
            "    low, high = np.quantile(d, [(1 - c) / 2, (1 + c) / 2])\n"
            "    return float(low), float(high)"
        ),
        grades=("bootstrap_tests",),
    ),
    Mutant(
        name="only_after_resampled",
        why="resamples only the after runs, taking mean(before) as exact",
        cells=_bootstrap(
            "    ma = a[gen.integers(0, a.size, (num_resamples, a.size))].mean(axis=1)\n"
            "    c = confidence\n"
            "    low, high = np.quantile(ma - b.mean(), [(1 - c) / 2, (1 + c) / 2])\n"
            "    return float(low), float(high)"
        ),
        grades=("bootstrap_tests",),
    ),
    Mutant(
        name="percentile_in_fractions",
        why="np.percentile with fractions (0.025, 0.975) where it takes percents",
        cells=_bootstrap(
            _RESAMPLE
            + "    c = confidence\n"
            + "    low, high = np.percentile(ma - mb, [(1 - c) / 2, (1 + c) / 2])\n"
            + "    return float(low), float(high)"
        ),
        grades=("bootstrap_tests",),
    ),
    Mutant(
        name="bootstrap_delegates",
        why="calls course_lib.stats.bootstrap_diff_ci, which the grade cell forbids",
        cells=_bootstrap(
            "    return course_stats.bootstrap_diff_ci(b, a, confidence=confidence,\n"
            "        num_resamples=num_resamples, seed=seed)"
        ),
        grades=("bootstrap_tests",),
    ),
    # Exercise 4: the op behind the regression.
    Mutant(
        name="largest_total_growth",
        why="the largest growth in total (inclusive) time: a wrapper",
        cells=_op('    return str(diff["diff_duration"].idxmax())'),
        grades=("regression_op_tests",),
    ),
    Mutant(
        name="largest_count_growth",
        why="the largest growth in count",
        cells=_op('    return str(diff["diff_counts"].idxmax())'),
        grades=("regression_op_tests",),
    ),
    Mutant(
        name="largest_absolute_self_change",
        why="the largest change in self time either way, a shrink included",
        cells=_op('    return str(diff["diff_self_duration"].abs().idxmax())'),
        grades=("regression_op_tests",),
    ),
    Mutant(
        name="largest_self_after",
        why="the op with the most self time after the change",
        cells=_op('    return str(diff["after_self_duration"].idxmax())'),
        grades=("regression_op_tests",),
    ),
    Mutant(
        name="largest_relative_total_growth",
        why="the largest ratio of total time after / before (ops that appeared come first)",
        cells=_op(
            '    r = diff["after_total_duration"] / diff["before_total_duration"]\n'
            "    return str(r.replace(np.inf, np.nan).fillna(np.inf).idxmax())"
        ),
        grades=("regression_op_tests",),
    ),
    Mutant(
        name="largest_self_growth_per_call",
        why="the largest growth in self time per call, not in total self time",
        cells=_op(
            '    per_call = (diff["after_self_duration"] / diff["after_counts"]\n'
            '        - diff["before_self_duration"] / diff["before_counts"])\n'
            "    return str(per_call.idxmax())"
        ),
        grades=("regression_op_tests",),
    ),
    Mutant(
        name="first_row",
        why="the first row of the table (sorted by total growth)",
        cells=_op("    return str(diff.index[0])"),
        grades=("regression_op_tests",),
    ),
    # Exercise 5: runs to detect.
    Mutant(
        name="one_sample_formula",
        why="no factor 2: one noisy mean",
        cells=_runs("    return math.ceil((z(0.975) + z(0.8)) ** 2 * (s / d) ** 2)"),
        grades=("runs_tests",),
    ),
    Mutant(
        name="one_sided_z",
        why="z_{1−α} (1.645) for a two-sided test",
        cells=_runs("    return math.ceil(2 * (z(0.95) + z(0.8)) ** 2 * (s / d) ** 2)"),
        grades=("runs_tests",),
    ),
    Mutant(
        name="no_power_term",
        why="the power term z_0.8 left out (50 % power)",
        cells=_runs("    return math.ceil(2 * z(0.975) ** 2 * (s / d) ** 2)"),
        grades=("runs_tests",),
    ),
    Mutant(
        name="rounded_not_ceiled",
        why="rounded to nearest instead of up",
        cells=_runs("    return round(2 * (z(0.975) + z(0.8)) ** 2 * (s / d) ** 2)"),
        grades=("runs_tests",),
    ),
    Mutant(
        name="both_sides_total",
        why="the runs of both sides together",
        cells=_runs("    return 2 * math.ceil(2 * (z(0.975) + z(0.8)) ** 2 * (s / d) ** 2)"),
        grades=("runs_tests",),
    ),
    Mutant(
        name="runs_delegates",
        why="calls course_lib.stats.runs_to_detect, which the grade cell forbids",
        cells=_runs("    return runs_to_detect(d, s)"),
        grades=("runs_tests",),
    ),
]

RIGHT_ANSWERS = [
    Mutant(
        name="throughput_pandas",
        why="pandas Series sums",
        cells=_throughput("    return float(pd.Series(w).sum() / pd.Series(t).sum())"),
        grades=("throughput_tests",),
    ),
    Mutant(
        name="bootstrap_loop_other_order",
        why="a Python loop, after drawn first, a different seed stream",
        cells=_bootstrap(
            "    gen = np.random.default_rng(seed + 1000)\n"
            "    d = []\n"
            "    for _ in range(num_resamples):\n"
            "        ma = gen.choice(a, a.size).mean()\n"
            "        mb = gen.choice(b, b.size).mean()\n"
            "        d.append(ma - mb)\n"
            "    c = confidence\n"
            "    low, high = np.percentile(d, [50 * (1 - c), 50 * (1 + c)])\n"
            "    return [low, high]"
        ),
        grades=("bootstrap_tests",),
    ),
    Mutant(
        name="regression_op_sorted",
        why="sorts by self growth and takes the first name",
        cells=_op('    return diff.sort_values("diff_self_duration", ascending=False).index[0]'),
        grades=("regression_op_tests",),
    ),
    Mutant(
        name="regression_op_recomputed_self",
        why="recomputes the self growth from the before/after columns",
        cells=_op(
            '    growth = diff["after_self_duration"] - diff["before_self_duration"]\n'
            "    return str(growth.idxmax())"
        ),
        grades=("regression_op_tests",),
    ),
    Mutant(
        name="runs_with_constants",
        why="z values typed in (1.959964, 0.841621) and abs(δ)",
        cells=_runs(
            "    n = 2 * (1.959964 + 0.841621) ** 2 * (s / abs(d)) ** 2\n"
            "    return int(math.ceil(n))"
        ),
        grades=("runs_tests",),
    ),
    Mutant(
        name="runs_with_table_z",
        why="z read off a table to two decimals (1.96, 0.84): no case sits near a whole number",
        cells=_runs("    return math.ceil(2 * (1.96 + 0.84) ** 2 * (s / abs(d)) ** 2)"),
        grades=("runs_tests",),
    ),
]
