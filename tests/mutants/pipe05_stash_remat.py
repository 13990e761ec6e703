"""Plausible wrong answers to pipe05_stash_remat's exercises; each must lose points when graded.

``RIGHT_ANSWERS`` are answers a learner could give that are right by another route (numpy types,
a class, a dynamic programme, a hand-written backward); each must keep full marks on the grade
cells it names.
"""

from __future__ import annotations

from tests.mutants import Mutant


def _stash_bytes(body: str, prelude: str = "") -> dict[str, str]:
    """Exercise 1a's cell: ``body`` after s, b, h, a, the pipeline shape (p, m, layers: the
    stage's layers) and the Table 2 rows."""
    return {
        "stash_bytes_answer": (
            f"{prelude}def stash_bytes(policy, stage, num_stages, num_microbatches, "
            "layers_per_stage, seq_len, micro_batch, hidden, num_heads):\n"
            "    s, b, h, a = seq_len, micro_batch, hidden, num_heads\n"
            "    p, m, layers = num_stages, num_microbatches, layers_per_stage\n"
            "    rows = {'none': s * b * h * (34 + 5 * a * s / h), 'selective': 34 * s * b * h,\n"
            "            'full': 2 * s * b * h}\n"
            f"{body}\n"
        )
    }


def _extra_time(body: str, prelude: str = "") -> dict[str, str]:
    """Exercise 1b's cell: ``body`` after the shape, the times and t_r of the policy."""
    return {
        "extra_time_answer": (
            f"{prelude}def recompute_extra_time(policy, num_stages, num_microbatches, "
            "forward_time, backward_time, core_forward_time):\n"
            "    p, m = num_stages, num_microbatches\n"
            "    t_f, t_b, t_c = forward_time, backward_time, core_forward_time\n"
            "    t_r = {'none': 0.0, 'selective': t_c, 'full': t_f}[policy]\n"
            f"{body}\n"
        )
    }


def _stash(body: str, prelude: str = "") -> dict[str, str]:
    """Exercise 2's cell: replay_stash with ``body`` (an empty ``held`` and ``got`` to start)."""
    return {
        "stash_answer": (
            f"{prelude}def replay_stash(operations):\n    held, got = {{}}, []\n{body}\n"
        )
    }


# Exercise 2: the right loop with one line changed, as most wrong stashes are.
_RIGHT_LOOP = (
    "    for op in operations:\n"
    "        key = (op[1], op[2])\n"
    "        if op[0] == 'put':\n"
    "            if key in held:\n"
    "                raise ValueError(key)\n"
    "            held[key] = op[3]\n"
    "        else:\n"
    "            if key not in held:\n"
    "                raise KeyError(key)\n"
    "            got.append(held.pop(key))\n"
    "    return got"
)


_DOUBLE_PUT_CHECK = "            if key in held:\n                raise ValueError(key)\n"


def _keyed(key: str, *, double_put_check: bool = True) -> dict[str, str]:
    """Exercise 2's right loop keyed by the expression ``key`` (of op), optionally without the
    double-put check."""
    loop = _RIGHT_LOOP.replace("key = (op[1], op[2])", f"key = {key}")
    return _stash(loop if double_put_check else loop.replace(_DOUBLE_PUT_CHECK, ""))


def _per_stage_list(take: str) -> str:
    """A list of values per stage, ignoring the microbatch; a get takes ``list.<take>``."""
    return (
        "    for op in operations:\n"
        "        if op[0] == 'put':\n"
        "            held.setdefault(op[1], []).append(op[3])\n"
        "        else:\n"
        "            if not held.get(op[1]):\n"
        "                raise KeyError(op[1])\n"
        f"            got.append(held[op[1]].{take})\n"
        "    return got"
    )


def _recompute(body: str, prelude: str = "") -> dict[str, str]:
    """Exercise 3's cell: recompute_gradient whose generator ``g`` is made by ``body``."""
    return {
        "recompute_answer": (
            f"{prelude}def recompute_gradient(params, saved, target, drop_prob):\n"
            f"{body}\n"
            "    _, cache = mlp_forward(params, saved['x'], g, drop_prob)\n"
            "    return mlp_backward(params, cache, target)\n"
        )
    }


def _restored_rerun(drop: str = "drop_prob", target: str = "target") -> dict[str, str]:
    """Exercise 3's cell with the generator restored, rerun with ``drop``, backward on ``target``."""
    return {
        "recompute_answer": (
            "def recompute_gradient(params, saved, target, drop_prob):\n"
            "    g = np.random.default_rng()\n"
            "    g.bit_generator.state = saved['rng_state']\n"
            f"    _, cache = mlp_forward(params, saved['x'], g, {drop})\n"
            f"    return mlp_backward(params, cache, {target})\n"
        )
    }


