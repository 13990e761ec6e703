"""Plausible wrong answers to pipe08_imbalance's exercises; each must lose points when graded.

``RIGHT_ANSWERS`` are answers a learner could give that are right by another route (numpy, an
"ends when it starts" walk, exact fractions); each must keep full marks on the grade cells it
names.
"""

from __future__ import annotations

from tests.mutants import Mutant

RIGHT_SAFETY = {"A": "safe", "B": "unsafe", "C": "unsafe", "D": "unsafe", "E": "safe"}


def _step(body: str, prelude: str = "") -> dict[str, str]:
    """The Exercise 1 solution cell with ``body`` after f, b, m, p and the one-microbatch work."""
    return {
        "gpipe_step_answer": (
            f"{prelude}def gpipe_step(forward_cost, backward_cost, num_microbatches):\n"
            "    f, b, m = list(forward_cost), list(backward_cost), num_microbatches\n"
            "    p, work = len(f), sum(f) + sum(b)\n"
            f"{body}\n"
        )
    }


def _walk(choose: str = "max(before, key=lambda u: rows[u].end)", score: str = "dur",
          deps: bool = True, previous: bool = True, result: str = "int(np.argmax(on_path))",
          next_backward: bool = True, previous_row: bool = False) -> str:  # fmt: skip
    """A walk that builds its own predecessor table, its parts swappable: ``choose`` picks the
    predecessor from ``before``, ``score`` is what an action adds to its stage, ``deps`` /
    ``previous`` say which predecessors count, ``next_backward`` whether B(s, j) waits for
    B(s + 1, j), ``previous_row`` takes the DataFrame's previous row for the rank's previous
    action, ``result`` turns ``on_path`` into the answer."""
    previous_rule = (
        "    prev = {i: i - 1 for i in range(1, len(rows))}\n"
        if previous_row
        else "    prev, last = {}, {}\n"
        "    for i in sorted(range(len(rows)), key=lambda i: rows[i].start):\n"
        "        if rows[i].rank in last:\n"
        "            prev[i] = last[rows[i].rank]\n"
        "        last[rows[i].rank] = i\n"
    )
    return (
        "def bottleneck_from_trace(events):\n"
        "    rows = list(events[['rank', 'kind', 'stage', 'microbatch', 'start', 'end']]"
        ".itertuples(index=False))\n"
        "    where = {(r.kind, r.stage, r.microbatch): i for i, r in enumerate(rows)}\n"
        "    num_stages = max(r.stage for r in rows) + 1\n"
        f"{previous_rule}"
        "    on_path = [0.0] * num_stages\n"
        "    i = max(range(len(rows)), key=lambda i: rows[i].end)\n"
        "    while i is not None:\n"
        "        kind, s, j = rows[i].kind, rows[i].stage, rows[i].microbatch\n"
        "        dur = rows[i].end - rows[i].start\n"
        f"        on_path[s] += {score}\n"
        f"        before = [prev[i]] if {previous} and i in prev else []\n"
        f"        if {deps} and kind == 'F' and s > 0:\n"
        "            before.append(where[('F', s - 1, j)])\n"
        f"        if {deps} and kind == 'B':\n"
        "            before.append(where[('F', s, j)])\n"
        f"            if {next_backward} and s < num_stages - 1:\n"
        "                before.append(where[('B', s + 1, j)])\n"
        f"        i = {choose} if before else None\n"
        f"    return {result}\n"
    )


def _trace(code: str) -> dict[str, str]:
    return {"bottleneck_answer": code}


def _helper_walk(choose: str = "max(waits_for[i], key=lambda u: events.at[u, 'end'])",
                 score: str = "events.at[i, 'end'] - events.at[i, 'start']",
                 first: str = "events['end'].idxmax()") -> str:  # fmt: skip
    """The reference walk over the setup's ``predecessors`` table, its parts swappable."""
    return (
        "def bottleneck_from_trace(events):\n"
        "    waits_for = predecessors(events)\n"
        "    on_path = {}\n"
        f"    i = {first}\n"
        "    while True:\n"
        "        s = int(events.at[i, 'stage'])\n"
        f"        on_path[s] = on_path.get(s, 0.0) + {score}\n"
        "        if not waits_for[i]:\n"
        "            break\n"
        f"        i = {choose}\n"
        "    return max(on_path, key=on_path.get)\n"
    )


