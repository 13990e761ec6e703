"""pipe02's explorer: GPipe and 1F1B fill-drain schedules, their bubble and peak in-flight microbatches."""

from __future__ import annotations

import functools
import struct
import zlib
from collections.abc import Mapping
from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.figure import Figure

from course_lib.explorers.base import Explorer, fmt_ms, fmt_pct, metrics_table


class FillDrainExplorer(Explorer):
    """Schedule grid, stage-0 stash and closed form vs simulator for GPipe/1F1B (pipe02).

    Built for speed (well under 100 ms per change up to p = 16, m = 64; measure with
    benchmarks/bench_fill_drain_explorer.py). The figure is drawn in full once; a change restores
    that background (cached per number of ranks, with its rank labels), writes the schedule grid
    as pixels straight into the Agg buffer — one pixel column per screen pixel, coloured by what
    each rank runs then (the simplified form of ``course_lib.figures.pipeline.schedule_grid``) —,
    draws only the artists that change (title, ticks, stash curve, microbatch labels, reused from
    one frame to the next) and encodes the buffer as an RGB PNG at zlib level 1.
    ``last_metrics`` maps each metric of the table to its (closed form, simulator) pair.
    """

    GRID_RECT = (0.09, 0.39, 0.70, 0.57)
    STASH_RECT = (0.09, 0.11, 0.70, 0.23)
    ROWS_PER_RANK = 10
    MAX_LABELS = 160
    MAX_TICKS = 12

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
        self.title = ""
        self._built = False
        super().__init__(controls, self._draw_frame, figsize=(10.0, 5.0), dpi=80)

    # --- the figure, drawn once ---------------------------------------------------------------

    def _build(self) -> None:
        """Replace the base class's figure by fixed, pixel-aligned axes and persistent artists."""
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.lines import TICKDOWN, TICKLEFT, Line2D
        from matplotlib.patches import Polygon, Rectangle
        from matplotlib.ticker import MaxNLocator, NullLocator
        from matplotlib.transforms import offset_copy

        from course_lib.figures.pipeline import IDLE_COLOUR, SCHEDULE_COLOURS

        fig = self.figure = Figure(figsize=self.figure.get_size_inches(), dpi=self.figure.dpi)
        self._canvas = FigureCanvasAgg(fig)
        width, height = self._canvas.get_width_height()
        grid_rect, self._grid_px = _pixel_aligned(self.GRID_RECT, width, height)
        stash_rect, _ = _pixel_aligned(self.STASH_RECT, width, height)
        grid = fig.add_axes(grid_rect)
        grid.set_axis_off()  # its pixels are written directly; it only lends its data transform
        stash = fig.add_axes(stash_rect)
        self.axes = np.array([grid, stash], dtype=object)
        self._palette = np.array(
            [_rgb255("white"), _rgb255(IDLE_COLOUR)]
            + [_rgb255(SCHEDULE_COLOURS[k]) for k in ("F", "B", "W")],
            dtype=np.uint8,
        )
        opaque = np.concatenate([self._palette, np.full((len(self._palette), 1), 255)], axis=1)
        self._palette_rgba = opaque.astype(np.uint8).view(np.uint32)[:, 0]  # RGBA as one word

        # Stash panel: the frame and y label are static; ticks are drawn by hand on every frame.
        stash.xaxis.set_major_locator(NullLocator())
        stash.yaxis.set_major_locator(NullLocator())
        for side in ("top", "right"):
            stash.spines[side].set_visible(False)
        stash.set_ylabel("stashed on\nstage 0", labelpad=24)
        self._time_locator = MaxNLocator(nbins=8, steps=[1, 2, 2.5, 5, 10])

        # The key: plain patches and texts in figure coordinates (a Legend costs ~10x more to draw).
        left = grid_rect[0] + grid_rect[2] + 0.02
        top = grid_rect[1] + grid_rect[3]
        keys = [("F", "forward (F)"), ("B", "backward (B)"), ("idle", "idle")]
        for i, (kind, text) in enumerate(keys):
            y = top - 0.06 * (i + 1)
            colour = IDLE_COLOUR if kind == "idle" else SCHEDULE_COLOURS[kind]
            fig.patches.append(
                Rectangle((left, y), 0.025, 0.04, transform=fig.transFigure, facecolor=colour)
            )
            fig.text(left + 0.035, y + 0.02, text, va="center", fontsize=10)
        self._canvas.draw()
        self._base = self._canvas.copy_from_bbox(fig.bbox)
        self._backgrounds: dict[tuple[int, str], Any] = {}

        # Artists drawn on every frame (created once, updated in place, never added to a layout).
        self._rank_labels = [
            grid.text(
                -0.01, 0, "", transform=grid.get_yaxis_transform(), ha="right", va="center",
                fontsize=9,
            )
            for _ in range(16)
        ]  # fmt: skip
        self._time_label = fig.text(
            stash_rect[0] + stash_rect[2] / 2, 0.005, "", ha="center", va="bottom", fontsize=10
        )
        below = offset_copy(stash.get_xaxis_transform(), fig=fig, y=-5, units="points")
        self._x_tick_labels = [
            stash.text(0, 0, "", transform=below, ha="center", va="top", fontsize=10)
            for _ in range(self.MAX_TICKS)
        ]
        self._x_tick_marks = Line2D(
            [], [], transform=stash.get_xaxis_transform(), marker=TICKDOWN, markersize=3.5,
            linestyle="none", color="black", markeredgewidth=0.8, figure=fig,
        )  # fmt: skip
        beside = offset_copy(stash.get_yaxis_transform(), fig=fig, x=-5, units="points")
        self._y_tick_labels = [
            stash.text(0, 0, "", transform=beside, ha="right", va="center", fontsize=10)
            for _ in range(2)
        ]
        self._y_tick_marks = Line2D(
            [0, 0], [0, 0], transform=stash.get_yaxis_transform(), marker=TICKLEFT,
            markersize=3.5, linestyle="none", color="black", markeredgewidth=0.8, figure=fig,
        )  # fmt: skip
        self._peak_line = Line2D(
            [0, 1], [0, 0], transform=stash.get_yaxis_transform(), color="black", alpha=0.3,
            lw=0.8, figure=fig,
        )  # fmt: skip
        colour = SCHEDULE_COLOURS["F"]
        (self._stash_line,) = stash.plot([], [], color=colour, lw=1.8)
        self._stash_fill = stash.add_patch(
            Polygon(np.zeros((1, 2)), closed=True, facecolor=colour, alpha=0.35, lw=0)
        )
        self._label_pool: dict[int, Any] = {}  # microbatch index -> its scatter of number markers
        self._labels: list[Any] = []  # the label groups drawn in the current frame
        self._built = True

    def _background(self, num_ranks: int, unit: str) -> Any:
        """The static figure plus the rank labels and the time unit, cached per (ranks, unit)."""
        key = (num_ranks, unit)
        if key not in self._backgrounds:
            canvas, grid = self._canvas, self.axes[0]
            canvas.restore_region(self._base)
            grid.set_ylim(num_ranks - 0.5, -0.5)
            step = 1 if num_ranks <= 8 else 2  # every other rank beyond 8 ranks
            for r, label in zip(range(0, num_ranks, step), self._rank_labels, strict=False):
                label.set_y(r)
                label.set_text(f"rank {r}")
                self.figure.draw_artist(label)
            self._time_label.set_text(f"time ({unit})")
            self.figure.draw_artist(self._time_label)
            self._backgrounds[key] = canvas.copy_from_bbox(self.figure.bbox)
        return self._backgrounds[key]

    # --- one frame ----------------------------------------------------------------------------

    def _frame(self) -> str:
        return self._draw_frame(**self.values)

    def grid_raster(self, run: Any, width: int, height: int | None = None) -> np.ndarray:
        """The grid as an RGB image of ``width`` columns over [0, makespan] and ``height`` rows
        (default ROWS_PER_RANK per rank): rank r fills rows [r·h/p, (r+1)·h/p) between one white
        row above and below; each column shows the action running there, or idle grey."""
        height = self.ROWS_PER_RANK * run.schedule.num_ranks if height is None else height
        return self._palette[self._grid_codes(run, width, height)]

    def _action_codes(self, run: Any) -> np.ndarray:
        """Palette index of each event's box: 2 F, 3 B, 4 W (a subclass may add shades)."""
        kind = run.events["kind"].to_numpy()
        return np.where(kind == "F", 2, np.where(kind == "B", 3, 4))

    def _grid_codes(self, run: Any, width: int, height: int) -> np.ndarray:
        """(height, width) palette indices of the grid: 0 white, 1 idle, then the boxes'
        :meth:`_action_codes` (2 F, 3 B, 4 W)."""
        events = run.events
        num_ranks = run.schedule.num_ranks
        span = run.makespan if run.makespan > 0 else 1.0
        ranks = events["rank"].to_numpy(dtype=np.intp)
        x0 = np.rint(events["start"].to_numpy(dtype=float) * (width / span)).astype(np.intp)
        x1 = np.rint(events["end"].to_numpy(dtype=float) * (width / span)).astype(np.intp)
        x1 = np.maximum(x1, x0 + 1)  # every action stays visible
        kinds = self._action_codes(run)
        # Events are sorted by rank, then start: one search finds the action under every pixel.
        columns = np.arange(width)
        keys = ranks * (width + 1) + x0
        cells = np.arange(num_ranks)[:, None] * (width + 1) + columns[None, :]
        found = np.searchsorted(keys, cells, side="right") - 1
        safe = np.maximum(found, 0)
        inside = (
            (found >= 0)
            & (ranks[safe] == np.arange(num_ranks)[:, None])
            & (columns[None, :] < x1[safe])
        )
        codes = np.where(inside, kinds[safe], 1)  # 1 = idle
        if len(x0) and np.median(x1 - x0) >= 4:  # room for a white edge between boxes
            codes[ranks, np.minimum(x0, width - 1)] = 0
        edges = np.rint(np.arange(num_ranks + 1) * (height / num_ranks)).astype(np.intp)
        rows = codes[np.repeat(np.arange(num_ranks), np.diff(edges))]
        band = np.diff(edges) >= 3
        rows[np.concatenate([edges[:-1][band], edges[1:][band] - 1])] = 0  # white gap rows
        return rows

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
        times, counts = run.in_flight(0)
        peak_stage0 = int(counts.max()) if len(counts) else 0
        canvas = self._canvas
        grid, stash = self.axes

        scale, unit = time_unit(span)
        canvas.restore_region(self._background(p, unit))
        left, right, top, bottom = self._grid_px
        pixels = np.asarray(canvas.buffer_rgba()).view(np.uint32)[:, :, 0]  # one RGBA word each
        pixels[top:bottom, left:right] = self._palette_rgba[
            self._grid_codes(run, right - left, bottom - top)
        ]
        grid.set_xlim(0.0, span)
        grid.set_ylim(p - 0.5, -0.5)
        stash.set_xlim(0.0, span)
        stash.set_ylim(0, m * 1.3 + 0.5)

        self._draw_time_ticks(span, scale)
        self._draw_stash(times, counts, peak_stage0)
        self._draw_labels(run, (right - left) / span)

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
            ("peak stashed microbatches, stage 0", peak, peak_stage0, peak_formula, str),
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
        self.title = (  # the figure's title, shown above it with the table
            f"{schedule}: {p} stage{'s' * (p != 1)}, {m} microbatch{'es' * (m != 1)} "
            f"— idle {run.idle_fraction:.1%} of rank-time"
        )
        head = (
            f"<b>{self.title}</b> · t_f = {t_f * 1e3:g} ms, t_b = {t_b * 1e3:g} ms · "
            f"δ = {latency_ms:.2f} ms = {delta / t_f:.2f}·t_f"
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

    def _draw_time_ticks(self, span: float, scale: float) -> None:
        """Tick marks and labels of the time axis under the stash panel."""
        values = self._time_locator.tick_values(0.0, span * scale)
        values = values[(values >= 0) & (values <= span * scale * (1 + 1e-9))]
        values = values[: self.MAX_TICKS]
        self._x_tick_marks.set_data(values / scale, np.zeros(len(values)))
        self.figure.draw_artist(self._x_tick_marks)
        for value, label in zip(values, self._x_tick_labels, strict=False):
            label.set_x(value / scale)
            label.set_text(f"{value:g}")
            self.figure.draw_artist(label)

    def _draw_stash(self, times: np.ndarray, counts: np.ndarray, peak: int) -> None:
        """The live stashes on stage 0 as a filled step curve, its peak and two y ticks."""
        draw = self.figure.draw_artist
        ticks = sorted({0, peak})
        self._peak_line.set_ydata([peak, peak])
        draw(self._peak_line)
        self._y_tick_marks.set_data([0] * len(ticks), ticks)
        draw(self._y_tick_marks)
        for value, label in zip(ticks, self._y_tick_labels, strict=False):
            label.set_y(value)
            label.set_text(str(value))
            draw(label)
        if len(times):  # step-post: count[k] on [times[k], times[k+1])
            xs = np.repeat(times, 2)[1:]
            ys = np.repeat(counts, 2)[:-1]
            self._stash_fill.set_xy(np.column_stack([np.r_[times[0], xs], np.r_[0, ys]]))
            self._stash_line.set_data(xs, ys)
            draw(self._stash_fill)
            draw(self._stash_line)

    def _draw_labels(self, run: Any, px_per_s: float) -> None:
        """Microbatch numbers in the boxes, if there are few enough and every box has room."""
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
        # One scatter per microbatch index with the number as a marker path: drawing a path
        # collection is ~10x cheaper than one Text artist per box; each is created once, reused.
        for j in np.unique(microbatch):
            j = int(j)
            if j not in self._label_pool:
                label = str(j)
                side = 7.0 * max(1.0, 0.62 * len(label))  # marker paths scale to their longer side
                group = grid.scatter(
                    [0.0], [0.0], s=side**2, marker=f"${label}$", c="black", linewidths=0
                )
                self._label_pool[j] = group
            group = self._label_pool[j]
            mine = microbatch == j
            group.set_offsets(np.column_stack([centres[mine], ranks[mine]]))
            self.figure.draw_artist(group)
            self._labels.append(group)

    def png(self) -> bytes:
        """The Agg buffer as an RGB PNG (no filter, zlib level 1): about half PIL's encode time."""
        return _png_rgb(np.asarray(self._canvas.buffer_rgba()))


def _pixel_aligned(
    rect: tuple[float, float, float, float], width: int, height: int
) -> tuple[tuple[float, float, float, float], tuple[int, int, int, int]]:
    """``rect`` (figure fractions) moved to whole pixels, and its (left, right, top, bottom)
    pixel bounds in buffer rows (row 0 at the top)."""
    x0, x1 = round(rect[0] * width), round((rect[0] + rect[2]) * width)
    y0, y1 = round(rect[1] * height), round((rect[1] + rect[3]) * height)
    aligned = (x0 / width, y0 / height, (x1 - x0) / width, (y1 - y0) / height)
    return aligned, (x0, x1, height - y1, height - y0)


def _png_rgb(rgba: np.ndarray, level: int = 1) -> bytes:
    """Encode an (H, W, 4) uint8 buffer as an 8-bit RGB PNG, filter type 0 on every row."""
    height, width = rgba.shape[:2]
    scanlines = np.zeros((height, 1 + 3 * width), dtype=np.uint8)  # byte 0 of a row: filter 0
    scanlines[:, 1:].reshape(height, width, 3)[...] = rgba[:, :, :3]  # a view: one strided copy

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB, no interlace
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(scanlines.tobytes(), level))
        + chunk(b"IEND", b"")
    )


