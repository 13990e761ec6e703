"""Plausible wrong answers to cost08_scaling's exercises; each must lose points when graded.

``RIGHT_ANSWERS`` are answers a learner could give that are right by another route (a loop, a
closed form compared over the neighbouring integers, a list for a set); each must keep full marks
on the grade cells it names.
"""

from __future__ import annotations

from tests.mutants import Mutant

_EFF = ("strong_eff_tests",)
_WEAK = ("weak_eff_tests",)
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


def _weak(body: str, prelude: str = "") -> dict[str, str]:
    """Exercise 2's cell: n, x as float arrays and i the baseline's index, then ``body``."""
    return {
        "weak_eff_answer": f"{prelude}def weak_eff(num_devices, throughput, baseline_devices):\n"
        "    n = np.asarray(num_devices, dtype=float)\n"
        "    x = np.asarray(throughput, dtype=float)\n"
        "    i = int(np.flatnonzero(n == baseline_devices)[0])\n"
        f"{body}\n"
    }


def _fit(body: str, prelude: str = "") -> dict[str, str]:
    """Exercise 3's cell: n, t, n0, and the least-squares a, b of T = a + b/N, then ``body``."""
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


def _fit_scaffold(body: str) -> dict[str, str]:
    """Exercise 3's cell as released: n, t and the design matrix given, then ``body``."""
    return {
        "serial_fraction_answer": "def serial_fraction(num_devices, times, baseline_devices):\n"
        "    n = np.asarray(num_devices, dtype=float)\n"
        "    t = np.asarray(times, dtype=float)\n"
        "    design = np.column_stack([np.ones_like(n), 1.0 / n])\n"
        f"{body}\n"
    }


def _best_scaffold(body: str) -> dict[str, str]:
    """Exercise 4's cell as released: k = 1..4096 and its global batch given, then ``body``."""
    return {
        "best_accumulation_answer": "def best_accumulation(num_devices, micro_batch, micro_time, "
        "allreduce_time, noise_scale):\n"
        "    k = np.arange(1, 4097)\n"
        "    batch = num_devices * micro_batch * k\n"
        f"{body}\n"
    }


