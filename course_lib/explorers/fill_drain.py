"""pipe02's explorer: GPipe and 1F1B fill-drain schedules, their bubble and peak in-flight microbatches."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.figure import Figure

from course_lib.explorers.base import Explorer, fmt_ms, fmt_pct, metrics_table


class FillDrainExplorer(Explorer):
    """Schedule grid, stage-0 stash and closed form vs simulator for GPipe/1F1B (pipe02).

    Built for speed (< 100 ms per change up to p = 16, m = 64): a fixed layout (no layout engine)
    whose artists persist between updates. The grid is a raster — one image column per screen
    pixel, coloured by what each rank runs at that time (the simplified form of
    ``course_lib.figures.pipeline.schedule_grid``); microbatch labels appear only where every box has room.
    ``last_metrics`` maps each metric of the table to its (closed form, simulator) pair.
    """

    GRID_RECT = (0.09, 0.39, 0.70, 0.52)
    STASH_RECT = (0.09, 0.11, 0.70, 0.23)
    ROWS_PER_RANK = 10
    MAX_LABELS = 160

    def __init__(
        self,
        controls: Mapping[str, widgets.ValueWidget],
        *,
        forward_time: float,
        backward_time: float,
    ) -> None:
        self.forward_time = forward_time
        self.backward_time = backward_time
        self.last_metrics: dict[str, tuple[float, float]] = {}
        self._built = False
        super().__init__(controls, self._draw_frame, figsize=(10.0, 5.0), dpi=80)

    def _build(self) -> None:
        """Replace the base class's constrained-layout axes by fixed axes and persistent artists."""
        from matplotlib.patches import Rectangle
        from matplotlib.ticker import FuncFormatter, NullLocator

        from course_lib.figures.pipeline import IDLE_COLOUR, SCHEDULE_COLOURS

        # A figure without a layout engine: savefig then draws once, and no layout pass runs.
        fig = self.figure = Figure(figsize=self.figure.get_size_inches(), dpi=self.figure.dpi)
        grid = fig.add_axes(self.GRID_RECT)
        stash = fig.add_axes(self.STASH_RECT)  # same x limits as the grid, set on every update
        self.axes = np.array([grid, stash], dtype=object)
        self._palette = np.array(
            [_rgb255("white"), _rgb255(IDLE_COLOUR)]
            + [_rgb255(SCHEDULE_COLOURS[k]) for k in ("F", "B", "W")],
            dtype=np.uint8,
        )
        self._image = grid.imshow(
            np.zeros((1, 1, 3), dtype=np.uint8),
            aspect="auto",
            interpolation="nearest",
            extent=(0.0, 1.0, 0.5, -0.5),
        )
        self._time_scale = 1e3
        stash.xaxis.set_major_formatter(FuncFormatter(lambda t, _pos: f"{t * self._time_scale:g}"))
        grid.xaxis.set_major_locator(NullLocator())  # the stash panel below carries the time axis
        grid.tick_params(axis="y", length=0)
        for side in ("top", "right", "left", "bottom"):
            grid.spines[side].set_visible(False)
        # The key: plain patches and texts in figure coordinates (a Legend costs ~10x more to draw).
        left = self.GRID_RECT[0] + self.GRID_RECT[2] + 0.02
        top = self.GRID_RECT[1] + self.GRID_RECT[3]
        keys = [("F", "forward (F)"), ("B", "backward (B)"), ("idle", "idle")]
        for i, (kind, text) in enumerate(keys):
            y = top - 0.06 * (i + 1)
            colour = IDLE_COLOUR if kind == "idle" else SCHEDULE_COLOURS[kind]
            fig.patches.append(
                Rectangle((left, y), 0.025, 0.04, transform=fig.transFigure, facecolor=colour)
            )
            fig.text(left + 0.035, y + 0.02, text, va="center", fontsize=10)
        self._title = fig.text(
            self.GRID_RECT[0], top + 0.02, "", ha="left", va="bottom", fontsize=12
        )
        self._labels: list[Any] = []
        self._shown_ranks = -1

        colour = SCHEDULE_COLOURS["F"]
        (self._stash_line,) = stash.plot([], [], drawstyle="steps-post", color=colour, lw=1.8)
        self._stash_fill = None
        self._stash_colour = colour
        self._stash_text = stash.text(
            0.005, 0.97, "", transform=stash.transAxes, ha="left", va="top", fontsize=9
        )
        stash.set_ylabel("stashed on\nstage 0")
        stash.grid(axis="y", alpha=0.3)
        for side in ("top", "right"):
            stash.spines[side].set_visible(False)
        self._built = True

    def _frame(self) -> str:
        return self._draw_frame(**self.values)

    def grid_raster(self, run: Any, width: int) -> np.ndarray:
        """The grid as an image: ROWS_PER_RANK pixel rows per rank, ``width`` columns over [0, makespan]."""
        events = run.events
        num_ranks = run.schedule.num_ranks
        span = run.makespan if run.makespan > 0 else 1.0
        codes = np.ones((num_ranks, width), dtype=np.intp)  # 1 = idle
        x0 = np.rint(events["start"].to_numpy(dtype=float) / span * width).astype(np.intp)
        x1 = np.rint(events["end"].to_numpy(dtype=float) / span * width).astype(np.intp)
        x1 = np.maximum(x1, x0 + 1)  # every action stays visible
        kinds = events["kind"].map({"F": 2, "B": 3, "W": 4}).to_numpy(dtype=np.intp)
        ranks = events["rank"].to_numpy(dtype=np.intp)
        for rank, a, b, kind in zip(ranks, x0, x1, kinds, strict=True):
            codes[rank, a:b] = kind
        if len(x0) and np.median(x1 - x0) >= 4:  # room for a white edge between boxes
            codes[ranks, np.minimum(x0, width - 1)] = 0
        rows = self.ROWS_PER_RANK
        pixels = np.repeat(self._palette[codes], rows, axis=0)
        gap = np.r_[0, rows - 1] + np.arange(num_ranks)[:, None] * rows  # white gap between rows
        pixels[gap.ravel()] = 255
        return pixels

    def _draw_frame(
        self,
        *,
        num_stages: int,
        num_microbatches: int,
        latency_ms: float,
        schedule: str,
    ) -> str:
        from course_lib.figures.style import time_unit
        from course_lib.pipeline import (
            fill_drain_makespan,
            peak_in_flight_gpipe,
            peak_in_flight_one_f_one_b,
            simulate,
        )

        p, m, delta = num_stages, num_microbatches, latency_ms * 1e-3
        t_f, t_b = self.forward_time, self.backward_time
        run = simulate(_cached_schedule(schedule, p, m), t_f, t_b, p2p_latency=delta)
        span = run.makespan if run.makespan > 0 else 1.0
        grid, stash = self.axes
        fig = self.figure

        width_px = max(int(round(self.GRID_RECT[2] * fig.get_figwidth() * fig.dpi)), 1)
        self._image.set_data(self.grid_raster(run, width_px))
        self._image.set_extent((0.0, span, p - 0.5, -0.5))
        grid.set_xlim(0.0, span)
        grid.set_ylim(p - 0.5, -0.5)
        stash.set_xlim(0.0, span)
        if p != self._shown_ranks:
            # Label every rank up to 8 ranks, every other one beyond (fewer texts to render).
            step = 1 if p <= 8 else 2
            grid.set_yticks(range(0, p, step), [f"rank {r}" for r in range(0, p, step)], fontsize=9)
            self._shown_ranks = p
        self._time_scale, unit = time_unit(span)
        stash.set_xlabel(f"time ({unit})")
        self._title.set_text(
            f"{schedule}: {p} stage{'s' * (p != 1)}, {m} microbatch{'es' * (m != 1)} "
            f"— idle {run.idle_fraction:.1%} of rank-time"
        )
        self._draw_labels(run, width_px / span)

        times, counts = run.in_flight(0)
        self._stash_line.set_data(times, counts)
        if self._stash_fill is not None:
            self._stash_fill.remove()
        self._stash_fill = stash.fill_between(
            times, counts, step="post", color=self._stash_colour, alpha=0.35, lw=0
        )
        stash.set_ylim(0, m * 1.3 + 0.5)
        stash.set_yticks(sorted({0, int(counts.max()) if len(counts) else 0}))
        self._stash_text.set_text(
            f"peak {int(run.peak_in_flight[0])} of {m} "
            + ("microbatches'" if m != 1 else "microbatch's")
            + " activations stashed at once"
        )

        # Closed forms for balanced stages (fill-drain), next to what the simulator measured.
        ideal = m * (t_f + t_b)
        makespan = fill_drain_makespan(p, m, t_f, t_b, delta)
        if schedule == "GPipe":
            peak, peak_formula = peak_in_flight_gpipe(p, m), "m"
        else:
            peak, peak_formula = peak_in_flight_one_f_one_b(p, m, 0), "min(m, p)"
        zero = delta == 0
        rows_raw = [
            ("makespan", makespan, run.makespan, "(m+p−1)(t_f+t_b) + 2(p−1)δ", fmt_ms),
            (
                "elapsed idle fraction",
                1 - ideal / makespan,
                run.idle_fraction,
                "(p−1)/(m+p−1)" if zero else "1 − m(t_f+t_b) / makespan",
                fmt_pct,
            ),
            (
                "overhead vs ideal compute",
                makespan / ideal - 1,
                run.overhead,
                "(p−1)/m" if zero else "makespan / (m(t_f+t_b)) − 1",
                fmt_pct,
            ),
            (
                "peak stashed microbatches, stage 0",
                peak,
                int(run.peak_in_flight[0]),
                peak_formula,
                str,
            ),
        ]
        self.last_metrics = {
            name: (float(closed), float(simulated)) for name, closed, simulated, *_ in rows_raw
        }
        rows, disagree = [], False
        for name, closed, simulated, formula, fmt in rows_raw:
            same = abs(closed - simulated) <= 1e-9 * max(1.0, abs(closed))
            disagree = disagree or not same
            rows.append(
                (name, fmt(closed), formula, fmt(simulated), "yes" if same else "<b>no</b>")
            )
        head = (
            f"<b>{schedule}</b> · p = {p}, m = {m} · t_f = {t_f * 1e3:g} ms, "
            f"t_b = {t_b * 1e3:g} ms · δ = {latency_ms:.2f} ms = {delta / t_f:.2f}·t_f"
        )
        table = metrics_table(rows, ("", "closed form", "formula", "simulate()", "agree"))
        note = ""
        if disagree and schedule == "1F1B":
            note = (
                f"<i>1F1B with δ &gt; 0 takes {(run.makespan - makespan) * 1e3:.2f} ms longer than "
                "the fill-drain formula: in its steady state a rank alternates F and B, and each "
                "alternation waits for a message from a neighbour, so δ lands on the critical path "
                "again and again, not only in the fill and the drain.</i>"
            )
        elif disagree:
            note = "<b>The closed form and the simulator disagree: please report this.</b>"
        return head + table + note

    def _draw_labels(self, run: Any, px_per_s: float) -> None:
        """Microbatch numbers in the boxes, if there are few enough and every box has room."""
        for label in self._labels:
            label.remove()
        self._labels = []
        events = run.events
        if len(events) == 0 or len(events) > self.MAX_LABELS:
            return
        widths = (events["end"] - events["start"]).to_numpy(dtype=float)
        microbatch = events["microbatch"].to_numpy()
        digits = len(str(int(microbatch.max())))
        char_px = 0.62 * 8.0 * self.figure.dpi / 72
        if widths.min() * px_per_s < char_px * digits + 4:
            return
        grid = self.axes[0]
        centres = events["start"].to_numpy(dtype=float) + widths / 2
        ranks = events["rank"].to_numpy()
        # One scatter per microbatch index with the number as a (cached) marker path: drawing a
        # path collection is ~10x cheaper than one Text artist per box.
        for j in np.unique(microbatch):
            mine = microbatch == j
            label = str(int(j))
            side = 7.0 * max(1.0, 0.62 * len(label))  # marker paths are scaled to their longer side
            self._labels.append(
                grid.scatter(
                    centres[mine],
                    ranks[mine],
                    s=side**2,
                    marker=f"${label}$",
                    c="black",
                    linewidths=0,
                )
            )


