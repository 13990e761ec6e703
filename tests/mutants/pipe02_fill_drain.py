"""Plausible wrong answers to pipe02_fill_drain's exercises; each must lose points when graded.

``RIGHT_ANSWERS`` are answers a learner could give that are right by another route (another
formula, numpy types, a list for a tuple); each must keep full marks on the grade cells it names.
"""

from __future__ import annotations

from tests.mutants import Mutant


def _function(grade_id: str, header: str, body: str) -> dict[str, str]:
    """A solution cell defining a function: ``header`` (signature and docstring), then ``body``."""
    return {grade_id: f"{header}{body}\n"}


def _bubbles(body: str, prelude: str = "") -> dict[str, str]:
    """The Exercise 1 solution cell with ``body`` after the ideal compute and the bubble."""
    header = (
        f"{prelude}def profiled_bubbles(\n"
        "    step_time: float, num_microbatches: int, forward_time: float, backward_time: float\n"
        ") -> tuple[float, float]:\n"
        '    """(elapsed idle fraction, overhead) of a profiled fill-drain step."""\n'
        "    T, m, t_f, t_b = step_time, num_microbatches, forward_time, backward_time\n"
        "    ideal = m * (t_f + t_b)\n"
        "    bubble = T - ideal\n"
    )
    return _function("profiled_bubbles_answer", header, body)


def _fewest(body: str, prelude: str = "") -> dict[str, str]:
    """The Exercise 2 solution cell with ``body`` as min_microbatches' body."""
    header = (
        f"{prelude}def min_microbatches(num_stages: int, max_idle_percent: int) -> int:\n"
        '    """Smallest m with (p - 1)/(m + p - 1) < max_idle_percent / 100."""\n'
        "    p, k = num_stages, max_idle_percent\n"
    )
    return _function("min_microbatches_answer", header, body)


def _hops(body: str) -> dict[str, str]:
    """The Exercise 3 solution cell with ``body`` after p, m and the zero-latency compute time."""
    header = (
        "def fill_drain_makespan_hops(\n"
        "    num_microbatches: int, forward_time: float, backward_time: float,\n"
        "    hop_latencies: list[float],\n"
        ") -> float:\n"
        '    """Makespan (s) of a balanced fill-drain pipeline with a latency per hop."""\n'
        "    p, m = len(hop_latencies) + 1, num_microbatches\n"
        "    compute = (m + p - 1) * (forward_time + backward_time)\n"
    )
    return _function("latency_answer", header, body)


BOTH = ("idle_fraction_tests", "overhead_tests")

