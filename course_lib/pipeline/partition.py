"""A model as a list of layers, and its partitions into pipeline stages: stage times with boundary
transfers, per-stage memory under a schedule, and the contiguous min-max partition (pipe01).

Conventions (the lesson's, and every function's here):

* a :class:`ModelSpec` is an ordered list of :class:`Layer`: per microbatch, each layer's forward
  and backward time (s), its parameter count, the bytes it stashes from its forward to its
  backward, and the bytes of its output — what crosses a cut placed right after it;
* a partition into ``p`` stages is given by its **boundaries** ``0 = b_0 < b_1 < ... < b_p = n``:
  stage s holds layers ``b_s .. b_{s+1} - 1`` (contiguous, none skipped, none repeated, none
  empty); cut k lies between layer k - 1 and layer k, for k = 1 .. n - 1;
* **stage time** per microbatch, t_s = sum of (t_f + t_b) over its layers + 2·(A_in + A_out)/β:
  every microbatch crosses a cut twice, its activation forward and the gradient of the same size
  backward, A bytes each at link bandwidth β (bytes/s); a transfer is not overlapped with compute
  and holds both the stage that sends and the stage that receives, so each cut adds 2A/β to the
  stages on both sides (the first stage has no A_in, the last no A_out). The slowest stage sets
  the throughput: in steady state one microbatch leaves the pipeline per max_s t_s;
* **stage memory** = (weight + gradient + optimizer bytes per parameter) × parameters
  + in-flight microbatches × stashed bytes per microbatch, in-flight = min(m, p - s) under 1F1B
  (Narayanan et al. 2021, §2.2.1, bound it by the pipeline depth; Korthikanti et al. 2022, App. B-C,
  give the per-stage count; :func:`course_lib.pipeline.peak_in_flight_one_f_one_b`), m under
  GPipe. Mixed-precision Adam holds 2 + 2 + 12 = 16 bytes per parameter (bf16 weights and
  gradients; fp32 master weights, momentum and variance; Rajbhandari et al. 2020, "ZeRO", §3.1).
  The last stage holds the output layer and the loss, so its stash includes the logits.

Argument checks that several public functions share are public (``check_boundaries``) or come from
``course_lib.validate`` / ``course_lib.pipeline._validate``: a grade cell that forbids one routine
(course_lib.checks.forbid) disables that module's *private* helpers it calls, so no routine here
shares a private helper with another.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from numbers import Integral

import numpy as np
import pandas as pd

from course_lib.hardware import accelerator
from course_lib.memory import activation_bytes_per_layer
from course_lib.validate import nonnegative_array, number, whole_count

from ._partition_checks import (
    ADAM_MIXED_PRECISION,
    per_param_bytes,
    read_only,
    schedule_name,
)
from ._partition_checks import (
    link_bandwidth as check_link_bandwidth,
)
from ._partition_checks import (
    model_spec as check_spec,
)
from .formulas import peak_in_flight_one_f_one_b

__all__ = [
    "ADAM_MIXED_PRECISION",
    "Layer",
    "ModelSpec",
    "Partition",
    "StageCosts",
    "check_boundaries",
    "cut_traffic",
    "even_blocks",
    "gpt_spec",
    "layer_memory",
    "min_max_partition",
    "smallest_memory_limit",
    "stage_costs",
    "stage_in_flight",
    "stage_memory",
    "stage_sums",
    "stage_table",
    "stage_times",
]


@dataclass(frozen=True)
class Layer:
    """One layer of a model spec, per microbatch: times (s), parameters, stashed and output bytes (pipe01)."""

    name: str
    forward_time: float
    backward_time: float
    num_params: float
    activation_bytes: float
    output_bytes: float
    kind: str = "layer"

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"Layer name must be a non-empty str, got {self.name!r}")
        for field in ("forward_time", "backward_time", "num_params", "activation_bytes"):
            number(getattr(self, field), f"layer {self.name!r}: {field}")
        number(self.output_bytes, f"layer {self.name!r}: output_bytes")
        if not isinstance(self.kind, str):
            raise ValueError(f"layer {self.name!r}: kind must be a str, got {self.kind!r}")


@dataclass(frozen=True, eq=False)
class ModelSpec:
    """An ordered list of layers; its per-layer arrays are read-only numpy views (pipe01)."""

    layers: tuple[Layer, ...]
    name: str = "model"

    def __post_init__(self) -> None:
        layers = tuple(self.layers) if isinstance(self.layers, list | tuple) else None
        if not layers:
            raise ValueError("layers must be a non-empty list of Layer")
        for i, layer in enumerate(layers):
            if not isinstance(layer, Layer):
                raise TypeError(f"layers[{i}] must be a Layer, got {type(layer).__name__}")
        object.__setattr__(self, "layers", layers)

    @classmethod
    def from_arrays(
        cls,
        forward_times: Sequence[float],
        backward_times: Sequence[float],
        num_params: Sequence[float],
        activation_bytes: Sequence[float],
        cut_bytes: Sequence[float],
        name: str = "model",
    ) -> ModelSpec:
        """A spec from per-layer arrays (n each) and the bytes at each of the n - 1 cuts (pipe01)."""
        f = nonnegative_array(forward_times, "forward_times").ravel()
        n = len(f)
        arrays = {"forward_times": f}
        for label, values in (
            ("backward_times", backward_times),
            ("num_params", num_params),
            ("activation_bytes", activation_bytes),
        ):
            arrays[label] = nonnegative_array(values, label).ravel()
            if len(arrays[label]) != n:
                raise ValueError(
                    f"{label} has {len(arrays[label])} entries but forward_times has {n} layers"
                )
        cuts = nonnegative_array(cut_bytes, "cut_bytes").ravel()
        if len(cuts) != max(n - 1, 0):
            raise ValueError(
                f"cut_bytes must have n - 1 = {n - 1} entries (one per cut), got {len(cuts)}"
            )
        outputs = np.append(cuts, 0.0)
        layers = tuple(
            Layer(
                f"layer {i}",
                float(f[i]),
                float(arrays["backward_times"][i]),
                float(arrays["num_params"][i]),
                float(arrays["activation_bytes"][i]),
                float(outputs[i]),
            )
            for i in range(n)
        )
        return cls(layers, name)

    def __len__(self) -> int:
        return len(self.layers)

    @property
    def num_layers(self) -> int:
        """n, the number of layers."""
        return len(self.layers)

    def _column(self, field: str) -> np.ndarray:
        return read_only(np.array([getattr(layer, field) for layer in self.layers], dtype=float))

    @cached_property
    def forward_times(self) -> np.ndarray:
        """Forward time of one microbatch through each layer (s)."""
        return self._column("forward_time")

    @cached_property
    def backward_times(self) -> np.ndarray:
        """Backward time of one microbatch through each layer (s)."""
        return self._column("backward_time")

    @cached_property
    def layer_times(self) -> np.ndarray:
        """Forward + backward time of each layer (s per microbatch)."""
        return read_only(self.forward_times + self.backward_times)

    @cached_property
    def num_params(self) -> np.ndarray:
        """Parameters of each layer (a count)."""
        return self._column("num_params")

    @cached_property
    def activation_bytes(self) -> np.ndarray:
        """Bytes each layer stashes per microbatch, from its forward until its backward."""
        return self._column("activation_bytes")

    @cached_property
    def cut_bytes(self) -> np.ndarray:
        """Bytes crossing cut k (between layer k - 1 and k), k = 1..n - 1: entry k - 1 (pipe01)."""
        return read_only(self._column("output_bytes")[:-1].copy())

    @cached_property
    def names(self) -> tuple[str, ...]:
        return tuple(layer.name for layer in self.layers)

    @cached_property
    def kinds(self) -> tuple[str, ...]:
        return tuple(layer.kind for layer in self.layers)

    def table(self) -> pd.DataFrame:
        """One row per layer: name, kind, forward_time, backward_time, num_params, activation_bytes,
        output_bytes."""
        return pd.DataFrame(
            {
                "name": self.names,
                "kind": self.kinds,
                "forward_time": self.forward_times,
                "backward_time": self.backward_times,
                "num_params": self.num_params,
                "activation_bytes": self.activation_bytes,
                "output_bytes": self._column("output_bytes"),
            }
        )


# --------------------------------------------------------------------------------------------
# the lesson's model: a GPT-like decoder, costs derived from published formulas (synthetic)


def gpt_spec(
    num_blocks: int = 24,
    hidden: int = 2048,
    num_heads: int = 16,
    seq_len: int = 2048,
    micro_batch: int = 1,
    vocab_size: int = 51200,
    flops_per_second: float | None = None,
    bytes_per_second: float | None = None,
) -> ModelSpec:
    """A GPT-like decoder: embedding, ``num_blocks`` transformer blocks, output layer, loss (pipe01).

    Synthetic: every number comes from a formula, nothing is measured. With s = seq_len,
    b = micro_batch, h = hidden, a = num_heads, V = vocab_size, 2-byte (bf16) activations:

    * embedding (word + learned positions, (V + s)·h parameters): a gather, memory-bound —
      forward and backward move 3·2sbh bytes each (two rows read, one written) at
      ``bytes_per_second``; stashes its dropout mask, sbh bytes (Korthikanti et al. 2022, §4.3);
    * block: matmul FLOPs 24bsh² + 4bs²h forward and twice that backward (Korthikanti et al.
      2022, App. A, Eq. 7, without recomputation) at ``flops_per_second``; 12h² + 13h parameters; stashes
      sbh(34 + 5as/h) bytes (Korthikanti et al. 2022, eq. 1; course_lib.memory);
    * output (final layer norm + projection to the vocabulary with its own, untied Vh weights —
      Megatron-LM ties them to the embedding by default and keeps a copy of it on the last stage —
      Vh + 2h parameters): 2bshV FLOPs forward, twice
      backward; stashes its two inputs, 2sbh + 2sbh bytes; emits bf16 logits, 2sbV bytes;
    * loss (cross-entropy): memory-bound — 2sbV bytes read and 4sbV written forward and backward;
      stashes the fp32 logits, 4sbV bytes (Korthikanti et al. 2022, §4.3).

    Every cut between blocks carries the hidden state, 2sbh bytes. Defaults: an A100 SXM 80GB at
    half its dense bf16 peak (156 TFLOP/s achieved) and 80 % of its HBM bandwidth.
    """
    L = whole_count(num_blocks, "num_blocks")
    h = whole_count(hidden, "hidden")
    a = whole_count(num_heads, "num_heads")
    s = whole_count(seq_len, "seq_len")
    b = whole_count(micro_batch, "micro_batch")
    V = whole_count(vocab_size, "vocab_size")
    gpu = accelerator("A100 SXM 80GB", "bf16")
    rate = 0.5 * gpu.peak_flops if flops_per_second is None else flops_per_second
    rate = number(rate, "flops_per_second", positive=True)
    bw = 0.8 * gpu.memory_bandwidth if bytes_per_second is None else bytes_per_second
    bw = number(bw, "bytes_per_second", positive=True)
    sbh = float(s) * b * h
    sbv = float(s) * b * V
    block_flops = 24.0 * sbh * h + 4.0 * float(s) * sbh
    head_flops = 2.0 * sbh * V
    gather = 3 * 2.0 * sbh / bw
    loss_time = (2.0 * sbv + 4.0 * sbv) / bw
    layers = [Layer("embedding", gather, gather, float((V + s) * h), sbh, 2.0 * sbh, "embedding")]
    block_act = activation_bytes_per_layer(s, b, h, a)
    layers += [
        Layer(
            f"block {i}",
            block_flops / rate,
            2.0 * block_flops / rate,
            12.0 * h * h + 13.0 * h,
            block_act,
            2.0 * sbh,
            "block",
        )
        for i in range(L)
    ]
    layers.append(
        Layer(
            "output", head_flops / rate, 2 * head_flops / rate, float(V * h + 2 * h), 4.0 * sbh,
            2.0 * sbv, "output",
        )
    )  # fmt: skip
    layers.append(Layer("loss", loss_time, loss_time, 0.0, 4.0 * sbv, 0.0, "loss"))
    return ModelSpec(tuple(layers), name=f"GPT-like, {L} blocks, h={h}, s={s}, b={b}")


def even_blocks(spec: ModelSpec, num_stages: int) -> tuple[int, ...]:
    """Boundaries giving every stage the same number of blocks (±1, earlier stages first), the
    layers before the first block on stage 0 and those after the last on the last stage: the
    usual "equal layers per stage" split (pipe01)."""
    check_spec(spec)
    p = whole_count(num_stages, "num_stages")
    blocks = [i for i, kind in enumerate(spec.kinds) if kind == "block"]
    if len(blocks) < p:
        raise ValueError(f"num_stages = {p} exceeds the {len(blocks)} blocks of the spec")
    if blocks != list(range(blocks[0], blocks[0] + len(blocks))):
        raise ValueError("the spec's blocks are not contiguous")
    base, extra = divmod(len(blocks), p)
    counts = [base + (s < extra) for s in range(p)]
    bounds = [0]
    start = blocks[0]
    for c in counts[:-1]:
        start += c
        bounds.append(start)
    bounds.append(spec.num_layers)
    return tuple(bounds)


# --------------------------------------------------------------------------------------------
# partitions: validation, stage times, boundary traffic, memory


def check_boundaries(
    boundaries: object, num_layers: int, num_stages: int | None = None
) -> tuple[int, ...]:
    """Validate stage boundaries 0 = b_0 < b_1 < ... < b_p = num_layers and return them as ints.

    The error says which layers a bad partition skips or repeats, or which stage is empty.
    """
    n = whole_count(num_layers, "num_layers")
    if isinstance(boundaries, str | bytes) or not isinstance(boundaries, Sequence | np.ndarray):
        raise TypeError(
            f"boundaries must be a sequence of ints 0 = b_0 < ... < b_p = {n}, got "
            f"{boundaries!r} ({type(boundaries).__name__})"
        )
    values = (
        list(np.asarray(boundaries).ravel())
        if isinstance(boundaries, np.ndarray)
        else list(boundaries)
    )
    out = []
    for k, v in enumerate(values):
        if isinstance(v, bool | np.bool_) or not isinstance(v, Integral):
            raise TypeError(f"boundaries[{k}] must be an int, got {v!r} ({type(v).__name__})")
        out.append(int(v))
    if len(out) < 2:
        raise ValueError(f"boundaries needs at least 2 entries (0 and {n}), got {out}")
    if out[0] != 0:
        if out[0] > 0:
            raise ValueError(f"boundaries {out} skip layers 0..{out[0] - 1}: b_0 must be 0")
        raise ValueError(f"boundaries {out} start at {out[0]}: b_0 must be 0")
    if out[-1] != n:
        if out[-1] < n:
            raise ValueError(
                f"boundaries {out} skip layers {out[-1]}..{n - 1}: the last boundary must be "
                f"num_layers = {n}"
            )
        raise ValueError(
            f"boundaries {out} name layers up to {out[-1] - 1} but the model has {n} (0..{n - 1})"
        )
    for s in range(len(out) - 1):
        if out[s + 1] < out[s]:
            raise ValueError(
                f"boundaries {out} repeat layers {out[s + 1]}..{out[s] - 1} (b_{s + 1} = "
                f"{out[s + 1]} < b_{s} = {out[s]}): boundaries must increase"
            )
        if out[s + 1] == out[s]:
            raise ValueError(f"boundaries {out}: stage {s} holds no layer (b_{s} = b_{s + 1})")
    if num_stages is not None and len(out) - 1 != whole_count(num_stages, "num_stages"):
        raise ValueError(f"boundaries {out} make {len(out) - 1} stages, expected {num_stages}")
    return tuple(out)


def stage_sums(values: Sequence[float], boundaries: Sequence[int]) -> np.ndarray:
    """Per-stage sums of a per-layer quantity: entry s = sum of values[b_s:b_{s+1}] (pipe01)."""
    v = nonnegative_array(values, "values").ravel()
    bounds = check_boundaries(boundaries, len(v))
    return np.add.reduceat(v, np.asarray(bounds[:-1], dtype=np.intp))


def stage_times(spec: ModelSpec, boundaries: Sequence[int], link_bandwidth: float) -> np.ndarray:
    """t_s = Σ (t_f + t_b) over its layers + 2·(A_in + A_out)/β, seconds per microbatch (pipe01).

    A_in, A_out: bytes at the stage's first and last cut (0 at the ends of the model); β: link
    bandwidth in bytes/s. Each crossing (activation forward, gradient backward) holds both ends.
    """
    check_spec(spec)
    bounds = check_boundaries(boundaries, spec.num_layers)
    beta = check_link_bandwidth(link_bandwidth)
    compute = stage_sums(spec.layer_times, bounds)
    cuts = np.concatenate([[0.0], spec.cut_bytes, [0.0]])  # cuts[k]: bytes at cut k
    inner = np.asarray(bounds, dtype=np.intp)
    return compute + 2.0 * (cuts[inner[:-1]] + cuts[inner[1:]]) / beta


def cut_traffic(spec: ModelSpec, link_bandwidth: float, num_microbatches: int = 1) -> np.ndarray:
    """Seconds per step the link spends on each candidate cut k = 1..n - 1: 2·m·A_k/β (pipe01).

    Each of the m microbatches sends its activation forward and its gradient backward.
    """
    check_spec(spec)
    beta = check_link_bandwidth(link_bandwidth)
    m = whole_count(num_microbatches, "num_microbatches")
    return 2.0 * m * spec.cut_bytes / beta


def stage_in_flight(num_stages: int, num_microbatches: int, schedule: str = "1F1B") -> np.ndarray:
    """Peak stashed microbatches per stage: min(m, p - s) under 1F1B, m under GPipe (pipe01)."""
    p = whole_count(num_stages, "num_stages")
    m = whole_count(num_microbatches, "num_microbatches")
    if schedule_name(schedule) == "GPipe":
        return np.full(p, m, dtype=np.int64)
    return np.array([peak_in_flight_one_f_one_b(p, m, s) for s in range(p)], dtype=np.int64)


def layer_memory(
    spec: ModelSpec,
    num_stages: int,
    num_microbatches: int,
    schedule: str = "1F1B",
    bytes_per_param: dict[str, float] | None = None,
) -> np.ndarray:
    """Bytes each layer holds on each stage: a (p, n) array whose [s, i] is layer i's parameters ×
    ``bytes_per_param`` (default 2 + 2 + 12) + in_flight[s] × its stash per microbatch (pipe01).

    A stage's memory is the sum of its layers' entries in its own row (:func:`stage_memory`'s
    total), so a layer costs more on the early stages, which keep more microbatches in flight.
    """
    check_spec(spec)
    per_param = sum(per_param_bytes(bytes_per_param).values())
    in_flight = stage_in_flight(num_stages, num_microbatches, schedule).astype(float)
    grid = per_param * spec.num_params[None, :] + in_flight[:, None] * spec.activation_bytes[None]
    return read_only(grid)


def stage_memory(
    spec: ModelSpec,
    boundaries: Sequence[int],
    num_microbatches: int,
    schedule: str = "1F1B",
    bytes_per_param: dict[str, float] | None = None,
) -> pd.DataFrame:
    """Per-stage bytes: weights, gradients, optimizer state, activations × in-flight, total (pipe01).

    Parameters × ``bytes_per_param`` (default mixed-precision Adam, 2 + 2 + 12) + in_flight ×
    the stage's stashed bytes per microbatch, in_flight from :func:`stage_in_flight`. Columns:
    weights, gradients, optimizer, activations, total, in_flight, stash_per_microbatch.
    """
    check_spec(spec)
    bounds = check_boundaries(boundaries, spec.num_layers)
    per_param = per_param_bytes(bytes_per_param)
    in_flight = stage_in_flight(len(bounds) - 1, num_microbatches, schedule)
    params = stage_sums(spec.num_params, bounds)
    stash = stage_sums(spec.activation_bytes, bounds)
    frame = pd.DataFrame({k: v * params for k, v in per_param.items()})
    frame["activations"] = in_flight * stash
    frame["total"] = frame[["weights", "gradients", "optimizer", "activations"]].sum(axis=1)
    frame["in_flight"] = in_flight
    frame["stash_per_microbatch"] = stash
    frame.index.name = "stage"
    return frame


def stage_table(
    spec: ModelSpec,
    boundaries: Sequence[int],
    link_bandwidth: float,
    num_microbatches: int,
    schedule: str = "1F1B",
) -> pd.DataFrame:
    """One row per stage: its layers, compute, transfer and stage time (s), memory (bytes) (pipe01)."""
    check_spec(spec)
    bounds = check_boundaries(boundaries, spec.num_layers)
    times = stage_times(spec, bounds, link_bandwidth)
    compute = stage_sums(spec.layer_times, bounds)
    memory = stage_memory(spec, bounds, num_microbatches, schedule)
    return pd.DataFrame(
        {
            "layers": [
                f"{spec.names[a]} .. {spec.names[b - 1]}" if b - a > 1 else spec.names[a]
                for a, b in zip(bounds[:-1], bounds[1:], strict=True)
            ],
            "num_layers": np.diff(bounds),
            "compute": compute,
            "transfer": times - compute,
            "stage_time": times,
            "memory": memory["total"],
            "in_flight": memory["in_flight"],
        }
    ).rename_axis("stage")


# --------------------------------------------------------------------------------------------
# the contiguous min-max partition (dynamic programming)


@dataclass(frozen=True, eq=False)
class StageCosts:
    """Cost of every candidate stage of a spec: time[a, b] of layers a..b-1 (s per microbatch,
    transfers included) and, per stage index s, memory[s, a, b] (bytes) (pipe01).

    Entries with b <= a are +inf. Build it with :func:`stage_costs`.
    """

    time: np.ndarray
    memory: np.ndarray | None
    num_layers: int


def stage_costs(
    spec: ModelSpec,
    num_stages: int,
    link_bandwidth: float,
    num_microbatches: int,
    schedule: str = "1F1B",
    bytes_per_param: dict[str, float] | None = None,
) -> StageCosts:
    """Time and memory of every candidate stage of ``spec`` split into ``num_stages`` (pipe01).

    time[a, b] is :func:`stage_times` of a stage holding layers a..b-1; memory[s, a, b] is
    :func:`stage_memory`'s total for that stage at position s (its in-flight count).
    """
    check_spec(spec)
    n = spec.num_layers
    p = whole_count(num_stages, "num_stages")
    beta = check_link_bandwidth(link_bandwidth)
    per_param = per_param_bytes(bytes_per_param)
    in_flight = stage_in_flight(p, num_microbatches, schedule).astype(float)
    a = np.arange(n + 1)[:, None]
    b = np.arange(n + 1)[None, :]
    valid = b > a

    def ranged(values: np.ndarray) -> np.ndarray:
        prefix = np.concatenate([[0.0], np.cumsum(values)])
        return np.where(valid, prefix[None, :] - prefix[:, None], np.inf)

    cuts = np.concatenate([[0.0], spec.cut_bytes, [0.0]])
    transfer = 2.0 * (cuts[:, None] + cuts[None, :]) / beta
    time = ranged(spec.layer_times) + np.where(valid, transfer, 0.0)
    state = ranged(spec.num_params) * sum(per_param.values())
    stash = ranged(spec.activation_bytes)
    memory = state[None, :, :] + in_flight[:, None, None] * np.where(valid, stash, 0.0)[None]
    return StageCosts(read_only(time), read_only(memory), n)


@dataclass(frozen=True)
class Partition:
    """A partition's boundaries, its stage costs and the bottleneck max_s cost (pipe01)."""

    boundaries: tuple[int, ...]
    stage_costs: tuple[float, ...]
    bottleneck: float
    stage_memory: tuple[float, ...] | None = None

    @property
    def layer_counts(self) -> tuple[int, ...]:
        return tuple(int(x) for x in np.diff(self.boundaries))


