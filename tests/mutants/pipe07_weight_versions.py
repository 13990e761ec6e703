"""Plausible wrong answers to pipe07_weight_versions' exercises; each must lose points.

``RIGHT_ANSWERS`` are answers right by another route (a running count per stage, a numpy
cumulative sum, section 3's rule in words for 2BW, the stream's own loop for the delayed
descent, a list or frozenset for the set, a numpy integer); each keeps full marks on the grade
cells it names.
"""

from __future__ import annotations

from tests.mutants import Mutant

EX1, EX2, EX3, EX4, EX5 = (
    ("versions_tests",),
    ("memory_tests",),
    ("staleness_tests",),
    ("tuned_tests",),
    ("synchronous_tests",),
)


def _function_cell(cell: str, header: str, body: str, prelude: str) -> dict[str, str]:
    """Solution cell ``cell``: ``prelude``, then a function of ``header`` lines and ``body``."""
    return {cell: f"{prelude}{header}{body}\n"}


def _versions(body: str, prelude: str = "") -> dict[str, str]:
    """The Exercise 1 solution cell with ``body`` (p = the number of stages in scope)."""
    header = (
        "def microbatch_versions(stage_orders, microbatch):\n"
        "    p, j = len(stage_orders), microbatch\n"
    )
    return _function_cell("versions_answer", header, body, prelude)


def _count_before(target: str, counted: str, offset: str = "") -> str:
    """Per stage, the number of ``counted`` kinds before the ``target`` action of microbatch j."""
    return (
        "    out = []\n"
        "    for order in stage_orders:\n"
        "        n = 0\n"
        "        for kind, mb in order:\n"
        f"            if kind == {target!r} and mb == j:\n"
        f"                out.append(n{offset})\n"
        "                break\n"
        f"            if kind == {counted!r}:\n"
        "                n += 1\n"
        "    return out"
    )


def _memory(versions: str, bytes_per: str = "bytes_per_param", unit: str = "GiB") -> dict:
    """The Exercise 2 answer with ``versions`` (an expression in s) copies per stage."""
    return {
        "memory_answer": (
            f"version_gib = [({versions}) * params_per_stage[s] * {bytes_per} / {unit} "
            "for s in range(6)]\n"
        )
    }


def _tuned(body: str) -> dict[str, str]:
    """The Exercise 4 answer cell: ``body`` defines fewest(d), then tuned_steps from it."""
    return {"tuned_answer": f"{body}\n\ntuned_steps = tuple(fewest(d) for d in (0, 1, 2))\n"}


def _fewest(
    run: str = "delayed_gradient_descent(hessian, w_start, nu, delay, max_iterations)",
    measure: str = "quadratic_loss(hessian, runs) / quadratic_loss(hessian, w_start)",
    grid: str = "step_grid",
    shift: str = "",
    delay: str = "d",
) -> str:
    return (
        "def fewest(d):\n"
        f"    delay = {delay}\n"
        "    best = None\n"
        f"    for nu in {grid}:\n"
        "        with np.errstate(over='ignore', invalid='ignore'):\n"
        f"            runs = {run}\n"
        f"            ratio = {measure}\n"
        "        hits = np.flatnonzero(ratio <= 1e-6)\n"
        "        if len(hits) and (best is None or hits[0] < best):\n"
        f"            best = int(hits[0]){shift}\n"
        "    return best"
    )


_ZERO_HISTORY = (
    "def own_run(nu, delay, steps):\n"
    "    w = np.zeros((steps + 1, len(w_start)))\n"
    "    w[0] = w_start\n"
    "    for t in range(steps):\n"
    "        past = w[t - delay] if t - delay >= 0 else np.zeros(len(w_start))\n"
    "        w[t + 1] = w[t] - nu * hessian @ past\n"
    "    return w\n\n\n"
)


