"""Plausible wrong answers to cost07_controlled_tests, each of which must lose points.

``RIGHT_ANSWERS`` are answers a learner could give that are right by another route; each must keep
full marks on the grade cells it names.
"""

from __future__ import annotations

from tests.mutants import Mutant

# --- Exercise 1: bus bandwidth -----------------------------------------------------------------

_TOTAL = "    total = size * (n if collective in ('all_gather', 'reduce_scatter') else 1)\n"
_RIGHT_FACTOR = (
    "    factor = {'all_reduce': 2 * (n - 1) / n, 'broadcast': 1.0, 'reduce': 1.0}.get(\n"
    "        collective, (n - 1) / n\n"
    "    )\n"
)


def _busbw(body: str, prelude: str = "") -> dict[str, str]:
    header = (
        f"{prelude}def bus_bandwidth_gbs(collective, num_ranks, count, dtype_bytes, time):\n"
        "    n = num_ranks\n"
        "    size = count * dtype_bytes\n"
    )
    return {"busbw_answer": header + body}


BUSBW = ("busbw_tests",)

# --- Exercise 2: the fit -----------------------------------------------------------------------


def _fit(body: str) -> dict[str, str]:
    header = (
        "def fit_alpha_beta(sizes, times):\n"
        "    s = np.asarray(sizes, dtype=float)\n"
        "    t = np.asarray(times, dtype=float)\n"
    )
    return {"fit_answer": header + body}


FIT = ("fit_alpha_tests", "fit_beta_tests")
_OLS = "    ds = s - s.mean()\n    beta = np.dot(ds, t - t.mean()) / np.dot(ds, ds)\n"

# --- Exercise 3: bucket all-reduces ------------------------------------------------------------


def _buckets(body: str) -> dict[str, str]:
    header = (
        "def bucketed_allreduce_time(bucket_bytes, num_ranks, alpha, beta):\n"
        "    sizes = np.asarray(bucket_bytes, dtype=float)\n"
        "    n = num_ranks\n"
        "    f = (n - 1) / n\n"
        "    k = len(sizes)\n"
    )
    return {"buckets_answer": header + body}


BUCKETS = ("buckets_tests",)

# --- Exercise 4: contention share --------------------------------------------------------------


def _share(expr: str) -> dict[str, str]:
    return {"contention_answer": f"r = RUNS_MS\ncontention_share = {expr}\n"}


SHARE = ("contention_tests",)

# --- Exercise 5: crossover ---------------------------------------------------------------------


def _cross(body: str, prelude: str = "") -> dict[str, str]:
    header = (
        f"{prelude}def crossover_bytes(num_ranks, alpha, beta):\n"
        "    n = num_ranks\n"
        "    f = (n - 1) / n\n"
        "    L = (n - 1).bit_length()\n"
    )
    return {"crossover_answer": header + body}


CROSS = ("crossover_tests",)

