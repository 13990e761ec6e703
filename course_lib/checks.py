"""Answer checks for grade cells: exact types, clear expected-vs-got messages, no trust in answers.

Grade cells call these with the student's value. Every check
- accepts only plain types (float, int, str, tuple, numpy arrays, numpy scalars), so an object with
  an always-true ``__eq__`` earns nothing;
- compares with functions captured when this module was imported (in the locked setup cell,
  before any student code ran), so rebinding ``abs`` or patching ``math.isclose`` or
  ``numpy.allclose`` later changes nothing here;
- raises ``AnswerError`` (an AssertionError, so nbgrader scores the cell 0) with a message that
  says what was expected and, for a known wrong answer, which mistake produces it;
- returns None: nbgrader reads a number left as a grade cell's last output as partial credit, so a
  check that returned the checked value would silently turn full marks into a fraction.

When an instructor grades, grade cells run in the grader's trusted checker, not in the student's
kernel (course_lib.machinery.grader.checker): there an ``AnswerError``'s ``safe`` text (the mistake
without any value) is what feedback shows for a hidden test, and ``forbid`` hands its targets to
the grader, which calls the student's function in a probe where those routines are disabled.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable, Iterable, Mapping
from contextlib import contextmanager
from typing import Any

import numpy as np

# Captured at import time: later rebinding of these names by student code does not reach us.
_abs, _len, _isinstance, _type, _sorted, _repr = abs, len, isinstance, type, sorted, repr
_float, _int, _str, _tuple, _print = float, int, str, tuple, builtins.print
_isfinite, _isnan = math.isfinite, math.isnan
_np_asarray, _np_abs, _np_isnan = np.asarray, np.abs, np.isnan
_ndarray, _np_floating, _np_integer, _np_bool = np.ndarray, np.floating, np.integer, np.bool_
_FLOAT_TYPES = (float, int, np.floating, np.integer)


class AnswerError(AssertionError):
    """A checked answer is wrong; the message says how.

    ``name`` is the answer's name as the check was given it; ``safe`` says what is wrong without
    any value (expected, got, or an input), e.g. " is wrong — that is milliseconds": feedback on a
    hidden test shows only that.
    """

    def __init__(self, message: str, *, name: str | None = None, safe: str | None = None) -> None:
        super().__init__(message)
        self.name = name
        self.safe = safe


def _fmt(x: Any) -> str:
    if _type(x) is float or _isinstance(x, _np_floating):
        x = _float(x)
        return f"{x:.6g}" if x == 0 or 1e-4 <= _abs(x) < 1e7 else f"{x:.4e}"
    return _repr(x)


def _plain_float(name: str, got: Any) -> float:
    t = _type(got)
    if t is bool or t is _np_bool:
        raise AnswerError(
            f"{name}: expected a number, got a bool ({got!r})",
            name=name,
            safe=": expected a number, got a bool",
        )
    if not (t is float or t is int or _isinstance(got, (_np_floating, _np_integer))):
        why = f": expected a float, got {t.__name__}"
        raise AnswerError(name + why, name=name, safe=why)
    value = _float(got)
    if _isnan(value):
        raise AnswerError(f"{name}: got NaN", name=name, safe=": got NaN")
    return value


def _close(got: float, expected: float, rtol: float, atol: float) -> bool:
    return _abs(got - expected) <= atol + rtol * _abs(expected)


def _wrong(name: str, message: str, hint: str = "") -> AnswerError:
    """A wrong-value error: `message` shows values; its safe form only names the mistake."""
    return AnswerError(message, name=name, safe=" is wrong" + hint)


def _hint(
    got: Any, known_wrong: Mapping[Any, str] | None, close: Callable[[Any, Any], bool]
) -> str:
    for wrong, why in (known_wrong or {}).items():
        if close(got, wrong):
            return f" — that is {why}"
    return ""


def distinct_hints(
    pairs: Iterable[tuple[Any, str]], expected: Any, *, rtol: float = 0.0, atol: float = 0.0
) -> dict[Any, str]:
    """``known_wrong`` for a check from (value, mistake) pairs: only the values that differ from
    ``expected`` and from every other pair's value (numbers within atol + rtol·|b| count as the
    same; NaN never matches), so a hint never names one mistake where another, or the right
    answer, gives the same value."""
    items = _tuple(pairs)

    def same(a: Any, b: Any) -> bool:
        if _isinstance(a, _FLOAT_TYPES) and _isinstance(b, _FLOAT_TYPES):
            a, b = _float(a), _float(b)
            return not (_isnan(a) or _isnan(b)) and _close(a, b, rtol, atol)
        return a == b

    def usable(value: Any) -> bool:
        return not (_isinstance(value, _FLOAT_TYPES) and _isnan(_float(value)))

    return {
        value: why
        for value, why in items
        if usable(value)
        and not same(value, expected)
        and sum(1 for other, _ in items if same(value, other)) == 1
    }


def check_float(
    name: str,
    got: Any,
    expected: float,
    *,
    rtol: float = 1e-6,
    atol: float = 1e-12,
    unit: str = "",
    known_wrong: Mapping[float, str] | None = None,
) -> None:
    """Check a real-valued answer within rtol/atol; name the mistake behind a known wrong value."""
    value = _plain_float(name, got)
    expected = _float(expected)
    if not _close(value, expected, rtol, atol):
        unit_s = f" {unit}" if unit else ""
        hint = _hint(value, known_wrong, lambda g, w: _close(g, _float(w), rtol, atol))
        shown, got_s = _fmt(expected), _fmt(value)
        if shown == got_s:  # equal to 6 digits: show every digit
            shown, got_s = _repr(expected), _repr(value)
        raise _wrong(name, f"{name}: expected {shown}{unit_s}, got {got_s}{unit_s}{hint}", hint)


def check_int(
    name: str, got: Any, expected: int, *, known_wrong: Mapping[int, str] | None = None
) -> None:
    """Check an integer answer exactly (a bool or a float is not an int)."""
    t = _type(got)
    if t is bool or not (t is int or _isinstance(got, _np_integer)):
        raise AnswerError(
            f"{name}: expected an int, got {t.__name__} ({_fmt(got)})",
            name=name,
            safe=f": expected an int, got {t.__name__}",
        )
    value = _int(got)
    if value != _int(expected):
        hint = _hint(value, known_wrong, lambda g, w: g == w)
        raise _wrong(name, f"{name}: expected {expected}, got {value}{hint}", hint)


def check_choice(
    name: str,
    got: Any,
    expected: str,
    options: Mapping[str, str],
) -> None:
    """Check a decision: one of the stated option keys; the message explains the chosen option."""
    if _type(got) is not str:
        why = f": expected one of {_sorted(options)} as a str, got {_type(got).__name__}"
        raise AnswerError(
            name + why, name=name, safe=f": expected a str, got {_type(got).__name__}"
        )
    if got not in options:
        raise AnswerError(
            f"{name}: {got!r} is not one of the options {_sorted(options)}",
            name=name,
            safe=" is not one of the options",
        )
    if got != expected:
        why = f" {got!r} is not right — {got!r} means: {options[got]}"
        raise AnswerError(f"{name}:{why}", name=name, safe=f":{why}")


def _plain_names(name: str, got: Any) -> tuple[str, ...]:
    t = _type(got)
    if t not in (set, frozenset, list, tuple):
        why = f": expected a set (or list/tuple) of names, got {t.__name__}"
        raise AnswerError(name + why, name=name, safe=why)
    items = _tuple(got)
    for item in items:
        if _type(item) is not str:
            why = f": every element must be a str, got {_type(item).__name__}"
            raise AnswerError(name + why, name=name, safe=why)
    return items


def check_names(name: str, got: Any, expected: Iterable[str], *, ordered: bool = False) -> None:
    """Check a collection of names: as a set, or as a sequence when order matters."""
    items = _plain_names(name, got)
    expected = _tuple(expected)
    if ordered:
        if items != expected:
            raise _wrong(name, f"{name}: expected the sequence {list(expected)}, got {list(items)}")
        return
    if _len(set(items)) != _len(items):
        raise AnswerError(
            f"{name}: names repeat in {list(items)}", name=name, safe=": names repeat"
        )
    missing = _sorted(set(expected) - set(items))
    extra = _sorted(set(items) - set(expected))
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing {missing}")
        if extra:
            parts.append(f"should not include {extra}")
        raise _wrong(name, f"{name}: " + "; ".join(parts))


def check_array(
    name: str, got: Any, expected: Any, *, rtol: float = 1e-6, atol: float = 1e-12
) -> None:
    """Check a numpy array: exact ndarray type, shape, then values within rtol/atol."""
    if _type(got) is not _ndarray:
        why = f": expected a numpy.ndarray, got {_type(got).__name__}"
        raise AnswerError(name + why, name=name, safe=why)
    exp = _np_asarray(expected, dtype=_float)
    if got.shape != exp.shape:
        raise AnswerError(
            f"{name}: expected shape {exp.shape}, got {got.shape}",
            name=name,
            safe=" has the wrong shape",
        )
    if got.dtype.kind not in "fiu":
        why = f": expected numbers, got dtype {got.dtype}"
        raise AnswerError(name + why, name=name, safe=why)
    values = got.astype(_float)
    bad = (_np_abs(values - exp) > atol + rtol * _np_abs(exp)) | _np_isnan(values)
    if bad.any():
        i = _tuple(int(k) for k in np.argwhere(bad)[0])
        raise _wrong(
            name,
            f"{name}: {_int(bad.sum())} of {bad.size} values differ; first at index {i}: "
            f"expected {_fmt(exp[i])}, got {_fmt(values[i])}",
        )


def check_type(name: str, got: Any, *types: type) -> None:
    """Check that an answer has one of the exact types (no subclasses)."""
    if _type(got) not in types:
        wanted = " or ".join(t.__name__ for t in types)
        why = f": expected {wanted}, got {_type(got).__name__}"
        raise AnswerError(name + why, name=name, safe=why)


def check_range(name: str, got: Any, low: float, high: float, *, what: str = "") -> None:
    """Check that a number is finite and within [low, high] (a plausibility check)."""
    value = _plain_float(name, got)
    if not (_isfinite(value) and low <= value <= high):
        extra = f" ({what})" if what else ""
        raise AnswerError(
            f"{name}: {_fmt(value)} is outside [{low}, {high}]{extra}",
            name=name,
            safe=f" is outside its allowed range{extra}",
        )


def passed(exercise: str) -> None:
    """Print the visible-checks pass line a learner sees under a grade cell."""
    _print(f"✔ {exercise}: the visible checks pass. Hidden tests check more cases when graded.")


class DelegationError(AnswerError):
    """The student's function called a library routine the exercise asks them to write."""


