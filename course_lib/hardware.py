"""Accelerator peak throughputs with their conventions: dtype, dense or 2:4 sparse, and source (cost04).

A peak FLOP/s figure means nothing without its convention. NVIDIA's datasheets print tensor-core
figures "with sparsity": 2:4 structured sparsity (two of every four weights zero) lets the tensor
cores skip half the multiply-adds, and the printed number counts the skipped ones as done. Dense
training does not use it, so the *eligible* peak for MFU is the dense tensor-core peak in the
training dtype — half the datasheet's sparse figure (:func:`eligible_peak` refuses sparse peaks).

Conventions of the table below (one :class:`Accelerator` row per accelerator, dtype, sparsity):

* FLOP/s count a fused multiply-add as 2 FLOPs (the vendors' convention);
* ``fp32`` is the non-tensor-core (CUDA core) FP32 rate; ``tf32``, ``bf16``, ``fp16``, ``fp8`` are
  tensor-core rates;
* ``memory_bytes`` is the datasheet capacity in bytes, read as binary: "80GB" as 80 GiB (2**30
  bytes), "141GB" as 141 GiB. NVIDIA's datasheets do not say which unit they mean; the binary
  reading is an inference from what the driver reports (Google's TPU docs state "32 GiB"
  outright). nvidia-smi shows 81920 MiB, exactly 80 GiB, for an A100 80GB. The caveat is Hopper:
  81559 MiB (79.6 GiB) for an H100 80GB HBM3 and 143771 MiB (140.4 GiB) for an H200 are more than
  80e9 and 141e9 bytes but less than 80 and 141 GiB, so for these two the binary value slightly
  overstates what a program can use;
* ``memory_bandwidth`` in bytes/s, datasheet figure with "GB/s"/"TB/s" read as 10**9/10**12.

Sources:

* A100: "NVIDIA A100 Tensor Core GPU" datasheet (nvidia-a100-datasheet-us-nvidia-1758950-r4-web),
  column "A100 80GB SXM": FP32 19.5 TFLOPS; TF32 Tensor Core 156 | 312*; BF16 and FP16 Tensor
  Core 312 | 624* TFLOPS (* with sparsity); 80GB HBM2e; 2,039 GB/s. The column also lists FP64
  9.7, FP64 Tensor Core 19.5 and INT8 Tensor Core 624 | 1,248* TOPS, which no table row holds:
  they are not training dtypes of the lessons.
* H100 SXM: "NVIDIA H100 Tensor Core GPU" datasheet, column "H100 SXM": FP32 67 TFLOPS; TF32
  Tensor Core 989*; BF16 and FP16 Tensor Core 1,979*; FP8 Tensor Core 3,958* TFLOPS (* with
  sparsity: the datasheet prints only sparse tensor figures); 80GB; 3.35 TB/s. Dense figures from
  the "NVIDIA H100 Tensor Core GPU Architecture" whitepaper (H100 SXM5: FP16/BF16 989.4, TF32 494.7,
  FP8 1,978.9 TFLOPS dense), rounded to whole TFLOPS as the datasheet prints them.
* H200 SXM: "NVIDIA H200 Tensor Core GPU" datasheet, column "H200 SXM": the same compute figures
  as H100 SXM (same GH100 silicon and clocks); 141GB HBM3e; 4.8 TB/s.
* TPU v4: Google Cloud TPU documentation, "TPU v4" system architecture: peak compute per chip 275
  teraflops (bf16 or int8); HBM2 32 GiB, 1200 GBps. No sparse figure is published.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

import pandas as pd

__all__ = [
    "ACCELERATORS",
    "Accelerator",
    "accelerator",
    "accelerator_table",
    "eligible_peak",
    "peak",
]

Sparsity = Literal["dense", "2:4 sparse"]


@dataclass(frozen=True)
class Accelerator:
    """One peak-throughput figure of one accelerator, with dtype, dense/sparse convention and source (cost04)."""

    name: str
    peak_flops: float
    dtype: str
    sparsity: Sparsity
    memory_bytes: float
    memory_bandwidth: float
    source: str
    note: str = ""

    def __post_init__(self) -> None:
        if self.sparsity not in ("dense", "2:4 sparse"):
            raise ValueError(f"sparsity must be 'dense' or '2:4 sparse', got {self.sparsity!r}")
        if not self.peak_flops > 0:
            raise ValueError(f"{self.name} {self.dtype}: peak_flops must be > 0")


_A100_SRC = (
    "NVIDIA A100 Tensor Core GPU datasheet (nvidia-a100-datasheet-us-nvidia-1758950-r4-web), "
    "column A100 80GB SXM"
)
_H100_SRC = "NVIDIA H100 Tensor Core GPU datasheet, column H100 SXM"
_H100_DENSE = (
    "dense figure: NVIDIA H100 Tensor Core GPU Architecture whitepaper (H100 SXM5), rounded to "
    "whole TFLOPS; the datasheet prints only the 2:4-sparse figure, twice this"
)
_H200_SRC = "NVIDIA H200 Tensor Core GPU datasheet, column H200 SXM"
_TPU_SRC = "Google Cloud TPU documentation, TPU v4 system architecture"

_A100 = dict(name="A100 SXM 80GB", memory_bytes=80 * 2**30, memory_bandwidth=2039e9)
_H100 = dict(name="H100 SXM", memory_bytes=80 * 2**30, memory_bandwidth=3.35e12)
_H200 = dict(name="H200 SXM", memory_bytes=141 * 2**30, memory_bandwidth=4.8e12)
_SPARSE_NOTE = (
    "2:4 structured sparsity (datasheet asterisk): not eligible for MFU of dense training"
)


def _hopper(base: dict, source: str) -> list[Accelerator]:
    same = "" if base is _H100 else "compute figures identical to H100 SXM; "
    return [
        Accelerator(
            **base,
            peak_flops=67e12,
            dtype="fp32",
            sparsity="dense",
            source=source,
            note=same + "non-tensor-core FP32",
        ),
        Accelerator(
            **base,
            peak_flops=495e12,
            dtype="tf32",
            sparsity="dense",
            source=source,
            note=same + _H100_DENSE,
        ),
        Accelerator(
            **base,
            peak_flops=989e12,
            dtype="tf32",
            sparsity="2:4 sparse",
            source=source,
            note=same + _SPARSE_NOTE,
        ),
        Accelerator(
            **base,
            peak_flops=989e12,
            dtype="bf16",
            sparsity="dense",
            source=source,
            note=same + _H100_DENSE,
        ),
        Accelerator(
            **base,
            peak_flops=1979e12,
            dtype="bf16",
            sparsity="2:4 sparse",
            source=source,
            note=same + _SPARSE_NOTE,
        ),
        Accelerator(
            **base,
            peak_flops=989e12,
            dtype="fp16",
            sparsity="dense",
            source=source,
            note=same + _H100_DENSE,
        ),
        Accelerator(
            **base,
            peak_flops=1979e12,
            dtype="fp16",
            sparsity="2:4 sparse",
            source=source,
            note=same + _SPARSE_NOTE,
        ),
        Accelerator(
            **base,
            peak_flops=1979e12,
            dtype="fp8",
            sparsity="dense",
            source=source,
            note=same + _H100_DENSE,
        ),
        Accelerator(
            **base,
            peak_flops=3958e12,
            dtype="fp8",
            sparsity="2:4 sparse",
            source=source,
            note=same + _SPARSE_NOTE,
        ),
    ]


#: The accelerator table: one row per (accelerator, dtype, dense/sparse) peak, each with its source.
ACCELERATORS: tuple[Accelerator, ...] = (
    Accelerator(
        **_A100,
        peak_flops=19.5e12,
        dtype="fp32",
        sparsity="dense",
        source=_A100_SRC,
        note="non-tensor-core FP32",
    ),
    Accelerator(**_A100, peak_flops=156e12, dtype="tf32", sparsity="dense", source=_A100_SRC),
    Accelerator(
        **_A100,
        peak_flops=312e12,
        dtype="tf32",
        sparsity="2:4 sparse",
        source=_A100_SRC,
        note=_SPARSE_NOTE,
    ),
    Accelerator(**_A100, peak_flops=312e12, dtype="bf16", sparsity="dense", source=_A100_SRC),
    Accelerator(
        **_A100,
        peak_flops=624e12,
        dtype="bf16",
        sparsity="2:4 sparse",
        source=_A100_SRC,
        note=_SPARSE_NOTE,
    ),
    Accelerator(**_A100, peak_flops=312e12, dtype="fp16", sparsity="dense", source=_A100_SRC),
    Accelerator(
        **_A100,
        peak_flops=624e12,
        dtype="fp16",
        sparsity="2:4 sparse",
        source=_A100_SRC,
        note=_SPARSE_NOTE,
    ),
    *_hopper(_H100, _H100_SRC),
    *_hopper(_H200, _H200_SRC),
    Accelerator(
        name="TPU v4",
        peak_flops=275e12,
        dtype="bf16",
        sparsity="dense",
        memory_bytes=32 * 2**30,
        memory_bandwidth=1200e9,
        source=_TPU_SRC,
        note="per chip (two TensorCores); the PaLM paper's MFU uses this peak",
    ),
)

_DTYPE_ALIASES = {
    "bf16": "bf16", "bfloat16": "bf16",
    "fp16": "fp16", "float16": "fp16", "half": "fp16",
    "tf32": "tf32", "tensorfloat32": "tf32",
    "fp32": "fp32", "float32": "fp32", "float": "fp32",
    "fp8": "fp8", "float8": "fp8",
}  # fmt: skip


def _dtype(dtype: str) -> str:
    key = str(dtype).strip().lower().replace("-", "").replace("_", "")
    if key not in _DTYPE_ALIASES:
        raise ValueError(f"unknown dtype {dtype!r}; known: {sorted(set(_DTYPE_ALIASES.values()))}")
    return _DTYPE_ALIASES[key]


def accelerator(name: str, dtype: str, sparse: bool = False) -> Accelerator:
    """The table row for (accelerator, dtype, dense or 2:4 sparse); ValueError for unknown combos (cost04)."""
    names = sorted({a.name for a in ACCELERATORS})
    match = [a for a in ACCELERATORS if a.name.lower() == str(name).strip().lower()]
    if not match:
        raise ValueError(f"unknown accelerator {name!r}; known: {names}")
    dt = _dtype(dtype)
    sparsity = "2:4 sparse" if sparse else "dense"
    for a in match:
        if a.dtype == dt and a.sparsity == sparsity:
            return a
    have = sorted(f"{a.dtype} {a.sparsity}" for a in match)
    raise ValueError(f"{match[0].name} has no {sparsity} {dt} peak in the table; available: {have}")


def peak(name: str, dtype: str, sparse: bool = False) -> float:
    """Peak FLOP/s of an accelerator in a dtype, dense (default) or 2:4 sparse, from the table (cost04)."""
    return accelerator(name, dtype, sparse).peak_flops


def eligible_peak(name: str, dtype: str, sparse: bool = False) -> float:
    """Peak eligible for MFU/HFU: the dense peak in the training dtype; refuses sparse peaks (cost04).

    Raises ValueError when ``sparse`` is True: a 2:4-sparse figure counts multiply-adds the
    hardware skips on structured-sparse weights, which dense training does not have, so MFU
    against it is understated by 2x and incomparable with published MFU.
    """
    if sparse:
        dense = accelerator(name, dtype, sparse=False).peak_flops
        raise ValueError(
            f"the 2:4-sparse peak of {name} ({dtype}) is not eligible for MFU/HFU of dense "
            f"training: use the dense peak {dense:.4g} FLOP/s (half the sparse figure)"
        )
    return accelerator(name, dtype, sparse=False).peak_flops


def accelerator_table() -> pd.DataFrame:
    """The accelerator table as a DataFrame (one row per peak; TFLOP/s, GiB, GB/s columns added) (cost04)."""
    df = pd.DataFrame([asdict(a) for a in ACCELERATORS])
    df["peak_tflops"] = df["peak_flops"] / 1e12
    df["memory_gib"] = df["memory_bytes"] / 2**30
    df["memory_bandwidth_gbs"] = df["memory_bandwidth"] / 1e9
    return df
