"""Tests for course_lib.figures.versions (pipe07): the colours, outlines and curves drawn are the
model's versions and losses."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from course_lib.figures.versions import (  # noqa: E402
    VERSION_CMAP,
    delayed_loss_curves,
    flushed_steps,
    version_boxes,
    version_grid,
    version_grids,
)
from course_lib.pipeline import one_f_one_b, simulate  # noqa: E402
from course_lib.pipeline.versions import (  # noqa: E402
    delayed_gradient_descent,
    quadratic_loss,
    random_quadratic,
    stashing_version,
    weight_versions,
)


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _stream(p=4, m=12):
    timeline = simulate(one_f_one_b(p, m), 1.0, 2.0)
    return timeline, weight_versions(timeline, "stashing")


def test_version_boxes_pair_each_action_with_the_replayed_version():
    timeline, versions = _stream()
    boxes = version_boxes(timeline, versions)
    assert len(boxes) == len(timeline.events) == 2 * 4 * 12
    for row in boxes.itertuples():
        assert row.version == stashing_version(row.stage, row.microbatch, 4, 12)
    other = weight_versions(simulate(one_f_one_b(3, 12), 1.0, 2.0), "stashing")
    with pytest.raises(ValueError, match="versions are for"):
        version_boxes(timeline, other)


def test_flushed_steps_run_back_to_back_one_version_each():
    boxes = flushed_steps(4, 4, 3)
    one = simulate(one_f_one_b(4, 4), 1.0, 2.0)
    assert len(boxes) == 3 * len(one.events)
    for k in range(3):
        step = boxes[boxes["version"] == k]
        assert set(step["microbatch"]) == set(range(4 * k, 4 * k + 4))
        assert step["start"].min() == pytest.approx(k * one.makespan)
        assert step["end"].max() == pytest.approx((k + 1) * one.makespan)


def test_box_colours_follow_the_version_and_the_highlight_outlines_one_microbatch():
    timeline, versions = _stream()
    boxes = version_boxes(timeline, versions)
    ax = version_grid(boxes, highlight=5)
    cmap = plt.get_cmap(VERSION_CMAP)
    top = int(boxes["version"].max())
    for s in range(4):
        for kind in "FB":
            (bars,) = [c for c in ax.collections if c.get_gid() == f"stage{s}:{kind}"]
            mine = boxes[(boxes["stage"] == s) & (boxes["kind"] == kind)]
            expected = cmap(0.1 + 0.8 * mine["version"].to_numpy() / top)
            np.testing.assert_allclose(bars.get_facecolors(), expected)
            xs = [p.vertices[:, 0].min() for p in bars.get_paths()]
            np.testing.assert_allclose(sorted(xs), sorted(mine["start"]))
    outlines = [c for c in ax.collections if c.get_gid() == "highlight"]
    assert len(outlines) == 4  # one per stage row, two boxes (F and B) each
    assert sum(len(c.get_paths()) for c in outlines) == 8
    labels = [t.get_text() for t in ax.texts]
    assert sorted(labels) == sorted(str(v) for v in boxes["version"])


def test_version_grids_share_the_time_axis_and_colour_scale():
    timeline, versions = _stream()
    fig = version_grids(
        {"flushed": flushed_steps(4, 4, 3), "stashing": version_boxes(timeline, versions)},
        highlight=5,
    )
    axes = fig.axes
    assert len(axes) == 2
    span = max(flushed_steps(4, 4, 3)["end"].max(), timeline.makespan)
    for ax in axes:
        assert ax.get_xlim() == pytest.approx((0.0, span))
    legend = axes[0].get_legend()
    assert "version 11" in [t.get_text() for t in legend.get_texts()]
    with pytest.raises(ValueError, match="panels is empty"):
        version_grids({})


def test_loss_curves_are_the_delayed_descent_and_the_tuned_steps_respect_the_bound():
    a = random_quadratic(6, 20.0, seed=1)
    w0 = np.ones(6)
    lam = float(np.linalg.eigvalsh(a).max())
    grid = (np.arange(20) + 0.5) / 10 / lam
    fig = delayed_loss_curves(a, w0, (0, 1, 2), 0.3 / lam, grid, 150)
    left, right = fig.axes
    for d in (0, 1, 2):
        (line,) = [ln for ln in left.lines if ln.get_gid() == f"common:d={d}"]
        loss = quadratic_loss(a, delayed_gradient_descent(a, w0, 0.3 / lam, d, 150))
        np.testing.assert_allclose(line.get_ydata(), loss / loss[0])
        (tuned,) = [ln for ln in right.lines if ln.get_gid() == f"tuned:d={d}"]
        step = float(tuned.get_label().split("ν = ")[1].split("/")[0])
        assert step < 2 * np.cos(d * np.pi / (2 * d + 1))  # the Levin-May bound in ν·λ_max
        assert tuned.get_ydata()[-1] < 1e-3
    # delay 0 tolerates the largest step and ends lowest
    finals = [ln.get_ydata()[-1] for ln in right.lines]
    assert finals[0] == min(finals)


def test_missing_columns_are_named():
    with pytest.raises(ValueError, match="lack the columns"):
        version_grid(flushed_steps(2, 2, 1).drop(columns="version"))