def _checkpoints(body: str, prelude: str = "") -> dict[str, str]:
    """Exercise 4's cell: best_checkpoints with ``body`` (n, bytes_of(S), time_of(S) defined)."""
    return {
        "checkpoints_answer": (
            f"{prelude}import itertools\n\n\n"
            "def best_checkpoints(keep_bytes, input_bytes, recompute_times, budget):\n"
            "    n = len(keep_bytes)\n"
            "    def bytes_of(S):\n"
            "        return sum(input_bytes[i] if i in S else keep_bytes[i] for i in range(n))\n"
            "    def time_of(S):\n"
            "        return sum(recompute_times[i] for i in S)\n"
            "    subsets = [S for r in range(n + 1) for S in itertools.combinations(range(n), r)]\n"
            f"{body}\n"
        )
    }


_EXHAUSTIVE = (
    "    fits = [S for S in subsets if bytes_of(S) <= budget]\n    return min(fits, key=time_of)"
)


def _greedy(key: str) -> str:
    """Recompute layers in the order of ``key`` (a function of i) until the stage fits."""
    return (
        "    S = []\n"
        f"    for i in sorted(range(n), key=lambda i: {key}):\n"
        "        if bytes_of(S) <= budget:\n"
        "            break\n"
        "        S.append(i)\n"
        "    return tuple(sorted(S))"
    )


_IMBALANCE = "import course_lib.pipeline.imbalance as course_imbalance\n\n\n"


