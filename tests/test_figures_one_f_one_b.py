"""Tests for course_lib.figures.one_f_one_b (pipe03): what is drawn is the timeline's numbers."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest

from course_lib.figures.one_f_one_b import (
    lifetime_bars,
    one_f_one_b_phases,
    phase_spans,
    stash_by_stage,
)
from course_lib.pipeline import (
    gpipe,
    one_f_one_b,
    one_f_one_b_warmup,
    peak_in_flight_gpipe,
    peak_in_flight_one_f_one_b,
    simulate,
)

SHAPES = [(4, 8), (1, 1), (1, 5), (5, 1), (8, 3), (3, 3), (6, 10)]


@pytest.mark.parametrize("p, m", SHAPES)
def test_phase_spans_cover_warmup_alternation_and_cooldown(p, m):
    """Brute force on the timeline: the warm-up span holds exactly min(m, p - s - 1) forwards, the
    cool-down as many backwards, the steady state strictly alternates F, B; spans are the first
    and last action times of each phase, None for an empty phase."""
    timeline = simulate(one_f_one_b(p, m), 1e-3, 2e-3, p2p_latency=0.1e-3)
    spans = phase_spans(timeline)
    assert len(spans) == p
    for rank, phases in enumerate(spans):
        rows = timeline.events[timeline.events["rank"] == rank]
        kinds = rows["kind"].tolist()
        w = one_f_one_b_warmup(p, m, rank)
        assert kinds[:w] == ["F"] * w and kinds[len(kinds) - w :] == ["B"] * w
        assert kinds[w : len(kinds) - w] == ["F", "B"] * (m - w)
        starts, ends = rows["start"].to_numpy(), rows["end"].to_numpy()
        for phase, (lo, hi) in {
            "warm-up": (0, w),
            "steady": (w, 2 * m - w),
            "cool-down": (2 * m - w, 2 * m),
        }.items():
            if hi == lo:
                assert phases[phase] is None
            else:
                assert phases[phase] == (starts[lo], ends[hi - 1])


def test_phase_spans_refuse_other_schedules():
    with pytest.raises(ValueError, match="one_f_one_b"):
        phase_spans(simulate(gpipe(4, 8), 1.0, 2.0))


def test_phase_figure_draws_one_strip_per_phase_and_the_edges():
    """Strips span phase_spans; tick labels give each rank's w; edges at warm-up end, cool-down start."""
    timeline = simulate(one_f_one_b(4, 8), 1e-3, 2e-3)
    ax = one_f_one_b_phases(timeline)
    try:
        spans = phase_spans(timeline)
        strips = {p.get_gid(): p for p in ax.patches if (p.get_gid() or "").startswith("phase:")}
        for rank, phases in enumerate(spans):
            for phase, span in phases.items():
                gid = f"phase:{rank}:{phase}"
                if span is None:
                    assert gid not in strips
                    continue
                strip = strips[gid]
                assert strip.get_x() == pytest.approx(span[0])
                assert strip.get_x() + strip.get_width() == pytest.approx(span[1])
        labels = [t.get_text() for t in ax.get_yticklabels()]
        assert labels == [f"rank {r} · w = {3 - r}" for r in range(4)]
        (edges,) = [c for c in ax.collections if c.get_gid() == "phase-edge" and c.get_segments()]
        xs = sorted({round(seg[0][0], 12) for seg in edges.get_segments()})
        expected = sorted(
            {
                round(x, 12)
                for ph in spans
                if ph["warm-up"]
                for x in (ph["warm-up"][1], ph["cool-down"][0])
            }
        )
        assert xs == expected
    finally:
        plt.close(ax.figure)


