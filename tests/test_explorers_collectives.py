"""Tests for course_lib.explorers.collectives_explorer (cost07's explorer)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from course_lib.collectives import (
    ring_all_reduce_time,
    ring_tree_crossover,
    tree_all_reduce_time,
)
from course_lib.explorers.collectives import (
    ALPHA_US_OPTIONS,
    LINK_GBS_OPTIONS,
    RANK_OPTIONS,
    SIZE_OPTIONS,
    CollectivesExplorer,
    collectives_explorer,
)


@pytest.fixture(scope="module")
def explorer() -> CollectivesExplorer:
    return collectives_explorer()


def _set(explorer, **values):
    for name, value in values.items():
        explorer.controls[name].value = value


def _text(html: str) -> str:
    return re.sub("<[^>]+>", " ", html)


def test_controls_and_options(explorer):
    assert list(explorer.controls) == ["num_ranks", "alpha_us", "link_gbs", "size_bytes"]
    assert tuple(explorer.controls["num_ranks"].options) == RANK_OPTIONS
    assert tuple(explorer.controls["alpha_us"].options) == ALPHA_US_OPTIONS
    assert tuple(explorer.controls["link_gbs"].options) == LINK_GBS_OPTIONS
    assert [v for _, v in explorer.controls["size_bytes"].options] == list(SIZE_OPTIONS)


@pytest.mark.parametrize(
    "state",
    [
        dict(num_ranks=16, alpha_us=5, link_gbs=25, size_bytes=2**20),
        dict(num_ranks=12, alpha_us=20, link_gbs=12.5, size_bytes=2**26),
        dict(num_ranks=1024, alpha_us=1, link_gbs=400, size_bytes=2**12),
        dict(num_ranks=2, alpha_us=100, link_gbs=1, size_bytes=16),
    ],
)
def test_drawn_curves_and_metrics_are_the_model(explorer, state):
    """The lines are the ring and tree models in µs; the markers sit at the chosen size; the
    metrics print both times, the faster one and the crossover."""
    _set(explorer, **state)
    n, a, b, s = (
        state["num_ranks"],
        state["alpha_us"] * 1e-6,
        1 / (state["link_gbs"] * 1e9),
        state["size_bytes"],
    )
    x = np.asarray(explorer._ring.get_xdata())
    np.testing.assert_allclose(explorer._ring.get_ydata(), ring_all_reduce_time(x, n, a, b) * 1e6)
    np.testing.assert_allclose(explorer._tree.get_ydata(), tree_all_reduce_time(x, n, a, b) * 1e6)
    ring_s, tree_s = ring_all_reduce_time(s, n, a, b), tree_all_reduce_time(s, n, a, b)
    np.testing.assert_allclose(explorer._pts.get_ydata(), [ring_s * 1e6, tree_s * 1e6])
    assert explorer.last_model["crossover"] == ring_tree_crossover(n, a, b)
    text = _text(explorer.metrics.value)
    assert f"{ring_s * 1e6:,.1f} µs" in text and f"{tree_s * 1e6:,.1f} µs" in text
    assert ("ring is faster" if ring_s <= tree_s else "binomial tree is faster") in text
    # busbw share: algbw × 2(n-1)/n × β at the chosen size
    share = s / ring_s * 2 * (n - 1) / n * b
    np.testing.assert_allclose(explorer._share_pt.get_ydata(), [share])
    assert explorer.last_update_ms > 0


def test_two_ranks_has_no_crossover(explorer):
    _set(explorer, num_ranks=2)
    assert not explorer._cross.get_visible()
    assert "never slower" in _text(explorer.metrics.value)


def test_png_renders(explorer):
    assert explorer.png()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="num_ranks must be one of"):
        collectives_explorer(num_ranks=3)
    with pytest.raises(ValueError, match="size_bytes must be one of"):
        collectives_explorer(size_bytes=1000)