MUTANTS = [
    # Exercise 1a: stashed bytes on a 1F1B stage.
    Mutant(
        name="selective_keeps_the_attention_term",
        why="selective recomputation given the no-recomputation row, 34 + 5as/h",
        cells=_stash_bytes(
            "    rows['selective'] = rows['none']\n"
            "    return float(min(m, p - stage) * layers * rows[policy])"
        ),
        grades=("stash_bytes_tests",),
    ),
    Mutant(
        name="none_without_the_attention_term",
        why="no recomputation given 34·sbh: the 5as/h softmax/dropout term forgotten",
        cells=_stash_bytes(
            "    rows['none'] = rows['selective']\n"
            "    return float(min(m, p - stage) * layers * rows[policy])"
        ),
        grades=("stash_bytes_tests",),
    ),
    Mutant(
        name="full_stashes_nothing",
        why="full recomputation stashes nothing: the layer input 2·sbh forgotten",
        cells=_stash_bytes(
            "    rows['full'] = 0.0\n    return float(min(m, p - stage) * layers * rows[policy])"
        ),
        grades=("stash_bytes_tests",),
    ),
    Mutant(
        name="gpipe_in_flight",
        why="m microbatches in flight on every stage (GPipe's count, not 1F1B's)",
        cells=_stash_bytes("    return float(m * layers * rows[policy])"),
        grades=("stash_bytes_tests",),
    ),
    Mutant(
        name="p_minus_s_without_min",
        why="p − s in flight even when m < p − s",
        cells=_stash_bytes("    return float((p - stage) * layers * rows[policy])"),
        grades=("stash_bytes_tests",),
    ),
    Mutant(
        name="warmup_count",
        why="min(m, p − s − 1) in flight: the warm-up forwards, without the first steady one",
        cells=_stash_bytes("    return float(min(m, p - stage - 1) * layers * rows[policy])"),
        grades=("stash_bytes_tests",),
    ),
    Mutant(
        name="one_layer",
        why="one layer's stash, not the stage's",
        cells=_stash_bytes("    return float(min(m, p - stage) * rows[policy])"),
        grades=("stash_bytes_tests",),
    ),
    Mutant(
        name="fp32_activations",
        why="4-byte activations: twice Table 2's 16-bit bytes",
        cells=_stash_bytes("    return float(2 * min(m, p - stage) * layers * rows[policy])"),
        grades=("stash_bytes_tests",),
    ),
    Mutant(
        name="heads_and_hidden_swapped",
        why="5·h·s/a for the attention term",
        cells=_stash_bytes(
            "    rows['none'] = s * b * h * (34 + 5 * h * s / a)\n"
            "    return float(min(m, p - stage) * layers * rows[policy])"
        ),
        grades=("stash_bytes_tests",),
    ),
    Mutant(
        name="gibibytes",
        why="the right number in GiB, not bytes",
        cells=_stash_bytes("    return min(m, p - stage) * layers * rows[policy] / 2**30"),
        grades=("stash_bytes_tests",),
    ),
    Mutant(
        name="p_in_flight_on_every_stage",
        why="min(m, p) on every stage: Korthikanti §4.2.3's first-stage count",
        cells=_stash_bytes("    return float(min(m, p) * layers * rows[policy])"),
        grades=("stash_bytes_tests",),
    ),
    Mutant(
        name="one_based_stage",
        why="min(m, p − stage + 1): stages counted from 1",
        cells=_stash_bytes("    return float(min(m, p - stage + 1) * layers * rows[policy])"),
        grades=("stash_bytes_tests",),
    ),
    Mutant(
        name="layers_over_p",
        why="layers_per_stage read as the model's layers and divided by p",
        cells=_stash_bytes("    return float(min(m, p - stage) * layers / p * rows[policy])"),
        grades=("stash_bytes_tests",),
    ),
    Mutant(
        name="two_byte_masks",
        why="the dropout masks counted at 2 bytes: 36 + 6as/h and 36·sbh",
        cells=_stash_bytes(
            "    rows['none'] = s * b * h * (36 + 6 * a * s / h)\n"
            "    rows['selective'] = 36 * s * b * h\n"
            "    return float(min(m, p - stage) * layers * rows[policy])"
        ),
        grades=("stash_bytes_tests",),
    ),
    Mutant(
        name="full_plus_working_set",
        why="full recomputation's stash plus the working set of the layer being recomputed",
        cells=_stash_bytes(
            "    extra = rows['none'] if policy == 'full' else 0.0\n"
            "    return float(min(m, p - stage) * layers * rows[policy] + extra)"
        ),
        grades=("stash_bytes_tests",),
    ),
    Mutant(
        name="delegates_to_cost05_formula",
        why="course_lib.memory.activation_bytes_per_layer times the in-flight count (disabled)",
        cells=_stash_bytes(
            "    per = course_memory.activation_bytes_per_layer(s, b, h, a, recompute=policy)\n"
            "    return float(min(m, p - stage) * layers * per)",
            prelude="import course_lib.memory as course_memory\n\n\n",
        ),
        grades=("stash_bytes_tests",),
    ),
    Mutant(
        name="delegates_to_stage_stash_bytes",
        why="course_lib's stage_stash_bytes (disabled)",
        cells=_stash_bytes(
            "    return course_stash.stage_stash_bytes(policy, stage, p, m, layers, s, b, h, a)"
        ),
        grades=("stash_bytes_tests",),
    ),
    # Exercise 1b: extra time per 1F1B step.
    Mutant(
        name="added_work_not_critical_path",
        why="m·t_r: the rerun work, but every one of the m + p − 1 slots grows",
        cells=_extra_time("    return m * t_r"),
        grades=("extra_time_tests",),
    ),
    Mutant(
        name="m_plus_p_slots",
        why="m + p slots instead of m + p − 1",
        cells=_extra_time("    return (m + p) * t_r"),
        grades=("extra_time_tests",),
    ),
    Mutant(
        name="none_reruns_the_core",
        why="no recomputation charged the attention core's forward anyway",
        cells=_extra_time(
            "    t_r = {'none': t_c, 'selective': t_c, 'full': t_f}[policy]\n"
            "    return (m + p - 1) * t_r"
        ),
        grades=("extra_time_tests",),
    ),
    Mutant(
        name="none_is_none",
        why="None instead of 0.0 s when nothing is recomputed",
        cells=_extra_time(
            "    if policy == 'none':\n        return None\n    return (m + p - 1) * t_r"
        ),
        grades=("extra_time_tests",),
    ),
    Mutant(
        name="forward_and_backward_again",
        why="the rerun counted as a forward and a backward",
        cells=_extra_time(
            "    again = {'none': 0.0, 'selective': 3 * t_c, 'full': t_f + t_b}[policy]\n"
            "    return (m + p - 1) * again"
        ),
        grades=("extra_time_tests",),
    ),
    Mutant(
        name="policies_swapped",
        why="selective reruns the whole forward and full only the attention core",
        cells=_extra_time(
            "    t_r = {'none': 0.0, 'selective': t_f, 'full': t_c}[policy]\n"
            "    return (m + p - 1) * t_r"
        ),
        grades=("extra_time_tests",),
    ),
    Mutant(
        name="fraction_of_step",
        why="the extra fraction of the step, not seconds",
        cells=_extra_time("    return t_r / (t_f + t_b)"),
        grades=("extra_time_tests",),
    ),
    Mutant(
        name="whole_step",
        why="the step with recomputation, not its extra time",
        cells=_extra_time("    return (m + p - 1) * (t_f + t_b + t_r)"),
        grades=("extra_time_tests",),
    ),
    Mutant(
        name="every_stage_in_turn",
        why="p·m·t_r: every stage's reruns added one after another",
        cells=_extra_time("    return p * m * t_r"),
        grades=("extra_time_tests",),
    ),
    Mutant(
        name="milliseconds",
        why="the right time in ms",
        cells=_extra_time("    return 1e3 * (m + p - 1) * t_r"),
        grades=("extra_time_tests",),
    ),
    Mutant(
        name="simulates_the_difference",
        why="simulate(one_f_one_b(p, m), ...) with and without t_r (disabled)",
        cells=_extra_time(
            "    sched = one_f_one_b(p, m)\n"
            "    return (simulate(sched, t_f, t_b + t_r).makespan\n"
            "            - simulate(sched, t_f, t_b).makespan)"
        ),
        grades=("extra_time_tests",),
    ),
    Mutant(
        name="delegates_to_recompute_step_time",
        why="course_lib's recompute_step_time, twice (disabled)",
        cells=_extra_time(
            "    f = course_stash.recompute_step_time\n"
            "    return f(policy, p, m, t_f, t_b, t_c) - f('none', p, m, t_f, t_b, t_c)"
        ),
        grades=("extra_time_tests",),
    ),
    Mutant(
        name="delegates_to_interleaved_makespan",
        why="pipe04's interleaved_makespan at one chunk per rank, with and without t_r (disabled)",
        cells=_extra_time(
            "    f = course_interleaving.interleaved_makespan\n"
            "    return f(p, m, 1, t_f, t_b + t_r) - f(p, m, 1, t_f, t_b)",
            prelude="import course_lib.pipeline.interleaving as course_interleaving\n\n\n",
        ),
        grades=("extra_time_tests",),
    ),
    Mutant(
        name="delegates_to_interleaving_step_times",
        why="pipe04's simulated step_times at v = 1, with and without t_r (disabled)",
        cells=_extra_time(
            "    f = course_interleaving.step_times\n"
            "    return f(p, m, t_f, t_b + t_r, chunks=(1,))[1] - f(p, m, t_f, t_b, chunks=(1,))[1]",
            prelude="import course_lib.pipeline.interleaving as course_interleaving\n\n\n",
        ),
        grades=("extra_time_tests",),
    ),
    Mutant(
        name="delegates_to_accumulation_step_times",
        why="pipe06's step_times (m + p − 1)·t(b) at b = 1, with and without t_r (disabled)",
        cells=_extra_time(
            "    f = course_accumulation.step_times\n"
            "    return f(m, p, {1: t_f + t_b + t_r})[m] - f(m, p, {1: t_f + t_b})[m]",
            prelude="import course_lib.pipeline.accumulation as course_accumulation\n\n\n",
        ),
        grades=("extra_time_tests",),
    ),
    Mutant(
        name="delegates_to_fill_drain_overhead",
        why="pipe02's bubble overhead (p − 1)/m applied to the rerun work m·t_r (disabled)",
        cells=_extra_time(
            "    return m * t_r * (1 + course_formulas.fill_drain_overhead(p, m))",
            prelude="import course_lib.pipeline.formulas as course_formulas\n\n\n",
        ),
        grades=("extra_time_tests",),
    ),
    Mutant(
        name="delegates_to_gpipe_makespan",
        why="pipe08's gpipe_makespan on p equal stages, with and without t_r (disabled)",
        cells=_extra_time(
            "    f = course_imbalance.gpipe_makespan\n"
            "    return f([t_f] * p, [t_b + t_r] * p, m) - f([t_f] * p, [t_b] * p, m)",
            prelude=_IMBALANCE,
        ),
        grades=("extra_time_tests",),
    ),
    Mutant(
        name="delegates_to_makespan_lower_bound",
        why="pipe08's makespan_lower_bound, met by equal stages, with and without t_r (disabled)",
        cells=_extra_time(
            "    f = course_imbalance.makespan_lower_bound\n"
            "    return f([t_f] * p, [t_b + t_r] * p, m) - f([t_f] * p, [t_b] * p, m)",
            prelude=_IMBALANCE,
        ),
        grades=("extra_time_tests",),
    ),
    Mutant(
        name="delegates_to_slowest_stage_makespan",
        why="pipe08's slowest_stage_makespan on equal stages, with and without t_r (disabled)",
        cells=_extra_time(
            "    f = course_imbalance.slowest_stage_makespan\n"
            "    return f([t_f] * p, [t_b + t_r] * p, m) - f([t_f] * p, [t_b] * p, m)",
            prelude=_IMBALANCE,
        ),
        grades=("extra_time_tests",),
    ),
    Mutant(
        name="delegates_to_partition_step_time",
        why="pipe08's partition_step_time on a one-layer-per-stage spec, with and without t_r "
        "(disabled)",
        cells=_extra_time(
            "    def step(tb):\n"
            "        spec = ModelSpec.from_arrays([t_f] * p, [tb] * p, [0.0] * p, [0.0] * p,\n"
            "                                     [0.0] * (p - 1))\n"
            "        return course_imbalance.partition_step_time(spec, tuple(range(p + 1)), 1e9, m)\n"
            "    return step(t_b + t_r) - step(t_b)",
            prelude=_IMBALANCE + "from course_lib.pipeline import ModelSpec\n\n\n",
        ),
        grades=("extra_time_tests",),
    ),
    # Exercise 2: a stash keyed by identity.
    Mutant(
        name="keyed_by_microbatch_only",
        why="two stages on one rank collide",
        cells=_keyed("op[2]"),
        grades=("stash_tests",),
    ),
    Mutant(
        name="keyed_by_microbatch_only_overwrites",
        why="keyed by microbatch without the double-put check: the later stage overwrites",
        cells=_keyed("op[2]", double_put_check=False),
        grades=("stash_tests",),
    ),
    Mutant(
        name="keyed_by_stage_only",
        why="one slot per stage",
        cells=_keyed("op[1]", double_put_check=False),
        grades=("stash_tests",),
    ),
    Mutant(
        name="stack_per_stage",
        why="last in, first out: a get returns the stage's newest stash",
        cells=_stash(_per_stage_list("pop()")),
        grades=("stash_tests",),
    ),
    Mutant(
        name="queue_per_stage",
        why="first in, first out per stage: right for 1F1B's order, wrong for any other",
        cells=_stash(_per_stage_list("pop(0)")),
        grades=("stash_tests",),
    ),
    Mutant(
        name="one_queue_for_the_rank",
        why="one first-in-first-out queue for all stages",
        cells=_stash(
            "    queue = []\n"
            "    for op in operations:\n"
            "        if op[0] == 'put':\n"
            "            queue.append(op[3])\n"
            "        else:\n"
            "            if not queue:\n"
            "                raise KeyError('empty')\n"
            "            got.append(queue.pop(0))\n"
            "    return got"
        ),
        grades=("stash_tests",),
    ),
    Mutant(
        name="missing_key_gives_none",
        why="a get of a key not held returns None instead of raising",
        cells=_stash(
            _RIGHT_LOOP.replace(
                "            if key not in held:\n                raise KeyError(key)\n"
                "            got.append(held.pop(key))",
                "            got.append(held.pop(key, None))",
            )
        ),
        grades=("stash_tests",),
    ),
    Mutant(
        name="string_key",
        why="key str(stage) + str(microbatch): (1, 11) and (11, 1) collide",
        cells=_keyed("str(op[1]) + str(op[2])"),
        grades=("stash_tests",),
    ),
    Mutant(
        name="string_key_overwrites",
        why="key str(stage) + str(microbatch) without the double-put check: one overwrites",
        cells=_keyed("str(op[1]) + str(op[2])", double_put_check=False),
        grades=("stash_tests",),
    ),
    Mutant(
        name="ten_times_stage_key",
        why="key 10·stage + microbatch: (1, 11) and (2, 1) collide",
        cells=_keyed("10 * op[1] + op[2]"),
        grades=("stash_tests",),
    ),
    Mutant(
        name="truthy_duplicate_test",
        why="a repeated put detected by the held value's truthiness: a held 0 or None is missed",
        cells=_stash(_RIGHT_LOOP.replace("if key in held:", "if held.get(key):")),
        grades=("stash_tests",),
    ),
    Mutant(
        name="truthy_missing_test",
        why="a missing key detected by the value's truthiness: a held 0, '' or None raises",
        cells=_stash(_RIGHT_LOOP.replace("if key not in held:", "if not held.get(key):")),
        grades=("stash_tests",),
    ),
    Mutant(
        name="none_as_missing_on_get",
        why="pop(key, None), and None read as a missing key: a stored None raises KeyError",
        cells=_stash(
            _RIGHT_LOOP.replace(
                "            if key not in held:\n                raise KeyError(key)\n"
                "            got.append(held.pop(key))",
                "            value = held.pop(key, None)\n"
                "            if value is None:\n                raise KeyError(key)\n"
                "            got.append(value)",
            )
        ),
        grades=("stash_tests",),
    ),
    Mutant(
        name="none_as_missing_on_put",
        why="a repeated put detected by held.get(key) is not None: a held None is overwritten",
        cells=_stash(_RIGHT_LOOP.replace("if key in held:", "if held.get(key) is not None:")),
        grades=("stash_tests",),
    ),
    Mutant(
        name="double_put_overwrites",
        why="a second put of a key replaces the first silently",
        cells=_stash(_RIGHT_LOOP.replace(_DOUBLE_PUT_CHECK, "")),
        grades=("stash_tests",),
    ),
    Mutant(
        name="refuses_a_reput_after_its_get",
        why="a key once put can never be put again, even after its get consumed it",
        cells=_stash(
            "    ever = set()\n"
            + _RIGHT_LOOP.replace("if key in held:", "if key in ever:").replace(
                "            held[key] = op[3]",
                "            held[key] = op[3]\n            ever.add(key)",
            )
        ),
        grades=("stash_tests",),
    ),
    Mutant(
        name="repeated_put_raises_key_error",
        why="KeyError for a repeated put (the missing key's error is right)",
        cells=_stash(_RIGHT_LOOP.replace("raise ValueError(key)", "raise KeyError(key)")),
        grades=("stash_tests",),
    ),
    Mutant(
        name="missing_key_raises_value_error",
        why="ValueError for a get of a key not held (the repeated put's error is right)",
        cells=_stash(_RIGHT_LOOP.replace("raise KeyError(key)", "raise ValueError(key)")),
        grades=("stash_tests",),
    ),
    Mutant(
        name="get_does_not_remove",
        why="a get leaves the value held, so a backward can reuse it",
        cells=_stash(
            _RIGHT_LOOP.replace("held.pop(key)", "held[key]").replace(_DOUBLE_PUT_CHECK, "")
        ),
        grades=("stash_tests",),
    ),
    Mutant(
        name="errors_swapped",
        why="ValueError for a missing key and KeyError for a repeated put",
        cells=_stash(
            _RIGHT_LOOP.replace("raise ValueError(key)", "raise KeyError(key)").replace(
                "raise KeyError(key)\n            got", "raise ValueError(key)\n            got"
            )
        ),
        grades=("stash_tests",),
    ),
    Mutant(
        name="delegates_to_course_stash",
        why="the course's Stash (its put and get are disabled)",
        cells=_stash(
            "    s = Stash()\n"
            "    for op in operations:\n"
            "        if op[0] == 'put':\n"
            "            s.put(op[1], op[2], op[3])\n"
            "        else:\n"
            "            got.append(s.get(op[1], op[2]))\n"
            "    return got"
        ),
        grades=("stash_tests",),
    ),
    # Exercise 3: a deterministic recomputation.
    Mutant(
        name="fresh_generator",
        why="a new unseeded generator: new masks",
        cells=_recompute("    g = np.random.default_rng()"),
        grades=("recompute_tests",),
    ),
    Mutant(
        name="reseeds_with_the_stage_seed",
        why="default_rng(STAGE_SEED) again: right for microbatch 0 only",
        cells=_recompute("    g = np.random.default_rng(STAGE_SEED)"),
        grades=("recompute_tests",),
    ),
    Mutant(
        name="uses_the_setup_generator",
        why="the setup's rng, in whatever state it is in",
        cells=_recompute("    g = rng"),
        grades=("recompute_tests",),
    ),
    Mutant(
        name="seeds_with_the_state_integer",
        why="default_rng(state's 128-bit counter): a seed, not the state",
        cells=_recompute("    g = np.random.default_rng(saved['rng_state']['state']['state'])"),
        grades=("recompute_tests",),
    ),
    Mutant(
        name="one_draw_too_many",
        why="the state restored, then one draw made before the rerun",
        cells=_recompute(
            "    g = np.random.default_rng()\n"
            "    g.bit_generator.state = saved['rng_state']\n"
            "    g.random()"
        ),
        grades=("recompute_tests",),
    ),
    Mutant(
        name="no_dropout_in_the_rerun",
        why="the rerun without dropout (drop_prob 0), as in evaluation",
        cells=_restored_rerun(drop="0.0"),
        grades=("recompute_tests",),
    ),
    Mutant(
        name="global_dropout_rate",
        why="the setup's DROP_PROB in the rerun, not the drop_prob argument",
        cells=_restored_rerun(drop="DROP_PROB"),
        grades=("recompute_tests",),
    ),
    Mutant(
        name="drop_prob_as_keep_probability",
        why="the state restored, but the rerun drops with 1 − drop_prob",
        cells=_restored_rerun(drop="1 - drop_prob"),
        grades=("recompute_tests",),
    ),
    Mutant(
        name="returns_the_cache",
        why="the state restored, but the forward's cache returned instead of the gradient",
        cells={
            "recompute_answer": (
                "def recompute_gradient(params, saved, target, drop_prob):\n"
                "    g = np.random.default_rng()\n"
                "    g.bit_generator.state = saved['rng_state']\n"
                "    return mlp_forward(params, saved['x'], g, drop_prob)[1]\n"
            )
        },
        grades=("recompute_tests",),
    ),
    Mutant(
        name="global_target",
        why="the state restored, but the setup's targets[0] instead of the target argument",
        cells=_restored_rerun(target="targets[0]"),
        grades=("recompute_tests",),
    ),
    Mutant(
        name="delegates_to_stage_gradients",
        why="course_lib's stage_gradients on one microbatch with the stage seed (disabled)",
        cells={
            "recompute_answer": (
                "def recompute_gradient(params, saved, target, drop_prob):\n"
                "    order = [('F', 0), ('B', 0)]\n"
                "    return stage_gradients(params, [saved['x']], [target], order, STAGE_SEED,\n"
                "                           drop_prob, mode='restore')[0]\n"
            )
        },
        grades=("recompute_tests",),
    ),
    # Exercise 4: the best checkpoint set under a budget.
    Mutant(
        name="greedy_bytes_per_second",
        why="recompute the layer saving the most bytes per second first, until it fits",
        cells=_checkpoints(_greedy("-(keep_bytes[i] - input_bytes[i]) / recompute_times[i]")),
        grades=("checkpoints_tests",),
    ),
    Mutant(
        name="greedy_largest_saving",
        why="recompute the layer saving the most bytes first",
        cells=_checkpoints(_greedy("-(keep_bytes[i] - input_bytes[i])")),
        grades=("checkpoints_tests",),
    ),
    Mutant(
        name="greedy_cheapest",
        why="recompute the cheapest layer first",
        cells=_checkpoints(_greedy("recompute_times[i]")),
        grades=("checkpoints_tests",),
    ),
    Mutant(
        name="forgets_the_inputs",
        why="a recomputed layer counted as stashing nothing: its input stays",
        cells=_checkpoints(
            "    fits = [S for S in subsets\n"
            "            if sum(keep_bytes[i] for i in range(n) if i not in S) <= budget]\n"
            "    return min(fits, key=time_of)"
        ),
        grades=("checkpoints_tests",),
    ),
    Mutant(
        name="strictly_below_budget",
        why="bytes < budget: a budget met exactly is refused",
        cells=_checkpoints(_EXHAUSTIVE.replace("<= budget", "< budget")),
        grades=("checkpoints_tests",),
    ),
    Mutant(
        name="returns_the_kept_layers",
        why="the layers that keep their activations, not those recomputed",
        cells=_checkpoints(
            "    fits = [S for S in subsets if bytes_of(S) <= budget]\n"
            "    best = min(fits, key=time_of)\n"
            "    return tuple(i for i in range(n) if i not in best)"
        ),
        grades=("checkpoints_tests",),
    ),
    Mutant(
        name="fewest_layers",
        why="the fewest recomputed layers that fit, not the least time",
        cells=_checkpoints(
            "    fits = [S for S in subsets if bytes_of(S) <= budget]\n"
            "    return min(fits, key=len)"
        ),
        grades=("checkpoints_tests",),
    ),
    Mutant(
        name="at_least_one_layer",
        why="some layer always recomputed, even when everything fits",
        cells=_checkpoints(
            "    fits = [S for S in subsets if S and bytes_of(S) <= budget]\n"
            "    return min(fits, key=time_of)"
        ),
        grades=("checkpoints_tests",),
    ),
    Mutant(
        name="budget_on_the_recomputed_bytes",
        why="the budget applied to the recomputed layers' inputs only, not to all stashed bytes",
        cells=_checkpoints(
            "    fits = [S for S in subsets if sum(input_bytes[i] for i in S) <= budget]\n"
            "    return min(fits, key=time_of)"
        ),
        grades=("checkpoints_tests",),
    ),
    Mutant(
        name="recomputes_everything",
        why="every layer recomputed: it fits, at the highest cost",
        cells=_checkpoints("    return tuple(range(n))"),
        grades=("checkpoints_tests",),
    ),
    Mutant(
        name="one_based_layers",
        why="the right set, numbered from 1",
        cells=_checkpoints(
            "    fits = [S for S in subsets if bytes_of(S) <= budget]\n"
            "    return tuple(i + 1 for i in min(fits, key=time_of))"
        ),
        grades=("checkpoints_tests",),
    ),
    Mutant(
        name="flags_per_layer",
        why="a 0/1 flag per layer (1 = recompute), not the layer numbers",
        cells=_checkpoints(
            "    fits = [S for S in subsets if bytes_of(S) <= budget]\n"
            "    best = min(fits, key=time_of)\n"
            "    return [int(i in best) for i in range(n)]"
        ),
        grades=("checkpoints_tests",),
    ),
    Mutant(
        name="negative_layer_numbers",
        why="the right set counted from the end (i − n)",
        cells=_checkpoints(
            "    fits = [S for S in subsets if bytes_of(S) <= budget]\n"
            "    return tuple(i - n for i in min(fits, key=time_of))"
        ),
        grades=("checkpoints_tests",),
    ),
    Mutant(
        name="delegates_to_best_recompute_plan",
        why="course_lib's best_recompute_plan (disabled)",
        cells=_checkpoints(
            "    options = [[(k, 0.0), (c, t)] for k, c, t in\n"
            "               zip(keep_bytes, input_bytes, recompute_times)]\n"
            "    plan = course_stash.best_recompute_plan(options, budget)\n"
            "    return tuple(i for i, c in enumerate(plan) if c)"
        ),
        grades=("checkpoints_tests",),
    ),
]

