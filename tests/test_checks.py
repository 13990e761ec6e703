"""Grade-cell helpers: right answers pass, wrong ones fail with a message that says why."""

from __future__ import annotations

import math

import numpy as np
import pytest

from course_lib import checks
from course_lib.checks import AnswerError


class AlwaysEqual(float):
    def __eq__(self, other):  # noqa: D401
        return True

    __hash__ = float.__hash__


class Liar:
    def __eq__(self, other):
        return True

    def __float__(self):
        return 0.5


def test_check_float_accepts_close_values_and_numpy_scalars() -> None:
    checks.check_float("x", 0.2727272, 3 / 11, rtol=1e-5)
    checks.check_float("x", np.float64(3 / 11), 3 / 11)
    checks.check_float("x", 2, 2.0)


@pytest.mark.parametrize(
    "call",
    [
        lambda: checks.check_float("x", 0.5, 0.5),
        lambda: checks.check_int("m", 3, 3),
        lambda: checks.check_choice("c", "a", "a", {"a": "A"}),
        lambda: checks.check_names("n", ["a"], ["a"]),
        lambda: checks.check_array("a", np.array([1.0]), [1.0]),
        lambda: checks.check_type("t", 1, int),
        lambda: checks.check_range("r", 0.5, 0.0, 1.0),
    ],
)
def test_checks_return_none(call) -> None:
    """A check left as a grade cell's last line must not output a number (nbgrader partial credit)."""
    assert call() is None


def test_check_float_names_the_known_mistake() -> None:
    with pytest.raises(AnswerError, match="overhead relative to ideal compute"):
        checks.check_float(
            "idle", 0.375, 3 / 11, known_wrong={0.375: "the overhead relative to ideal compute"}
        )
    with pytest.raises(AnswerError, match=r"expected 0.272727 s, got 0.5 s$"):
        checks.check_float("idle", 0.5, 3 / 11, unit="s")


@pytest.mark.parametrize(
    "bad", [Liar(), AlwaysEqual(3 / 11), "0.27", True, None, [3 / 11], float("nan")]
)
def test_check_float_rejects_non_plain_answers(bad) -> None:
    """Objects that claim equality, strings, bools and NaN earn nothing."""
    with pytest.raises(AnswerError):
        checks.check_float("x", bad, 3 / 11)


def test_checks_survive_patched_comparisons(monkeypatch) -> None:
    """Patching math.isclose, numpy.allclose or builtins.abs after import does not help a wrong answer."""
    monkeypatch.setattr(math, "isclose", lambda *a, **k: True)
    monkeypatch.setattr(np, "allclose", lambda *a, **k: True)
    monkeypatch.setattr(np, "abs", lambda x: 0 * x)
    monkeypatch.setattr("builtins.abs", lambda x: 0)
    with pytest.raises(AnswerError):
        checks.check_float("x", 1.0, 2.0)
    with pytest.raises(AnswerError):
        checks.check_array("a", np.array([1.0, 2.0]), [1.0, 3.0])


def test_check_int_exact() -> None:
    checks.check_int("m", np.int64(64), 64)
    for bad in (64.0, True, "64"):
        with pytest.raises(AnswerError):
            checks.check_int("m", bad, 64)
    with pytest.raises(AnswerError, match="off by one"):
        checks.check_int("m", 63, 64, known_wrong={63: "off by one"})


def test_check_choice_explains_the_chosen_option() -> None:
    options = {"idle": "elapsed idle fraction", "overhead": "overhead relative to ideal compute"}
    checks.check_choice("c", "overhead", "overhead", options)
    with pytest.raises(AnswerError, match="elapsed idle fraction"):
        checks.check_choice("c", "idle", "overhead", options)
    with pytest.raises(AnswerError, match="not one of"):
        checks.check_choice("c", "bubble", "overhead", options)


def test_check_names_as_set_and_sequence() -> None:
    checks.check_names("ops", {"b", "a"}, ["a", "b"])
    checks.check_names("ops", ("a", "a"), ("a", "a"), ordered=True)
    with pytest.raises(AnswerError, match=r"missing \['c'\]; should not include \['d'\]"):
        checks.check_names("ops", ["a", "d"], ["a", "c"])
    with pytest.raises(AnswerError, match="sequence"):
        checks.check_names("ops", ("b", "a"), ("a", "b"), ordered=True)
    with pytest.raises(AnswerError):
        checks.check_names("ops", [1, 2], ["a"])


def test_check_array_shape_type_values() -> None:
    checks.check_array("a", np.array([1.0, 2.0]), [1.0, 2.0])
    with pytest.raises(AnswerError, match="numpy.ndarray"):
        checks.check_array("a", [1.0, 2.0], [1.0, 2.0])
    with pytest.raises(AnswerError, match="shape"):
        checks.check_array("a", np.array([1.0]), [1.0, 2.0])
    with pytest.raises(AnswerError, match="index"):
        checks.check_array("a", np.array([1.0, 2.5]), [1.0, 2.0])


