"""Microbatch size and gradient semantics: accumulation over variable-length microbatches, the
error of the mean of means, batch-dependent normalisation, and step time against the number of
microbatches (pipe06).

Numerics (real, run in numpy). A bigram language model: the logits of the token after token x
are row x of a V×V weight matrix W (a one-layer linear softmax model over one-hot inputs), and the
per-token loss is the cross-entropy ℓ = logsumexp(W[x]) - W[x, y] of the next token y. Sequences
are drawn from a synthetic Markov chain (:func:`sample_sequences`): the first token follows a
beginning-of-sequence token ``BOS`` = 0 and is uniform over the vocabulary, the later ones follow
peaked transitions, so a short sequence has a higher mean loss per token than a long one.
:func:`pack_microbatches` puts whole sequences into microbatches padded to their longest sequence,
with a mask that is False on padding. The objective is the mean loss over the real tokens of the
whole batch, L = (1/N) Σ_i ℓ_i, with N = Σ_k n_k tokens in K microbatches.

- :func:`microbatch_gradient` is what a framework gives per microbatch with a mean-reduced loss:
  the gradient of (1/n_k) Σ_{i in k} ℓ_i (or of the sum, ``reduction="sum"``);
- :func:`accumulate_gradients` combines per-microbatch mean gradients g_k under a rule:
  ``"tokens"`` Σ_k (n_k/N) g_k, the full-batch gradient; ``"mean_of_means"`` (1/K) Σ_k g_k;
  and the other mistakes of :data:`ACCUMULATION_RULES`;
- :func:`full_batch_gradient` computes the gradient of L from all real tokens at once (no
  microbatches): the tests check that token-weighted accumulation equals it to float rounding;
- :func:`mean_of_means_error`: the mean of per-microbatch means minus the token mean is
  -(K/N)·cov(n_k, L̄_k), the population covariance over microbatches of token counts and mean
  losses (exact, since both means are linear in the per-microbatch means; checked against the
  direct computation). The gradients obey the same identity, element by element.

Batch-dependent ops. :func:`norm_mlp_gradient` runs y = norm(x·W1)·W2 with a loss ½·mean over
samples of Σ(y - target)², where ``norm`` is batch normalisation (statistics over the samples of
the microbatch, per feature: training-mode ``torch.nn.BatchNorm1d`` without its affine part),
layer normalisation (statistics over the features of each sample) or nothing; the backward is
written by hand (checked against finite differences). :func:`accumulated_norm_gradient`
accumulates it over microbatches of a given size, weighting each by its samples: with layer
normalisation it equals the full-batch gradient at every size, with batch normalisation it does
not — the statistics, and so the function computed, depend on which samples share a microbatch
(GPipe, Huang et al. 2019, §2.2: statistics "computed over each micro-batch").

Step time. A microbatch of b sequences costs one stage t(b) = t_0 + b·t_1 forward + backward: a
fixed cost per microbatch (launches, small-kernel inefficiency) plus a cost per sequence, i.e. a
kernel efficiency E(b) = b·t_1 / t(b) = b / (b + t_0/t_1). The curve is synthetic: a form chosen
for its two parameters, not a fit. A balanced pipeline of p stages runs a batch of B sequences as
m = B/b microbatches in (m + p - 1)·t(B/m) (GPipe or 1F1B at zero latency; Narayanan et al. 2021,
§3.4, Eq. 1: (b'/b + p - 1)·(t_f(b) + t_b(b))); the tests check it against the simulator.
:func:`best_num_microbatches` takes any table of t(b) and searches the divisors of B; for the
linear t(b) the continuous optimum is m* = sqrt(B·(p - 1)·t_1/t_0)
(:func:`continuous_best_num_microbatches`), and the best divisor is a neighbour of it.

Argument checks shared by several routines are public (``check_*``): a grade cell that forbids one
routine disables the private helpers of this module it calls (course_lib.checks.forbid).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from course_lib.pipeline._validate import check_duration, check_int

__all__ = [
    "ACCUMULATION_RULES",
    "BOS",
    "NORMS",
    "Microbatch",
    "accumulate_gradients",
    "accumulated_norm_gradient",
    "bigram_weights",
    "check_masks",
    "check_microbatch",
    "check_weights",
    "continuous_best_num_microbatches",
    "full_batch_gradient",
    "full_batch_loss",
    "init_norm_mlp",
    "kernel_efficiency",
    "markov_chain",
    "mean_of_means_error",
    "microbatch_gradient",
    "microbatch_loss",
    "microbatch_time",
    "norm_gradient_errors",
    "norm_mlp_gradient",
    "norm_mlp_loss",
    "normalize",
    "normalize_backward",
    "pack_microbatches",
    "best_num_microbatches",
    "sample_sequences",
    "step_times",
    "token_losses",
]

BOS = 0
"""The beginning-of-sequence token: the input before a sequence's first token (never a target)."""

