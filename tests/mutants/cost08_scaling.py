"""Plausible wrong answers to cost08_scaling's exercises; each must lose points when graded.

``RIGHT_ANSWERS`` are answers a learner could give that are right by another route (a loop, a
closed form compared over the neighbouring integers, a list for a set); each must keep full marks
on the grade cells it names.
"""

from __future__ import annotations

from tests.mutants import Mutant

_EFF = ("strong_eff_tests",)
_FIT = ("serial_fraction_tests",)
_BEST = ("best_accumulation_tests",)


def _strong(body: str, prelude: str = "") -> dict[str, str]:
    """Exercise 1's cell: n, t as float arrays and i the baseline's index, then ``body``."""
    return {
        "strong_eff_answer": f"{prelude}def strong_eff(num_devices, times, baseline_devices):\n"
        "    n = np.asarray(num_devices, dtype=float)\n"
        "    t = np.asarray(times, dtype=float)\n"
        "    i = int(np.flatnonzero(n == baseline_devices)[0])\n"
        f"{body}\n"
    }


def _fit(body: str, prelude: str = "") -> dict[str, str]:
    """Exercise 2's cell: n, t, n0, and the least-squares a, b of T = a + b/N, then ``body``."""
    return {
        "serial_fraction_answer": f"{prelude}def serial_fraction(num_devices, times, "
        "baseline_devices):\n"
        "    n = np.asarray(num_devices, dtype=float)\n"
        "    t = np.asarray(times, dtype=float)\n"
        "    n0 = baseline_devices\n"
        "    (a, b), *_ = np.linalg.lstsq(np.column_stack([np.ones_like(n), 1 / n]), t, "
        "rcond=None)\n"
        f"{body}\n"
    }


def _best(body: str, prelude: str = "") -> dict[str, str]:
    """Exercise 3's cell: k = 1..4096, B, and the continuous optimum root, then ``body``."""
    return {
        "best_accumulation_answer": f"{prelude}def best_accumulation(num_devices, micro_batch, "
        "micro_time, allreduce_time, noise_scale):\n"
        "    N, b, tm, ta, bn = num_devices, micro_batch, micro_time, allreduce_time, noise_scale\n"
        "    k = np.arange(1, 4097)\n"
        "    B = N * b * k\n"
        "    root = float(np.sqrt(bn * ta / (N * b * tm)))\n"
        f"{body}\n"
    }


