"""Argument checks shared by the schedule generators, the simulator and the closed forms.

One place, so that ``gpipe(0, 8)``, ``fill_drain_overhead(0, 8)`` and ``simulate`` all reject bad
input with the same message naming the argument and its value.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from numbers import Integral, Real

import numpy as np


def check_int(name: str, value: object, minimum: int = 1) -> int:
    """Return ``value`` as an int if it is an integer >= ``minimum`` (bools and floats rejected)."""
    if type(value) is int and value >= minimum:  # the common case, without the ABC checks
        return value
    if isinstance(value, bool | np.bool_) or not isinstance(value, Integral):
        raise TypeError(
            f"{name} must be an int >= {minimum}, got {value!r} ({type(value).__name__})"
        )
    value = int(value)
    if value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value}")
    return value


def check_pipeline_shape(num_stages: object, num_microbatches: object) -> tuple[int, int]:
    """Validate (num_stages, num_microbatches): both ints >= 1."""
    return check_int("num_stages", num_stages), check_int("num_microbatches", num_microbatches)


def check_stage(stage: object, num_stages: int) -> int:
    """Validate a 0-based stage index in [0, num_stages)."""
    stage = check_int("stage", stage, minimum=0)
    if stage >= num_stages:
        raise ValueError(
            f"stage must be in [0, {num_stages - 1}] (num_stages={num_stages}), got {stage}"
        )
    return stage


def check_duration(name: str, value: object) -> float:
    """Return ``value`` as a float if it is a finite real number >= 0 (a time in seconds)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, Real):
        raise TypeError(
            f"{name} must be a finite number >= 0 (seconds), got {value!r} ({type(value).__name__})"
        )
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if value < 0:
        raise ValueError(f"{name} must be >= 0 (seconds), got {value}")
    return value


def check_costs(name: str, value: object, num_stages: int) -> np.ndarray:
    """A per-stage cost: a number (every stage) or a sequence of num_stages numbers -> float array."""
    return _per_item(name, value, num_stages, "per-stage costs", f"{num_stages} stages", "stage {}")


def check_hop_latencies(name: str, value: object, num_stages: int) -> np.ndarray:
    """A per-hop latency: a number (every hop) or num_stages - 1 numbers, hop k linking stage k and
    stage k + 1 in both directions -> float array of num_stages - 1 latencies (seconds)."""
    hops = num_stages - 1
    where = f"{hops} hop{'s' * (hops != 1)} ({num_stages} stages)"
    return _per_item(name, value, hops, "per-hop latencies", where, "stage {} -> {}", offset=1)


def _per_item(
    name: str, value: object, count: int, items_name: str, where: str, label: str, offset: int = 0
) -> np.ndarray:
    """A number (every item) or a 1-D sequence of ``count`` durations -> float array."""
    if isinstance(value, Real) and not isinstance(value, bool | np.bool_):
        return np.full(count, check_duration(name, value))
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise TypeError(
            f"{name} must be a number or a sequence of {count} {items_name}, "
            f"got {value!r} ({type(value).__name__})"
        )
    try:
        ndim = np.ndim(value)
    except ValueError:  # ragged nesting
        ndim = -1
    if ndim != 1:
        raise ValueError(
            f"{name} must be a number or a 1-D sequence of {count} {items_name}, got {value!r}"
        )
    items = list(value)
    if len(items) != count:
        raise ValueError(f"{name} has {len(items)} {items_name} but the schedule has {where}")
    return np.array(
        [
            check_duration(f"{name}[{k}] ({label.format(k, k + offset)})", v)
            for k, v in enumerate(items)
        ],
        dtype=float,
    )