ACCUMULATION_RULES: tuple[str, ...] = (
    "tokens",
    "mean_of_means",
    "samples",
    "padded",
    "sum_of_means",
    "token_sum",
    "microbatch_count",
    "sample_count",
    "global_tokens_twice",
)
"""How :func:`accumulate_gradients` combines per-microbatch mean gradients g_k (n_k real tokens,
P_k tokens with padding, s_k sequences; N = Σ n_k, K microbatches, S = Σ s_k):

- ``tokens``: Σ (n_k/N) g_k — the gradient of the mean over the batch's tokens (right);
- ``mean_of_means``: (1/K) Σ g_k; ``samples``: Σ (s_k/S) g_k; ``padded``: Σ (P_k/Σ P) g_k;
- ``sum_of_means``: Σ g_k; ``token_sum``: Σ n_k g_k (never normalised);
- ``microbatch_count``: Σ n_k g_k / K; ``sample_count``: Σ n_k g_k / S;
- ``global_tokens_twice``: Σ n_k g_k / N² (each loss already divided by N, then again).
"""

NORMS: tuple[str, ...] = ("batch", "layer", "none")
"""Normalisations of :func:`norm_mlp_gradient`: over the microbatch's samples per feature
(batch norm), over each sample's features (layer norm), or none."""


# --------------------------------------------------------------------------------------------
# argument checks shared by several routines (public on purpose, see the module docstring)


def check_weights(weights: object) -> np.ndarray:
    """The bigram model's weights: a finite (V, V) float array with V >= 2."""
    w = np.asarray(weights, dtype=float)
    if w.ndim != 2 or w.shape[0] != w.shape[1] or w.shape[0] < 2:
        raise ValueError(f"weights must be a square (V, V) array with V >= 2, got shape {w.shape}")
    if not np.isfinite(w).all():
        raise ValueError("weights must be finite")
    return w


def check_microbatch(microbatch: object, vocab_size: int, name: str = "microbatch") -> Microbatch:
    """A :class:`Microbatch` whose tokens lie in [0, vocab_size) and that holds at least one token."""
    if not isinstance(microbatch, Microbatch):
        raise TypeError(f"{name} must be a Microbatch, got {type(microbatch).__name__}")
    for field in ("inputs", "targets"):
        a = getattr(microbatch, field)
        if a.size and (a.min() < 0 or a.max() >= vocab_size):
            raise ValueError(
                f"{name}.{field} holds tokens outside [0, {vocab_size}) for a {vocab_size}-token "
                "vocabulary"
            )
    if microbatch.num_tokens == 0:
        raise ValueError(
            f"{name} has zero tokens (its mask is all False): a mean over zero tokens is "
            "undefined; drop empty microbatches before accumulating"
        )
    return microbatch


