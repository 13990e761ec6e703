"""Tests for course_lib.flops: PaLM and Megatron FLOP formulas against explicit per-matmul counts,
the PaLM paper's published MFU, and MFU/HFU conventions (cost04)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from course_lib.flops import (
    hfu,
    megatron_flops_per_iteration,
    mfu,
    mfu_from_throughput,
    model_flops_per_token,
)
from course_lib.hardware import peak

# --- PaLM: 6N + 12·L·H·Q·T ----------------------------------------------------------------------


def palm_brute_force(layers, d_model, heads, head_dim, ff, vocab, seq, gated):
    """Count a decoder's training FLOPs per token matmul by matmul.

    Parameters: per layer Wq, Wk, Wv (d×HQ), Wo (HQ×d), the MLP (d×ff, ff×d, plus a gate d×ff
    for SwiGLU); a tied embedding (V×d) used once as the output projection. Each weight matrix
    does one multiply-add per element per token forward (2 FLOPs); attention adds, per layer and
    head, a dot product with each of the T keys and a weighted sum of T values (2·T·Q each).
    Training = forward + backward = 3 × forward."""
    mats = []
    for _ in range(layers):
        mats += [(d_model, heads * head_dim)] * 3 + [(heads * head_dim, d_model)]
        mats += [(d_model, ff), (ff, d_model)] + ([(d_model, ff)] if gated else [])
    mats.append((vocab, d_model))
    n_params = sum(r * c for r, c in mats)
    forward = sum(2 * r * c for r, c in mats)
    for _ in range(layers):
        for _ in range(heads):
            forward += 2 * seq * head_dim  # scores q·k_j for j = 1..T
            forward += 2 * seq * head_dim  # sum_j p_j v_j
    return n_params, 3 * forward


@given(
    st.integers(1, 6),
    st.integers(1, 8).map(lambda k: 16 * k),
    st.integers(1, 8),
    st.sampled_from([8, 16, 64]),
    st.integers(1, 512),
    st.integers(2, 1000),
    st.integers(1, 4096),
    st.booleans(),
)
def test_palm_formula_matches_matmul_count(layers, d_model, heads, head_dim, ff, vocab, seq, gated):
    """6N + 12·L·H·Q·T equals the per-matmul count for any decoder whose parameters are all
    matmul weights used once per token (PaLM has no biases; its embedding is tied)."""
    n, brute = palm_brute_force(layers, d_model, heads, head_dim, ff, vocab, seq, gated)
    assert model_flops_per_token(n, layers, heads, head_dim, seq) == brute


def test_palm_published_mfu():
    """PaLM 540B (Chowdhery et al. 2022): 540.35B parameters, 118 layers, 48 heads of dim 256,
    T = 2048, 238.3K tokens/s on 6144 TPU v4 chips at 275 TFLOP/s bf16 -> MFU 46.2 %."""
    fpt = model_flops_per_token(540.35e9, 118, 48, 256, 2048)
    u = mfu_from_throughput(238.3e3, fpt, 6144, peak("TPU v4", "bf16"))
    assert round(u, 3) == 0.462
    # the attention term is small but not negligible at T = 2048: about 1.1 %
    assert 12 * 118 * 48 * 256 * 2048 / fpt == pytest.approx(0.0109, abs=5e-4)


# --- Megatron: 72/96·B·s·l·h²·(...) ---------------------------------------------------------------


def megatron_brute_force(batch, seq, layers, hidden, vocab, heads, recompute):
    """Sum the forward matmuls of one iteration explicitly: QKV projections, scores QKᵀ and
    attention over values per head, output projection, MLP h -> 4h -> h, logit layer. Forward +
    backward = 3 × forward; full recomputation runs every layer's forward again (4×) but not the
    logit layer (3×)."""
    head_dim = hidden // heads
    layer = 0
    layer += 3 * 2 * batch * seq * hidden * hidden  # Q, K, V
    for _ in range(heads):
        layer += 2 * batch * seq * seq * head_dim  # scores
        layer += 2 * batch * seq * seq * head_dim  # attention over values
    layer += 2 * batch * seq * hidden * hidden  # output projection
    layer += 2 * batch * seq * hidden * (4 * hidden)  # MLP up
    layer += 2 * batch * seq * (4 * hidden) * hidden  # MLP down
    logits = 2 * batch * seq * hidden * vocab
    return layers * layer * (4 if recompute else 3) + 3 * logits


@given(
    st.integers(1, 64),
    st.integers(1, 4096),
    st.integers(1, 96),
    st.integers(1, 64).map(lambda k: 64 * k),
    st.integers(1, 200_000),
    st.sampled_from([1, 2, 4, 8, 16]),
    st.booleans(),
)
def test_megatron_formula_matches_matmul_count(batch, seq, layers, hidden, vocab, heads, recompute):
    """Both Megatron forms equal the explicit per-matmul count."""
    got = megatron_flops_per_iteration(batch, seq, layers, hidden, vocab, recompute=recompute)
    assert got == pytest.approx(
        megatron_brute_force(batch, seq, layers, hidden, vocab, heads, recompute), rel=1e-12
    )


@given(
    st.integers(1, 8),
    st.integers(1, 4096),
    st.integers(1, 64),
    st.integers(1, 64).map(lambda k: 64 * k),
    st.integers(1, 100_000),
)
def test_recomputation_adds_one_forward_of_the_layers(batch, seq, layers, hidden, vocab):
    """96 vs 72: recomputation adds exactly one forward of the transformer layers,
    24·B·s·l·h² + 4·B·s²·l·h; the logit term 6·B·s·h·V is the same in both."""
    with_rc = megatron_flops_per_iteration(batch, seq, layers, hidden, vocab, recompute=True)
    without = megatron_flops_per_iteration(batch, seq, layers, hidden, vocab, recompute=False)
    layer_fwd = 24 * batch * seq * layers * hidden**2 + 4 * batch * seq**2 * layers * hidden
    assert with_rc - without == pytest.approx(layer_fwd, rel=1e-12)


@given(
    st.integers(1, 8),
    st.integers(1, 4096),
    st.integers(1, 64),
    st.integers(1, 64).map(lambda k: 64 * k),
    st.integers(1, 100_000),
)
def test_megatron_without_recompute_equals_palm_per_token(batch, seq, layers, hidden, vocab):
    """With N = 12·l·h² + V·h (Megatron's matmul parameters) and H·Q = h, the recomputation-free
    Megatron count is PaLM's 6N + 12·L·H·Q·T per token times B·s tokens."""
    n = 12 * layers * hidden**2 + vocab * hidden
    palm = model_flops_per_token(n, layers, 1, hidden, seq) * batch * seq
    meg = megatron_flops_per_iteration(batch, seq, layers, hidden, vocab, recompute=False)
    assert meg == pytest.approx(palm, rel=1e-12)


# --- MFU / HFU -------------------------------------------------------------------------------------


@given(
    st.integers(1, 8),
    st.integers(128, 4096),
    st.integers(1, 96),
    st.integers(1, 64).map(lambda k: 128 * k),
    st.integers(1000, 100_000),
    st.floats(0.05, 0.95),
)
def test_hfu_at_least_mfu_under_recomputation(batch, seq, layers, hidden, vocab, load):
    """Same step time and peak: executed FLOPs (with recomputation) >= model FLOPs, so HFU >= MFU,
    and HFU/MFU is the ratio of the two counts (< 4/3)."""
    model = megatron_flops_per_iteration(batch, seq, layers, hidden, vocab, recompute=False)
    executed = megatron_flops_per_iteration(batch, seq, layers, hidden, vocab, recompute=True)
    step = 1.0
    p = executed / step / load  # a peak that makes HFU = load
    m, h = mfu(model / step, p), hfu(executed / step, p)
    assert h >= m
    assert h == pytest.approx(load)
    assert h / m == pytest.approx(executed / model)
    assert h / m < 4 / 3


def test_mfu_from_throughput_by_hand():
    """1e5 tokens/s × 6e9 FLOPs/token on 8 devices of 312e12 -> 0.2404."""
    assert mfu_from_throughput(1e5, 6e9, 8, 312e12) == pytest.approx(6e14 / (8 * 312e12))


def test_sparse_peak_halves_the_reported_mfu():
    """Quoting MFU against the 2:4-sparse peak understates it by 2x (here exactly, on A100)."""
    rate = 150e12
    dense, sparse = peak("A100 SXM 80GB", "bf16"), peak("A100 SXM 80GB", "bf16", sparse=True)
    assert mfu(rate, dense) == pytest.approx(2 * mfu(rate, sparse))


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: mfu(2e15, 1e15), r"utilization 2\.000 > 1"),
        (lambda: hfu(-1.0, 1e15), ">= 0"),
        (lambda: mfu(1e12, 0.0), "> 0"),
        (lambda: mfu_from_throughput(1e5, 6e9, 0, 312e12), "num_devices"),
        (lambda: model_flops_per_token(float("nan"), 1, 1, 1, 1), "finite"),
        (lambda: megatron_flops_per_iteration(1, 1, 1, 1, 1, recompute="yes"), "True or False"),
        (lambda: model_flops_per_token(1e9, 0, 1, 1, 1), "num_layers"),
    ],
)
def test_bad_inputs_raise(call, match):
    """Impossible utilizations and invalid arguments are ValueErrors with a clear message."""
    with pytest.raises(ValueError, match=match):
        call()


def test_disabling_the_counters_leaves_mfu_and_hfu_usable():
    """cost04 Exercises 1-2 forbid the FLOP counters; a learner's own count may still use hfu()."""
    import course_lib.flops as flops
    from course_lib.checks import DelegationError, forbid

    counters = [(flops, "model_flops_per_token"), (flops, "megatron_flops_per_iteration")]
    with forbid(*counters, exercise="Exercise 2"):
        assert hfu(1e12, 4e12) == 0.25
        assert mfu_from_throughput(1e5, 6e9, 8, 312e12) == pytest.approx(6e14 / (8 * 312e12))
        with pytest.raises(DelegationError):
            model_flops_per_token(1e9, 1, 1, 1, 1)
        with pytest.raises(DelegationError):
            flops.megatron_flops_per_iteration(1, 1, 1, 1, 1, recompute=True)
    assert model_flops_per_token(1e9, 1, 1, 1, 1) == 6e9 + 12
