"""Plausible wrong answers to pipe04_interleaved's exercises; each must lose points when graded.

``RIGHT_ANSWERS`` are answers a learner could give that are right by another route (a loop for a
vectorised form, numpy types, the simulator's overhead instead of its makespan); each must keep
full marks on the grade cells it names.
"""

from __future__ import annotations

from tests.mutants import Mutant


def _owner(body: str, prelude: str = "") -> dict[str, str]:
    """The Exercise 1 solution cell with ``body`` after L, p, v and the layers per chunk."""
    return {
        "layer_owner_answer": (
            f"{prelude}def layer_owner(num_layers, num_ranks, chunks_per_rank):\n"
            "    L, p, v = num_layers, num_ranks, chunks_per_rank\n"
            "    per_chunk = L // (v * p)\n"
            f"{body}\n"
        )
    }


def _overheads(body: str, prelude: str = "") -> dict[str, str]:
    """The Exercise 2 solution cell with ``body`` after p and m."""
    return {
        "overheads_answer": (
            f"{prelude}def interleaved_overheads(num_ranks, num_microbatches):\n"
            "    p, m = num_ranks, num_microbatches\n"
            f"{body}\n"
        )
    }


def _transfers(body: str, prelude: str = "") -> dict[str, str]:
    """The Exercise 3 solution cell with ``body`` after p, v, g and the number of nodes n."""
    return {
        "transfers_answer": (
            f"{prelude}def transfers_per_microbatch(num_ranks, chunks_per_rank, ranks_per_node):\n"
            "    p, v, g = num_ranks, chunks_per_rank, ranks_per_node\n"
            "    n = p // g\n"
            f"{body}\n"
        )
    }


def _best(body: str, prelude: str = "") -> dict[str, str]:
    """The Exercise 4 solution cell with ``body`` after the arguments' short names."""
    return {
        "best_chunks_answer": (
            f"{prelude}def best_chunks(num_ranks, num_microbatches, forward_time, backward_time,\n"
            "                p2p_latency, candidates):\n"
            "    p, m, t_f, t_b, delta = (num_ranks, num_microbatches, forward_time,\n"
            "                             backward_time, p2p_latency)\n"
            f"{body}\n"
        )
    }


def _accepts(body: str, prelude: str = "") -> dict[str, str]:
    """The Exercise 5 solution cell with ``body`` after p and m."""
    return {
        "pytorch_accepts_answer": (
            f"{prelude}def pytorch_accepts(num_ranks, num_microbatches):\n"
            "    p, m = num_ranks, num_microbatches\n"
            f"{body}\n"
        )
    }


# Exercise 4's candidates simulated with given per-chunk costs, then an argmin rule.
_SIMULATED = (
    "    steps = {{}}\n"
    "    for v in candidates:\n"
    "        run = simulate({schedule}, {t_f}, {t_b}, p2p_latency={latency})\n"
    "        steps[v] = run.makespan\n"
)
_SMALLEST_TIE = "    best = min(steps.values())\n    return min(v for v, t in steps.items() if t <= best + 1e-9)"


def _simulated(
    schedule: str = "interleaved_1f1b(p, m, v)",
    t_f: str = "t_f / v",
    t_b: str = "t_b / v",
    latency: str = "delta",
    pick: str = _SMALLEST_TIE,
) -> str:
    return _SIMULATED.format(schedule=schedule, t_f=t_f, t_b=t_b, latency=latency) + pick


TRANSFERS = ("rank_transfers_tests", "node_transfers_tests")

