"""Tests for course_lib.explorers.one_f_one_b_explorer (pipe03's explorer)."""

from __future__ import annotations

import math

import pytest

from course_lib.explorers.one_f_one_b import OneFOneBExplorer, one_f_one_b_explorer
from course_lib.pipeline import (
    fill_drain_makespan,
    gpipe,
    one_f_one_b,
    one_f_one_b_warmup,
    simulate,
)

T_F, T_B = 1e-3, 2e-3
METRICS = (
    "peak stashed on stage s, 1F1B",
    "peak stashed on stage s, GPipe",
    "makespan, 1F1B",
    "makespan, GPipe",
)


@pytest.fixture(scope="module")
def explorer() -> OneFOneBExplorer:
    return one_f_one_b_explorer()


def _set(explorer: OneFOneBExplorer, **values: object) -> None:
    for name, value in values.items():
        explorer.controls[name].value = value


def test_controls_cover_the_required_ranges(explorer):
    """p in 1..16, m in 1..64, stage in 0..p-1, latency in ms from 0 to 2·t_f."""
    assert list(explorer.controls) == ["num_stages", "num_microbatches", "stage", "latency_ms"]
    p, m, stage, latency = (explorer.controls[k] for k in explorer.controls)
    assert (p.min, p.max, m.min, m.max) == (1, 16, 1, 64)
    assert (stage.min, stage.max) == (0, p.value - 1)
    assert (latency.min, latency.max) == (0.0, pytest.approx(2 * T_F * 1e3))


@pytest.mark.parametrize(
    "control, value",
    [("num_microbatches", 12), ("num_stages", 6), ("stage", 2), ("latency_ms", 0.5)],
)
def test_every_control_changes_the_image_and_the_metrics(explorer, control, value):
    """Moving one control re-renders a different PNG and a different metrics table."""
    _set(explorer, num_stages=4, num_microbatches=8, stage=0, latency_ms=0.0)
    image, metrics = bytes(explorer.image.value), explorer.metrics.value
    assert image.startswith(b"\x89PNG")
    _set(explorer, **{control: value})
    assert bytes(explorer.image.value).startswith(b"\x89PNG")
    assert bytes(explorer.image.value) != image
    assert explorer.metrics.value != metrics
    assert math.isfinite(explorer.last_update_ms) and explorer.last_update_ms > 0


@pytest.mark.parametrize(
    "p, m, s", [(1, 1, 0), (1, 7, 0), (4, 8, 0), (4, 8, 3), (8, 3, 0), (8, 3, 6), (16, 64, 9)]
)
def test_metrics_at_zero_latency_equal_closed_forms_and_simulator(explorer, p, m, s):
    """At δ = 0: peak min(m, p - s) under 1F1B, m under GPipe, both makespans (m+p-1)(t_f+t_b);
    the simulator column is simulate()'s own value, and the title names the three phases."""
    _set(explorer, num_stages=p, num_microbatches=m, stage=s, latency_ms=0.0)
    metrics = explorer.last_metrics
    assert list(metrics) == list(METRICS)
    ofob = simulate(one_f_one_b(p, m), T_F, T_B)
    gp = simulate(gpipe(p, m), T_F, T_B)
    closed = fill_drain_makespan(p, m, T_F, T_B)
    assert metrics["peak stashed on stage s, 1F1B"] == (min(m, p - s), ofob.peak_in_flight[s])
    assert metrics["peak stashed on stage s, GPipe"] == (m, gp.peak_in_flight[s])
    assert metrics["makespan, 1F1B"] == pytest.approx((closed, ofob.makespan))
    assert metrics["makespan, GPipe"] == pytest.approx((closed, gp.makespan))
    for closed_form, simulated in metrics.values():
        assert closed_form == pytest.approx(simulated)
    w = one_f_one_b_warmup(p, m, s)
    assert f"stage {s}: {w} warm-up F · {m - w} F/B pair" in explorer.title
    assert explorer.metrics.value.count("<b>no</b>") == 0


def test_latency_slows_1f1b_beyond_gpipe_and_the_note_says_why(explorer):
    """With δ > 0 GPipe still meets its formula, 1F1B takes longer and the table says 'no'."""
    _set(explorer, num_stages=4, num_microbatches=8, stage=0, latency_ms=0.5)
    metrics = explorer.last_metrics
    closed, simulated = metrics["makespan, GPipe"]
    assert simulated == pytest.approx(fill_drain_makespan(4, 8, T_F, T_B, 0.5e-3))
    assert closed == pytest.approx(simulated)
    _, ofob = metrics["makespan, 1F1B"]
    assert ofob == pytest.approx(simulate(one_f_one_b(4, 8), T_F, T_B, p2p_latency=0.5e-3).makespan)
    assert ofob > simulated
    assert (
        "<b>no</b>" in explorer.metrics.value
        and "recurs on the critical path" in explorer.metrics.value
    )


