"""Checks that several of course_lib.pipeline.partition's public routines share (pipe01).

They live apart from partition.py on purpose: a grade cell that forbids one partition routine
(course_lib.checks.forbid) disables the private helpers *of partition.py* that it calls, so a
helper shared by two routines must not be one of them.
"""

from __future__ import annotations

import numpy as np

from course_lib.validate import number

ADAM_MIXED_PRECISION: dict[str, float] = {"weights": 2.0, "gradients": 2.0, "optimizer": 12.0}
"""Bytes per parameter under mixed-precision Adam: bf16 weights and gradients, fp32 master weights,
momentum and variance (2 + 2 + 12 = 16; Rajbhandari et al. 2020, "ZeRO", §3.1) (pipe01)."""

SCHEDULES = ("1F1B", "GPipe")


def read_only(array: np.ndarray) -> np.ndarray:
    """``array``, flagged read-only."""
    array.setflags(write=False)
    return array


def per_param_bytes(bytes_per_param: object) -> dict[str, float]:
    """Validated {weights, gradients, optimizer} bytes per parameter (default mixed-precision Adam)."""
    if bytes_per_param is None:
        return dict(ADAM_MIXED_PRECISION)
    if not isinstance(bytes_per_param, dict) or set(bytes_per_param) != set(ADAM_MIXED_PRECISION):
        raise ValueError(
            f"bytes_per_param must be a dict with keys {sorted(ADAM_MIXED_PRECISION)}, got "
            f"{bytes_per_param!r}"
        )
    return {k: number(v, f"bytes_per_param[{k!r}]") for k, v in bytes_per_param.items()}


def model_spec(spec: object) -> object:
    """``spec`` if it is a ModelSpec, else a TypeError naming the argument."""
    from .partition import ModelSpec

    if not isinstance(spec, ModelSpec):
        raise TypeError(f"spec must be a ModelSpec, got {type(spec).__name__}")
    return spec


def link_bandwidth(value: object) -> float:
    """A link bandwidth in bytes/s, > 0."""
    return number(value, "link_bandwidth (bytes/s)", positive=True)


def schedule_name(schedule: object) -> str:
    """'1F1B' or 'GPipe'."""
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
    return str(schedule)