MUTANTS = [
    # Exercise 1: strong-scaling efficiency against a baseline.
    Mutant(
        name="strong_ignores_baseline_devices",
        why="T(N0)/(T(N)·N): the speed-up divided by N, as if the baseline were one device",
        cells=_strong("    return t[i] / (t * n)"),
        grades=_EFF,
    ),
    Mutant(
        name="strong_speedup_only",
        why="T(N0)/T(N): the speed-up (the weak-scaling formula), not an efficiency",
        cells=_strong("    return t[i] / t"),
        grades=_EFF,
    ),
    Mutant(
        name="strong_inverted",
        why="T(N)·N/(T(N0)·N0): the cost ratio, upside down",
        cells=_strong("    return t * n / (t[i] * n[i])"),
        grades=_EFF,
    ),
    Mutant(
        name="strong_first_entry_baseline",
        why="normalises to the first entry listed, not to baseline_devices",
        cells=_strong("    return t[0] * n[0] / (t * n)"),
        grades=_EFF,
    ),
    Mutant(
        name="strong_smallest_baseline",
        why="normalises to the smallest device count, which may not be a feasible baseline",
        cells=_strong("    j = int(np.argmin(n))\n    return t[j] * n[j] / (t * n)"),
        grades=_EFF,
    ),
    Mutant(
        name="strong_clipped_at_one",
        why="clips a faster-than-ideal run at 100 %",
        cells=_strong("    return np.minimum(t[i] * n[i] / (t * n), 1.0)"),
        grades=_EFF,
    ),
    Mutant(
        name="strong_device_ratio_flipped",
        why="T(N0)·N/(T(N)·N0): the device ratio upside down",
        cells=_strong("    return t[i] * n / (t * n[i])"),
        grades=_EFF,
    ),
    Mutant(
        name="strong_returns_list",
        why="a list of floats; the exercise asks for a numpy array",
        cells=_strong("    return [float(x) for x in t[i] * n[i] / (t * n)]"),
        grades=_EFF,
    ),
    Mutant(
        name="strong_delegates",
        why="course_lib.scaling.strong_efficiency, which the grade cell forbids",
        cells=_strong("    return strong_efficiency(n, t, baseline_devices)"),
        grades=_EFF,
    ),
    Mutant(
        name="strong_delegates_throughput",
        why="course_lib.scaling.efficiency_from_throughput on 1/T (forbidden)",
        cells=_strong("    return scaling.efficiency_from_throughput(n, 1 / t, baseline_devices)"),
        grades=_EFF,
    ),
    # Exercise 2: serial fraction of a least-squares Amdahl fit.
    Mutant(
        name="fit_one_device_baseline",
        why="s = a/(a + b): the serial share of a one-device run",
        cells=_fit("    a = max(float(a), 0.0)\n    return a / (a + b)"),
        grades=_FIT,
    ),
    Mutant(
        name="fit_negative_intercept_kept",
        why="a negative intercept not clipped at 0: a negative serial fraction",
        cells=_fit("    return float(a / (a + b / n0))"),
        grades=_FIT,
    ),
    Mutant(
        name="fit_parallel_fraction",
        why="1 - s, the parallel fraction",
        cells=_fit("    a = max(float(a), 0.0)\n    return 1 - a / (a + b / n0)"),
        grades=_FIT,
    ),
    Mutant(
        name="fit_intercept_seconds",
        why="the intercept a in seconds, not a fraction",
        cells=_fit("    return max(float(a), 0.0)"),
        grades=_FIT,
    ),
    Mutant(
        name="fit_karp_flatt_largest",
        why="the Karp-Flatt fraction of the baseline and the largest run only, no fit",
        cells=_fit(
            "    w = int(np.argmax(n))\n"
            "    r = n0 / n[w]\n"
            "    psi = t[n == n0][0] / t[w]\n"
            "    return float((1 / psi - r) / (1 - r))"
        ),
        grades=_FIT,
    ),
    Mutant(
        name="fit_through_the_baseline",
        why="fits T/T(N0) = s + (1 - s)·N0/N with the baseline pinned, not T = a + b/N",
        cells=_fit(
            "    x = n0 / n\n"
            "    y = t / t[n == n0][0]\n"
            "    s = np.sum((1 - x) * (y - x)) / np.sum((1 - x) ** 2)\n"
            "    return max(float(s), 0.0)"
        ),
        grades=_FIT,
    ),
    Mutant(
        name="fit_polyfit_coefficients_swapped",
        why="np.polyfit(1/N, T, 1) returns [slope, intercept]: read in the wrong order",
        cells=_fit(
            "    a, b = np.polyfit(1 / n, t, 1)\n"
            "    a = max(float(a), 0.0)\n"
            "    return a / (a + b / n0)"
        ),
        grades=_FIT,
    ),
    Mutant(
        name="fit_linear_in_n",
        why="fits T = a + b·N instead of a + b/N",
        cells=_fit(
            "    b2, a2 = np.polyfit(n, t, 1)\n"
            "    a2 = max(float(a2), 0.0)\n"
            "    return a2 / (a2 + abs(b2) * n0)"
        ),
        grades=_FIT,
    ),
    Mutant(
        name="fit_delegates",
        why="course_lib.scaling.fit_serial_fraction, which the grade cell forbids",
        cells=_fit("    return fit_serial_fraction(n, t, n0)"),
        grades=_FIT,
    ),
    # Exercise 3: the batch that reaches the target soonest.
    Mutant(
        name="best_highest_throughput",
        why="the largest batch, which has the highest throughput",
        cells=_best("    return 4096"),
        grades=_BEST,
    ),
    Mutant(
        name="best_fewest_examples",
        why="the smallest batch, which needs the fewest examples",
        cells=_best("    return 1"),
        grades=_BEST,
    ),
    Mutant(
        name="best_critical_batch",
        why="B = B_noise: the critical batch taken as the optimum",
        cells=_best("    return max(1, round(bn / (N * b)))"),
        grades=_BEST,
    ),
    Mutant(
        name="best_continuous_rounded",
        why="the continuous optimum sqrt(B_noise·t_ar/(N·b·t_micro)) rounded",
        cells=_best("    return max(1, min(4096, round(root)))"),
        grades=_BEST,
    ),
    Mutant(
        name="best_continuous_floor",
        why="the continuous optimum rounded down",
        cells=_best("    return max(1, min(4096, int(np.floor(root))))"),
        grades=_BEST,
    ),
    Mutant(
        name="best_continuous_ceil",
        why="the continuous optimum rounded up",
        cells=_best("    return max(1, min(4096, int(np.ceil(root))))"),
        grades=_BEST,
    ),
    Mutant(
        name="best_no_upper_limit",
        why="the best integer without the limit of 4,096",
        cells=_best(
            "    k = np.arange(1, 20001)\n"
            "    B = N * b * k\n"
            "    return int(k[np.argmin((1 + bn / B) * (k * tm + ta))])"
        ),
        grades=_BEST,
    ),
    Mutant(
        name="best_ignores_devices",
        why="B = b·k: the batch of one device, not of all N",
        cells=_best("    return int(k[np.argmin((1 + bn / (b * k)) * (k * tm + ta))])"),
        grades=_BEST,
    ),
    Mutant(
        name="best_ignores_allreduce",
        why="step time k·t_micro: the all-reduce left out",
        cells=_best("    return int(k[np.argmin((1 + bn / B) * (k * tm))])"),
        grades=_BEST,
    ),
    Mutant(
        name="best_returns_batch",
        why="the global batch B, not k",
        cells=_best("    return int(B[np.argmin((1 + bn / B) * (k * tm + ta))])"),
        grades=_BEST,
    ),
    Mutant(
        name="best_examples_per_second",
        why="minimises the step time per example (maximises throughput)",
        cells=_best("    return int(k[np.argmin((k * tm + ta) / B)])"),
        grades=_BEST,
    ),
    Mutant(
        name="best_float",
        why="the right k as a float",
        cells=_best("    return float(k[np.argmin((1 + bn / B) * (k * tm + ta))])"),
        grades=_BEST,
    ),
    Mutant(
        name="best_delegates",
        why="course_lib.scaling.best_accumulation_steps, which the grade cell forbids",
        cells=_best("    return scaling.best_accumulation_steps(N, b, tm, ta, bn)"),
        grades=_BEST,
    ),
    Mutant(
        name="best_delegates_time_to_target",
        why="argmin of course_lib.scaling.time_to_target (forbidden)",
        cells=_best(
            "    return int(k[np.argmin(scaling.time_to_target(B, k * tm + ta, 1.0, bn))])"
        ),
        grades=_BEST,
    ),
    # Exercise 4: is a ratio across different batches an efficiency?
    Mutant(
        name="zero3_valid",
        why="reads a ratio of runs with different batches as a strong-scaling efficiency",
        cells={"zero3_verdict_answer": 'zero3_verdict = "valid"\n'},
        grades=("zero3_verdict_tests",),
    ),
    Mutant(
        name="zero3_one_device",
        why="insists on a one-device baseline",
        cells={"zero3_verdict_answer": 'zero3_verdict = "one_device"\n'},
        grades=("zero3_verdict_tests",),
    ),
    # Exercise 5: claims that confuse throughput with time to target.
    Mutant(
        name="claims_with_d",
        why="adds D, which reasons correctly about the steps above the critical batch",
        cells={"confused_claims_answer": 'confused_claims = {"A", "C", "D", "F"}\n'},
        grades=("confused_claims_tests",),
    ),
    Mutant(
        name="claims_missing_weak_scaling",
        why="misses C: weak scaling grows the batch too",
        cells={"confused_claims_answer": 'confused_claims = {"A", "F"}\n'},
        grades=("confused_claims_tests",),
    ),
    Mutant(
        name="claims_every_throughput_claim",
        why="every claim that predicts time from throughput, including the same-batch ones",
        cells={"confused_claims_answer": 'confused_claims = {"A", "B", "C", "E", "F"}\n'},
        grades=("confused_claims_tests",),
    ),
    Mutant(
        name="claims_only_a",
        why="only the plainest claim",
        cells={"confused_claims_answer": 'confused_claims = {"A"}\n'},
        grades=("confused_claims_tests",),
    ),
]

