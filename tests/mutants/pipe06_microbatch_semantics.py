"""Plausible wrong answers to pipe06_microbatch_semantics' exercises; each must lose points.

``RIGHT_ANSWERS`` are answers right by another route (np.average, a loop, the covariance form
with the population covariance, a list for a set, a numpy integer); each keeps full marks on the
grade cells it names.
"""

from __future__ import annotations

from tests.mutants import Mutant

BOTH = ("accumulate_unpadded_tests", "accumulate_padded_tests")
PADDED = ("accumulate_padded_tests",)


def _accumulate(body: str, prelude: str = "") -> dict[str, str]:
    """The Exercise 1 solution cell: g (m, ...) stacked gradients and n real tokens, then body."""
    return {
        "accumulate_answer": (
            f"{prelude}def accumulate(mean_gradients, masks):\n"
            '    """The gradient of the batch\'s mean token loss."""\n'
            "    g = np.stack([np.asarray(x, dtype=float) for x in mean_gradients])\n"
            "    n = np.array([np.count_nonzero(mask) for mask in masks], dtype=float)\n"
            "    padded = np.array([np.size(mask) for mask in masks], dtype=float)\n"
            "    rows = np.array([np.shape(mask)[0] for mask in masks], dtype=float)\n"
            f"{body}\n"
        )
    }


def _gap(body: str, prelude: str = "") -> dict[str, str]:
    """The Exercise 2 solution cell: losses, counts n and the token mean, then body."""
    return {
        "gap_answer": (
            f"{prelude}def mean_of_means_gap(mean_losses, token_counts):\n"
            '    """Mean of means minus the token mean."""\n'
            "    losses = np.asarray(mean_losses, dtype=float)\n"
            "    n = np.asarray(token_counts, dtype=float)\n"
            "    token_mean = (n * losses).sum() / n.sum()\n"
            f"{body}\n"
        )
    }


def _choice(value: str) -> dict[str, str]:
    return {"semantics_answer": f"changes_meaning = {value}\n"}


def _fastest(body: str, prelude: str = "") -> dict[str, str]:
    """The Exercise 4 solution cell: B, p, peak and the sizes that divide B, then body."""
    return {
        "fastest_answer": (
            f"{prelude}def fastest_num_microbatches(batch_size, num_stages, efficiency, "
            "peak_sample_time):\n"
            '    """The m with the least step time."""\n'
            "    B, p, peak = batch_size, num_stages, peak_sample_time\n"
            "    sizes = {b: e for b, e in efficiency.items() if B % b == 0}\n"
            f"{body}\n"
        )
    }


def _argmin_over(cost: str, key: str = "B // b", over: str = "sizes") -> str:
    """A body returning the key minimising ``cost`` (in b, e) over the table ``over``."""
    return f"    costs = {{{key}: {cost} for b, e in {over}.items()}}\n    return min(costs, key=costs.get)"


