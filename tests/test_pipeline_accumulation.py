"""course_lib.pipeline.accumulation (pipe06): token-weighted accumulation equals the full-batch
gradient, every other rule equals its per-token weighting (brute force over tokens), the error of
the mean of means is its covariance form, batch norm's accumulated gradient differs from the
full batch while layer norm's does not (hand-written backward against finite differences), and
the step time against m equals the simulator's."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course_lib.pipeline import gpipe, one_f_one_b, simulate
from course_lib.pipeline.accumulation import (
    ACCUMULATION_RULES,
    BOS,
    NORMS,
    Microbatch,
    accumulate_gradients,
    accumulated_norm_gradient,
    best_num_microbatches,
    bigram_weights,
    continuous_best_num_microbatches,
    full_batch_gradient,
    full_batch_loss,
    init_norm_mlp,
    kernel_efficiency,
    markov_chain,
    mean_of_means_error,
    microbatch_gradient,
    microbatch_loss,
    microbatch_time,
    norm_gradient_errors,
    norm_mlp_gradient,
    norm_mlp_loss,
    normalize,
    pack_microbatches,
    sample_sequences,
    step_times,
    token_losses,
)

V = 12


def _batch(seed: int, num_sequences: int = 14, sizes=3, min_length: int = 1, max_length: int = 30):
    chain = markov_chain(V, seed=seed)
    weights = bigram_weights(chain) + np.random.default_rng(seed).normal(0, 0.3, size=(V, V))
    seqs = sample_sequences(num_sequences, chain, min_length, max_length, seed=seed + 1)
    return weights, pack_microbatches(seqs, sizes)


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


# --- data ----------------------------------------------------------------------------------


def test_markov_chain_rows_are_distributions_and_bos_is_uniform_and_never_next():
    chain = markov_chain(V, seed=4)
    assert np.allclose(chain.sum(axis=1), 1.0)
    assert np.allclose(chain[BOS, 1:], 1 / (V - 1))
    assert (chain[:, BOS] == 0).all()


def test_sampled_sequences_have_their_lengths_and_follow_the_chain():
    """Lengths lie in the bounds; first tokens are roughly uniform and transitions follow the
    chain (empirical frequencies within 0.03 over 30,000 tokens)."""
    chain = markov_chain(6, seed=1)
    seqs = sample_sequences(1000, chain, 20, 40, seed=2)
    assert all(20 <= len(s) <= 40 for s in seqs)
    assert all(((s >= 1) & (s < 6)).all() for s in seqs)
    counts = np.zeros((6, 6))
    for s in seqs:
        prev = np.concatenate([[BOS], s[:-1]])
        np.add.at(counts, (prev, s), 1)
    freq = counts / counts.sum(axis=1, keepdims=True)
    assert np.abs(freq - chain).max() < 0.03


def test_pack_pads_to_the_longest_and_shifts_inputs():
    seqs = [np.array([3, 4, 5]), np.array([7]), np.array([1, 2])]
    (a, b) = pack_microbatches(seqs, [2, 1])
    assert a.inputs.tolist() == [[BOS, 3, 4], [BOS, BOS, BOS]]
    assert a.targets.tolist() == [[3, 4, 5], [7, BOS, BOS]]
    assert a.mask.tolist() == [[True, True, True], [True, False, False]]
    assert (a.num_tokens, a.padded_tokens, a.num_sequences) == (4, 6, 2)
    assert b.inputs.tolist() == [[BOS, 1]] and b.num_tokens == 2
    assert [mb.num_sequences for mb in pack_microbatches(seqs * 3, 4)] == [4, 4, 1]


# --- the bigram model ------------------------------------------------------------------------


def test_token_losses_are_the_cross_entropy_of_each_target():
    weights, mbs = _batch(0)
    for mb in mbs:
        got = token_losses(weights, mb)
        for r, t in zip(*np.nonzero(mb.mask), strict=True):
            logits = weights[mb.inputs[r, t]]
            expected = np.log(np.exp(logits).sum()) - logits[mb.targets[r, t]]
            assert got[r, t] == pytest.approx(expected, rel=1e-12)
        assert (got[~mb.mask] == 0).all()


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_microbatch_gradient_matches_finite_differences(reduction):
    weights, mbs = _batch(1)
    mb = mbs[0]
    grad = microbatch_gradient(weights, mb, reduction)
    eps = 1e-6
    for i, j in [(0, 3), (2, 5), (7, 1), (11, 11), (4, 4)]:
        up, down = weights.copy(), weights.copy()
        up[i, j] += eps
        down[i, j] -= eps
        numeric = (microbatch_loss(up, mb, reduction) - microbatch_loss(down, mb, reduction)) / (
            2 * eps
        )
        assert grad[i, j] == pytest.approx(numeric, rel=1e-6, abs=1e-9)


def test_full_batch_gradient_matches_finite_differences_of_the_token_mean():
    weights, mbs = _batch(2)
    grad = full_batch_gradient(weights, mbs)
    eps = 1e-6
    for i, j in [(0, 1), (3, 3), (5, 9), (10, 2)]:
        up, down = weights.copy(), weights.copy()
        up[i, j] += eps
        down[i, j] -= eps
        numeric = (full_batch_loss(up, mbs) - full_batch_loss(down, mbs)) / (2 * eps)
        assert grad[i, j] == pytest.approx(numeric, rel=1e-6, abs=1e-9)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    sizes=st.lists(st.integers(1, 5), min_size=1, max_size=6),
    max_length=st.integers(1, 25),
)
def test_token_weighted_accumulation_equals_the_full_batch_gradient(seed, sizes, max_length):
    """Σ_k (n_k/N)·g_k = ∇ (1/N) Σ_i ℓ_i to float rounding, for any packing: unequal
    sequence counts, one-token sequences, padding."""
    weights, mbs = _batch(seed, num_sequences=sum(sizes), sizes=sizes, max_length=max_length)
    grads = [microbatch_gradient(weights, mb) for mb in mbs]
    got = accumulate_gradients(grads, [mb.mask for mb in mbs], "tokens")
    assert np.allclose(got, full_batch_gradient(weights, mbs), rtol=1e-12, atol=1e-15)
    summed = sum(microbatch_gradient(weights, mb, "sum") for mb in mbs)
    assert np.allclose(summed / sum(mb.num_tokens for mb in mbs), got, rtol=1e-12, atol=1e-15)


def _token_weights(mbs, rule: str) -> list[float]:
    """Weight of every real token in the accumulated objective Σ_i w_i ℓ_i, by the rule's
    definition (written per token, not through accumulate_gradients)."""
    k = len(mbs)
    n = [mb.num_tokens for mb in mbs]
    total, seqs = sum(n), sum(mb.num_sequences for mb in mbs)
    padded = sum(mb.padded_tokens for mb in mbs)
    per_microbatch = {
        "tokens": lambda mb: 1 / total,
        "mean_of_means": lambda mb: 1 / (k * mb.num_tokens),
        "samples": lambda mb: mb.num_sequences / (seqs * mb.num_tokens),
        "padded": lambda mb: mb.padded_tokens / (padded * mb.num_tokens),
        "sum_of_means": lambda mb: 1 / mb.num_tokens,
        "token_sum": lambda mb: 1.0,
        "microbatch_count": lambda mb: 1 / k,
        "sample_count": lambda mb: 1 / seqs,
        "global_tokens_twice": lambda mb: 1 / total**2,
    }[rule]
    return [per_microbatch(mb) for mb in mbs for _ in range(mb.num_tokens)]


@pytest.mark.parametrize("rule", ACCUMULATION_RULES)
def test_every_rule_is_its_per_token_weighting(rule):
    """Brute force: the gradient of Σ_i w_i ℓ_i summed token by token (one-token microbatches)
    equals accumulate_gradients under the rule; only "tokens" equals the full-batch gradient."""
    weights, mbs = _batch(5, num_sequences=11, sizes=[1, 4, 2, 4])
    per_token = []
    for mb in mbs:
        for r, t in zip(*np.nonzero(mb.mask), strict=True):
            one = np.zeros_like(mb.mask)
            one[r, t] = True
            per_token.append(microbatch_gradient(weights, Microbatch(mb.inputs, mb.targets, one)))
    brute = sum(w * g for w, g in zip(_token_weights(mbs, rule), per_token, strict=True))
    grads = [microbatch_gradient(weights, mb) for mb in mbs]
    got = accumulate_gradients(grads, [mb.mask for mb in mbs], rule)
    assert np.allclose(got, brute, rtol=1e-10, atol=1e-14)
    full = full_batch_gradient(weights, mbs)
    if rule == "tokens":
        assert _rel(got, full) < 1e-12
    else:
        assert _rel(got, full) > 1e-3


def test_masks_may_be_zero_one_integers():
    weights, mbs = _batch(6)
    grads = [microbatch_gradient(weights, mb) for mb in mbs]
    ints = [mb.mask.astype(int) for mb in mbs]
    assert np.array_equal(
        accumulate_gradients(grads, ints), accumulate_gradients(grads, [mb.mask for mb in mbs])
    )


# --- the error of the mean of means ------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    data=st.lists(
        st.tuples(st.integers(1, 500), st.floats(0.0, 10.0, allow_nan=False)),
        min_size=1,
        max_size=12,
    )
)
def test_mean_of_means_error_is_the_covariance_form(data):
    counts = [n for n, _ in data]
    losses = [loss for _, loss in data]
    direct = np.mean(losses) - np.average(losses, weights=counts)
    assert mean_of_means_error(losses, counts) == pytest.approx(direct, rel=1e-9, abs=1e-12)


def test_mean_of_means_error_is_zero_for_equal_counts_and_signed():
    assert mean_of_means_error([1.0, 2.0, 5.0], [7, 7, 7]) == pytest.approx(0.0, abs=1e-15)
    assert mean_of_means_error([3.0, 1.0], [10, 90]) > 0  # short microbatch, higher loss
    assert mean_of_means_error([1.0, 3.0], [10, 90]) < 0


def test_the_covariance_form_holds_for_the_gradients_element_by_element():
    """mean of means - token-weighted = -(K/N)·cov_k(n_k, g_k), entry by entry, on the model."""
    weights, mbs = _batch(7, num_sequences=20, sizes=[2, 5, 3, 6, 4])
    grads = np.stack([microbatch_gradient(weights, mb) for mb in mbs])
    masks = [mb.mask for mb in mbs]
    n = np.array([mb.num_tokens for mb in mbs], dtype=float)
    gap = accumulate_gradients(list(grads), masks, "mean_of_means") - accumulate_gradients(
        list(grads), masks, "tokens"
    )
    cov = np.tensordot(n - n.mean(), grads - grads.mean(axis=0), axes=1) / len(n)
    assert np.allclose(gap, -len(n) / n.sum() * cov, rtol=1e-10, atol=1e-15)
    losses = [microbatch_loss(weights, mb) for mb in mbs]
    loss_gap = np.mean(losses) - full_batch_loss(weights, mbs)
    assert mean_of_means_error(losses, n.astype(int)) == pytest.approx(loss_gap, rel=1e-10)


def test_short_sequences_have_the_higher_loss_so_the_mean_of_means_is_too_high():
    """The synthetic text's first token is uniform (after BOS), the rest peaked: one-sequence
    microbatches of short sequences have a higher mean loss, and the error is positive."""
    chain = markov_chain(16, seed=0)
    weights = bigram_weights(chain)
    seqs = sample_sequences(200, chain, 2, 60, seed=1)
    mbs = pack_microbatches(seqs, 1)
    n = np.array([mb.num_tokens for mb in mbs])
    losses = np.array([microbatch_loss(weights, mb) for mb in mbs])
    assert np.corrcoef(n, losses)[0, 1] < -0.3
    assert mean_of_means_error(losses, n) > 0


# --- batch-dependent ops ------------------------------------------------------------------


def _norm_data(n: int = 24, seed: int = 0):
    g = np.random.default_rng(seed)
    x = g.normal(size=(n, 5)) * [1.0, 2.0, 0.5, 3.0, 1.0] + g.normal(size=5)
    return init_norm_mlp(5, 7, 3, seed=seed), x, g.normal(size=(n, 3))


@pytest.mark.parametrize("norm", NORMS)
def test_norm_mlp_gradient_matches_finite_differences(norm):
    params, x, y = _norm_data(9)
    grad = norm_mlp_gradient(params, x, y, norm)
    eps = 1e-6
    for name, index in [
        ("W1", (0, 0)),
        ("W1", (3, 5)),
        ("W1", (4, 2)),
        ("W2", (1, 2)),
        ("W2", (6, 0)),
    ]:
        up = {k: v.copy() for k, v in params.items()}
        down = {k: v.copy() for k, v in params.items()}
        up[name][index] += eps
        down[name][index] -= eps
        numeric = (norm_mlp_loss(up, x, y, norm) - norm_mlp_loss(down, x, y, norm)) / (2 * eps)
        assert grad[name][index] == pytest.approx(numeric, rel=1e-5, abs=1e-9)


@pytest.mark.parametrize("norm", ["layer", "none"])
@pytest.mark.parametrize("size", [1, 2, 5, 8, 24])
def test_per_sample_ops_accumulate_to_the_full_batch_gradient(norm, size):
    params, x, y = _norm_data()
    acc = accumulated_norm_gradient(params, x, y, size, norm)
    full = norm_mlp_gradient(params, x, y, norm)
    for k in full:
        assert np.allclose(acc[k], full[k], rtol=1e-10, atol=1e-14)


def test_batch_norm_changes_the_gradient_with_the_microbatch_size():
    """Sample-weighted accumulation of batch norm's gradient differs from the full batch, more
    for smaller microbatches; at the full size it is the full batch."""
    params, x, y = _norm_data()
    errors = norm_gradient_errors(params, x, y, [2, 4, 8, 24], "batch")
    assert errors[-1] < 1e-14
    assert (errors[:-1] > 1e-2).all()
    assert errors[0] > errors[1] > errors[2]


def test_batch_norm_output_of_a_sample_depends_on_its_microbatch():
    params, x, _ = _norm_data()
    h = x @ params["W1"]
    alone = normalize(h[:4], axis=0)[0][0]
    together = normalize(h[:12], axis=0)[0][0]
    assert np.abs(alone - together).max() > 0.05
    assert np.allclose(normalize(h[:4], axis=1)[0][0], normalize(h[:12], axis=1)[0][0])


# --- step time against the number of microbatches ----------------------------------------


@pytest.mark.parametrize("p", [1, 2, 4, 7])
@pytest.mark.parametrize("batch", [8, 12, 32])
def test_step_times_equal_the_simulator(p, batch):
    """(m + p - 1)·t(B/m) = simulate(one_f_one_b / gpipe(p, m), t/3, 2t/3).makespan."""
    table = {b: microbatch_time(b, 1.5e-3, 0.5e-3) for b in range(1, batch + 1)}
    times = step_times(batch, p, table)
    assert sorted(times) == [batch // b for b in sorted(table, reverse=True) if batch % b == 0]
    for m, t in times.items():
        per = table[batch // m]
        for make in (one_f_one_b, gpipe):
            run = simulate(make(p, m), per / 3, 2 * per / 3)
            assert t == pytest.approx(run.makespan, rel=1e-12)


def test_best_num_microbatches_is_the_brute_force_minimum_and_skips_non_divisors():
    table = {1: 10.0, 2: 5.5, 3: 2.0, 4: 3.2, 8: 6.0}
    times = {m: (m + 3) * table[12 // m] for m in (12, 6, 4, 3)}  # b = 1, 2, 3, 4
    assert best_num_microbatches(12, 4, table) == min(times, key=times.get)
    assert best_num_microbatches(16, 4, table) == min(
        (m for m in (16, 8, 4, 2)), key=lambda m: (m + 3) * table[16 // m]
    )


@pytest.mark.parametrize("p", [2, 4, 8, 16])
@pytest.mark.parametrize("t0", [0.1e-3, 1.5e-3, 6e-3])
def test_the_best_divisor_neighbours_the_continuous_optimum(p, t0):
    """T(m) = (m + p - 1)(t_0 + B·t_1/m) is convex in m, so the best divisor of B is the
    largest divisor <= m* or the smallest >= m*; m* minimises the continuous T."""
    batch, t1 = 256, 0.5e-3
    table = {b: microbatch_time(b, t0, t1) for b in (1, 2, 4, 8, 16, 32, 64, 128, 256)}
    star = continuous_best_num_microbatches(batch, p, t0, t1)

    def total(m):
        return (m + p - 1) * (t0 + batch * t1 / m)

    assert total(star) <= min(total(star * 0.999), total(star * 1.001))
    divisors = sorted(batch // b for b in table)
    below = max((m for m in divisors if m <= star), default=divisors[0])
    above = min((m for m in divisors if m >= star), default=divisors[-1])
    assert best_num_microbatches(batch, p, table) in {below, above}


def test_kernel_efficiency_is_throughput_relative_to_peak():
    assert kernel_efficiency(1, 0.3, 1.0) == pytest.approx(1 / 1.3)
    assert kernel_efficiency(16, 0.3, 1.0) / kernel_efficiency(1, 0.3, 1.0) == pytest.approx(
        16 * 1.3 / 16.3
    )
    assert kernel_efficiency(4, 0.0, 1.0) == 1.0
    assert math.isinf(continuous_best_num_microbatches(64, 4, 0.0, 1.0))


# --- bad input ------------------------------------------------------------------------------


def test_a_microbatch_of_zero_tokens_is_refused_by_name():
    weights, mbs = _batch(8)
    empty = Microbatch(mbs[0].inputs, mbs[0].targets, np.zeros_like(mbs[0].mask))
    with pytest.raises(ValueError, match="microbatch has zero tokens"):
        microbatch_gradient(weights, empty)
    with pytest.raises(ValueError, match=r"microbatches\[1\] has zero tokens"):
        full_batch_gradient(weights, [mbs[0], empty])
    grads = [microbatch_gradient(weights, mb) for mb in mbs[:2]]
    with pytest.raises(ValueError, match=r"masks\[1\] has zero tokens"):
        accumulate_gradients(grads, [mbs[0].mask, empty.mask])
    with pytest.raises(ValueError, match=r"token_counts\[2\] = 0"):
        mean_of_means_error([1.0, 2.0, 3.0], [4, 5, 0])


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda w, mbs: accumulate_gradients([], []), TypeError, "masks"),
        (lambda w, mbs: accumulate_gradients([w], [mbs[0].mask], "median"), ValueError, "rule"),
        (lambda w, mbs: accumulate_gradients([w, w], [mbs[0].mask], "tokens"), ValueError, "2"),
        (lambda w, mbs: accumulate_gradients([w], [mbs[0].mask * 2]), ValueError, "masks"),
        (lambda w, mbs: microbatch_gradient(w, mbs[0], "max"), ValueError, "reduction"),
        (lambda w, mbs: microbatch_gradient(w[:3], mbs[0]), ValueError, "weights"),
        (lambda w, mbs: microbatch_gradient(w[:5, :5], mbs[0]), ValueError, "outside"),
        (lambda w, mbs: microbatch_gradient(w, mbs[0].mask), TypeError, "Microbatch"),
        (lambda w, mbs: pack_microbatches([np.array([1]), np.array([])], 1), ValueError, r"\[1\]"),
        (lambda w, mbs: pack_microbatches([np.array([1])] * 3, [1, 1]), ValueError, "sums to 2"),
        (lambda w, mbs: mean_of_means_error([1.0], [2, 3]), ValueError, "one length"),
        (lambda w, mbs: mean_of_means_error([1.0, 2.0], [2.5, 3.0]), TypeError, "integers"),
        (lambda w, mbs: step_times(10, 4, {3: 1.0, 4: 1.0}), ValueError, "divides"),
        (lambda w, mbs: step_times(10, 4, {2: -1.0}), ValueError, r"microbatch_times\[2\]"),
        (lambda w, mbs: best_num_microbatches(0, 4, {1: 1.0}), ValueError, "batch_size"),
        (lambda w, mbs: Microbatch(np.zeros((2, 3)), np.zeros((2, 3)), np.ones((2, 4))), ValueError, "one shape"),
    ],
)  # fmt: skip
def test_bad_input_is_named(call, error, match):
    weights, mbs = _batch(9)
    with pytest.raises(error, match=match):
        call(weights, mbs)


def test_batch_norm_of_one_sample_is_refused():
    params, x, y = _norm_data()
    with pytest.raises(ValueError, match="at least 2 samples"):
        norm_mlp_gradient(params, x[:1], y[:1], "batch")
    with pytest.raises(ValueError, match="norm"):
        norm_mlp_gradient(params, x, y, "group")
    assert accumulated_norm_gradient(params, x, y, 1, "layer")["W1"].shape == (5, 7)


def test_centring_on_the_microbatch_mean_changes_the_accumulated_gradient():
    """Section 3's rule: a linear batch statistic changes meaning too. A linear model on inputs
    centred on their microbatch mean, squared loss, 64 samples: the sample-weighted accumulated
    gradient misses the full batch's by about half at b = 2, not at all at b = 64."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 8)) * rng.uniform(0.2, 3.0, 8) + rng.normal(size=8)
    t, w = rng.normal(size=(64, 4)), rng.normal(size=(8, 4))

    def summed_gradient(xs, ts):
        c = xs - xs.mean(axis=0)
        return 2 * c.T @ (c @ w - ts)

    full = summed_gradient(x, t) / 64
    errors = {}
    for b in (2, 8, 64):
        acc = sum(summed_gradient(x[i : i + b], t[i : i + b]) for i in range(0, 64, b)) / 64
        errors[b] = np.linalg.norm(acc - full) / np.linalg.norm(full)
    assert 0.4 < errors[2] < 0.7
    assert errors[64] < 1e-12 < errors[8] < errors[2]
