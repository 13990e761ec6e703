"""Plausible wrong answers to cost01_critical_path, each of which must lose points.

``RIGHT_ANSWERS`` are answers a learner could give that are right by another route; each must keep
full marks on the grade cells it names (graded the same way as the mutants).
"""

from __future__ import annotations

from tests.mutants import Mutant

# --- Exercise 1: build the graph -------------------------------------------------------------

_CROSS_LANE = [
    ("load", "h2d"),
    ("h2d", "fwd"),
    ("fwd", "log"),
    ("log", "bwd_2"),
    ("bwd_2", "allreduce_2"),
    ("bwd_1", "allreduce_1"),
    ("allreduce_1", "opt"),
]


def _build(edges: str) -> dict[str, str]:
    return {"build_deps_answer": f"build_deps = {edges}\n"}


def _without(*missing: tuple[str, str], extra: list[tuple[str, str]] | None = None) -> str:
    kept = [e for e in _CROSS_LANE if e not in missing] + (extra or [])
    return f"stream_order_edges(BUILD_ORDER) + {kept!r}"


# --- Exercise 2: implement the longest path --------------------------------------------------


def _longest(body: str) -> dict[str, str]:
    return {"longest_path_answer": body}


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

# The Kahn pass of the solution, with one line changed (marked).
_KAHN = """
def longest_path(durations, deps):
    from collections import deque

    successors = {op: [] for op in durations}
    waiting = {op: 0 for op in durations}
    for u, v in deps:
        successors[u].append(v)
        waiting[v] += 1
    start = {op: 0.0 for op in durations}
    best_pred = {}
    end = {}
    ready = deque(op for op in durations if waiting[op] == 0)
    while ready:
        u = ready.popleft()
        end[u] = start[u] + durations[u]
        for v in successors[u]:
            if UPDATE:
                start[v] = end[u]
                best_pred[v] = u
            waiting[v] -= 1
            if waiting[v] == 0:
                ready.append(v)
    last = max(LAST_CANDIDATES, key=lambda op: end[op])
    path = [last]
    while path[-1] in best_pred:
        path.append(best_pred[path[-1]])
    return end[last], path[::-1]
"""
_RIGHT_UPDATE = "v not in best_pred or end[u] > start[v]"
_RIGHT_LAST = "(op for op in durations if not successors[op])"

_NX_WRAPPED = '''
def longest_path(durations, deps):
    """networkx's routine through its undecorated alias, on a graph with each op split in two."""
    import networkx as nx

    g = nx.DiGraph()
    for op, d in durations.items():
        g.add_edge((op, "start"), (op, "end"), weight=d)
    for u, v in deps:
        g.add_edge((u, "end"), (v, "start"), weight=0.0)
    nodes = nx.dag_longest_path.__wrapped__(g, weight="weight")
    path = [op for op, side in nodes if side == "start"]
    return sum(durations[op] for op in path), path
'''

_BELLMAN_FORD = '''
def longest_path(durations, deps):
    """Shortest path with negated durations (Bellman-Ford), from a virtual source to a virtual sink."""
    import networkx as nx

    g = nx.DiGraph()
    for op, d in durations.items():
        g.add_edge(("in", op), ("out", op), weight=-d)
        g.add_edge("SOURCE", ("in", op), weight=0.0)
        g.add_edge(("out", op), "SINK", weight=0.0)
    for u, v in deps:
        g.add_edge(("out", u), ("in", v), weight=0.0)
    nodes = nx.bellman_ford_path(g, "SOURCE", "SINK", weight="weight")
    path = [n[1] for n in nodes if isinstance(n, tuple) and n[0] == "in"]
    return sum(durations[op] for op in path), path
'''

# --- Exercise 3: which ops, 2x faster alone, shorten the step --------------------------------

_GAIN = "step_time(EX_GRAPH) - what_if(EX_GRAPH, {op: EX_DURATIONS[op] / 2})"