MUTANTS = [
    # Exercise 1: token-weighted accumulation.
    Mutant(
        name="mean_of_means",
        why="the plain mean of the microbatch mean gradients (the lesson's trap)",
        cells=_accumulate("    return g.mean(axis=0)"),
        grades=BOTH,
    ),
    Mutant(
        name="sum_of_means",
        why="the sum of the mean gradients, never normalised",
        cells=_accumulate("    return g.sum(axis=0)"),
        grades=BOTH,
    ),
    Mutant(
        name="token_sum_unnormalised",
        why="Σ n_k g_k: the token sum, not divided by N",
        cells=_accumulate("    return np.tensordot(n, g, axes=1)"),
        grades=BOTH,
    ),
    Mutant(
        name="divided_by_microbatch_count",
        why="Σ n_k g_k / m: normalised by the number of microbatches",
        cells=_accumulate("    return np.tensordot(n, g, axes=1) / len(n)"),
        grades=BOTH,
    ),
    Mutant(
        name="divided_by_sequence_count",
        why="Σ n_k g_k / S: normalised by the number of sequences (a per-sample objective)",
        cells=_accumulate("    return np.tensordot(n, g, axes=1) / rows.sum()"),
        grades=BOTH,
    ),
    Mutant(
        name="sequence_weighted",
        why="Σ (s_k/S) g_k: each microbatch weighted by its sequences, not its tokens",
        cells=_accumulate("    return np.tensordot(rows / rows.sum(), g, axes=1)"),
        grades=BOTH,
    ),
    Mutant(
        name="global_tokens_twice",
        why="Σ n_k g_k / N²: divided by the global token count twice",
        cells=_accumulate("    return np.tensordot(n, g, axes=1) / n.sum() ** 2"),
        grades=BOTH,
    ),
    Mutant(
        name="one_fewer_target_per_sequence",
        why="n_k − s_k: one token per sequence taken off the mask's count",
        cells=_accumulate("    return np.tensordot((n - rows) / (n - rows).sum(), g, axes=1)"),
        grades=BOTH,
    ),
    Mutant(
        name="padded_weights",
        why="weights by the padded size P_k: padding counted as tokens",
        cells=_accumulate("    return np.tensordot(padded / padded.sum(), g, axes=1)"),
        grades=PADDED,
    ),
    Mutant(
        name="padded_denominator",
        why="Σ n_k g_k / ΣP_k: the right numerator over the padded token count",
        cells=_accumulate("    return np.tensordot(n, g, axes=1) / padded.sum()"),
        grades=PADDED,
    ),
    Mutant(
        name="row_length_as_count",
        why="n_k = the mask's last dimension: the padded row length, not the real tokens",
        cells=_accumulate(
            "    lengths = np.array([np.shape(mask)[-1] for mask in masks], dtype=float)\n"
            "    return np.tensordot(lengths / lengths.sum(), g, axes=1)"
        ),
        grades=PADDED,
    ),
    Mutant(
        name="delegates_to_course_lib",
        why="course_lib's accumulate_gradients (the right value, delegated)",
        cells=_accumulate("    return accumulate_gradients(mean_gradients, masks, 'tokens')"),
        grades=BOTH,
    ),
    Mutant(
        name="delegates_through_the_module",
        why="course_lib.pipeline.accumulation.accumulate_gradients through the module",
        cells=_accumulate(
            "    return course_accumulation.accumulate_gradients(list(mean_gradients), list(masks))"
        ),
        grades=BOTH,
    ),
    Mutant(
        name="section_1_gradient",
        why="returns section 1's full-batch gradient whatever the input",
        cells=_accumulate("    return full_batch_gradient(weights, microbatches)"),
        grades=BOTH,
    ),
    # Exercise 2: the error of the mean of means.
    Mutant(
        name="gap_sign_reversed",
        why="the token mean minus the mean of means",
        cells=_gap("    return float(token_mean - losses.mean())"),
        grades=("gap_tests",),
    ),
    Mutant(
        name="gap_relative",
        why="the gap relative to the token mean",
        cells=_gap("    return float((losses.mean() - token_mean) / token_mean)"),
        grades=("gap_tests",),
    ),
    Mutant(
        name="gap_absolute",
        why="|gap|: the sign dropped (wrong where long microbatches have the higher loss)",
        cells=_gap("    return float(abs(losses.mean() - token_mean))"),
        grades=("gap_tests",),
    ),
    Mutant(
        name="gap_numpy_cov_ddof1",
        why="the covariance form with np.cov's default ddof=1 (the sample covariance)",
        cells=_gap("    return float(-len(n) / n.sum() * np.cov(n, losses)[0, 1])"),
        grades=("gap_tests",),
    ),
    Mutant(
        name="gap_without_m",
        why="-cov(n, L̄)/N: the factor m left out",
        cells=_gap(
            "    return float(-np.mean((n - n.mean()) * (losses - losses.mean())) / n.sum())"
        ),
        grades=("gap_tests",),
    ),
    Mutant(
        name="gap_against_the_median",
        why="the mean of means minus the median of the means",
        cells=_gap("    return float(losses.mean() - np.median(losses))"),
        grades=("gap_tests",),
    ),
    Mutant(
        name="gap_percent",
        why="the gap times 100",
        cells=_gap("    return float(100 * (losses.mean() - token_mean))"),
        grades=("gap_tests",),
    ),
    Mutant(
        name="gap_delegates",
        why="course_lib's mean_of_means_error (the right value, delegated)",
        cells=_gap(
            "    return course_accumulation.mean_of_means_error(mean_losses, list(token_counts))"
        ),
        grades=("gap_tests",),
    ),
    Mutant(
        name="gap_delegates_to_accumulate_gradients",
        why="the two rules of accumulate_gradients on one-entry 'gradients' (delegated)",
        cells=_gap(
            "    g = [np.array([x]) for x in losses]\n"
            "    m = [np.ones(int(k), bool) for k in n]\n"
            "    return float(accumulate_gradients(g, m, 'mean_of_means')[0]\n"
            "                 - accumulate_gradients(g, m, 'tokens')[0])"
        ),
        grades=("gap_tests",),
    ),
    Mutant(
        name="gap_both_unweighted",
        why="the mean of means minus ΣL̄_k/m: the token mean left unweighted (always 0)",
        cells=_gap("    return float(losses.mean() - losses.sum() / len(losses))"),
        grades=("gap_tests",),
    ),
    # Exercise 3: which operations change meaning.
    Mutant(
        name="batch_norm_unchanged",
        why="batch norm taken as unaffected (the lesson's own case)",
        cells=_choice('{"moe_balance_loss", "in_batch_negatives"}'),
        grades=("semantics_tests",),
    ),
    Mutant(
        name="only_batch_norm",
        why="only section 3's example; misses the other per-microbatch statistics",
        cells=_choice('{"batch_norm"}'),
        grades=("semantics_tests",),
    ),
    Mutant(
        name="batch_norm_and_balance_loss_only",
        why="in-batch negatives missed",
        cells=_choice('{"batch_norm", "moe_balance_loss"}'),
        grades=("semantics_tests",),
    ),
    Mutant(
        name="batch_norm_and_negatives_only",
        why="the per-microbatch balancing loss missed",
        cells=_choice('{"batch_norm", "in_batch_negatives"}'),
        grades=("semantics_tests",),
    ),
    Mutant(
        name="every_norm",
        why="layer norm counted with batch norm",
        cells=_choice('{"batch_norm", "layer_norm", "moe_balance_loss", "in_batch_negatives"}'),
        grades=("semantics_tests",),
    ),
    Mutant(
        name="dropout_too",
        why="dropout counted: its draws differ, its distribution per activation does not",
        cells=_choice('{"batch_norm", "dropout", "moe_balance_loss", "in_batch_negatives"}'),
        grades=("semantics_tests",),
    ),
    Mutant(
        name="attention_too",
        why="causal attention within a sequence counted",
        cells=_choice('{"batch_norm", "causal_attention", "in_batch_negatives"}'),
        grades=("semantics_tests",),
    ),
    Mutant(
        name="everything",
        why="every option",
        cells=_choice(
            '{"batch_norm", "layer_norm", "dropout", "causal_attention", "moe_balance_loss", '
            '"in_batch_negatives", "token_cross_entropy"}'
        ),
        grades=("semantics_tests",),
    ),
    Mutant(
        name="misspelt_option",
        why="an option spelled differently from the stated strings",
        cells=_choice('{"batchnorm", "moe_balance_loss", "in_batch_negatives"}'),
        grades=("semantics_tests",),
    ),
    # Exercise 4: the fastest number of microbatches.
    Mutant(
        name="most_microbatches",
        why="the smallest bubble: microbatches of the smallest size",
        cells=_fastest("    return B // min(sizes)"),
        grades=("fastest_tests",),
    ),
    Mutant(
        name="biggest_microbatch",
        why="the fastest kernels: one microbatch of the largest size",
        cells=_fastest("    return B // max(sizes)"),
        grades=("fastest_tests",),
    ),
    Mutant(
        name="bubble_ignored",
        why="minimises the compute m·t(b) alone",
        cells=_fastest(_argmin_over("B * peak / e")),
        grades=("fastest_tests",),
    ),
    Mutant(
        name="times_efficiency",
        why="t(b) = b·peak·E(b): multiplied by the efficiency",
        cells=_fastest(_argmin_over("(B // b + p - 1) * b * peak * e")),
        grades=("fastest_tests",),
    ),
    Mutant(
        name="returns_the_size",
        why="the microbatch size b, not the count m",
        cells=_fastest(_argmin_over("(B // b + p - 1) * b * peak / e", key="b")),
        grades=("fastest_tests",),
    ),
    Mutant(
        name="non_divisors_included",
        why="every tabulated size, with ceil(B/b) microbatches",
        cells=_fastest(
            _argmin_over("(-(-B // b) + p - 1) * b * peak / e", key="-(-B // b)", over="efficiency")
        ),
        grades=("fastest_tests",),
    ),
    Mutant(
        name="non_divisors_floored",
        why="every tabulated size, with floor(B/b) microbatches",
        cells=_fastest(
            _argmin_over("(B // b + p - 1) * b * peak / e", key="B // b", over="efficiency")
        ),
        grades=("fastest_tests",),
    ),
    Mutant(
        name="bubble_ignored_descending",
        why="minimises m·t(b) alone, scanning the sizes from the largest (ties go to larger b)",
        cells=_fastest(
            _argmin_over("B * peak / e", over="dict(sorted(sizes.items(), reverse=True))")
        ),
        grades=("fastest_tests",),
    ),
    Mutant(
        name="one_slot_too_many",
        why="(m + p)·t(b): an off-by-one in the bubble",
        cells=_fastest(_argmin_over("(B // b + p) * b * peak / e")),
        grades=("fastest_tests",),
    ),
    Mutant(
        name="time_without_the_size",
        why="t(b) = peak/E(b): the microbatch's b sequences forgotten",
        cells=_fastest(_argmin_over("(B // b + p - 1) * peak / e")),
        grades=("fastest_tests",),
    ),
    Mutant(
        name="closed_form_from_two_sizes",
        why="m* = sqrt(B(p - 1)t1/t0) with t0, t1 fitted to the two smallest sizes, rounded to "
        "the nearest dividing count",
        cells=_fastest(
            "    b1, b2 = sorted(sizes)[:2]\n"
            "    t1_, t2_ = b1 * peak / sizes[b1], b2 * peak / sizes[b2]\n"
            "    slope = (t2_ - t1_) / (b2 - b1)\n"
            "    fixed = max(t1_ - slope * b1, 1e-12)\n"
            "    star = (B * (p - 1) * slope / fixed) ** 0.5\n"
            "    return min((B // b for b in sizes), key=lambda m: abs(m - star))"
        ),
        grades=("fastest_tests",),
    ),
    Mutant(
        name="float_count",
        why="the right count as a float",
        cells=_fastest(
            "    costs = {B / b: (B / b + p - 1) * b * peak / e for b, e in sizes.items()}\n"
            "    return min(costs, key=costs.get)"
        ),
        grades=("fastest_tests",),
    ),
    Mutant(
        name="step_from_simulator",
        why="T(m) read off simulate(gpipe(p, m), t(b), 0) (right value, delegated)",
        cells=_fastest(
            "    costs = {B // b: simulate(gpipe(p, B // b), b * peak / e, 0.0).makespan\n"
            "             for b, e in sizes.items()}\n"
            "    return min(costs, key=costs.get)",
            prelude="from course_lib.pipeline import gpipe\n\n\n",
        ),
        grades=("fastest_tests",),
    ),
    Mutant(
        name="step_from_gpipe_makespan",
        why="T(m) from pipe08's gpipe_makespan with t(b) per stage (right value, delegated)",
        cells=_fastest(
            "    costs = {B // b: gpipe_makespan([b * peak / e] * p, [0.0] * p, B // b)\n"
            "             for b, e in sizes.items()}\n"
            "    return min(costs, key=costs.get)",
            prelude="from course_lib.pipeline.imbalance import gpipe_makespan\n\n\n",
        ),
        grades=("fastest_tests",),
    ),
    Mutant(
        name="step_from_fill_drain_makespan",
        why="T(m) from pipe02's fill_drain_makespan (right value, delegated)",
        cells=_fastest(
            "    costs = {B // b: fill_drain_makespan(p, B // b, b * peak / e, 0.0)\n"
            "             for b, e in sizes.items()}\n"
            "    return min(costs, key=costs.get)",
            prelude="from course_lib.pipeline import fill_drain_makespan\n\n\n",
        ),
        grades=("fastest_tests",),
    ),
    Mutant(
        name="step_from_interleaved_makespan",
        why="T(m) from pipe04's interleaved_makespan at v = 1 (right value, delegated)",
        cells=_fastest(
            "    costs = {B // b: interleaved_makespan(p, B // b, 1, b * peak / e, 0.0)\n"
            "             for b, e in sizes.items()}\n"
            "    return min(costs, key=costs.get)",
            prelude="from course_lib.pipeline.interleaving import interleaved_makespan\n\n\n",
        ),
        grades=("fastest_tests",),
    ),
    Mutant(
        name="delegates_to_course_lib",
        why="course_lib's best_num_microbatches on the table of times (right value, delegated)",
        cells=_fastest(
            "    times = {b: b * peak / e for b, e in efficiency.items()}\n"
            "    return course_accumulation.best_num_microbatches(B, p, times)"
        ),
        grades=("fastest_tests",),
    ),
]