def _min_max(cost: np.ndarray, num_stages: int) -> tuple[float, tuple[int, ...]]:
    """Min over contiguous partitions of max_s cost[s, b_s, b_{s+1}], with the lexicographically
    smallest optimal boundaries; (inf, ()) if every partition has an infinite stage."""
    p, n1, _ = cost.shape
    n = n1 - 1
    # best[s, a]: the least bottleneck covering layers a..n-1 with stages s..p-1.
    best = np.full((p + 1, n1), np.inf)
    best[p, n] = 0.0
    for s in range(p - 1, -1, -1):
        best[s] = np.min(np.maximum(cost[s], best[s + 1][None, :]), axis=1)
    value = float(best[0, 0])
    if not math.isfinite(value):
        return value, ()
    bounds = [0]
    for s in range(p):
        a = bounds[-1]
        ok = np.maximum(cost[s, a], best[s + 1]) <= value
        bounds.append(int(np.argmax(ok)))
    return value, tuple(bounds)


def smallest_memory_limit(costs: StageCosts, num_stages: int) -> float:
    """The least memory limit (bytes) some partition into ``num_stages`` meets: min over
    partitions of the largest stage memory — the min-max partition of memory (pipe01)."""
    if not isinstance(costs, StageCosts) or costs.memory is None:
        raise TypeError(
            f"costs must be a StageCosts from stage_costs(), got {type(costs).__name__}"
        )
    p = whole_count(num_stages, "num_stages")
    if costs.memory.shape[0] != p:
        raise ValueError(
            f"costs were built for {costs.memory.shape[0]} stages but num_stages = {p}"
        )
    if p > costs.num_layers:
        raise ValueError(
            f"num_stages = {p} exceeds the {costs.num_layers} layers: a stage would be empty"
        )
    return _min_max(costs.memory, p)[0]


