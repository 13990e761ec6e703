"""Argument checks shared by course_lib's model modules.

Each check returns the value converted (a float, an int, a float array, a name) or raises
ValueError with a message that names the argument and says what is wrong with it, so a bad input
never turns into a silent NaN further on.

These checks live in their own module, with public names, on purpose: an exercise's grade cell
disables a forbidden routine together with the private helpers *of its module* that it calls
(course_lib.checks.forbid). Validation that several public routines share must therefore not be a
private helper of their module, or forbidding one routine would break the others. Keep a model
module's private helpers for computation that only one routine uses.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["choice", "nonnegative_array", "number", "whole_count"]


def number(x: object, name: str, *, positive: bool = False) -> float:
    """`x` as a finite float >= 0 (> 0 with ``positive=True``); bools are refused.

    >>> number(3, "alpha")
    3.0
    """
    if isinstance(x, bool):
        raise ValueError(f"{name} must be a number, got {x!r}")
    try:
        v = float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {x!r}") from None
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {v}")
    if v < 0 or (positive and v == 0):
        raise ValueError(f"{name} must be {'> 0' if positive else '>= 0'}, got {v}")
    return v


def nonnegative_array(x: ArrayLike, name: str) -> NDArray[np.float64]:
    """`x` as a float array (any shape, a scalar gives a 0-d array) of finite values >= 0.

    The error names the first bad entry by its index, e.g. ``sizes[3] = nan must be finite and
    >= 0``; an entry that is not a number at all is reported as such.
    """
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be numbers, got {x!r}") from None
    bad = ~np.isfinite(a) | (a < 0)
    if bad.any():
        i = np.unravel_index(int(np.argmax(bad)), a.shape) if a.ndim else ()
        where = f"[{', '.join(map(str, i))}]" if a.ndim else ""
        raise ValueError(f"{name}{where} = {a[i]} must be finite and >= 0")
    return a


def whole_count(x: object, name: str, *, minimum: int = 1) -> int:
    """`x` as an int >= `minimum` (a rank count, a number of stages): ints and numpy integers
    only, so 2.0 and True are refused rather than silently truncated."""
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
        raise ValueError(f"{name} must be an int, got {x!r}")
    if x < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {x}")
    return int(x)


def choice(x: object, name: str, options: Iterable[str]) -> str:
    """`x` if it is one of `options`; else the error lists them (``unknown collective 'gather';
    known: all_reduce, ...``)."""
    known = tuple(options)
    if not isinstance(x, str) or x not in known:
        raise ValueError(f"unknown {name} {x!r}; known: {', '.join(known)}")
    return x