RIGHT_ANSWERS = [
    Mutant(
        name="numpy_average",
        why="np.average with the token counts as weights",
        cells=_accumulate("    return np.average(g, axis=0, weights=n)"),
        grades=BOTH,
    ),
    Mutant(
        name="running_sum_then_divide",
        why="sum n_k·g_k in a loop, divide once by the mask's total",
        cells=_accumulate(
            "    total, tokens = 0.0, 0\n"
            "    for grad, mask in zip(mean_gradients, masks, strict=True):\n"
            "        count = int(np.asarray(mask).sum())\n"
            "        total = total + count * np.asarray(grad)\n"
            "        tokens += count\n"
            "    return total / tokens"
        ),
        grades=BOTH,
    ),
    Mutant(
        name="gap_population_covariance",
        why="the covariance form, -(m/N)·np.cov(..., bias=True)",
        cells=_gap("    return float(-len(n) / n.sum() * np.cov(n, losses, bias=True)[0, 1])"),
        grades=("gap_tests",),
    ),
    Mutant(
        name="gap_numpy_scalar",
        why="the difference of np.mean and np.average, a numpy.float64",
        cells=_gap("    return np.mean(losses) - np.average(losses, weights=n)"),
        grades=("gap_tests",),
    ),
    Mutant(
        name="choice_as_list",
        why="the right options as a list, in another order",
        cells=_choice('["in_batch_negatives", "batch_norm", "moe_balance_loss"]'),
        grades=("semantics_tests",),
    ),
    Mutant(
        name="choice_as_frozenset",
        why="the right options as a frozenset",
        cells=_choice('frozenset({"batch_norm", "moe_balance_loss", "in_batch_negatives"})'),
        grades=("semantics_tests",),
    ),
    Mutant(
        name="fastest_loop_over_counts",
        why="a loop over m = 1..B keeping the best, with throughput B / T",
        cells=_fastest(
            "    best, rate = None, 0.0\n"
            "    for m in range(1, B + 1):\n"
            "        b = B // m\n"
            "        if B % m or b not in sizes:\n"
            "            continue\n"
            "        r = B / ((m + p - 1) * b * peak / sizes[b])\n"
            "        if r > rate:\n"
            "            best, rate = m, r\n"
            "    return best"
        ),
        grades=("fastest_tests",),
    ),
    Mutant(
        name="fastest_numpy_argmin",
        why="numpy arrays and argmin, a numpy.int64",
        cells=_fastest(
            "    b = np.array(sorted(sizes))\n"
            "    e = np.array([sizes[k] for k in sorted(sizes)])\n"
            "    m = B // b\n"
            "    return m[np.argmin((m + p - 1) * b * peak / e)]"
        ),
        grades=("fastest_tests",),
    ),
]
