"""Plausible wrong answers to cost01_critical_path, each of which must lose points."""

from __future__ import annotations

from tests.mutants import Mutant

_EXACT = "step_time_ex = G.step_time(G.step_graph(EX_DURATIONS, EX_DEPS, EX_LANES))"

_GREEDY = '''
def longest_path(durations, deps):
    """Greedy: start at the heaviest source, always step to the heaviest successor."""
    successors = {op: [] for op in durations}
    has_pred = set()
    for u, v in deps:
        successors[u].append(v)
        has_pred.add(v)
    op = max((o for o in durations if o not in has_pred), key=durations.get)
    path = [op]
    while successors[op]:
        op = max(successors[op], key=durations.get)
        path.append(op)
    return sum(durations[o] for o in path), path
'''

_NO_LAST_DURATION = '''
def longest_path(durations, deps):
    """Right path, but the length is the last op's start, not its end."""
    import graphlib

    preds = {op: set() for op in durations}
    for u, v in deps:
        preds[v].add(u)
    start, end, best = {}, {}, {}
    for op in graphlib.TopologicalSorter(preds).static_order():
        start[op] = max((end[u] for u in preds[op]), default=0.0)
        best[op] = max(preds[op], key=lambda u: end[u]) if preds[op] else None
        end[op] = start[op] + durations[op]
    sinks = [op for op in durations if all(op not in preds[w] for w in durations)]
    last = max(sinks, key=lambda op: end[op])
    path = [last]
    while best[path[-1]] is not None:
        path.append(best[path[-1]])
    return start[last], path[::-1]
'''

_SUM_ALL = '''
def longest_path(durations, deps):
    """Adds every duration, as if the ops ran one after another."""
    import graphlib

    preds = {op: set() for op in durations}
    for u, v in deps:
        preds[v].add(u)
    return sum(durations.values()), list(graphlib.TopologicalSorter(preds).static_order())
'''

MUTANTS = [
    # Exercise 1: step time
    Mutant(
        name="step_time_sum_of_durations",
        why="adds all op durations, ignoring that lanes run in parallel",
        cells={"step_time_answer": "step_time_ex = sum(EX_DURATIONS.values())"},
        grades=("step_time_tests",),
    ),
    Mutant(
        name="step_time_busiest_lane",
        why="takes the busiest lane's total, ignoring waits for other lanes",
        cells={
            "step_time_answer": "step_time_ex = max("
            "sum(EX_DURATIONS[op] for op in ops) for ops in EX_ORDER.values())"
        },
        grades=("step_time_tests",),
    ),
    Mutant(
        name="step_time_in_ms",
        why="answers in milliseconds instead of seconds",
        cells={"step_time_answer": _EXACT + " / ms"},
        grades=("step_time_tests",),
    ),
    # Exercise 2: longest path
    Mutant(
        name="longest_path_greedy",
        why="walks from the heaviest source to the heaviest successor instead of searching",
        cells={"longest_path_answer": _GREEDY},
        grades=("longest_path_tests",),
    ),
    Mutant(
        name="longest_path_without_last_duration",
        why="reports the start of the last op instead of its end",
        cells={"longest_path_answer": _NO_LAST_DURATION},
        grades=("longest_path_tests",),
    ),
    Mutant(
        name="longest_path_sum_of_durations",
        why="adds all durations",
        cells={"longest_path_answer": _SUM_ALL},
        grades=("longest_path_tests",),
    ),
    Mutant(
        name="longest_path_delegates",
        why="calls course_lib.graph.critical_path, which the grade cell forbids",
        cells={
            "longest_path_answer": "def longest_path(durations, deps):\n"
            "    cp = G.critical_path(G.step_graph(durations, deps))\n"
            "    return cp.length, list(cp.ops)\n"
        },
        grades=("longest_path_tests",),
    ),
    # Exercise 3: which ops, 2x faster, shorten the step
    Mutant(
        name="faster_ops_zero_slack",
        why="takes every zero-slack op, including the tied optimizers",
        cells={
            "faster_ops_answer": "faster_ops = {op for op, s in G.slack(ex_graph).items() if s == 0}"
        },
        grades=("faster_ops_tests",),
    ),
    Mutant(
        name="faster_ops_top_by_duration",
        why="takes the five longest ops, the profiler table's top",
        cells={
            "faster_ops_answer": "faster_ops = set(sorted(EX_DURATIONS, key=EX_DURATIONS.get, "
            "reverse=True)[:5])"
        },
        grades=("faster_ops_tests",),
    ),
    # Exercise 4: gain of a 2x faster bwd1_r1
    Mutant(
        name="gain_half_duration",
        why="assumes bwd1_r1 stays critical: saves half its duration",
        cells={"gain_answer": "gain_bwd1_r1 = EX_DURATIONS['bwd1_r1'] / 2"},
        grades=("gain_tests",),
    ),
    Mutant(
        name="gain_gap_to_rank0",
        why="stops at rank 0's backward end, missing that allreduce_2 takes over first",
        cells={"gain_answer": "gain_bwd1_r1 = 1.5 * ms"},
        grades=("gain_tests",),
    ),
    # Exercise 5: useful reduction of load_r1
    Mutant(
        name="useful_cut_full_duration",
        why="assumes the whole loader time can be saved",
        cells={"useful_cut_answer": "useful_cut_load_r1 = EX_DURATIONS['load_r1']"},
        grades=("useful_cut_tests",),
    ),
    Mutant(
        name="useful_cut_loader_difference",
        why="compares the two loaders only, ignoring rank 0's host sync",
        cells={
            "useful_cut_answer": "useful_cut_load_r1 = EX_DURATIONS['load_r1'] - "
            "EX_DURATIONS['load_r0']"
        },
        grades=("useful_cut_tests",),
    ),
    Mutant(
        name="useful_cut_smallest_slack",
        why="takes the smallest non-zero slack in the step (allreduce_2's), which itself "
        "depends on load_r1",
        cells={
            "useful_cut_answer": "useful_cut_load_r1 = min("
            "s for s in G.slack(ex_graph).values() if s > 0)"
        },
        grades=("useful_cut_tests",),
    ),
]
