"""Argument checks of course_lib.pipeline.p2p (pipe09): operations, programs, eager limits.

They live apart from p2p.py on purpose: a grade cell that forbids one p2p routine
(course_lib.checks.forbid) disables the private helpers *of p2p.py* that it calls, and the
operations a learner builds (``Send(1, 4096)``) validate themselves with these checks, so they
must keep working while a routine is disabled.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np


def whole(name: str, value: object, minimum: int) -> int:
    """``value`` as an int >= ``minimum`` (bools and floats are refused with a TypeError)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, Integral):
        raise TypeError(
            f"{name} must be an int >= {minimum}, got {value!r} ({type(value).__name__})"
        )
    value = int(value)
    if value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value}")
    return value


def seconds(name: str, value: object) -> float:
    """``value`` as a finite float >= 0 (a duration in seconds)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, Real):
        raise TypeError(
            f"{name} must be a number of seconds >= 0, got {value!r} ({type(value).__name__})"
        )
    value = float(value)
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number of seconds >= 0, got {value}")
    return value


def text(name: str, value: object, *, empty: bool = True) -> str:
    """``value`` as a str (non-empty unless ``empty``)."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {value!r} ({type(value).__name__})")
    if not empty and not value:
        raise ValueError(f"{name} must be a non-empty str")
    return value


def fmt_bytes(nbytes: int) -> str:
    """'512 B', '64 KiB', '4 MiB', '1.5 MiB': a size in binary units, exact where it can be."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= size:
            value = nbytes / size
            return f"{value:g} {unit}" if value == int(value) else f"{value:.3g} {unit}"
    return f"{nbytes} B"