RIGHT_ANSWERS = [
    Mutant(
        name="stash_bytes_integer_arithmetic",
        why="exact integers (s·b·h·34 + 5·a·s²·b), an int",
        cells=_stash_bytes(
            "    rows = {'none': 34 * s * b * h + 5 * a * s * s * b, 'selective': 34 * s * b * h,\n"
            "            'full': 2 * s * b * h}\n"
            "    return min(m, p - stage) * layers * rows[policy]"
        ),
        grades=("stash_bytes_tests",),
    ),
    Mutant(
        name="stash_bytes_numpy_with_pipe03_count",
        why="pipe03's peak_in_flight_one_f_one_b for the count, a numpy.float64",
        cells=_stash_bytes(
            "    flight = course_pipeline.peak_in_flight_one_f_one_b(p, m, stage)\n"
            "    return np.float64(flight) * layers * rows[policy]",
            prelude="import course_lib.pipeline as course_pipeline\n\n\n",
        ),
        grades=("stash_bytes_tests",),
    ),
    Mutant(
        name="extra_time_as_step_difference",
        why="the step with recomputation minus the step without, by hand, a numpy.float64",
        cells=_extra_time(
            "    slots = np.float64(m + p - 1)\n"
            "    return slots * (t_f + t_b + t_r) - slots * (t_f + t_b)"
        ),
        grades=("extra_time_tests",),
    ),
    Mutant(
        name="stash_as_a_class",
        why="a class of one's own, returning a tuple",
        cells=_stash(
            "    class Held:\n"
            "        def __init__(self):\n"
            "            self.d = {}\n"
            "        def put(self, key, value):\n"
            "            if key in self.d:\n"
            "                raise ValueError(key)\n"
            "            self.d[key] = value\n"
            "        def take(self, key):\n"
            "            try:\n"
            "                return self.d.pop(key)\n"
            "            except KeyError:\n"
            "                raise KeyError(key) from None\n"
            "    h = Held()\n"
            "    for op in operations:\n"
            "        if op[0] == 'put':\n"
            "            h.put(tuple(op[1:3]), op[3])\n"
            "        else:\n"
            "            got.append(h.take(tuple(op[1:3])))\n"
            "    return tuple(got)"
        ),
        grades=("stash_tests",),
    ),
    Mutant(
        name="recompute_with_explicit_pcg64",
        why="np.random.Generator(np.random.PCG64()) with the saved state set",
        cells=_recompute(
            "    g = np.random.Generator(np.random.PCG64())\n"
            "    g.bit_generator.state = saved['rng_state']"
        ),
        grades=("recompute_tests",),
    ),
    Mutant(
        name="recompute_by_hand",
        why="forward and backward written out (same mask draw), within the 12-digit tolerance",
        cells={
            "recompute_answer": (
                "def recompute_gradient(params, saved, target, drop_prob):\n"
                "    g = np.random.default_rng()\n"
                "    g.bit_generator.state = saved['rng_state']\n"
                "    x = saved['x']\n"
                "    pre = x @ params['W1'] + params['b1']\n"
                "    h = np.maximum(pre, 0.0)\n"
                "    keep = g.random(h.shape) >= drop_prob\n"
                "    d = h * keep / (1.0 - drop_prob)\n"
                "    y = d @ params['W2'] + params['b2']\n"
                "    dy = (y - target) / len(x)\n"
                "    dpre = (dy @ params['W2'].T) * keep / (1.0 - drop_prob) * (pre > 0)\n"
                "    return {'W1': x.T @ dpre, 'b1': dpre.sum(0), 'W2': d.T @ dy,\n"
                "            'b2': dy.sum(0)}\n"
            )
        },
        grades=("recompute_tests",),
    ),
    Mutant(
        name="checkpoints_knapsack_dp",
        why="a dynamic programme over layers keeping the Pareto set, returning a list",
        cells=_checkpoints(
            "    states = [(0.0, 0.0, ())]\n"
            "    for i in range(n):\n"
            "        nxt = []\n"
            "        for b, t, S in states:\n"
            "            nxt.append((b + keep_bytes[i], t, S))\n"
            "            nxt.append((b + input_bytes[i], t + recompute_times[i], S + (i,)))\n"
            "        nxt.sort()\n"
            "        states, best_t = [], float('inf')\n"
            "        for b, t, S in nxt:\n"
            "            if t < best_t:\n"
            "                states.append((b, t, S))\n"
            "                best_t = t\n"
            "    return list(min((t, S) for b, t, S in states if b <= budget)[1])"
        ),
        grades=("checkpoints_tests",),
    ),
    Mutant(
        name="checkpoints_bitmask_numpy_set",
        why="a bitmask search with numpy, returning a set of numpy ints",
        cells=_checkpoints(
            "    keep = np.asarray(keep_bytes, float)\n"
            "    inp = np.asarray(input_bytes, float)\n"
            "    t = np.asarray(recompute_times, float)\n"
            "    best = None\n"
            "    for mask in range(2 ** n):\n"
            "        r = np.array([(mask >> i) & 1 for i in range(n)], dtype=bool)\n"
            "        if np.where(r, inp, keep).sum() <= budget:\n"
            "            cost = t[r].sum()\n"
            "            if best is None or cost < best[0]:\n"
            "                best = (cost, r)\n"
            "    return set(np.flatnonzero(best[1]))"
        ),
        grades=("checkpoints_tests",),
    ),
]