RIGHT_ANSWERS = [
    Mutant(
        name="strong_loop",
        why="a Python loop over the entries and a dict from device count to time",
        cells={
            "strong_eff_answer": "def strong_eff(num_devices, times, baseline_devices):\n"
            "    by_n = dict(zip(num_devices, times))\n"
            "    base = by_n[baseline_devices] * baseline_devices\n"
            "    return np.array([base / (t * n) for n, t in zip(num_devices, times)])\n"
        },
        grades=_EFF,
    ),
    Mutant(
        name="strong_cost_ratio",
        why="the ideal time over the measured time, T(N0)·(N0/N) / T(N)",
        cells=_strong("    ideal = t[i] * n[i] / n\n    return ideal / t"),
        grades=_EFF,
    ),
    Mutant(
        name="fit_polyfit",
        why="np.polyfit on 1/N, coefficients read in the right order",
        cells=_fit(
            "    slope, intercept = np.polyfit(1 / n, t, 1)\n"
            "    intercept = max(float(intercept), 0.0)\n"
            "    return intercept / (intercept + slope / n0)"
        ),
        grades=_FIT,
    ),
    Mutant(
        name="fit_normal_equations",
        why="the 2x2 normal equations solved by hand",
        cells=_fit(
            "    x = 1 / n\n"
            "    m = len(x)\n"
            "    slope = (m * np.sum(x * t) - x.sum() * t.sum()) / (m * np.sum(x * x) - x.sum() ** 2)\n"
            "    icpt = (t.sum() - slope * x.sum()) / m\n"
            "    icpt = max(float(icpt), 0.0)\n"
            "    return icpt / (icpt + slope / n0)"
        ),
        grades=_FIT,
    ),
    Mutant(
        name="best_neighbours_of_the_root",
        why="the continuous optimum, then the better of its two neighbouring integers",
        cells=_best(
            "    def cost(j):\n"
            "        return (1 + bn / (N * b * j)) * (j * tm + ta)\n"
            "    lo = min(4096, max(1, int(np.floor(root))))\n"
            "    hi = min(4096, lo + 1)\n"
            "    return lo if cost(lo) <= cost(hi) else hi"
        ),
        grades=_BEST,
    ),
    Mutant(
        name="best_examples_over_throughput",
        why="E(B)/throughput(B) with E = E_min(1 + B/B_noise), E_min = S_min·B_noise",
        cells=_best(
            "    examples = bn * (1 + B / bn)\n"
            "    throughput = B / (k * tm + ta)\n"
            "    return np.argmin(examples / throughput) + 1"
        ),
        grades=_BEST,
    ),
    Mutant(
        name="claims_as_list",
        why="the right letters as a list",
        cells={"confused_claims_answer": 'confused_claims = ["F", "A", "C"]\n'},
        grades=("confused_claims_tests",),
    ),
]
