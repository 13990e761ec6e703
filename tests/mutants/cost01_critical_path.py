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

_MIN_COST_FLOW = '''
def longest_path(durations, deps):
    """One unit of min-cost flow on negated integer durations: network simplex does the search."""
    import networkx as nx

    has_pred = {v for _, v in deps}
    has_succ = {u for u, _ in deps}
    g = nx.DiGraph()
    g.add_node("S", demand=-1)
    g.add_node("T", demand=1)
    for op, d in durations.items():
        g.add_edge(("i", op), ("o", op), weight=-round(d * 1e9), capacity=1)
        if op not in has_pred:
            g.add_edge("S", ("i", op), weight=0, capacity=1)
        if op not in has_succ:
            g.add_edge(("o", op), "T", weight=0, capacity=1)
    for u, v in deps:
        g.add_edge(("o", u), ("i", v), weight=0, capacity=1)
    flow = FLOW
    node, path = "S", []
    while node != "T":
        node = next(v for v, f in flow[node].items() if f > 0)
        if node != "T" and node[0] == "i":
            path.append(node[1])
    return sum(durations[o] for o in path), path
'''

_REWEIGHTED = '''
def longest_path(durations, deps):
    """Shortest path on weights made >= 0 with the topological index as a potential."""
    import networkx as nx

    g0 = nx.DiGraph()
    g0.add_nodes_from(durations)
    g0.add_edges_from(deps)
    idx = {op: i + 1 for i, op in enumerate(nx.topological_sort(g0))}
    n = len(durations) + 1
    c = max(durations.values()) + 1.0
    g = nx.DiGraph()
    for u, v in deps:
        g.add_edge(u, v, weight=c * (idx[v] - idx[u]) - durations[u])
    for op in durations:
        if g0.in_degree(op) == 0:
            g.add_edge("S", op, weight=c * idx[op])
        if g0.out_degree(op) == 0:
            g.add_edge(op, "T", weight=c * (n - idx[op]) - durations[op])
    nodes = SEARCH(g, "S", "T", weight="weight")
    path = nodes[1:-1]
    return sum(durations[o] for o in path), path
'''

# The lesson's scaffold (predecessors and a topological order), then a body with one mistake.
_SCAFFOLD = """
import graphlib


def longest_path(durations, deps):
    preds = {op: [] for op in durations}
    for u, v in deps:
        preds[v].append(u)
    topological = list(graphlib.TopologicalSorter(preds).static_order())
    end, best_pred = {}, {}
    for v in topological:
        best_pred[v] = max(preds[v], key=BEST_KEY, default=None)
        end[v] = (0.0 if best_pred[v] is None else end[best_pred[v]]) + durations[v]
    has_successor = {u for u, _ in deps}
    last = max((v for v in topological if v not in has_successor), key=end.get)
    path = [last]
    while best_pred[path[-1]] is not None:
        path.append(best_pred[path[-1]])
    return RETURN
"""


def _scaffold(best_key: str = "end.get", ret: str = "end[last], path[::-1]") -> str:
    return _SCAFFOLD.replace("BEST_KEY", best_key).replace("RETURN", ret)


_ONE_SOURCE = '''
def longest_path(durations, deps):
    """Depth-first search from the first op without a predecessor only."""
    succ = {op: [] for op in durations}
    has_pred = set()
    for u, v in deps:
        succ[u].append(v)
        has_pred.add(v)
    source = next(op for op in durations if op not in has_pred)
    memo = {}

    def best(op):
        if op not in memo:
            tails = [best(w) for w in succ[op]]
            length, path = max(tails, key=lambda t: t[0]) if tails else (0.0, [])
            memo[op] = (durations[op] + length, [op] + path)
        return memo[op]

    return best(source)
'''

_OPS_FROM_DEPS = '''
import graphlib


def longest_path(durations, deps):
    """Takes the ops from deps only: an op that appears in no pair is forgotten."""
    ops = {o for pair in deps for o in pair}
    preds = {op: set() for op in ops}
    for u, v in deps:
        preds[v].add(u)
    end, best = {}, {}
    for op in graphlib.TopologicalSorter(preds).static_order():
        best[op] = max(preds[op], key=end.get) if preds[op] else None
        end[op] = (end[best[op]] if preds[op] else 0.0) + durations[op]
    last = max(end, key=end.get)
    path = [last]
    while best[path[-1]] is not None:
        path.append(best[path[-1]])
    return end[last], path[::-1]
'''