MUTANTS = [
    # Exercise 1: the rank of every layer.
    Mutant(
        name="blocked_placement",
        why="contiguous blocks of L/p layers per rank: the plain pipeline, no interleaving",
        cells=_owner("    return np.arange(L) // (L // p)"),
        grades=("layer_owner_tests",),
    ),
    Mutant(
        name="layer_round_robin",
        why="layer l on rank l mod p: chunks of one layer",
        cells=_owner("    return np.arange(L) % p"),
        grades=("layer_owner_tests",),
    ),
    Mutant(
        name="chunks_contiguous_per_rank",
        why="chunk k on rank k // v: a rank's v chunks side by side",
        cells=_owner("    return (np.arange(L) // per_chunk) // v"),
        grades=("layer_owner_tests",),
    ),
    Mutant(
        name="ranks_from_one",
        why="ranks counted from 1",
        cells=_owner("    return (np.arange(L) // per_chunk) % p + 1"),
        grades=("layer_owner_tests",),
    ),
    Mutant(
        name="local_chunk_index",
        why="the rank's local chunk index (stage // p) instead of the rank (stage % p)",
        cells=_owner("    return (np.arange(L) // per_chunk) // p"),
        grades=("layer_owner_tests",),
    ),
    Mutant(
        name="chunk_of_l_over_v_layers",
        why="chunks of L/v layers (v per model, not v per rank)",
        cells=_owner("    return (np.arange(L) // (L // v)) % p"),
        grades=("layer_owner_tests",),
    ),
    Mutant(
        name="owner_as_list",
        why="the right ranks as a list, not a numpy array",
        cells=_owner("    return [(layer // per_chunk) % p for layer in range(L)]"),
        grades=("layer_owner_tests",),
    ),
    Mutant(
        name="owner_delegates_to_layer_ranks",
        why="course_lib's layer_ranks (right value, delegated)",
        cells=_owner(
            "    return layer_ranks(L, p, v)",
            prelude="from course_lib.pipeline.interleaving import layer_ranks\n\n\n",
        ),
        grades=("layer_owner_tests",),
    ),
    Mutant(
        name="owner_delegates_to_stage_ranks",
        why="course_lib's stage_ranks repeated per chunk (right value, delegated)",
        cells=_owner(
            "    return np.repeat(stage_ranks(p, v), per_chunk)",
            prelude="from course_lib.pipeline.interleaving import stage_ranks\n\n\n",
        ),
        grades=("layer_owner_tests",),
    ),
    Mutant(
        name="chunk_mod_v",
        why="rank = chunk mod v instead of stage mod p",
        cells=_owner("    return (np.arange(L) // per_chunk) % v"),
        grades=("layer_owner_tests",),
    ),
    Mutant(
        name="ranks_reversed",
        why="stage k on rank p - 1 - k mod p: the ranks counted from the last",
        cells=_owner("    return p - 1 - (np.arange(L) // per_chunk) % p"),
        grades=("layer_owner_tests",),
    ),
    # Exercise 2: overheads at v = 1, 2, 4.
    Mutant(
        name="forgets_v",
        why="(p - 1)/m for every v: the chunks per rank left out",
        cells=_overheads("    return tuple((p - 1) / m for v in (1, 2, 4))"),
        grades=("overheads_tests",),
    ),
    Mutant(
        name="idle_fraction",
        why="the elapsed idle fraction (p - 1)/(v m + p - 1), not the overhead",
        cells=_overheads("    return tuple((p - 1) / (v * m + p - 1) for v in (1, 2, 4))"),
        grades=("overheads_tests",),
    ),
    Mutant(
        name="v_p_stages",
        why="(v p - 1)/m: a v·p-stage pipeline on v·p ranks",
        cells=_overheads("    return tuple((v * p - 1) / m for v in (1, 2, 4))"),
        grades=("overheads_tests",),
    ),
    Mutant(
        name="v_p_minus_one_chunk_slots",
        why="(v p - 1)/(v m): v·p - 1 fill slots of a chunk each",
        cells=_overheads("    return tuple((v * p - 1) / (v * m) for v in (1, 2, 4))"),
        grades=("overheads_tests",),
    ),
    Mutant(
        name="overhead_percentages",
        why="percentages instead of fractions",
        cells=_overheads("    return tuple(100 * (p - 1) / (v * m) for v in (1, 2, 4))"),
        grades=("overheads_tests",),
    ),
    Mutant(
        name="times_v",
        why="v (p - 1)/m: multiplied by v instead of divided",
        cells=_overheads("    return tuple(v * (p - 1) / m for v in (1, 2, 4))"),
        grades=("overheads_tests",),
    ),
    Mutant(
        name="reversed_order",
        why="the overheads for v = 4, 2, 1",
        cells=_overheads("    return tuple((p - 1) / (v * m) for v in (4, 2, 1))"),
        grades=("overheads_tests",),
    ),
    Mutant(
        name="p_m_swapped",
        why="(m - 1)/(v p): the ranks and microbatches swapped",
        cells=_overheads("    return tuple((m - 1) / (v * p) for v in (1, 2, 4))"),
        grades=("overheads_tests",),
    ),
    Mutant(
        name="integer_division",
        why="(p - 1) // (v m): integer division, 0 whenever p - 1 < v m",
        cells=_overheads("    return tuple((p - 1) // (v * m) for v in (1, 2, 4))"),
        grades=("overheads_tests",),
    ),
    Mutant(
        name="overheads_delegate",
        why="course_lib's interleaved_overhead (right value, delegated)",
        cells=_overheads(
            "    return tuple(interleaved_overhead(p, m, v) for v in (1, 2, 4))",
            prelude="from course_lib.pipeline import interleaved_overhead\n\n\n",
        ),
        grades=("overheads_tests",),
    ),
    Mutant(
        name="overheads_simulated",
        why="simulate(interleaved_1f1b(p, m, v), ...).overhead (right value, delegated)",
        cells=_overheads(
            "    return tuple(simulate(interleaved_1f1b(p, m, v), 1.0 / v, 2.0 / v).overhead\n"
            "                 for v in (1, 2, 4))"
        ),
        grades=("overheads_tests",),
    ),
    Mutant(
        name="overheads_via_gpipe_makespan",
        why="v = 1 from pipe08's gpipe_makespan (step / ideal - 1), then divided by v",
        cells=_overheads(
            "    base = gpipe_makespan([1.0] * p, [0.0] * p, m) / m - 1\n"
            "    return tuple(base / v for v in (1, 2, 4))",
            prelude="from course_lib.pipeline.imbalance import gpipe_makespan\n\n\n",
        ),
        grades=("overheads_tests",),
    ),
    Mutant(
        name="overheads_via_accumulation_step_times",
        why="v = 1 from pipe06's step_times {m: (m + p - 1) t}, then divided by v",
        cells=_overheads(
            "    base = step_times(m, p, {1: 1.0})[m] / m - 1\n"
            "    return tuple(base / v for v in (1, 2, 4))",
            prelude="from course_lib.pipeline.accumulation import step_times\n\n\n",
        ),
        grades=("overheads_tests",),
    ),
    Mutant(
        name="overheads_via_zero_bubble_bubble",
        why="v = 1 from zero_bubble_h1_bubble at t_w = 0 ((p - 1)(t_f + t_b) idle), then / v",
        cells=_overheads(
            "    base = zero_bubble_h1_bubble(p, m, 1.0, 0.0, 0.0) / m\n"
            "    return tuple(base / v for v in (1, 2, 4))",
            prelude="from course_lib.pipeline import zero_bubble_h1_bubble\n\n\n",
        ),
        grades=("overheads_tests",),
    ),
    # Exercise 3: hand-offs between ranks and between nodes.
    Mutant(
        name="forgets_wrap_arounds",
        why="v (p - 1) rank and v (n - 1) node hand-offs: the wraps from rank p - 1 to 0 missing",
        cells=_transfers("    return v * (p - 1), v * (n - 1)"),
        grades=TRANSFERS,
    ),
    Mutant(
        name="counts_chunks",
        why="v p hand-offs between ranks: the chunks, not the boundaries between them",
        cells=_transfers("    return v * p, v * (n - 1) + (v - 1) * (n > 1)"),
        grades=("rank_transfers_tests",),
    ),
    Mutant(
        name="no_interleaving",
        why="the plain pipeline's p - 1 and n - 1",
        cells=_transfers("    return p - 1, n - 1"),
        grades=TRANSFERS,
    ),
    Mutant(
        name="both_directions",
        why="forward and backward counted: twice the answer",
        cells=_transfers(
            "    right = (v * p - 1 if p > 1 else 0), v * (n - 1) + (v - 1) * (n > 1)\n"
            "    return 2 * right[0], 2 * right[1]"
        ),
        grades=TRANSFERS,
    ),
    Mutant(
        name="single_rank_still_hands_off",
        why="v p - 1 hand-offs between ranks even on one rank (chunk boundaries, not ranks)",
        cells=_transfers("    return v * p - 1, v * (n - 1) + (v - 1) * (n > 1)"),
        grades=("rank_transfers_tests",),
    ),
    Mutant(
        name="wraps_on_one_node",
        why="the v - 1 wrap-arounds counted between nodes even on a single node",
        cells=_transfers("    return (v * p - 1 if p > 1 else 0), v * (n - 1) + (v - 1)"),
        grades=("node_transfers_tests",),
    ),
    Mutant(
        name="v_wraps",
        why="v wrap-arounds between nodes instead of v - 1",
        cells=_transfers("    return (v * p - 1 if p > 1 else 0), v * (n - 1) + v * (n > 1)"),
        grades=("node_transfers_tests",),
    ),
    Mutant(
        name="node_is_rank_mod_g",
        why="rank r on node r % ranks_per_node instead of r // ranks_per_node",
        cells=_transfers(
            "    ranks = np.arange(v * p) % p\n"
            "    a, b = ranks[:-1], ranks[1:]\n"
            "    return int(np.sum(a != b)), int(np.sum(a % g != b % g))"
        ),
        grades=("node_transfers_tests",),
    ),
    Mutant(
        name="ranks_per_node_as_nodes",
        why="ranks_per_node read as the number of nodes: n = g",
        cells=_transfers("    return (v * p - 1 if p > 1 else 0), v * (g - 1) + (v - 1) * (g > 1)"),
        grades=("node_transfers_tests",),
    ),
    Mutant(
        name="transfers_delegate",
        why="course_lib's crossings_per_microbatch (right value, delegated)",
        cells=_transfers(
            "    c = crossings_per_microbatch(p, v, g)\n    return c.between_ranks, c.between_nodes",
            prelude="from course_lib.pipeline.interleaving import crossings_per_microbatch\n\n\n",
        ),
        grades=TRANSFERS,
    ),
    Mutant(
        name="transfers_via_boundary_crossings",
        why="course_lib's boundary_crossings for the ranks (right value, delegated)",
        cells=_transfers(
            "    return boundary_crossings(p, v), v * (n - 1) + (v - 1) * (n > 1)",
            prelude="from course_lib.pipeline import boundary_crossings\n\n\n",
        ),
        grades=("rank_transfers_tests",),
    ),
    # Exercise 4: the best v under a latency.
    Mutant(
        name="ignores_latency",
        why="simulated without the latency: always the largest v",
        cells=_best(_simulated(latency="0.0")),
        grades=("best_chunks_tests",),
    ),
    Mutant(
        name="largest_candidate",
        why="the largest v: the bubble only shrinks",
        cells=_best("    return max(candidates)"),
        grades=("best_chunks_tests",),
    ),
    Mutant(
        name="full_cost_per_chunk",
        why="t_f and t_b per chunk instead of t_f/v and t_b/v: v times the compute",
        cells=_best(_simulated(t_f="t_f", t_b="t_b")),
        grades=("best_chunks_tests",),
    ),
    Mutant(
        name="latency_formula_everywhere",
        why="section 4's formula for every candidate, also where the latency no longer hides",
        cells=_best(
            "    steps = {v: m * (t_f + t_b) + (p - 1) * (t_f + t_b) / v\n"
            "             + 2 * (v * p - 1) * (p > 1) * delta for v in candidates}\n"
            + _SMALLEST_TIE
        ),
        grades=("best_chunks_tests",),
    ),
    Mutant(
        name="fill_drain_latency",
        why="pipe02's 2(p - 1)δ for every v: the extra crossings cost nothing",
        cells=_best(
            "    steps = {v: m * (t_f + t_b) + (p - 1) * (t_f + t_b) / v + 2 * (p - 1) * delta\n"
            "             for v in candidates}\n" + _SMALLEST_TIE
        ),
        grades=("best_chunks_tests",),
    ),
    Mutant(
        name="deep_plain_pipeline",
        why="a plain 1F1B pipeline of v·p stages on v·p ranks instead of v chunks per rank",
        cells=_best(
            _simulated(schedule="one_f_one_b(v * p, m)"),
            prelude="from course_lib.pipeline import one_f_one_b\n\n\n",
        ),
        grades=("best_chunks_tests",),
    ),
    Mutant(
        name="largest_tie",
        why="the largest v among equal steps",
        cells=_best(
            _simulated(
                pick="    best = min(steps.values())\n"
                "    return max(v for v, t in steps.items() if t <= best + 1e-9)"
            )
        ),
        grades=("best_chunks_tests",),
    ),
    Mutant(
        name="returns_the_step",
        why="the shortest step time (s) instead of the v that gives it",
        cells=_best(_simulated(pick="    return min(steps.values())")),
        grades=("best_chunks_tests",),
    ),
    Mutant(
        name="nearest_v_star",
        why="the candidate nearest v* = sqrt((p - 1)(t_f + t_b)/(2 p delta)), the formula's optimum",
        cells=_best(
            "    if p == 1 or delta == 0:\n"
            "        return min(candidates) if delta else max(candidates)\n"
            "    v_star = ((p - 1) * (t_f + t_b) / (2 * p * delta)) ** 0.5\n"
            "    return min(sorted(candidates), key=lambda v: abs(v - v_star))"
        ),
        grades=("best_chunks_tests",),
    ),
    Mutant(
        name="latency_per_chunk",
        why="the latency divided by v like the compute: delta / v per hop",
        cells=_best(_simulated(latency="delta / v")),
        grades=("best_chunks_tests",),
    ),
    Mutant(
        name="no_tie_tolerance",
        why="the first float minimum, ignoring the 1e-9 s tie rule",
        cells=_best(_simulated(pick="    return min(candidates, key=steps.get)")),
        grades=("best_chunks_tests",),
    ),
    Mutant(
        name="best_delegates",
        why="course_lib's best_chunks_per_rank (right value, delegated)",
        cells=_best(
            "    return best_chunks_per_rank(p, m, t_f, t_b, delta, candidates)",
            prelude="from course_lib.pipeline.interleaving import best_chunks_per_rank\n\n\n",
        ),
        grades=("best_chunks_tests",),
    ),
    Mutant(
        name="best_via_step_times",
        why="course_lib's step_times, then the argmin (delegated)",
        cells=_best(
            "    steps = step_times(p, m, t_f, t_b, delta, candidates)\n" + _SMALLEST_TIE,
            prelude="from course_lib.pipeline.interleaving import step_times\n\n\n",
        ),
        grades=("best_chunks_tests",),
    ),
    # Exercise 5: PyTorch 2.13's acceptance rule.
    Mutant(
        name="megatron_rule",
        why="m % p == 0, Megatron-LM's rule, which PyTorch relaxes",
        cells=_accepts("    return m % p == 0"),
        grades=("pytorch_accepts_tests",),
    ),
    Mutant(
        name="at_least_p",
        why="m >= p",
        cells=_accepts("    return m >= p"),
        grades=("pytorch_accepts_tests",),
    ),
    Mutant(
        name="rounds_without_max",
        why="rounds = m // p without max(1, ...): divides by zero for m < p",
        cells=_accepts("    return m % (m // p) == 0"),
        grades=("pytorch_accepts_tests",),
    ),
    Mutant(
        name="ceil_rounds",
        why="rounds = ceil(m / p)",
        cells=_accepts("    return m % -(-m // p) == 0"),
        grades=("pytorch_accepts_tests",),
    ),
    Mutant(
        name="megatron_or_fewer",
        why="m % p == 0 or m < p: Megatron's rule plus the m < p examples",
        cells=_accepts("    return m % p == 0 or m < p"),
        grades=("pytorch_accepts_tests",),
    ),
    Mutant(
        name="always_true",
        why="PyTorch accepts any m",
        cells=_accepts("    return True"),
        grades=("pytorch_accepts_tests",),
    ),
    Mutant(
        name="group_at_least_p",
        why="PyTorch's rounds plus a group of at least p (Megatron-Core's range [p, m])",
        cells=_accepts("    r = max(1, m // p)\n    return m % r == 0 and m // r >= p"),
        grades=("pytorch_accepts_tests",),
    ),
    Mutant(
        name="accepts_via_generator_catch_all",
        why="catches every exception from course_lib's interleaved_1f1b, its DelegationError too",
        cells=_accepts(
            "    try:\n"
            "        interleaved_1f1b(p, m, 2)\n"
            "    except Exception:\n"
            "        return False\n"
            "    return True"
        ),
        grades=("pytorch_accepts_tests",),
    ),
    Mutant(
        name="verdict_as_string",
        why="the verdict as the string 'accepts'/'refuses', not a bool",
        cells=_accepts(
            "    return 'accepts' if m % max(1, m // p) == 0 else 'refuses'",
        ),
        grades=("pytorch_accepts_tests",),
    ),
    Mutant(
        name="accepts_via_generator",
        why="tries course_lib's interleaved_1f1b and catches its ValueError (delegated)",
        cells=_accepts(
            "    try:\n"
            "        interleaved_1f1b(p, m, 2)\n"
            "    except ValueError:\n"
            "        return False\n"
            "    return True"
        ),
        grades=("pytorch_accepts_tests",),
    ),
    Mutant(
        name="accepts_via_acceptance",
        why="course_lib's acceptance(...).pytorch (delegated)",
        cells=_accepts(
            "    return acceptance(p, m, 2).pytorch",
        ),
        grades=("pytorch_accepts_tests",),
    ),
]