def check_masks(masks: object, name: str = "masks") -> list[np.ndarray]:
    """A non-empty sequence of boolean (or 0/1) masks, each with at least one True entry."""
    if isinstance(masks, np.ndarray) or not isinstance(masks, Sequence) or len(masks) == 0:
        raise TypeError(f"{name} must be a non-empty list of arrays, one per microbatch")
    out = []
    for k, mask in enumerate(masks):
        a = np.asarray(mask)
        if a.dtype != bool:
            if a.dtype.kind not in "iu" or not np.isin(a, (0, 1)).all():
                raise ValueError(f"{name}[{k}] must be a boolean (or 0/1) mask, got {a.dtype}")
            a = a.astype(bool)
        if not a.any():
            raise ValueError(
                f"{name}[{k}] has zero tokens: a microbatch without a real token has no mean "
                "loss; drop it before accumulating"
            )
        out.append(a)
    return out


# --------------------------------------------------------------------------------------------
# data: a synthetic Markov chain, sequences and padded microbatches


@dataclass(frozen=True)
class Microbatch:
    """Whole sequences padded to the longest: ``inputs`` and ``targets`` (num_sequences, length)
    ints, ``mask`` True on real tokens (pipe06). ``targets[i, t]`` follows ``inputs[i, t]``."""

    inputs: np.ndarray
    targets: np.ndarray
    mask: np.ndarray

    def __post_init__(self) -> None:
        shapes = {np.shape(self.inputs), np.shape(self.targets), np.shape(self.mask)}
        if len(shapes) != 1 or len(np.shape(self.mask)) != 2:
            raise ValueError(
                "inputs, targets and mask must be 2-D arrays of one shape (num_sequences, "
                f"length), got {np.shape(self.inputs)}, {np.shape(self.targets)}, "
                f"{np.shape(self.mask)}"
            )
        object.__setattr__(self, "inputs", np.asarray(self.inputs, dtype=np.int64))
        object.__setattr__(self, "targets", np.asarray(self.targets, dtype=np.int64))
        object.__setattr__(self, "mask", np.asarray(self.mask, dtype=bool))

    @property
    def num_tokens(self) -> int:
        """Real (unpadded) tokens n_k: the positions whose loss counts."""
        return int(self.mask.sum())

    @property
    def padded_tokens(self) -> int:
        """Positions with padding, P_k = num_sequences × length."""
        return int(self.mask.size)

    @property
    def num_sequences(self) -> int:
        """Sequences (samples) s_k in the microbatch."""
        return int(self.mask.shape[0])


def markov_chain(vocab_size: int, seed: int = 0, concentration: float = 0.08) -> np.ndarray:
    """Transition matrix (V, V) of the synthetic text: row ``BOS`` uniform over tokens 1..V-1,
    the other rows drawn from a Dirichlet(concentration) over tokens 1..V-1 (peaked when
    concentration < 1); column ``BOS`` is zero (pipe06)."""
    v = check_int("vocab_size", vocab_size, minimum=3)
    alpha = check_duration("concentration", concentration)
    if alpha == 0:
        raise ValueError("concentration must be > 0")
    rng = np.random.default_rng(seed)
    chain = np.zeros((v, v))
    chain[BOS, 1:] = 1.0 / (v - 1)
    chain[1:, 1:] = rng.dirichlet(np.full(v - 1, alpha), size=v - 1)
    return chain


def sample_sequences(
    num_sequences: int,
    chain: np.ndarray,
    min_length: int,
    max_length: int,
    seed: int = 0,
) -> list[np.ndarray]:
    """``num_sequences`` token sequences from ``chain`` (started after ``BOS``), lengths uniform in
    [min_length, max_length] (pipe06)."""
    n = check_int("num_sequences", num_sequences)
    lo = check_int("min_length", min_length)
    hi = check_int("max_length", max_length)
    if hi < lo:
        raise ValueError(f"max_length must be >= min_length, got {hi} < {lo}")
    p = np.asarray(chain, dtype=float)
    if p.ndim != 2 or p.shape[0] != p.shape[1] or not np.allclose(p.sum(axis=1), 1.0):
        raise ValueError("chain must be a square matrix whose rows sum to 1")
    rng = np.random.default_rng(seed)
    cumulative = np.cumsum(p, axis=1)
    sequences = []
    for length in rng.integers(lo, hi + 1, size=n):
        seq = np.empty(int(length), dtype=np.int64)
        token = BOS
        for t in range(int(length)):
            token = int(np.searchsorted(cumulative[token], rng.random(), side="right"))
            token = min(token, p.shape[0] - 1)
            seq[t] = token
        sequences.append(seq)
    return sequences


