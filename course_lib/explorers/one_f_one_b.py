"""pipe03's explorer: a 1F1B schedule's phases and one stage's stashes against GPipe's."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import ipywidgets as widgets
import numpy as np

from course_lib.explorers.base import fmt_ms, metrics_table
from course_lib.explorers.fill_drain import FillDrainExplorer, pipeline_sliders

STASH_COLOUR = "#009E73"
"""The 1F1B stash curve: bluish green, apart from the grid's F blue and GPipe's vermillion line."""


class OneFOneBExplorer(FillDrainExplorer):
    """1F1B schedule grid with phase edges, and stage s's stashes under 1F1B and GPipe (pipe03).

    Built on pipe02's explorer (same pixel-written grid, cached background and PNG encoder, well
    under 100 ms per change up to p = 16, m = 64; benchmarks/bench_one_f_one_b_explorer.py):
    black edges on each rank's row mark where its w = min(m, p - s - 1) warm-up forwards end and
    its w cool-down backwards begin; an outline marks the selected stage; the lower panel shows
    that stage's live stashes under 1F1B (filled, :data:`STASH_COLOUR`) and GPipe (line), with
    y ticks at 0 and both peaks. ``last_metrics`` maps each
    metric to its (closed form, simulator) pair; the closed forms hold for balanced stages at
    zero latency.
    """

    def __init__(
        self,
        controls: Mapping[str, widgets.ValueWidget],
        *,
        forward_time: float,
        backward_time: float,
    ) -> None:
        self._adjusting = False
        super().__init__(controls, forward_time=forward_time, backward_time=backward_time)

    def _on_change(self, change: Mapping[str, Any]) -> None:
        """Keep the stage slider within 0..p-1 when p changes, then redraw once."""
        if self._adjusting:
            return
        stage = self.controls["stage"]
        if change.get("owner") is self.controls["num_stages"]:
            self._adjusting = True
            try:
                stage.max = self.controls["num_stages"].value - 1
            finally:
                self._adjusting = False
        self.update()

    def _build(self) -> None:
        from matplotlib.collections import LineCollection
        from matplotlib.lines import TICKLEFT, Line2D
        from matplotlib.patches import Rectangle
        from matplotlib.transforms import offset_copy

        from course_lib.figures.pipeline import PIPELINE_LINE_COLOURS

        super()._build()
        fig = self.figure
        grid, stash = self.axes
        stash.set_ylabel("stashed\nmicrobatches", labelpad=24)
        self._stash_line.set_color(STASH_COLOUR)
        self._stash_fill.set_facecolor(STASH_COLOUR)
        # A third y tick, at GPipe's peak (the parent draws 0 and the 1F1B peak).
        beside = offset_copy(stash.get_yaxis_transform(), fig=fig, x=-5, units="points")
        self._gpipe_tick_label = stash.text(
            0, 0, "", transform=beside, ha="right", va="center", fontsize=10
        )
        self._gpipe_tick_mark = Line2D(
            [0], [0], transform=stash.get_yaxis_transform(), marker=TICKLEFT, markersize=3.5,
            linestyle="none", color="black", markeredgewidth=0.8, figure=fig,
        )  # fmt: skip
        left = self.GRID_RECT[0] + self.GRID_RECT[2] + 0.02
        top = self.GRID_RECT[1] + self.GRID_RECT[3]
        keys = [
            ("1F1B stash", STASH_COLOUR, "-"),
            ("GPipe stash", PIPELINE_LINE_COLOURS[1], "-"),
            ("phase edge", "black", "-"),
        ]
        for i, (text, colour, style) in enumerate(keys):
            y = top - 0.06 * (i + 4) + 0.02
            fig.lines.append(
                Line2D(
                    [left, left + 0.025],
                    [y, y],
                    transform=fig.transFigure,
                    color=colour,
                    lw=2.2,
                    ls=style,
                )  # fmt: skip
            )
            fig.text(left + 0.035, y, text, va="center", fontsize=10)
        self._canvas.draw()
        self._base = self._canvas.copy_from_bbox(fig.bbox)
        self._backgrounds = {}
        self._edges = LineCollection([], colors="black", linewidths=2.0, figure=fig)
        self._edges.set_transform(grid.transData)
        self._outline = Rectangle(
            (0, 0), 1, 1, fill=False, edgecolor="black", lw=1.2, ls="--", figure=fig
        )
        self._outline.set_transform(grid.transData)
        self._gpipe_line = Line2D(
            [], [], color=PIPELINE_LINE_COLOURS[1], lw=1.8, figure=fig, transform=stash.transData
        )
        self._stash_title = fig.text(
            self.STASH_RECT[0], self.STASH_RECT[1] + self.STASH_RECT[3] + 0.01, "",
            ha="left", va="bottom", fontsize=10,
        )  # fmt: skip

    def _frame(self) -> str:
        return self._draw_frame(**self.values)

    def _draw_frame(  # type: ignore[override]
        self, *, num_stages: int, num_microbatches: int, stage: int, latency_ms: float
    ) -> str:
        from course_lib.figures.style import time_unit
        from course_lib.pipeline import (
            fill_drain_makespan,
            one_f_one_b_warmup,
            peak_in_flight_gpipe,
            peak_in_flight_one_f_one_b,
        )

        p, m, s = num_stages, num_microbatches, min(stage, num_stages - 1)
        delta = latency_ms * 1e-3
        t_f, t_b = self.forward_time, self.backward_time
        ofob, gpipe_run = (_cached_run(name, p, m, t_f, t_b, delta) for name in ("1F1B", "GPipe"))
        span = max(ofob.makespan, gpipe_run.makespan, 1e-12)
        scale, unit = time_unit(span)
        canvas, fig = self._canvas, self.figure
        grid, stash = self.axes
        canvas.restore_region(self._background(p, unit))
        left, right, top, bottom = self._grid_px
        width = max(1, int(round((right - left) * ofob.makespan / span)))
        pixels = np.asarray(canvas.buffer_rgba()).view(np.uint32)[:, :, 0]
        pixels[top:bottom, left : left + width] = self._palette_rgba[
            self._grid_codes(ofob, width, bottom - top)
        ]
        grid.set_xlim(0.0, span)
        grid.set_ylim(p - 0.5, -0.5)
        stash.set_xlim(0.0, span)
        stash.set_ylim(0, m * 1.3 + 0.5)

        # Phase edges: where each rank's warm-up ends and its cool-down begins.
        segments = []
        events = ofob.events
        starts = events["start"].to_numpy(dtype=float)
        ends = events["end"].to_numpy(dtype=float)
        offset = 0
        for rank in range(p):
            w = min(m, p - rank - 1)
            n = 2 * m
            if w:
                for x in (ends[offset + w - 1], starts[offset + n - w]):
                    segments.append([(x, rank - 0.45), (x, rank + 0.45)])
            offset += n
        self._edges.set_segments(segments)
        fig.draw_artist(self._edges)
        self._outline.set_bounds(0.0, s - 0.5, ofob.makespan, 1.0)
        fig.draw_artist(self._outline)

        self._draw_time_ticks(span, scale)
        times, counts = ofob.in_flight(s)
        peak = int(counts.max())
        self._draw_stash(times, counts, peak)
        g_times, g_counts = gpipe_run.in_flight(s)
        self._gpipe_line.set_data(np.repeat(g_times, 2)[1:], np.repeat(g_counts, 2)[:-1])
        fig.draw_artist(self._gpipe_line)
        g_peak = int(g_counts.max())
        self._gpipe_tick_label.set_text("" if g_peak in (0, peak) else str(g_peak))
        if self._gpipe_tick_label.get_text():  # no second tick where the peaks coincide
            self._gpipe_tick_mark.set_ydata([g_peak])
            self._gpipe_tick_label.set_y(g_peak)
            fig.draw_artist(self._gpipe_tick_mark)
            fig.draw_artist(self._gpipe_tick_label)
        self._stash_title.set_text(
            f"stashed on stage {s}: 1F1B peak {peak}, GPipe peak {g_peak} microbatches"
        )
        fig.draw_artist(self._stash_title)
        self._draw_labels(ofob, width / max(ofob.makespan, 1e-12))

        w = one_f_one_b_warmup(p, m, s)
        closed = fill_drain_makespan(p, m, t_f, t_b)
        life = [ofob.lifetime(s, j) for j in range(m)]
        g_life = [gpipe_run.lifetime(s, j) for j in range(m)]
        longest = max(end - start for start, end in life)
        g_longest = max(end - start for start, end in g_life)
        rows_raw = [
            ("peak stashed on stage s, 1F1B", peak_in_flight_one_f_one_b(p, m, s), peak),
            ("peak stashed on stage s, GPipe", peak_in_flight_gpipe(p, m, s), g_peak),
            ("makespan, 1F1B", closed, ofob.makespan),
            ("makespan, GPipe", closed + 2 * (p - 1) * delta, gpipe_run.makespan),
        ]
        self.last_metrics = {name: (float(c), float(v)) for name, c, v in rows_raw}
        self.title = (
            f"1F1B: {p} stage{'s' * (p != 1)}, {m} microbatch{'es' * (m != 1)}, stage {s}: "
            f"{w} warm-up F · {m - w} F/B pair{'s' * (m - w != 1)} · {w} cool-down B"
        )
        fmts = [str, str, fmt_ms, fmt_ms]
        formulas = [
            "min(m, p−s)", "m", "(m+p−1)(t_f+t_b), δ = 0 only", "(m+p−1)(t_f+t_b) + 2(p−1)δ",
        ]  # fmt: skip
        rows = []
        for (name, c, v), fmt, formula in zip(rows_raw, fmts, formulas, strict=True):
            same = abs(c - v) <= 1e-9 * max(1.0, abs(c))
            rows.append((name, fmt(c), formula, fmt(v), "yes" if same else "<b>no</b>"))
        lives = f"{fmt_ms(longest)} / {fmt_ms(g_longest)}"
        rows.append(("longest stash on stage s, 1F1B / GPipe", "", "F start → B end", lives, ""))
        head = (
            f"<b>{self.title}</b> · t_f = {t_f * 1e3:g} ms, t_b = {t_b * 1e3:g} ms · "
            f"δ = {latency_ms:.2f} ms"
        )
        table = metrics_table(rows, ("", "closed form", "formula", "simulate()", "agree"))
        note = ""
        if ofob.makespan > gpipe_run.makespan * (1 + 1e-9):
            note = (
                f"<i>With δ &gt; 0, 1F1B takes {(ofob.makespan - gpipe_run.makespan) * 1e3:.2f} ms "
                "longer than GPipe: each steady-state backward waits for a gradient the next stage "
                "has just computed, so δ recurs on the critical path.</i>"
            )
        return head + table + note


@functools.lru_cache(maxsize=64)
def _cached_run(name: str, p: int, m: int, t_f: float, t_b: float, delta: float) -> Any:
    """The simulated timeline of GPipe or 1F1B at (p, m, δ): a revisited setting is free."""
    from course_lib.pipeline import gpipe, one_f_one_b, simulate

    schedule = {"GPipe": gpipe, "1F1B": one_f_one_b}[name](p, m)
    return simulate(schedule, t_f, t_b, p2p_latency=delta)


def one_f_one_b_explorer(
    num_stages: int = 4,
    num_microbatches: int = 8,
    stage: int = 0,
    forward_time: float = 1e-3,
    backward_time: float = 2e-3,
    p2p_latency: float = 0.0,
) -> OneFOneBExplorer:
    """Explorer: p, m, stage s and latency δ -> 1F1B phases and stage s's stashes vs GPipe (pipe03).

    Sliders num_stages p (1-16), num_microbatches m (1-64), stage s (0 to p - 1) and the
    point-to-point latency δ in ms (0 to 2·t_f). Metrics: peak stashes on stage s, min(m, p - s)
    under 1F1B and m under GPipe, and the makespans, each closed form next to simulate().
    """
    from course_lib.pipeline._validate import check_stage

    sliders, t_f, t_b = pipeline_sliders(
        num_stages, num_microbatches, forward_time, backward_time, p2p_latency
    )
    p = sliders["num_stages"].value
    s = check_stage(stage, p)
    stage_slider = widgets.IntSlider(
        value=s, min=0, max=p - 1, description="stage s", style={"description_width": "initial"}
    )
    controls = {
        "num_stages": sliders["num_stages"],
        "num_microbatches": sliders["num_microbatches"],
        "stage": stage_slider,
        "latency_ms": sliders["latency_ms"],
    }
    return OneFOneBExplorer(controls, forward_time=t_f, backward_time=t_b)