def test_check_range_and_type() -> None:
    checks.check_range("f", 0.3, 0.0, 1.0)
    with pytest.raises(AnswerError, match="outside"):
        checks.check_range("f", 3.0, 0.0, 1.0, what="a fraction")
    with pytest.raises(AnswerError, match="expected tuple"):
        checks.check_type("t", [1], tuple)


def _helper_to_forbid(x: float) -> float:
    return 2 * x


def test_forbid_trips_aliases_and_restores() -> None:
    """A forbidden function trips even through a reference taken earlier, and works again after."""
    import tests.test_checks as me

    alias = me._helper_to_forbid
    with checks.forbid((me, "_helper_to_forbid"), exercise="Exercise 2"):
        with pytest.raises(
            checks.DelegationError, match="Exercise 2 asks you to write this yourself"
        ):
            alias(1.0)
    assert alias(1.0) == 2.0


def test_forbid_replaces_non_function_callables() -> None:
    import networkx as nx

    original = nx.dag_longest_path_length
    with checks.forbid((nx, "dag_longest_path_length"), exercise="Exercise 2"):
        with pytest.raises(checks.DelegationError):
            nx.dag_longest_path_length(nx.DiGraph([(1, 2)]))
    assert nx.dag_longest_path_length is original


def test_passed_prints_a_readable_line(capsys) -> None:
    checks.passed("Exercise 1")
    assert "✔ Exercise 1" in capsys.readouterr().out


def test_forbid_covers_the_undecorated_alias_and_private_helpers() -> None:
    """A decorated routine trips through its ``__wrapped__`` alias and through a module-private
    helper it calls (cost01's networkx route, cost05's ``_ordered``); all work again afterwards."""
    import networkx as nx

    from course_lib import memory

    g = nx.DiGraph([(1, 2), (2, 3)])
    routes = [
        lambda: nx.dag_longest_path(g),
        lambda: nx.dag_longest_path.__wrapped__(g),
        lambda: nx.algorithms.dag.dag_longest_path(g),
    ]
    with checks.forbid((nx, "dag_longest_path"), exercise="Exercise 2"):
        for route in routes:
            with pytest.raises(checks.DelegationError, match="Exercise 2"):
                route()
    assert nx.dag_longest_path(g) == [1, 2, 3]
    callers = [name for name in dir(memory) if not name.startswith("_")]
    uses_ordered = [
        getattr(memory, n)
        for n in callers
        if "_ordered"
        in getattr(getattr(memory, n), "__code__", type("", (), {"co_names": ()})).co_names
    ]
    assert uses_ordered, "memory has a public function that calls _ordered"
    with checks.forbid((memory, uses_ordered[0].__name__), exercise="Exercise 1"):
        with pytest.raises(checks.DelegationError):
            memory._ordered(None)


def test_forbid_disables_closures_too() -> None:
    """A function with free variables is disabled through a stub with the same free variables."""
    import types

    def make():
        offset = 1

        def f(x):
            return x + offset

        return f

    module = types.SimpleNamespace(f=make())
    with checks.forbid((module, "f")):
        with pytest.raises(checks.DelegationError):
            module.f(1)
    assert module.f(1) == 2


def test_distinct_hints_keep_only_values_that_name_one_mistake() -> None:
    """A value shared by two mistakes, or equal to the answer, or NaN, gives no hint."""
    pairs = [(3, "a"), (4, "b"), (4, "c"), (5, "right by accident"), (6, "d")]
    assert checks.distinct_hints(pairs, 5) == {3: "a", 6: "d"}
    floats = [(1.0 + 1e-9, "close to the answer"), (2.0, "x"), (2.0 + 1e-9, "y"), (math.nan, "z")]
    assert checks.distinct_hints(floats, 1.0, rtol=1e-6) == {}
    assert checks.distinct_hints(floats, 1.0) == {1.0 + 1e-9: "close to the answer"} | {
        2.0: "x",
        2.0 + 1e-9: "y",
    }
    with pytest.raises(AnswerError, match="that is b"):
        checks.check_int("n", 4, 5, known_wrong=checks.distinct_hints([(4, "b"), (7, "c")], 5))


def test_check_float_shows_every_digit_when_six_are_equal():
    """A float32 answer within 6 digits but outside rtol is shown with all its digits."""
    with pytest.raises(AnswerError, match=r"expected -0\.17342312345, got -0\.1734229"):
        checks.check_float("g", -0.1734229, -0.17342312345, rtol=1e-9)
