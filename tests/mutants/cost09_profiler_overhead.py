"""Plausible wrong answers to cost09_profiler_overhead's exercises; each must lose points.

``RIGHT_ANSWERS`` are answers a learner could give that are right by another route (another
formula, numpy types, another median); each must keep full marks on the grade cells it names.
"""

from __future__ import annotations

from tests.mutants import Mutant


def _overhead(body: str, prelude: str = "") -> dict[str, str]:
    """The Exercise 1 solution cell with ``body`` after cpu, gpu and the tracing cost."""
    return {
        "predicted_overhead_answer": (
            f"{prelude}def predicted_overhead(cpu_time, gpu_time, num_events, per_event_cost):\n"
            '    """Tracing overhead / uninstrumented step time."""\n'
            "    cpu, gpu, cost = cpu_time, gpu_time, num_events * per_event_cost\n"
            f"{body}\n"
        )
    }


def _estimate(body: str, prelude: str = "") -> dict[str, str]:
    """The Exercise 2 solution cell with ``body`` as uninstrumented_estimate's body."""
    return {
        "estimate_answer": (
            f"{prelude}def uninstrumented_estimate(\n"
            "    plain_times, traced_times, calibration_events, traced_time, num_events\n"
            "):\n"
            '    """traced_time minus num_events times the calibrated cost per event."""\n'
            "    p, t, n_cal, T, n = (\n"
            "        plain_times, traced_times, calibration_events, traced_time, num_events\n"
            "    )\n"
            f"{body}\n"
        )
    }


_SCHEDULE = """
def _action(step, wait, warmup, active, repeat, skip_first):
    if step < skip_first:
        return "NONE"
    step -= skip_first
    cycle = wait + warmup + active
    if repeat > 0 and step >= repeat * cycle:
        return "NONE"
    mod = step % cycle
    if mod < wait:
        return "NONE"
    if mod < wait + warmup:
        return "WARMUP"
    return "RECORD" if mod < cycle - 1 else "RECORD_AND_SAVE"


"""


_FITS = """
def _fits(active, num_steps, step_time, observer_overhead, save_time, budget, wait, warmup,
          repeat, skip_first):
    acts = [_action(s, wait, warmup, active, repeat, skip_first) for s in range(num_steps)]
    on = sum(a != "NONE" for a in acts)
    saves = acts.count("RECORD_AND_SAVE") + (acts[-1] == "RECORD")
    return on * observer_overhead * step_time + saves * save_time <= budget * num_steps * step_time


"""


def _largest(
    *,
    on: str = 'a != "NONE"',
    saves: str = 'acts.count("RECORD_AND_SAVE") + (acts[-1] == "RECORD")',
    extra: str = "on * observer_overhead * step_time + saves * save_time",
    fits: str = "extra <= budget * num_steps * step_time",
    schedule: str = "wait, warmup, active, repeat, skip_first",
    actives: str = "range(1, num_steps + 1)",
    prelude: str = _SCHEDULE,
) -> dict[str, str]:
    """The Exercise 3 solution cell: a search over active with the given pieces."""
    return {
        "largest_active_answer": (
            f"{prelude}def largest_active(num_steps, step_time, observer_overhead, save_time, "
            "budget, wait, warmup, repeat, skip_first):\n"
            '    """Largest active whose schedule costs at most budget; 0 if none does."""\n'
            "    best = 0\n"
            f"    for active in {actives}:\n"
            f"        acts = [_action(s, {schedule}) for s in range(num_steps)]\n"
            f"        on = sum({on} for a in acts)\n"
            f"        saves = {saves}\n"
            f"        extra = {extra}\n"
            f"        if {fits}:\n"
            "            best = active\n"
            "    return best\n"
        )
    }


def _modes(speedup: str = "none", kernel: str = "replay", production: str = "sample") -> dict:
    return {
        "modes_answer": (
            f"mode_speedup = {speedup!r}\nmode_kernel = {kernel!r}\n"
            f"mode_production = {production!r}\n"
        )
    }


EX1 = ("predicted_overhead_tests",)
EX2 = ("estimate_tests",)
EX3 = ("largest_active_tests",)