@functools.lru_cache(maxsize=64)
def _cached_schedule(name: str, num_stages: int, num_microbatches: int) -> Any:
    """GPipe or 1F1B Schedule for (p, m); schedules are immutable, so a revisited setting is free."""
    from course_lib.pipeline import gpipe, one_f_one_b

    return {"GPipe": gpipe, "1F1B": one_f_one_b}[name](num_stages, num_microbatches)


def _rgb255(colour: str) -> list[int]:
    from matplotlib.colors import to_rgb

    return [int(round(255 * c)) for c in to_rgb(colour)]


def fill_drain_explorer(
    num_stages: int = 4,
    num_microbatches: int = 8,
    forward_time: float = 1e-3,
    backward_time: float = 2e-3,
    p2p_latency: float = 0.0,
    schedule: str = "GPipe",
) -> FillDrainExplorer:
    """Explorer: p, m, latency δ and GPipe/1F1B -> schedule grid, stage-0 stash, formula vs simulate (pipe02).

    Sliders num_stages p (1-16), num_microbatches m (1-64) and the point-to-point latency δ in ms
    (0 to 2·t_f); a toggle GPipe / 1F1B. The closed form is the balanced fill-drain one,
    (m + p - 1)(t_f + t_b) + 2(p - 1)δ, with idle 1 - m(t_f + t_b)/makespan, which is
    (p - 1)/(m + p - 1) at δ = 0; 1F1B meets it at δ = 0 only.
    """
    from course_lib.pipeline._validate import check_duration, check_pipeline_shape

    p, m = check_pipeline_shape(num_stages, num_microbatches)
    t_f = check_duration("forward_time", forward_time)
    t_b = check_duration("backward_time", backward_time)
    delta = check_duration("p2p_latency", p2p_latency)
    if t_f <= 0:
        raise ValueError(
            f"forward_time must be > 0 seconds (the latency slider is in its units), got {t_f}"
        )
    if p > 16 or m > 64:
        raise ValueError(
            f"the explorer covers num_stages 1..16 and num_microbatches 1..64, got {p}, {m}"
        )
    if schedule not in ("GPipe", "1F1B"):
        raise ValueError(f"schedule must be 'GPipe' or '1F1B', got {schedule!r}")
    latency_max_ms = 2e3 * t_f
    if delta * 1e3 > latency_max_ms:
        raise ValueError(f"p2p_latency must be at most 2·forward_time = {2 * t_f} s, got {delta}")

    wide = {"description_width": "initial"}
    controls = {
        "num_stages": widgets.IntSlider(value=p, min=1, max=16, description="stages p", style=wide),
        "num_microbatches": widgets.IntSlider(
            value=m, min=1, max=64, description="microbatches m", style=wide
        ),
        "latency_ms": widgets.FloatSlider(
            value=delta * 1e3,
            min=0.0,
            max=latency_max_ms,
            step=latency_max_ms / 40,
            readout_format=".2f",
            description="latency δ (ms)",
            style=wide,
        ),
        "schedule": widgets.ToggleButtons(options=["GPipe", "1F1B"], value=schedule),
    }
    return FillDrainExplorer(controls, forward_time=t_f, backward_time=t_b)