@pytest.mark.parametrize("p, m", [(4, 8), (8, 3), (1, 4)])
def test_stash_by_stage_is_in_flight_per_stage_and_the_closed_forms(p, m):
    """One panel per stage whose curves are Timeline.in_flight(stage); titles give the peaks, which
    the simulator and the closed forms agree on: min(m, p - s) under 1F1B, m under GPipe."""
    runs = {
        "GPipe": simulate(gpipe(p, m), 1e-3, 2e-3),
        "1F1B": simulate(one_f_one_b(p, m), 1e-3, 2e-3, p2p_latency=0.2e-3),
    }
    fig = stash_by_stage(runs)
    try:
        axes = fig.axes
        panels = [ax for ax in axes if any(line.get_gid() for line in ax.get_lines())]
        assert len(panels) == p
        for stage, ax in enumerate(panels):
            lines = {line.get_gid(): line for line in ax.get_lines() if line.get_gid()}
            for name, run in runs.items():
                t, count = run.in_flight(stage)
                xs, ys = lines[f"stash:{name}"].get_data()
                assert list(ys) == list(count)
                assert np.asarray(xs) == pytest.approx(t * 1e3)
            g, o = (int(runs[k].peak_in_flight[stage]) for k in ("GPipe", "1F1B"))
            assert g == peak_in_flight_gpipe(p, m, stage) == m
            assert o == peak_in_flight_one_f_one_b(p, m, stage) == min(m, p - stage)
            assert ax.get_title(loc="left") == f"stage {stage}: GPipe peak {g} · 1F1B peak {o}"
    finally:
        plt.close(fig)


def test_stash_by_stage_refuses_runs_of_different_depth():
    runs = {"a": simulate(gpipe(2, 2), 1.0, 1.0), "b": simulate(gpipe(3, 2), 1.0, 1.0)}
    with pytest.raises(ValueError, match="same number of stages"):
        stash_by_stage(runs)


@pytest.mark.parametrize("stage", [0, 2, 3])
def test_lifetime_bars_are_timeline_lifetimes(stage):
    """Each bar spans Timeline.lifetime(stage, j); F and B boxes sit on the events; the dashed line
    is at the first moment of the peak, labelled with the peak count."""
    runs = {
        "GPipe": simulate(gpipe(4, 6), 1e-3, 2e-3),
        "1F1B": simulate(one_f_one_b(4, 6), [1e-3, 1.2e-3, 0.9e-3, 1.1e-3], 2e-3, p2p_latency=1e-4),
    }
    fig = lifetime_bars(runs, stage)
    try:
        for ax, (name, run) in zip(fig.axes, runs.items(), strict=True):
            bars = [p for p in ax.patches if p.get_gid() == f"lifetime:{name}"]
            assert len(bars) == 6
            for j, bar in enumerate(sorted(bars, key=lambda b: b.get_y())):
                start, end = run.lifetime(stage, j)
                assert bar.get_x() == pytest.approx(start)
                assert bar.get_x() + bar.get_width() == pytest.approx(end)
            forwards = [p for p in ax.patches if p.get_gid() == f"F:{name}"]
            events = run.events
            mine = events[(events["stage"] == stage) & (events["kind"] == "F")]
            assert sorted(b.get_x() for b in forwards) == pytest.approx(sorted(mine["start"]))
            (peak,) = [line for line in ax.get_lines() if line.get_gid() == f"peak:{name}"]
            times, counts = run.in_flight(stage)
            assert peak.get_xdata()[0] == pytest.approx(times[int(np.argmax(counts))])
            label = [t for t in ax.texts if " live at " in t.get_text()]
            assert label and label[0].get_text().startswith(
                f" {int(run.peak_in_flight[stage])} live at "
            )
            bottom, top = ax.get_ylim()  # inverted: microbatch 0 on top
            assert top < label[0].get_position()[1] < -0.35  # inside the frame, above mb 0's bar
        (legend,) = fig.legends
        colours = {tuple(h.get_facecolor()[:3]) for h in legend.legend_handles}
        assert len(colours) == 3  # forward, waiting, backward: three colours, one legend entry each
        assert [t.get_text().split(" ")[0] for t in legend.get_texts()] == [
            "forward",
            "stash",
            "backward",
        ]
    finally:
        plt.close(fig)