def _routines(target: Any) -> list[Any]:
    """Every Python function object reached from `target`: itself, its ``__wrapped__`` chain (a
    decorated library function and its undecorated alias), and the module-private helpers (names
    starting with "_" in the same module) that any of these calls, transitively."""
    seen: dict[int, Any] = {}
    todo = [target]
    while todo:
        obj = todo.pop()
        for _ in range(16):  # a __wrapped__ chain, bounded
            if obj is None or id(obj) in seen:
                break
            if getattr(obj, "__code__", None) is not None:
                seen[id(obj)] = obj
                todo.extend(_private_helpers(obj))
            obj = getattr(obj, "__wrapped__", None)
    return list(seen.values())


def _private_helpers(func: Any) -> list[Any]:
    names: set[str] = set()
    codes = [func.__code__]
    while codes:
        code = codes.pop()
        names.update(code.co_names)
        codes.extend(c for c in code.co_consts if _type(c) is _type(func.__code__))
    module = getattr(func, "__module__", None)
    found = []
    for name in names:
        value = func.__globals__.get(name) if name.startswith("_") else None
        if getattr(value, "__code__", None) is not None and value.__module__ == module:
            found.append(value)
    return found


_grading_forbid: Callable[..., Any] | None = None  # set by the grader's trusted checker only