MUTANTS = [
    # Exercise 1: build the graph of a described step (graded on which op must precede which).
    Mutant(
        name="build_no_stream_order",
        why="only the cross-lane edges: forgets that a stream runs its ops one after another",
        cells=_build(repr(_CROSS_LANE)),
        grades=("build_deps_tests",),
    ),
    Mutant(
        name="build_host_sync_blocks_only_the_cpu",
        why="loss.item() waits for fwd, but the GPU does not wait for the CPU to launch bwd_2",
        cells=_build(_without(("log", "bwd_2"))),
        grades=("build_deps_tests",),
    ),
    Mutant(
        name="build_no_loss_item_wait",
        why="the host sync's first half missing: log does not wait for the forward pass",
        cells=_build(_without(("fwd", "log"))),
        grades=("build_deps_tests",),
    ),
    Mutant(
        name="build_optimizer_does_not_wait",
        why="opt runs after bwd_1 on its stream but does not wait for the all-reduce",
        cells=_build(_without(("allreduce_1", "opt"))),
        grades=("build_deps_tests",),
    ),
    Mutant(
        name="build_allreduce_after_whole_backward",
        why="both all-reduces wait for the whole backward pass: no bucketed overlap",
        cells=_build(_without(("bwd_2", "allreduce_2"), extra=[("bwd_1", "allreduce_2")])),
        grades=("build_deps_tests",),
    ),
    Mutant(
        name="build_independent_allreduces",
        why="the comm stream's stream order missing: the two all-reduces may run at once",
        cells=_build(
            "[e for e in stream_order_edges(BUILD_ORDER) if e != ('allreduce_2', 'allreduce_1')]"
            f" + {_CROSS_LANE!r}"
        ),
        grades=("build_deps_tests",),
    ),
    Mutant(
        name="build_chain_everything",
        why="every op after the one before it, as if nothing ran in parallel (sum of durations)",
        cells=_build("list(zip(list(BUILD_DURATIONS), list(BUILD_DURATIONS)[1:]))"),
        grades=("build_deps_tests",),
    ),
    Mutant(
        name="build_reversed_edges",
        why="edges drawn from consumer to producer",
        cells=_build(f"[(v, u) for u, v in {_without()}]"),
        grades=("build_deps_tests",),
    ),
    Mutant(
        name="build_stream_order_only",
        why="stream order alone, no data dependency or synchronisation",
        cells=_build("stream_order_edges(BUILD_ORDER)"),
        grades=("build_deps_tests",),
    ),
    # Exercise 2: longest path by topological order.
    Mutant(
        name="longest_path_greedy",
        why="walks from the heaviest source to the heaviest successor instead of searching",
        cells=_longest(_GREEDY),
        grades=("longest_path_tests",),
    ),
    Mutant(
        name="longest_path_without_last_duration",
        why="reports the start of the last op instead of its end",
        cells=_longest(_NO_LAST_DURATION),
        grades=("longest_path_tests",),
    ),
    Mutant(
        name="longest_path_sum_of_durations",
        why="adds all durations",
        cells=_longest(_SUM_ALL),
        grades=("longest_path_tests",),
    ),
    Mutant(
        name="longest_path_drops_a_zero_duration_first_op",
        why="updates a successor only when strictly later than 0: a zero-duration source is lost",
        cells=_longest(
            _KAHN.replace("UPDATE", "end[u] > start[v]").replace("LAST_CANDIDATES", _RIGHT_LAST)
        ),
        grades=("longest_path_tests",),
    ),
    Mutant(
        name="longest_path_ends_at_any_op",
        why="ends the path at the first op with the latest end, not at a sink: drops a "
        "zero-duration last op",
        cells=_longest(
            _KAHN.replace("UPDATE", _RIGHT_UPDATE).replace("LAST_CANDIDATES", "durations")
        ),
        grades=("longest_path_tests",),
    ),
    Mutant(
        name="longest_path_delegates",
        why="calls course_lib.graph.critical_path, which the grade cell forbids",
        cells=_longest(
            "def longest_path(durations, deps):\n"
            "    cp = critical_path(step_graph(durations, deps))\n"
            "    return cp.length, list(cp.ops)\n"
        ),
        grades=("longest_path_tests",),
    ),
    Mutant(
        name="longest_path_nx_wrapped_alias",
        why="networkx's dag_longest_path through its __wrapped__ alias on a node-split graph",
        cells=_longest(_NX_WRAPPED),
        grades=("longest_path_tests",),
    ),
    Mutant(
        name="longest_path_bellman_ford_negated",
        why="networkx's Bellman-Ford shortest path on negated durations",
        cells=_longest(_BELLMAN_FORD),
        grades=("longest_path_tests",),
    ),
    # Exercise 3: which ops, made 2x faster on their own, shorten the step.
    Mutant(
        name="faster_ops_zero_slack",
        why="takes every zero-slack op, including the tied optimizers",
        cells={
            "faster_ops_answer": "from course_lib.graph import slack\n"
            "faster_ops = {op for op, s in slack(EX_GRAPH).items() if s == 0}"
        },
        grades=("faster_ops_tests",),
    ),
    Mutant(
        name="faster_ops_critical_path",
        why="the ops of one critical path, which ends at a tied optimizer",
        cells={"faster_ops_answer": "faster_ops = set(critical_path(EX_GRAPH).ops)"},
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
    Mutant(
        name="faster_ops_full_gain_only",
        why="keeps only ops that save their whole half, dropping bwd1_r1 whose path shifts",
        cells={
            "faster_ops_answer": "faster_ops = {op for op in EX_DURATIONS "
            f"if abs(({_GAIN}) - EX_DURATIONS[op] / 2) < 1e-12}}"
        },
        grades=("faster_ops_tests",),
    ),
    Mutant(
        name="faster_ops_slow_rank",
        why="every op of the slower rank, rank 1",
        cells={
            "faster_ops_answer": "faster_ops = {op for op in EX_DURATIONS if op.endswith('_r1')}"
        },
        grades=("faster_ops_tests",),
    ),
    # Exercise 4: gain of a 2x faster bwd1_r1.
    Mutant(
        name="gain_half_duration",
        why="assumes bwd1_r1 stays critical: saves half its duration",
        cells={"gain_answer": "gain_bwd1_r1 = EX_DURATIONS['bwd1_r1'] / 2"},
        grades=("gain_tests",),
    ),
    Mutant(
        name="gain_gap_to_rank0",
        why="stops at rank 0's path, missing that allreduce_2 takes over first",
        cells={"gain_answer": "gain_bwd1_r1 = 3.5 * ms"},
        grades=("gain_tests",),
    ),
    Mutant(
        name="gain_none",
        why="no gain, as if bwd1_r1 had slack",
        cells={"gain_answer": "gain_bwd1_r1 = 0.0"},
        grades=("gain_tests",),
    ),
    Mutant(
        name="gain_in_ms",
        why="the right gain in milliseconds instead of seconds",
        cells={
            "gain_answer": "gain_bwd1_r1 = (step_time(EX_GRAPH) - what_if(EX_GRAPH, "
            "{'bwd1_r1': 2.5 * ms})) / ms"
        },
        grades=("gain_tests",),
    ),
    # Exercise 5: useful reduction of load_r1 (3.5 ms; halving saves only 3 ms).
    Mutant(
        name="useful_cut_full_duration",
        why="assumes the whole loader time can be saved",
        cells={"useful_cut_answer": "useful_cut_load_r1 = EX_DURATIONS['load_r1']"},
        grades=("useful_cut_tests",),
    ),
    Mutant(
        name="useful_cut_gain_from_halving",
        why="the gain from halving load_r1, which stops short of the kink",
        cells={
            "useful_cut_answer": "useful_cut_load_r1 = step_time(EX_GRAPH) - what_if("
            "EX_GRAPH, {'load_r1': EX_DURATIONS['load_r1'] / 2})"
        },
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
        name="useful_cut_kink_duration",
        why="the duration at the kink, d* = A - B, instead of the cut that reaches it",
        cells={
            "useful_cut_answer": "A, B = path_bounds(EX_GRAPH, 'load_r1')\n"
            "useful_cut_load_r1 = A - B"
        },
        grades=("useful_cut_tests",),
    ),
    Mutant(
        name="useful_cut_via_allreduce_2",
        why="the gap to rank 0's path through allreduce_2, not its longer path through allreduce_1",
        cells={"useful_cut_answer": "useful_cut_load_r1 = 4.5 * ms"},
        grades=("useful_cut_tests",),
    ),
    Mutant(
        name="useful_cut_smallest_slack",
        why="takes the smallest non-zero slack in the step (allreduce_2's), which itself "
        "depends on load_r1",
        cells={
            "useful_cut_answer": "from course_lib.graph import slack\n"
            "useful_cut_load_r1 = min(s for s in slack(EX_GRAPH).values() if s > 0)"
        },
        grades=("useful_cut_tests",),
    ),
    Mutant(
        name="useful_cut_in_ms",
        why="the right cut in milliseconds instead of seconds",
        cells={
            "useful_cut_answer": "useful_cut_load_r1 = (step_time(EX_GRAPH) - "
            "path_bounds(EX_GRAPH, 'load_r1')[0]) / ms"
        },
        grades=("useful_cut_tests",),
    ),
]

_DFS = '''
def longest_path(durations, deps):
    """Memoised depth-first search: the longest path starting at each op."""
    import sys

    sys.setrecursionlimit(10_000)
    succ = {op: [] for op in durations}
    preds = {op: 0 for op in durations}
    for u, v in deps:
        succ[u].append(v)
        preds[v] += 1
    memo = {}

    def best_from(op):
        if op not in memo:
            tails = [best_from(w) for w in succ[op]]
            length, path = max(tails, key=lambda t: t[0]) if tails else (0.0, [])
            memo[op] = (durations[op] + length, [op] + path)
        return memo[op]

    return max((best_from(op) for op in durations if preds[op] == 0), key=lambda t: t[0])
'''

_NX_TOPO = '''
def longest_path(durations, deps):
    """networkx's topological order (allowed), then the recurrence by hand."""
    import networkx as nx

    g = nx.DiGraph()
    g.add_nodes_from(durations)
    g.add_edges_from(deps)
    end, best = {}, {}
    for op in nx.topological_sort(g):
        preds = list(g.predecessors(op))
        best[op] = max(preds, key=end.get) if preds else None
        end[op] = (end[best[op]] if preds else 0.0) + durations[op]
    last = max((op for op in g if g.out_degree(op) == 0), key=end.get)
    path = [last]
    while best[path[-1]] is not None:
        path.append(best[path[-1]])
    return end[last], path[::-1]
'''

RIGHT_ANSWERS = [
    Mutant(
        name="build_with_implied_edges",
        why="the right edges plus redundant ones, some as lists, written out by hand",
        cells=_build(
            "[('load', 'log'), ['fwd', 'bwd_2'], ('bwd_2', 'bwd_1'), ('bwd_1', 'opt'),"
            " ('allreduce_2', 'allreduce_1'), ('allreduce_2', 'opt'), ('fwd', 'bwd_1'),"
            " ('log', 'bwd_1')]"
            f" + {_CROSS_LANE!r}"
        ),
        grades=("build_deps_tests",),
    ),
    Mutant(
        name="longest_path_memoised_dfs",
        why="a memoised depth-first search instead of Kahn's algorithm",
        cells=_longest(_DFS),
        grades=("longest_path_tests",),
    ),
    Mutant(
        name="longest_path_nx_topological_sort",
        why="networkx's topological_sort for the order, the recurrence by hand",
        cells=_longest(_NX_TOPO),
        grades=("longest_path_tests",),
    ),
    Mutant(
        name="faster_ops_by_slack_and_gain",
        why="critical ops (zero slack) whose halving changes the step, as a frozenset",
        cells={
            "faster_ops_answer": f"faster_ops = frozenset(op for op in EX_DURATIONS if {_GAIN} > 1e-9)"
        },
        grades=("faster_ops_tests",),
    ),
    Mutant(
        name="useful_cut_remove_the_op",
        why="T(d) - T(0): the gain from removing load_r1 entirely equals the useful cut",
        cells={
            "useful_cut_answer": "useful_cut_load_r1 = step_time(EX_GRAPH) - "
            "what_if(EX_GRAPH, {'load_r1': 0.0})"
        },
        grades=("useful_cut_tests",),
    ),
    Mutant(
        name="useful_cut_numpy_float",
        why="the right cut as a numpy float",
        cells={
            "useful_cut_answer": "useful_cut_load_r1 = np.float64(step_time(EX_GRAPH) - "
            "path_bounds(EX_GRAPH, 'load_r1')[0])"
        },
        grades=("useful_cut_tests",),
    ),
]
