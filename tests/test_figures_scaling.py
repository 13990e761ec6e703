"""Tests for course_lib.figures.scaling (cost08): what is drawn is the model's numbers."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest

from course_lib.figures.scaling import (
    batch_tradeoff,
    strong_scaling_efficiency,
    weak_scaling_throughput,
)
from course_lib.scaling import (
    best_accumulation_steps,
    load_megatron_table,
    steps_to_target,
    strong_efficiency,
)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _line(ax, gid):
    lines = [line for line in ax.lines if line.get_gid() == gid]
    assert len(lines) == 1, f"expected one line with gid {gid!r}, got {len(lines)}"
    return np.asarray(lines[0].get_xdata(), float), np.asarray(lines[0].get_ydata(), float)


def test_strong_scaling_lines_are_the_efficiencies_of_table2():
    """One line per scheme at the GPU counts of Table 2; y = E_s against the smallest count."""
    t2 = load_megatron_table(2)
    ax = strong_scaling_efficiency(t2, 174.6)
    for scheme in ("PTD-P", "ZeRO-3"):
        rows = t2[(t2.scheme == scheme) & (t2.parameters_billion == 174.6)]
        n = rows.num_gpus.to_numpy(float)
        x, y = _line(ax, f"efficiency:{scheme}")
        np.testing.assert_array_equal(x, n)
        expected = strong_efficiency(n, 1 / (n * rows.teraflops_per_gpu.to_numpy(float)), 384)
        np.testing.assert_allclose(y, expected)
    assert _line(ax, "ideal")[1].tolist() == [1.0, 1.0]


def test_strong_scaling_refuses_rows_with_different_batches():
    """The 529.6B ZeRO-3 rows change the batch (2,560 then 2,240): not a fixed work."""
    with pytest.raises(ValueError, match="batch changes"):
        strong_scaling_efficiency(load_megatron_table(2), 529.6)
    with pytest.raises(ValueError, match="no Table 2 rows"):
        strong_scaling_efficiency(load_megatron_table(2), 1.0)


def test_weak_scaling_line_is_table1_per_gpu_throughput():
    t1 = load_megatron_table(1)
    ax = weak_scaling_throughput(t1)
    x, y = _line(ax, "per_gpu")
    np.testing.assert_array_equal(x, t1.num_gpus.to_numpy(float))
    np.testing.assert_array_equal(y, t1.teraflops_per_gpu.to_numpy(float))
    assert [t.get_text() for t in ax.texts][-1] == "1008B"


def test_batch_tradeoff_draws_the_model():
    """Throughput and steps relative to k = 1, time to target in hours, best k circled."""
    n, b, tm, ta, bn, smin = 64, 8, 0.25, 0.6, 4096, 20_000
    left, right = batch_tradeoff(n, b, tm, ta, bn, smin, max_accumulation=64)
    k = np.arange(1, 65, dtype=float)
    batch, step = n * b * k, k * tm + ta
    x, y = _line(left, "throughput")
    np.testing.assert_allclose(x, batch)
    np.testing.assert_allclose(y, (batch / step) / (batch[0] / step[0]))
    steps = steps_to_target(batch, smin, bn)
    np.testing.assert_allclose(_line(left, "steps")[1], steps / steps[0])
    np.testing.assert_allclose(_line(right, "time")[1], steps * step / 3600)
    best = best_accumulation_steps(n, b, tm, ta, bn, 64)
    bx, by = _line(right, "best")
    assert bx.tolist() == [batch[best - 1]] and best == 4
    assert by[0] == pytest.approx(steps[best - 1] * step[best - 1] / 3600)
    assert _line(right, "noise_scale")[0].tolist() == [bn, bn]
    assert _line(left, "noise_scale_left")[0].tolist() == [bn, bn]