MUTANTS = [
    # Exercise 1
    Mutant(
        name="busbw_is_algbw",
        why="reports the algorithm bandwidth S/t, without the factor",
        cells=_busbw(_TOTAL + "    return total / time / 1e9\n"),
        grades=BUSBW,
    ),
    Mutant(
        name="busbw_all_reduce_without_the_2",
        why="(n-1)/n for every collective but broadcast and reduce, all-reduce included",
        cells=_busbw(
            _TOTAL
            + "    factor = 1.0 if collective in ('broadcast', 'reduce') else (n - 1) / n\n"
            + "    return total / time * factor / 1e9\n"
        ),
        grades=BUSBW,
    ),
    Mutant(
        name="busbw_per_rank_size",
        why="S = count × dtype for all-gather and reduce-scatter: the per-rank size, not the total",
        cells=_busbw(_RIGHT_FACTOR + "    return size / time * factor / 1e9\n"),
        grades=BUSBW,
    ),
    Mutant(
        name="busbw_total_for_every_collective",
        why="multiplies the count by n for every collective",
        cells=_busbw(_RIGHT_FACTOR + "    return size * n / time * factor / 1e9\n"),
        grades=BUSBW,
    ),
    Mutant(
        name="busbw_all_reduce_factor_everywhere",
        why="2(n-1)/n for every collective",
        cells=_busbw(_TOTAL + "    return total / time * 2 * (n - 1) / n / 1e9\n"),
        grades=BUSBW,
    ),
    Mutant(
        name="busbw_broadcast_like_all_gather",
        why="(n-1)/n for broadcast and reduce too",
        cells=_busbw(
            _TOTAL
            + "    factor = 2 * (n - 1) / n if collective == 'all_reduce' else (n - 1) / n\n"
            + "    return total / time * factor / 1e9\n"
        ),
        grades=BUSBW,
    ),
    Mutant(
        name="busbw_gib_per_s",
        why="GiB/s (2**30) instead of GB/s",
        cells=_busbw(_TOTAL + _RIGHT_FACTOR + "    return total / time * factor / 2**30\n"),
        grades=BUSBW,
    ),
    Mutant(
        name="busbw_bytes_per_s",
        why="B/s: forgets the GB",
        cells=_busbw(_TOTAL + _RIGHT_FACTOR + "    return total / time * factor\n"),
        grades=BUSBW,
    ),
    Mutant(
        name="busbw_time_in_ms",
        why="takes the time as milliseconds",
        cells=_busbw(_TOTAL + _RIGHT_FACTOR + "    return total / (time * 1e3) * factor / 1e9\n"),
        grades=BUSBW,
    ),
    Mutant(
        name="busbw_delegates_bus_bandwidth",
        why="course_lib.collectives.bus_bandwidth (right value, delegated)",
        cells=_busbw(_TOTAL + "    return bus_bandwidth(total / time, collective, n) / 1e9\n"),
        grades=BUSBW,
    ),
    Mutant(
        name="busbw_delegates_busbw_factor",
        why="course_lib.collectives.busbw_factor (right value, delegated)",
        cells=_busbw(
            _TOTAL + "    return total / time * collectives.busbw_factor(collective, n) / 1e9\n"
        ),
        grades=BUSBW,
    ),
    Mutant(
        name="busbw_factor_from_ring_model",
        why="the factor read off ring_all_reduce_time(1, n, 0, 1) = 2(n-1)/n (delegated)",
        cells=_busbw(
            _TOTAL
            + "    ar = ring_all_reduce_time(1.0, n, 0.0, 1.0)\n"
            + "    factor = {'all_reduce': ar, 'broadcast': 1.0, 'reduce': 1.0}.get(collective, ar / 2)\n"
            + "    return total / time * factor / 1e9\n"
        ),
        grades=BUSBW,
    ),
    Mutant(
        name="busbw_factor_from_simulated_ring",
        why="the factor as the simulated ring's bytes sent per rank over the buffer (delegated)",
        cells=_busbw(
            _TOTAL
            + "    ar = collectives.simulate_ring_all_reduce(np.zeros((n, n)))[2][0] / (n * 8)\n"
            + "    factor = {'all_reduce': ar, 'broadcast': 1.0, 'reduce': 1.0}.get(collective, ar / 2)\n"
            + "    return total / time * factor / 1e9\n"
        ),
        grades=BUSBW,
    ),
    Mutant(
        name="busbw_evals_factor_table",
        why="evaluates a formula-string table of factors from course_lib.collectives (removed)",
        cells=_busbw(
            _TOTAL
            + "    formula = collectives.BUSBW_FACTORS[collective].replace('2(', '2*(')\n"
            + "    return total / time * eval(formula, {'n': n}) / 1e9\n"
        ),
        grades=BUSBW,
    ),
    # Exercise 2
    Mutant(
        name="fit_through_origin",
        why="fits t = βS without an intercept, so α = 0",
        cells=_fit("    return 0.0, float(np.dot(s, t) / np.dot(s, s))\n"),
        grades=FIT,
    ),
    Mutant(
        name="fit_end_points",
        why="the line through the smallest and the largest message",
        cells=_fit(
            "    lo, hi = np.argmin(s), np.argmax(s)\n"
            "    beta = (t[hi] - t[lo]) / (s[hi] - s[lo])\n"
            "    return float(t[lo] - beta * s[lo]), float(beta)\n"
        ),
        grades=FIT,
    ),
    Mutant(
        name="fit_first_and_last_points",
        why="the line through the first and last points as given (the sweep is not sorted)",
        cells=_fit(
            "    beta = (t[-1] - t[0]) / (s[-1] - s[0])\n"
            "    return float(t[0] - beta * s[0]), float(beta)\n"
        ),
        grades=FIT,
    ),
    Mutant(
        name="fit_relative_residuals",
        why="least squares of relative residuals (the lesson's measurement), not ordinary",
        cells=_fit(
            "    beta, alpha = np.polyfit(s, t, 1, w=1 / t)\n    return float(alpha), float(beta)\n"
        ),
        grades=FIT,
    ),
    Mutant(
        name="fit_log_log",
        why="a straight line in log-log coordinates",
        cells=_fit(
            "    slope, icpt = np.polyfit(np.log(np.maximum(s, 1)), np.log(t), 1)\n"
            "    return float(np.exp(icpt)), float(slope)\n"
        ),
        grades=FIT,
    ),
    Mutant(
        name="fit_polyfit_order",
        why="alpha, beta = np.polyfit(...): polyfit returns the slope first",
        cells=_fit("    alpha, beta = np.polyfit(s, t, 1)\n    return float(alpha), float(beta)\n"),
        grades=FIT,
    ),
    Mutant(
        name="fit_bandwidth_not_beta",
        why="returns 1/β, the bandwidth, in place of β",
        cells=_fit(_OLS + "    return float(t.mean() - beta * s.mean()), float(1 / beta)\n"),
        grades=("fit_beta_tests",),
    ),
    Mutant(
        name="fit_alpha_is_smallest_time",
        why="α read off as the smallest measured time, β by least squares",
        cells=_fit(_OLS + "    return float(t.min()), float(beta)\n"),
        grades=("fit_alpha_tests",),
    ),
    Mutant(
        name="fit_alpha_is_smallest_message_time",
        why="α read off as the time of the smallest message",
        cells=_fit(_OLS + "    return float(t[np.argmin(s)]), float(beta)\n"),
        grades=("fit_alpha_tests",),
    ),
    Mutant(
        name="fit_delegates",
        why="course_lib.collectives.fit_alpha_beta (right value, delegated)",
        cells=_fit("    fit = collectives.fit_alpha_beta(s, t)\n    return fit.alpha, fit.beta\n"),
        grades=FIT,
    ),
    # Exercise 3
    Mutant(
        name="buckets_one_allreduce",
        why="one all-reduce of all the gradients: α paid once, not per bucket",
        cells=_buckets("    return 2 * (n - 1) * alpha + 2 * f * sizes.sum() * beta\n"),
        grades=BUCKETS,
    ),
    Mutant(
        name="buckets_no_latency",
        why="the bandwidth term alone",
        cells=_buckets("    return float(2 * f * sizes.sum() * beta)\n"),
        grades=BUCKETS,
    ),
    Mutant(
        name="buckets_n_minus_1_latencies",
        why="(n-1)α per bucket: counts only the reduce-scatter's steps",
        cells=_buckets("    return float(k * (n - 1) * alpha + 2 * f * sizes.sum() * beta)\n"),
        grades=BUCKETS,
    ),
    Mutant(
        name="buckets_2n_latencies",
        why="2nα per bucket: an off-by-one in the ring's steps",
        cells=_buckets("    return float(k * 2 * n * alpha + 2 * f * sizes.sum() * beta)\n"),
        grades=BUCKETS,
    ),
    Mutant(
        name="buckets_two_s_beta",
        why="2Sβ: forgets the (n-1)/n of the ring's bandwidth term",
        cells=_buckets("    return float(k * 2 * (n - 1) * alpha + 2 * sizes.sum() * beta)\n"),
        grades=BUCKETS,
    ),
    Mutant(
        name="buckets_point_to_point",
        why="S·β per bucket: a point-to-point message, not an all-reduce",
        cells=_buckets("    return float(k * 2 * (n - 1) * alpha + sizes.sum() * beta)\n"),
        grades=BUCKETS,
    ),
    Mutant(
        name="buckets_reduce_scatter_only",
        why="(n-1)α + ((n-1)/n)Sβ: half the all-reduce",
        cells=_buckets("    return float(k * (n - 1) * alpha + f * sizes.sum() * beta)\n"),
        grades=BUCKETS,
    ),
    Mutant(
        name="buckets_tree",
        why="the binomial tree's time instead of the ring's",
        cells=_buckets(
            "    L = (n - 1).bit_length()\n"
            "    return float(2 * L * (k * alpha + sizes.sum() * beta))\n"
        ),
        grades=BUCKETS,
    ),
    Mutant(
        name="buckets_all_at_the_cap",
        why="every bucket taken as 25 MiB",
        cells=_buckets("    return float(k * (2 * (n - 1) * alpha + 2 * f * 25 * MiB * beta))\n"),
        grades=BUCKETS,
    ),
    Mutant(
        name="buckets_milliseconds",
        why="the right total in ms",
        cells=_buckets(
            "    return 1e3 * float(k * 2 * (n - 1) * alpha + 2 * f * sizes.sum() * beta)\n"
        ),
        grades=BUCKETS,
    ),
    Mutant(
        name="buckets_delegates",
        why="sums course_lib.collectives.ring_all_reduce_time (right value, delegated)",
        cells=_buckets(
            "    return float(np.sum(ring_all_reduce_time(sizes, n, alpha, beta))) if k else 0.0\n"
        ),
        grades=BUCKETS,
    ),
    # Exercise 4
    Mutant(
        name="share_ratio_of_times",
        why="isolated_with_matmuls / in_step: a ratio of times",
        cells=_share('r["isolated_with_matmuls"] / r["in_step"]'),
        grades=SHARE,
    ),
    Mutant(
        name="share_the_rest",
        why="the part of the gap contention does not explain",
        cells=_share(
            '(r["in_step"] - r["isolated_with_matmuls"]) / (r["in_step"] - r["isolated"])'
        ),
        grades=SHARE,
    ),
    Mutant(
        name="share_of_waiting",
        why="the waiting share, in_step minus in_step_after_barrier, over the gap",
        cells=_share(
            '(r["in_step"] - r["in_step_after_barrier"]) / (r["in_step"] - r["isolated"])'
        ),
        grades=SHARE,
    ),
    Mutant(
        name="share_over_in_step",
        why="the contention delay over the in-step time",
        cells=_share('(r["isolated_with_matmuls"] - r["isolated"]) / r["in_step"]'),
        grades=SHARE,
    ),
    Mutant(
        name="share_over_isolated",
        why="the relative slowdown of the isolated run, over the isolated time",
        cells=_share('(r["isolated_with_matmuls"] - r["isolated"]) / r["isolated"]'),
        grades=SHARE,
    ),
    Mutant(
        name="share_everything_but_waiting",
        why="in_step_after_barrier minus isolated over the gap: all but the waiting, not contention",
        cells=_share(
            '(r["in_step_after_barrier"] - r["isolated"]) / (r["in_step"] - r["isolated"])'
        ),
        grades=SHARE,
    ),
    Mutant(
        name="share_in_percent",
        why="a percentage, not a fraction",
        cells=_share(
            '100 * (r["isolated_with_matmuls"] - r["isolated"]) / (r["in_step"] - r["isolated"])'
        ),
        grades=SHARE,
    ),
    # Exercise 5
    Mutant(
        name="crossover_log2_not_rounded",
        why="log2(n) without the ceiling",
        cells=_cross(
            "    lg = math.log2(n)\n    return 2 * (n - 1 - lg) * alpha / (2 * beta * (lg - f))\n",
            prelude="import math\n\n\n",
        ),
        grades=CROSS,
    ),
    Mutant(
        name="crossover_log2_floor",
        why="floor(log2 n) levels",
        cells=_cross(
            "    lg = n.bit_length() - 1\n"
            "    return 2 * (n - 1 - lg) * alpha / (2 * beta * (lg - f))\n"
        ),
        grades=CROSS,
    ),
    Mutant(
        name="crossover_ring_moves_2s",
        why="the ring's bandwidth term taken as 2Sβ, without (n-1)/n",
        cells=_cross("    return 2 * (n - 1 - L) * alpha / (2 * beta * (L - 1))\n"),
        grades=CROSS,
    ),
    Mutant(
        name="crossover_tree_one_way",
        why="the tree as a reduce only, ⌈log₂ n⌉(α + Sβ)",
        cells=_cross("    return (2 * (n - 1) - L) * alpha / (beta * (L - 2 * f))\n"),
        grades=CROSS,
    ),
    Mutant(
        name="crossover_ring_n_minus_1_latencies",
        why="the ring's latency taken as (n-1)α",
        cells=_cross("    return ((n - 1) - 2 * L) * alpha / (2 * beta * (L - f))\n"),
        grades=CROSS,
    ),
    Mutant(
        name="crossover_in_kib",
        why="the right size in KiB",
        cells=_cross("    return 2 * (n - 1 - L) * alpha / (2 * beta * (L - f)) / 1024\n"),
        grades=CROSS,
    ),
    Mutant(
        name="crossover_swapped_alpha_beta",
        why="α and β swapped in the formula",
        cells=_cross("    return 2 * (n - 1 - L) * beta / (2 * alpha * (L - f))\n"),
        grades=CROSS,
    ),
    Mutant(
        name="crossover_delegates",
        why="course_lib.collectives.ring_tree_crossover (right value, delegated)",
        cells=_cross("    return collectives.ring_tree_crossover(n, alpha, beta)\n"),
        grades=CROSS,
    ),
    Mutant(
        name="crossover_bisects_library_models",
        why="bisection on the library's ring_all_reduce_time - tree_all_reduce_time (delegated: "
        "the tree model does the ceil(log2 n) the exercise tests)",
        cells=_cross(
            "    lo, hi = 1.0, 1e15\n"
            "    for _ in range(200):\n"
            "        mid = (lo * hi) ** 0.5\n"
            "        if ring_all_reduce_time(mid, n, alpha, beta) > "
            "collectives.tree_all_reduce_time(mid, n, alpha, beta):\n"
            "            lo = mid\n"
            "        else:\n"
            "            hi = mid\n"
            "    return (lo * hi) ** 0.5\n"
        ),
        grades=CROSS,
    ),
]