@functools.lru_cache(maxsize=64)
def _cached_schedule(name: str, num_stages: int, num_microbatches: int) -> Any:
    """GPipe or 1F1B Schedule for (p, m); schedules are immutable, so a revisited setting is free."""
    from course_lib.pipeline import gpipe, one_f_one_b

    return {"GPipe": gpipe, "1F1B": one_f_one_b}[name](num_stages, num_microbatches)


def _rgb255(colour: str) -> list[int]:
    from matplotlib.colors import to_rgb

    return [int(round(255 * c)) for c in to_rgb(colour)]


def pipeline_sliders(
    num_stages: int,
    num_microbatches: int,
    forward_time: float,
    backward_time: float,
    p2p_latency: float,
) -> tuple[dict[str, widgets.ValueWidget], float, float]:
    """Validated sliders num_stages p (1-16), num_microbatches m (1-64) and latency δ in ms (0 to
    2·t_f) shared by the pipeline explorers (pipe02, pipe03), with t_f and t_b in seconds."""
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
    }
    return controls, t_f, t_b


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
    controls, t_f, t_b = pipeline_sliders(
        num_stages, num_microbatches, forward_time, backward_time, p2p_latency
    )
    if schedule not in ("GPipe", "1F1B"):
        raise ValueError(f"schedule must be 'GPipe' or '1F1B', got {schedule!r}")
    controls["schedule"] = widgets.ToggleButtons(options=["GPipe", "1F1B"], value=schedule)
    return FillDrainExplorer(controls, forward_time=t_f, backward_time=t_b)
