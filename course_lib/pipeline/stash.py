"""Activation stashing and rematerialization: a tiny numpy MLP with dropout, a stash keyed by
(stage, microbatch), recomputation and its random state, side effects, and what recomputing costs
in bytes and time (pipe05).

Numerics. :func:`mlp_forward` runs ``y = dropout(relu(x·W1 + b1))·W2 + b2`` with inverted dropout
(a kept unit is scaled by 1/(1 - drop_prob), as ``torch.nn.Dropout``), drawing the mask from the
numpy ``Generator`` it is given; :func:`mlp_backward` is the hand-written gradient of the loss
½·mean over the batch of Σ(y - target)², checked against finite differences in the tests. If a
``stats`` dict is passed, the forward also updates a BatchNorm-style running mean of the hidden
activations, ``r ← (1 - momentum)·r + momentum·mean`` (``torch.nn.BatchNorm1d``'s convention,
momentum 0.1 by default), and a counter ``num_batches_tracked``: the side effects that
recomputation repeats.

Recomputation. :func:`stage_gradients` runs one stage's forwards and backwards in a given order,
keeping either the whole forward state (``"stored"``) or only each microbatch's input and
recomputing the forward just before its backward with the random state of the stage's generator
as it is then (``"advance"``), a generator reseeded with the stage's seed (``"reseed"``), or the
generator state saved when the forward ran (``"restore"``, what ``torch.utils.checkpoint`` does
with ``preserve_rng_state=True``). Only ``"restore"`` reproduces the stored gradients exactly.

Accounting. Per transformer layer, Korthikanti et al. 2022 ("Reducing Activation Recomputation in
Large Transformer Models", Table 2, 16-bit activations) stash s·b·h·(34 + 5·a·s/h) bytes without
recomputation (the "no parallelism" row), 34·s·b·h with selective recomputation (the attention
core, QKᵀ → softmax → dropout → attention over V, rerun before its backward; the "tensor
parallel + selective" row sbh(10 + 24/t) at t = 1, or Eq. 6) and 2·s·b·h with full recomputation
(only the layer input is kept; the layer's forward reruns before its backward):
:func:`course_lib.memory.activation_bytes_per_layer`. A stage of a 1F1B pipeline holds
min(m, p - s) microbatches' stashes at its peak: the schedule's p - s - 1 warm-up forwards plus the
first steady-state one (Megatron-LM's schedule; checked against the simulator), "p or fewer" in
Narayanan et al. 2021, §2.2.1. A recomputation
lengthens every backward by the rerun forward, so a balanced 1F1B step becomes
(m + p - 1)·(t_f + t_b + t_r). :func:`best_recompute_plan` chooses, per layer, what to keep or
recompute to minimise the recompute time under a byte budget, by an exact search over the Pareto
frontier of partial plans (checked against brute force in the tests).

Argument checks shared by several routines are public (``check_*``) or come from
``course_lib.validate`` / ``course_lib.pipeline._validate``: a grade cell that forbids one routine
disables the private helpers of this module it calls, so no two routines share a private helper.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from course_lib.memory import activation_bytes_per_layer
from course_lib.pipeline._validate import check_duration, check_int, check_stage
from course_lib.pipeline.formulas import peak_in_flight_one_f_one_b

__all__ = [
    "PARAM_NAMES",
    "RECOMPUTE_POLICIES",
    "RNG_MODES",
    "Stash",
    "best_recompute_plan",
    "gradient_error",
    "init_mlp",
    "layer_forward_times",
    "layer_options",
    "mlp_backward",
    "mlp_forward",
    "mlp_loss",
    "new_stats",
    "plan_cost",
    "recompute_frontier",
    "recompute_step_time",
    "recompute_time",
    "running_mean_after",
    "stage_gradients",
    "stage_stash_bytes",
]

PARAM_NAMES: tuple[str, ...] = ("W1", "b1", "W2", "b2")
"""The MLP's parameters: hidden weights and bias, output weights and bias."""

RECOMPUTE_POLICIES: tuple[str, ...] = ("none", "selective", "full")
"""Korthikanti et al. 2022's recomputation policies: keep everything, rerun the attention core,
rerun the whole layer."""

