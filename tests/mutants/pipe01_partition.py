"""Plausible wrong answers to pipe01_partition's exercises; each must lose points when graded.

``RIGHT_ANSWERS`` are answers a learner could give that are right by another route (vectorised
numpy, a brute force, a binary search, numpy integers); each must keep full marks on the grade
cells it names.
"""

from __future__ import annotations

from tests.mutants import Mutant


def _times(body: str, prelude: str = "") -> dict[str, str]:
    """Exercise 1's cell: ``body`` after work (t_f + t_b per layer) and cuts (A_0 .. A_n)."""
    return {
        "stage_times_answer": (
            f"{prelude}def stage_times_of(forward_times, backward_times, cut_bytes, boundaries,"
            " link_bandwidth):\n"
            "    work = np.asarray(forward_times, dtype=float) + np.asarray(backward_times, dtype=float)\n"
            "    cuts = np.concatenate([[0.0], np.asarray(cut_bytes, dtype=float), [0.0]])\n"
            "    pairs = list(zip(boundaries[:-1], boundaries[1:]))\n"
            "    beta = link_bandwidth\n"
            f"{body}\n"
        )
    }


def _min_max(body: str, prelude: str = "") -> dict[str, str]:
    """Exercise 2's cell: ``body`` after costs (a float list), n and p."""
    return {
        "min_max_answer": (
            f"{prelude}def min_max_boundaries(layer_costs, num_stages):\n"
            "    costs = [float(c) for c in layer_costs]\n"
            "    n, p = len(costs), num_stages\n"
            f"{body}\n"
        )
    }


def _traffic(body: str, prelude: str = "") -> dict[str, str]:
    """Exercise 3's cell: ``body`` after A (a float array), m and gbit."""
    return {
        "cut_traffic_answer": (
            f"{prelude}def cut_traffic_of(cut_bytes, num_microbatches, link_gbit_per_s):\n"
            "    A = np.asarray(cut_bytes, dtype=float)\n"
            "    m, gbit = num_microbatches, link_gbit_per_s\n"
            f"{body}\n"
        )
    }


def _memory(in_flight: str, per_param: str = "16", prelude: str = "", extra: str = "") -> dict:
    """Exercise 4's cell with the in-flight count ``in_flight`` (of m, p, s) and bytes per param."""
    return {
        "stage_memory_answer": (
            f"{prelude}def stage_memory_of(num_params, activation_bytes, boundaries, "
            "num_microbatches):\n"
            "    P = np.asarray(num_params, dtype=float)\n"
            "    S = np.asarray(activation_bytes, dtype=float)\n"
            "    p, m = len(boundaries) - 1, num_microbatches\n"
            f"{extra}"
            "    out = []\n"
            "    for s in range(p):\n"
            "        a, b = boundaries[s], boundaries[s + 1]\n"
            f"        out.append({per_param} * P[a:b].sum() + ({in_flight}) * S[a:b].sum())\n"
            "    return np.array(out)\n"
        )
    }


def _fitting(
    fits: str, on_none: str = "raise ValueError('nothing fits')", prelude: str = ""
) -> dict:
    """Exercise 5's cell: a brute force keeping the partitions where ``fits`` holds — an expression
    of M (the memory rows), stages (a list of (a, b)), times (each stage's cost) and limit."""
    return {
        "fastest_fitting_answer": (
            f"{prelude}def fastest_fitting(layer_costs, layer_memory, memory_limit):\n"
            "    c = np.asarray(layer_costs, dtype=float)\n"
            "    M = np.asarray(layer_memory, dtype=float)\n"
            "    p, n = M.shape\n"
            "    limit = memory_limit\n"
            "    best, best_bounds = float('inf'), None\n"
            "    for cuts in itertools.combinations(range(1, n), p - 1):\n"
            "        bounds = (0, *cuts, n)\n"
            "        stages = list(zip(bounds[:-1], bounds[1:]))\n"
            "        times = [c[a:b].sum() for a, b in stages]\n"
            f"        if not ({fits}):\n"
            "            continue\n"
            "        if max(times) < best:\n"
            "            best, best_bounds = max(times), bounds\n"
            "    if best_bounds is None:\n"
            f"        {on_none}\n"
            "    return best_bounds\n"
        )
    }


