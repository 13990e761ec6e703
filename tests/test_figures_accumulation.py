"""Tests for course_lib.figures.accumulation (pipe06's figures): each draws the numbers it is given
(token weights from the masks, the two averages of the mean losses, the error curves, step time
split into compute and bubble), and bad input is named."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.axes import Axes

from course_lib.figures.accumulation import (
    MAX_STEP_BARS,
    loss_by_microbatch,
    norm_gradient_curves,
    relative_token_weights,
    step_time_panels,
    token_weights,
)
from course_lib.pipeline.accumulation import (
    accumulate_gradients,
    microbatch_time,
    pack_microbatches,
    step_times,
)


def _by_gid(ax: Axes) -> dict[str, list]:
    out: dict[str, list] = {}
    for a in [*ax.collections, *ax.lines, *ax.patches, *ax.texts]:
        if a.get_gid():
            out.setdefault(a.get_gid(), []).append(a)
    return out


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _masks():
    seqs = [np.arange(1, n + 1) for n in (3, 9, 4, 1, 12, 2, 7)]
    return [mb.mask for mb in pack_microbatches(seqs, [2, 3, 2])]


@pytest.mark.parametrize("rule", ["mean_of_means", "padded", "samples", "tokens"])
def test_relative_weights_reproduce_accumulate_gradients(rule):
    """Σ over tokens of (weight/N)·one-hot = the rule's microbatch weights: accumulating one-hot
    'gradients' e_k under the rule gives w_k, and n_k · relative weight / N is the same."""
    masks = _masks()
    n = np.array([m.sum() for m in masks], dtype=float)
    per_microbatch = accumulate_gradients(list(np.eye(len(masks))), masks, rule)
    assert np.allclose(n * relative_token_weights(masks, rule) / n.sum(), per_microbatch)


def test_token_weights_bars_are_the_relative_weights_and_the_line_is_one():
    masks = _masks()
    ax = token_weights(masks, rules=("mean_of_means", "padded"))
    groups = _by_gid(ax)
    for rule in ("mean_of_means", "padded"):
        heights = [bar.get_height() for bar in groups[f"weights:{rule}"]]
        assert np.allclose(heights, relative_token_weights(masks, rule))
    assert groups["tokens"][0].get_ydata()[0] == 1.0
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels[0] == "0\nn=12\nP=18" and labels[2] == "2\nn=9\nP=14"


def test_loss_by_microbatch_draws_both_averages():
    counts, losses = [10, 40, 50], [2.0, 1.5, 1.0]
    ax = loss_by_microbatch(counts, losses)
    groups = _by_gid(ax)
    assert groups["token_mean"][0].get_ydata()[0] == pytest.approx((20 + 60 + 50) / 100)
    assert groups["mean_of_means"][0].get_ydata()[0] == pytest.approx(1.5)
    assert np.allclose(groups["microbatches"][0].get_offsets(), np.column_stack([counts, losses]))
    assert "+0.2000" in ax.get_title(loc="left")


def test_norm_gradient_curves_clip_to_the_floor():
    ax = norm_gradient_curves([2, 4, 8], {"batch": [0.5, 0.1, 0.0], "layer": [1e-17, 0, 2e-16]})
    groups = _by_gid(ax)
    assert np.allclose(groups["errors:batch"][0].get_ydata(), [0.5, 0.1, 1e-16])
    assert np.allclose(groups["errors:layer"][0].get_ydata(), [1e-16, 1e-16, 2e-16])
    assert groups["floor"][0].get_ydata()[0] == 1e-16


@pytest.mark.parametrize("batch, p, t0", [(64, 8, 1.5e-3), (16, 1, 0.5e-3), (1024, 32, 0.0)])
def test_step_time_bars_are_compute_plus_bubble_and_the_star_is_the_best(batch, p, t0):
    sizes = [2**k for k in range(batch.bit_length())]
    table = {b: microbatch_time(b, t0, 0.5e-3) for b in sizes}
    ax, ax_eff = step_time_panels(batch, p, table, 0.5e-3)
    times = step_times(batch, p, table)
    ms = sorted(times)
    groups = _by_gid(ax)
    shown = [
        (c, b) for c, b in zip(groups["compute"], groups["bubble"], strict=True) if c.get_visible()
    ]
    assert len(shown) == len(ms) <= MAX_STEP_BARS
    scale = 1e3 if max(times.values()) < 1.0 else 1.0
    assert ax.get_ylabel() == ("step time (ms)" if scale == 1e3 else "step time (s)")
    for m, (compute, bubble) in zip(ms, shown, strict=True):
        t = table[batch // m]
        assert compute.get_height() == pytest.approx(m * t * scale)
        assert bubble.get_y() == pytest.approx(m * t * scale)
        assert compute.get_height() + bubble.get_height() == pytest.approx(times[m] * scale)
    best = min(times, key=times.get)
    ((x_star, _),) = groups["best"][0].get_offsets()
    assert ms[int(x_star)] == best
    assert f"best m = {best}" in ax.get_title(loc="left")
    eff = _by_gid(ax_eff)["efficiency"][0].get_ydata()
    assert np.allclose(eff, [b * 0.5e-3 / table[b] for b in sizes])


def test_step_time_panels_redraw_into_the_same_axes():
    """A second call on the same Axes draws a fresh pair of bar sets (the static figure); the
    explorer reuses its artists through update_step_time_panels instead."""
    table = {b: microbatch_time(b, 1e-3, 1e-3) for b in (1, 2, 4)}
    axes = step_time_panels(4, 2, table, 1e-3)
    assert len(_by_gid(axes[0])["compute"]) == MAX_STEP_BARS


def test_bad_input_is_named():
    with pytest.raises(ValueError, match=r"masks\[1\] has zero tokens"):
        relative_token_weights([np.ones((1, 2), bool), np.zeros((1, 2), bool)], "tokens")
    with pytest.raises(ValueError, match="unknown rule"):
        relative_token_weights(_masks(), "median")
    with pytest.raises(ValueError, match=r"token_counts\[1\]"):
        loss_by_microbatch([3, 0], [1.0, 2.0])
    with pytest.raises(ValueError, match="errors"):
        norm_gradient_curves([2, 4], {"batch": [0.1]})
    with pytest.raises(ValueError, match="divides"):
        step_time_panels(10, 2, {3: 1.0}, 1.0)