RIGHT_ANSWERS = [
    Mutant(
        name="owner_loop_int32",
        why="a loop over chunks filling an int32 array",
        cells=_owner(
            "    owner = np.zeros(L, dtype=np.int32)\n"
            "    for k in range(v * p):\n"
            "        owner[k * per_chunk:(k + 1) * per_chunk] = k % p\n"
            "    return owner"
        ),
        grades=("layer_owner_tests",),
    ),
    Mutant(
        name="owner_repeat_tile",
        why="np.tile of the rank row, each rank repeated per chunk",
        cells=_owner("    return np.tile(np.repeat(np.arange(p), per_chunk), v)"),
        grades=("layer_owner_tests",),
    ),
    Mutant(
        name="overheads_list_numpy",
        why="a list of numpy floats",
        cells=_overheads("    return [np.float64(p - 1) / (v * m) for v in (1, 2, 4)]"),
        grades=("overheads_tests",),
    ),
    Mutant(
        name="overheads_from_bubble_times",
        why="t_pb / t_id from the bubble and ideal compute in seconds",
        cells=_overheads(
            "    t = 3e-3\n    return tuple(((p - 1) * t / v) / (m * t) for v in (1, 2, 4))"
        ),
        grades=("overheads_tests",),
    ),
    Mutant(
        name="transfers_closed_forms",
        why="the closed forms v p - 1 (0 on one rank) and v (n - 1) + (v - 1)[n > 1]",
        cells=_transfers(
            "    ranks = v * p - 1 if p > 1 else 0\n"
            "    nodes = v * (n - 1) + (v - 1) * (n > 1)\n"
            "    return ranks, nodes"
        ),
        grades=TRANSFERS,
    ),
    Mutant(
        name="transfers_loop_as_list",
        why="a loop over the boundaries, numpy ints, returned as a list",
        cells=_transfers(
            "    ranks = nodes = np.int64(0)\n"
            "    for k in range(v * p - 1):\n"
            "        a, b = k % p, (k + 1) % p\n"
            "        ranks += a != b\n"
            "        nodes += a // g != b // g\n"
            "    return [ranks, nodes]"
        ),
        grades=TRANSFERS,
    ),
    Mutant(
        name="best_by_overhead",
        why="minimises the simulated overhead (the ideal compute is the same for every v)",
        cells=_best(
            "    over = {v: simulate(interleaved_1f1b(p, m, v), t_f / v, t_b / v,\n"
            "                        p2p_latency=delta).overhead for v in candidates}\n"
            "    best = min(over.values())\n"
            "    return min(v for v, o in over.items() if o <= best + 1e-7)"
        ),
        grades=("best_chunks_tests",),
    ),
    Mutant(
        name="best_sorted_numpy",
        why="sorted candidates, numpy argmin on rounded steps, a numpy int",
        cells=_best(
            "    vs = np.array(sorted(candidates))\n"
            "    steps = np.array([simulate(interleaved_1f1b(p, m, int(v)), t_f / v, t_b / v,\n"
            "                               p2p_latency=delta).makespan for v in vs])\n"
            "    return vs[np.argmax(steps <= steps.min() + 1e-9)]"
        ),
        grades=("best_chunks_tests",),
    ),
    Mutant(
        name="best_sorted_strict_loop",
        why="a loop over sorted candidates keeping the first v unless a step is 1e-9 s shorter",
        cells=_best(
            "    best_v = best_t = None\n"
            "    for v in sorted(candidates):\n"
            "        t = simulate(interleaved_1f1b(p, m, v), t_f / v, t_b / v,\n"
            "                     p2p_latency=delta).makespan\n"
            "        if best_t is None or t < best_t - 1e-9:\n"
            "            best_v, best_t = v, t\n"
            "    return best_v"
        ),
        grades=("best_chunks_tests",),
    ),
    Mutant(
        name="accepts_numpy_bool",
        why="the rule as a numpy bool",
        cells=_accepts("    return np.bool_(m % max(1, m // p) == 0)"),
        grades=("pytorch_accepts_tests",),
    ),
    Mutant(
        name="accepts_torch_words",
        why="PyTorch's own names: number_of_rounds, microbatches_per_round",
        cells=_accepts(
            "    number_of_rounds = max(1, m // p)\n"
            "    microbatches_per_round = m // number_of_rounds\n"
            "    return microbatches_per_round * number_of_rounds == m"
        ),
        grades=("pytorch_accepts_tests",),
    ),
]
