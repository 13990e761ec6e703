"""Model FLOPs, hardware FLOPs, MFU and HFU with explicit conventions (cost04).

A FLOP count is a convention, so every function here states its own. Both published formulas count
only the matrix multiplications (2 FLOPs per multiply-add), ignore softmax, normalisation,
activation functions and the optimizer, and count the backward pass as twice the forward pass:

* **PaLM** (Chowdhery et al. 2022, "PaLM: Scaling Language Modeling with Pathways", appendix B):
  model FLOPs per token ``6N + 12·L·H·Q·T`` with N parameters, L layers, H heads, Q head dim, T
  sequence length. 6N: each parameter does one multiply-add per token forward (2N) and two
  backward (4N); 12·L·H·Q·T: the attention scores QKᵀ and the attention-weighted values, 2·T·H·Q
  FLOPs each per token and layer forward, times 3 for forward + backward (the full T×T score
  matrix, causal mask not discounted). Model FLOPs exclude rematerialisation, so MFU does not
  reward recomputing.
* **Megatron-LM** (Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU
  Clusters Using Megatron-LM", eq. 3; Korthikanti et al. 2022, "Reducing Activation Recomputation
  in Large Transformer Models"): per iteration of B sequences of length s through l layers of
  hidden size h with vocabulary V, a layer's forward matmuls are 24·B·s·h² (QKV 6, output
  projection 2, MLP h→4h→h 16) + 4·B·s²·h (scores and values), the logit layer 2·B·s·h·V. Forward +
  backward (3×) gives ``72·B·s·l·h²·(1 + s/(6h) + V/(12·l·h))``; full activation recomputation
  runs each layer's forward once more (4× for the layers, the logit layer stays 3×), giving
  ``96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h))``.

MFU = model FLOPs per second / peak; HFU = hardware (executed) FLOPs per second / peak, which
includes recomputation, so HFU ≥ MFU. The peak must be the dense peak of the training dtype
(course_lib.hardware.eligible_peak), and the time base (kernel time — the union of the kernels on
the compute streams, NCCL collectives excluded —, step time, or wall-clock with stalls and
restarts) must be stated alongside the number.
"""

from __future__ import annotations

import math

__all__ = [
    "hfu",
    "megatron_flops_per_iteration",
    "mfu",
    "mfu_from_throughput",
    "model_flops_per_token",
]


def _positive(value: float, name: str, *, allow_zero: bool = False) -> float:
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a number, got {value!r}")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {v}")
    if v < 0 or (v == 0 and not allow_zero):
        raise ValueError(f"{name} must be {'>= 0' if allow_zero else '> 0'}, got {v}")
    return v


def _size(value: float, name: str) -> float:
    """A count's input (> 0, finite). The FLOP counters' own check, apart from _positive, so that an
    exercise that disables the counters (checks.forbid, which also disables the private helpers
    they call) leaves mfu() and hfu() usable."""
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a number, got {value!r}")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {v}")
    if v <= 0:
        raise ValueError(f"{name} must be > 0, got {v}")
    return v


def model_flops_per_token(
    num_params: float, num_layers: int, num_heads: int, head_dim: int, seq_len: int
) -> float:
    """Model FLOPs per token 6N + 12·L·H·Q·T, training forward + backward (PaLM appendix B) (cost04)."""
    n = _size(num_params, "num_params")
    layers = _size(num_layers, "num_layers")
    heads = _size(num_heads, "num_heads")
    q = _size(head_dim, "head_dim")
    t = _size(seq_len, "seq_len")
    return 6.0 * n + 12.0 * layers * heads * q * t


def megatron_flops_per_iteration(
    batch_size: int,
    seq_len: int,
    num_layers: int,
    hidden_size: int,
    vocab_size: int,
    recompute: bool,
) -> float:
    """Matmul FLOPs per iteration: 96·B·s·l·h²·(1 + s/6h + V/16lh) with full recomputation, else 72·B·s·l·h²·(1 + s/6h + V/12lh) (cost04).

    Narayanan et al. 2021 eq. 3 (with recomputation) and its recomputation-free form (Korthikanti
    et al. 2022). ``recompute=False`` gives the model FLOPs (for MFU); ``recompute=True`` the
    FLOPs executed under full activation recomputation (for HFU).
    """
    if not isinstance(recompute, bool):
        raise ValueError(f"recompute must be True or False, got {recompute!r}")
    b = _size(batch_size, "batch_size")
    s = _size(seq_len, "seq_len")
    layers = _size(num_layers, "num_layers")
    h = _size(hidden_size, "hidden_size")
    v = _size(vocab_size, "vocab_size")
    if recompute:
        return 96.0 * b * s * layers * h**2 * (1.0 + s / (6.0 * h) + v / (16.0 * layers * h))
    return 72.0 * b * s * layers * h**2 * (1.0 + s / (6.0 * h) + v / (12.0 * layers * h))


def _utilization(rate: float, peak: float, what: str) -> float:
    r = _positive(rate, f"{what} FLOP/s", allow_zero=True)
    p = _positive(peak, "peak FLOP/s")
    u = r / p
    if u > 1.0:
        raise ValueError(
            f"{what} FLOP/s {r:.4g} exceed the peak {p:.4g}: utilization {u:.3f} > 1 — check units "
            "(per device vs per job, FLOPs vs TFLOPs) and the peak's dtype"
        )
    return u


def mfu(model_flops_per_second: float, peak: float) -> float:
    """Model FLOPs utilization = model FLOP/s (no recomputation counted) / dense peak FLOP/s (cost04)."""
    return _utilization(model_flops_per_second, peak, "model")


def hfu(hardware_flops_per_second: float, peak: float) -> float:
    """Hardware FLOPs utilization = executed FLOP/s (recomputation included) / dense peak FLOP/s (cost04)."""
    return _utilization(hardware_flops_per_second, peak, "hardware")


def mfu_from_throughput(
    tokens_per_second: float, flops_per_token: float, num_devices: int, peak_per_device: float
) -> float:
    """MFU = tokens/s × model FLOPs per token / (num_devices × peak per device) (cost04).

    ``tokens_per_second`` is the whole job's throughput. With executed (hardware) FLOPs per token
    the same ratio is the HFU.
    """
    tps = _positive(tokens_per_second, "tokens_per_second", allow_zero=True)
    fpt = _positive(flops_per_token, "flops_per_token")
    n = _positive(num_devices, "num_devices")
    p = _positive(peak_per_device, "peak_per_device")
    return mfu(tps * fpt, n * p)
