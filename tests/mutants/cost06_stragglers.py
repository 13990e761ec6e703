"""Plausible wrong answers to cost06_stragglers' exercises; each must lose points when graded.

One group per exercise, each mistake named in the lesson's terms: the wrong axis or reference of
a wait, the mean that one stall inflates, the majority threshold, a z-score rule that three equally
slow ranks all pass, the per-rank rate by division, the exponent 64 for the ratio 1024/64,
the number of independent host draws, the minimum's CDF, the part of the integral outside the
grid, an even spacing assumed, and delegating to course_lib.straggler.

``RIGHT_ANSWERS`` are answers right by another route (another formula, a loop, the density form
of the integral); each must keep full marks on the grade cells it names.
"""

from __future__ import annotations

from tests.mutants import Mutant

_MEAN_WAITS_RIGHT = """
def mean_waits(completion):
    c = np.asarray(completion, dtype=float)
    return (c.max(axis=1, keepdims=True) - c).mean(axis=0)
"""

_PERSISTENT_RIGHT = """
def persistent_straggler(completion):
    c = np.asarray(completion, dtype=float)
    counts = np.bincount(c.argmax(axis=1), minlength=c.shape[1])
    rank = int(counts.argmax())
    return rank if 2 * counts[rank] > c.shape[0] else -1
"""


def _waits(body: str) -> dict[str, str]:
    """Exercise 1's cell with ``body`` as mean_waits' body and the right persistent_straggler."""
    code = "def mean_waits(completion):\n    c = np.asarray(completion, dtype=float)\n" + body
    return {"straggler_answer": code + "\n" + _PERSISTENT_RIGHT}


def _persistent(body: str) -> dict[str, str]:
    """Exercise 1's cell with the right mean_waits and ``body`` as persistent_straggler's."""
    code = (
        "def persistent_straggler(completion):\n    c = np.asarray(completion, dtype=float)\n"
        + body
    )
    return {"straggler_answer": _MEAN_WAITS_RIGHT + "\n" + code}


def _iid(code: str) -> dict[str, str]:
    return {"iid_answer": code}


def _hosts(body: str) -> dict[str, str]:
    return {
        "hosts_answer": "def slow_step_hosts(p_rank, p_host, num_ranks, ranks_per_host):\n" + body
    }


def _grid(body: str) -> dict[str, str]:
    code = (
        "def expected_max_grid(num_ranks, x, cdf_values):\n"
        "    x = np.asarray(x, dtype=float)\n"
        "    F = np.asarray(cdf_values, dtype=float)\n"
    )
    return {"expected_max_answer": code + body}