MUTANTS = [
    # Exercise 1: tracing overhead of an asynchronous step.
    Mutant(
        name="no_hiding",
        why="n·c over the step: ignores that a compute-bound step hides CPU-side cost",
        cells=_overhead("    return cost / max(cpu, gpu)"),
        grades=EX1,
    ),
    Mutant(
        name="cost_over_cpu",
        why="n·c over the CPU time",
        cells=_overhead("    return cost / cpu"),
        grades=EX1,
    ),
    Mutant(
        name="relative_to_cpu",
        why="traced step over the CPU time, minus 1",
        cells=_overhead("    return max(cpu + cost, gpu) / cpu - 1"),
        grades=EX1,
    ),
    Mutant(
        name="relative_to_gpu",
        why="traced step over the device time, minus 1",
        cells=_overhead("    return max(cpu + cost, gpu) / gpu - 1"),
        grades=EX1,
    ),
    Mutant(
        name="no_max_with_gpu",
        why="the CPU's traced time as the traced step (negative when compute-bound)",
        cells=_overhead("    return (cpu + cost) / max(cpu, gpu) - 1"),
        grades=EX1,
    ),
    Mutant(
        name="over_traced_step",
        why="added time over the traced step, not the uninstrumented one",
        cells=_overhead(
            "    traced = max(cpu + cost, gpu)\n    return (traced - max(cpu, gpu)) / traced"
        ),
        grades=EX1,
    ),
    Mutant(
        name="percent",
        why="a percentage, not a fraction",
        cells=_overhead("    return 100 * (max(cpu + cost, gpu) / max(cpu, gpu) - 1)"),
        grades=EX1,
    ),
    Mutant(
        name="ratio_not_overhead",
        why="traced / uninstrumented without the - 1",
        cells=_overhead("    return max(cpu + cost, gpu) / max(cpu, gpu)"),
        grades=EX1,
    ),
    Mutant(
        name="delegates_tracing_overhead",
        why="calls course_lib.profiling.tracing_overhead (right value, delegated)",
        cells=_overhead(
            "    return tracing_overhead(cpu_time, gpu_time, num_events, per_event_cost)",
            prelude="from course_lib.profiling import tracing_overhead\n\n\n",
        ),
        grades=EX1,
    ),
    Mutant(
        name="delegates_traced_step_time",
        why="course_lib.profiling.traced_step_time over the step (right value, delegated)",
        cells=_overhead(
            "    from course_lib import profiling\n\n"
            "    traced = profiling.traced_step_time(cpu, gpu, num_events, per_event_cost)\n"
            "    return traced / max(cpu, gpu) - 1"
        ),
        grades=EX1,
    ),
    # Exercise 2: the uninstrumented estimate of a traced CPU-bound time.
    Mutant(
        name="means",
        why="means of the repeats: the slow outlier moves the estimate",
        cells=_estimate(
            "    return T - n * (np.mean(t) - np.mean(p)) / n_cal",
            prelude="import numpy as np\n\n\n",
        ),
        grades=EX2,
    ),
    Mutant(
        name="minimums",
        why="the fastest repeats instead of the medians",
        cells=_estimate("    return T - n * (min(t) - min(p)) / n_cal"),
        grades=EX2,
    ),
    Mutant(
        name="upper_middle_median",
        why="sorted(x)[len(x) // 2]: wrong median for an even number of repeats",
        cells=_estimate(
            "    def med(x):\n"
            "        return sorted(x)[len(x) // 2]\n\n"
            "    return T - n * (med(t) - med(p)) / n_cal"
        ),
        grades=EX2,
    ),
    Mutant(
        name="median_low",
        why="statistics.median_low: the lower middle element, not the median",
        cells=_estimate(
            "    return T - n * (statistics.median_low(t) - statistics.median_low(p)) / n_cal",
            prelude="import statistics\n\n\n",
        ),
        grades=EX2,
    ),
    Mutant(
        name="ratio_scaling",
        why="scales by the calibration's plain/traced ratio: a percentage, not a per-event cost",
        cells=_estimate(
            "    return float(T * np.median(p) / np.median(t))",
            prelude="import numpy as np\n\n\n",
        ),
        grades=EX2,
    ),
    Mutant(
        name="uncorrected",
        why="returns the traced time",
        cells=_estimate("    return float(T)"),
        grades=EX2,
    ),
    Mutant(
        name="whole_calibration_difference",
        why="subtracts the calibration's added time, not scaled by events",
        cells=_estimate(
            "    return float(T - (np.median(t) - np.median(p)))",
            prelude="import numpy as np\n\n\n",
        ),
        grades=EX2,
    ),
    Mutant(
        name="swapped_event_counts",
        why="num_events and calibration_events swapped",
        cells=_estimate(
            "    return float(T - n_cal * (np.median(t) - np.median(p)) / n)",
            prelude="import numpy as np\n\n\n",
        ),
        grades=EX2,
    ),
    Mutant(
        name="delegates_per_event_cost",
        why="course_lib.profiling.per_event_cost and corrected_time (right value, delegated)",
        cells=_estimate(
            "    return corrected_time(T, n, per_event_cost(p, t, n_cal))",
            prelude="from course_lib.profiling import corrected_time, per_event_cost\n\n\n",
        ),
        grades=EX2,
    ),
    # Exercise 3: the largest active within a budget.
    Mutant(
        name="warmup_free",
        why="only RECORD steps cost: the lesson charges a warm-up step o·T too (an upper bound)",
        cells=_largest(on='a in ("RECORD", "RECORD_AND_SAVE")'),
        grades=EX3,
    ),
    Mutant(
        name="no_save_cost",
        why="the save time left out",
        cells=_largest(saves="0"),
        grades=EX3,
    ),
    Mutant(
        name="no_stop_save",
        why="a window cut short by the run's end is not saved",
        cells=_largest(saves='acts.count("RECORD_AND_SAVE")'),
        grades=EX3,
    ),
    Mutant(
        name="warmup_stop_save",
        why="a run that ends in warm-up also saves a trace",
        cells=_largest(saves='acts.count("RECORD_AND_SAVE") + (acts[-1] in ("RECORD", "WARMUP"))'),
        grades=EX3,
    ),
    Mutant(
        name="ignores_skip_first",
        why="skip_first left out of the schedule",
        cells=_largest(schedule="wait, warmup, active, repeat, 0"),
        grades=EX3,
    ),
    Mutant(
        name="strictly_below",
        why="overhead < budget: a schedule exactly on the budget fits",
        cells=_largest(fits="extra < budget * num_steps * step_time"),
        grades=EX3,
    ),
    Mutant(
        name="over_instrumented_run",
        why="the overhead over the instrumented run time",
        cells=_largest(fits="extra / (num_steps * step_time + extra) <= budget"),
        grades=EX3,
    ),
    Mutant(
        name="repeat_zero_once",
        why="repeat=0 read as one cycle instead of until the run ends",
        cells=_largest(schedule="wait, warmup, active, repeat or 1, skip_first"),
        grades=EX3,
    ),
    Mutant(
        name="search_stops_short",
        why="range(1, num_steps): active = num_steps never tried",
        cells=_largest(actives="range(1, num_steps)"),
        grades=EX3,
    ),
    Mutant(
        name="one_more_active_step",
        why="RECORD_AND_SAVE counted as a step after the active ones (active + 1 recorded)",
        cells=_largest(schedule="wait, warmup, active + 1, repeat, skip_first"),
        grades=EX3,
    ),
    Mutant(
        name="double_save_at_end",
        why="a run that ends on RECORD_AND_SAVE counted as saved again at the exit",
        cells=_largest(
            saves='acts.count("RECORD_AND_SAVE") + (acts[-1] in ("RECORD", "RECORD_AND_SAVE"))'
        ),
        grades=EX3,
    ),
    Mutant(
        name="first_failure",
        why="grows active until the budget first breaks: the cost is not monotone in active",
        cells={
            "largest_active_answer": _SCHEDULE
            + _FITS
            + "def largest_active(num_steps, step_time, observer_overhead, save_time, budget, "
            "wait, warmup, repeat, skip_first):\n"
            "    args = (num_steps, step_time, observer_overhead, save_time, budget, wait, "
            "warmup, repeat, skip_first)\n"
            "    best = 0\n"
            "    for active in range(1, num_steps + 1):\n"
            "        if not _fits(active, *args):\n"
            "            break\n"
            "        best = active\n"
            "    return best\n"
        },
        grades=EX3,
    ),
    Mutant(
        name="binary_search",
        why="bisects on active: the cost is not monotone in active",
        cells={
            "largest_active_answer": _SCHEDULE
            + _FITS
            + "def largest_active(num_steps, step_time, observer_overhead, save_time, budget, "
            "wait, warmup, repeat, skip_first):\n"
            "    args = (num_steps, step_time, observer_overhead, save_time, budget, wait, "
            "warmup, repeat, skip_first)\n"
            "    lo, hi = 0, num_steps\n"
            "    while lo < hi:\n"
            "        mid = (lo + hi + 1) // 2\n"
            "        if _fits(mid, *args):\n"
            "            lo = mid\n"
            "        else:\n"
            "            hi = mid - 1\n"
            "    return lo\n"
        },
        grades=EX3,
    ),
    Mutant(
        name="delegates_planner",
        why="course_lib.profiling.plan_capture_window (right value, delegated)",
        cells={
            "largest_active_answer": (
                "from course_lib.profiling import plan_capture_window\n\n\n"
                "def largest_active(num_steps, step_time, observer_overhead, save_time, budget, "
                "wait, warmup, repeat, skip_first):\n"
                "    plan = plan_capture_window(num_steps, step_time, observer_overhead, "
                "save_time, budget, wait=wait, warmup=warmup, repeat=repeat, "
                "skip_first=skip_first)\n"
                "    return 0 if plan is None else plan.active\n"
            )
        },
        grades=EX3,
    ),
    Mutant(
        name="delegates_capture_overhead",
        why="a search over course_lib.profiling.capture_overhead (right value, delegated)",
        cells={
            "largest_active_answer": (
                "import course_lib.profiling as prof\n\n\n"
                "def largest_active(num_steps, step_time, observer_overhead, save_time, budget, "
                "wait, warmup, repeat, skip_first):\n"
                "    best = 0\n"
                "    for active in range(1, num_steps + 1):\n"
                "        plan = prof.capture_overhead(num_steps, step_time, observer_overhead, "
                "save_time, wait=wait, warmup=warmup, active=active, repeat=repeat, "
                "skip_first=skip_first)\n"
                "        if plan.overhead_fraction <= budget * (1 + 1e-9):\n"
                "            best = active\n"
                "    return best\n"
            )
        },
        grades=EX3,
    ),
    # Exercise 4: the collection mode for each question.
    Mutant(
        name="speedup_from_traces",
        why="compares profiled step times",
        cells=_modes(speedup="trace"),
        grades=("mode_speedup_tests",),
    ),
    Mutant(
        name="speedup_from_samples",
        why="a sampler for a 3 % step-time comparison",
        cells=_modes(speedup="sample"),
        grades=("mode_speedup_tests",),
    ),
    Mutant(
        name="kernel_from_trace",
        why="a trace's kernel durations for a bandwidth question",
        cells=_modes(kernel="trace"),
        grades=("mode_kernel_tests",),
    ),
    Mutant(
        name="kernel_from_memory",
        why="allocation recording for DRAM traffic",
        cells=_modes(kernel="memory"),
        grades=("mode_kernel_tests",),
    ),
    Mutant(
        name="production_trace",
        why="a full trace of a production job under a 1 % budget",
        cells=_modes(production="trace"),
        grades=("mode_production_tests",),
    ),
    Mutant(
        name="production_timing",
        why="timing alone: says that it slows, not where",
        cells=_modes(production="none"),
        grades=("mode_production_tests",),
    ),
    Mutant(
        name="capitalised_option",
        why="an option spelled differently from the stated strings",
        cells=_modes(production="Sample"),
        grades=("mode_production_tests",),
    ),
]

