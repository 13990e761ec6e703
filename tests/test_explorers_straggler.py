"""Tests for course_lib.explorers.straggler (cost06's explorer): the curves and numbers shown are
the model's, every control redraws, and bad arguments are rejected."""

from __future__ import annotations

import numpy as np
import pytest

from course_lib.explorers.straggler import (
    NUM_RANKS_OPTIONS,
    P_SLOW_OPTIONS,
    RANKS_PER_HOST_OPTIONS,
    StragglerExplorer,
    split_rate,
    straggler_explorer,
)
from course_lib.straggler import prob_slow_step, prob_slow_step_hosts


@pytest.fixture(scope="module")
def explorer() -> StragglerExplorer:
    return straggler_explorer()


def test_split_rate_keeps_the_per_rank_rate():
    for p in (1e-4, 1e-2):
        for share in (0.0, 0.3, 1.0):
            p_rank, p_host = split_rate(p, share)
            assert p_host == pytest.approx(share * p)
            assert 1 - (1 - p_host) * (1 - p_rank) == pytest.approx(p, rel=1e-12)
    with pytest.raises(ValueError, match="host_share"):
        split_rate(0.01, 1.5)


def test_controls_and_defaults(explorer):
    assert list(explorer.controls) == ["p_slow", "host_share", "ranks_per_host", "num_ranks"]
    assert list(explorer.controls["p_slow"].options) == list(P_SLOW_OPTIONS)
    assert list(explorer.controls["ranks_per_host"].options) == list(RANKS_PER_HOST_OPTIONS)
    assert list(explorer.controls["num_ranks"].options) == list(NUM_RANKS_OPTIONS)
    assert explorer.image.value[:4] == b"\x89PNG"


@pytest.mark.parametrize(
    "values",
    [
        {"p_slow": 1e-3, "host_share": 0.0, "ranks_per_host": 8, "num_ranks": 1024},
        {"p_slow": 1e-3, "host_share": 1.0, "ranks_per_host": 8, "num_ranks": 1024},
        {"p_slow": 5e-2, "host_share": 0.5, "ranks_per_host": 16, "num_ranks": 16},
        {"p_slow": 1e-5, "host_share": 0.25, "ranks_per_host": 1, "num_ranks": 16384},
    ],
)
def test_numbers_shown_are_the_model(explorer, values):
    for name, value in values.items():
        explorer.controls[name].value = value
    p, share, g, n = (values[k] for k in ("p_slow", "host_share", "ranks_per_host", "num_ranks"))
    p_rank, p_host = split_rate(p, share)
    assert explorer.last["iid_at"] == pytest.approx(prob_slow_step(p, n))
    assert explorer.last["host_at"] == pytest.approx(prob_slow_step_hosts(p_rank, p_host, n, g))
    x, y = explorer._host.get_data()
    assert (np.asarray(x) % g == 0).all()
    np.testing.assert_allclose(
        y[:: max(1, len(y) // 7)],
        [
            prob_slow_step_hosts(p_rank, p_host, int(k), g)
            for k in np.asarray(x)[:: max(1, len(y) // 7)]
        ],
    )
    assert explorer._iid_dot.get_data()[1][0] == pytest.approx(prob_slow_step(p, n))
    assert f"{prob_slow_step(p, n):.1%}" in explorer.metrics.value
    if share == 0.0:
        assert explorer.last["host_at"] == pytest.approx(explorer.last["iid_at"])


def test_the_lesson_numbers(explorer):
    """p = 1e-3 at 1024 ranks: 64 % iid, 12 % if every slowdown is host-wide (hosts of 8)."""
    for name, value in {"p_slow": 1e-3, "ranks_per_host": 8, "num_ranks": 1024}.items():
        explorer.controls[name].value = value
    explorer.controls["host_share"].value = 0.0
    assert round(explorer.last["iid_at"], 2) == 0.64
    explorer.controls["host_share"].value = 1.0
    assert round(explorer.last["host_at"], 2) == 0.12


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"p_slow": 0.3}, "p_slow must be one of"),
        ({"ranks_per_host": 3}, "ranks_per_host must be one of"),
        ({"num_ranks": 1000}, "num_ranks must be one of"),
        ({"host_share": -0.1}, "host_share must be in"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        straggler_explorer(**kwargs)


def test_iid_curve_starts_at_one_rank_where_the_axis_starts():
    """The x-axis starts at n = 1: the iid curve is drawn from there (hosts start at n = g)."""
    explorer = straggler_explorer(p_slow=1e-3, host_share=0.5, ranks_per_host=8, num_ranks=64)
    n_iid, iid = explorer._iid.get_data()
    assert n_iid[0] == 1 and iid[0] == pytest.approx(1e-3)
    assert explorer._host.get_data()[0][0] == 8
    assert explorer.axes[0].get_xlim()[0] == 1