MUTANTS = [
    # Exercise 1a: mean waits per rank.
    Mutant(
        name="waits_averaged_per_step",
        why="mean over ranks (axis=1): one number per step, not per rank",
        cells=_waits("    return (c.max(axis=1, keepdims=True) - c).mean(axis=1)\n"),
        grades=("mean_waits_tests",),
    ),
    Mutant(
        name="waits_from_the_first_rank",
        why="own time minus the step's fastest rank: time ahead of the first, not the wait",
        cells=_waits("    return (c - c.min(axis=1, keepdims=True)).mean(axis=0)\n"),
        grades=("mean_waits_tests",),
    ),
    Mutant(
        name="waits_from_the_mean_rank",
        why="the step's mean rank time minus own: the barrier is the maximum, not the mean",
        cells=_waits("    return (c.mean(axis=1, keepdims=True) - c).mean(axis=0)\n"),
        grades=("mean_waits_tests",),
    ),
    Mutant(
        name="total_wait",
        why="summed over steps, not averaged",
        cells=_waits("    return (c.max(axis=1, keepdims=True) - c).sum(axis=0)\n"),
        grades=("mean_waits_tests",),
    ),
    Mutant(
        name="waits_in_ms",
        why="milliseconds, not seconds",
        cells=_waits("    return 1e3 * (c.max(axis=1, keepdims=True) - c).mean(axis=0)\n"),
        grades=("mean_waits_tests",),
    ),
    Mutant(
        name="median_wait",
        why="the median over steps, not the mean",
        cells=_waits("    return np.median(c.max(axis=1, keepdims=True) - c, axis=0)\n"),
        grades=("mean_waits_tests",),
    ),
    Mutant(
        name="waits_against_the_overall_max",
        why="one barrier for the whole run (the largest time of any step), not one per step",
        cells=_waits("    return (c.max() - c).mean(axis=0)\n"),
        grades=("mean_waits_tests",),
    ),
    Mutant(
        name="waits_delegated",
        why="course_lib.straggler.rank_waits (right value, delegated)",
        cells=_waits(
            "    from course_lib.straggler import rank_waits\n\n"
            "    return rank_waits(c).mean(axis=0)\n"
        ),
        grades=("mean_waits_tests",),
    ),
    # Exercise 1b: the persistent straggler.
    Mutant(
        name="largest_mean_time",
        why="the rank with the largest mean time: one long stall makes it",
        cells=_persistent("    return int(c.mean(axis=0).argmax())\n"),
        grades=("persistent_tests",),
    ),
    Mutant(
        name="smallest_mean_wait",
        why="the rank that waits least on average (the same mistake through the waits)",
        cells=_persistent(
            "    return int((c.max(axis=1, keepdims=True) - c).mean(axis=0).argmin())\n"
        ),
        grades=("persistent_tests",),
    ),
    Mutant(
        name="most_often_last_without_majority",
        why="the rank last most often, even when that is far from half of the steps",
        cells=_persistent(
            "    return int(np.bincount(c.argmax(axis=1), minlength=c.shape[1]).argmax())\n"
        ),
        grades=("persistent_tests",),
    ),
    Mutant(
        name="half_counts_as_majority",
        why="last in at least half of the steps (>=), not more than half",
        cells=_persistent(
            "    counts = np.bincount(c.argmax(axis=1), minlength=c.shape[1])\n"
            "    rank = int(counts.argmax())\n"
            "    return rank if 2 * counts[rank] >= c.shape[0] else -1\n"
        ),
        grades=("persistent_tests",),
    ),
    Mutant(
        name="largest_median_time",
        why="the rank with the largest median time, whether or not it is last most of the time",
        cells=_persistent("    return int(np.median(c, axis=0).argmax())\n"),
        grades=("persistent_tests",),
    ),
    Mutant(
        name="more_often_than_one_in_n",
        why="last in more than 1/n of the steps (the iid share), not more than half",
        cells=_persistent(
            "    counts = np.bincount(c.argmax(axis=1), minlength=c.shape[1])\n"
            "    rank = int(counts.argmax())\n"
            "    return rank if counts[rank] * c.shape[1] > c.shape[0] else -1\n"
        ),
        grades=("persistent_tests",),
    ),
    Mutant(
        name="z_score_above_one_in_most_steps",
        why="the rank with z > 1 within the step in more than half of the steps: three equally "
        "slow ranks all pass it, though none is last in most steps",
        cells=_persistent(
            "    z = (c - c.mean(axis=1, keepdims=True)) / c.std(axis=1, keepdims=True)\n"
            "    counts = (z > 1).sum(axis=0)\n"
            "    rank = int(counts.argmax())\n"
            "    return rank if 2 * counts[rank] > c.shape[0] else -1\n"
        ),
        grades=("persistent_tests",),
    ),
    Mutant(
        name="persistent_delegated",
        why="course_lib.straggler.persistent_stragglers (right value, delegated)",
        cells=_persistent(
            "    from course_lib.straggler import persistent_stragglers\n\n"
            "    found = persistent_stragglers(c)\n"
            "    return found[0] if found else -1\n"
        ),
        grades=("persistent_tests",),
    ),
    # Exercise 2: 64 -> 1024 ranks under iid.
    Mutant(
        name="per_rank_rate_by_division",
        why="p = P64 / 64, then 1 − (1 − p)^1024",
        cells=_iid("iid_1024 = 1 - (1 - P64_SLOW_STEPS / 64) ** 1024"),
        grades=("iid_tests",),
    ),
    Mutant(
        name="exponent_64_by_the_setup_helper",
        why="prob_slow_step(P64, 64): the exponent is the ratio 1024/64 = 16, not 64 (also the "
        "double mistake '3.1 % is the per-rank rate at 64 ranks')",
        cells=_iid("iid_1024 = prob_slow_step(P64_SLOW_STEPS, 64)"),
        grades=("iid_tests",),
    ),
    Mutant(
        name="exponent_ratio_minus_one",
        why="1 − (1 − P64)^(1024/64 − 1): an off-by-one in the exponent",
        cells=_iid("iid_1024 = 1 - (1 - P64_SLOW_STEPS) ** (1024 / 64 - 1)"),
        grades=("iid_tests",),
    ),
    Mutant(
        name="linear_scaling",
        why="P64 × 1024/64: probabilities do not add",
        cells=_iid("iid_1024 = P64_SLOW_STEPS * 1024 / 64"),
        grades=("iid_tests",),
    ),
    Mutant(
        name="step_rate_as_rank_rate",
        why="3.1 % used as the per-rank rate at 1024 ranks",
        cells=_iid("iid_1024 = 1 - (1 - P64_SLOW_STEPS) ** 1024"),
        grades=("iid_tests",),
    ),
    Mutant(
        name="no_slow_rank",
        why="the probability that no rank is slow",
        cells=_iid("iid_1024 = (1 - P64_SLOW_STEPS) ** 16"),
        grades=("iid_tests",),
    ),
    Mutant(
        name="no_extrapolation",
        why="the 64-rank rate kept",
        cells=_iid("iid_1024 = P64_SLOW_STEPS"),
        grades=("iid_tests",),
    ),
    Mutant(
        name="iid_percent",
        why="a percentage, not a fraction",
        cells=_iid("iid_1024 = 100 * (1 - (1 - P64_SLOW_STEPS) ** 16)"),
        grades=("iid_tests",),
    ),
    # Exercise 3: host-correlated slow steps.
    Mutant(
        name="one_host_draw_per_rank",
        why="n host draws: a host's ranks share one draw",
        cells=_hosts("    return 1 - (1 - p_host) ** num_ranks * (1 - p_rank) ** num_ranks\n"),
        grades=("hosts_tests",),
    ),
    Mutant(
        name="host_size_as_exponent",
        why="(1 − p_host)^g: the exponent is the number of hosts n/g",
        cells=_hosts("    return 1 - (1 - p_host) ** ranks_per_host * (1 - p_rank) ** num_ranks\n"),
        grades=("hosts_tests",),
    ),
    Mutant(
        name="host_term_only",
        why="the ranks' own slowdowns left out",
        cells=_hosts("    return 1 - (1 - p_host) ** (num_ranks // ranks_per_host)\n"),
        grades=("hosts_tests",),
    ),
    Mutant(
        name="rank_term_only",
        why="the host-wide slowdowns left out",
        cells=_hosts("    return 1 - (1 - p_rank) ** num_ranks\n"),
        grades=("hosts_tests",),
    ),
    Mutant(
        name="probabilities_added",
        why="P(a slow host) + P(a slow rank): the complements multiply",
        cells=_hosts(
            "    return (1 - (1 - p_host) ** (num_ranks // ranks_per_host)) + (\n"
            "        1 - (1 - p_rank) ** num_ranks\n"
            "    )\n"
        ),
        grades=("hosts_tests",),
    ),
    Mutant(
        name="linear_host_model",
        why="the linear n·p approximation",
        cells=_hosts("    return num_ranks // ranks_per_host * p_host + num_ranks * p_rank\n"),
        grades=("hosts_tests",),
    ),
    Mutant(
        name="p_rank_p_host_swapped",
        why="the arguments' roles swapped: p_rank per host, p_host per rank",
        cells=_hosts(
            "    return 1 - (1 - p_rank) ** (num_ranks // ranks_per_host)"
            " * (1 - p_host) ** num_ranks\n"
        ),
        grades=("hosts_tests",),
    ),
    Mutant(
        name="iid_with_the_marginal_rate",
        why="iid ranks with the per-rank rate 1 − (1 − p_host)(1 − p_rank): ignores the sharing",
        cells=_hosts(
            "    p = 1 - (1 - p_host) * (1 - p_rank)\n    return 1 - (1 - p) ** num_ranks\n"
        ),
        grades=("hosts_tests",),
    ),
    Mutant(
        name="hosts_delegated",
        why="course_lib.straggler.prob_slow_step_hosts (right value, delegated)",
        cells=_hosts(
            "    from course_lib.straggler import prob_slow_step_hosts\n\n"
            "    return prob_slow_step_hosts(p_rank, p_host, num_ranks, ranks_per_host)\n"
        ),
        grades=("hosts_tests",),
    ),
    # Exercise 4: E[max] from a CDF on a grid.
    Mutant(
        name="positive_part_from_the_grid_start",
        why="∫ (1 − F^n) over the grid's x ≥ 0 only: x[0] > 0 loses [0, x[0]], x[0] < 0 loses "
        "− ∫ F^n",
        cells=_grid(
            "    pos = x >= 0\n    return float(np.trapezoid(1 - F[pos] ** num_ranks, x[pos]))\n"
        ),
        grades=("expected_max_tests",),
    ),
    Mutant(
        name="split_at_zero_without_offset",
        why="the syllabus's two integrals over the grid, forgetting 1 − F^n = 1 on [0, x[0]]",
        cells=_grid(
            "    pos, neg = x >= 0, x <= 0\n"
            "    up = np.trapezoid(1 - F[pos] ** num_ranks, x[pos]) if pos.sum() > 1 else 0.0\n"
            "    down = np.trapezoid(F[neg] ** num_ranks, x[neg]) if neg.sum() > 1 else 0.0\n"
            "    return float(up - down)\n"
        ),
        grades=("expected_max_tests",),
    ),
    Mutant(
        name="minimum_cdf",
        why="1 − (1 − F)^n: the CDF of the minimum",
        cells=_grid("    return float(x[0] + np.trapezoid((1 - F) ** num_ranks, x))\n"),
        grades=("expected_max_tests",),
    ),
    Mutant(
        name="one_rank_mean",
        why="F instead of F^n: one rank's mean",
        cells=_grid("    return float(x[0] + np.trapezoid(1 - F, x))\n"),
        grades=("expected_max_tests",),
    ),
    Mutant(
        name="n_times_the_mean",
        why="n times one rank's mean",
        cells=_grid("    return float(num_ranks * (x[0] + np.trapezoid(1 - F, x)))\n"),
        grades=("expected_max_tests",),
    ),
    Mutant(
        name="even_spacing_assumed",
        why="a Riemann sum with dx = x[1] − x[0]: the points are not evenly spaced",
        cells=_grid("    return float(x[0] + np.sum(1 - F**num_ranks) * (x[1] - x[0]))\n"),
        grades=("expected_max_tests",),
    ),
    Mutant(
        name="median_of_the_maximum",
        why="where F^n = 1/2: the median of the maximum, not its mean",
        cells=_grid("    return float(np.interp(0.5, F**num_ranks, x))\n"),
        grades=("expected_max_tests",),
    ),
    Mutant(
        name="expected_max_delegated",
        why="course_lib.straggler.expected_max with an interpolated CDF (right value, delegated)",
        cells=_grid(
            "    from course_lib.straggler import expected_max\n\n"
            "    return expected_max(num_ranks, lambda t: np.interp(t, x, F), x[0], x[-1])\n"
        ),
        grades=("expected_max_tests",),
    ),
    # Exercise 5: which assumption RUN_B breaks.
    Mutant(
        name="identical_violated",
        why="a persistent straggler: no rank stands out",
        cells={"violates_answer": 'run_b_violates = "identical"'},
        grades=("violates_tests",),
    ),
    Mutant(
        name="looks_iid",
        why="the means match, so iid: the correlation within hosts was not checked",
        cells={"violates_answer": 'run_b_violates = "neither"'},
        grades=("violates_tests",),
    ),
]