RIGHT_ANSWERS = [
    Mutant(
        name="overhead_as_exposed_cost",
        why="the exposed part of the cost, max(0, n·c − slack), over the step",
        cells=_overhead(
            "    slack = max(0.0, gpu - cpu)\n    return max(0.0, cost - slack) / max(cpu, gpu)"
        ),
        grades=EX1,
    ),
    Mutant(
        name="overhead_numpy",
        why="numpy maxima, a numpy.float64",
        cells=_overhead(
            "    base = np.maximum(cpu, gpu)\n    return np.maximum(cpu + cost, gpu) / base - 1",
            prelude="import numpy as np\n\n\n",
        ),
        grades=EX1,
    ),
    Mutant(
        name="estimate_statistics_median",
        why="statistics.median, a plain float",
        cells=_estimate(
            "    c = (statistics.median(t) - statistics.median(p)) / n_cal\n    return T - n * c",
            prelude="import statistics\n\n\n",
        ),
        grades=EX2,
    ),
    Mutant(
        name="estimate_percentile",
        why="np.percentile(x, 50), returned as numpy.float64",
        cells=_estimate(
            "    c = (np.percentile(t, 50) - np.percentile(p, 50)) / n_cal\n    return T - n * c",
            prelude="import numpy as np\n\n\n",
        ),
        grades=EX2,
    ),
    Mutant(
        name="estimate_via_overhead_summary",
        why="the medians from the setup's overhead_summary (a setup helper, not the answer)",
        cells=_estimate(
            "    runs = pd.DataFrame({\n"
            '        "workload": "calibration",\n'
            '        "observer": ["none"] * len(p) + ["setprofile"] * len(t),\n'
            '        "seconds": [*p, *t],\n'
            "    })\n"
            '    med = overhead_summary(runs).set_index("observer")["median"]\n'
            '    return T - n * (med["setprofile"] - med["none"]) / n_cal',
            prelude="import pandas as pd\n\nfrom course_lib.profiling import overhead_summary\n\n\n",
        ),
        grades=EX2,
    ),
    Mutant(
        name="largest_descending_fraction",
        why="searches from num_steps down and compares the overhead fraction",
        cells={
            "largest_active_answer": (
                _SCHEDULE + "def largest_active(num_steps, step_time, observer_overhead, "
                "save_time, budget, wait, warmup, repeat, skip_first):\n"
                "    for active in range(num_steps, 0, -1):\n"
                "        acts = [_action(s, wait, warmup, active, repeat, skip_first)\n"
                "                for s in range(num_steps)]\n"
                '        on = len(acts) - acts.count("NONE")\n'
                '        saves = acts.count("RECORD_AND_SAVE") + (acts[-1] == "RECORD")\n'
                "        extra = on * observer_overhead * step_time + saves * save_time\n"
                "        if extra / (num_steps * step_time) <= budget:\n"
                "            return active\n"
                "    return 0\n"
            )
        },
        grades=EX3,
    ),
    Mutant(
        name="torch_exact_exit_rule",
        why="torch's exit rule: one more save when schedule(num_steps) is RECORD or "
        "RECORD_AND_SAVE",
        cells=_largest(
            saves='acts.count("RECORD_AND_SAVE") + (_action(num_steps, wait, warmup, active, '
            'repeat, skip_first) in ("RECORD", "RECORD_AND_SAVE"))'
        ),
        grades=EX3,
    ),
    Mutant(
        name="largest_numpy",
        why="vectorised schedule per active, numpy.int64 result",
        cells={
            "largest_active_answer": (
                "import numpy as np\n\n\n"
                "def largest_active(num_steps, step_time, observer_overhead, save_time, budget, "
                "wait, warmup, repeat, skip_first):\n"
                "    step = np.arange(num_steps) - skip_first\n"
                "    best = np.int64(0)\n"
                "    for active in range(1, num_steps + 1):\n"
                "        cycle = wait + warmup + active\n"
                "        mod = step % cycle\n"
                "        live = step >= 0\n"
                "        if repeat > 0:\n"
                "            live &= step < repeat * cycle\n"
                "        on = live & (mod >= wait)\n"
                "        rec = on & (mod >= wait + warmup)\n"
                "        saves = np.sum(rec & (mod == cycle - 1)) + (rec[-1] and mod[-1] < cycle - 1)\n"
                "        extra = on.sum() * observer_overhead * step_time + saves * save_time\n"
                "        if extra <= budget * num_steps * step_time:\n"
                "            best = np.int64(active)\n"
                "    return best\n"
            )
        },
        grades=EX3,
    ),
]