RNG_MODES: tuple[str, ...] = ("stored", "advance", "reseed", "restore")
"""How :func:`stage_gradients` gets a backward's forward state: stored, or recomputed with the
stage generator as it is then, a generator reseeded with the stage's seed, or the saved state."""


# --------------------------------------------------------------------------------------------
# argument checks shared by several routines (public on purpose, see the module docstring)


def check_params(params: object) -> dict[str, np.ndarray]:
    """The MLP's parameters as float arrays: W1 (n_in, n_hidden), b1 (n_hidden,), W2 (n_hidden,
    n_out), b2 (n_out,); a missing or misshapen one is named."""
    if not isinstance(params, Mapping):
        raise TypeError(
            f"params must be a dict of arrays {PARAM_NAMES}, got {type(params).__name__}"
        )
    missing = [k for k in PARAM_NAMES if k not in params]
    if missing:
        raise ValueError(f"params lacks {missing}; an MLP needs {list(PARAM_NAMES)}")
    out = {}
    for k in PARAM_NAMES:
        a = np.asarray(params[k], dtype=float)
        if not np.isfinite(a).all():
            raise ValueError(f"params[{k!r}] must be finite")
        out[k] = a
    w1, b1, w2, b2 = (out[k] for k in PARAM_NAMES)
    if w1.ndim != 2 or w2.ndim != 2 or b1.shape != (w1.shape[1],) or w2.shape[0] != w1.shape[1]:
        raise ValueError(
            f"params shapes do not fit an MLP: W1 {w1.shape}, b1 {b1.shape}, W2 {w2.shape}; "
            "need W1 (n_in, n_hidden), b1 (n_hidden,), W2 (n_hidden, n_out)"
        )
    if b2.shape != (w2.shape[1],):
        raise ValueError(f"params['b2'] must have shape ({w2.shape[1]},), got {b2.shape}")
    return out