def _two_bw(body: str, prelude: str = "") -> dict[str, str]:
    """The Exercise 3 solution cell: version_2bw(j, m) returning ``body`` (j, m in scope)."""
    header = (
        "def version_2bw(microbatch, microbatches_per_batch):\n"
        "    j, m = microbatch, microbatches_per_batch\n"
    )
    return _function_cell("staleness_answer", header, f"    return {body}", prelude)


def _set(value: str) -> dict[str, str]:
    return {"synchronous_answer": f"synchronous = {value}\n"}


FLUSHED = '{"gpipe", "1f1b_flush", "interleaved_flush", "zb_h1"}'

MUTANTS = [
    # Exercise 1: versions of a microbatch on each stage (stashing)
    Mutant("version_at_backward", "the version current at the backward: no stashing",
           _versions(_count_before("B", "B")), EX1),
    Mutant("versions_from_one", "versions counted from 1", _versions(_count_before("F", "B", " + 1")),
           EX1),
    Mutant("forwards_counted", "counts the forwards before, not the updates",
           _versions(_count_before("F", "F")), EX1),
    Mutant("microbatch_index", "version j on every stage", _versions("    return [j] * p"), EX1),
    Mutant("closed_form_clamped", "the 1F1B closed form whatever the order",
           _versions("    return [max(0, j - (p - 1 - s)) for s in range(p)]"), EX1),
    Mutant("closed_form_unclamped", "j - (p - 1 - s), negative in the warm-up",
           _versions("    return [j - (p - 1 - s) for s in range(p)]"), EX1),
    Mutant("closed_form_with_warmup", "course_lib's closed form max(0, j - min(m, p - s - 1)) "
           "rewritten: right for 1F1B only",
           _versions("    m = 1 + max(mb for order in stage_orders for _, mb in order)\n"
                     "    return [max(0, j - min(m, p - s - 1)) for s in range(p)]"), EX1),
    Mutant("stages_from_one", "j - (p - s): 1-indexed stages",
           _versions("    return [max(0, j - (p - s)) for s in range(p)]"), EX1),
    Mutant("stages_reversed", "the right counts in reverse stage order",
           _versions(_count_before("F", "B") .replace("return out", "return out[::-1]")), EX1),
    Mutant("lower_numbered_backwards", "counts only the backwards of lower-numbered microbatches",
           _versions("    out = []\n"
                     "    for order in stage_orders:\n"
                     "        i = order.index(('F', j))\n"
                     "        out.append(sum(k == 'B' and mb < j for k, mb in order[:i]))\n"
                     "    return out"), EX1),
    Mutant("all_backwards_on_stage", "every backward of the stage, not those before the forward",
           _versions("    return [sum(1 for kind, _ in order if kind == 'B') for order in "
                     "stage_orders]"), EX1),
    Mutant("delegates_to_closed_form", "calls course_lib's stashing_version",
           _versions("    m = 1 + max(mb for order in stage_orders for _, mb in order)\n"
                     "    return [stashing_version(s, j, p, m) for s in range(p)]",
                     "from course_lib.pipeline.versions import stashing_version\n\n\n"), EX1),
    Mutant("delegates_to_replay", "rebuilds the Schedule and calls weight_versions",
           _versions("    from course_lib.pipeline.schedule import Action, Schedule\n"
                     "    m = 1 + max(mb for order in stage_orders for _, mb in order)\n"
                     "    ranks = [[Action(k, s, mb) for k, mb in order] for s, order in "
                     "enumerate(stage_orders)]\n"
                     "    return weight_versions(Schedule(p, m, p, ranks), 'stashing').forward[:, j]"
                     ".tolist()"), EX1),  # fmt: skip
    # Exercise 2: GiB of stored versions per stage (p = 6)
    Mutant("versions_p_minus_s_minus_1", "forgets the current version", _memory("5 - s"), EX2),
    Mutant("versions_p_minus_s_plus_1", "stashed versions plus the current one counted again",
           _memory("7 - s"), EX2),
    Mutant("versions_s_plus_1", "the last stage stores the most", _memory("s + 1"), EX2),
    Mutant("versions_p_everywhere", "p versions on every stage", _memory("6"), EX2),
    Mutant("versions_two", "2BW's two versions", _memory("2"), EX2),
    Mutant("versions_one", "a flushed schedule's one version", _memory("1"), EX2),
    Mutant("fp32_weights", "4 bytes per parameter", _memory("6 - s", bytes_per="4"), EX2),
    Mutant("gigabytes", "GB, not GiB", _memory("6 - s", unit="1e9"), EX2),
    Mutant("bytes_not_gib", "bytes, not GiB", _memory("6 - s", unit="1"), EX2),
    Mutant("printed_four_stages", "the section's printed held [4, 3, 2, 1] of p = 4, padded",
           _memory("[4, 3, 2, 1, 1, 1][s]"), EX2),
    # Exercise 3: version_2bw(j, m)
    Mutant("fresh_batch_version", "batch index: no staleness", _two_bw("j // m"), EX3),
    Mutant("unclamped", "batch index - 1 without the clamp: -1 for batch 0", _two_bw("j // m - 1"),
           EX3),
    Mutant("two_stale", "two updates stale", _two_bw("max(j // m - 2, 0)"), EX3),
    Mutant("paper_formula_on_j", "the paper's 1-indexed formula applied to a 0-indexed j",
           _two_bw("max((j - 1) // m - 1, 0)"), EX3),
    Mutant("j_plus_one", "j + 1 where the paper's k - 1 is j", _two_bw("max((j + 1) // m - 1, 0)"),
           EX3),
    Mutant("ceil_batch", "ceil(j / m) - 1: the batch of a 1-indexed microbatch",
           _two_bw("max(math.ceil(j / m) - 1, 0)", "import math\n\n\n"), EX3),
    Mutant("rounds_not_floors", "rounds j / m instead of flooring",
           _two_bw("max(round(j / m) - 1, 0)"), EX3),
    Mutant("batches_of_p", "batches of p = 4, not m", _two_bw("max(j // 4 - 1, 0)"), EX3),
    Mutant("stashing_stage0", "PipeDream's stage-0 version j - (p - 1)", _two_bw("max(j - 3, 0)"),
           EX3),
    Mutant("update_per_microbatch", "an update per microbatch", _two_bw("j"), EX3),
    Mutant("within_step_zero", "a flushed step's version", _two_bw("0"), EX3),
    Mutant("float_version", "a float", _two_bw("max(j / m - 1, 0.0)"), EX3),
    Mutant("delegates_to_two_bw_version", "calls course_lib's two_bw_version",
           _two_bw("two_bw_version(j, m)",
                   "from course_lib.pipeline.versions import two_bw_version\n\n\n"), EX3),
    Mutant("delegates_to_replay_2bw", "replays a 1F1B stream with weight_versions(..., '2bw')",
           _two_bw("int(weight_versions(one_f_one_b(max(m, 2), m * (j // m + 1)), '2bw', "
                   "microbatches_per_batch=m).forward[0, j])"), EX3),
    # Exercise 4: tuned iterations to 1e-6 for d = 0, 1, 2
    Mutant("one_common_step", "every delay at one small step (0.45/λ_max), untuned",
           _tuned(_fewest(grid="step_grid[4:5]")), EX4),
    Mutant("d0_best_step_for_all", "every delay at delay 0's best step: diverges",
           _tuned(_fewest(grid="step_grid[19:]")), EX4),
    Mutant("iterates_from_one", "counts w(0) as iteration 1", _tuned(_fewest(shift=" + 1")), EX4),
    Mutant("squared_norm", "||w||² instead of the loss",
           _tuned(_fewest(measure="(runs ** 2).sum(axis=1) / (w_start ** 2).sum()")), EX4),
    Mutant("zero_history", "w(t) = 0 before the start",
           _tuned(_ZERO_HISTORY + _fewest(run="own_run(nu, delay, max_iterations)")), EX4),
    Mutant("delay_plus_one", "a delay of d + 1", _tuned(_fewest(delay="d + 1")), EX4),
    # Exercise 5: which schedules are synchronous
    Mutant("stashing_counts", "weight stashing read as synchronous",
           _set('{"gpipe", "1f1b_flush", "interleaved_flush", "zb_h1", "pipedream"}'), EX5),
    Mutant("two_bw_counts", "2BW read as synchronous",
           _set('{"gpipe", "1f1b_flush", "interleaved_flush", "zb_h1", "2bw"}'), EX5),
    Mutant("only_gpipe", "only fill-drain", _set('{"gpipe"}'), EX5),
    Mutant("no_zero_bubble", "split backward read as asynchronous",
           _set('{"gpipe", "1f1b_flush", "interleaved_flush"}'), EX5),
    Mutant("no_interleaved", "chunks read as asynchronous", _set('{"gpipe", "1f1b_flush", "zb_h1"}'), EX5),
    Mutant("all_consistent", "every schedule with one version per forward/backward pair",
           _set('{"gpipe", "1f1b_flush", "interleaved_flush", "zb_h1", "pipedream", "2bw"}'), EX5),
]  # fmt: skip

