"""Tests for overlap_timeline (cost03): what is drawn is the intervals and their algebra."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.axes import Axes

from course_lib.figures.overlap import overlap_timeline
from course_lib.overlap import bucketed_allreduce_timeline, intersection, subtract, union


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def drawn(ax: Axes, gid: str) -> np.ndarray:
    """[start, end) of the rectangles of the collection with this gid (sorted by start)."""
    colls = [c for c in ax.collections if c.get_gid() == gid]
    assert len(colls) <= 1, f"several collections with gid {gid!r}"
    if not colls:
        return np.empty((0, 2))
    rows = [[p.vertices[:, 0].min(), p.vertices[:, 0].max()] for p in colls[0].get_paths()]
    out = np.array(rows, dtype=float).reshape(-1, 2)
    return out[np.argsort(out[:, 0])]


COMPUTE = np.array([[0.0, 2.0], [1.0, 3.0], [5.0, 6.0]])  # two streams overlap in [1, 2)
COMM = np.array([[2.5, 4.0], [5.5, 7.0]])


def test_shade_is_the_intersection_and_exposed_is_comm_minus_compute():
    """The shaded 'both run' time is ∪comm ∩ ∪compute, the vermillion bars are ∪comm minus
    ∪compute, and every kernel keeps its own bar; the default title states HTA's ratio."""
    ax = overlap_timeline(COMPUTE, COMM)
    np.testing.assert_allclose(drawn(ax, "overlapped"), intersection(COMPUTE, COMM))
    np.testing.assert_allclose(drawn(ax, "exposed"), subtract(COMM, COMPUTE))
    np.testing.assert_allclose(drawn(ax, "compute"), COMPUTE)
    np.testing.assert_allclose(drawn(ax, "comm"), COMM)
    # overlap = (0.5 + 0.5) / 3.0 of communication
    assert "overlap ratio 33.3%" in ax.get_title(loc="left")
    assert [t.get_text() for t in ax.get_yticklabels()] == ["computation", "communication"]


def test_origin_shifts_every_interval():
    """origin is subtracted from every time (e.g. the start of a profiler step)."""
    ax = overlap_timeline(COMPUTE + 10.0, COMM + 10.0, origin=10.0)
    np.testing.assert_allclose(drawn(ax, "compute"), COMPUTE)
    np.testing.assert_allclose(drawn(ax, "overlapped"), intersection(COMPUTE, COMM))


def test_bucket_timeline_draws_optimizer_and_step():
    """A BucketTimeline: layers, all-reduces, the optimizer bar and a dashed step-time line."""
    tl = bucketed_allreduce_timeline([2e-3] * 4, [1.0] * 4, 1.0, 1 / 3e-3, optimizer_time=1e-3)
    ax = overlap_timeline(tl)
    np.testing.assert_allclose(drawn(ax, "optimizer"), [tl.optimizer])
    np.testing.assert_allclose(drawn(ax, "exposed"), [[8e-3, 14e-3]])
    np.testing.assert_allclose(drawn(ax, "overlapped"), union([[2e-3, 8e-3]]))
    assert any(np.allclose(line.get_xdata(), tl.step_time) for line in ax.lines)
    assert "overlap ratio 50.0%" in ax.get_title(loc="left")


@pytest.mark.parametrize(
    "args, kwargs, match",
    [
        ((COMPUTE,), {}, "comm intervals are missing"),
        ((np.empty((0, 2)), np.empty((0, 2))), {}, "no intervals"),
        ((COMPUTE, [[1.0, 0.0]]), {}, "ends before it starts"),
    ],
)
def test_bad_input_raises(args, kwargs, match):
    """Missing comm, nothing to draw, or a malformed interval: a ValueError that says so."""
    with pytest.raises(ValueError, match=match):
        overlap_timeline(*args, **kwargs)


def test_bucket_timeline_with_comm_raises():
    """A BucketTimeline carries its own communication: passing comm too is ambiguous."""
    tl = bucketed_allreduce_timeline([1.0], [1.0], 1.0, 1.0)
    with pytest.raises(ValueError, match="either a BucketTimeline"):
        overlap_timeline(tl, COMM)


def test_draws_into_a_subfigure():
    """An Axes of a SubFigure works too (the lesson stacks a timeline under other panels)."""
    fig = plt.figure(figsize=(8, 5), layout="constrained")
    top, bottom = fig.subfigures(2, 1)
    ax = overlap_timeline(COMPUTE, COMM, ax=bottom.subplots())
    np.testing.assert_allclose(drawn(ax, "compute"), COMPUTE)