def _gain(expression: str, prelude: str = "") -> dict[str, str]:
    """The Exercise 3 answer cell: before/after costs (layer from stage 1 to 2), then ``expression``."""
    return {
        "gain_answer": (
            f"{prelude}"
            "_f0, _b0 = ex3_forward, ex3_backward\n"
            "_mv = np.array([0.0, -1.0, 1.0, 0.0])\n"
            "_f1, _b1 = _f0 + _mv * layer_forward, _b0 + _mv * layer_backward\n"
            "_m = ex3_microbatches\n"
            "_one = lambda f, b: simulate(one_f_one_b(4, _m), f, b).makespan\n"
            f"gain_one_layer = {expression}\n"
        )
    }


def _even(body: str, prelude: str = "") -> dict[str, str]:
    """The Exercise 4 solution cell with ``body`` after the gain."""
    return {
        "break_even_answer": (
            f"{prelude}def break_even(num_params, link_bandwidth, pause, step_before, step_after):\n"
            "    n, beta, gain = num_params, link_bandwidth, step_before - step_after\n"
            f"{body}\n"
        )
    }


def _safety(**changes: str) -> dict[str, str]:
    return {"safety_answer": f"move_safe = { ({**RIGHT_SAFETY, **changes})!r}\n"}


MUTANTS = [
    # Exercise 1: GPipe's step with unequal stages.
    Mutant(
        "slowest_stage_shortcut",
        "sum + (m - 1) x the slowest stage (the lesson's trap)",
        _step("    return work + (m - 1) * max(x + y for x, y in zip(f, b))"),
        ("gpipe_step_tests",),
    ),
    Mutant(
        "average_stage",
        "(m + p - 1) x the average stage cost",
        _step("    return (m + p - 1) * work / p"),
        ("gpipe_step_tests",),
    ),
    Mutant(
        "balanced_formula_with_slowest",
        "(m + p - 1) x the slowest stage's f + b",
        _step("    return (m + p - 1) * max(x + y for x, y in zip(f, b))"),
        ("gpipe_step_tests",),
    ),
    Mutant(
        "balanced_formula_with_both_maxima",
        "(m + p - 1)(max f + max b)",
        _step("    return (m + p - 1) * (max(f) + max(b))"),
        ("gpipe_step_tests",),
    ),
    Mutant(
        "m_extra_microbatches",
        "m instead of m - 1 extra cells",
        _step("    return work + m * (max(f) + max(b))"),
        ("gpipe_step_tests",),
    ),
    Mutant(
        "no_pipelining",
        "m x the sum of all stages",
        _step("    return m * work"),
        ("gpipe_step_tests",),
    ),
    Mutant(
        "forwards_only_extra",
        "the m - 1 extra cells of the forward phase only",
        _step("    return work + (m - 1) * max(f)"),
        ("gpipe_step_tests",),
    ),
    Mutant(
        "lower_bound",
        "the 1F1B lower bound instead of GPipe's step",
        _step(
            "    t = [x + y for x, y in zip(f, b)]\n"
            "    return max(sum(t[:s]) + m * t[s] for s in range(p))"
        ),
        ("gpipe_step_tests",),
    ),
    Mutant(
        "delegates_to_gpipe_makespan",
        "calls course_lib's closed form",
        _step(
            "    return imbalance.gpipe_makespan(f, b, m)",
            prelude="from course_lib.pipeline import imbalance\n\n\n",
        ),
        ("gpipe_step_tests",),
    ),
    Mutant(
        "delegates_to_simulate",
        "simulates GPipe with course_lib",
        _step("    return simulate(gpipe(p, m), f, b).makespan"),
        ("gpipe_step_tests",),
    ),
    # Exercise 2: the bottleneck stage of a trace.
    Mutant(
        "busiest_stage",
        "the stage with the most busy time",
        _trace(
            "def bottleneck_from_trace(events):\n"
            "    busy = (events['end'] - events['start']).groupby(events['stage']).sum()\n"
            "    return int(busy.idxmax())\n"
        ),
        ("bottleneck_tests",),
    ),
    Mutant(
        "slowest_backward_stage",
        "the stage whose backwards take longest",
        _trace(
            "def bottleneck_from_trace(events):\n"
            "    b = events[events['kind'] == 'B']\n"
            "    return int((b['end'] - b['start']).groupby(b['stage']).mean().idxmax())\n"
        ),
        ("bottleneck_tests",),
    ),
    Mutant(
        "slowest_forward_stage",
        "the stage whose forwards take longest",
        _trace(
            "def bottleneck_from_trace(events):\n"
            "    f = events[events['kind'] == 'F']\n"
            "    return int((f['end'] - f['start']).groupby(f['stage']).mean().idxmax())\n"
        ),
        ("bottleneck_tests",),
    ),
    Mutant(
        "last_action_stage",
        "the stage of the action that ends last",
        _trace(
            "def bottleneck_from_trace(events):\n"
            "    return int(events.loc[events['end'].idxmax(), 'stage'])\n"
        ),
        ("bottleneck_tests",),
    ),
    Mutant(
        "rank_order_only",
        "walks back through the rank's previous actions only",
        _trace(_walk(deps=False)),
        ("bottleneck_tests",),
    ),
    Mutant(
        "dependencies_only",
        "walks back through data dependencies only, ignoring the rank's own order",
        _trace(_walk(previous=False)),
        ("bottleneck_tests",),
    ),
    Mutant(
        "earliest_predecessor",
        "steps to the predecessor that ends first",
        _trace(_walk(choose="min(before, key=lambda u: rows[u].end)")),
        ("bottleneck_tests",),
    ),
    Mutant(
        "counts_actions",
        "counts actions on the path instead of their time",
        _trace(_walk(score="1")),
        ("bottleneck_tests",),
    ),
    Mutant(
        "previous_dataframe_row",
        "takes the trace's previous row, not the rank's previous action",
        _trace(_walk(previous_row=True)),
        ("bottleneck_tests",),
    ),
    Mutant(
        "forgot_next_stage_backward",
        "B(s, j) waits only for F(s, j): the B(s + 1, j) dependency left out",
        _trace(_walk(next_backward=False)),
        ("bottleneck_tests",),
    ),
    Mutant(
        "first_listed_predecessor",
        "with the setup's predecessors: steps to the first candidate, not the one ending last",
        _trace(_helper_walk(choose="waits_for[i][0]")),
        ("bottleneck_tests",),
    ),
    Mutant(
        "last_listed_predecessor",
        "with the setup's predecessors: steps to the last candidate (a dependency)",
        _trace(_helper_walk(choose="waits_for[i][-1]")),
        ("bottleneck_tests",),
    ),
    Mutant(
        "helper_earliest_predecessor",
        "with the setup's predecessors: steps to the one that ends first",
        _trace(_helper_walk(choose="min(waits_for[i], key=lambda u: events.at[u, 'end'])")),
        ("bottleneck_tests",),
    ),
    Mutant(
        "helper_counts_actions",
        "with the setup's predecessors: counts the path's actions per stage, not their time",
        _trace(_helper_walk(score="1")),
        ("bottleneck_tests",),
    ),
    Mutant(
        "backward_only_on_path",
        "with the setup's predecessors: counts only the backwards' time on the path",
        _trace(
            _helper_walk(
                score="(events.at[i, 'end'] - events.at[i, 'start']) "
                "* (events.at[i, 'kind'] == 'B')"
            )
        ),
        ("bottleneck_tests",),
    ),
    Mutant(
        "returns_zero",
        "always stage 0 (the stage of the action that ends last)",
        _trace("def bottleneck_from_trace(events):\n    return 0\n"),
        ("bottleneck_tests",),
    ),
    Mutant(
        "longest_span",
        "the stage whose first start to last end spans longest",
        _trace(
            "def bottleneck_from_trace(events):\n"
            "    g = events.groupby('stage')\n"
            "    return int((g['end'].max() - g['start'].min()).idxmax())\n"
        ),
        ("bottleneck_tests",),
    ),
    Mutant(
        "one_based_stage",
        "returns the stage numbered from 1",
        _trace(_walk(result="int(np.argmax(on_path)) + 1")),
        ("bottleneck_tests",),
    ),
    Mutant(
        "delegates_to_bottleneck_stage",
        "builds a Timeline from the trace and calls course_lib's bottleneck_stage",
        _trace(
            "from course_lib.pipeline import Timeline\n"
            "from course_lib.pipeline.imbalance import bottleneck_stage as _bs\n\n\n"
            "def bottleneck_from_trace(events):\n"
            "    p = int(events['stage'].max()) + 1\n"
            "    m = int(events['microbatch'].max()) + 1\n"
            "    ev = events.sort_values(['rank', 'start']).reset_index(drop=True)\n"
            "    orders = [[(k, s, j) for k, s, j in zip(g['kind'], g['stage'], g['microbatch'])]\n"
            "              for _, g in ev.groupby('rank')]\n"
            "    from course_lib.pipeline import Action, Schedule\n"
            "    schedule = Schedule(p, m, p, tuple(tuple(Action(*a) for a in o) for o in orders))\n"
            "    return _bs(Timeline(schedule, ev))\n"
        ),
        ("bottleneck_tests",),
    ),
    Mutant(
        "networkx_longest_path",
        "networkx's dag_longest_path over the action graph (disabled in the grade cell)",
        _trace(
            "import networkx as nx\n\n\n"
            "def bottleneck_from_trace(events):\n"
            "    ev = events.reset_index(drop=True)\n"
            "    g = nx.DiGraph()\n"
            "    key = {(k, s, j): i for i, (k, s, j) in enumerate(zip(ev['kind'], ev['stage'], "
            "ev['microbatch']))}\n"
            "    p = int(ev['stage'].max()) + 1\n"
            "    for i, r in ev.iterrows():\n"
            "        g.add_edge(('in', i), ('out', i), weight=r['end'] - r['start'])\n"
            "        deps = []\n"
            "        if r['kind'] == 'F' and r['stage'] > 0:\n"
            "            deps.append(key[('F', r['stage'] - 1, r['microbatch'])])\n"
            "        if r['kind'] == 'B':\n"
            "            deps.append(key[('F', r['stage'], r['microbatch'])])\n"
            "            if r['stage'] < p - 1:\n"
            "                deps.append(key[('B', r['stage'] + 1, r['microbatch'])])\n"
            "        for d in deps:\n"
            "            g.add_edge(('out', d), ('in', i), weight=0.0)\n"
            "    for _, grp in ev.sort_values('start').groupby('rank'):\n"
            "        ids = list(grp.index)\n"
            "        for a, b in zip(ids[:-1], ids[1:]):\n"
            "            g.add_edge(('out', a), ('in', b), weight=0.0)\n"
            "    path = nx.dag_longest_path(g)\n"
            "    t = [0.0] * p\n"
            "    for node in path:\n"
            "        if node[0] == 'in':\n"
            "            r = ev.loc[node[1]]\n"
            "            t[r['stage']] += r['end'] - r['start']\n"
            "    return int(np.argmax(t))\n"
        ),
        ("bottleneck_tests",),
    ),
    # Exercise 3: gain from moving one layer under 1F1B.
    Mutant(
        "gpipe_formula_gain",
        "GPipe's exact formula before and after",
        _gain(
            "gpipe_makespan(_f0, _b0, _m) - gpipe_makespan(_f1, _b1, _m)",
        ),
        ("gain_tests",),
    ),
    Mutant(
        "slowest_stage_gain",
        "the slowest-stage shortcut before and after",
        _gain("slowest_stage_makespan(_f0, _b0, _m) - slowest_stage_makespan(_f1, _b1, _m)"),
        ("gain_tests",),
    ),
    Mutant(
        "lower_bound_gain",
        "the lower bound before and after",
        _gain("makespan_lower_bound(_f0, _b0, _m) - makespan_lower_bound(_f1, _b1, _m)"),
        ("gain_tests",),
    ),
    Mutant(
        "average_gain",
        "the average-stage estimate before and after (zero)",
        _gain("float((_m + 3) * (np.mean(_f0 + _b0) - np.mean(_f1 + _b1)))"),
        ("gain_tests",),
    ),
    Mutant(
        "after_minus_before",
        "the sign reversed",
        _gain("_one(_f1, _b1) - _one(_f0, _b0)"),
        ("gain_tests",),
    ),
    Mutant(
        "forward_only_moved",
        "only the layer's forward cost moved",
        _gain("_one(_f0, _b0) - _one(_f1, _b0)"),
        ("gain_tests",),
    ),
    Mutant(
        "moved_to_stage_0",
        "the layer moved to stage 0",
        _gain(
            "_one(_f0, _b0) - _one(_f0 + _mv0 * layer_forward, _b0 + _mv0 * layer_backward)",
            prelude="_mv0 = np.array([1.0, -1.0, 0.0, 0.0])\n",
        ),
        ("gain_tests",),
    ),
    Mutant(
        "removed_not_added",
        "the layer taken off stage 1 but not added to stage 2",
        _gain(
            "_one(_f0, _b0) - _one(_f0 + _off * layer_forward, _b0 + _off * layer_backward)",
            prelude="_off = np.array([0.0, -1.0, 0.0, 0.0])\n",
        ),  # fmt: skip
        ("gain_tests",),
    ),
    Mutant(
        "milliseconds",
        "the gain in milliseconds",
        _gain("(_one(_f0, _b0) - _one(_f1, _b1)) * 1e3"),
        ("gain_tests",),
    ),
    Mutant(
        "step_after",
        "the step after the move, not the gain",
        _gain("_one(_f1, _b1)"),
        ("gain_tests",),
    ),
    # Exercise 4: break-even steps.
    Mutant(
        "weights_only",
        "2 bytes per parameter",
        _even("    return math.ceil((2 * n / beta + pause) / gain)"),
        ("break_even_tests",),
    ),
    Mutant(
        "weights_and_gradients",
        "4 bytes per parameter",
        _even("    return math.ceil((4 * n / beta + pause) / gain)"),
        ("break_even_tests",),
    ),
    Mutant(
        "optimizer_state_only",
        "12 bytes per parameter (a lean move), not section 3's 16",
        _even("    return math.ceil((12 * n / beta + pause) / gain)"),
        ("break_even_tests",),
    ),
    Mutant(
        "no_pause",
        "the pause left out",
        _even("    return math.ceil(16 * n / beta / gain)"),
        ("break_even_tests",),
    ),
    Mutant(
        "bits",
        "the link's bandwidth read as bits/s",
        _even("    return math.ceil((16 * 8 * n / beta + pause) / gain)"),
        ("break_even_tests",),
    ),
    Mutant(
        "floor",
        "rounded down",
        _even("    return math.floor((16 * n / beta + pause) / gain)"),
        ("break_even_tests",),
    ),
    Mutant(
        "rounded",
        "rounded to the nearest step",
        _even("    return round((16 * n / beta + pause) / gain)"),
        ("break_even_tests",),
    ),
    Mutant(
        "floor_plus_one",
        "floor + 1, one too many at a whole number",
        _even("    return math.floor((16 * n / beta + pause) / gain) + 1"),
        ("break_even_tests",),
    ),
    Mutant(
        "divides_by_new_step",
        "the cost divided by the step after, not by the gain",
        _even("    return math.ceil((16 * n / beta + pause) / step_after)"),
        ("break_even_tests",),
    ),
    Mutant(
        "returns_float",
        "the ratio without rounding, a float",
        _even("    return (16 * n / beta + pause) / gain"),
        ("break_even_tests",),
    ),
    Mutant(
        "delegates_to_break_even_steps",
        "calls course_lib's break_even_steps",
        _even(
            "    return imbalance.break_even_steps(16 * n / beta + pause, step_before, step_after)",
            prelude="from course_lib.pipeline import imbalance\n\n\n",
        ),
        ("break_even_tests",),
    ),
    # Exercise 5: when a repartition is safe.
    Mutant(
        "idle_rank_is_safe",
        "an idle rank taken for an empty one",
        _safety(B="safe"),
        ("safety_tests",),
    ),  # fmt: skip
    Mutant(
        "finished_stage_is_safe",
        "only the receiving stage checked: stage 3 is done, but stage 2 sends the layer",
        _safety(C="safe"),
        ("safety_tests",),
    ),  # fmt: skip
    Mutant(
        "pipedream_update_is_safe",
        "a finished update taken for a flush",
        _safety(D="safe"),
        ("safety_tests",),
    ),  # fmt: skip
    Mutant(
        "between_steps_unsafe",
        "GPipe between steps judged unsafe",
        _safety(A="unsafe"),
        ("safety_tests",),
    ),  # fmt: skip
    Mutant(
        "all_safe",
        "every moment judged safe",
        _safety(A="safe", B="safe", C="safe", D="safe", E="safe"),
        ("safety_tests",),
    ),  # fmt: skip
    Mutant(
        "all_unsafe",
        "every moment judged unsafe",
        _safety(A="unsafe", E="unsafe"),
        ("safety_tests",),
    ),  # fmt: skip
]

