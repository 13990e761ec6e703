"""Tests for course_lib.figures.verification (pipe10): the grid shows the lists and the
verifier's findings, the bars show the stage peaks, the stacked traces their own makespans."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.collections import PolyCollection
from matplotlib.colors import to_hex

from course_lib.figures.pipeline import SCHEDULE_COLOURS
from course_lib.figures.verification import (
    UNKNOWN_COLOUR,
    VIOLATION_COLOUR,
    box_geometry,
    faster_traces,
    grid_boxes,
    in_flight_bars,
    off_grid,
    program_grid,
)
from course_lib.pipeline import gpipe, interleaved_1f1b, one_f_one_b, simulate, zero_bubble_h1
from course_lib.pipeline.verify import verify


def _tuples(schedule):
    return [[(a.kind, a.stage, a.microbatch) for a in r] for r in schedule.actions]


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


@pytest.mark.parametrize(
    "schedule", [gpipe(3, 4), one_f_one_b(4, 6), zero_bubble_h1(3, 5), interleaved_1f1b(2, 4, 2)]
)
def test_one_box_per_entry_at_its_rank_and_position(schedule):
    boxes = grid_boxes(schedule)
    expected = [
        (r, k, SCHEDULE_COLOURS[a.kind])
        for r, rank in enumerate(schedule.actions)
        for k, a in enumerate(rank)
    ]
    assert [(b.rank, b.position, b.colour) for b in boxes] == expected
    assert not any(b.rules for b in boxes)
    several = schedule.num_stages > schedule.num_ranks
    labels = [f"{a.stage}:{a.microbatch}" if several else str(a.microbatch)
              for rank in schedule.actions for a in rank]  # fmt: skip
    assert [b.label for b in boxes] == labels


def test_flagged_boxes_are_exactly_the_violations_with_a_place():
    lists = _tuples(one_f_one_b(4, 6))
    lists[1].insert(3, lists[1][2])  # duplicate
    lists[2][4] = ("R", 2, 1)  # unknown kind
    lists[3][0] = ("F", 3, 6)  # out of range
    found = verify(lists, 4, 6)
    placed = {(v.rank, v.position) for v in found if v.position is not None}
    boxes = grid_boxes(lists, found)
    assert {(b.rank, b.position) for b in boxes if b.rules} == placed
    by_place = {(b.rank, b.position): b for b in boxes}
    assert "duplicate" in by_place[(1, 3)].rules
    assert by_place[(2, 4)].colour == UNKNOWN_COLOUR and by_place[(2, 4)].label.startswith("R")
    assert "range" in by_place[(3, 0)].rules
    verts, faces, edges, widths = box_geometry(boxes)
    for box, edge, width in zip(boxes, edges, widths, strict=True):
        assert (edge == VIOLATION_COLOUR) == bool(box.rules) and (width > 1) == bool(box.rules)
    assert all(len(v) == 4 for v in verts) and faces == [b.colour for b in boxes]


def test_off_grid_lists_missing_and_stage_findings_only():
    lists = _tuples(one_f_one_b(3, 4))
    del lists[0][-1]  # B(s0,m3)
    found = verify(lists, 3, 4, numeric=True)
    text = off_grid(found)
    assert "[missing] B(s0,m3)" in text
    assert text.count("[numeric]") == sum(v.rule == "numeric" for v in found) > 0
    many = off_grid(verify([[], [], []], 3, 4), limit=5)
    assert many.splitlines()[-1] == f"... and {3 * 4 * 2 - 5} more"


def test_program_grid_draws_every_box_and_the_findings_below():
    lists = _tuples(one_f_one_b(4, 8))
    lists[2] = [a for a in lists[2] if a != ("B", 2, 7)]
    found = verify(lists, 4, 8)
    ax = program_grid(lists, found)
    (boxes,) = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert len(boxes.get_paths()) == sum(len(r) for r in lists)
    assert ax.get_ylim() == (3.5, -0.5)
    assert any("[missing] B(s2,m7)" in t.get_text() for t in ax.texts)
    assert ax.get_title(loc="left").startswith("1 violation, 0 in the lists")


def test_in_flight_bars_heights_are_the_peaks_and_outline_only_what_exceeds():
    p, m = 4, 8
    bound = [min(m, p - s) for s in range(p)]
    peaks = {name: simulate(g(p, m), 1e-3, 2e-3).peak_in_flight
             for name, g in (("GPipe", gpipe), ("1F1B", one_f_one_b))}  # fmt: skip
    ax = in_flight_bars(peaks, bound)
    for name, values in peaks.items():
        bars = [b for b in ax.patches if b.get_gid() == f"bars:{name}"]
        assert [b.get_height() for b in bars] == list(values)
        for bar, value, limit in zip(bars, values, bound, strict=True):
            outlined = (
                bar.get_linewidth() > 0 and to_hex(bar.get_edgecolor()) == VIOLATION_COLOUR.lower()
            )
            assert outlined == (value > limit)
    assert list(peaks["1F1B"]) == bound  # 1F1B meets the bound it is drawn against
    # the legend explains the outline once; a schedule's swatch carries none
    legend = ax.get_legend()
    assert [t.get_text() for t in legend.get_texts()] == [
        "GPipe",
        "1F1B",
        "bound",
        "above the bound",
    ]
    for handle in legend.legend_handles[:2]:
        assert (
            handle.get_linewidth() == 0
            or handle.get_edgecolor()[3] == 0
            or (to_hex(handle.get_edgecolor()) == to_hex(handle.get_facecolor()))
        )
    alone = in_flight_bars({"1F1B": peaks["1F1B"]}, bound).get_legend()
    assert [t.get_text() for t in alone.get_texts()] == ["1F1B", "bound"]
    with pytest.raises(ValueError, match="3 stages"):
        in_flight_bars({"x": [1, 2, 3]}, bound)


def test_faster_traces_share_the_time_axis_and_title_each_makespan():
    correct = simulate(one_f_one_b(4, 8), 1e-3, 2e-3)
    short = simulate(gpipe(4, 6), 1e-3, 2e-3)
    fig = faster_traces({"a": correct, "b": short})
    top, bottom = fig.axes[:2]
    assert top.get_xlim() == bottom.get_xlim() == (0.0, correct.makespan)
    assert top.get_title(loc="left").startswith(f"a: {correct.makespan * 1e3:.1f} ms")
    rate = 6 / short.makespan
    assert (
        bottom.get_title(loc="left")
        == f"b: {short.makespan * 1e3:.1f} ms, {rate:.0f} microbatches/s"
    )
    assert np.isclose(correct.makespan, 0.033)