FITS = "all(M[s, a:b].sum() <= limit for s, (a, b) in enumerate(stages))"

SPEC_FROM_ARRAYS = (
    "    from course_lib.pipeline.partition import ModelSpec\n"
    "    model = ModelSpec.from_arrays(forward_times, backward_times, [0] * len(work),"
    " [0] * len(work), cut_bytes)\n"
)

MUTANTS = [
    # Exercise 1: stage times with transfers both ways.
    Mutant(
        name="no_transfers",
        why="compute only: the boundary transfers forgotten",
        cells=_times("    return np.array([work[a:b].sum() for a, b in pairs])"),
        grades=("stage_times_tests",),
    ),
    Mutant(
        name="forward_direction_only",
        why="the activation forward only, not the gradient back",
        cells=_times(
            "    return np.array([work[a:b].sum() + (cuts[a] + cuts[b]) / beta for a, b in pairs])"
        ),
        grades=("stage_times_tests",),
    ),
    Mutant(
        name="output_cut_only",
        why="a stage pays only for the cut after it",
        cells=_times(
            "    return np.array([work[a:b].sum() + 2 * cuts[b] / beta for a, b in pairs])"
        ),
        grades=("stage_times_tests",),
    ),
    Mutant(
        name="input_cut_only",
        why="a stage pays only for the cut before it",
        cells=_times(
            "    return np.array([work[a:b].sum() + 2 * cuts[a] / beta for a, b in pairs])"
        ),
        grades=("stage_times_tests",),
    ),
    Mutant(
        name="cut_index_off_by_one",
        why="cut k read at cut_bytes[k] instead of cut_bytes[k - 1]",
        cells=_times(
            "    after = np.concatenate([np.asarray(cut_bytes, dtype=float), [0.0, 0.0]])\n"
            "    n = len(work)\n"
            "    return np.array([work[a:b].sum() + 2 * (after[a] * (a > 0) + after[b] * (b < n))"
            " / beta for a, b in pairs])"
        ),
        grades=("stage_times_tests",),
    ),
    Mutant(
        name="cut_index_wrap",
        why="cut k read at cut_bytes[k - 1] for every stage end: stage 0's input wraps to cut_bytes[-1]",
        cells=_times(
            "    A = np.asarray(cut_bytes, dtype=float)\n"
            "    n = len(work)\n"
            "    return np.array([work[a:b].sum() + 2 * (A[a - 1] + (A[b - 1] if b < n else 0.0))"
            " / beta for a, b in pairs])"
        ),
        grades=("stage_times_tests",),
    ),
    Mutant(
        name="transfers_counted_twice",
        why="4(A_in + A_out)/β: each direction charged once for sending and once for receiving",
        cells=_times(
            "    return np.array([work[a:b].sum() + 4 * (cuts[a] + cuts[b]) / beta for a, b in pairs])"
        ),
        grades=("stage_times_tests",),
    ),
    Mutant(
        name="forward_compute_only",
        why="the layers' forward times only, the backward left out",
        cells=_times(
            "    f = np.asarray(forward_times, dtype=float)\n"
            "    return np.array([f[a:b].sum() + 2 * (cuts[a] + cuts[b]) / beta for a, b in pairs])"
        ),
        grades=("stage_times_tests",),
    ),
    Mutant(
        name="times_in_ms",
        why="milliseconds instead of seconds",
        cells=_times(
            "    return 1e3 * np.array([work[a:b].sum() + 2 * (cuts[a] + cuts[b]) / beta"
            " for a, b in pairs])"
        ),
        grades=("stage_times_tests",),
    ),
    Mutant(
        name="times_as_list",
        why="the right numbers in a list, not a numpy array",
        cells=_times(
            "    return [float(work[a:b].sum() + 2 * (cuts[a] + cuts[b]) / beta) for a, b in pairs]"
        ),
        grades=("stage_times_tests",),
    ),
    Mutant(
        name="delegates_stage_times",
        why="course_lib's stage_times on a ModelSpec built from the arrays",
        cells=_times(
            SPEC_FROM_ARRAYS
            + "    return course_lib_stage_times(model, tuple(boundaries), link_bandwidth)",
            prelude="from course_lib.pipeline.partition import stage_times as course_lib_stage_times\n\n\n",
        ),
        grades=("stage_times_tests",),
    ),
    Mutant(
        name="delegates_stage_costs",
        why="reads each stage off course_lib's stage_costs time matrix",
        cells=_times(
            SPEC_FROM_ARRAYS + "    from course_lib.pipeline.partition import stage_costs\n"
            "    grid = stage_costs(model, len(pairs), link_bandwidth, 1).time\n"
            "    return np.array([grid[a, b] for a, b in pairs])"
        ),
        grades=("stage_times_tests",),
    ),
    # Exercise 2: the min-max partition.
    Mutant(
        name="equal_layer_counts",
        why="round(k·n/p) boundaries: equal layer counts, not the min-max",
        cells=_min_max("    return tuple(round(k * n / p) for k in range(p + 1))"),
        grades=("min_max_tests",),
    ),
    Mutant(
        name="greedy_to_average",
        why="fill each stage up to the average; the last stage takes the rest",
        cells=_min_max(
            "    target, bounds, total = sum(costs) / p, [0], 0.0\n"
            "    for i, c in enumerate(costs):\n"
            "        if total + c > target and len(bounds) < p and i > bounds[-1]:\n"
            "            bounds.append(i)\n"
            "            total = 0.0\n"
            "        total += c\n"
            "    while len(bounds) < p:\n"
            "        bounds.append(bounds[-1] + 1)\n"
            "    return tuple(bounds + [n])"
        ),
        grades=("min_max_tests",),
    ),
    Mutant(
        name="returns_layer_counts",
        why="the optimal layer counts per stage instead of the boundaries",
        cells=_min_max(
            "    best, arg = float('inf'), None\n"
            "    for cuts in itertools.combinations(range(1, n), p - 1):\n"
            "        b = (0, *cuts, n)\n"
            "        v = max(sum(costs[b[s]:b[s + 1]]) for s in range(p))\n"
            "        if v < best:\n"
            "            best, arg = v, b\n"
            "    return tuple(arg[s + 1] - arg[s] for s in range(p))"
        ),
        grades=("min_max_tests",),
    ),
    Mutant(
        name="allows_empty_stages",
        why="cuts may repeat (combinations_with_replacement): a stage can be empty",
        cells=_min_max(
            "    best, arg = float('inf'), None\n"
            "    for cuts in itertools.combinations_with_replacement(range(1, n), p - 1):\n"
            "        b = (0, *cuts, n)\n"
            "        v = max(sum(costs[b[s]:b[s + 1]]) for s in range(p))\n"
            "        if v < best:\n"
            "            best, arg = v, b\n"
            "    return arg"
        ),
        grades=("min_max_tests",),
    ),
    Mutant(
        name="minimises_total_squared",
        why="minimises the sum of squared stage costs (balanced on average), not the slowest stage",
        cells=_min_max(
            "    best, arg = float('inf'), None\n"
            "    for cuts in itertools.combinations(range(1, n), p - 1):\n"
            "        b = (0, *cuts, n)\n"
            "        v = sum(sum(costs[b[s]:b[s + 1]]) ** 2 for s in range(p))\n"
            "        if v < best:\n"
            "            best, arg = v, b\n"
            "    return arg"
        ),
        grades=("min_max_tests",),
    ),
    Mutant(
        name="last_layer_dropped",
        why="the search covers layers 0..n-2: the last boundary is n - 1",
        cells=_min_max(
            "    m = n - 1\n"
            "    best, arg = float('inf'), None\n"
            "    for cuts in itertools.combinations(range(1, m), p - 1):\n"
            "        b = (0, *cuts, m)\n"
            "        v = max(sum(costs[b[s]:b[s + 1]]) for s in range(p))\n"
            "        if v < best:\n"
            "            best, arg = v, b\n"
            "    return arg if arg is not None else tuple(range(p)) + (n,)"
        ),
        grades=("min_max_tests",),
    ),
    Mutant(
        name="cuts_short_of_last_layer",
        why="cuts from range(1, n - 1) with min(): the last stage never holds a single layer",
        cells=_min_max(
            "    options = ((0, *cuts, n) for cuts in itertools.combinations(range(1, n - 1), p - 1))\n"
            "    return min(options, key=lambda b: max(sum(costs[b[s]:b[s + 1]]) for s in range(p)))"
        ),
        grades=("min_max_tests",),
    ),
    Mutant(
        name="delegates_min_max_partition",
        why="course_lib.pipeline.min_max_partition(costs, p).boundaries",
        cells=_min_max(
            "    return course_pipeline.min_max_partition(costs, p).boundaries",
            prelude="import course_lib.pipeline as course_pipeline\n\n\n",
        ),
        grades=("min_max_tests",),
    ),
    Mutant(
        name="delegates_smallest_memory_limit",
        why="the min-max of costs found with course_lib's smallest_memory_limit (costs as memory)",
        cells=_min_max(
            "    from course_lib.pipeline.partition import ModelSpec, smallest_memory_limit,"
            " stage_costs\n"
            "    model = ModelSpec.from_arrays([0.0] * n, [0.0] * n, [c / 16 for c in costs],"
            " [0.0] * n, [0.0] * (n - 1))\n"
            "    grid = stage_costs(model, p, 1.0, 1)\n"
            "    target = smallest_memory_limit(grid, p)\n"
            "    for cuts in itertools.combinations(range(1, n), p - 1):\n"
            "        b = (0, *cuts, n)\n"
            "        if max(sum(costs[b[s]:b[s + 1]]) for s in range(p)) <= target * (1 + 1e-12):\n"
            "            return b"
        ),
        grades=("min_max_tests",),
    ),
    # Exercise 3: each cut's traffic per step, from a link rate in Gb/s.
    Mutant(
        name="gbit_as_gbyte",
        why="Gb/s read as GB/s: 8x too small",
        cells=_traffic("    return 2 * m * A / (gbit * 1e9)"),
        grades=("cut_traffic_tests",),
    ),
    Mutant(
        name="bits_times_eight",
        why="multiplies by 8 the wrong way: bytes/s = Gb/s × 8e9",
        cells=_traffic("    return 2 * m * A / (gbit * 1e9 * 8)"),
        grades=("cut_traffic_tests",),
    ),
    Mutant(
        name="one_direction",
        why="the activation forward only",
        cells=_traffic("    return m * A / (gbit * 1e9 / 8)"),
        grades=("cut_traffic_tests",),
    ),
    Mutant(
        name="one_microbatch",
        why="per microbatch, not per step",
        cells=_traffic("    return 2 * A / (gbit * 1e9 / 8)"),
        grades=("cut_traffic_tests",),
    ),
    Mutant(
        name="one_crossing",
        why="A/β: one microbatch, one direction (the per-crossing time)",
        cells=_traffic("    return A / (gbit * 1e9 / 8)"),
        grades=("cut_traffic_tests",),
    ),
    Mutant(
        name="binary_gigabits",
        why="a gigabit as 2**30 bits",
        cells=_traffic("    return 2 * m * A / (gbit * 2**30 / 8)"),
        grades=("cut_traffic_tests",),
    ),
    Mutant(
        name="traffic_in_ms",
        why="milliseconds",
        cells=_traffic("    return 2e3 * m * A / (gbit * 1e9 / 8)"),
        grades=("cut_traffic_tests",),
    ),
    Mutant(
        name="delegates_cut_traffic",
        why="course_lib's cut_traffic on a ModelSpec built from the cuts",
        cells=_traffic(
            "    from course_lib.pipeline.partition import ModelSpec, cut_traffic\n"
            "    n = len(A) + 1\n"
            "    model = ModelSpec.from_arrays([0.0] * n, [0.0] * n, [0] * n, [0] * n, A)\n"
            "    return cut_traffic(model, gbit * 1e9 / 8, m)"
        ),
        grades=("cut_traffic_tests",),
    ),
    # Exercise 4: stage memory under 1F1B.
    Mutant(
        name="m_in_flight",
        why="m microbatches stashed on every stage (GPipe's count)",
        cells=_memory("m"),
        grades=("stage_memory_tests",),
    ),
    Mutant(
        name="warmup_in_flight",
        why="min(m, p - s - 1): the warm-up forwards, not the peak",
        cells=_memory("min(m, p - s - 1)"),
        grades=("stage_memory_tests",),
    ),
    Mutant(
        name="unclamped_in_flight",
        why="p - s without the clamp to m",
        cells=_memory("p - s"),
        grades=("stage_memory_tests",),
    ),
    Mutant(
        name="reversed_in_flight",
        why="min(m, s + 1): the last stage stashing the most",
        cells=_memory("min(m, s + 1)"),
        grades=("stage_memory_tests",),
    ),
    Mutant(
        name="p_everywhere",
        why="p microbatches on every stage",
        cells=_memory("min(m, p)"),
        grades=("stage_memory_tests",),
    ),
    Mutant(
        name="clamp_before_subtract",
        why="min(m, p) - s: clamped before subtracting, right only when m >= p",
        cells=_memory("min(m, p) - s"),
        grades=("stage_memory_tests",),
    ),
    Mutant(
        name="p_from_len_boundaries",
        why="min(m, p + 1 - s): p taken as len(boundaries)",
        cells=_memory("min(m, p + 1 - s)"),
        grades=("stage_memory_tests",),
    ),
    Mutant(
        name="no_optimizer_state",
        why="4 bytes per parameter: weights and gradients, no Adam state",
        cells=_memory("min(m, p - s)", per_param="4"),
        grades=("stage_memory_tests",),
    ),
    Mutant(
        name="weights_only",
        why="2 bytes per parameter: the bf16 weights only",
        cells=_memory("min(m, p - s)", per_param="2"),
        grades=("stage_memory_tests",),
    ),
    Mutant(
        name="optimizer_state_only",
        why="12 bytes per parameter: Adam's fp32 state without the bf16 weights and gradients",
        cells=_memory("min(m, p - s)", per_param="12"),
        grades=("stage_memory_tests",),
    ),
    Mutant(
        name="fp32_gradients",
        why="18 bytes per parameter (fp32 gradients): not the stated mixed-precision Adam",
        cells=_memory("min(m, p - s)", per_param="18"),
        grades=("stage_memory_tests",),
    ),
    Mutant(
        name="delegates_in_flight",
        why="in-flight counts from course_lib's peak_in_flight_one_f_one_b",
        cells=_memory(
            "peak_in_flight_one_f_one_b(p, m, s)",
            prelude="from course_lib.pipeline import peak_in_flight_one_f_one_b\n\n\n",
        ),
        grades=("stage_memory_tests",),
    ),
    Mutant(
        name="delegates_simulator",
        why="in-flight counts read off a simulated 1F1B timeline",
        cells=_memory(
            "peaks[s]",
            extra="    peaks = simulate(one_f_one_b(p, m), 1.0, 2.0).peak_in_flight\n",
        ),
        grades=("stage_memory_tests",),
    ),
    Mutant(
        name="delegates_verify_peaks",
        why="in-flight counts from pipe10's verify (max_in_flight=1 reports each stage's peak)",
        cells=_memory(
            "peaks[s]",
            prelude="import re\n\nfrom course_lib.pipeline import one_f_one_b, verify\n\n\n",
            extra=(
                "    peaks = [1] * p\n"
                "    for v in verify(one_f_one_b(p, m), max_in_flight=1):\n"
                '        s = int(re.search(r"on stage (\\d+)", v.message).group(1))\n'
                '        peaks[s] = int(re.search(r"peak (\\d+)", v.message).group(1))\n'
            ),
        ),
        grades=("stage_memory_tests",),
    ),
    Mutant(
        name="delegates_stashing_versions_held",
        why="in-flight counts as pipe07's stashing_versions_held (p - s), clamped at m",
        cells=_memory(
            "min(m, int(held[s]))",
            prelude="from course_lib.pipeline.versions import stashing_versions_held\n\n\n",
            extra="    held = stashing_versions_held(p)\n",
        ),
        grades=("stage_memory_tests",),
    ),
    Mutant(
        name="delegates_stage_memory",
        why="course_lib's stage_memory on a ModelSpec built from the arrays",
        cells={
            "stage_memory_answer": (
                "def stage_memory_of(num_params, activation_bytes, boundaries, num_microbatches):\n"
                "    n = len(num_params)\n"
                "    model = ModelSpec.from_arrays([0.0] * n, [0.0] * n, num_params,"
                " activation_bytes, [0.0] * (n - 1))\n"
                "    return stage_memory(model, tuple(boundaries), num_microbatches)['total']"
                ".to_numpy()\n"
            )
        },
        grades=("stage_memory_tests",),
    ),
    # Exercise 5: the fastest partition within a memory limit (the memory rows given).
    Mutant(
        name="ignores_memory",
        why="the unconstrained min-max: every partition 'fits'",
        cells=_fitting("True"),
        grades=("fastest_fitting_tests",),
    ),
    Mutant(
        name="strict_limit",
        why="memory < limit: a stage exactly at the limit is refused",
        cells=_fitting("all(M[s, a:b].sum() < limit for s, (a, b) in enumerate(stages))"),
        grades=("fastest_fitting_tests",),
    ),
    Mutant(
        name="bottleneck_stage_only",
        why="checks the memory of the slowest stage only",
        cells=_fitting(
            "M[times.index(max(times)), stages[times.index(max(times))][0]:"
            "stages[times.index(max(times))][1]].sum() <= limit"
        ),
        grades=("fastest_fitting_tests",),
    ),
    Mutant(
        name="first_stage_only",
        why="checks the memory of stage 0 only, the one that stashes most",
        cells=_fitting("M[0, stages[0][0]:stages[0][1]].sum() <= limit"),
        grades=("fastest_fitting_tests",),
    ),
    Mutant(
        name="first_row_everywhere",
        why="row 0 for every stage: p microbatches in flight on every stage",
        cells=_fitting("all(M[0, a:b].sum() <= limit for a, b in stages)"),
        grades=("fastest_fitting_tests",),
    ),
    Mutant(
        name="last_row_everywhere",
        why="the last row for every stage: one microbatch in flight on every stage",
        cells=_fitting("all(M[-1, a:b].sum() <= limit for a, b in stages)"),
        grades=("fastest_fitting_tests",),
    ),
    Mutant(
        name="rows_reversed",
        why="row p - 1 - s for stage s: the last stage charged as if it stashed the most",
        cells=_fitting("all(M[p - 1 - s, a:b].sum() <= limit for s, (a, b) in enumerate(stages))"),
        grades=("fastest_fitting_tests",),
    ),
    Mutant(
        name="per_layer_limit",
        why="each layer checked against the limit, not the stage's sum",
        cells=_fitting("all(M[s, a:b].max() <= limit for s, (a, b) in enumerate(stages))"),
        grades=("fastest_fitting_tests",),
    ),
    Mutant(
        name="greedy_repair",
        why="the unconstrained min-max, then layers shifted off each over-limit stage",
        cells={
            "fastest_fitting_answer": (
                "def fastest_fitting(layer_costs, layer_memory, memory_limit):\n"
                "    c = [float(x) for x in layer_costs]\n"
                "    M = np.asarray(layer_memory, dtype=float)\n"
                "    p, n = M.shape\n"
                "    best, b = float('inf'), None\n"
                "    for cuts in itertools.combinations(range(1, n), p - 1):\n"
                "        bounds = [0, *cuts, n]\n"
                "        v = max(sum(c[bounds[s]:bounds[s + 1]]) for s in range(p))\n"
                "        if v < best:\n"
                "            best, b = v, bounds\n"
                "    for _ in range(n * p * n):\n"
                "        over = [s for s in range(p) if M[s, b[s]:b[s + 1]].sum() > memory_limit]\n"
                "        if not over:\n"
                "            return tuple(b)\n"
                "        s = over[0]\n"
                "        if b[s + 1] - b[s] < 2:\n"
                "            break\n"
                "        if s < p - 1:\n"
                "            b[s + 1] -= 1  # hand its last layer to the next stage\n"
                "        else:\n"
                "            b[s] += 1  # the last stage hands its first layer back\n"
                "    raise ValueError('nothing fits')\n"
            )
        },
        grades=("fastest_fitting_tests",),
    ),
    Mutant(
        name="returns_none",
        why="returns None when no partition fits instead of raising ValueError",
        cells=_fitting(FITS, on_none="return None"),
        grades=("fastest_fitting_tests",),
    ),
    Mutant(
        name="raises_runtime_error",
        why="raises RuntimeError when no partition fits",
        cells=_fitting(FITS, on_none="raise RuntimeError('nothing fits')"),
        grades=("fastest_fitting_tests",),
    ),
    Mutant(
        name="delegates_min_max_with_limit",
        why="course_lib's min_max_partition on a StageCosts table built from the rows",
        cells={
            "fastest_fitting_answer": (
                "from course_lib.pipeline.partition import StageCosts\n\n\n"
                "def fastest_fitting(layer_costs, layer_memory, memory_limit):\n"
                "    M = np.asarray(layer_memory, dtype=float)\n"
                "    p, n = M.shape\n"
                "    def ranged(v):\n"
                "        prefix = np.concatenate([[0.0], np.cumsum(v)])\n"
                "        grid = prefix[None, :] - prefix[:, None]\n"
                "        grid[np.tril_indices(n + 1)] = np.inf\n"
                "        return grid\n"
                "    table = StageCosts(ranged(layer_costs), np.array([ranged(r) for r in M]), n)\n"
                "    return min_max_partition(table, p, memory_limit=memory_limit).boundaries\n"
            )
        },
        grades=("fastest_fitting_tests",),
    ),
]