def check_batch(name: str, x: object, width: int) -> np.ndarray:
    """A (batch, width) finite float array."""
    a = np.asarray(x, dtype=float)
    if a.ndim != 2 or a.shape[1] != width or a.shape[0] < 1:
        raise ValueError(f"{name} must have shape (batch >= 1, {width}), got {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError(f"{name} must be finite")
    return a


def check_drop_prob(drop_prob: object) -> float:
    """A dropout probability in [0, 1)."""
    p = check_duration("drop_prob", drop_prob)  # a finite real >= 0
    if p >= 1.0:
        raise ValueError(f"drop_prob must be in [0, 1), got {p}")
    return p


def check_momentum(momentum: object) -> float:
    """A running-statistics momentum in [0, 1] (PyTorch's convention: the weight of the new value)."""
    mu = check_duration("momentum", momentum)
    if mu > 1.0:
        raise ValueError(f"momentum must be in [0, 1], got {mu}")
    return mu


def check_policy(policy: object) -> str:
    """One of RECOMPUTE_POLICIES."""
    if not isinstance(policy, str) or policy not in RECOMPUTE_POLICIES:
        raise ValueError(f"policy must be one of {RECOMPUTE_POLICIES}, got {policy!r}")
    return policy


def check_actions(actions: object, num_microbatches: int | None = None) -> list[tuple[str, int]]:
    """A stage's ordered actions as (kind, microbatch) pairs, kind "F" or "B": every microbatch's
    F exactly once and before its B, every B exactly once. Errors name the position."""
    if isinstance(actions, str | bytes) or not isinstance(actions, Iterable):
        raise TypeError(f"actions must be a list of (kind, microbatch) pairs, got {actions!r}")
    out: list[tuple[str, int]] = []
    done_f: set[int] = set()
    done_b: set[int] = set()
    for pos, item in enumerate(actions):
        if isinstance(item, str | bytes) or not isinstance(item, Sequence) or len(item) != 2:
            raise ValueError(f"actions[{pos}] must be a (kind, microbatch) pair, got {item!r}")
        kind, j = item
        if kind not in ("F", "B"):
            raise ValueError(f"actions[{pos}]: kind must be 'F' or 'B', got {kind!r}")
        j = check_int(f"actions[{pos}] microbatch", j, minimum=0)
        if num_microbatches is not None and j >= num_microbatches:
            raise ValueError(
                f"actions[{pos}]: microbatch {j} has no input (there are {num_microbatches})"
            )
        if kind == "F":
            if j in done_f:
                raise ValueError(f"actions[{pos}]: F of microbatch {j} runs a second time")
            done_f.add(j)
        else:
            if j not in done_f:
                raise ValueError(f"actions[{pos}]: B of microbatch {j} runs before its F")
            if j in done_b:
                raise ValueError(f"actions[{pos}]: B of microbatch {j} runs a second time")
            done_b.add(j)
        out.append((kind, j))
    return out


# --------------------------------------------------------------------------------------------
# the numerics: a tiny MLP with dropout


def init_mlp(
    num_inputs: int = 6, num_hidden: int = 12, num_outputs: int = 3, seed: int = 0
) -> dict[str, np.ndarray]:
    """Parameters of a 2-layer MLP, W ~ N(0, 1/fan_in), small nonzero biases (pipe05)."""
    n_in = check_int("num_inputs", num_inputs)
    n_h = check_int("num_hidden", num_hidden)
    n_out = check_int("num_outputs", num_outputs)
    seed = check_int("seed", seed, minimum=0)
    g = np.random.default_rng(seed)
    return {
        "W1": g.normal(0.0, 1.0 / math.sqrt(n_in), (n_in, n_h)),
        "b1": g.normal(0.0, 0.1, n_h),
        "W2": g.normal(0.0, 1.0 / math.sqrt(n_h), (n_h, n_out)),
        "b2": g.normal(0.0, 0.1, n_out),
    }


def new_stats(num_hidden: int) -> dict[str, Any]:
    """Fresh running statistics: running_mean zeros, num_batches_tracked 0 (as BatchNorm) (pipe05)."""
    return {"running_mean": np.zeros(check_int("num_hidden", num_hidden)), "num_batches_tracked": 0}


def mlp_forward(
    params: Mapping[str, np.ndarray],
    x: object,
    rng: np.random.Generator,
    drop_prob: float,
    stats: dict[str, Any] | None = None,
    momentum: float = 0.1,
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """y = dropout(relu(x·W1 + b1))·W2 + b2 and the cache its backward needs (pipe05).

    The dropout mask is ``rng.random(hidden.shape) >= drop_prob``, kept units scaled by
    1/(1 - drop_prob); one call draws batch × n_hidden uniforms from ``rng``. With ``stats``
    (see :func:`new_stats`) the call also updates, in place, the running mean of the hidden
    activations r ← (1 - momentum)·r + momentum·mean_over_batch and adds 1 to
    num_batches_tracked — side effects, not part of the output.
    """
    p = check_params(params)
    x = check_batch("x", x, p["W1"].shape[0])
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    q = check_drop_prob(drop_prob)
    pre = x @ p["W1"] + p["b1"]
    hidden = np.maximum(pre, 0.0)
    if stats is not None:
        mu = check_momentum(momentum)
        if not isinstance(stats, dict) or "running_mean" not in stats:
            raise TypeError("stats must be a dict from new_stats(num_hidden)")
        stats["running_mean"] = (1.0 - mu) * stats["running_mean"] + mu * hidden.mean(axis=0)
        stats["num_batches_tracked"] = stats.get("num_batches_tracked", 0) + 1
    keep = rng.random(hidden.shape) >= q
    dropped = hidden * keep / (1.0 - q)
    y = dropped @ p["W2"] + p["b2"]
    cache = {"x": x, "pre": pre, "keep": keep, "dropped": dropped, "y": y, "drop_prob": q}
    return y, cache


def mlp_loss(y: object, target: object) -> float:
    """½ · mean over the batch of Σ (y - target)² (pipe05)."""
    y = np.asarray(y, dtype=float)
    t = np.asarray(target, dtype=float)
    if y.shape != t.shape or y.ndim != 2:
        raise ValueError(f"target must have the output's shape {y.shape}, got {t.shape}")
    return float(0.5 * np.sum((y - t) ** 2) / y.shape[0])


def mlp_backward(
    params: Mapping[str, np.ndarray], cache: Mapping[str, Any], target: object
) -> dict[str, np.ndarray]:
    """Gradient of mlp_loss(y, target) w.r.t. W1, b1, W2, b2 from a forward's cache (pipe05).

    dy = (y - target)/batch; dW2 = droppedᵀ·dy; db2 = Σ dy; dhidden = dy·W2ᵀ · keep/(1 - q);
    dpre = dhidden · [pre > 0]; dW1 = xᵀ·dpre; db1 = Σ dpre.
    """
    p = check_params(params)
    if not isinstance(cache, Mapping) or any(
        k not in cache for k in ("x", "pre", "keep", "dropped", "y", "drop_prob")
    ):
        raise ValueError("cache must be the dict mlp_forward returned")
    y = np.asarray(cache["y"], dtype=float)
    t = check_batch("target", target, p["W2"].shape[1])
    if t.shape != y.shape:
        raise ValueError(f"target must have the output's shape {y.shape}, got {t.shape}")
    dy = (y - t) / y.shape[0]
    d_dropped = dy @ p["W2"].T
    d_pre = d_dropped * cache["keep"] / (1.0 - cache["drop_prob"]) * (cache["pre"] > 0)
    return {
        "W1": cache["x"].T @ d_pre,
        "b1": d_pre.sum(axis=0),
        "W2": cache["dropped"].T @ dy,
        "b2": dy.sum(axis=0),
    }


def gradient_error(grads: Mapping[str, object], reference: Mapping[str, object]) -> float:
    """‖g − g_ref‖ / ‖g_ref‖ over all the MLP's parameters together (Frobenius norms) (pipe05).

    0.0 exactly when every array is bit-identical; a missing or misshapen array is named.
    """
    total = diff = 0.0
    for k in PARAM_NAMES:
        if k not in grads or k not in reference:
            raise ValueError(f"both gradients need {list(PARAM_NAMES)}; {k!r} is missing")
        g = np.asarray(grads[k], dtype=float)
        r = np.asarray(reference[k], dtype=float)
        if g.shape != r.shape:
            raise ValueError(f"gradient[{k!r}] has shape {g.shape}, the reference {r.shape}")
        diff += float(((g - r) ** 2).sum())
        total += float((r**2).sum())
    if total == 0.0:
        raise ValueError("the reference gradient is all zeros: a relative error is undefined")
    return math.sqrt(diff / total)


# --------------------------------------------------------------------------------------------
# the stash


class Stash:
    """Saved forward state keyed by (stage, microbatch): each key is put once and got once (pipe05).

    ``put`` of a key already held raises ValueError (a forward ran twice, or two stages share a
    key); ``get`` removes and returns the value, and raises KeyError for a key not held (never
    put, or already consumed by its backward). Nothing is ever returned for another key.
    """

    def __init__(self) -> None:
        self._held: dict[tuple[int, int], Any] = {}

    def put(self, stage: int, microbatch: int, value: Any) -> None:
        """Hold ``value`` for (stage, microbatch); ValueError if that key is held already."""
        key = (check_int("stage", stage, minimum=0), check_int("microbatch", microbatch, minimum=0))
        if key in self._held:
            raise ValueError(f"stash already holds (stage {key[0]}, microbatch {key[1]})")
        self._held[key] = value

    def get(self, stage: int, microbatch: int) -> Any:
        """Remove and return the value of (stage, microbatch); KeyError if it is not held."""
        key = (check_int("stage", stage, minimum=0), check_int("microbatch", microbatch, minimum=0))
        if key not in self._held:
            raise KeyError(f"stash holds nothing for (stage {key[0]}, microbatch {key[1]})")
        return self._held.pop(key)

    def __len__(self) -> int:
        return len(self._held)

    def keys(self) -> list[tuple[int, int]]:
        """The (stage, microbatch) keys held, in the order they were put."""
        return list(self._held)


def stage_gradients(
    params: Mapping[str, np.ndarray],
    inputs: Sequence[object],
    targets: Sequence[object],
    actions: Iterable[tuple[str, int]],
    seed: int,
    drop_prob: float,
    mode: str = "stored",
    stats: dict[str, Any] | None = None,
    stage: int = 0,
) -> dict[int, dict[str, np.ndarray]]:
    """One stage's forwards and backwards in ``actions`` order -> {microbatch: gradient} (pipe05).

    The stage draws every dropout mask from one generator, ``numpy.random.default_rng(seed)``, in
    forward order. ``mode`` (see :data:`RNG_MODES`): "stored" stashes each forward's cache;
    the others stash only the input and rerun the forward right before the backward, drawing the
    mask from the stage's generator as it is at that moment ("advance"), from
    ``default_rng(seed)`` ("reseed"), or from a generator set to the state saved before the
    forward ("restore"). With ``stats``, every forward run — recomputations included — updates it.
    """
    p = check_params(params)
    xs = [check_batch(f"inputs[{j}]", x, p["W1"].shape[0]) for j, x in enumerate(inputs)]
    ts = [check_batch(f"targets[{j}]", t, p["W2"].shape[1]) for j, t in enumerate(targets)]
    if len(xs) != len(ts):
        raise ValueError(f"inputs and targets differ in length: {len(xs)} and {len(ts)}")
    order = check_actions(actions, len(xs))
    seed = check_int("seed", seed, minimum=0)
    q = check_drop_prob(drop_prob)
    if not isinstance(mode, str) or mode not in RNG_MODES:
        raise ValueError(f"mode must be one of {RNG_MODES}, got {mode!r}")
    stage = check_int("stage", stage, minimum=0)
    rng = np.random.default_rng(seed)
    stash = Stash()
    grads: dict[int, dict[str, np.ndarray]] = {}
    for kind, j in order:
        if kind == "F":
            state = rng.bit_generator.state  # a fresh dict: later draws do not change it
            _, cache = mlp_forward(p, xs[j], rng, q, stats)
            stash.put(stage, j, cache if mode == "stored" else (xs[j], state))
            continue
        saved = stash.get(stage, j)
        if mode == "stored":
            cache = saved
        else:
            x, state = saved
            if mode == "advance":
                gen = rng
            elif mode == "reseed":
                gen = np.random.default_rng(seed)
            else:
                gen = np.random.Generator(type(rng.bit_generator)())
                gen.bit_generator.state = state
            _, cache = mlp_forward(p, x, gen, q, stats)
        grads[j] = mlp_backward(p, cache, ts[j])
    return grads


def running_mean_after(
    actions: Iterable[tuple[str, int]],
    batch_means: Sequence[float] | np.ndarray,
    momentum: float,
    recompute: bool,
    initial: float | np.ndarray = 0.0,
) -> float | np.ndarray:
    """A running mean after one stage's step: r ← (1 - μ)·r + μ·mean_j at every forward run (pipe05).

    Every F j runs the forward once; with ``recompute`` every B j reruns it just before the
    backward, updating the running mean again with the same batch mean. Scalar batch means give
    a float, arrays an array. (PyTorch's BatchNorm convention: μ weighs the new value.)
    """
    means = np.asarray(batch_means, dtype=float)
    if means.ndim == 0 or len(means) < 1 or not np.isfinite(means).all():
        raise ValueError("batch_means must be a non-empty sequence of finite numbers")
    order = check_actions(actions, len(means))
    mu = check_momentum(momentum)
    if not isinstance(recompute, bool | np.bool_):
        raise TypeError(f"recompute must be True or False, got {recompute!r}")
    r = np.asarray(initial, dtype=float) + np.zeros(means.shape[1:])
    for kind, j in order:
        if kind == "F" or recompute:
            r = (1.0 - mu) * r + mu * means[j]
    return float(r) if r.ndim == 0 else r


# --------------------------------------------------------------------------------------------
# accounting: bytes, time, and the best plan under a budget


def stage_stash_bytes(
    policy: str,
    stage: int,
    num_stages: int,
    num_microbatches: int,
    layers_per_stage: int,
    seq_len: int,
    micro_batch: int,
    hidden: int,
    num_heads: int,
) -> float:
    """Peak stashed bytes on stage s of 1F1B: min(m, p - s) · L · per-layer bytes of the policy (pipe05).

    Per-layer bytes (Korthikanti et al. 2022, Table 2, 16-bit; selective is its tensor-parallel +
    selective row at t = 1): s·b·h·(34 + 5·a·s/h) for "none", 34·s·b·h for "selective", 2·s·b·h
    for "full" (the layer input). min(m, p - s) is the 1F1B schedule's in-flight count (the
    warm-up p - s - 1 plus one). The transient working set of the one layer being recomputed is
    not a stash and not counted.
    """
    policy = check_policy(policy)
    p = check_int("num_stages", num_stages)
    m = check_int("num_microbatches", num_microbatches)
    s = check_stage(stage, p)
    layers = check_int("layers_per_stage", layers_per_stage)
    per_layer = activation_bytes_per_layer(
        seq_len, micro_batch, hidden, num_heads, recompute=policy
    )
    return float(peak_in_flight_one_f_one_b(p, m, s) * layers * per_layer)


def recompute_time(policy: str, forward_time: float, core_forward_time: float) -> float:
    """Time one backward waits for its recomputation: 0, the attention core's forward, or the whole forward (pipe05)."""
    policy = check_policy(policy)
    t_f = check_duration("forward_time", forward_time)
    t_core = check_duration("core_forward_time", core_forward_time)
    if t_core > t_f:
        raise ValueError(
            f"core_forward_time ({t_core}) is part of the forward and cannot exceed forward_time "
            f"({t_f})"
        )
    return {"none": 0.0, "selective": t_core, "full": t_f}[policy]


def recompute_step_time(
    policy: str,
    num_stages: int,
    num_microbatches: int,
    forward_time: float,
    backward_time: float,
    core_forward_time: float,
) -> float:
    """Balanced 1F1B step with recomputation: (m + p - 1)·(t_f + t_b + t_r) (pipe05).

    t_r = :func:`recompute_time`: the rerun forward lengthens every backward, on every stage, so
    it lands on the critical path m + p - 1 times, not m times. Checked against the simulator
    with backward cost t_b + t_r.
    """
    p = check_int("num_stages", num_stages)
    m = check_int("num_microbatches", num_microbatches)
    t_b = check_duration("backward_time", backward_time)
    t_r = recompute_time(policy, forward_time, core_forward_time)
    return (m + p - 1) * (float(forward_time) + t_b + t_r)


def layer_forward_times(
    seq_len: int, micro_batch: int, hidden: int, flops_per_second: float
) -> tuple[float, float]:
    """(layer forward, attention-core forward) seconds from matmul FLOPs at one rate (pipe05).

    A transformer layer's forward matmuls are 24·b·s·h² + 4·b·s²·h FLOPs, of which the attention
    core (QKᵀ and attention over V, what selective recomputation reruns) is 4·b·s²·h
    (Korthikanti et al. 2022, App. A, after Narayanan et al. 2021; course_lib.flops). Softmax and
    dropout carry no matmul FLOPs but are memory-bound: on real hardware the core costs more than
    this model says (Korthikanti et al.'s Table 4 measures +7 % per layer for selective
    recomputation).
    """
    s = check_int("seq_len", seq_len)
    b = check_int("micro_batch", micro_batch)
    h = check_int("hidden", hidden)
    rate = check_duration("flops_per_second", flops_per_second)
    if rate <= 0:
        raise ValueError(f"flops_per_second must be > 0, got {rate}")
    core = 4.0 * b * s * s * h
    return (24.0 * b * s * h * h + core) / rate, core / rate


def layer_options(
    seq_len: int,
    micro_batch: int,
    hidden: int,
    num_heads: int,
    forward_time: float,
    core_forward_time: float,
) -> list[tuple[float, float]]:
    """(stashed bytes, recompute seconds) of one transformer layer under none, selective, full (pipe05)."""
    return [
        (
            activation_bytes_per_layer(seq_len, micro_batch, hidden, num_heads, recompute=policy),
            recompute_time(policy, forward_time, core_forward_time),
        )
        for policy in RECOMPUTE_POLICIES
    ]


def check_options(options: object) -> list[np.ndarray]:
    """Per layer, a non-empty list of (bytes, seconds) options as a (k, 2) array of finite numbers >= 0."""
    if isinstance(options, str | bytes) or not isinstance(options, Iterable):
        raise TypeError("options must be a list, per layer, of (bytes, seconds) pairs")
    out = []
    for i, layer in enumerate(options):
        try:
            a = np.asarray(layer, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(
                f"options[{i}] must be (bytes, seconds) pairs, got {layer!r}"
            ) from None
        if a.ndim != 2 or a.shape[1] != 2 or a.shape[0] < 1:
            raise ValueError(
                f"options[{i}] must be a non-empty list of (bytes, seconds) pairs, got shape "
                f"{a.shape}"
            )
        if not np.isfinite(a).all() or (a < 0).any():
            raise ValueError(f"options[{i}]: bytes and seconds must be finite and >= 0")
        out.append(a)
    if not out:
        raise ValueError("options is empty: there are no layers to plan")
    return out


def recompute_frontier(options: object) -> list[tuple[float, float, tuple[int, ...]]]:
    """Every Pareto-optimal plan (bytes, seconds, chosen option per layer), fewest bytes first (pipe05).

    A plan picks one option per layer; its bytes and seconds are the sums. Built layer by layer:
    a partial plan that needs at least the bytes *and* the seconds of another can never finish
    better, so only the frontier of each prefix is extended. Among plans with equal bytes and
    seconds the lexicographically first choice is kept.
    """
    opts = check_options(options)
    cost = np.zeros((1, 2))  # rows: (bytes, seconds) of each frontier plan
    plans = np.zeros((1, 0), dtype=np.int64)
    for a in opts:
        k = len(a)
        cost = (cost[:, None, :] + a[None, :, :]).reshape(-1, 2)
        plans = np.concatenate(
            [np.repeat(plans, k, axis=0), np.tile(np.arange(k), len(plans))[:, None]], axis=1
        )
        # Sort by bytes, then seconds, then plan; keep a plan only if it is strictly faster than
        # every plan with fewer or equal bytes before it.
        keys = [plans[:, c] for c in range(plans.shape[1] - 1, -1, -1)] + [cost[:, 1], cost[:, 0]]
        order = np.lexsort(keys)
        cost, plans = cost[order], plans[order]
        best_before = np.minimum.accumulate(np.r_[np.inf, cost[:-1, 1]])
        keep = cost[:, 1] < best_before
        cost, plans = cost[keep], plans[keep]
    return [
        (float(b), float(t), tuple(int(c) for c in plan))
        for (b, t), plan in zip(cost, plans, strict=True)
    ]


def best_recompute_plan(options: object, budget: float) -> tuple[int, ...]:
    """The plan (one option index per layer) with the least recompute time whose bytes fit the budget (pipe05).

    Exact: the fastest plan of :func:`recompute_frontier` with bytes <= budget (ties: fewer
    bytes). ValueError naming the smallest feasible budget if no plan fits.
    """
    budget = check_duration("budget", budget)  # a finite number >= 0 (bytes)
    frontier = recompute_frontier(options)
    fits = [(t, b, plan) for b, t, plan in frontier if b <= budget]
    if not fits:
        raise ValueError(
            f"no plan fits a budget of {budget:g} bytes; the smallest plan needs {frontier[0][0]:g}"
        )
    return min(fits)[2]


def plan_cost(options: object, plan: Sequence[int]) -> tuple[float, float]:
    """(bytes, seconds) of a plan: the sums of the chosen option of every layer (pipe05)."""
    opts = check_options(options)
    if isinstance(plan, str | bytes) or len(plan) != len(opts):
        raise ValueError(f"plan must choose one option for each of the {len(opts)} layers")
    total = np.zeros(2)
    for i, (a, c) in enumerate(zip(opts, plan, strict=True)):
        c = check_int(f"plan[{i}]", c, minimum=0)
        if c >= len(a):
            raise ValueError(f"plan[{i}] = {c}: layer {i} has only {len(a)} options")
        total += a[c]
    return float(total[0]), float(total[1])