RIGHT_ANSWERS = [
    Mutant(
        "numpy_step",
        "the formula with numpy, returning numpy.float64",
        {
            "gpipe_step_answer": (
                "def gpipe_step(forward_cost, backward_cost, num_microbatches):\n"
                "    f, b = np.asarray(forward_cost), np.asarray(backward_cost)\n"
                "    return (f + b).sum() + (num_microbatches - 1) * (f.max() + b.max())\n"
            )
        },
        ("gpipe_step_tests",),
    ),
    Mutant(
        "own_predecessor_table",
        "the walk with its own predecessor table instead of the setup's predecessors",
        _trace(_walk()),
        ("bottleneck_tests",),
    ),
    Mutant(
        "longest_path_dynamic_programming",
        "longest path by a forward pass in start order, then backtracking (no walk from the end)",
        _trace(
            "def bottleneck_from_trace(events):\n"
            "    ev = events.reset_index(drop=True)\n"
            "    preds = predecessors(ev)\n"
            "    dist, back = {}, {}\n"
            "    for i in ev.sort_values('start').index:\n"
            "        best = max(preds[i], key=lambda u: dist[u], default=None)\n"
            "        before = dist[best] if best is not None else 0.0\n"
            "        dist[i], back[i] = before + ev.at[i, 'end'] - ev.at[i, 'start'], best\n"
            "    i, on_path = max(dist, key=dist.get), [0.0] * (int(ev['stage'].max()) + 1)\n"
            "    while i is not None:\n"
            "        on_path[int(ev.at[i, 'stage'])] += ev.at[i, 'end'] - ev.at[i, 'start']\n"
            "        i = back[i]\n"
            "    return int(np.argmax(on_path))\n"
        ),
        ("bottleneck_tests",),
    ),
    Mutant(
        "walk_by_matching_start",
        "the walk stepping to a predecessor whose end equals the action's start",
        _trace(
            _walk(
                choose="next((u for u in before if abs(rows[u].end - rows[i].start) < 1e-12), "
                "max(before, key=lambda u: rows[u].end))"
            )
        ),
        ("bottleneck_tests",),
    ),
    Mutant(
        "gain_with_lists",
        "the same simulation with the costs as lists",
        _gain("_one(list(_f0), list(_b0)) - _one(list(_f1), list(_b1))"),
        ("gain_tests",),
    ),
    Mutant(
        "break_even_by_loop",
        "counts steps until the saved time covers the cost",
        _even(
            "    cost, n_steps = 16 * n / beta + pause, 0\n"
            "    while n_steps * gain < cost - 1e-12:\n"
            "        n_steps += 1\n"
            "    return n_steps"
        ),
        ("break_even_tests",),
    ),
    Mutant(
        "safety_from_two_groups",
        "the same verdicts built from two groups",
        {
            "safety_answer": "move_safe = dict.fromkeys('AE', 'safe') | dict.fromkeys('BCD', 'unsafe')\n"
        },
        ("safety_tests",),
    ),
]
