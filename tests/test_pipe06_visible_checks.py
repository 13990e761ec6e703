"""pipe06's visible checks of Exercises 2 and 4 hold their expected values as data (so the release
shows no reference solution): run the master's setup and the visible part of each grade cell on
the right answer and on each named mistake, and check that each mistake gets its own hint."""

from __future__ import annotations

import re

import matplotlib
import pytest

from course_lib.checks import AnswerError
from course_lib.machinery.build import read_master
from tests.conftest import ROOT

matplotlib.use("Agg")

LESSON = "pipe06_microbatch_semantics"


@pytest.fixture(scope="module")
def lesson() -> dict:
    """The setup's names and the visible part of every grade cell, by grade id."""
    cells = {
        c.metadata["nbgrader"]["grade_id"]: c.source
        for c in read_master(ROOT, LESSON).cells
        if "nbgrader" in c.metadata
    }
    setup = "\n".join(line for line in cells["setup"].splitlines() if not line.startswith("%"))
    names: dict = {}
    exec(compile(setup, "setup", "exec"), names)
    visible = {k: v.split("### BEGIN HIDDEN TESTS")[0] for k, v in cells.items()}
    return {"names": names, "visible": visible, "cells": cells}


def _run(lesson: dict, grade_id: str, answer: str) -> str:
    """The visible check's failure message for the answer cell source (empty if it passes)."""
    names = dict(lesson["names"])
    exec(answer, names)
    try:
        exec(lesson["visible"][grade_id], names)
    except AnswerError as exc:
        return str(exc)
    return ""


def test_visible_cells_hold_no_reference_computation(lesson):
    """The visible checks compare with data: no token mean, no step-time formula."""
    assert "token_mean" not in lesson["visible"]["gap_tests"]
    assert "p - 1" not in lesson["visible"]["fastest_tests"]
    assert ".sum()" not in lesson["visible"]["gap_tests"]
    assert "_checked" not in lesson["visible"]["gap_tests"] + lesson["visible"]["fastest_tests"]


GAP = "def mean_of_means_gap(mean_losses, token_counts):\n    L, n = np.asarray(mean_losses, float), np.asarray(token_counts, float)\n    return float({})\n"  # noqa: E501
TOKEN_MEAN = "(n * L).sum() / n.sum()"
COV = "np.mean((n - n.mean()) * (L - L.mean()))"


@pytest.mark.parametrize(
    "expression, hint",
    [
        (f"L.mean() - {TOKEN_MEAN}", ""),
        (f"-len(n) / n.sum() * {COV}", ""),
        (f"{TOKEN_MEAN} - L.mean()", "the sign is reversed"),
        (f"(L.mean() - {TOKEN_MEAN}) / ({TOKEN_MEAN})", "relative to the token mean"),
        (f"-{COV} / n.sum()", "without the factor m"),
        ("-len(n) / n.sum() * np.cov(n, L)[0, 1]", "ddof=1"),
        ("L.mean() - np.median(L)", "median"),
        (f"100 * (L.mean() - {TOKEN_MEAN})", "percentage"),
        ("L.mean() - L.sum() / len(L)", "both averages unweighted"),
    ],
)
def test_gap_visible_check_names_each_mistake(lesson, expression, hint):
    message = _run(lesson, "gap_tests", GAP.format(expression))
    if hint:
        assert hint in message, message
    else:
        assert message == ""


FASTEST = (
    "def fastest_num_microbatches(batch_size, num_stages, efficiency, peak_sample_time):\n"
    "    B, p, peak = batch_size, num_stages, peak_sample_time\n"
    "    div = {{b: e for b, e in efficiency.items() if B % b == 0}}\n"
    "    costs = {{{key}: {cost} for b, e in sorted({over}.items(), reverse={reverse})}}\n"
    "    return min(costs, key=costs.get)\n"
)


@pytest.mark.parametrize(
    "key, cost, over, hint",
    [
        ("B // b", "(B // b + p - 1) * b * peak / e", "div", ""),
        ("B // b", "b", "div", "the most microbatches"),
        ("B // b", "-b", "div", "the fewest microbatches"),
        ("B // b", "B * peak / e", "div", "the bubble is missing"),
        ("B // b", "(B // b + p - 1) * b * peak * e", "div", "divide by the efficiency"),
        ("b", "(B // b + p - 1) * b * peak / e", "div", "the microbatch size b"),
        ("-(-B // b)", "(-(-B // b) + p - 1) * b * peak / e", "efficiency", "m rounded up"),
        ("B // b", "(B // b + p - 1) * b * peak / e", "efficiency", "m rounded down"),
        ("B // b", "(B // b + p) * b * peak / e", "div", "one slot too many"),
        ("B // b", "(B // b + p - 1) * peak / e", "div", "the b sequences are missing"),
    ],
)
@pytest.mark.parametrize("reverse", [False, True], ids=["ascending", "descending"])
def test_fastest_visible_check_names_each_mistake(lesson, key, cost, over, hint, reverse):
    """Scanning the sizes in either order gives the same hint: no mistake's (or the right
    answer's) least step time is tied on the visible table, so no tie-break can pick another
    mistake's value."""
    source = FASTEST.format(key=key, cost=cost, over=over, reverse=reverse)
    message = _run(lesson, "fastest_tests", source)
    if hint:
        assert hint in message, message
    else:
        assert message == ""


def test_visible_data_matches_the_hidden_checkers(lesson):
    """The hidden checkers, which compute every value, agree with the visible data."""
    names = dict(lesson["names"])
    gap = lesson["cells"]["gap_tests"].split("### BEGIN HIDDEN TESTS")[1].split("_gap_cases")[0]
    fastest = lesson["cells"]["fastest_tests"].split("### BEGIN HIDDEN TESTS")[1]
    exec(gap + fastest.split("_fastest_cases")[0], names)
    ex_l, ex_n = names["GAP_EXAMPLE"]
    names["_checked_gap"]("visible", names["GAP_EXAMPLE_RIGHT"], ex_l, ex_n)
    for value, why in names["GAP_EXAMPLE_WRONG"]:
        with pytest.raises(AnswerError, match=re.escape(why)):
            names["_checked_gap"]("visible", value, ex_l, ex_n)
    big_b, p, eff, peak = names["FASTEST_EXAMPLE"]
    names["_checked_fastest"]("visible", names["FASTEST_EXAMPLE_RIGHT"], big_b, p, eff, peak)
    for value, why in names["FASTEST_EXAMPLE_WRONG"]:
        with pytest.raises(AnswerError, match=re.escape(why)):
            names["_checked_fastest"]("visible", value, big_b, p, eff, peak)


def test_visible_hint_values_are_distinct(lesson):
    """Every named mistake of the visible checks has its own value, none the right one, and its
    own text, so distinct_hints keeps them all."""
    names = lesson["names"]
    for right, wrong in [
        (names["GAP_EXAMPLE_RIGHT"], names["GAP_EXAMPLE_WRONG"]),
        (names["FASTEST_EXAMPLE_RIGHT"], names["FASTEST_EXAMPLE_WRONG"]),
    ]:
        values = [value for value, _ in wrong]
        assert right not in values
        assert len(set(values)) == len(values)
        assert len({why for _, why in wrong}) == len(wrong)