def test_stage_slider_follows_the_number_of_stages(explorer):
    """Lowering p clamps the stage to p - 1 and the frame shows that stage (one redraw)."""
    _set(explorer, num_stages=8, num_microbatches=8, stage=7, latency_ms=0.0)
    calls = []
    original = explorer.update
    explorer.update = lambda: calls.append(1) or original()
    try:
        _set(explorer, num_stages=3)
    finally:
        del explorer.update
    assert len(calls) == 1
    assert explorer.controls["stage"].max == 2 and explorer.controls["stage"].value == 2
    assert explorer.last_metrics["peak stashed on stage s, 1F1B"] == (1.0, 1.0)
    _set(explorer, num_stages=16)
    assert explorer.controls["stage"].max == 15 and explorer.controls["stage"].value == 2


def test_phase_edges_sit_where_warmups_end_and_cooldowns_begin(explorer):
    """The black edges: per rank with w > 0, the end of its w-th action and the start of its
    (2m - w + 1)-th, on that rank's row."""
    _set(explorer, num_stages=5, num_microbatches=7, stage=1, latency_ms=0.25)
    run = simulate(one_f_one_b(5, 7), T_F, T_B, p2p_latency=0.25e-3)
    expected = []
    for rank in range(5):
        rows = run.events[run.events["rank"] == rank]
        w = one_f_one_b_warmup(5, 7, rank)
        if w:
            expected += [(rows["end"].iloc[w - 1], rank), (rows["start"].iloc[14 - w], rank)]
    segments = explorer._edges.get_segments()
    assert [round((seg[0][1] + seg[1][1]) / 2) for seg in segments] == [r for _, r in expected]
    assert [seg[0][0] for seg in segments] == pytest.approx([x for x, _ in expected])


@pytest.mark.parametrize("p, m, s", [(4, 8, 0), (8, 32, 5), (8, 4, 0), (8, 4, 6)])
def test_stash_panel_ticks_both_peaks_in_its_own_colour(explorer, p, m, s):
    """The lower panel's y ticks are 0, the 1F1B peak and GPipe's peak (one tick where the two
    coincide); it is labelled in microbatches, and the 1F1B curve's colour is neither the grid's
    forward blue nor GPipe's line colour."""
    from course_lib.explorers.one_f_one_b import STASH_COLOUR
    from course_lib.figures.pipeline import PIPELINE_LINE_COLOURS, SCHEDULE_COLOURS

    _set(explorer, num_stages=p, num_microbatches=m, stage=s, latency_ms=0.0)
    ofob, gp = min(m, p - s), m
    labels = [t.get_text() for t in explorer._y_tick_labels] + [
        explorer._gpipe_tick_label.get_text()
    ]
    ticks = sorted(int(t) for t in labels if t)
    assert ticks == sorted({0, ofob, gp})
    if gp != ofob:
        assert explorer._gpipe_tick_label.get_position()[1] == gp
    assert "microbatches" in explorer.axes[1].get_ylabel()
    assert STASH_COLOUR not in (SCHEDULE_COLOURS["F"], PIPELINE_LINE_COLOURS[1])
    assert explorer._stash_line.get_color() == STASH_COLOUR


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"num_stages": 17}, ValueError, "1..16"),
        ({"num_microbatches": 65}, ValueError, "1..64"),
        ({"num_stages": 4, "stage": 4}, ValueError, "stage must be in"),
        ({"stage": -1}, ValueError, "stage"),
        ({"stage": 1.0}, TypeError, "stage"),
        ({"p2p_latency": -1e-3}, ValueError, "p2p_latency"),
        ({"p2p_latency": 3e-3}, ValueError, "at most 2·forward_time"),
        ({"forward_time": 0.0}, ValueError, "forward_time must be > 0"),
        ({"num_stages": 0}, ValueError, "num_stages"),
    ],
)
def test_bad_arguments_are_named(kwargs, error, match):
    with pytest.raises(error, match=match):
        one_f_one_b_explorer(**kwargs)