RIGHT_ANSWERS = [
    Mutant(
        name="mean_barrier_minus_mean_time",
        why="mean of (max − own) = mean max − mean own (linearity), with a loop over steps",
        cells=_waits(
            "    barrier = np.array([row.max() for row in c])\n"
            "    return barrier.mean() - c.mean(axis=0)\n"
        ),
        grades=("mean_waits_tests",),
    ),
    Mutant(
        name="persistent_by_loop",
        why="a dictionary count of the last rank per step, ranks as Python ints",
        cells=_persistent(
            "    counts = {}\n"
            "    for row in c:\n"
            "        r = int(np.argmax(row))\n"
            "        counts[r] = counts.get(r, 0) + 1\n"
            "    for r, k in counts.items():\n"
            "        if k > len(c) / 2:\n"
            "            return r\n"
            "    return -1\n"
        ),
        grades=("persistent_tests",),
    ),
    Mutant(
        name="iid_from_the_per_rank_rate",
        why="the per-rank rate from 1 − (1 − p)^64 = P64, then prob_slow_step at 1024 ranks",
        cells=_iid(
            "p_rank = 1 - (1 - P64_SLOW_STEPS) ** (1 / 64)\niid_1024 = prob_slow_step(p_rank, 1024)"
        ),
        grades=("iid_tests",),
    ),
    Mutant(
        name="iid_by_log1p",
        why="1 − (1 − P64)^16 through expm1/log1p",
        cells=_iid("iid_1024 = float(-np.expm1(16 * np.log1p(-P64_SLOW_STEPS)))"),
        grades=("iid_tests",),
    ),
    Mutant(
        name="hosts_by_float_division",
        why="n/g hosts as a float exponent, through expm1/log1p",
        cells=_hosts(
            "    hosts = num_ranks / ranks_per_host\n"
            "    return float(-np.expm1(hosts * np.log1p(-p_host) + num_ranks * np.log1p(-p_rank)))\n"
        ),
        grades=("hosts_tests",),
    ),
    Mutant(
        name="density_form",
        why="E[max] = ∫ x d(F^n): midpoints times increments of F^n",
        cells=_grid(
            "    G = F**num_ranks\n"
            "    G = np.concatenate([[0.0], G, [1.0]])\n"
            "    xs = np.concatenate([[x[0]], x, [x[-1]]])\n"
            "    return float(np.sum((xs[1:] + xs[:-1]) / 2 * np.diff(G)))\n"
        ),
        grades=("expected_max_tests",),
    ),
    Mutant(
        name="split_at_zero_with_offsets",
        why="the syllabus's two integrals, the grid extended to 0 by F's value at 0",
        cells=_grid(
            "    G = F**num_ranks\n"
            "    if x[0] > 0:\n"
            "        x, G = np.concatenate([[0.0], x]), np.concatenate([[0.0], G])\n"
            "    g0 = np.interp(0.0, x, G)\n"
            "    pos, neg = x > 0, x < 0\n"
            "    up = np.trapezoid(np.concatenate([[1 - g0], 1 - G[pos]]), np.concatenate([[0.0], x[pos]]))\n"
            "    down = np.trapezoid(np.concatenate([G[neg], [g0]]), np.concatenate([x[neg], [0.0]]))\n"
            "    return float(up - down)\n"
        ),
        grades=("expected_max_tests",),
    ),
    Mutant(
        name="persistent_as_numpy_int",
        why="the rank as a numpy int64 from argmax, the majority test on a boolean mask",
        cells=_persistent(
            "    counts = np.bincount(c.argmax(axis=1), minlength=c.shape[1])\n"
            "    winners = np.flatnonzero(counts > c.shape[0] / 2)\n"
            "    return winners[0] if winners.size else np.int64(-1)\n"
        ),
        grades=("persistent_tests",),
    ),
]
