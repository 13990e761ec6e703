"""Plausible wrong answers to pipe02_fill_drain's exercises; each must lose points when graded."""

from __future__ import annotations

from tests.mutants import Mutant


def _function(grade_id: str, header: str, body: str) -> dict[str, str]:
    """A solution cell defining a function: ``header`` (signature and docstring), then ``body``."""
    return {grade_id: f"{header}{body}\n"}


def _makespan_impl(body: str) -> dict[str, str]:
    """The Exercise 1 solution cell with ``body`` as the function's body."""
    header = (
        "def fill_drain_makespan_impl(\n"
        "    num_stages: int, num_microbatches: int, forward_time: float, backward_time: float\n"
        ") -> float:\n"
        '    """Makespan (s) of a balanced fill-drain (GPipe) pipeline without latency."""\n'
    )
    return _function("makespan_impl_answer", header, body)


def _bubbles(idle: str, overhead: str, prelude: str = "") -> dict[str, str]:
    """The Exercise 2 solution cell: the profiled step's idle fraction and overhead."""
    return {
        "two_bubbles_answer": (
            f"{prelude}profiled_idle_fraction = {idle}\nprofiled_overhead = {overhead}\n"
        )
    }


def _fewest(body: str, prelude: str = "") -> dict[str, str]:
    """The Exercise 3 solution cell with ``body`` as min_microbatches' body."""
    header = (
        f"{prelude}def min_microbatches(num_stages: int, max_idle_percent: int) -> int:\n"
        '    """Smallest m with (p - 1)/(m + p - 1) < max_idle_percent / 100."""\n'
        "    p, k = num_stages, max_idle_percent\n"
    )
    return _function("min_microbatches_answer", header, body)


def _hops(body: str) -> dict[str, str]:
    """The Exercise 4 solution cell with ``body`` after p, m and the zero-latency compute time."""
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


STEP, IDEAL = "42.3e-3", "(12 * (0.8e-3 + 1.6e-3))"