@contextmanager
def forbid(*targets: tuple[Any, str], exercise: str = "this exercise"):
    """Within the block, calling any (owner, attribute) target raises DelegationError.

    Every Python function reached from a target (its ``__wrapped__`` chain and the private helpers
    of its module that it calls) is disabled through its code object, so every route to the
    routine trips: a reference taken earlier, the undecorated alias, the private helper. Other
    callables are replaced on their owner for the duration of the block. This is the learner's
    instant feedback; when an instructor grades, the verdict is decided outside the student's
    process (course_lib.machinery.grader).
    """
    if _grading_forbid is not None:  # in the grader's checker: the probe decides
        with _grading_forbid(targets, exercise):
            yield
        return
    saved_code: list[tuple[Any, Any]] = []
    saved_attr: list[tuple[Any, str, Any]] = []
    try:
        for owner, attr in targets:
            original = getattr(owner, attr)
            label = f"{getattr(owner, '__name__', owner)}.{attr}"
            message = f"{exercise} asks you to write this yourself; your code called {label}"
            functions = _routines(original)
            for func in functions:
                if all(func is not f for f, _ in saved_code):
                    saved_code.append((func, func.__code__))
                    func.__code__ = _make_stub(message, func.__code__)
            if not functions:
                saved_attr.append((owner, attr, original))
                setattr(owner, attr, _make_tripwire(message))
        yield
    finally:
        for func, code in reversed(saved_code):
            func.__code__ = code
        for owner, attr, original in saved_attr:
            setattr(owner, attr, original)


def _make_tripwire(message: str) -> Callable[..., Any]:
    def tripwire(*_args: Any, **_kwargs: Any) -> Any:
        raise DelegationError(message)

    return tripwire


def _make_stub(message: str, like: Any) -> Any:
    """A code object that raises DelegationError(message) and fits `like` (name, free variables)."""
    # The stub runs with the disabled function's globals, so it imports what it raises.
    free = like.co_freevars
    inner = (
        "    def stub(*args, **kwargs):\n"
        + (f"        ({', '.join(free)},)\n" if free else "")
        + "        from course_lib.checks import DelegationError\n"
        + f"        raise DelegationError({message!r})\n"
    )
    source = (
        "def outer():\n"
        + "".join(f"    {name} = None\n" for name in free)
        + inner
        + "    return stub\n"
    )
    namespace: dict[str, Any] = {}
    exec(source, namespace)
    stub = namespace["outer"]().__code__
    return (
        stub.replace(co_name=like.co_name, co_freevars=free)
        if free
        else stub.replace(co_name=like.co_name)
    )
