"""Tests for course_lib.figures.versions (pipe07): the colours, outlines and curves drawn are the
model's versions and losses."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402

from course_lib.figures.versions import (  # noqa: E402
    VERSION_COLOURS,
    delayed_loss_curves,
    flushed_steps,
    label_boxes,
    version_boxes,
    version_colours,
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
    for s in range(4):
        for kind in "FB":
            (bars,) = [c for c in ax.collections if c.get_gid() == f"stage{s}:{kind}"]
            mine = boxes[(boxes["stage"] == s) & (boxes["kind"] == kind)]
            expected = [to_rgba(VERSION_COLOURS[v % 6]) for v in mine["version"]]
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
    assert "weight version" in legend.get_title().get_text()
    with pytest.raises(ValueError, match="panels is empty"):
        version_grids({})


def _lesson_figure():
    """The lesson's section-2 figure, built exactly as notebooks/pipe07_weight_versions.py does."""
    p, m = 4, 4
    stream = simulate(one_f_one_b(p, 3 * m), 1.0, 2.0)
    panels = {
        "flushed": flushed_steps(p, m, 3),
        "stashing": version_boxes(stream, weight_versions(stream, "stashing")),
        "2bw": version_boxes(stream, weight_versions(stream, "2bw", microbatches_per_batch=m)),
    }
    return panels, version_grids(panels, highlight=5)


def _label_at(ax, stage, start, end):
    (text,) = [t for t in ax.texts if start < t.get_position()[0] < end
               and t.get_position()[1] == stage]  # fmt: skip
    return text.get_text()


def test_the_lesson_figure_numbers_every_box_and_tells_neighbouring_versions_apart():
    panels, fig = _lesson_figure()
    for ax, boxes in zip(fig.axes, panels.values(), strict=True):
        # every box of the lesson's figure (forwards 1 time unit of 63) carries its version
        assert len(ax.texts) == len(boxes)
        for row in boxes.itertuples():
            assert _label_at(ax, row.stage, row.start, row.end) == str(row.version)
    stashing = panels["stashing"]
    mine = stashing[(stashing["microbatch"] == 5) & (stashing["kind"] == "F")]
    assert sorted(mine["version"]) == [2, 3, 4, 5]
    colours = version_colours(mine["version"].to_numpy())
    assert len({tuple(c) for c in colours}) == 4  # four versions, four colours
    for name in ("flushed", "2bw"):
        versions = sorted(set(panels[name]["version"]))
        assert len({tuple(c) for c in version_colours(np.array(versions))}) == len(versions)


def test_consecutive_versions_never_share_a_colour_and_narrow_boxes_stay_unlabelled():
    v = np.arange(40)
    c = version_colours(v)
    assert not (np.abs(c[1:] - c[:-1]).sum(axis=1) == 0).any()
    boxes = version_boxes(*_stream(4, 12))
    fig, ax = plt.subplots(figsize=(2.0, 2.0))
    assert label_boxes(ax, boxes, float(boxes["end"].max())) == 0  # boxes of a few pt: no room
    fig, ax = plt.subplots(figsize=(30.0, 2.0))
    assert label_boxes(ax, boxes, float(boxes["end"].max())) == len(boxes)


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