MUTANTS = [
    # Exercise 1: implement the closed-form makespan.
    Mutant(
        name="no_pipelining",
        why="p·m·(t_f + t_b): every stage's work one after another",
        cells=_makespan_impl(
            "    return num_stages * num_microbatches * (forward_time + backward_time)"
        ),
        grades=("makespan_impl_tests",),
    ),
    Mutant(
        name="one_slot_too_many",
        why="(m + p)(t_f + t_b): an off-by-one in the stages",
        cells=_makespan_impl(
            "    return (num_microbatches + num_stages) * (forward_time + backward_time)"
        ),
        grades=("makespan_impl_tests",),
    ),
    Mutant(
        name="bubble_counted_twice",
        why="(m + 2(p - 1))(t_f + t_b): p - 1 slots for the fill and p - 1 more for the drain",
        cells=_makespan_impl(
            "    return (num_microbatches + 2 * (num_stages - 1)) * (forward_time + backward_time)"
        ),
        grades=("makespan_impl_tests",),
    ),
    Mutant(
        name="ideal_compute_only",
        why="m(t_f + t_b): the busy time of one rank, without fill and drain",
        cells=_makespan_impl("    return num_microbatches * (forward_time + backward_time)"),
        grades=("makespan_impl_tests",),
    ),
    Mutant(
        name="fill_for_forwards_only",
        why="(m + p - 1)·t_f + m·t_b: forgets that the backward pass fills and drains too",
        cells=_makespan_impl(
            "    return (num_microbatches + num_stages - 1) * forward_time"
            " + num_microbatches * backward_time"
        ),
        grades=("makespan_impl_tests",),
    ),
    Mutant(
        name="forgets_backward",
        why="(m + p - 1)·t_f: the backward's t_b left out",
        cells=_makespan_impl("    return (num_microbatches + num_stages - 1) * forward_time"),
        grades=("makespan_impl_tests",),
    ),
    Mutant(
        name="delegates_to_closed_form",
        why="calls course_lib's fill_drain_makespan instead of writing the formula",
        cells=_makespan_impl(
            "    from course_lib.pipeline import fill_drain_makespan\n\n"
            "    return fill_drain_makespan(\n"
            "        num_stages, num_microbatches, forward_time, backward_time\n"
            "    )"
        ),
        grades=("makespan_impl_tests",),
    ),
    Mutant(
        name="delegates_to_simulator",
        why="simulates a GPipe schedule instead of writing the formula",
        cells=_makespan_impl(
            "    schedule = gpipe(num_stages, num_microbatches)\n"
            "    return simulate(schedule, forward_time, backward_time).makespan"
        ),
        grades=("makespan_impl_tests",),
    ),
    Mutant(
        name="delegates_via_formulas_module",
        why="rebuilds the makespan from course_lib.pipeline.formulas' overhead: t_id·(1 + overhead)",
        cells=_makespan_impl(
            "    from course_lib.pipeline import formulas\n\n"
            "    ideal = num_microbatches * (forward_time + backward_time)\n"
            "    return ideal * (1 + formulas.fill_drain_overhead(num_stages, num_microbatches))"
        ),
        grades=("makespan_impl_tests",),
    ),
    # Exercise 2: the two bubbles of a profiled step (p = 6, m = 12, 42.3 ms).
    Mutant(
        name="swapped_definitions",
        why="idle fraction and overhead swapped",
        cells=_bubbles(f"({STEP} - {IDEAL}) / {IDEAL}", f"({STEP} - {IDEAL}) / {STEP}"),
        grades=("idle_fraction_tests", "overhead_tests"),
    ),
    Mutant(
        name="percentages",
        why="percentages instead of fractions",
        cells=_bubbles(f"100 * ({STEP} - {IDEAL}) / {STEP}", f"100 * ({STEP} - {IDEAL}) / {IDEAL}"),
        grades=("idle_fraction_tests", "overhead_tests"),
    ),
    Mutant(
        name="closed_form_helpers",
        why="one-line calls to course_lib.pipeline.formulas: the zero-latency formulas, not the profile",
        cells=_bubbles(
            "formulas.fill_drain_idle_fraction(6, 12)",
            "formulas.fill_drain_overhead(6, 12)",
            prelude="from course_lib.pipeline import formulas\n\n",
        ),
        grades=("idle_fraction_tests", "overhead_tests"),
    ),
    Mutant(
        name="simulated_without_latency",
        why="one-line simulate(gpipe(6, 12), ...) of the balanced stages: misses the profiled 1.5 ms",
        cells=_bubbles(
            "run.idle_fraction",
            "run.overhead",
            prelude="run = simulate(gpipe(6, 12), 0.8e-3, 1.6e-3)\n",
        ),
        grades=("idle_fraction_tests", "overhead_tests"),
    ),
    Mutant(
        name="formula_bubble_over_profiled_step",
        why="t_pb = (p - 1)(t_f + t_b) from the formula, divided by the profiled step and by t_id",
        cells=_bubbles(f"5 * 2.4e-3 / {STEP}", f"5 * 2.4e-3 / {IDEAL}"),
        grades=("idle_fraction_tests", "overhead_tests"),
    ),
    Mutant(
        name="forgets_backward_in_ideal",
        why="ideal compute m·t_f: the backward's t_b left out",
        cells=_bubbles(f"1 - 12 * 0.8e-3 / {STEP}", f"{STEP} / (12 * 0.8e-3) - 1"),
        grades=("idle_fraction_tests", "overhead_tests"),
    ),
    Mutant(
        name="ratio_not_overhead",
        why="the overhead as step / ideal compute, without the - 1",
        cells=_bubbles(f"({STEP} - {IDEAL}) / {STEP}", f"{STEP} / {IDEAL}"),
        grades=("overhead_tests",),
    ),
    Mutant(
        name="both_overhead",
        why="the overhead given for both",
        cells=_bubbles(f"({STEP} - {IDEAL}) / {IDEAL}", f"({STEP} - {IDEAL}) / {IDEAL}"),
        grades=("idle_fraction_tests",),
    ),
    Mutant(
        name="both_idle",
        why="the elapsed idle fraction given for both",
        cells=_bubbles(f"({STEP} - {IDEAL}) / {STEP}", f"({STEP} - {IDEAL}) / {STEP}"),
        grades=("overhead_tests",),
    ),
    # Exercise 3: the smallest m with idle < k %.
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
        name="float_boundary",
        why="1 - m/(m + p - 1) < k/100 in floats: 1 - 63/70 = 0.09999999999999998 < 0.1",
        cells=_fewest(
            "    m = 1\n    while not 1 - m / (m + p - 1) < k / 100:\n        m += 1\n    return m"
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
    # Exercise 4: makespan with a latency per hop.
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
        name="forgets_backward_with_hops",
        why="(m + p - 1)·t_f + 2Σδ: the backward's t_b left out",
        cells=_hops("    return (m + p - 1) * forward_time + 2 * sum(hop_latencies)"),
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
        name="simulates_the_hops",
        why="simulate(gpipe(p, m), ..., p2p_latency=hop_latencies) instead of the formula",
        cells=_hops(
            "    run = simulate(gpipe(p, m), forward_time, backward_time, p2p_latency=hop_latencies)\n"
            "    return run.makespan"
        ),
        grades=("latency_tests",),
    ),
    # Exercise 5: which definition a quoted 37.5 % uses at p = 4, m = 5.
    Mutant(
        name="says_overhead",
        why="remembers 37.5 % as section 3's overhead (m = 8), not this pipeline's (m = 5)",
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