def min_max_partition(
    costs: Sequence[float] | StageCosts, num_stages: int, memory_limit: float | None = None
) -> Partition:
    """The contiguous partition into ``num_stages`` non-empty stages that minimises the slowest
    stage, by dynamic programming in O(p·n²) (pipe01).

    T*(s, a) = min over b > a of max(cost of layers a..b-1 on stage s, T*(s + 1, b)), T*(p, n) = 0.
    ``costs``: per-layer costs (a stage costs their sum), or a :class:`StageCosts` from
    :func:`stage_costs` (transfers included, and the memory a ``memory_limit`` in bytes applies
    to). Ties go to the lexicographically smallest boundaries (the earliest cuts). A limit no
    partition meets raises ValueError stating the smallest feasible limit.
    """
    p = whole_count(num_stages, "num_stages")
    if isinstance(costs, StageCosts):
        n = costs.num_layers
        time = np.broadcast_to(costs.time, (p, n + 1, n + 1))
        memory = costs.memory
        if memory is not None and memory.shape[0] != p:
            raise ValueError(f"costs were built for {memory.shape[0]} stages but num_stages = {p}")
    else:
        values = nonnegative_array(costs, "costs")
        if values.ndim != 1 or len(values) == 0:
            raise ValueError(
                f"costs must be a non-empty 1-D sequence of per-layer costs, got {costs!r}"
            )
        n = len(values)
        prefix = np.concatenate([[0.0], np.cumsum(values)])
        grid = prefix[None, :] - prefix[:, None]
        grid[np.tril_indices(n + 1)] = np.inf
        time = np.broadcast_to(grid, (p, n + 1, n + 1))
        memory = None
    if p > n:
        raise ValueError(f"num_stages = {p} exceeds the {n} layers: a stage would be empty")
    if memory_limit is not None:
        limit = number(memory_limit, "memory_limit (bytes)", positive=True)
        if memory is None:
            raise ValueError(
                "memory_limit needs the stages' memory: pass costs=stage_costs(spec, ...), not "
                "per-layer costs"
            )
        lowest, _ = _min_max(memory, p)
        if lowest > limit:
            raise ValueError(
                f"memory_limit = {limit:.6g} B ({limit / 2**30:.3f} GiB) is below what any "
                f"partition into {p} stages needs: the smallest feasible limit is {lowest:.6g} B "
                f"({lowest / 2**30:.3f} GiB)"
            )
        time = np.where(memory <= limit, time, np.inf)
    value, bounds = _min_max(np.ascontiguousarray(time), p)
    stage_cost = tuple(
        float(time[s, a, b]) for s, (a, b) in enumerate(zip(bounds, bounds[1:], strict=False))
    )
    mem = None
    if memory is not None:
        mem = tuple(
            float(memory[s, a, b]) for s, (a, b) in enumerate(zip(bounds, bounds[1:], strict=False))
        )
    return Partition(bounds, stage_cost, value, mem)