def _best(body: str, prelude: str = "") -> dict[str, str]:
    """Exercise 4's cell: k = 1..4096, B, and the continuous optimum root, then ``body``."""
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
    # Exercise 2: weak-scaling efficiency from system throughput.
    Mutant(
        name="weak_speedup",
        why="X(N)/X(N0): the system speed-up (section 1's per-GPU ratio on system throughput)",
        cells=_weak("    return x / x[i]"),
        grades=_WEAK,
    ),
    Mutant(
        name="weak_no_baseline_devices",
        why="X(N)/(X(N0)·N): divides by N but never multiplies by N0",
        cells=_weak("    return x / (x[i] * n)"),
        grades=_WEAK,
    ),
    Mutant(
        name="weak_inverted",
        why="X(N0)·N/(X(N)·N0): the efficiency upside down",
        cells=_weak("    return x[i] * n / (x * n[i])"),
        grades=_WEAK,
    ),
    Mutant(
        name="weak_strong_formula_on_throughput",
        why="the strong formula T(N0)·N0/(T(N)·N) with the throughput put in for T",
        cells=_weak("    return x[i] * n[i] / (x * n)"),
        grades=_WEAK,
    ),
    Mutant(
        name="weak_strong_formula_on_step_time",
        why="step time T = N/X (right), then the strong formula T(N0)·N0/(T(N)·N)",
        cells=_weak("    t = n / x\n    return t[i] * n[i] / (t * n)"),
        grades=_WEAK,
    ),
    Mutant(
        name="weak_first_entry_baseline",
        why="normalises to the first entry listed, not to baseline_devices",
        cells=_weak("    return x * n[0] / (x[0] * n)"),
        grades=_WEAK,
    ),
    Mutant(
        name="weak_smallest_baseline",
        why="normalises to the smallest device count listed",
        cells=_weak("    j = int(np.argmin(n))\n    return x * n[j] / (x[j] * n)"),
        grades=_WEAK,
    ),
    Mutant(
        name="weak_clipped_at_one",
        why="clips a better-than-ideal run at 100 %",
        cells=_weak("    return np.minimum(x * n[i] / (x[i] * n), 1.0)"),
        grades=_WEAK,
    ),
    Mutant(
        name="weak_delegates",
        why="course_lib.scaling.efficiency_from_throughput, which the grade cell forbids",
        cells=_weak("    return scaling.efficiency_from_throughput(n, x, baseline_devices)"),
        grades=_WEAK,
    ),
    Mutant(
        name="weak_delegates_step_time",
        why="course_lib.scaling.weak_efficiency on the step time N/X (forbidden)",
        cells=_weak("    return scaling.weak_efficiency(n, n / x, baseline_devices)"),
        grades=_WEAK,
    ),
    # Exercise 3: serial fraction of a least-squares Amdahl fit.
    Mutant(
        name="fit_one_device_baseline",
        why="s = a/(a + b): the serial share of a one-device run",
        cells=_fit("    a = max(float(a), 0.0)\n    return a / (a + b)"),
        grades=_FIT,
    ),
    Mutant(
        name="fit_smallest_count_baseline",
        why="s = a/(a + b/min(N)): the smallest count listed taken as N0, not baseline_devices",
        cells=_fit("    a = max(float(a), 0.0)\n    return a / (a + b / n.min())"),
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
    # Exercise 4: the batch that reaches the target soonest.
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
        name="best_last_argmin",
        why="the last k of a tie, not the smaller one",
        cells=_best(
            "    time = (1 + bn / B) * (k * tm + ta)\n"
            "    return int(k[len(k) - 1 - np.argmin(time[::-1])])"
        ),
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
    Mutant(
        name="fit_scaffold_unclipped",
        why="the released scaffold, lstsq on the given design, negative intercept not clipped",
        cells=_fit_scaffold(
            "    (a, b), *_ = np.linalg.lstsq(design, t, rcond=None)\n"
            "    return float(a / (a + b / baseline_devices))"
        ),
        grades=_FIT,
    ),
    Mutant(
        name="best_scaffold_throughput",
        why="the released scaffold, then the k with the most examples per second",
        cells=_best_scaffold(
            "    return int(k[np.argmax(batch / (k * micro_time + allreduce_time))])"
        ),
        grades=_BEST,
    ),
    # Exercise 5: readings that take a ratio of different work, or throughput for time to target.
    Mutant(
        name="claims_missing_weak_scaling",
        why="misses C: weak scaling grows the batch too",
        cells={"wrong_claims_answer": 'wrong_claims = {"A", "D"}\n'},
        grades=("wrong_claims_tests",),
    ),
    Mutant(
        name="claims_every_throughput_claim",
        why="every claim that predicts time from throughput, including the same-batch one (B)",
        cells={"wrong_claims_answer": 'wrong_claims = {"A", "B", "C", "D"}\n'},
        grades=("wrong_claims_tests",),
    ),
    Mutant(
        name="claims_zero3_ratio_valid",
        why="reads 98/138 across two batches as a strong-scaling efficiency (equal tokens)",
        cells={"wrong_claims_answer": 'wrong_claims = {"A", "C"}\n'},
        grades=("wrong_claims_tests",),
    ),
    Mutant(
        name="claims_only_zero3",
        why="only the ratio across batches; misses both throughput-for-time claims",
        cells={"wrong_claims_answer": 'wrong_claims = {"D"}\n'},
        grades=("wrong_claims_tests",),
    ),
    Mutant(
        name="claims_as_string",
        why="the right letters as one string, not a collection: the visible type check flags it",
        cells={"wrong_claims_answer": 'wrong_claims = "ACD"\n'},
        grades=("wrong_claims_tests",),
    ),
    Mutant(
        name="claims_lowercase",
        why="lower-case letters",
        cells={"wrong_claims_answer": 'wrong_claims = {"a", "c", "d"}\n'},
        grades=("wrong_claims_tests",),
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
        name="weak_via_step_time",
        why="step time T = N/X at fixed work per device, then E_w = T(N0)/T(N)",
        cells=_weak("    t = n / x\n    return t[i] / t"),
        grades=_WEAK,
    ),
    Mutant(
        name="weak_loop",
        why="a Python loop and a dict from device count to throughput",
        cells={
            "weak_eff_answer": "def weak_eff(num_devices, throughput, baseline_devices):\n"
            "    per_device = {n: x / n for n, x in zip(num_devices, throughput)}\n"
            "    base = per_device[baseline_devices]\n"
            "    return np.array([per_device[n] / base for n in num_devices])\n"
        },
        grades=_WEAK,
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
        name="fit_scaffold_normal_equations",
        why="the released scaffold, the normal equations of the given design solved",
        cells=_fit_scaffold(
            "    a, b = np.linalg.solve(design.T @ design, design.T @ t)\n"
            "    a = max(float(a), 0.0)\n"
            "    return a / (a + b / baseline_devices)"
        ),
        grades=_FIT,
    ),
    Mutant(
        name="best_scaffold_loop",
        why="the released scaffold, then a loop keeping the first k with the least time",
        cells=_best_scaffold(
            "    best, best_time = 1, float('inf')\n"
            "    for kk, bb in zip(k, batch):\n"
            "        tt = (1 + noise_scale / bb) * (kk * micro_time + allreduce_time)\n"
            "        if tt < best_time:\n"
            "            best, best_time = int(kk), tt\n"
            "    return best"
        ),
        grades=_BEST,
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
        cells={"wrong_claims_answer": 'wrong_claims = ["D", "C", "A"]\n'},
        grades=("wrong_claims_tests",),
    ),
    Mutant(
        name="claims_as_tuple",
        why="the right letters as a tuple",
        cells={"wrong_claims_answer": 'wrong_claims = ("A", "C", "D")\n'},
        grades=("wrong_claims_tests",),
    ),
    Mutant(
        name="claims_as_frozenset",
        why="the right letters as a frozenset built from a string",
        cells={"wrong_claims_answer": 'wrong_claims = frozenset("ACD")\n'},
        grades=("wrong_claims_tests",),
    ),
]