# --- Exercise 3: the useful cut ----------------------------------------------------------------


def _cut(body: str, imports: str = "") -> dict[str, str]:
    """A useful_cut whose body (indented 4) computes `cut`; T and T0 name the step time now/at 0."""
    indented = "".join(f"    {line}\n" for line in body.strip().splitlines())
    return {
        "useful_cut_answer": f"{imports}\n\ndef useful_cut(durations, deps, op):\n"
        "    g = step_graph(durations, deps)\n"
        "    T = step_time(g)\n"
        "    d = durations[op]\n"
        f"{indented}"
        "    return cut\n"
    }


_SECOND_LONGEST = """
import networkx as nx

def second_longest(durations, deps):
    g = nx.DiGraph()
    g.add_nodes_from(durations)
    g.add_edges_from(deps)
    sources = [v for v in g if g.in_degree(v) == 0]
    sinks = [v for v in g if g.out_degree(v) == 0]
    lengths = {durations[s] for s in sources if s in sinks}
    for s in sources:
        for t in sinks:
            if s != t:
                lengths |= {sum(durations[o] for o in p) for p in nx.all_simple_paths(g, s, t)}
    ranked = sorted({round(x, 12) for x in lengths}, reverse=True)
    return ranked[1] if len(ranked) > 1 else ranked[0]
"""

