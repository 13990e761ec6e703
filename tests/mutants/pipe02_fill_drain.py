"""Plausible wrong answers to pipe02_fill_drain's exercises; each must lose points when graded."""

from __future__ import annotations

from tests.mutants import Mutant


def _makespan_impl(body: str) -> dict[str, str]:
    """The Exercise 1 solution cell with ``body`` as the function's body."""
    return {
        "makespan_impl_answer": (
            "def fill_drain_makespan_impl(\n"
            "    num_stages: int, num_microbatches: int, forward_time: float, backward_time: float\n"
            ") -> float:\n"
            '    """Makespan (s) of a balanced fill-drain (GPipe) pipeline without latency."""\n'
            f"{body}\n"
        )
    }


def _bubbles(idle: str, overhead: str) -> dict[str, str]:
    return {
        "two_bubbles_answer": (f"idle_fraction_p6_m12 = {idle}\noverhead_p6_m12 = {overhead}\n")
    }


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
        why="(m + p)(t_f + t_b): an off-by-one in the fill",
        cells=_makespan_impl(
            "    return (num_microbatches + num_stages) * (forward_time + backward_time)"
        ),
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
            "    from course_lib.pipeline import gpipe, simulate\n\n"
            "    schedule = gpipe(num_stages, num_microbatches)\n"
            "    return simulate(schedule, forward_time, backward_time).makespan"
        ),
        grades=("makespan_impl_tests",),
    ),
    Mutant(
        name="delegates_via_overhead",
        why="rebuilds the makespan from course_lib's overhead: ideal compute × (1 + overhead)",
        cells=_makespan_impl(
            "    from course_lib.pipeline.formulas import fill_drain_overhead as overhead\n\n"
            "    ideal = num_microbatches * (forward_time + backward_time)\n"
            "    return ideal * (1 + overhead(num_stages, num_microbatches))"
        ),
        grades=("makespan_impl_tests",),
    ),
    # Exercise 2: the two bubbles of p = 6, m = 12.
    Mutant(
        name="swapped_definitions",
        why="idle fraction and overhead swapped",
        cells=_bubbles("5 / 12", "5 / 17"),
        grades=("idle_fraction_tests", "overhead_tests"),
    ),
    Mutant(
        name="percentages",
        why="percentages instead of fractions",
        cells=_bubbles("100 * 5 / 17", "100 * 5 / 12"),
        grades=("idle_fraction_tests", "overhead_tests"),
    ),
    Mutant(
        name="both_overhead",
        why="the overhead (p - 1)/m given for both",
        cells=_bubbles("5 / 12", "5 / 12"),
        grades=("idle_fraction_tests",),
    ),
    Mutant(
        name="both_idle",
        why="the elapsed idle fraction given for both",
        cells=_bubbles("5 / 17", "5 / 17"),
        grades=("overhead_tests",),
    ),
    # Exercise 3: the smallest m with idle < 10 % at p = 8.
    Mutant(
        name="less_or_equal",
        why="idle <= 10 % instead of < 10 % (m = 63 gives exactly 10 %)",
        cells={"min_microbatches_answer": "min_microbatches_p8 = 63\n"},
        grades=("min_microbatches_tests",),
    ),
    Mutant(
        name="float_boundary",
        why="a float comparison on the simulator's idle fraction: 0.09999999999999987 < 0.1 at m = 63",
        cells={
            "min_microbatches_answer": (
                "from course_lib.pipeline import gpipe, simulate\n\n"
                "min_microbatches_p8 = next(\n"
                "    k for k in itertools.count(1)\n"
                "    if simulate(gpipe(8, k), 1e-3, 2e-3).idle_fraction < 0.1\n"
                ")\n"
            )
        },
        grades=("min_microbatches_tests",),
    ),
    Mutant(
        name="overhead_definition",
        why="solves (p - 1)/m < 10 %: the overhead, not the idle fraction",
        cells={"min_microbatches_answer": "min_microbatches_p8 = 71\n"},
        grades=("min_microbatches_tests",),
    ),
    Mutant(
        name="rule_of_thumb",
        why="GPipe's m >= 4p rule of thumb",
        cells={"min_microbatches_answer": "min_microbatches_p8 = 32\n"},
        grades=("min_microbatches_tests",),
    ),
    Mutant(
        name="float_answer",
        why="the right number as a float",
        cells={"min_microbatches_answer": "min_microbatches_p8 = 64.0\n"},
        grades=("min_microbatches_tests",),
    ),
    # Exercise 4: makespan with a per-hop latency.
    Mutant(
        name="latency_one_direction",
        why="(p - 1)·δ: latency in the fill only",
        cells={
            "latency_answer": (
                "makespan_with_latency = (32 + 8 - 1) * (0.6e-3 + 1.2e-3) + (8 - 1) * 50e-6\n"
            )
        },
        grades=("latency_tests",),
    ),
    Mutant(
        name="milliseconds",
        why="the right makespan in ms",
        cells={"latency_answer": "makespan_with_latency = 70.9\n"},
        grades=("latency_tests",),
    ),
    Mutant(
        name="latency_per_microbatch",
        why="2δ added to every slot, as if latency never overlapped with compute",
        cells={
            "latency_answer": (
                "makespan_with_latency = (32 + 8 - 1) * (0.6e-3 + 1.2e-3 + 2 * 50e-6)\n"
            )
        },
        grades=("latency_tests",),
    ),
    Mutant(
        name="p_hops",
        why="2p·δ: counts p hops between p stages",
        cells={
            "latency_answer": (
                "makespan_with_latency = (32 + 8 - 1) * (0.6e-3 + 1.2e-3) + 2 * 8 * 50e-6\n"
            )
        },
        grades=("latency_tests",),
    ),
    # Exercise 5: which definition a quoted 37.5 % uses.
    Mutant(
        name="says_idle",
        why="takes 37.5 % for the elapsed idle fraction",
        cells={"bubble_choice_answer": 'bubble_definition = "idle"\n'},
        grades=("bubble_choice_tests",),
    ),
    Mutant(
        name="says_neither",
        why="does not recognise (p - 1)/m = 3/8",
        cells={"bubble_choice_answer": 'bubble_definition = "neither"\n'},
        grades=("bubble_choice_tests",),
    ),
    Mutant(
        name="capitalised_option",
        why="an option spelled differently from the stated strings",
        cells={"bubble_choice_answer": 'bubble_definition = "Overhead"\n'},
        grades=("bubble_choice_tests",),
    ),
]