MUTANTS = [
    # Exercise 1: the two bubbles of a profiled step, as a function of the measurements.
    Mutant(
        name="swapped_definitions",
        why="idle fraction and overhead swapped",
        cells=_bubbles("    return bubble / ideal, bubble / T"),
        grades=BOTH,
    ),
    Mutant(
        name="percentages",
        why="percentages instead of fractions",
        cells=_bubbles("    return 100 * bubble / T, 100 * bubble / ideal"),
        grades=BOTH,
    ),
    Mutant(
        name="busy_fraction_and_ratio",
        why="the busy share ideal/T and the ratio T/ideal, each without its '1 -' or '- 1'",
        cells=_bubbles("    return ideal / T, T / ideal"),
        grades=BOTH,
    ),
    Mutant(
        name="forgets_backward_in_ideal",
        why="ideal compute m·t_f: the backward's t_b left out",
        cells=_bubbles("    return 1 - m * t_f / T, T / (m * t_f) - 1"),
        grades=BOTH,
    ),
    Mutant(
        name="ratio_not_overhead",
        why="the overhead as step / ideal compute, without the - 1",
        cells=_bubbles("    return bubble / T, T / ideal"),
        grades=("overhead_tests",),
    ),
    Mutant(
        name="wrong_conversion",
        why="overhead = idle / (1 + idle) instead of idle / (1 - idle)",
        cells=_bubbles("    idle = bubble / T\n    return idle, idle / (1 + idle)"),
        grades=("overhead_tests",),
    ),
    Mutant(
        name="both_overhead",
        why="the overhead given for both",
        cells=_bubbles("    return bubble / ideal, bubble / ideal"),
        grades=("idle_fraction_tests",),
    ),
    Mutant(
        name="both_idle",
        why="the elapsed idle fraction given for both",
        cells=_bubbles("    return bubble / T, bubble / T"),
        grades=("overhead_tests",),
    ),
    Mutant(
        name="formula_bubble_of_the_example",
        why="t_pb = (p - 1)(t_f + t_b) with the example's p = 6, not the measured step's bubble",
        cells=_bubbles("    formula = 5 * (t_f + t_b)\n    return formula / T, formula / ideal"),
        grades=BOTH,
    ),
    Mutant(
        name="closed_form_helpers",
        why="course_lib.pipeline.formulas' zero-latency closed forms with the example's p = 6",
        cells=_bubbles(
            "    return formulas.fill_drain_idle_fraction(6, m), formulas.fill_drain_overhead(6, m)",
            prelude="from course_lib.pipeline import formulas\n\n\n",
        ),
        grades=BOTH,
    ),
    Mutant(
        name="simulates_profiled_latency",
        why="simulate(gpipe(6, m), ...) with the per-hop latency that makes up the profiled step",
        cells=_bubbles(
            "    delta = (T - (m + 5) * (t_f + t_b)) / 10\n"
            "    run = simulate(gpipe(6, m), t_f, t_b, p2p_latency=max(delta, 0.0))\n"
            "    return run.idle_fraction, run.overhead"
        ),
        grades=BOTH,
    ),
    Mutant(
        name="simulates_ideal_compute",
        why="the right ratios, but the ideal compute read off simulate(gpipe(1, m), ...)",
        cells=_bubbles(
            "    busy = simulate(gpipe(1, m), t_f, t_b).makespan\n"
            "    return (T - busy) / T, (T - busy) / busy"
        ),
        grades=BOTH,
    ),
    Mutant(
        name="explorer_metrics",
        why="the right ratios, with the ideal compute read off the explorer's table (one stage)",
        cells=_bubbles(
            "    table = fill_drain_explorer(1, m, t_f, t_b).last_metrics\n"
            "    busy = table['makespan'][1]\n"
            "    return (T - busy) / T, (T - busy) / busy"
        ),
        grades=BOTH,
    ),
    # Exercise 2: the smallest m with idle < k %.
    Mutant(
        name="idle_at_most",
        why="idle <= k % instead of < k %: where the bound is an integer, one microbatch short",
        cells=_fewest(
            "    m = 1\n    while 100 * (p - 1) > k * (m + p - 1):\n        m += 1\n    return m"
        ),
        grades=("min_microbatches_tests",),
    ),
    Mutant(
        name="ceil_of_bound",
        why="ceil((p - 1)(100 - k)/k) instead of floor(...) + 1: wrong where the bound is an integer",
        cells=_fewest("    return max(1, -(-(p - 1) * (100 - k) // k))"),
        grades=("min_microbatches_tests",),
    ),
    Mutant(
        name="round_plus_one",
        why="round((p - 1)(100 - k)/k) + 1: one too many where the bound's fraction is >= 1/2",
        cells=_fewest("    return round((p - 1) * (100 - k) / k) + 1"),
        grades=("min_microbatches_tests",),
    ),
    Mutant(
        name="at_least_p",
        why="max(p, ...): assumes a pipeline needs m >= p microbatches",
        cells=_fewest("    return max(p, (p - 1) * (100 - k) // k + 1)"),
        grades=("min_microbatches_tests",),
    ),
    Mutant(
        name="float_boundary",
        why="1 - m/(m + p - 1) < k/100 in floats: 1 - 63/70 = 0.09999999999999998 < 0.1",
        cells=_fewest(
            "    m = 1\n    while not 1 - m / (m + p - 1) < k / 100:\n        m += 1\n    return m"
        ),
        grades=("min_microbatches_tests",),
    ),
    Mutant(
        name="float_floor_of_bound",
        why="floor((p - 1)(100/k - 1)) + 1 in floats: (4, 75) gives 1, not 2",
        cells=_fewest(
            "    return math.floor((p - 1) * (100 / k - 1)) + 1", prelude="import math\n\n\n"
        ),
        grades=("min_microbatches_tests",),
    ),
    Mutant(
        name="float_floor_of_quotient",
        why="floor((p - 1)/(k/100) - (p - 1)) + 1 in floats: (8, 7) gives 93, not 94",
        cells=_fewest(
            "    return math.floor((p - 1) / (k / 100) - (p - 1)) + 1", prelude="import math\n\n\n"
        ),
        grades=("min_microbatches_tests",),
    ),
    Mutant(
        name="float_percent_loop",
        why="(p - 1)/(m + p - 1) * 100 < k in floats: (30, 29) stops at 71, not 72",
        cells=_fewest(
            "    m = 1\n"
            "    while not (p - 1) / (m + p - 1) * 100 < k:\n"
            "        m += 1\n"
            "    return m"
        ),
        grades=("min_microbatches_tests",),
    ),
    Mutant(
        name="overhead_definition",
        why="solves (p - 1)/m < k %: the overhead, not the idle fraction",
        cells=_fewest("    return 100 * (p - 1) // k + 1"),
        grades=("min_microbatches_tests",),
    ),
    Mutant(
        name="stages_not_hops",
        why="idle p/(m + p): an off-by-one in the stages",
        cells=_fewest("    return p * (100 - k) // k + 1"),
        grades=("min_microbatches_tests",),
    ),
    Mutant(
        name="rule_of_thumb",
        why="GPipe's m >= 4p rule of thumb",
        cells=_fewest("    return 4 * p"),
        grades=("min_microbatches_tests",),
    ),
    Mutant(
        name="percent_as_fraction",
        why="compares the idle fraction with k, not k/100",
        cells=_fewest(
            "    m = 1\n    while not (p - 1) / (m + p - 1) < k:\n        m += 1\n    return m"
        ),
        grades=("min_microbatches_tests",),
    ),
    Mutant(
        name="float_result",
        why="the right number as a float",
        cells=_fewest("    return (p - 1) * (100 - k) / k // 1 + 1"),
        grades=("min_microbatches_tests",),
    ),
    Mutant(
        name="loops_over_closed_form",
        why="searches m with course_lib.pipeline.formulas.fill_drain_idle_fraction",
        cells=_fewest(
            "    m = 1\n"
            "    while not formulas.fill_drain_idle_fraction(p, m) < k / 100:\n"
            "        m += 1\n"
            "    return m",
            prelude="from course_lib.pipeline import formulas\n\n\n",
        ),
        grades=("min_microbatches_tests",),
    ),
    Mutant(
        name="loops_over_simulator",
        why="searches m with simulate(gpipe(p, m), ...).idle_fraction",
        cells=_fewest(
            "    m = 1\n"
            "    while not simulate(gpipe(p, m), 1e-3, 2e-3).idle_fraction < k / 100:\n"
            "        m += 1\n"
            "    return m"
        ),
        grades=("min_microbatches_tests",),
    ),
    Mutant(
        name="loops_over_gpipe_makespan",
        why="searches m with pipe08's gpipe_makespan in whole slots (exact integers)",
        cells=_fewest(
            "    m = 1\n"
            "    while 100 * (gpipe_makespan([1] * p, [0] * p, m) - m) >= "
            "k * gpipe_makespan([1] * p, [0] * p, m):\n"
            "        m += 1\n"
            "    return m",
            prelude="from course_lib.pipeline.imbalance import gpipe_makespan\n\n\n",
        ),
        grades=("min_microbatches_tests",),
    ),
    Mutant(
        name="loops_over_interleaved_makespan",
        why="searches m with pipe04's interleaved_makespan at v = 1, in whole slots",
        cells=_fewest(
            "    m = 1\n"
            "    while 100 * (round(interleaved_makespan(p, m, 1, 1.0, 0.0)) - m) >= "
            "k * round(interleaved_makespan(p, m, 1, 1.0, 0.0)):\n"
            "        m += 1\n"
            "    return m",
            prelude="from course_lib.pipeline.interleaving import interleaved_makespan\n\n\n",
        ),
        grades=("min_microbatches_tests",),
    ),
    Mutant(
        name="loops_over_accumulation_step_times",
        why="searches m with pipe06's step_times {m: (m + p - 1) t} at t = 1 slot",
        cells=_fewest(
            "    m = 1\n"
            "    while 100 * (round(step_times(m, p, {1: 1.0})[m]) - m) >= "
            "k * round(step_times(m, p, {1: 1.0})[m]):\n"
            "        m += 1\n"
            "    return m",
            prelude="from course_lib.pipeline.accumulation import step_times\n\n\n",
        ),
        grades=("min_microbatches_tests",),
    ),
    # Exercise 3: makespan with a latency per hop (zero latencies: section 1's closed form).
    Mutant(
        name="no_pipelining",
        why="p·m·(t_f + t_b): every stage's work one after another",
        cells=_hops("    return p * m * (forward_time + backward_time) + 2 * sum(hop_latencies)"),
        grades=("latency_tests",),
    ),
    Mutant(
        name="one_slot_too_many",
        why="(m + p)(t_f + t_b): an off-by-one in the stages",
        cells=_hops("    return (m + p) * (forward_time + backward_time) + 2 * sum(hop_latencies)"),
        grades=("latency_tests",),
    ),
    Mutant(
        name="bubble_counted_twice",
        why="(m + 2(p - 1))(t_f + t_b): p - 1 slots for the fill and p - 1 more for the drain",
        cells=_hops(
            "    return (m + 2 * (p - 1)) * (forward_time + backward_time) + 2 * sum(hop_latencies)"
        ),
        grades=("latency_tests",),
    ),
    Mutant(
        name="ideal_compute_only",
        why="m(t_f + t_b) + latency: the busy time of one rank, without fill and drain",
        cells=_hops("    return m * (forward_time + backward_time) + 2 * sum(hop_latencies)"),
        grades=("latency_tests",),
    ),
    Mutant(
        name="fill_for_forwards_only",
        why="(m + p - 1)·t_f + m·t_b: forgets that the backward pass fills and drains too",
        cells=_hops(
            "    return (m + p - 1) * forward_time + m * backward_time + 2 * sum(hop_latencies)"
        ),
        grades=("latency_tests",),
    ),
    Mutant(
        name="forgets_backward_with_hops",
        why="(m + p - 1)·t_f + 2Σδ: the backward's t_b left out",
        cells=_hops("    return (m + p - 1) * forward_time + 2 * sum(hop_latencies)"),
        grades=("latency_tests",),
    ),
    Mutant(
        name="latency_one_direction",
        why="each hop's latency paid once: forgets the gradients crossing back",
        cells=_hops("    return compute + sum(hop_latencies)"),
        grades=("latency_tests",),
    ),
    Mutant(
        name="no_latency",
        why="ignores the hops",
        cells=_hops("    return compute"),
        grades=("latency_tests",),
    ),
    Mutant(
        name="latency_per_microbatch",
        why="every microbatch pays every hop both ways, as if messages never overlapped compute",
        cells=_hops("    return compute + 2 * m * sum(hop_latencies)"),
        grades=("latency_tests",),
    ),
    Mutant(
        name="slowest_hop_everywhere",
        why="2(p - 1)·max(δ): the network hop's latency on every hop",
        cells=_hops("    return compute + 2 * (p - 1) * max(hop_latencies, default=0.0)"),
        grades=("latency_tests",),
    ),
    Mutant(
        name="first_hop_everywhere",
        why="2(p - 1)·δ[0]: the first hop's latency on every hop",
        cells=_hops(
            "    return compute + 2 * (p - 1) * (hop_latencies[0] if hop_latencies else 0.0)"
        ),
        grades=("latency_tests",),
    ),
    Mutant(
        name="latency_per_stage",
        why="2p·mean(δ): a latency per stage, p of them, not per hop",
        cells=_hops(
            "    mean = sum(hop_latencies) / len(hop_latencies) if hop_latencies else 0.0\n"
            "    return compute + 2 * p * mean"
        ),
        grades=("latency_tests",),
    ),
    Mutant(
        name="latency_in_every_slot",
        why="(m + p - 1)(t_f + t_b + 2·mean δ): the latency added to every slot of the chain",
        cells=_hops(
            "    mean = sum(hop_latencies) / len(hop_latencies) if hop_latencies else 0.0\n"
            "    return (m + p - 1) * (forward_time + backward_time + 2 * mean)"
        ),
        grades=("latency_tests",),
    ),
    Mutant(
        name="network_hop_twice",
        why="Σδ + max δ: the slow hop counted in both directions, the others once",
        cells=_hops("    return compute + sum(hop_latencies) + max(hop_latencies, default=0.0)"),
        grades=("latency_tests",),
    ),
    Mutant(
        name="hops_as_stages",
        why="len(hop_latencies) stages: an off-by-one in the stages",
        cells=_hops(
            "    stages = len(hop_latencies)\n"
            "    compute = (m + stages - 1) * (forward_time + backward_time)\n"
            "    return compute + 2 * sum(hop_latencies)"
        ),
        grades=("latency_tests",),
    ),
    Mutant(
        name="milliseconds",
        why="the right makespan in ms",
        cells=_hops("    return 1e3 * (compute + 2 * sum(hop_latencies))"),
        grades=("latency_tests",),
    ),
    Mutant(
        name="closed_form_with_mean_latency",
        why="course_lib's fill_drain_makespan with the mean hop latency (right value, delegated)",
        cells=_hops(
            "    from course_lib.pipeline.formulas import fill_drain_makespan\n\n"
            "    mean = sum(hop_latencies) / max(len(hop_latencies), 1)\n"
            "    return fill_drain_makespan(p, m, forward_time, backward_time, mean)"
        ),
        grades=("latency_tests",),
    ),
    Mutant(
        name="delegates_via_formulas_module",
        why="ideal·(1 + formulas.fill_drain_overhead(p, m)) + 2Σδ (right value, delegated)",
        cells=_hops(
            "    from course_lib.pipeline import formulas\n\n"
            "    ideal = m * (forward_time + backward_time)\n"
            "    return ideal * (1 + formulas.fill_drain_overhead(p, m)) + 2 * sum(hop_latencies)"
        ),
        grades=("latency_tests",),
    ),
    Mutant(
        name="simulates_the_hops",
        why="simulate(gpipe(p, m), ..., p2p_latency=hop_latencies) instead of the formula",
        cells=_hops(
            "    hops = list(hop_latencies) or 0.0\n"
            "    run = simulate(gpipe(p, m), forward_time, backward_time, p2p_latency=hops)\n"
            "    return run.makespan"
        ),
        grades=("latency_tests",),
    ),
    Mutant(
        name="hops_via_gpipe_makespan",
        why="pipe08's gpipe_makespan for the compute, plus 2Σδ (right value, delegated)",
        cells=_hops(
            "    from course_lib.pipeline.imbalance import gpipe_makespan\n\n"
            "    f, b = [forward_time] * p, [backward_time] * p\n"
            "    return gpipe_makespan(f, b, m) + 2 * sum(hop_latencies)"
        ),
        grades=("latency_tests",),
    ),
    Mutant(
        name="hops_via_interleaved_makespan",
        why="pipe04's interleaved_makespan at v = 1 for the compute, plus 2Σδ (delegated)",
        cells=_hops(
            "    from course_lib.pipeline.interleaving import interleaved_makespan\n\n"
            "    compute = interleaved_makespan(p, m, 1, forward_time, backward_time)\n"
            "    return compute + 2 * sum(hop_latencies)"
        ),
        grades=("latency_tests",),
    ),
    Mutant(
        name="hops_via_makespan_lower_bound",
        why="pipe08's makespan_lower_bound (equal stages: the step) plus 2Σδ (delegated)",
        cells=_hops(
            "    from course_lib.pipeline.imbalance import makespan_lower_bound\n\n"
            "    f, b = [forward_time] * p, [backward_time] * p\n"
            "    return makespan_lower_bound(f, b, m) + 2 * sum(hop_latencies)"
        ),
        grades=("latency_tests",),
    ),
    # Exercise 4: which definition a quoted 37.5 % uses at p = 4, m = 5.
    Mutant(
        name="says_overhead",
        why="remembers 37.5 % as section 2's overhead (m = 8), not this pipeline's (m = 5)",
        cells={"bubble_choice_answer": 'bubble_definition = "overhead"\n'},
        grades=("bubble_choice_tests",),
    ),
    Mutant(
        name="says_neither",
        why="checks only the overhead (p - 1)/m = 60 %",
        cells={"bubble_choice_answer": 'bubble_definition = "neither"\n'},
        grades=("bubble_choice_tests",),
    ),
    Mutant(
        name="capitalised_option",
        why="an option spelled differently from the stated strings",
        cells={"bubble_choice_answer": 'bubble_definition = "Idle"\n'},
        grades=("bubble_choice_tests",),
    ),
]