_BOTH = ("longest_path_length_tests", "longest_path_path_tests")
_LENGTH = ("longest_path_length_tests",)
_PATH = ("longest_path_path_tests",)
_CUT = ("useful_cut_tests",)

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
        why="loss.item() waits for fwd, but the backward kernels need not wait for the CPU to "
        "issue them",
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
        name="build_sync_reversed",
        why="log before fwd: the host sync drawn the wrong way round",
        cells=_build(_without(("fwd", "log"), extra=[("log", "fwd")])),
        grades=("build_deps_tests",),
    ),
    Mutant(
        name="build_launch_edge_to_bwd_1",
        why="the CPU's launch edge drawn to the last backward kernel instead of the first",
        cells=_build(_without(("log", "bwd_2"), extra=[("log", "bwd_1")])),
        grades=("build_deps_tests",),
    ),
    Mutant(
        name="build_copy_does_not_wait_for_load",
        why="the copy is asynchronous, so it is taken to overlap the data loader",
        cells=_build(_without(("load", "h2d"))),
        grades=("build_deps_tests",),
    ),
    Mutant(
        name="build_forward_does_not_wait_for_copy",
        why="non_blocking=True read as 'the forward pass need not wait for the copy'",
        cells=_build(_without(("h2d", "fwd"))),
        grades=("build_deps_tests",),
    ),
    Mutant(
        name="build_optimizer_does_not_wait",
        why="opt runs after bwd_1 on its stream but does not wait for the all-reduce",
        cells=_build(_without(("allreduce_1", "opt"))),
        grades=("build_deps_tests",),
    ),
    Mutant(
        name="build_optimizer_waits_for_the_first_allreduce_only",
        why="opt waits for allreduce_2, the first all-reduce issued, not the last",
        cells=_build(_without(("allreduce_1", "opt"), extra=[("allreduce_2", "opt")])),
        grades=("build_deps_tests",),
    ),
    Mutant(
        name="build_allreduce_after_whole_backward",
        why="both all-reduces wait for the whole backward pass: no bucketed overlap",
        cells=_build(_without(("bwd_2", "allreduce_2"), extra=[("bwd_1", "allreduce_2")])),
        grades=("build_deps_tests",),
    ),
    Mutant(
        name="build_buckets_swapped",
        why="allreduce_k paired with the other bucket's backward kernel",
        cells=_build(
            _without(
                ("bwd_2", "allreduce_2"),
                ("bwd_1", "allreduce_1"),
                extra=[("bwd_2", "allreduce_1"), ("bwd_1", "allreduce_2")],
            )
        ),
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
    # Exercise 2: longest path by topological order (length and path graded apart).
    Mutant(
        name="longest_path_greedy",
        why="walks from the heaviest source to the heaviest successor instead of searching",
        cells=_longest(_GREEDY),
        grades=_BOTH,
    ),
    Mutant(
        name="longest_path_without_last_duration",
        why="reports the start of the last op instead of its end",
        cells=_longest(_NO_LAST_DURATION),
        grades=_LENGTH,
    ),
    Mutant(
        name="longest_path_sum_of_durations",
        why="adds all durations",
        cells=_longest(_SUM_ALL),
        grades=_BOTH,
    ),
    Mutant(
        name="longest_path_drops_a_zero_duration_first_op",
        why="updates a successor only when strictly later than 0: a zero-duration source is lost",
        cells=_longest(
            _KAHN.replace("UPDATE", "end[u] > start[v]").replace("LAST_CANDIDATES", _RIGHT_LAST)
        ),
        grades=_PATH,
    ),
    Mutant(
        name="longest_path_ends_at_any_op",
        why="ends the path at the first op with the latest end, not at a sink: drops a "
        "zero-duration last op",
        cells=_longest(
            _KAHN.replace("UPDATE", _RIGHT_UPDATE).replace("LAST_CANDIDATES", "durations")
        ),
        grades=_PATH,
    ),
    Mutant(
        name="longest_path_reversed",
        why="returns the path as walked back, last op first",
        cells=_longest(_scaffold(ret="end[last], path")),
        grades=_PATH,
    ),
    Mutant(
        name="longest_path_heaviest_predecessor",
        why="remembers the predecessor with the longest duration, not the one that ends last",
        cells=_longest(_scaffold(best_key="durations.get")),
        grades=_BOTH,
    ),
    Mutant(
        name="longest_path_first_source_only",
        why="searches from the first op without a predecessor only",
        cells=_longest(_ONE_SOURCE),
        grades=_BOTH,
    ),
    Mutant(
        name="longest_path_ops_from_deps_only",
        why="collects the ops from deps, so an op in no pair is forgotten",
        cells=_longest(_OPS_FROM_DEPS),
        grades=_BOTH,
    ),
    Mutant(
        name="longest_path_delegates",
        why="calls course_lib.graph.critical_path, which the grade cell forbids",
        cells=_longest(
            "def longest_path(durations, deps):\n"
            "    cp = critical_path(step_graph(durations, deps))\n"
            "    return cp.length, list(cp.ops)\n"
        ),
        grades=_BOTH,
    ),
    Mutant(
        name="longest_path_nx_wrapped_alias",
        why="networkx's dag_longest_path through its __wrapped__ alias on a node-split graph",
        cells=_longest(_NX_WRAPPED),
        grades=_BOTH,
    ),
    Mutant(
        name="longest_path_bellman_ford_negated",
        why="networkx's Bellman-Ford shortest path on negated durations",
        cells=_longest(_BELLMAN_FORD),
        grades=_BOTH,
    ),
    Mutant(
        name="longest_path_min_cost_flow",
        why="networkx's min-cost flow (network simplex) of one unit on negated durations",
        cells=_longest(_MIN_COST_FLOW.replace("FLOW", "nx.min_cost_flow(g)")),
        grades=_BOTH,
    ),
    Mutant(
        name="longest_path_capacity_scaling",
        why="networkx's capacity-scaling min-cost flow on negated durations",
        cells=_longest(_MIN_COST_FLOW.replace("FLOW", "nx.capacity_scaling(g)[1]")),
        grades=_BOTH,
    ),
    Mutant(
        name="longest_path_astar_reweighted",
        why="networkx's A* on weights made non-negative with a topological potential",
        cells=_longest(_REWEIGHTED.replace("SEARCH", "nx.astar_path")),
        grades=_BOTH,
    ),
    Mutant(
        name="longest_path_dijkstra_reweighted",
        why="networkx's Dijkstra on weights made non-negative with a topological potential",
        cells=_longest(_REWEIGHTED.replace("SEARCH", "nx.dijkstra_path")),
        grades=_BOTH,
    ),
    # Exercise 3: the useful cut, T(d) - T(0).
    Mutant(
        name="useful_cut_whole_duration",
        why="assumes the whole duration can be saved",
        cells=_cut("cut = d"),
        grades=_CUT,
    ),
    Mutant(
        name="useful_cut_gain_from_halving",
        why="the gain from halving the op, T(d) - T(d/2), which stops short of the kink or of d",
        cells=_cut("cut = T - step_time(step_graph({**durations, op: d / 2}, deps))"),
        grades=_CUT,
    ),
    Mutant(
        name="useful_cut_T_minus_A_unclipped",
        why="T - A without the bound at d: more than the op's duration when it pays all the way",
        cells=_cut("cut = T - path_bounds(g, op)[0]", "from course_lib.graph import path_bounds"),
        grades=_CUT,
    ),
    Mutant(
        name="useful_cut_without_the_op_unclipped",
        why="T minus the longest path of the graph with the op deleted, not bounded by d",
        cells=_cut(
            "rest = {o: x for o, x in durations.items() if o != op}\n"
            "kept = [(u, v) for u, v in deps if op not in (u, v)]\n"
            "cut = T - longest_path(rest, kept)[0]"
        ),
        grades=_CUT,
    ),
    Mutant(
        name="useful_cut_kink_duration",
        why="the duration at the kink, d* = A - B, instead of the cut that reaches it",
        cells=_cut(
            "A, B = path_bounds(g, op)\ncut = A - B", "from course_lib.graph import path_bounds"
        ),
        grades=_CUT,
    ),
    Mutant(
        name="useful_cut_kink_duration_clipped",
        why="the duration at the kink clipped to [0, d]: where the cut stops paying, not its size",
        cells=_cut(
            "A, B = path_bounds(g, op)\ncut = min(d, max(0.0, A - B))",
            "from course_lib.graph import path_bounds",
        ),
        grades=_CUT,
    ),
    Mutant(
        name="useful_cut_zero_slack_pays_all",
        why="a critical op (zero slack) pays all the way down: misses the kink and the tie",
        cells=_cut("cut = d if slack(g)[op] == 0 else 0.0", "from course_lib.graph import slack"),
        grades=_CUT,
    ),
    Mutant(
        name="useful_cut_smallest_slack",
        why="a critical op pays until the smallest positive slack in the step is used up",
        cells=_cut(
            "s = slack(g)\n"
            "others = [x for x in s.values() if x > 0]\n"
            "cut = min([d] + others) if s[op] == 0 else 0.0",
            "from course_lib.graph import slack",
        ),
        grades=_CUT,
    ),
    Mutant(
        name="useful_cut_second_longest_path",
        why="the gap to the second-longest path, which may run through the op too",
        cells=_cut(
            "s = slack(g)\ncut = min(d, T - second_longest(durations, deps)) if s[op] == 0 else 0.0",
            "from course_lib.graph import slack\n" + _SECOND_LONGEST,
        ),
        grades=_CUT,
    ),
    Mutant(
        name="useful_cut_in_ms",
        why="the right cut in milliseconds instead of seconds",
        cells=_cut("cut = (T - step_time(step_graph({**durations, op: 0.0}, deps))) / ms"),
        grades=_CUT,
    ),
    Mutant(
        name="useful_cut_delegates_useful_reduction",
        why="course_lib.graph.useful_reduction computes the answer in one call",
        cells=_cut(
            "cut = useful_reduction(g, op)", "from course_lib.graph import useful_reduction"
        ),
        grades=_CUT,
    ),
    Mutant(
        name="useful_cut_delegates_speedup_gain",
        why="course_lib.graph.speedup_gain with an infinite speed-up is T(d) - T(0) in one call",
        cells=_cut(
            "cut = speedup_gain(g, op, float('inf'))", "from course_lib.graph import speedup_gain"
        ),
        grades=_CUT,
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


_RELAX = '''
def longest_path(durations, deps):
    """No topological order: relax every edge |V| times (Bellman-Ford by hand, max not min)."""
    has_pred = {v for _, v in deps}
    end = {op: (durations[op] if op not in has_pred else float("-inf")) for op in durations}
    best = {op: None for op in durations}
    for _ in range(len(durations)):
        changed = False
        for u, v in deps:
            if end[u] + durations[v] > end[v]:
                end[v] = end[u] + durations[v]
                best[v] = u
                changed = True
        if not changed:
            break
    has_succ = {u for u, _ in deps}
    last = max((o for o in durations if o not in has_succ), key=end.get)
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
            " ('log', 'bwd_1'), ('load', 'fwd'), ('log', 'opt'), ('log', 'allreduce_2')]"
            f" + {_CROSS_LANE!r}"
        ),
        grades=("build_deps_tests",),
    ),
    Mutant(
        name="build_as_a_set",
        why="the right edges as a set of pairs",
        cells=_build(f"set({_without()})"),
        grades=("build_deps_tests",),
    ),
    Mutant(
        name="build_transitive_closure",
        why="every ordering written out (the transitive closure of the right graph), as a tuple",
        cells=_build(f"tuple(sorted(orderings(step_graph(BUILD_DURATIONS, {_without()}))))"),
        grades=("build_deps_tests",),
    ),
    Mutant(
        name="longest_path_memoised_dfs",
        why="a memoised depth-first search instead of a topological pass",
        cells=_longest(_DFS),
        grades=_BOTH,
    ),
    Mutant(
        name="longest_path_nx_topological_sort",
        why="networkx's topological_sort for the order, the recurrence by hand",
        cells=_longest(_NX_TOPO),
        grades=_BOTH,
    ),
    Mutant(
        name="longest_path_relaxation_by_hand",
        why="Bellman-Ford's relaxation written by hand, with max instead of min",
        cells=_longest(_RELAX),
        grades=_BOTH,
    ),
    Mutant(
        name="longest_path_numpy_length_tuple_path",
        why="the lesson's pass, returning a numpy float and a tuple",
        cells=_longest(_scaffold(ret="np.float64(end[last]), tuple(path[::-1])")),
        grades=_BOTH,
    ),
    Mutant(
        name="longest_path_list_return",
        why="the lesson's pass, returning [length, path] as a list",
        cells=_longest(_scaffold(ret="[end[last], path[::-1]]")),
        grades=_BOTH,
    ),
    Mutant(
        name="useful_cut_with_own_longest_path",
        why="T(d) - T(0) with the learner's longest_path of Exercise 2",
        cells={
            "useful_cut_answer": "def useful_cut(durations, deps, op):\n"
            "    return longest_path(durations, deps)[0] - longest_path("
            "{**durations, op: 0.0}, deps)[0]\n"
        },
        grades=_CUT,
    ),
    Mutant(
        name="useful_cut_bounds_clipped",
        why="min(d, B + d - A), at least 0, from path_bounds",
        cells=_cut(
            "A, B = path_bounds(g, op)\ncut = max(0.0, min(d, B + d - A))",
            "from course_lib.graph import path_bounds",
        ),
        grades=_CUT,
    ),
    Mutant(
        name="useful_cut_without_the_op_clipped",
        why="T minus the longest path with the op deleted, bounded by d and 0",
        cells=_cut(
            "rest = {o: x for o, x in durations.items() if o != op}\n"
            "kept = [(u, v) for u, v in deps if op not in (u, v)]\n"
            "cut = max(0.0, min(d, T - longest_path(rest, kept)[0]))"
        ),
        grades=_CUT,
    ),
    Mutant(
        name="useful_cut_what_if",
        why="T(d) - T(0) with what_if, imported by the learner",
        cells=_cut("cut = T - what_if(g, {op: 0.0})", "from course_lib.graph import what_if"),
        grades=_CUT,
    ),
    Mutant(
        name="useful_cut_grid_search",
        why="the largest of 1000 cuts in [0, d] that still saves one for one (within 10 us)",
        cells=_cut(
            "cut = 0.0\n"
            "for c in np.linspace(0.0, d, 1000):\n"
            "    saved = T - step_time(step_graph({**durations, op: d - c}, deps))\n"
            "    if abs(saved - c) < 1e-9:\n"
            "        cut = float(c)"
        ),
        grades=_CUT,
    ),
    Mutant(
        name="useful_cut_numpy_float",
        why="the right cut as a numpy float",
        cells=_cut("cut = np.float64(T - step_time(step_graph({**durations, op: 0.0}, deps)))"),
        grades=_CUT,
    ),
]