def pack_microbatches(
    sequences: Sequence[np.ndarray], sequences_per_microbatch: int | Sequence[int]
) -> list[Microbatch]:
    """Consecutive sequences into microbatches padded to their longest (pipe06).

    ``sequences_per_microbatch`` is one int (the last microbatch takes the remainder) or a list of
    sizes summing to ``len(sequences)``. Inputs are ``BOS`` followed by the sequence minus its last
    token; padding is ``BOS`` in inputs and targets, with the mask False there.
    """
    seqs = list(sequences)
    if not seqs:
        raise ValueError("sequences must not be empty")
    for i, s in enumerate(seqs):
        if np.ndim(s) != 1 or len(s) == 0:
            raise ValueError(
                f"sequences[{i}] is empty or not 1-D: every sequence needs at least one token"
            )
    if isinstance(sequences_per_microbatch, Sequence):
        sizes = [check_int("sequences_per_microbatch[]", b) for b in sequences_per_microbatch]
        if sum(sizes) != len(seqs):
            raise ValueError(
                f"sequences_per_microbatch sums to {sum(sizes)}, but there are {len(seqs)} "
                "sequences"
            )
    else:
        b = check_int("sequences_per_microbatch", sequences_per_microbatch)
        sizes = [b] * (len(seqs) // b) + ([len(seqs) % b] if len(seqs) % b else [])
    microbatches, start = [], 0
    for size in sizes:
        group = seqs[start : start + size]
        start += size
        length = max(len(s) for s in group)
        inputs = np.full((size, length), BOS, dtype=np.int64)
        targets = np.full((size, length), BOS, dtype=np.int64)
        mask = np.zeros((size, length), dtype=bool)
        for r, s in enumerate(group):
            n = len(s)
            targets[r, :n] = s
            inputs[r, 1:n] = s[:-1]
            mask[r, :n] = True
        microbatches.append(Microbatch(inputs, targets, mask))
    return microbatches


def bigram_weights(chain: np.ndarray, smoothing: float = 0.05) -> np.ndarray:
    """A partly trained model of ``chain``: W = log(chain + smoothing), row by row (pipe06)."""
    p = np.asarray(chain, dtype=float)
    eps = check_duration("smoothing", smoothing)
    if eps == 0:
        raise ValueError("smoothing must be > 0 (log 0 is -inf)")
    return np.log(p + eps)


# --------------------------------------------------------------------------------------------
# the bigram model: losses and gradients


def token_losses(weights: np.ndarray, microbatch: Microbatch) -> np.ndarray:
    """Cross-entropy ℓ = logsumexp(W[x]) - W[x, y] at every position (num_sequences, length);
    padding positions hold 0.0 (pipe06)."""
    w = check_weights(weights)
    mb = check_microbatch(microbatch, w.shape[0])
    logits = w[mb.inputs]  # (n_seq, length, V)
    top = logits.max(axis=-1, keepdims=True)
    lse = np.log(np.exp(logits - top).sum(axis=-1)) + top[..., 0]
    picked = np.take_along_axis(logits, mb.targets[..., None], axis=-1)[..., 0]
    return np.where(mb.mask, lse - picked, 0.0)


def microbatch_loss(weights: np.ndarray, microbatch: Microbatch, reduction: str = "mean") -> float:
    """(1/n_k) Σ_{i in k} ℓ_i over the microbatch's real tokens, or the sum (pipe06)."""
    if reduction not in ("mean", "sum"):
        raise ValueError(f"reduction must be 'mean' or 'sum', got {reduction!r}")
    total = float(token_losses(weights, microbatch).sum())
    return total / microbatch.num_tokens if reduction == "mean" else total


def microbatch_gradient(
    weights: np.ndarray, microbatch: Microbatch, reduction: str = "mean"
) -> np.ndarray:
    """∂/∂W of the microbatch's mean (or summed) token loss, a (V, V) array (pipe06).

    For one token, row x of the gradient is softmax(W[x]) - onehot(y); padding contributes
    nothing. ``reduction="mean"`` is what a framework's mean-reduced cross-entropy gives.
    """
    if reduction not in ("mean", "sum"):
        raise ValueError(f"reduction must be 'mean' or 'sum', got {reduction!r}")
    w = check_weights(weights)
    mb = check_microbatch(microbatch, w.shape[0])
    x, y = mb.inputs[mb.mask], mb.targets[mb.mask]
    probs = np.exp(w[x] - w[x].max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    probs[np.arange(len(y)), y] -= 1.0
    grad = np.zeros_like(w)
    np.add.at(grad, x, probs)
    return grad / mb.num_tokens if reduction == "mean" else grad


def full_batch_loss(weights: np.ndarray, microbatches: Sequence[Microbatch]) -> float:
    """L = (1/N) Σ_i ℓ_i over every real token of every microbatch, computed at once (pipe06)."""
    w = check_weights(weights)
    mbs = [
        check_microbatch(mb, w.shape[0], f"microbatches[{k}]") for k, mb in enumerate(microbatches)
    ]
    if not mbs:
        raise ValueError("microbatches must not be empty")
    x = np.concatenate([mb.inputs[mb.mask] for mb in mbs])
    y = np.concatenate([mb.targets[mb.mask] for mb in mbs])
    logits = w[x]
    top = logits.max(axis=1)
    lse = np.log(np.exp(logits - top[:, None]).sum(axis=1)) + top
    return float(np.mean(lse - logits[np.arange(len(y)), y]))


def full_batch_gradient(weights: np.ndarray, microbatches: Sequence[Microbatch]) -> np.ndarray:
    """∂L/∂W for L the mean over every real token of the batch, from all tokens at once (pipe06).

    Independent of any accumulation: the (input, target) pairs of all microbatches are counted
    into a V×V table c, and the gradient is (Σ_x c[x]·softmax(W[x]) - c) / N row by row.
    """
    w = check_weights(weights)
    mbs = [
        check_microbatch(mb, w.shape[0], f"microbatches[{k}]") for k, mb in enumerate(microbatches)
    ]
    if not mbs:
        raise ValueError("microbatches must not be empty")
    v = w.shape[0]
    x = np.concatenate([mb.inputs[mb.mask] for mb in mbs])
    y = np.concatenate([mb.targets[mb.mask] for mb in mbs])
    counts = np.bincount(x * v + y, minlength=v * v).reshape(v, v).astype(float)
    probs = np.exp(w - w.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    return (counts.sum(axis=1, keepdims=True) * probs - counts) / len(x)


def accumulate_gradients(
    mean_gradients: Sequence[np.ndarray], masks: Sequence[np.ndarray], rule: str = "tokens"
) -> np.ndarray:
    """Combine per-microbatch mean gradients g_k under ``rule`` (:data:`ACCUMULATION_RULES`) (pipe06).

    ``masks[k]`` is microbatch k's mask (True on real tokens): n_k = its True entries, P_k its
    size, s_k its rows. ``"tokens"``, Σ_k (n_k/N)·g_k, is the gradient of the mean loss over the
    batch's N tokens; every other rule is a mistake, kept to measure it.
    """
    if rule not in ACCUMULATION_RULES:
        raise ValueError(f"unknown rule {rule!r}; known: {', '.join(ACCUMULATION_RULES)}")
    ms = check_masks(masks)
    if isinstance(mean_gradients, np.ndarray) and mean_gradients.ndim < 2:
        raise TypeError("mean_gradients must be a list of arrays, one per microbatch")
    grads = [np.asarray(g, dtype=float) for g in mean_gradients]
    if len(grads) != len(ms):
        raise ValueError(f"{len(grads)} mean_gradients for {len(ms)} masks: one each")
    if len({g.shape for g in grads}) != 1:
        raise ValueError("mean_gradients must all have one shape")
    g = np.stack(grads)
    n = np.array([m.sum() for m in ms], dtype=float)
    padded = np.array([m.size for m in ms], dtype=float)
    s = np.array([m.shape[0] if m.ndim else 1 for m in ms], dtype=float)
    k, total = len(ms), n.sum()
    weights = {
        "tokens": n / total,
        "mean_of_means": np.full(k, 1.0 / k),
        "samples": s / s.sum(),
        "padded": padded / padded.sum(),
        "sum_of_means": np.ones(k),
        "token_sum": n,
        "microbatch_count": n / k,
        "sample_count": n / s.sum(),
        "global_tokens_twice": n / total**2,
    }[rule]
    return np.tensordot(weights, g, axes=1)


def mean_of_means_error(mean_losses: Sequence[float], token_counts: Sequence[int]) -> float:
    """(1/K) Σ L̄_k - Σ (n_k/N) L̄_k = -(K/N)·cov(n_k, L̄_k), population covariance (pipe06).

    Both averages weight the same per-microbatch means, by 1/K and by n_k/N; the weights' excess
    n_k/N - 1/K sums to zero, so the difference is -Σ (n_k/N - 1/K)(L̄_k - mean L̄) = -K·cov(n/N, L̄).
    Zero when the counts are equal or the means do not vary with them; positive (the mean of
    means too high) when short microbatches have the higher mean loss.
    """
    losses = np.asarray(mean_losses, dtype=float)
    counts = np.asarray(token_counts)
    if losses.ndim != 1 or losses.shape != counts.shape or len(losses) == 0:
        raise ValueError(
            "mean_losses and token_counts must be 1-D of one length >= 1, got shapes "
            f"{losses.shape} and {counts.shape}"
        )
    if counts.dtype.kind not in "iu":
        raise TypeError(f"token_counts must be integers, got {counts.dtype}")
    if (counts <= 0).any():
        k = int(np.argmax(counts <= 0))
        raise ValueError(
            f"token_counts[{k}] = {counts[k]}: a microbatch of zero tokens has no mean loss"
        )
    if not np.isfinite(losses).all():
        raise ValueError("mean_losses must be finite")
    n = counts.astype(float)
    covariance = np.mean((n - n.mean()) * (losses - losses.mean()))
    return float(-len(n) / n.sum() * covariance)


# --------------------------------------------------------------------------------------------
# batch-dependent ops: a two-layer model with batch, layer or no normalisation


def init_norm_mlp(num_inputs: int, num_hidden: int, num_outputs: int, seed: int = 0) -> dict:
    """Weights W1 (n_in, n_hidden), W2 (n_hidden, n_out) of :func:`norm_mlp_gradient` (pipe06)."""
    rng = np.random.default_rng(seed)
    n_in = check_int("num_inputs", num_inputs)
    n_h = check_int("num_hidden", num_hidden, minimum=2)
    n_out = check_int("num_outputs", num_outputs)
    return {
        "W1": rng.normal(0.0, 1.0 / math.sqrt(n_in), size=(n_in, n_h)),
        "W2": rng.normal(0.0, 1.0 / math.sqrt(n_h), size=(n_h, n_out)),
    }


def normalize(h: np.ndarray, axis: int, eps: float = 1e-5) -> tuple[np.ndarray, np.ndarray]:
    """z = (h - mean) / sqrt(var + eps) along ``axis`` (biased variance, as torch's norms);
    returns (z, 1/sqrt(var + eps)) (pipe06). axis 0: batch norm, axis 1: layer norm."""
    a = np.asarray(h, dtype=float)
    if a.ndim != 2:
        raise ValueError(f"h must be 2-D (samples, features), got shape {a.shape}")
    centred = a - a.mean(axis=axis, keepdims=True)
    inv_std = 1.0 / np.sqrt((centred**2).mean(axis=axis, keepdims=True) + eps)
    return centred * inv_std, inv_std


def normalize_backward(dz: np.ndarray, z: np.ndarray, inv_std: np.ndarray, axis: int) -> np.ndarray:
    """∂loss/∂h from ∂loss/∂z for :func:`normalize`:
    inv_std·(dz - mean(dz) - z·mean(dz·z)) along ``axis`` (pipe06)."""
    mean_dz = dz.mean(axis=axis, keepdims=True)
    mean_dz_z = (dz * z).mean(axis=axis, keepdims=True)
    return inv_std * (dz - mean_dz - z * mean_dz_z)


def check_norm_inputs(params: object, x: object, y: object, norm: str) -> tuple:
    """(W1, W2, x, y) as float arrays of fitting shapes, and ``norm`` one of :data:`NORMS`."""
    if norm not in NORMS:
        raise ValueError(f"unknown norm {norm!r}; known: {', '.join(NORMS)}")
    if not isinstance(params, Mapping) or "W1" not in params or "W2" not in params:
        raise TypeError("params must be a dict with W1 and W2 (init_norm_mlp)")
    w1, w2 = np.asarray(params["W1"], dtype=float), np.asarray(params["W2"], dtype=float)
    xa, ya = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if w1.ndim != 2 or w2.ndim != 2 or w1.shape[1] != w2.shape[0]:
        raise ValueError(f"W1 {w1.shape} and W2 {w2.shape} do not chain")
    if xa.ndim != 2 or xa.shape[1] != w1.shape[0] or len(xa) < 1:
        raise ValueError(f"x must have shape (samples >= 1, {w1.shape[0]}), got {xa.shape}")
    if ya.shape != (len(xa), w2.shape[1]):
        raise ValueError(f"y must have shape ({len(xa)}, {w2.shape[1]}), got {ya.shape}")
    if norm == "batch" and len(xa) < 2:
        raise ValueError(
            "batch norm needs at least 2 samples per microbatch: with one, every normalised "
            "value is 0 (torch.nn.BatchNorm1d raises 'Expected more than 1 value per channel')"
        )
    return w1, w2, xa, ya


def norm_mlp_loss(params: Mapping, x: np.ndarray, y: np.ndarray, norm: str = "batch") -> float:
    """½·mean over samples of Σ (norm(x·W1)·W2 - y)² (pipe06)."""
    w1, w2, xa, ya = check_norm_inputs(params, x, y, norm)
    h = xa @ w1
    z = h if norm == "none" else normalize(h, 0 if norm == "batch" else 1)[0]
    return float(0.5 * ((z @ w2 - ya) ** 2).sum(axis=1).mean())


def norm_mlp_gradient(
    params: Mapping, x: np.ndarray, y: np.ndarray, norm: str = "batch"
) -> dict[str, np.ndarray]:
    """Gradients {W1, W2} of :func:`norm_mlp_loss` on one (micro)batch, by hand (pipe06)."""
    w1, w2, xa, ya = check_norm_inputs(params, x, y, norm)
    h = xa @ w1
    axis = 0 if norm == "batch" else 1
    z, inv_std = (h, None) if norm == "none" else normalize(h, axis)
    d_out = (z @ w2 - ya) / len(xa)
    dz = d_out @ w2.T
    dh = dz if norm == "none" else normalize_backward(dz, z, inv_std, axis)
    return {"W1": xa.T @ dh, "W2": z.T @ d_out}


def accumulated_norm_gradient(
    params: Mapping, x: np.ndarray, y: np.ndarray, microbatch_size: int, norm: str = "batch"
) -> dict[str, np.ndarray]:
    """Σ_k (s_k/S)·∇ over consecutive microbatches of ``microbatch_size`` samples (the last takes
    the remainder): the right weighting for a per-sample objective (pipe06). Equal to the
    full-batch gradient for ``norm="layer"`` or ``"none"``; not for ``"batch"``."""
    _, _, xa, ya = check_norm_inputs(params, x, y, "none")
    b = check_int("microbatch_size", microbatch_size)
    total = {"W1": 0.0, "W2": 0.0}
    for start in range(0, len(xa), b):
        xs, ys = xa[start : start + b], ya[start : start + b]
        g = norm_mlp_gradient(params, xs, ys, norm)
        for name in total:
            total[name] = total[name] + len(xs) / len(xa) * g[name]
    return total


def norm_gradient_errors(
    params: Mapping, x: np.ndarray, y: np.ndarray, microbatch_sizes: Sequence[int], norm: str
) -> np.ndarray:
    """‖g_acc(b) - g_full‖ / ‖g_full‖ over both weights, for each microbatch size b (pipe06)."""
    full = norm_mlp_gradient(params, x, y, norm)
    scale = math.sqrt(sum(float((g**2).sum()) for g in full.values()))
    errors = []
    for b in microbatch_sizes:
        acc = accumulated_norm_gradient(params, x, y, b, norm)
        diff = sum(float(((acc[k] - full[k]) ** 2).sum()) for k in full)
        errors.append(math.sqrt(diff) / scale)
    return np.array(errors)


# --------------------------------------------------------------------------------------------
# step time against the number of microbatches


def microbatch_time(micro_batch_size: float, fixed_time: float, sample_time: float) -> float:
    """One stage's forward + backward of a microbatch of b sequences: t(b) = t_0 + b·t_1 (s)
    (pipe06; synthetic form)."""
    b = check_duration("micro_batch_size", micro_batch_size)
    t0 = check_duration("fixed_time", fixed_time)
    t1 = check_duration("sample_time", sample_time)
    return t0 + b * t1


def kernel_efficiency(micro_batch_size: float, fixed_time: float, sample_time: float) -> float:
    """Share of peak throughput at microbatch size b: E(b) = b·t_1 / (t_0 + b·t_1) (pipe06)."""
    b = check_duration("micro_batch_size", micro_batch_size)
    t0 = check_duration("fixed_time", fixed_time)
    t1 = check_duration("sample_time", sample_time)
    if b * t1 == 0:
        return 0.0
    return b * t1 / (t0 + b * t1)


def step_times(
    batch_size: int, num_stages: int, microbatch_times: Mapping[int, float]
) -> dict[int, float]:
    """{m: (m + p - 1)·t(B/m)} for every microbatch size b = B/m in ``microbatch_times`` that
    divides the batch (a balanced GPipe or 1F1B pipeline at zero latency; Narayanan et al. 2021,
    §3.4, Eq. 1) (pipe06)."""
    big_b = check_int("batch_size", batch_size)
    p = check_int("num_stages", num_stages)
    if not isinstance(microbatch_times, Mapping) or not microbatch_times:
        raise TypeError("microbatch_times must be a non-empty dict {microbatch size: seconds}")
    out = {}
    for b, t in sorted(microbatch_times.items()):
        size = check_int("microbatch size", b)
        seconds = check_duration(f"microbatch_times[{size}]", t)
        if big_b % size == 0:
            m = big_b // size
            out[m] = (m + p - 1) * seconds
    if not out:
        raise ValueError(
            f"no microbatch size in microbatch_times divides batch_size={big_b}: "
            f"{sorted(microbatch_times)}"
        )
    return out


def best_num_microbatches(
    batch_size: int, num_stages: int, microbatch_times: Mapping[int, float]
) -> int:
    """The m = B/b with the least step time (m + p - 1)·t(b) over the tabulated sizes b that
    divide the batch; ties go to the fewer microbatches (pipe06)."""
    times = step_times(batch_size, num_stages, microbatch_times)
    return min(times, key=lambda m: (times[m], m))


def continuous_best_num_microbatches(
    batch_size: int, num_stages: int, fixed_time: float, sample_time: float
) -> float:
    """m* = sqrt(B·(p - 1)·t_1/t_0), minimising (m + p - 1)(t_0 + (B/m)·t_1) over real m > 0
    (pipe06): the fixed cost m·t_0 grows with m, the bubble's (p - 1)·B·t_1/m shrinks."""
    big_b = check_int("batch_size", batch_size)
    p = check_int("num_stages", num_stages)
    t0 = check_duration("fixed_time", fixed_time)
    t1 = check_duration("sample_time", sample_time)
    if t0 == 0:
        return math.inf
    return math.sqrt(big_b * (p - 1) * t1 / t0)