RIGHT_ANSWERS = [
    Mutant("numpy_cumsum", "a cumulative count of backwards per stage",
           _versions("    out = []\n"
                     "    for order in stage_orders:\n"
                     "        kinds = np.array([k for k, _ in order])\n"
                     "        mbs = np.array([mb for _, mb in order])\n"
                     "        before = np.concatenate([[0], np.cumsum(kinds == 'B')])\n"
                     "        at = int(np.flatnonzero((kinds == 'F') & (mbs == j))[0])\n"
                     "        out.append(int(before[at]))\n"
                     "    return out"), EX1),
    Mutant("position_of_forward", "index the forward, count backwards in the slice before it",
           _versions("    return [sum(k == 'B' for k, _ in order[: order.index(('F', j))]) "
                     "for order in stage_orders]"), EX1),
    Mutant("numpy_memory", "a numpy array", {"memory_answer": (
        "version_gib = (6 - np.arange(6)) * np.array(params_per_stage) * 2 / 2**30\n")}, EX2),
    Mutant("rounded_memory", "three significant digits", {"memory_answer": (
        "version_gib = [14.5, 7.92, 6.33, 4.75, 3.17, 2.70]\n")}, EX2),
    Mutant("numpy_int_version", "a numpy integer", _two_bw("np.int64(max(j // m - 1, 0))"), EX3),
    Mutant("batch_then_clamp", "batch index, then one update behind from batch 1 on",
           _two_bw("(j // m - 1) if j >= m else 0"), EX3),
    Mutant("version_of_batch_two_before", "section 3 in words: batches 0 and 1 on version 0, "
           "then the version batch b - 2's update made (b - 2 + 1)",
           _two_bw("0 if j // m < 2 else (j // m - 2) + 1"), EX3),
    Mutant("own_delayed_loop", "the update written out, w(t < 0) = w(0)", _tuned(
        "def own_run(nu, delay, steps):\n"
        "    w = np.zeros((steps + 1, len(w_start)))\n"
        "    w[0] = w_start\n"
        "    for t in range(steps):\n"
        "        w[t + 1] = w[t] - nu * hessian @ w[max(t - delay, 0)]\n"
        "    return w\n\n\n"
        + _fewest(run="own_run(nu, delay, max_iterations)",
                  measure="np.einsum('ti,ij,tj->t', runs, hessian, runs) / "
                          "(w_start @ hessian @ w_start)")), EX4),
    Mutant("list_of_keys", "a list", _set('["zb_h1", "gpipe", "interleaved_flush", "1f1b_flush"]'), EX5),
    Mutant("frozenset_of_keys", "a frozenset", _set(f"frozenset({FLUSHED})"), EX5),
]  # fmt: skip
