"""Tests for course_lib.figures.collectives (cost07): what is drawn is the model's numbers."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from course_lib.collectives import (
    fit_alpha_beta,
    ring_all_reduce_time,
    ring_tree_crossover,
    synthetic_sweep,
    tree_all_reduce_time,
)
from course_lib.figures.collectives import ring_vs_tree, size_label, sweep_plot


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _line(ax, gid):
    lines = [ln for ln in ax.lines if ln.get_gid() == gid]
    assert len(lines) == 1, f"expected one line with gid {gid!r}, got {len(lines)}"
    return lines[0]


def _sweep(seed: int) -> pd.DataFrame:
    sizes = np.array([8 * 4**k for k in range(8)], dtype=float)
    t = synthetic_sweep(sizes, 10e-6, 1 / 5e9, seed=seed)
    return pd.DataFrame({"size_bytes": sizes, "time": t, "p10": 0.9 * t, "p90": 1.2 * t})


def test_sweep_points_and_fit_are_the_data_and_the_line():
    """Points at (size, median) in µs, one series per label; the fit line is α + βS in µs."""
    alone, busy = _sweep(0), _sweep(1)
    fit = fit_alpha_beta(alone.size_bytes, alone.time)
    ax = sweep_plot({"alone": alone, "busy": busy}, fit)
    for label, df in (("alone", alone), ("busy", busy)):
        x, y = _line(ax, f"sweep:{label}").get_data()
        np.testing.assert_allclose(x, df.size_bytes)
        np.testing.assert_allclose(y, df.time * 1e6)
    x, y = _line(ax, "fit").get_data()
    np.testing.assert_allclose(y, (fit.alpha + fit.beta * np.asarray(x)) * 1e6)
    assert x[0] == 8 and x[-1] == alone.size_bytes.max()
    assert "α = " in _line(ax, "fit").get_label()


def test_sweep_plot_rejects_missing_columns_and_empty_input():
    with pytest.raises(ValueError, match="lacks columns"):
        sweep_plot({"x": pd.DataFrame({"size_bytes": [8], "time": [1e-6]})})
    with pytest.raises(ValueError, match="sweeps is empty"):
        sweep_plot({})


@pytest.mark.parametrize("n", [4, 12, 16, 1024])
def test_ring_and_tree_lines_are_the_models(n):
    a, b = 5e-6, 1 / 25e9
    ax = ring_vs_tree(n, a, b)
    x, ring = _line(ax, "ring").get_data()
    _, tree = _line(ax, "tree").get_data()
    np.testing.assert_allclose(ring, ring_all_reduce_time(np.asarray(x), n, a, b) * 1e6)
    np.testing.assert_allclose(tree, tree_all_reduce_time(np.asarray(x), n, a, b) * 1e6)
    cx, _ = _line(ax, "crossover").get_data()
    assert cx[0] == pytest.approx(ring_tree_crossover(n, a, b))


def test_no_crossover_line_for_three_ranks():
    ax = ring_vs_tree(3, 5e-6, 1 / 25e9)
    assert not [ln for ln in ax.lines if ln.get_gid() == "crossover"]


@pytest.mark.parametrize(
    "size, text", [(8, "8 B"), (2**10, "1 KiB"), (25 * 2**20, "25 MiB"), (2**32, "4 GiB")]
)
def test_size_labels_use_binary_prefixes(size, text):
    assert size_label(size) == text