RIGHT_ANSWERS = [
    Mutant(
        name="times_vectorised",
        why="np.add.reduceat over the layers and fancy indexing of the cuts",
        cells=_times(
            "    b = np.asarray(boundaries)\n"
            "    return np.add.reduceat(work, b[:-1]) + 2 * (cuts[b[:-1]] + cuts[b[1:]]) / beta"
        ),
        grades=("stage_times_tests",),
    ),
    Mutant(
        name="times_per_direction",
        why="forward and backward transfers added one by one, per stage side",
        cells=_times(
            "    out = []\n"
            "    for a, b in pairs:\n"
            "        t = sum(float(x) for x in work[a:b])\n"
            "        for crossing in (cuts[a], cuts[b]):  # activation forward, gradient back\n"
            "            t += crossing / beta + crossing / beta\n"
            "        out.append(t)\n"
            "    return np.array(out)"
        ),
        grades=("stage_times_tests",),
    ),
    Mutant(
        name="min_max_brute_force",
        why="every set of cuts with itertools.combinations",
        cells=_min_max(
            "    best, arg = float('inf'), None\n"
            "    for cuts in itertools.combinations(range(1, n), p - 1):\n"
            "        b = (0, *cuts, n)\n"
            "        v = max(sum(costs[b[s]:b[s + 1]]) for s in range(p))\n"
            "        if v < best:\n"
            "            best, arg = v, b\n"
            "    return arg"
        ),
        grades=("min_max_tests",),
    ),
    Mutant(
        name="min_max_binary_search",
        why="binary search over the candidate stage sums with a greedy feasibility test",
        cells=_min_max(
            "    sums = sorted({sum(costs[a:b]) for a in range(n) for b in range(a + 1, n + 1)})\n"
            "    def cuts_for(limit):\n"
            "        bounds, total = [0], 0.0\n"
            "        for i, c in enumerate(costs):\n"
            "            if c > limit:\n"
            "                return None\n"
            "            if total + c > limit * (1 + 1e-12):  # sums in another order\n"
            "                bounds.append(i)\n"
            "                total = 0.0\n"
            "            total += c\n"
            "        if len(bounds) > p:\n"
            "            return None\n"
            "        # split the longest stages until there are p (costs >= 0: no stage grows)\n"
            "        while len(bounds) < p:\n"
            "            for k in range(len(bounds)):\n"
            "                end = bounds[k + 1] if k + 1 < len(bounds) else n\n"
            "                if end - bounds[k] > 1:\n"
            "                    bounds.insert(k + 1, bounds[k] + 1)\n"
            "                    break\n"
            "        return tuple(bounds) + (n,)\n"
            "    lo, hi = 0, len(sums) - 1\n"
            "    while lo < hi:\n"
            "        mid = (lo + hi) // 2\n"
            "        if cuts_for(sums[mid]) is None:\n"
            "            lo = mid + 1\n"
            "        else:\n"
            "            hi = mid\n"
            "    return cuts_for(sums[lo])"
        ),
        grades=("min_max_tests",),
    ),
    Mutant(
        name="min_max_numpy_ints",
        why="section 2's recursion with numpy, boundaries as a list of numpy integers",
        cells=_min_max(
            "    prefix = np.concatenate([[0.0], np.cumsum(costs)])\n"
            "    grid = prefix[None, :] - prefix[:, None]\n"
            "    grid[np.tril_indices(n + 1)] = np.inf\n"
            "    best = np.full((p + 1, n + 1), np.inf)\n"
            "    best[p, n] = 0.0\n"
            "    for s in range(p - 1, -1, -1):\n"
            "        best[s] = np.min(np.maximum(grid, best[s + 1][None, :]), axis=1)\n"
            "    bounds = [np.int64(0)]\n"
            "    for s in range(p):\n"
            "        ok = np.maximum(grid[bounds[-1]], best[s + 1]) <= best[0, 0]\n"
            "        bounds.append(np.argmax(ok))\n"
            "    return bounds"
        ),
        grades=("min_max_tests",),
    ),
    Mutant(
        name="traffic_via_bits",
        why="bits over bits per second",
        cells=_traffic("    return 2 * m * (8 * A) / (gbit * 1e9)"),
        grades=("cut_traffic_tests",),
    ),
    Mutant(
        name="memory_vectorised",
        why="np.add.reduceat and np.minimum over the stage indices",
        cells={
            "stage_memory_answer": (
                "def stage_memory_of(num_params, activation_bytes, boundaries, num_microbatches):\n"
                "    b = np.asarray(boundaries)\n"
                "    p = len(b) - 1\n"
                "    P = np.add.reduceat(np.asarray(num_params, dtype=float), b[:-1])\n"
                "    S = np.add.reduceat(np.asarray(activation_bytes, dtype=float), b[:-1])\n"
                "    return (2 + 2 + 12) * P + np.minimum(num_microbatches, p - np.arange(p)) * S\n"
            )
        },
        grades=("stage_memory_tests",),
    ),
    Mutant(
        name="fitting_stage_sums",
        why="the brute force with course_lib's stage_sums on each stage's row",
        cells=_fitting("all(stage_sums(M[s], bounds)[s] <= limit for s in range(p))"),
        grades=("fastest_fitting_tests",),
    ),
    Mutant(
        name="fitting_dp",
        why="section 2's recursion with the stages that do not fit set to infinity",
        cells={
            "fastest_fitting_answer": (
                "def fastest_fitting(layer_costs, layer_memory, memory_limit):\n"
                "    M = np.asarray(layer_memory, dtype=float)\n"
                "    p, n = M.shape\n"
                "    c = np.concatenate([[0.0], np.cumsum(layer_costs)])\n"
                "    mem = np.concatenate([np.zeros((p, 1)), np.cumsum(M, axis=1)], axis=1)\n"
                "    INF = float('inf')\n"
                "    def cost(s, a, b):\n"
                "        fits = mem[s, b] - mem[s, a] <= memory_limit\n"
                "        return c[b] - c[a] if fits else INF\n"
                "    best = [[INF] * (n + 1) for _ in range(p + 1)]\n"
                "    end = [[0] * (n + 1) for _ in range(p + 1)]\n"
                "    best[p][n] = 0.0\n"
                "    for s in range(p - 1, -1, -1):\n"
                "        for a in range(n):\n"
                "            for b in range(a + 1, n + 1):\n"
                "                v = max(cost(s, a, b), best[s + 1][b])\n"
                "                if v < best[s][a]:\n"
                "                    best[s][a], end[s][a] = v, b\n"
                "    if best[0][0] == INF:\n"
                "        raise ValueError('no partition fits')\n"
                "    bounds = [0]\n"
                "    for s in range(p):\n"
                "        bounds.append(end[s][bounds[-1]])\n"
                "    return tuple(bounds)\n"
            )
        },
        grades=("fastest_fitting_tests",),
    ),
]