RIGHT_ANSWERS = [
    Mutant(
        name="bubbles_by_conversion",
        why="the idle fraction from the busy share, the overhead as idle / (1 - idle)",
        cells=_bubbles("    idle = 1 - ideal / T\n    return idle, idle / (1 - idle)"),
        grades=BOTH,
    ),
    Mutant(
        name="bubbles_as_numpy_list",
        why="numpy scalars (one float32) in a list",
        cells=_bubbles(
            "    return [np.float64(bubble / T), np.float32(T / ideal - 1)]",
            prelude="import numpy as np\n\n\n",
        ),
        grades=BOTH,
    ),
    Mutant(
        name="bubbles_from_rank_time",
        why="idle rank-time over total rank-time for an arbitrary number of ranks",
        cells=_bubbles(
            "    ranks = 6\n"
            "    idle = (ranks * T - ranks * ideal) / (ranks * T)\n"
            "    return idle, (T - ideal) / ideal"
        ),
        grades=BOTH,
    ),
    Mutant(
        name="fewest_numpy_int64",
        why="the closed form returned as numpy.int64",
        cells=_fewest(
            "    return np.int64((p - 1) * (100 - k) // k + 1)", prelude="import numpy as np\n\n\n"
        ),
        grades=("min_microbatches_tests",),
    ),
    Mutant(
        name="fewest_numpy_search",
        why="a vectorised search whose result is a numpy integer",
        cells=_fewest(
            "    ms = np.arange(1, 100 * p + 2)\n"
            "    return ms[np.argmax(100 * (p - 1) < k * (ms + p - 1))]",
            prelude="import numpy as np\n\n\n",
        ),
        grades=("min_microbatches_tests",),
    ),
    Mutant(
        name="fewest_fraction_loop",
        why="a search comparing exact fractions",
        cells=_fewest(
            "    m = 1\n"
            "    while Fraction(p - 1, m + p - 1) >= Fraction(k, 100):\n"
            "        m += 1\n"
            "    return m",
            prelude="from fractions import Fraction\n\n\n",
        ),
        grades=("min_microbatches_tests",),
    ),
    Mutant(
        name="fewest_float_direct_compare",
        why="(p - 1)/(m + p - 1) < k/100 in floats: right on every target of 1-99 % (checked)",
        cells=_fewest(
            "    m = 1\n    while not (p - 1) / (m + p - 1) < k / 100:\n        m += 1\n    return m"
        ),
        grades=("min_microbatches_tests",),
    ),
    Mutant(
        name="hops_mean_latency_by_hand",
        why="2(p - 1)·mean δ, which is 2Σδ",
        cells=_hops(
            "    mean = sum(hop_latencies) / len(hop_latencies) if hop_latencies else 0.0\n"
            "    return compute + 2 * (p - 1) * mean"
        ),
        grades=("latency_tests",),
    ),
    Mutant(
        name="hops_own_event_recursion",
        why="the start times of every action computed by hand, as simulate does",
        cells=_hops(
            "    lat = list(hop_latencies)\n"
            "    fwd = [[0.0] * m for _ in range(p)]\n"
            "    for s in range(p):\n"
            "        for j in range(m):\n"
            "            ready = fwd[s][j - 1] if j else 0.0\n"
            "            arrive = fwd[s - 1][j] + lat[s - 1] if s else 0.0\n"
            "            fwd[s][j] = max(ready, arrive) + forward_time\n"
            "    bwd = [[0.0] * m for _ in range(p)]\n"
            "    for s in reversed(range(p)):\n"
            "        for j in range(m):\n"
            "            ready = bwd[s][j - 1] if j else fwd[s][m - 1]\n"
            "            arrive = bwd[s + 1][j] + lat[s] if s < p - 1 else fwd[s][j]\n"
            "            bwd[s][j] = max(ready, arrive) + backward_time\n"
            "    return max(bwd[0])"
        ),
        grades=("latency_tests",),
    ),
    Mutant(
        name="hops_numpy_scalar",
        why="the closed form with numpy's sum, a numpy.float64",
        cells=_hops(
            "    return compute + 2 * np.sum(np.asarray(hop_latencies, dtype=float))",
        ),
        grades=("latency_tests",),
    ),
]
