"""course_lib.validate: each check converts good input and names the argument in its error."""

from __future__ import annotations

import numpy as np
import pytest

from course_lib import validate
from course_lib.validate import choice, nonnegative_array, number, whole_count


def test_number_converts_and_honours_positive():
    assert number(3, "alpha") == 3.0 and isinstance(number(3, "alpha"), float)
    assert number(np.float32(0.5), "beta") == 0.5
    assert number(0, "gamma") == 0.0
    assert number(2e-6, "alpha", positive=True) == 2e-6


@pytest.mark.parametrize(
    "x, positive, match",
    [
        (True, False, "alpha must be a number, got True"),
        ("x", False, "alpha must be a number, got 'x'"),
        (None, False, "alpha must be a number, got None"),
        (float("nan"), False, "alpha must be finite, got nan"),
        (float("inf"), False, "alpha must be finite, got inf"),
        (-1.0, False, "alpha must be >= 0, got -1.0"),
        (0.0, True, "alpha must be > 0, got 0.0"),
    ],
)
def test_number_errors_name_the_argument(x, positive, match):
    with pytest.raises(ValueError, match=match):
        number(x, "alpha", positive=positive)


def test_nonnegative_array_keeps_shape_and_dtype():
    a = nonnegative_array([[1, 2], [3, 0]], "sizes")
    assert a.dtype == np.float64 and a.shape == (2, 2)
    assert nonnegative_array(5, "size").ndim == 0


@pytest.mark.parametrize(
    "x, match",
    [
        ([1.0, np.nan], r"sizes\[1\] = nan must be finite and >= 0"),
        ([[1.0, 2.0], [-3.0, 4.0]], r"sizes\[1, 0\] = -3.0 must be finite and >= 0"),
        (-1.0, r"sizes = -1.0 must be finite and >= 0"),
        ([1.0, np.inf, -1.0], r"sizes\[1\] = inf"),  # the first bad entry
        (["a", 1.0], "sizes must be numbers"),
    ],
)
def test_nonnegative_array_names_the_first_bad_entry(x, match):
    with pytest.raises(ValueError, match=match):
        nonnegative_array(x, "sizes")


def test_whole_count_accepts_ints_only():
    assert whole_count(16, "num_ranks") == 16
    assert whole_count(np.int64(4), "num_ranks") == 4 and type(whole_count(np.int64(4), "n")) is int
    assert whole_count(0, "num_buckets", minimum=0) == 0


@pytest.mark.parametrize(
    "x, minimum, match",
    [
        (2.0, 1, "num_ranks must be an int, got 2.0"),
        (True, 1, "num_ranks must be an int, got True"),
        ("8", 1, "num_ranks must be an int, got '8'"),
        (0, 1, "num_ranks must be >= 1, got 0"),
        (1, 2, "num_ranks must be >= 2, got 1"),
    ],
)
def test_whole_count_errors_name_the_argument(x, minimum, match):
    with pytest.raises(ValueError, match=match):
        whole_count(x, "num_ranks", minimum=minimum)


def test_choice_returns_a_known_name_and_lists_the_options():
    assert choice("ring", "algorithm", ("ring", "tree")) == "ring"
    with pytest.raises(ValueError, match=r"unknown algorithm 'star'; known: ring, tree"):
        choice("star", "algorithm", ("ring", "tree"))
    with pytest.raises(ValueError, match=r"unknown algorithm \['ring'\]"):
        choice(["ring"], "algorithm", ["ring", "tree"])  # unhashable: still a ValueError


def test_checks_are_public_so_forbid_leaves_them_alone():
    """forbid() disables only a routine's private helpers of its own module: these are public
    functions of another module, so a forbidden model routine never takes them down."""
    assert all(not name.startswith("_") for name in validate.__all__)
    assert all(
        getattr(validate, name).__module__ == "course_lib.validate" for name in validate.__all__
    )