RIGHT_ANSWERS = [
    Mutant(
        name="busbw_with_if_chain",
        why="an if/elif chain over the collectives, the total size computed first",
        cells=_busbw(
            "    if collective in ('all_gather', 'reduce_scatter'):\n"
            "        size = size * n\n"
            "    if collective == 'all_reduce':\n"
            "        factor = 2 * (n - 1) / n\n"
            "    elif collective in ('broadcast', 'reduce'):\n"
            "        factor = 1\n"
            "    else:\n"
            "        factor = (n - 1) / n\n"
            "    algbw = size / time\n"
            "    return np.float64(algbw * factor / 1e9)\n"
        ),
        grades=BUSBW,
    ),
    Mutant(
        name="busbw_via_algorithm_bandwidth",
        why="algbw from the setup's algorithm_bandwidth (not forbidden), times the factor",
        cells=_busbw(
            _TOTAL + _RIGHT_FACTOR + "    return algorithm_bandwidth(total, time) * factor / 1e9\n"
        ),
        grades=BUSBW,
    ),
    Mutant(
        name="busbw_rounded_like_nccl_tests",
        why="the busbw rounded to two decimals, as nccl-tests prints it",
        cells=_busbw(_TOTAL + _RIGHT_FACTOR + "    return round(total / time * factor / 1e9, 2)\n"),
        grades=BUSBW,
    ),
    Mutant(
        name="fit_polyfit",
        why="beta, alpha = np.polyfit(sizes, times, 1)",
        cells=_fit("    beta, alpha = np.polyfit(s, t, 1)\n    return alpha, beta\n"),
        grades=FIT,
    ),
    Mutant(
        name="fit_lstsq_list",
        why="np.linalg.lstsq on [1, S], returned as a list of numpy floats",
        cells=_fit(
            "    X = np.column_stack([np.ones_like(s), s])\n"
            "    return list(np.linalg.lstsq(X, t, rcond=None)[0])\n"
        ),
        grades=FIT,
    ),
    Mutant(
        name="fit_normal_equations_by_hand",
        why="the 2×2 normal equations solved with sums",
        cells=_fit(
            "    m = len(s)\n"
            "    sx, sy, sxx, sxy = s.sum(), t.sum(), (s * s).sum(), (s * t).sum()\n"
            "    beta = (m * sxy - sx * sy) / (m * sxx - sx * sx)\n"
            "    return (sy - beta * sx) / m, beta\n"
        ),
        grades=FIT,
    ),
    Mutant(
        name="buckets_loop",
        why="a Python loop over the buckets",
        cells=_buckets(
            "    total = 0.0\n"
            "    for b in bucket_bytes:\n"
            "        total += 2 * (n - 1) * alpha + 2 * (n - 1) / n * b * beta\n"
            "    return total\n"
        ),
        grades=BUCKETS,
    ),
    Mutant(
        name="buckets_via_busbw",
        why="each bucket as 2(n-1)α + S / algbw, with algbw = link bandwidth / (2(n-1)/n)",
        cells=_buckets(
            "    algbw = (1 / beta) / (2 * f) if n > 1 else float('inf')\n"
            "    return np.float64(k * 2 * (n - 1) * alpha + sizes.sum() / algbw)\n"
        ),
        grades=BUCKETS,
    ),
    Mutant(
        name="algbw_via_bus_bandwidth",
        why="each bucket as 2(n-1)α + S / algbw, the factor read off bus_bandwidth (not forbidden)",
        cells=_buckets(
            "    factor = bus_bandwidth(1.0, 'all_reduce', n)\n"
            "    algbw = (1 / beta) / factor\n"
            "    return k * 2 * (n - 1) * alpha + sizes.sum() / algbw\n"
        ),
        grades=BUCKETS,
    ),
    Mutant(
        name="share_rounded_to_3_digits",
        why="the share to the 3 significant digits asked",
        cells={"contention_answer": "contention_share = 0.520\n"},
        grades=SHARE,
    ),
    Mutant(
        name="share_truncated_3_digits",
        why="the share truncated to 3 significant digits, 0.519 (0.51984...)",
        cells={"contention_answer": "contention_share = 0.519\n"},
        grades=SHARE,
    ),
    Mutant(
        name="share_by_differences",
        why="contention delay over the gap, written with intermediate names",
        cells={
            "contention_answer": "delay = RUNS_MS['isolated_with_matmuls'] - RUNS_MS['isolated']\n"
            "gap = RUNS_MS['in_step'] - RUNS_MS['isolated']\n"
            "contention_share = np.float64(delay / gap)\n"
        },
        grades=SHARE,
    ),
    Mutant(
        name="crossover_math_ceil",
        why="math.ceil(math.log2(n)) for the levels",
        cells=_cross(
            "    lv = math.ceil(math.log2(n))\n"
            "    return 2 * (n - 1 - lv) * alpha / (2 * beta * (lv - f))\n",
            prelude="import math\n\n\n",
        ),
        grades=CROSS,
    ),
    Mutant(
        name="crossover_rounded_to_bytes",
        why="the crossover rounded to a whole number of bytes",
        cells=_cross("    return int(round(2 * (n - 1 - L) * alpha / (2 * beta * (L - f))))\n"),
        grades=CROSS,
    ),
    Mutant(
        name="crossover_bisection_by_hand",
        why="bisection (in log space) on ring - tree, both models written by hand",
        cells=_cross(
            "    def gap(S):\n"
            "        ring = 2 * (n - 1) * alpha + 2 * f * S * beta\n"
            "        tree = 2 * L * (alpha + S * beta)\n"
            "        return ring - tree\n"
            "    lo, hi = 1.0, 1e15\n"
            "    for _ in range(200):\n"
            "        mid = (lo * hi) ** 0.5\n"
            "        if gap(mid) > 0:\n"
            "            lo = mid\n"
            "        else:\n"
            "            hi = mid\n"
            "    return (lo * hi) ** 0.5\n"
        ),
        grades=CROSS,
    ),
]
