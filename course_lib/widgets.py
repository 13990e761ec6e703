"""ipywidgets explorers built on the course's models.

Each explorer is a row of controls, a figure and a short metrics panel. A change of any control
recomputes the model and redraws the existing matplotlib figure into an Image widget (no new figure,
no notebook output churn), and records how long that took in ``last_update_ms`` so the
responsiveness target (< 100 ms per change) can be measured.
"""

from __future__ import annotations

import functools
import io
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.figure import Figure


class Explorer:
    """Controls -> model -> figure + metrics; `update()` is what a slider change runs."""

    def __init__(
        self,
        controls: Mapping[str, widgets.ValueWidget],
        draw: Callable[..., str],
        *,
        figsize: tuple[float, float] = (10.0, 4.0),
        ncols: int = 1,
        width_ratios: tuple[float, ...] | None = None,
        dpi: int = 80,
    ) -> None:
        self.controls = dict(controls)
        self._draw = draw
        # A Figure not managed by pyplot: redrawing it never creates notebook output by itself.
        self.figure = Figure(figsize=figsize, dpi=dpi, layout="constrained")
        gridspec = {"width_ratios": width_ratios} if width_ratios else None
        self.axes = self.figure.subplots(1, ncols, gridspec_kw=gridspec, squeeze=False)[0]
        self.image = widgets.Image(format="png", layout=widgets.Layout(width="100%"))
        self.metrics = widgets.HTML()
        self.last_update_ms = float("nan")
        for control in self.controls.values():
            control.observe(self._on_change, names="value")
        self.widget = widgets.VBox(
            [widgets.HBox(list(self.controls.values())), self.metrics, self.image]
        )
        self.update()

    @property
    def values(self) -> dict[str, Any]:
        """The current value of every control, by name."""
        return {name: control.value for name, control in self.controls.items()}

    def _on_change(self, _change: Mapping[str, Any]) -> None:
        self.update()

    def _build(self) -> None:
        """Hook run once before the first frame: fixed layouts, persistent artists, backgrounds."""

    def _frame(self) -> str:
        """Hook: redraw for the current control values; returns the metrics HTML."""
        for ax in self.axes:
            ax.clear()
        return self._draw(self.axes, **self.values)

    def png(self) -> bytes:
        """The figure as PNG bytes, at zlib level 1 (the image is re-sent on every change).

        Explorers that blit keep an Agg canvas in ``self._canvas`` and are encoded from its
        buffer directly; the others are rendered with ``savefig``.
        """
        from PIL import Image

        buffer = io.BytesIO()
        canvas = getattr(self, "_canvas", None)
        if canvas is None:
            self.figure.savefig(buffer, format="png", pil_kwargs={"compress_level": 1})
        else:
            width, height = canvas.get_width_height()
            image = Image.frombuffer(
                "RGBA", (width, height), canvas.buffer_rgba(), "raw", "RGBA", 0, 1
            )
            image.save(buffer, format="png", compress_level=1)
        return buffer.getvalue()

    def update(self) -> float:
        """Recompute, redraw and re-render; returns (and stores) the time taken in ms."""
        start = time.perf_counter()
        if not getattr(self, "_built", False):
            self._build()
            self._built = True
        html = self._frame()
        self.image.value = self.png()
        self.metrics.value = html
        self.last_update_ms = (time.perf_counter() - start) * 1e3
        return self.last_update_ms

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)


def metrics_table(rows: list[tuple[str, ...]], header: tuple[str, ...]) -> str:
    """A small HTML table for an explorer's metrics panel."""
    head = "".join(f"<th style='padding:2px 10px;text-align:left'>{h}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td style='padding:2px 10px'>{c}</td>" for c in row) + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


# --- pipe02: fill-drain (GPipe) and 1F1B schedules, closed form vs simulator -----------------


def _fmt_ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


def _fmt_pct(fraction: float) -> str:
    return f"{fraction:.1%}"


class FillDrainExplorer(Explorer):
    """Schedule grid, stage-0 stash and closed form vs simulator for GPipe/1F1B (pipe02).

    Built for speed (< 100 ms per change up to p = 16, m = 64): a fixed layout (no layout engine)
    whose artists persist between updates. The grid is a raster — one image column per screen
    pixel, coloured by what each rank runs at that time (the simplified form of
    ``course_lib.viz.schedule_grid``); microbatch labels appear only where every box has room.
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

        from course_lib.viz import IDLE_COLOUR, SCHEDULE_COLOURS

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
        from course_lib.pipeline import (
            fill_drain_makespan,
            peak_in_flight_gpipe,
            peak_in_flight_one_f_one_b,
            simulate,
        )
        from course_lib.viz import _time_unit

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
        self._time_scale, unit = _time_unit(span)
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
            ("makespan", makespan, run.makespan, "(m+p−1)(t_f+t_b) + 2(p−1)δ", _fmt_ms),
            (
                "elapsed idle fraction",
                1 - ideal / makespan,
                run.idle_fraction,
                "(p−1)/(m+p−1)" if zero else "1 − m(t_f+t_b) / makespan",
                _fmt_pct,
            ),
            (
                "overhead vs ideal compute",
                makespan / ideal - 1,
                run.overhead,
                "(p−1)/m" if zero else "makespan / (m(t_f+t_b)) − 1",
                _fmt_pct,
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


# --- cost01: critical path explorer ---------------------------------------------------------

SELECTED_COLOUR = "#0072B2"
"""Okabe-Ito blue: outline of the op being changed, and the current point on the T(d) curve."""
MAX_EXPLORER_OPS = 200
"""Largest step graph the critical path explorer accepts (every op is a bar with a name)."""


class CriticalPathExplorer(Explorer):
    """Pick an op, drag its duration: the Gantt chart with the critical path, and T(d) with its kink (cost01).

    Built for speed (< 100 ms per slider move): a fixed layout without a layout engine, and
    blitting: the Gantt axes (one time axis for every op and duration the slider allows) are
    rendered once, the T(d) panel once per op; a slider move redraws only the bars, the op names,
    the step-time line and the current point. The Gantt chart is the simplified form of
    ``course_lib.viz.gantt``: no path arrows, an op's name inside its bar or beside it where free.
    Changing the op resets the slider to that op's measured duration, on a range of 0 to 3x it.
    """

    FIGSIZE = (12.0, 4.3)
    DPI = 80
    GANTT_RECT = (0.125, 0.13, 0.53, 0.68)
    CURVE_RECT = (0.725, 0.13, 0.255, 0.68)
    BAR_HEIGHT = 0.6

    def __init__(self, graph: Any, op: str) -> None:
        from course_lib import graph as G

        self.graph = graph
        self.base_step_time = G.step_time(graph)
        sched = G.schedule(graph)
        # Lanes top to bottom in order of first appearance in a topological order, as viz.gantt.
        self.lanes = list(dict.fromkeys(sched["lane"].astype(str)))
        self._row = {
            op_: self.lanes.index(str(lane))
            for op_, lane in zip(sched["op"], sched["lane"], strict=True)
        }
        self._canvas: Any = None
        self._static_op: str | None = None
        self._resetting = False
        self._text_width: dict[tuple[str, float, bool], float] = {}
        dropdown = widgets.Dropdown(options=list(graph.nodes), value=op, description="op")
        slider = widgets.FloatSlider(
            description="duration (ms)",
            style={"description_width": "initial"},
            layout=widgets.Layout(width="460px"),
            readout_format=".2f",
        )
        self._reset_slider(slider, op)
        super().__init__(
            {"op": dropdown, "duration_ms": slider},
            self._draw_frame,
            figsize=self.FIGSIZE,
            dpi=self.DPI,
        )

    # -- controls ------------------------------------------------------------------------------

    def slider_range(self, op: str) -> tuple[float, float, float]:
        """(value, max, step) of the duration slider for op, in ms: measured, 3x measured, ~1/300 of the range."""
        d_ms = 1e3 * float(self.graph.nodes[op]["duration"])
        top = 3.0 * d_ms if d_ms > 0 else 1.0
        return d_ms, top, float(f"{top / 300:.1g}")

    def _reset_slider(self, slider: widgets.FloatSlider, op: str) -> None:
        value, top, step = self.slider_range(op)
        self._resetting = True
        try:
            slider.max = max(top, slider.max)  # never clamp the new value against the old range
            slider.min = 0.0
            slider.step = step
            slider.value = value
            slider.max = top
        finally:
            self._resetting = False

    def _on_change(self, change: Mapping[str, Any]) -> None:
        if self._resetting:
            return
        if change.get("owner") is self.controls["op"]:
            self._reset_slider(self.controls["duration_ms"], change["new"])
        self.update()

    # -- drawing -------------------------------------------------------------------------------

    def _build(self) -> None:
        """Figure without a layout engine on an Agg canvas; the static Gantt axes and key, rendered once."""
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.collections import PolyCollection
        from matplotlib.lines import Line2D
        from matplotlib.patches import Rectangle
        from matplotlib.ticker import FuncFormatter, MaxNLocator

        from course_lib import graph as G
        from course_lib.viz import (
            GANTT_CRITICAL_COLOUR,
            GANTT_CRITICAL_EDGE,
            GANTT_OTHER_COLOUR,
            GANTT_OTHER_EDGE,
            _text_px,
            _time_unit,
        )

        fig = self.figure = Figure(figsize=self.FIGSIZE, dpi=self.DPI)
        self._canvas = FigureCanvasAgg(fig)
        gantt_ax, curve_ax = fig.add_axes(self.GANTT_RECT), fig.add_axes(self.CURVE_RECT)
        self.axes = np.array([gantt_ax, curve_ax], dtype=object)

        # One time axis for every op and duration the sliders allow: max over ops of T(3 d0).
        t_max = self.base_step_time
        for name in self.graph.nodes:
            a, b = G.path_bounds(self.graph, name)
            t_max = max(t_max, a, b + 1e-3 * self.slider_range(name)[1])
        scale, unit = _time_unit(t_max)
        self._time_scale, self._time_unit = scale, unit
        gantt_ax.set_xlim(0.0, 1.03 * t_max)
        self._px_per_s = self.GANTT_RECT[2] * self.FIGSIZE[0] * self.DPI / (1.03 * t_max)
        gantt_ax.set_ylim(len(self.lanes) - 0.5, -0.5)
        gantt_ax.set_yticks(range(len(self.lanes)), self.lanes)
        gantt_ax.tick_params(axis="y", length=0)
        gantt_ax.xaxis.set_major_locator(MaxNLocator(nbins=8))
        gantt_ax.xaxis.set_major_formatter(FuncFormatter(lambda t, _pos: f"{t * scale:g}"))
        gantt_ax.set_xlabel(f"time ({unit})")
        gantt_ax.grid(axis="x", color="#E6E6E6", lw=0.8)
        gantt_ax.set_axisbelow(True)
        for side in ("top", "right", "left"):
            gantt_ax.spines[side].set_visible(False)
        gantt_ax.axvline(self.base_step_time, color="#777777", ls=":", lw=1.3, zorder=1)

        # The key: plain patches and texts in figure coordinates (a Legend costs far more to draw),
        # each item as wide as its text measures.
        width = self.FIGSIZE[0] * self.DPI

        def advance(x: float, text: str) -> float:
            return x + (_text_px(text, 9, False, self.DPI) + 22) / width

        x, y = self.GANTT_RECT[0], self.GANTT_RECT[1] + self.GANTT_RECT[3] + 0.11
        for face, edge, text in (
            (GANTT_CRITICAL_COLOUR, GANTT_CRITICAL_EDGE, "critical path"),
            (GANTT_OTHER_COLOUR, GANTT_OTHER_EDGE, "off the critical path"),
            ("white", SELECTED_COLOUR, "op you change"),
        ):
            lw = 2.0 if edge == SELECTED_COLOUR else 1.0
            fig.patches.append(
                Rectangle((x, y), 0.015, 0.04, transform=fig.transFigure, fc=face, ec=edge, lw=lw)
            )
            fig.text(x + 0.019, y + 0.02, text, va="center", fontsize=9)
            x = advance(x + 0.019, text)
        for style, colour, text in (
            ("--", "#222222", "step time now"),
            (":", "#777777", "measured"),
        ):
            fig.lines.append(
                Line2D(
                    [x + 0.005] * 2,
                    [y, y + 0.04],
                    transform=fig.transFigure,
                    ls=style,
                    color=colour,
                    lw=1.3,
                )
            )
            fig.text(x + 0.011, y + 0.02, text, va="center", fontsize=9)
            x = advance(x + 0.011, text)
        # The T(d) panel: its markers and line colours.
        x = self.CURVE_RECT[0] - 0.03
        for kind, colour, text in (
            ("dot", "white", "measured"),
            ("dot", SELECTED_COLOUR, "now"),
            ("line", GANTT_CRITICAL_COLOUR, "critical"),
            ("line", GANTT_OTHER_EDGE, "has slack"),
        ):
            dot = kind == "dot"
            fig.lines.append(
                Line2D(
                    [x + 0.007] if dot else [x, x + 0.014],
                    [y + 0.02] if dot else [y + 0.02] * 2,
                    transform=fig.transFigure,
                    marker="o" if dot else None,
                    ls="" if dot else "-",
                    lw=2.6,
                    color=colour,
                    mec="#222222" if colour == "white" else colour,
                    ms=7,
                )
            )
            fig.text(x + 0.018, y + 0.02, text, va="center", fontsize=9)
            x = advance(x + 0.018, text)

        # Dynamic Gantt artists: animated, so background renders leave them out.
        self._bars = PolyCollection([], animated=True, zorder=2)
        gantt_ax.add_collection(self._bars)
        self._labels = {
            name: gantt_ax.text(0.0, 0.0, name, animated=True, clip_on=True, zorder=4)
            for name in self.graph.nodes
        }
        self._selected = Rectangle(
            (0.0, 0.0), 0.0, 0.0, fill=False, ec=SELECTED_COLOUR, lw=2.4, zorder=6, animated=True
        )
        gantt_ax.add_patch(self._selected)
        self._step_line = gantt_ax.axvline(0.0, color="#222222", ls="--", lw=1.3, animated=True)
        self._step_text = gantt_ax.annotate(
            "",
            xy=(0.0, 1.0),
            xycoords=("data", "axes fraction"),
            xytext=(0, 3),
            textcoords="offset points",
            ha="center",
            va="bottom",
            fontsize=9,
            animated=True,
        )
        # Render everything but the curve panel once: each op's background starts from this.
        curve_ax.set_visible(False)
        self._canvas.draw()
        self._gantt_background = self._canvas.copy_from_bbox(fig.bbox)
        curve_ax.set_visible(True)

    def _draw_static(self, op: str) -> None:
        """The T(d) panel of op drawn over the Gantt background; the result is the op's background."""
        from matplotlib.ticker import MaxNLocator

        from course_lib import viz

        curve_ax = self.axes[1]
        curve_ax.clear()
        viz.what_if_curve(self.graph, op, ax=curve_ax, max_duration=1e-3 * self.slider_range(op)[1])
        curve_ax.xaxis.set_major_locator(MaxNLocator(nbins=5))
        curve_ax.yaxis.set_major_locator(MaxNLocator(nbins=5))
        # Cheaper to draw: no legend (the key above explains the colours) and a fixed title
        # position (automatic placement measures the tick labels on every draw).
        curve_ax.get_legend().remove()
        curve_ax.set_title(curve_ax.get_title(loc="left"), loc="left", y=1.01)
        (self._now,) = curve_ax.plot(
            [], [], "o", color=SELECTED_COLOUR, ms=8, zorder=6, animated=True, gid="what_if:current"
        )
        self._canvas.restore_region(self._gantt_background)
        curve_ax.draw(self._canvas.get_renderer())
        self._background = self._canvas.copy_from_bbox(self.figure.bbox)
        self._static_op = op

    def _name_px(self, name: str, size: float, bold: bool) -> float:
        from course_lib.viz import _text_px

        key = (name, size, bold)
        if key not in self._text_width:
            self._text_width[key] = _text_px(name, size, bold, self.DPI)
        return self._text_width[key]

    def _draw_gantt(self, sched: Any, path_ops: tuple[str, ...], op: str, t: float) -> None:
        """Bars, names, the selected op's outline and the step-time line, drawn over the background."""
        from course_lib.viz import (
            GANTT_CRITICAL_COLOUR,
            GANTT_CRITICAL_EDGE,
            GANTT_OTHER_COLOUR,
            GANTT_OTHER_EDGE,
        )

        ax = self.axes[0]
        h = self.BAR_HEIGHT / 2
        names = sched["op"].tolist()
        starts = sched["start"].to_numpy(dtype=float)
        ends = sched["end"].to_numpy(dtype=float)
        rows = np.array([self._row[n] for n in names])
        crit = np.isin(names, path_ops)
        self._bars.set_verts(
            [
                [(s, r - h), (e, r - h), (e, r + h), (s, r + h)]
                for s, e, r in zip(starts, ends, rows, strict=True)
            ]
        )
        self._bars.set_facecolors(np.where(crit, GANTT_CRITICAL_COLOUR, GANTT_OTHER_COLOUR))
        self._bars.set_edgecolors(np.where(crit, GANTT_CRITICAL_EDGE, GANTT_OTHER_EDGE))
        self._bars.set_linewidths(np.where(crit, 1.4, 0.8))
        ax.draw_artist(self._bars)

        k = names.index(op)
        self._selected.set_bounds(starts[k], rows[k] - h - 0.08, ends[k] - starts[k], 2 * h + 0.16)
        ax.draw_artist(self._selected)

        # Names inside the bar where they fit, else beside its top (or bottom) edge if free.
        px = self._px_per_s
        taken: dict[int, float] = {}  # gap between rows (row r's top edge = gap r) -> right end, px
        for i in np.lexsort((ends, starts)):
            name, label = names[i], self._labels[names[i]]
            width = (ends[i] - starts[i]) * px
            bold = bool(crit[i])
            for size in (8.5, 7.0):
                if self._name_px(name, size, bold) + 6 <= width:
                    label.set(
                        x=(starts[i] + ends[i]) / 2,
                        y=rows[i],
                        ha="center",
                        va="center",
                        fontsize=size,
                        color="white" if bold else "#1F2A36",
                        fontweight="bold" if bold else "normal",
                        visible=True,
                    )
                    break
            else:
                left = starts[i] * px + 2
                label.set_visible(False)
                for gap, y, va in (
                    (rows[i], rows[i] - h - 0.02, "bottom"),
                    (rows[i] + 1, rows[i] + h + 0.02, "top"),
                ):
                    if left < taken.get(gap, -np.inf) + 4:
                        continue
                    label.set(
                        x=starts[i] + 2 / px,
                        y=y,
                        ha="left",
                        va=va,
                        fontsize=7.0,
                        color="#1F2A36",
                        fontweight="normal",
                        visible=True,
                    )
                    taken[gap] = left + self._name_px(name, 7.0, False)
                    break
            if label.get_visible():
                ax.draw_artist(label)

        self._step_line.set_xdata([t, t])
        ax.draw_artist(self._step_line)
        self._step_text.xy = (t, 1.0)
        self._step_text.set_text(f"step time {t * self._time_scale:.4g} {self._time_unit}")
        ax.draw_artist(self._step_text)

    def _draw_frame(self, axes: Any, op: str, duration_ms: float) -> str:
        """Model + drawing for one control state; returns the metrics panel's HTML."""
        from course_lib import graph as G

        del axes  # the figure is this explorer's own (see _build)
        d0 = float(self.graph.nodes[op]["duration"])
        # The slider holds ms; at the measured value use the measured duration exactly.
        d = (
            d0
            if abs(duration_ms - 1e3 * d0) <= 1e-9 * max(1.0, duration_ms)
            else 1e-3 * duration_ms
        )
        d = max(d, 0.0)
        g = G.with_durations(self.graph, {op: d})
        sched = G.schedule(g)
        path = G.critical_path(g)
        t = path.length
        a, b = G.path_bounds(self.graph, op)  # A and B do not depend on op's own duration
        if op != self._static_op:
            self._draw_static(op)
        self._canvas.restore_region(self._background)
        self._draw_gantt(sched, path.ops, op, t)
        self._now.set_data([d], [t])
        self.axes[1].draw_artist(self._now)

        ms = 1e3
        slack = float(sched.loc[sched["op"] == op, "slack"].iloc[0])
        useful = G.useful_reduction(g, op)
        if slack > 0:
            status = f"no — it can grow by {slack * ms:.3g} ms before the step gets longer"
        elif useful == 0.0 and d > 0:
            status = "yes, but tied with another path: cutting it alone saves nothing"
        else:
            status = f"yes — each ms cut saves a ms, for the next {useful * ms:.3g} ms"
        delta = t - self.base_step_time
        sign = "+" if delta >= 0 else "−"
        kink = a - b
        rows = [
            (
                "step time",
                f"<b>{t * ms:.4g} ms</b> ({sign}{abs(delta) * ms:.3g} ms vs measured "
                f"{self.base_step_time * ms:.4g} ms)",
            ),
            (f"{op} on the critical path?", status),
            (f"slack of {op}", f"{slack * ms:.3g} ms"),
            (f"useful reduction of {op} from here", f"{useful * ms:.3g} ms"),
            (
                "kink d* = A − B",
                f"{kink * ms:.3g} ms (A = {a * ms:.4g} ms, B = {b * ms:.4g} ms)"
                if kink > 0
                else f"none: {op} is critical at any duration (B = {b * ms:.4g} ms ≥ A)",
            ),
        ]
        return metrics_table(rows, ("", ""))

    def _frame(self) -> str:
        return self._draw_frame(self.axes, **self.values)


def critical_path_explorer(
    durations: Mapping[str, float],
    deps: Iterable[tuple[str, str]],
    lanes: Mapping[str, str] | None = None,
    op: str | None = None,
) -> CriticalPathExplorer:
    """Explorer of one op's duration in a step graph: Gantt + critical path, and T(d) = max(A, B + d) (cost01).

    ``op`` defaults to the longest op on the critical path.
    """
    from course_lib import graph as G

    graph = G.step_graph(durations, deps, lanes)
    if graph.number_of_nodes() > MAX_EXPLORER_OPS:
        raise ValueError(
            f"the explorer draws every op as a bar: give it at most {MAX_EXPLORER_OPS} ops, "
            f"got {graph.number_of_nodes()}"
        )
    if op is None:
        op = max(G.critical_path(graph).ops, key=lambda o: graph.nodes[o]["duration"])
    elif op not in graph:
        raise ValueError(f"unknown op {op!r}; the step graph has ops {list(graph.nodes)}")
    return CriticalPathExplorer(graph, op)


# --- cost02: clock alignment from message causality ------------------------------------------

BOUND_COLOURS: dict[str, str] = {
    "lower": "#0072B2",  # A -> B messages: θ > S_A − R_B
    "upper": "#E69F00",  # B -> A messages: θ < R_A − S_B
    "certain": "#009E73",
    "impossible": "#D55E00",
    "undetermined": "#9A9A9A",
}
"""Okabe-Ito colours of cost02's explorer: the two kinds of bound and the three ordering verdicts."""


class ClockAlignmentExplorer(Explorer):
    """Messages between two clocks -> offset bounds, the constant-offset interval, a drift fit, and ordering verdicts (cost02).

    Clock B is the reference; clock A reads t_A = θ0 + (1 + ρ·1e-6)·t_B (θ0 = ``offset``). Each
    change simulates ``num_messages`` messages each way over ``span`` seconds
    (:func:`course_lib.clocks.simulate_messages`, fixed seed) with one-way delays min_delay +
    Exp(jitter). Left: every message's bound on θ (▲ lower from A -> B, ▼ upper from B -> A),
    the true θ(t), the constant-offset interval max(S_A − R_B) < θ < min(R_A − S_B) (dPRO's
    causality constraint), per-window intervals and the drift line fitted through their
    midpoints. Right: seven pairs of events (a on A, b on B) near the end of the span, each with
    the true elapsed time t(a) − t(b) it could have given the constant-offset interval, coloured by
    the verdict of "a happened before b"; a verdict the truth contradicts is marked wrong.

    Built for speed (< 100 ms per change): a fixed layout on an Agg canvas and blitting. The axes,
    ticks and key are rendered once per vertical zoom level (a few fixed levels, chosen from the
    delay sliders); a change redraws only the data artists over that cached background.
    """

    FIGSIZE = (11.0, 4.2)
    DPI = 80
    BOUNDS_RECT = (0.075, 0.13, 0.5, 0.72)
    VERDICT_RECT = (0.715, 0.13, 0.185, 0.72)
    NUM_WINDOWS = 5
    EVENT_TIME_FRACTION = 0.9
    GAPS_US = (-40.0, -20.0, -8.0, -2.0, 5.0, 15.0, 30.0)
    VERDICT_XLIM_US = 60.0
    ZOOM_LEVELS_US = (30.0, 60.0, 120.0, 250.0, 500.0, 1000.0)
    DRIFT_ROOM_US = 50.0

    def __init__(
        self,
        controls: Mapping[str, widgets.ValueWidget],
        *,
        offset: float,
        span: float,
        seed: int,
    ) -> None:
        self.offset = offset
        self.span = span
        self.seed = seed
        self.last_metrics: dict[str, Any] = {}
        self._canvas: Any = None
        self._backgrounds: dict[float, Any] = {}
        super().__init__(controls, self._draw_frame, figsize=self.FIGSIZE, dpi=self.DPI)

    # -- layout --------------------------------------------------------------------------------

    def _build(self) -> None:
        """Figure without a layout engine on an Agg canvas; static decorations and animated data artists."""
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.collections import LineCollection, PolyCollection
        from matplotlib.lines import Line2D
        from matplotlib.patches import Rectangle
        from matplotlib.ticker import MaxNLocator
        from matplotlib.transforms import blended_transform_factory

        fig = self.figure = Figure(figsize=self.FIGSIZE, dpi=self.DPI)
        self._canvas = FigureCanvasAgg(fig)
        ax, vax = fig.add_axes(self.BOUNDS_RECT), fig.add_axes(self.VERDICT_RECT)
        self.axes = np.array([ax, vax], dtype=object)
        c = BOUND_COLOURS
        anim = {"animated": True}

        ax.set_xlim(0.0, self.span)
        ax.set_xlabel("time on the reference clock B (s)")
        ax.set_ylabel("offset θ = t_A − t_B (µs)")
        ax.yaxis.set_major_locator(MaxNLocator(nbins=6))
        ax.grid(color="#EBEBEB", lw=0.8)
        ax.set_axisbelow(True)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        ax.axvline(self.EVENT_TIME_FRACTION * self.span, color="#555555", ls=":", lw=1.0)
        self._band = PolyCollection([], facecolors="#BFBFBF", edgecolors="none", alpha=0.6, **anim)
        ax.add_collection(self._band)
        (self._lower,) = ax.plot([], [], "^", ms=4.5, color=c["lower"], alpha=0.8, mew=0, **anim)
        (self._upper,) = ax.plot([], [], "v", ms=4.5, color=c["upper"], alpha=0.8, mew=0, **anim)
        (self._true,) = ax.plot([], [], "--", color="#222222", lw=1.4, **anim)
        self._windows = LineCollection([], colors=c["certain"], linewidths=3.0, **anim)
        ax.add_collection(self._windows)
        (self._fit,) = ax.plot([], [], "-", color=c["certain"], lw=1.6, **anim)
        self._empty_text = ax.text(
            0.5,
            0.97,
            "one offset for all is EMPTY: max(S_A − R_B) > min(R_A − S_B): the clocks drift",
            transform=ax.transAxes,
            ha="center",
            va="top",
            fontsize=9.5,
            color=c["impossible"],
            bbox={"fc": "white", "ec": "none", "alpha": 0.85},
            **anim,
        )
        self._title = fig.text(
            self.BOUNDS_RECT[0], 0.955, "", ha="left", va="center", fontsize=11, **anim
        )

        # The key, as plain artists in figure coordinates (a Legend costs far more to draw).
        x, y = self.BOUNDS_RECT[0], 0.9
        keys = [
            ("marker", "^", c["lower"], "A→B: θ > S_A − R_B"),
            ("marker", "v", c["upper"], "B→A: θ < R_A − S_B"),
            ("line", "--", "#222222", "true θ(t)"),
            ("patch", None, "#BFBFBF", "one offset for all"),
            ("line", "-", c["certain"], "windows + drift fit"),
        ]
        for kind, style, colour, text in keys:
            if kind == "marker":
                artist = Line2D(
                    [x + 0.008], [y], marker=style, color=colour, ms=6, mew=0, ls="none"
                )
            elif kind == "line":
                artist = Line2D([x, x + 0.018], [y, y], ls=style, color=colour, lw=1.6)
            else:
                artist = Rectangle((x, y - 0.018), 0.018, 0.036, fc=colour, ec="none", alpha=0.7)
            artist.set_transform(fig.transFigure)
            (fig.patches if kind == "patch" else fig.lines).append(artist)
            fig.text(x + 0.024, y, text, va="center", fontsize=8.5)
            x += 0.04 + 0.0058 * len(text)

        n = len(self.GAPS_US)
        lim = self.VERDICT_XLIM_US
        vax.set_xlim(-lim, lim)
        vax.set_ylim(n - 0.5, -0.5)
        vax.set_yticks(range(n), [f"{g:+g} µs" for g in self.GAPS_US], fontsize=9)
        vax.set_ylabel("true t(a) − t(b)")
        vax.set_xlabel("allowed t(a) − t(b) (µs) · | truth")
        vax.axvline(0.0, color="#222222", lw=1.0)
        vax.grid(axis="x", color="#EBEBEB", lw=0.8)
        vax.set_axisbelow(True)
        for side in ("top", "right"):
            vax.spines[side].set_visible(False)
        fig.text(
            self.VERDICT_RECT[0] - 0.07,
            0.955,
            f"a before b? (a on A, b on B, t = {self.EVENT_TIME_FRACTION * self.span:g} s)",
            ha="left",
            va="center",
            fontsize=10.5,
        )
        self._bars = PolyCollection([], edgecolors="none", **anim)
        vax.add_collection(self._bars)
        (self._truth,) = vax.plot([], [], "|", color="#222222", ms=13, mew=2.0, **anim)
        side = blended_transform_factory(vax.transAxes, vax.transData)
        self._verdict_texts = [
            vax.text(
                1.03,
                k,
                "",
                transform=side,
                va="center",
                ha="left",
                fontsize=9,
                clip_on=False,
                **anim,
            )
            for k in range(n)
        ]
        self._verdict_note = vax.text(
            0.5,
            0.5,
            "no single offset fits\nthe messages: no verdicts",
            transform=vax.transAxes,
            ha="center",
            va="center",
            fontsize=9.5,
            color=c["impossible"],
            bbox={"fc": "white", "ec": "none", "alpha": 0.85},
            **anim,
        )

    def zoom_level(self, min_delay_us: float, jitter_us: float) -> float:
        """Half-height (µs) of the bounds panel beyond the drift room: the smallest level that shows most bounds."""
        need = 2.0 * min_delay_us + 2.5 * jitter_us + 8.0
        return next((z for z in self.ZOOM_LEVELS_US if z >= need), self.ZOOM_LEVELS_US[-1])

    def _background(self, level: float) -> Any:
        """The static figure (axes, ticks, key) at a zoom level, rendered once and cached."""
        theta0 = self.offset * 1e6
        # Also on a cached level: the data artists are drawn with the axes' current limits.
        self.axes[0].set_ylim(theta0 - level, theta0 + self.DRIFT_ROOM_US + level)
        if level not in self._backgrounds:
            self._canvas.draw()  # animated artists are left out
            self._backgrounds[level] = self._canvas.copy_from_bbox(self.figure.bbox)
        return self._backgrounds[level]

    # -- model ---------------------------------------------------------------------------------

    def model(
        self, num_messages: int, min_delay_us: float, jitter_us: float, drift_ppm: float
    ) -> dict[str, Any]:
        """Messages, the constant-offset interval (None if empty), window intervals, drift fit, verdicts."""
        from course_lib.clocks import (
            OffsetInterval,
            fit_drift,
            interval_difference,
            offset_bounds,
            order_certainty,
            simulate_messages,
        )

        a_to_b, b_to_a = simulate_messages(
            int(num_messages),
            offset=self.offset,
            drift_ppm=drift_ppm,
            min_delay=min_delay_us * 1e-6,
            mean_extra_delay=jitter_us * 1e-6,
            span=self.span,
            seed=self.seed,
        )
        lows = a_to_b[:, 0] - a_to_b[:, 1]  # S_A − R_B, plotted at R_B
        highs = b_to_a[:, 1] - b_to_a[:, 0]  # R_A − S_B, plotted at S_B
        lower, upper = float(lows.max()), float(highs.min())
        interval = OffsetInterval(lower, upper) if lower <= upper else None

        edges = np.linspace(0.0, self.span, self.NUM_WINDOWS + 1)
        windows = []
        for w0, w1 in zip(edges[:-1], edges[1:], strict=True):
            ab = a_to_b[(a_to_b[:, 1] >= w0) & (a_to_b[:, 1] < w1)]
            ba = b_to_a[(b_to_a[:, 0] >= w0) & (b_to_a[:, 0] < w1)]
            if len(ab) and len(ba):
                try:
                    iv = offset_bounds(ab, ba)
                except ValueError:  # drift within the window exceeds its round trip
                    continue
                windows.append((0.5 * (w0 + w1), iv))
        fit = None
        if len(windows) >= 2:
            t_ref = np.array([t for t, _ in windows])
            fit = fit_drift(t_ref + np.array([iv.midpoint for _, iv in windows]), t_ref)

        t_b = self.EVENT_TIME_FRACTION * self.span
        gaps = np.array(self.GAPS_US) * 1e-6
        rate = 1.0 + drift_ppm * 1e-6
        t_a = self.offset + rate * (t_b + gaps)  # event a at true time t_b + gap, on A's clock
        verdicts = possible = None
        if interval is not None:
            verdicts = np.asarray(order_certainty(t_a, t_b, interval))
            possible = interval_difference(t_a, t_b, interval)
        truth = np.where(gaps < 0, "certain", "impossible")
        wrong = np.zeros(len(gaps), dtype=bool)
        if verdicts is not None:
            wrong = (verdicts != "undetermined") & (verdicts != truth)
        return {
            "a_to_b": a_to_b,
            "b_to_a": b_to_a,
            "lows": lows,
            "highs": highs,
            "interval": interval,
            "windows": windows,
            "fit": fit,
            "theta_event": self.offset + drift_ppm * 1e-6 * t_b,
            "verdicts": verdicts,
            "possible": possible,
            "gaps": gaps,
            "wrong": wrong,
        }

    # -- drawing -------------------------------------------------------------------------------

    def _draw_frame(
        self,
        axes: Any,
        num_messages: int,
        min_delay_us: float,
        jitter_us: float,
        drift_ppm: float,
    ) -> str:
        """Model + blitted drawing for one control state; returns the metrics panel's HTML."""
        del axes  # the figure is this explorer's own (see _build)
        m = self.model(num_messages, min_delay_us, jitter_us, drift_ppm)
        ax, vax = self.axes
        us = 1e6
        c = BOUND_COLOURS
        level = self.zoom_level(min_delay_us, jitter_us)
        self._canvas.restore_region(self._background(level))
        y0, y1 = ax.get_ylim()

        self._lower.set_data(m["a_to_b"][:, 1], m["lows"] * us)
        self._upper.set_data(m["b_to_a"][:, 0], m["highs"] * us)
        t = np.array([0.0, self.span])
        self._true.set_data(t, (self.offset + drift_ppm * 1e-6 * t) * us)
        iv = m["interval"]
        if iv is not None:
            a, b = iv.lower * us, iv.upper * us
            thin = 0.004 * (y1 - y0)
            if b - a < thin:  # keep a very thin band visible
                a, b = 0.5 * (a + b) - thin / 2, 0.5 * (a + b) + thin / 2
            self._band.set_verts([[(0, a), (self.span, a), (self.span, b), (0, b)]])
            ax.draw_artist(self._band)
        self._windows.set_segments(
            [[(tw, w.lower * us), (tw, w.upper * us)] for tw, w in m["windows"]]
        )
        fit = m["fit"]
        self._fit.set_data(t, (fit.to_local(t) - t) * us if fit is not None else [np.nan] * 2)
        for artist in (self._lower, self._upper, self._windows, self._fit, self._true):
            ax.draw_artist(artist)
        if iv is None:
            ax.draw_artist(self._empty_text)
        self._title.set_text(
            f"{num_messages} message{'s' * (num_messages != 1)} each way in {self.span:g} s · "
            f"delay {min_delay_us:g} + Exp({jitter_us:g}) µs · drift {drift_ppm:g} ppm"
        )
        self.figure.draw_artist(self._title)

        gaps_us = m["gaps"] * us
        self._truth.set_data(gaps_us, np.arange(len(gaps_us)))
        if iv is None:
            vax.draw_artist(self._verdict_note)
        else:
            lo = np.asarray(m["possible"].lower) * us
            hi = np.asarray(m["possible"].upper) * us
            h = 0.32
            self._bars.set_verts(
                [
                    [(a, k - h), (b, k - h), (b, k + h), (a, k + h)]
                    for k, (a, b) in enumerate(zip(lo, hi, strict=True))
                ]
            )
            self._bars.set_facecolors([c[v] for v in m["verdicts"]])
            vax.draw_artist(self._bars)
            names = {"certain": "before", "impossible": "after", "undetermined": "?"}
            for k, text in enumerate(self._verdict_texts):
                wrong = bool(m["wrong"][k])
                label = names[str(m["verdicts"][k])] + ("  ✗ wrong" if wrong else "")
                text.set_text(label)
                text.set_color(c["impossible"] if wrong else "#333333")
                text.set_fontweight("bold" if wrong else "normal")
                vax.draw_artist(text)
        vax.draw_artist(self._truth)
        return self._metrics_html(m, num_messages, drift_ppm)

    def _metrics_html(self, m: Mapping[str, Any], num_messages: int, drift_ppm: float) -> str:
        us = 1e6
        iv, fit = m["interval"], m["fit"]
        t_event = self.EVENT_TIME_FRACTION * self.span
        counts = {
            k: 0 if m["verdicts"] is None else int(np.sum(m["verdicts"] == k))
            for k in ("certain", "impossible", "undetermined")
        }
        contains = None if iv is None else bool(iv.contains(m["theta_event"]))
        self.last_metrics = {
            "interval": None if iv is None else (iv.lower, iv.upper),
            "width": None if iv is None else iv.width,
            "contains_true_offset_at_event": contains,
            "fitted_drift_ppm": None if fit is None else fit.drift_ppm,
            "verdict_counts": counts,
            "wrong_verdicts": int(m["wrong"].sum()),
        }
        if iv is None:
            rows = [
                ("one offset for all", "<b>empty</b>: no constant θ satisfies every message"),
                ("width", "—"),
            ]
        else:
            ok = "yes" if contains else "<b>no</b>"
            rows = [
                (
                    "one offset for all",
                    f"{iv.lower * us:.2f} µs &lt; θ &lt; {iv.upper * us:.2f} µs "
                    f"(holds the true θ at t = {t_event:g} s: {ok})",
                ),
                ("width (the smallest round trip)", f"{iv.width * us:.2f} µs"),
            ]
        rows.append(
            (
                "drift fitted through window midpoints",
                "needs ≥ 2 windows with messages both ways"
                if fit is None
                else f"{fit.drift_ppm:.1f} ppm (true {drift_ppm:g} ppm)",
            )
        )
        wrong = self.last_metrics["wrong_verdicts"]
        rows.append(
            (
                "verdicts",
                f"{counts['certain']} before · {counts['impossible']} after · "
                f"{counts['undetermined']} undetermined"
                + (
                    f" · <b style='color:{BOUND_COLOURS['impossible']}'>{wrong} wrong</b>"
                    if wrong
                    else ""
                ),
            )
        )
        return metrics_table(rows, ("", ""))

    def _frame(self) -> str:
        return self._draw_frame(self.axes, **self.values)


def clock_alignment_explorer(
    num_messages: int = 10,
    min_delay: float = 5e-6,
    jitter: float = 20e-6,
    drift_ppm: float = 0.0,
    *,
    offset: float = 1.44e-3,
    span: float = 1.0,
    seed: int = 0,
) -> ClockAlignmentExplorer:
    """Explorer: messages per direction, delay floor, delay jitter, drift -> offset interval and ordering verdicts (cost02).

    Sliders: num_messages each way (1-200), the one-way delay floor min_delay in µs (1-50), the
    mean extra delay (jitter) in µs (0-200), the drift of clock A in ppm (0-50). ``offset`` (s) is
    θ at t = 0, ``span`` (s) how long the messages are spread over, ``seed`` fixes the messages.
    """
    n = int(num_messages)
    if isinstance(num_messages, bool) or n != num_messages or not 1 <= n <= 200:
        raise ValueError(f"num_messages must be an integer in 1..200, got {num_messages!r}")
    checks = (
        ("min_delay", min_delay * 1e6, 1.0, 50.0, "µs"),
        ("jitter", jitter * 1e6, 0.0, 200.0, "µs"),
        ("drift_ppm", drift_ppm, 0.0, 50.0, "ppm"),
    )
    for name, value, lo, hi, unit in checks:
        if not (np.isfinite(value) and lo <= value <= hi):
            raise ValueError(f"{name} must be within {lo:g}..{hi:g} {unit}, got {value!r} {unit}")
    if not (np.isfinite(offset) and np.isfinite(span) and span > 0):
        raise ValueError(f"offset must be finite and span > 0 seconds, got {offset!r}, {span!r}")
    wide = {"description_width": "initial"}
    controls = {
        "num_messages": widgets.IntSlider(
            value=n, min=1, max=200, description="messages each way", style=wide
        ),
        "min_delay_us": widgets.FloatSlider(
            value=min_delay * 1e6,
            min=1.0,
            max=50.0,
            step=0.5,
            description="delay floor (µs)",
            style=wide,
            readout_format=".1f",
        ),
        "jitter_us": widgets.FloatSlider(
            value=jitter * 1e6,
            min=0.0,
            max=200.0,
            step=1.0,
            description="jitter (µs)",
            style=wide,
            readout_format=".0f",
        ),
        "drift_ppm": widgets.FloatSlider(
            value=drift_ppm,
            min=0.0,
            max=50.0,
            step=0.5,
            description="drift (ppm)",
            style=wide,
            readout_format=".1f",
        ),
    }
    return ClockAlignmentExplorer(controls, offset=float(offset), span=float(span), seed=seed)


# --- cost03: bucketed all-reduce overlap explorer --------------------------------------------

BUCKET_MIB_OPTIONS = (1, 2, 5, 10, 25, 50, 100, 200, 400, 800, 1600)
"""Bucket caps (MiB) the overlap explorer offers; PyTorch DDP's default bucket_cap_mb is 25."""
MIB = float(2**20)
"""Bytes per MiB (DDP's bucket_cap_mb is in MiB: 25 MiB = 25 · 2**20 bytes)."""
TIME_AXIS_LIMITS_MS = (50, 60, 80, 100, 125, 150, 200, 250, 300, 400, 500, 600, 800, 1000, 1500)
"""Right ends (ms) of the overlap explorer's time axis: the smallest one that fits is used, so
the axis (and its cached background) changes only when the step crosses one of them."""


class OverlapExplorer(Explorer):
    """Bucket cap, bandwidth and both contention factors -> timeline, step time, overlap (cost03).

    Built for speed (< 100 ms per change): a fixed layout without a layout engine, and blitting.
    Everything static — the key, the timeline's axes for each time-axis limit (one of
    :data:`TIME_AXIS_LIMITS_MS`), the sweep panel's frame and x axis — is rendered once and
    cached; a change redraws only the bars, the lines, three texts and the sweep's y axis. The
    model is :func:`course_lib.overlap.bucketed_allreduce_timeline`; the right panel sweeps every
    bucket cap of the slider (step time with overlap and without it, same buckets) at the
    current bandwidth and contention.
    """

    FIGSIZE = (12.0, 4.4)
    DPI = 80
    TIMELINE_RECT = (0.105, 0.15, 0.555, 0.66)
    SWEEP_RECT = (0.745, 0.15, 0.235, 0.66)
    BAR_HEIGHT = 0.6

    def __init__(
        self,
        controls: Mapping[str, widgets.ValueWidget],
        *,
        layer_backward_times: np.ndarray,
        layer_grad_bytes: np.ndarray,
        latency: float,
        optimizer_time: float,
    ) -> None:
        self.layer_backward_times = layer_backward_times
        self.layer_grad_bytes = layer_grad_bytes
        self.latency = latency
        self.optimizer_time = optimizer_time
        self._canvas: Any = None
        self._backgrounds: dict[float, Any] = {}
        self._sweeps: dict[tuple[float, float, float], list[Any]] = {}
        super().__init__(controls, self._draw_frame, figsize=self.FIGSIZE, dpi=self.DPI)

    # -- model -----------------------------------------------------------------------------------

    def model(
        self, bucket_mib: float, bandwidth_gbs: float, contention: float, comm_contention: float
    ) -> Any:
        """The BucketTimeline of one control state (bucket cap in MiB, bandwidth in GB/s)."""
        from course_lib.overlap import bucketed_allreduce_timeline

        return bucketed_allreduce_timeline(
            self.layer_backward_times,
            self.layer_grad_bytes,
            bucket_mib * MIB,
            bandwidth_gbs * 1e9,
            self.latency,
            contention,
            self.optimizer_time,
            comm_contention=comm_contention,
        )

    def sweep(self, bandwidth_gbs: float, contention: float, comm_contention: float) -> list[Any]:
        """The BucketTimeline of every bucket cap of the slider, cached (moving only the bucket
        slider recomputes nothing)."""
        key = (float(bandwidth_gbs), float(contention), float(comm_contention))
        if key not in self._sweeps:
            if len(self._sweeps) >= 256:
                self._sweeps.pop(next(iter(self._sweeps)))
            self._sweeps[key] = [self.model(cap, *key) for cap in BUCKET_MIB_OPTIONS]
        return self._sweeps[key]

    # -- drawing ---------------------------------------------------------------------------------

    def _build(self) -> None:
        """Figure without a layout engine on an Agg canvas; animated (blitted) dynamic artists."""
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.collections import PolyCollection
        from matplotlib.patches import Rectangle
        from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator

        from course_lib.viz import OVERLAP_COLOURS as C

        fig = self.figure = Figure(figsize=self.FIGSIZE, dpi=self.DPI)
        self._canvas = FigureCanvasAgg(fig)
        tl_ax, sw_ax = fig.add_axes(self.TIMELINE_RECT), fig.add_axes(self.SWEEP_RECT)
        self.axes = np.array([tl_ax, sw_ax], dtype=object)

        def poly(**kw: Any) -> PolyCollection:
            coll = PolyCollection([], animated=True, **kw)
            tl_ax.add_collection(coll)
            return coll

        self._shade = poly(facecolors=C["overlap"], alpha=0.18, lw=0, zorder=0)
        self._compute = poly(facecolors=C["compute"], edgecolors="white", zorder=2)
        self._comm = poly(facecolors=C["comm"], lw=0, zorder=2)
        self._exposed = poly(facecolors=C["exposed"], lw=0, zorder=3)
        self._comm_edges = poly(facecolors="none", edgecolors="white", lw=0.8, zorder=4)
        self._opt = poly(facecolors=C["optimizer"], lw=0, zorder=2)
        self._step_line = tl_ax.axvline(0.0, color="#222222", ls="--", lw=1.3, animated=True)
        self._serial_line = tl_ax.axvline(0.0, color="#777777", ls=":", lw=1.5, animated=True)
        self._step_text = tl_ax.text(
            0.0, -0.62, "", ha="right", va="bottom", fontsize=9, color="#222222", animated=True
        )
        self._serial_text = tl_ax.text(
            0.0,
            1.97,
            "",
            ha="left",
            va="bottom",
            fontsize=8.5,
            color="#555555",
            animated=True,
            bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.85},
        )
        tl_ax.set_ylim(2.0, -0.8)
        tl_ax.set_yticks([0, 1], ["computation", "communication"])
        tl_ax.tick_params(axis="y", length=0)
        tl_ax.xaxis.set_major_locator(MaxNLocator(nbins=8))
        tl_ax.xaxis.set_major_formatter(FuncFormatter(lambda t, _pos: f"{t * 1e3:g}"))
        tl_ax.set_xlabel("time (ms)")
        for side in ("top", "right", "left"):
            tl_ax.spines[side].set_visible(False)

        # Right panel: step time against bucket cap, one evenly spaced position per slider option.
        n = len(BUCKET_MIB_OPTIONS)
        pos = np.arange(n, dtype=float)
        (self._sweep_line,) = sw_ax.plot(
            pos, pos * 0, "-o", ms=3.5, color=C["comm"], lw=1.8, animated=True
        )
        (self._serial_sweep,) = sw_ax.plot(
            pos, pos * 0, ":", color="#777777", lw=1.5, animated=True
        )
        (self._now,) = sw_ax.plot(
            [], [], "o", ms=9, mfc="none", mec="#222222", mew=2.0, animated=True
        )
        shown = [i for i, cap in enumerate(BUCKET_MIB_OPTIONS) if cap in (1, 10, 100, 1600)]
        sw_ax.xaxis.set_major_locator(FixedLocator(shown))
        sw_ax.set_xticks(shown, [f"{BUCKET_MIB_OPTIONS[i]:g}" for i in shown])
        sw_ax.set_xlim(-0.4, n - 0.6)
        sw_ax.yaxis.set_major_locator(MaxNLocator(nbins=5))
        sw_ax.yaxis.set_major_formatter(FuncFormatter(lambda t, _pos: f"{t * 1e3:g}"))
        sw_ax.set_xlabel("bucket cap (MiB)")
        sw_ax.grid(alpha=0.3)
        sw_ax.yaxis.set_animated(True)  # its ticks follow the data: drawn on every change
        for side in ("top", "right"):
            sw_ax.spines[side].set_visible(False)
        sw_ax.set_title("step time (ms) vs bucket cap", loc="left", fontsize=10)

        # The key: plain patches and texts in figure coordinates (a Legend costs more to draw).
        x, y = self.TIMELINE_RECT[0], 0.9
        keys = [
            (C["compute"], 1.0, "computation"),
            (C["comm"], 1.0, "comm, overlapped"),
            (C["exposed"], 1.0, "comm, nothing else runs"),
            (C["overlap"], 0.18, "both run"),
            (C["optimizer"], 1.0, "optimizer"),
        ]
        for colour, alpha, text in keys:
            fig.patches.append(
                Rectangle(
                    (x, y), 0.016, 0.04, transform=fig.transFigure, facecolor=colour, alpha=alpha
                )
            )
            fig.text(x + 0.021, y + 0.02, text, va="center", fontsize=9)
            x += 0.035 + 0.0062 * len(text)
        fig.text(
            x + 0.005,
            y + 0.02,
            "- - step    ··· no overlap, same buckets",
            va="center",
            fontsize=9,
            color="#444444",
        )

    def _background(self, span: float) -> Any:
        """Cached render of everything static, for the smallest time-axis limit that fits span."""
        limits = np.array(TIME_AXIS_LIMITS_MS, dtype=float) * 1e-3
        fits = limits[limits >= span]
        limit = float(fits[0]) if len(fits) else float(np.ceil(span / 0.5) * 0.5)
        if limit not in self._backgrounds:
            self.axes[0].set_xlim(0.0, limit)
            self._canvas.draw()
            self._backgrounds[limit] = self._canvas.copy_from_bbox(self.figure.bbox)
        self.axes[0].set_xlim(0.0, limit)
        self._limit = limit
        return self._backgrounds[limit]

    @staticmethod
    def _boxes(iv: Any, row: float, half: float) -> np.ndarray:
        """(N, 4, 2) rectangle vertices of [start, end) intervals on one row."""
        iv = np.asarray(iv, dtype=float).reshape(-1, 2)
        out = np.empty((len(iv), 4, 2))
        out[:, [0, 3], 0] = iv[:, :1]
        out[:, [1, 2], 0] = iv[:, 1:]
        out[:, :2, 1] = row - half
        out[:, 2:, 1] = row + half
        return out

    def _draw_frame(
        self,
        axes: Any,
        *,
        bucket_mib: float,
        bandwidth_gbs: float,
        contention: float,
        comm_contention: float,
    ) -> str:
        """Model + drawing for one control state; returns the metrics panel's HTML."""
        from course_lib.overlap import (
            bucket_step_graph,
            exposed_on_critical_path,
            intersection,
            subtract,
            total_length,
        )

        del axes  # the figure is this explorer's own (see _build)
        sweep = self.sweep(bandwidth_gbs, contention, comm_contention)
        k = BUCKET_MIB_OPTIONS.index(bucket_mib)
        tl = sweep[k]
        steps = np.array([s.step_time for s in sweep])
        serials = np.array([s.serial_step_time for s in sweep])
        comm_time = total_length(tl.comm)
        overlapped = comm_time - tl.exposed_comm
        critical = exposed_on_critical_path(bucket_step_graph(tl))

        tl_ax, sw_ax = self.axes
        span = 1.02 * max(tl.step_time, tl.serial_step_time)
        self._canvas.restore_region(self._background(span))
        half = self.BAR_HEIGHT / 2
        self._shade.set_verts(self._boxes(intersection(tl.compute, tl.comm), 0.5, 1.0))
        self._compute.set_verts(self._boxes(tl.compute, 0, half))
        self._comm.set_verts(self._boxes(tl.comm, 1, half))
        self._exposed.set_verts(self._boxes(subtract(tl.comm, tl.compute), 1, half))
        self._comm_edges.set_verts(self._boxes(tl.comm, 1, half))
        self._opt.set_verts(self._boxes(np.array([tl.optimizer]), 0, half))
        px_per_s = self.TIMELINE_RECT[2] * self.FIGSIZE[0] * self.DPI / self._limit
        widths = tl.compute[:, 1] - tl.compute[:, 0]
        self._compute.set_linewidths(0.5 if np.median(widths) * px_per_s >= 5 else 0.0)
        self._step_line.set_xdata([tl.step_time] * 2)
        self._serial_line.set_xdata([tl.serial_step_time] * 2)
        nudge = 4.0 / px_per_s  # 4 px beside the line, on the side with room
        self._step_text.set_position((tl.step_time - nudge, -0.62))
        self._step_text.set_text(f"step {tl.step_time * 1e3:.1f} ms")
        right = (self._limit - tl.serial_step_time) * px_per_s > 120  # room for the label
        self._serial_text.set_position((tl.serial_step_time + (nudge if right else -nudge), 1.97))
        self._serial_text.set_horizontalalignment("left" if right else "right")
        self._serial_text.set_text(f"no overlap {tl.serial_step_time * 1e3:.1f} ms")
        for artist in (
            self._shade,
            self._compute,
            self._comm,
            self._exposed,
            self._comm_edges,
            self._opt,
            self._step_line,
            self._serial_line,
            self._step_text,
            self._serial_text,
        ):
            tl_ax.draw_artist(artist)

        self._sweep_line.set_ydata(steps)
        self._serial_sweep.set_ydata(serials)
        self._now.set_data([k], [tl.step_time])
        lo, hi = float(min(steps.min(), serials.min())), float(max(steps.max(), serials.max()))
        pad = 0.06 * (hi - lo) if hi > lo else 0.01 * hi
        sw_ax.set_ylim(lo - pad, hi + pad)
        for artist in (sw_ax.yaxis, self._serial_sweep, self._sweep_line, self._now):
            sw_ax.draw_artist(artist)

        ms = 1e3
        c, cc = contention, comm_contention
        gain = overlapped * (1 / (1 + c) + 1 / (1 + cc) - 1)
        best = int(np.argmin(steps))
        rows = [
            (
                "step time (backward + all-reduces + optimizer)",
                f"<b>{tl.step_time * ms:.2f} ms</b>",
                f"best cap of the sweep: {BUCKET_MIB_OPTIONS[best]:g} MiB, "
                f"{steps[best] * ms:.2f} ms",
            ),
            (
                "no overlap, same buckets",
                f"{tl.serial_step_time * ms:.2f} ms",
                f"overlap {'saves' if gain >= 0 else 'costs'} "
                f"{abs(tl.serial_step_time - tl.step_time) * ms:.2f} ms: "
                f"O·(1/(1+c) + 1/(1+c′) − 1) = {gain * ms:.2f} ms",
            ),
            (
                "overlap ratio (HTA)",
                _fmt_pct(tl.overlap_ratio) if comm_time > 0 else "—",
                f"O = {overlapped * ms:.2f} ms of {comm_time * ms:.2f} ms communication",
            ),
            (
                "comm with nothing else running",
                f"{tl.exposed_comm * ms:.2f} ms",
                "= (1 − ratio) × communication time",
            ),
            (
                "comm on the critical path",
                f"{critical * ms:.2f} ms",
                "the step's longest path runs through this much communication",
            ),
            (
                "backward stretched by contention",
                f"{tl.contention_delay * ms:.2f} ms",
                f"c = {c:.2f}, c′ = {cc:.2f}, c·c′ = {c * cc:.2f}"
                + (" &gt; 1: overlapping loses" if c * cc > 1 else ""),
            ),
        ]
        return metrics_table(rows, ("", "", ""))

    def _frame(self) -> str:
        return self._draw_frame(self.axes, **self.values)


def overlap_explorer(
    layer_backward_times: Any = None,
    layer_grad_bytes: Any = None,
    *,
    latency: float = 50e-6,
    optimizer_time: float | None = None,
    bucket_mib: float = 25,
    bandwidth_gbs: float = 12.0,
    contention: float = 0.2,
    comm_contention: float = 0.0,
) -> OverlapExplorer:
    """Explorer: bucket cap, bandwidth, contention c and c′ -> timeline, step time, overlap (cost03).

    Defaults: :func:`course_lib.overlap.transformer_grad_tensors` (24 layers, h = 1024, fp32
    gradients, 3.2 ms of backward per layer), 50 µs per all-reduce, and an optimizer step of
    7 passes over the gradient bytes at 1.5 TB/s (as course_lib.tracegen). Sliders: bucket cap
    (MiB, DDP's rule), all-reduce algorithm bandwidth 4-50 GB/s, c and c′ in 0-1.5.
    """
    from course_lib.overlap import _scalar, _vector, transformer_grad_tensors

    if (layer_backward_times is None) != (layer_grad_bytes is None):
        raise ValueError("pass both layer_backward_times and layer_grad_bytes, or neither")
    if layer_backward_times is None:
        w, g = transformer_grad_tensors()
    else:
        w = _vector(layer_backward_times, "layer_backward_times")
        g = _vector(layer_grad_bytes, "layer_grad_bytes")
        if len(w) != len(g):
            raise ValueError(
                f"layer_backward_times and layer_grad_bytes differ in length: {len(w)} vs {len(g)}"
            )
        if g.sum() == 0:
            raise ValueError("layer_grad_bytes are all 0: there is nothing to all-reduce")
    alpha = _scalar(latency, "latency")
    opt = _scalar(
        7 * float(g.sum()) / 1.5e12 if optimizer_time is None else optimizer_time,
        "optimizer_time",
    )
    if bucket_mib not in BUCKET_MIB_OPTIONS:
        raise ValueError(f"bucket_mib must be one of {BUCKET_MIB_OPTIONS}, got {bucket_mib!r}")
    bw = _scalar(bandwidth_gbs, "bandwidth_gbs", positive=True)
    if not 4.0 <= bw <= 50.0:
        raise ValueError(f"bandwidth_gbs must be in [4, 50] GB/s, got {bw}")
    for name, value in (("contention", contention), ("comm_contention", comm_contention)):
        if not 0.0 <= _scalar(value, name) <= 1.5:
            raise ValueError(f"{name} must be in [0, 1.5], got {value}")

    wide = {"description_width": "initial"}
    controls = {
        "bucket_mib": widgets.SelectionSlider(
            options=list(BUCKET_MIB_OPTIONS),
            value=bucket_mib,
            description="bucket cap (MiB)",
            style=wide,
        ),
        "bandwidth_gbs": widgets.FloatSlider(
            value=bw, min=4.0, max=50.0, step=1.0, description="bandwidth (GB/s)", style=wide
        ),
        "contention": widgets.FloatSlider(
            value=float(contention),
            min=0.0,
            max=1.5,
            step=0.05,
            description="compute slowdown c",
            style=wide,
        ),
        "comm_contention": widgets.FloatSlider(
            value=float(comm_contention),
            min=0.0,
            max=1.5,
            step=0.05,
            description="comm slowdown c′",
            style=wide,
        ),
    }
    return OverlapExplorer(
        controls,
        layer_backward_times=w,
        layer_grad_bytes=g,
        latency=alpha,
        optimizer_time=opt,
    )


# --- cost04: one run, many utilization numbers (FLOP count, time base, peak) ----------------

#: GPT-3 sizes (Brown et al. 2020, table 2.1): layers l, hidden size h, heads H, head dim Q (H·Q = h).
GPT3_CONFIGS: dict[str, tuple[int, int, int, int]] = {
    "GPT-3 760M": (24, 1536, 16, 96),
    "GPT-3 2.7B": (32, 2560, 32, 80),
    "GPT-3 6.7B": (32, 4096, 32, 128),
    "GPT-3 175B": (96, 12288, 96, 128),
}
_UTIL_VOCAB = 51200  # GPT-2 BPE vocabulary 50257 padded to a multiple of 1024, as Megatron-LM does
_UTIL_COUNTS = ("executed", "6N+12LHQT", "6N")
_UTIL_COUNT_NAMES = {
    "executed": "executed FLOPs (HFU)",
    "6N+12LHQT": "model FLOPs 6N + 12LHQT (MFU)",
    "6N": "model FLOPs, 6N only",
}
_UTIL_BASES = ("kernel", "step", "wall-clock")


def _utilization_rates(
    model: str,
    seq_len: int,
    recompute: str,
    *,
    kernel_efficiency: float,
    busy_fraction: float,
    outside_fraction: float,
    redone_fraction: float,
    peak_flops: float,
) -> dict[tuple[str, str], float]:
    """Counted FLOP/s per device for every (FLOP count, time base) of one modelled run (cost04).

    The hardware is held fixed: while kernels run the device executes ``kernel_efficiency`` ×
    ``peak_flops``; kernels run ``busy_fraction`` of each step; ``outside_fraction`` of the
    wall-clock lies outside steps (input stalls, evaluation, checkpoints, restart downtime) and
    ``redone_fraction`` steps per kept step are lost to failures and run again. Executed FLOPs per
    token are the model's (PaLM 6N + 12LHQT with N = 12·l·h² + V·h, V = 51200) times Megatron's
    executed/model ratio under full recomputation (96/72 form over the 72 form), or 1 without.
    """
    from course_lib.flops import megatron_flops_per_iteration, model_flops_per_token

    if model not in GPT3_CONFIGS:
        raise ValueError(f"unknown model {model!r}; known: {list(GPT3_CONFIGS)}")
    if recompute not in ("none", "full"):
        raise ValueError(f"recompute must be 'none' or 'full', got {recompute!r}")
    for name, v in (
        ("kernel_efficiency", kernel_efficiency),
        ("busy_fraction", busy_fraction),
    ):
        if not 0 < v <= 1:
            raise ValueError(f"{name} must be in (0, 1], got {v}")
    if not 0 <= outside_fraction < 1:
        raise ValueError(f"outside_fraction must be in [0, 1), got {outside_fraction}")
    if not redone_fraction >= 0:
        raise ValueError(f"redone_fraction must be >= 0, got {redone_fraction}")
    layers, hidden, heads, head_dim = GPT3_CONFIGS[model]
    num_params = 12 * layers * hidden**2 + _UTIL_VOCAB * hidden
    per_token = {
        "6N+12LHQT": model_flops_per_token(num_params, layers, heads, head_dim, seq_len),
        "6N": 6.0 * num_params,
    }
    ratio = megatron_flops_per_iteration(
        1, seq_len, layers, hidden, _UTIL_VOCAB, recompute=True
    ) / megatron_flops_per_iteration(1, seq_len, layers, hidden, _UTIL_VOCAB, recompute=False)
    per_token["executed"] = per_token["6N+12LHQT"] * (ratio if recompute == "full" else 1.0)
    # Tokens per second per device, on each time base, from the executed rate the hardware holds.
    kernel_rate = kernel_efficiency * peak_flops
    tokens = {"kernel": kernel_rate / per_token["executed"]}
    tokens["step"] = tokens["kernel"] * busy_fraction
    tokens["wall-clock"] = tokens["step"] * (1 - outside_fraction) / (1 + redone_fraction)
    return {(c, b): tokens[b] * per_token[c] for c in _UTIL_COUNTS for b in _UTIL_BASES}


class UtilizationExplorer(Explorer):
    """Waterfall from the peak to the quoted number and the matrix of all quotable numbers (cost04).

    Built for speed: a fixed layout and a fixed TFLOP/s axis (room for the 2:4-sparse peak, so
    switching peaks moves only the 100% line, never the bars). Everything that never changes is
    drawn once and kept as a bitmap; an update restores it and draws only the changing artists
    (MAX_ROWS bar slots with their labels, the matrix image and its nine texts, the titles)
    before encoding the PNG. Colours and meaning as :func:`course_lib.viz.utilization_waterfall`.
    """

    WATERFALL_RECT = (0.25, 0.13, 0.40, 0.76)
    MATRIX_RECT = (0.79, 0.20, 0.18, 0.52)
    MAX_ROWS = 13  # 7 stops and 6 drops: sparse peak ... 6N · wall-clock
    X_MAX_TFLOPS = 2300.0  # the H100 bf16 2:4-sparse peak (1979) and its label fit

    def __init__(self, controls: Mapping[str, widgets.ValueWidget], **hardware: float) -> None:
        self.hardware = dict(hardware)
        self.last_rates: dict[tuple[str, str], float] = {}
        self.last_quote = float("nan")
        self.last_path: list[tuple[str, float]] = []
        self._built = False
        super().__init__(controls, self._draw_frame, figsize=(11.0, 4.8), dpi=80)
        run = [self.controls[k] for k in ("model", "seq_len", "recompute")]
        conventions = [self.controls[k] for k in ("flop_count", "time_base", "peak")]
        self.widget = widgets.VBox(
            [widgets.HBox(run), widgets.HBox(conventions), self.metrics, self.image]
        )

    def _build(self) -> None:
        """Replace the base class's axes by fixed axes holding persistent artists."""
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.patches import Rectangle
        from matplotlib.ticker import NullLocator

        fig = self.figure = Figure(figsize=self.figure.get_size_inches(), dpi=self.figure.dpi)
        self._canvas = FigureCanvasAgg(fig)
        wf = fig.add_axes(self.WATERFALL_RECT)
        mx = fig.add_axes(self.MATRIX_RECT)
        self.axes = np.array([wf, mx], dtype=object)
        wf.set_ylim(self.MAX_ROWS - 0.4, -0.6)
        wf.set_xlim(0.0, self.X_MAX_TFLOPS)
        wf.set_xlabel("TFLOP/s per device")
        wf.yaxis.set_major_locator(NullLocator())
        for side in ("top", "right", "left"):
            wf.spines[side].set_visible(False)
        wf.grid(axis="x", color="#E6E6E6", lw=0.8)
        wf.set_axisbelow(True)
        self._bars, self._names, self._values = [], [], []
        for row in range(self.MAX_ROWS):
            height = 0.72 if row % 2 == 0 else 0.5
            self._bars.append(wf.add_patch(Rectangle((0.0, row - height / 2), 0.0, height)))
            self._names.append(
                wf.text(
                    -0.02,
                    row,
                    "",
                    transform=wf.get_yaxis_transform(),
                    ha="right",
                    va="center",
                    fontsize=10 if row % 2 == 0 else 8.5,
                    color="#111111" if row % 2 == 0 else "#7A3300",
                    fontstyle="normal" if row % 2 == 0 else "italic",
                )
            )
            self._values.append(wf.text(0.0, row, "", ha="left", va="center", fontsize=9))
        self._peak_line = wf.axvline(0.0, color="#333333", ls="--", lw=1.0, zorder=0)
        self._peak_text = wf.text(
            0.0, self.MAX_ROWS - 0.5, "", ha="left", va="bottom", fontsize=8, color="#333333"
        )
        self._title = wf.set_title("", loc="left")

        self._matrix = mx.imshow(
            np.zeros((len(_UTIL_COUNTS), len(_UTIL_BASES))),
            cmap="Blues",
            vmin=0.0,
            vmax=1.0,
            aspect="auto",
        )
        self._cells = [
            [mx.text(j, i, "", ha="center", va="center", fontsize=9) for j in range(3)]
            for i in range(3)
        ]
        self._choice = mx.add_patch(
            Rectangle((-0.5, -0.5), 1, 1, fill=False, edgecolor="#E69F00", lw=3.0, clip_on=False)
        )
        mx.set_xticks(range(3), ["kernel", "step", "wall"], fontsize=9)
        mx.set_yticks(range(3), ["executed", "6N+12LHQT", "6N only"], fontsize=9)
        mx.xaxis.tick_top()
        mx.tick_params(length=0)
        mx.set_xlabel("time base", fontsize=9)
        mx.set_ylabel("FLOP count", fontsize=9)
        self._matrix_title = mx.set_title("", fontsize=10, pad=22)
        # Drawn per path (they change only with the conventions) and cached as bitmaps:
        self._layout = [self._peak_line, self._peak_text, *self._names]
        self._layout_cache: dict[tuple[str, ...], Any] = {}
        self._layout_key: tuple[str, ...] = ()
        # Drawn on every update:
        self._dynamic = [
            *self._bars,
            *self._values,
            self._title,
            self._matrix,
            *(cell for row in self._cells for cell in row),
            self._choice,
            self._matrix_title,
        ]
        for artist in self._layout + self._dynamic:
            artist.set_animated(True)
        self._canvas.draw()  # everything static, once
        self._background = self._canvas.copy_from_bbox(fig.bbox)
        self._built = True

    def _frame(self) -> str:
        return self._draw_frame(**self.values)

    def png(self) -> bytes:
        """The static bitmap, the cached labels of this path and the changing artists, as PNG bytes."""
        from PIL import Image

        canvas = self._canvas
        renderer = canvas.get_renderer()
        cached = self._layout_cache.get(self._layout_key)
        if cached is None:
            canvas.restore_region(self._background)
            for artist in self._layout:
                if artist.get_visible():
                    artist.draw(renderer)
            cached = self._layout_cache[self._layout_key] = canvas.copy_from_bbox(self.figure.bbox)
        canvas.restore_region(cached)
        for artist in self._dynamic:
            if artist.get_visible():
                artist.draw(renderer)
        buffer = io.BytesIO()
        Image.fromarray(np.asarray(canvas.buffer_rgba())).save(
            buffer, format="png", compress_level=1
        )
        return buffer.getvalue()

    def _path(
        self, rates: dict[tuple[str, str], float], flop_count: str, time_base: str, peak: str
    ) -> tuple[list[tuple[str, float]], list[str]]:
        """Stops and drops from the peak to the quoted number, one convention at a time."""
        from course_lib.hardware import peak as table_peak

        stops: list[tuple[str, float]] = []
        drops: list[str] = []
        if peak == "2:4 sparse":
            stops.append(("H100 bf16 2:4-sparse peak", table_peak("H100 SXM", "bf16", True)))
            drops.append("sparsity credit (not eligible)")
        stops.append(("H100 bf16 dense peak", table_peak("H100 SXM", "bf16")))
        drops.append("kernels run below peak")
        stops.append(("executed · kernel time", rates[("executed", "kernel")]))
        base = "kernel"
        if time_base != "kernel":
            drops.append("device idle inside the step")
            stops.append(("executed · step time", rates[("executed", "step")]))
            base = "step"
        if flop_count != "executed":
            drops.append("recomputation (executed, not model)")
            stops.append((f"6N+12LHQT · {base} time", rates[("6N+12LHQT", base)]))
        if flop_count == "6N":
            drops.append("attention FLOPs 6N leaves out")
            stops.append((f"6N · {base} time", rates[("6N", base)]))
        if time_base == "wall-clock":
            drops.append("stalls, eval, checkpoints, restarts")
            stops.append((f"{flop_count} · wall-clock", rates[(flop_count, "wall-clock")]))
        return stops, drops

    def _draw_frame(
        self,
        *,
        model: str,
        seq_len: int,
        recompute: str,
        flop_count: str,
        time_base: str,
        peak: str,
    ) -> str:
        from course_lib.hardware import peak as table_peak
        from course_lib.viz import UTILIZATION_COLOURS as colours

        hw = self.hardware
        dense = table_peak("H100 SXM", "bf16")
        reference = table_peak("H100 SXM", "bf16", sparse=peak == "2:4 sparse")
        rates = _utilization_rates(model, seq_len, recompute, peak_flops=dense, **hw)
        stops, drops = self._path(rates, flop_count, time_base, peak)
        self.last_rates = rates
        self.last_path = stops
        self.last_quote = stops[-1][1] / reference
        num_peaks = 2 if peak == "2:4 sparse" else 1
        self._layout_key = (flop_count, time_base, peak)

        wf, mx = self.axes
        span = reference / 1e12
        self._peak_line.set_xdata([span, span])
        self._peak_text.set_x(span + 15.0)
        self._peak_text.set_text(f"100% = {span:.0f} TFLOP/s")
        rows: list[tuple[str, float, float, str, str]] = []  # name, left, right, value, kind
        for i, (name, value) in enumerate(stops):
            kind = "peak" if i < num_peaks else "quote" if i == len(stops) - 1 else "stop"
            rows.append((name, 0.0, value, f"{value / reference:.1%}", kind))
            if i < len(drops):
                points = (value - stops[i + 1][1]) / reference * 100
                label = f"−{points:.1f} pts" if points >= 0.05 else "none"
                rows.append((drops[i], stops[i + 1][1], value, label, "drop"))
        for row in range(self.MAX_ROWS):
            bar, name, text = self._bars[row], self._names[row], self._values[row]
            if row >= len(rows):
                for artist in (bar, name, text):
                    artist.set_visible(False)
                continue
            label, left, right, value, kind = rows[row]
            for artist in (bar, name, text):
                artist.set_visible(True)
            bar.set_x(left / 1e12)
            bar.set_width((right - left) / 1e12)
            hatched = kind == "peak" and peak == "2:4 sparse" and row == 0
            bar.set_hatch("//" if hatched else None)
            bar.set_facecolor("white" if hatched else colours[kind])
            bar.set_edgecolor(colours["peak"] if hatched else "none")
            bar.set_alpha(0.45 if kind == "drop" else 1.0)
            name.set_text(label)
            text.set_text(value)
            text.set_x(right / 1e12 + 20.0)
            text.set_fontweight("bold" if kind == "quote" else "normal")
            text.set_color("#7A3300" if kind == "drop" else "#111111")
        self._title.set_text(f"From the peak to the quoted number: {self.last_quote:.1%}")

        grid = np.array([[rates[(c, b)] / reference for b in _UTIL_BASES] for c in _UTIL_COUNTS])
        self._matrix.set_data(grid)
        for i in range(3):
            for j in range(3):
                cell = self._cells[i][j]
                cell.set_text(f"{grid[i, j]:.1%}")
                cell.set_color("white" if grid[i, j] > 0.45 else "#111111")
        i, j = _UTIL_COUNTS.index(flop_count), _UTIL_BASES.index(time_base)
        self._choice.set_xy((j - 0.5, i - 0.5))
        ref_name = "2:4-sparse" if peak == "2:4 sparse" else "dense"
        self._matrix_title.set_text(
            f"the same run, 9 conventions:\n{grid.min():.1%} to {grid.max():.1%}\n"
            f"of the {ref_name} peak"
        )

        hfu_step = rates[("executed", "step")] / dense
        mfu_step = rates[("6N+12LHQT", "step")] / dense
        head = (
            f"<b>{model}</b>, s = {seq_len}, recomputation {recompute} · quoted: "
            f"<b>{self.last_quote:.1%}</b> = {_UTIL_COUNT_NAMES[flop_count]} per "
            f"{time_base} time / H100 bf16 {ref_name} peak ({span:.0f} TFLOP/s)"
        )
        table = [
            (
                "held fixed (the hardware)",
                f"kernels execute {hw['kernel_efficiency'] * dense / 1e12:.0f} TFLOP/s while "
                f"they run; busy {hw['busy_fraction']:.0%} of each step; "
                f"{hw['outside_fraction']:.0%} of wall-clock outside steps; "
                f"{hw['redone_fraction']:.0%} of steps redone",
            ),
            (
                "attention share of model FLOPs",
                f"{1 - rates[('6N', 'step')] / rates[('6N+12LHQT', 'step')]:.1%} "
                "(12LHQT / (6N + 12LHQT); grows with s/h)",
            ),
            (
                "HFU / MFU (step time, dense peak)",
                f"{hfu_step:.1%} / {mfu_step:.1%} = {hfu_step / mfu_step:.3f}",
            ),
        ]
        return head + metrics_table(table, ("", ""))


def utilization_explorer(
    model: str = "GPT-3 6.7B",
    seq_len: int = 2048,
    recompute: str = "none",
    kernel_efficiency: float = 0.62,
    busy_fraction: float = 0.86,
    outside_fraction: float = 0.10,
    redone_fraction: float = 0.03,
) -> UtilizationExplorer:
    """Explorer: model, s, recomputation; FLOP count, time base, peak -> waterfall + matrix of quotes (cost04).

    The hardware's behaviour is fixed by the keyword arguments (see :func:`_utilization_rates`);
    only the run's shape and the conventions move, and with them the quoted utilization.
    """
    seq_options = [512, 1024, 2048, 4096, 8192, 16384, 32768]
    if seq_len not in seq_options:
        raise ValueError(f"seq_len must be one of {seq_options}, got {seq_len!r}")
    hardware = dict(
        kernel_efficiency=kernel_efficiency,
        busy_fraction=busy_fraction,
        outside_fraction=outside_fraction,
        redone_fraction=redone_fraction,
    )
    # Validates everything (model, recompute, fractions) before a widget exists.
    _utilization_rates(model, seq_len, recompute, peak_flops=1.0, **hardware)
    wide = {"description_width": "initial"}
    controls = {
        "model": widgets.Dropdown(
            options=list(GPT3_CONFIGS), value=model, description="model", style=wide
        ),
        "seq_len": widgets.SelectionSlider(
            options=seq_options, value=seq_len, description="sequence length s", style=wide
        ),
        "recompute": widgets.ToggleButtons(
            options=["none", "full"], value=recompute, description="recomputation", style=wide
        ),
        "flop_count": widgets.ToggleButtons(
            options=list(_UTIL_COUNTS), value="6N+12LHQT", description="FLOP count", style=wide
        ),
        "time_base": widgets.ToggleButtons(
            options=list(_UTIL_BASES), value="step", description="time base", style=wide
        ),
        "peak": widgets.ToggleButtons(
            options=["dense", "2:4 sparse"], value="dense", description="peak", style=wide
        ),
    }
    return UtilizationExplorer(controls, **hardware)


# --- cost05: activation memory over one training step ---------------------------------------

SEQ_LEN_OPTIONS = (128, 256, 512, 1024, 2048)
"""Sequence lengths the activation-memory explorer offers."""
GIB = float(2**30)
"""Bytes per GiB (PyTorch's memory summaries and snapshots report binary units)."""
_NICE_STEPS = (1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0)


def _nice_ceiling(value: float) -> float:
    """The smallest 1-1.25-1.5-2-2.5-3-4-5-6-8 × 10^k at or above value (value > 0)."""
    power = 10.0 ** np.floor(np.log10(value))
    for step in (*_NICE_STEPS, 10.0):
        if step * power >= value * (1 - 1e-12):
            return float(step * power)
    return float(10.0 * power)  # pragma: no cover - the loop always returns


class ActivationMemoryExplorer(Explorer):
    """Sequence length, micro-batch and recomputation -> stacked memory timeline and its peak (cost05).

    The model is :func:`course_lib.memory.training_step_events`; the stacked levels are those of
    :func:`course_lib.memory.live_bytes_by_category`, computed here by one sort and cumulative sum
    over the events (the generator's events need no validation), and the metrics compare the
    timeline with :func:`course_lib.memory.activation_bytes_per_layer`. Built for speed
    (< 100 ms per change): a fixed layout without a layout engine, and blitting — the axes, their
    ticks and the key are rendered once per pair of axis limits (rounded up to 1-1.25-1.5-2-…
    steps); a change redraws the bands, the phases, the peak marker and two texts. The y axis is
    shared by the three recomputation policies of a shape, so toggling them shows the stack
    shrink.
    """

    FIGSIZE = (11.0, 4.2)
    DPI = 80
    AXES_RECT = (0.075, 0.13, 0.72, 0.74)

    def __init__(
        self,
        controls: Mapping[str, widgets.ValueWidget],
        *,
        shape: dict[str, int],
        device_bytes: float,
    ) -> None:
        self.shape = dict(shape)
        self.device_bytes = float(device_bytes)
        self._canvas: Any = None
        self._backgrounds: dict[tuple[float, float], Any] = {}
        self._cache: dict[tuple[int, int, str], dict[str, Any]] = {}
        self.last_metrics: dict[str, float] = {}
        super().__init__(controls, self._draw_frame, figsize=self.FIGSIZE, dpi=self.DPI)

    # -- model -----------------------------------------------------------------------------------

    def model(self, seq_len: int, micro_batch: int, recompute: str) -> dict[str, Any]:
        """Levels by category, the peak and the step's numbers for one setting (cached)."""
        from course_lib.memory import STEP_CATEGORIES, training_step_events

        key = (int(seq_len), int(micro_batch), str(recompute))
        if key in self._cache:
            return self._cache[key]
        ev = training_step_events(
            seq_len=key[0], micro_batch=key[1], recompute=key[2], **self.shape
        )
        is_alloc = ev["kind"].to_numpy() == "alloc"
        time_ = ev["time"].to_numpy(dtype=float)
        nbytes = ev["bytes"].to_numpy(dtype=float)
        category = ev["category"].to_numpy(dtype=object)
        phase = ev["phase"].to_numpy(dtype=object)
        order = np.lexsort((is_alloc, time_))  # by time; frees before allocations
        t = time_[order]
        delta = np.where(is_alloc[order], nbytes[order], -nbytes[order])
        last = np.append(np.flatnonzero(t[1:] != t[:-1]), len(t) - 1)
        cat = category[order]
        levels = np.vstack(
            [np.cumsum(np.where(cat == c, delta, 0.0))[last] for c in STEP_CATEGORIES]
        )
        total = levels.sum(axis=0)
        i = int(np.argmax(total))
        times = t[last]
        at_peak = np.flatnonzero((time_ == times[i]) & is_alloc)
        phases = {}
        for p in ("forward", "backward", "optimizer"):
            mine = time_[phase == p]
            phases[p] = (float(mine.min()), float(mine.max())) if len(mine) else (0.0, 0.0)
        layer0 = ev["tensor"].str.startswith("L0.").to_numpy(dtype=bool)
        saved = (phase == "forward") & is_alloc & (category == "activation") & layer0
        result = {
            "times": times,
            "levels": levels,
            "peak_index": i,
            "peak_time": float(times[i]),
            "peak_bytes": float(total[i]),
            "peak_op": str(ev["op"].iloc[at_peak[-1]]) if len(at_peak) else "",
            "peak_phase": str(phase[at_peak[-1]]) if len(at_peak) else "",
            "phases": phases,
            "layer_activation_bytes": float(nbytes[saved].sum()),
            "sum_of_allocations": float(nbytes[is_alloc].sum()),
            "step_time": float(times[-1]),
        }
        if len(self._cache) >= 256:
            self._cache.pop(next(iter(self._cache)))
        self._cache[key] = result
        return result

    # -- drawing ---------------------------------------------------------------------------------

    def _build(self) -> None:
        """Figure without a layout engine on an Agg canvas; animated (blitted) dynamic artists."""
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.collections import PolyCollection
        from matplotlib.patches import Rectangle
        from matplotlib.ticker import FuncFormatter

        from course_lib.memory import STEP_CATEGORIES
        from course_lib.viz import MEMORY_COLOURS, PHASE_SHADES

        fig = self.figure = Figure(figsize=self.FIGSIZE, dpi=self.DPI)
        self._canvas = FigureCanvasAgg(fig)
        ax = fig.add_axes(self.AXES_RECT)
        self.axes = np.array([ax], dtype=object)
        self._phase_boxes = {
            p: ax.add_patch(
                Rectangle((0.0, 0.0), 0.0, 1.0, transform=ax.get_xaxis_transform(),
                          color=PHASE_SHADES[p], lw=0, zorder=0, animated=True)
            )
            for p in ("forward", "backward", "optimizer")
        }  # fmt: skip
        self._phase_labels = {
            p: ax.text(0.0, 0.98, p, transform=ax.get_xaxis_transform(), ha="center",
                       va="top", fontsize=9, color="#555555", animated=True)
            for p in self._phase_boxes
        }  # fmt: skip
        self._bands = PolyCollection(
            [], facecolors=[MEMORY_COLOURS[c] for c in STEP_CATEGORIES], lw=0, zorder=2,
            animated=True,
        )  # fmt: skip
        ax.add_collection(self._bands)
        (self._outline,) = ax.plot([], [], color="#222222", lw=0.8, zorder=3, animated=True)
        (self._peak_line,) = ax.plot(
            [], [], color="#222222", ls="--", lw=1.2, zorder=4, animated=True
        )
        (self._peak_dot,) = ax.plot([], [], "o", color="#222222", ms=5, zorder=5, animated=True)
        self._peak_text = ax.text(
            0.0, 0.0, "", fontsize=9, va="bottom", zorder=6, animated=True,
            bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": "none", "alpha": 0.85},
        )  # fmt: skip
        self._device_line = ax.axhline(
            0.0, color="#D55E00", ls=":", lw=1.5, zorder=4, animated=True
        )
        self._device_text = ax.text(
            0.005, 0.0, "", color="#D55E00", fontsize=9, va="bottom",
            transform=ax.get_yaxis_transform(), animated=True,
        )  # fmt: skip
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v * 1e3:g}"))
        ax.set_xlabel("time (ms)")
        ax.set_ylabel("live memory (GiB)")
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        # The key: patches and texts in figure coordinates (a Legend costs more to draw).
        left = self.AXES_RECT[0] + self.AXES_RECT[2] + 0.025
        top = self.AXES_RECT[1] + self.AXES_RECT[3]
        for k, category in enumerate(reversed(STEP_CATEGORIES)):
            y = top - 0.065 * (k + 1)
            fig.patches.append(
                Rectangle((left, y), 0.022, 0.045, transform=fig.transFigure,
                          facecolor=MEMORY_COLOURS[category])
            )  # fmt: skip
            fig.text(left + 0.032, y + 0.022, category, va="center", fontsize=10)
        self._title = fig.text(
            self.AXES_RECT[0], top + 0.03, "", ha="left", fontsize=12, animated=True
        )

    def _background(self, x_max: float, y_max: float) -> Any:
        """Cached render of everything static for one pair of axis limits."""
        ax = self.axes[0]
        ax.set_xlim(0.0, x_max)
        ax.set_ylim(0.0, y_max)
        key = (x_max, y_max)
        if key not in self._backgrounds:
            if len(self._backgrounds) >= 64:
                self._backgrounds.pop(next(iter(self._backgrounds)))
            self._canvas.draw()
            self._backgrounds[key] = self._canvas.copy_from_bbox(self.figure.bbox)
        return self._backgrounds[key]

    def _frame(self) -> str:
        return self._draw_frame(self.axes, **self.values)

    def _draw_frame(self, axes: Any, *, seq_len: int, micro_batch: int, recompute: str) -> str:
        from course_lib.memory import STEP_CATEGORIES, activation_bytes_per_layer

        r = self.model(seq_len, micro_batch, recompute)
        ceiling = max(r["peak_bytes"], self.model(seq_len, micro_batch, "none")["peak_bytes"])
        times, levels = r["times"], r["levels"] / GIB
        x_max = 1e-3 * _nice_ceiling(1.02e3 * times[-1])
        y_max = _nice_ceiling(1.25 * ceiling / GIB)
        self._canvas.restore_region(self._background(x_max, y_max))
        ax = axes[0]

        xs = np.repeat(np.append(times, x_max), 2)[1:-1]
        cum = np.vstack([np.zeros(len(times)), np.cumsum(levels, axis=0)])
        polygons = []
        for k in range(len(STEP_CATEGORIES)):
            upper, lower = np.repeat(cum[k + 1], 2), np.repeat(cum[k], 2)
            polygons.append(np.column_stack([np.r_[xs, xs[::-1]], np.r_[upper, lower[::-1]]]))
        self._bands.set_verts(polygons)
        self._outline.set_data(xs, np.repeat(cum[-1], 2))
        for p, box in self._phase_boxes.items():
            lo, hi = r["phases"][p]
            box.set_x(lo)
            box.set_width(hi - lo)
            self._phase_labels[p].set_x((lo + hi) / 2)
            self._phase_labels[p].set_visible(hi > lo)
        t_peak, peak_gib = r["peak_time"], r["peak_bytes"] / GIB
        self._peak_line.set_data([t_peak, t_peak], [0.0, y_max])
        self._peak_dot.set_data([t_peak], [peak_gib])
        right = t_peak / x_max > 0.6
        self._peak_text.set_position((t_peak + (-0.01 if right else 0.01) * x_max, 1.01 * peak_gib))
        self._peak_text.set_horizontalalignment("right" if right else "left")
        self._peak_text.set_text(
            f"peak {peak_gib:.2f} GiB at {t_peak * 1e3:.1f} ms\n({r['peak_op']}, {r['peak_phase']})"
        )
        self._title.set_text(
            f"One training step, s = {seq_len}, b = {micro_batch}, recompute = {recompute}: "
            f"peak {peak_gib:.2f} GiB"
        )
        device_gib = self.device_bytes / GIB
        self._device_line.set_ydata([device_gib, device_gib])
        self._device_line.set_visible(device_gib <= y_max)
        self._device_text.set_y(device_gib)
        self._device_text.set_text(f"device memory {device_gib:g} GiB")
        self._device_text.set_visible(device_gib <= y_max)
        for artist in (
            *self._phase_boxes.values(),
            *self._phase_labels.values(),
            self._device_line,
            self._device_text,
            self._bands,
            self._outline,
            self._peak_line,
            self._peak_dot,
            self._peak_text,
        ):
            ax.draw_artist(artist)
        self.figure.draw_artist(self._title)

        # Metrics: the peak and what is live then; Table 2 against the timeline.
        shape, L = self.shape, self.shape["num_layers"]
        formula = activation_bytes_per_layer(
            int(seq_len), int(micro_batch), shape["hidden"], shape["num_heads"],
            recompute=recompute,
        )  # fmt: skip
        at_peak = r["levels"][:, r["peak_index"]]
        baseline = self.model(seq_len, micro_batch, "none")["step_time"]
        self.last_metrics = {
            "peak_bytes": r["peak_bytes"],
            "peak_time": t_peak,
            **{f"peak_{c}_bytes": float(b) for c, b in zip(STEP_CATEGORIES, at_peak, strict=True)},
            "layer_activation_bytes": r["layer_activation_bytes"],
            "layer_activation_formula": formula,
            "sum_of_allocations": r["sum_of_allocations"],
            "step_time": r["step_time"],
        }
        names = {"none": "sbh(34 + 5as/h)", "selective": "34·sbh", "full": "2·sbh"}
        loss_gib = 12 * int(seq_len) * int(micro_batch) * shape["vocab_size"] / GIB
        same = abs(formula - r["layer_activation_bytes"]) <= 1e-9 * formula
        rows = [
            (
                "peak live memory",
                f"{peak_gib:.2f} GiB",
                f"at {t_peak * 1e3:.1f} ms, {r['peak_op']} ({r['peak_phase']})",
            ),
            (
                "live at the peak",
                " + ".join(f"{b / GIB:.2f}" for b in at_peak) + " GiB",
                " + ".join(STEP_CATEGORIES),
            ),
            (
                "saved activations per layer",
                f"{r['layer_activation_bytes'] / 2**20:.1f} MiB",
                f"Table 2: {names[recompute]} = {formula / 2**20:.1f} MiB "
                + ("(agree)" if same else "<b>(disagree: please report)</b>"),
            ),
            (
                "× layers",
                f"{L * r['layer_activation_bytes'] / GIB:.2f} GiB",
                f"{L} layers; the loss adds 12·s·b·V = {loss_gib:.2f} GiB at its backward "
                "(fp32 log-probs and two fp32 gradients)",
            ),
            (
                "sum of all allocations",
                f"{r['sum_of_allocations'] / GIB:.2f} GiB",
                f"{r['sum_of_allocations'] / r['peak_bytes']:.1f}× the peak: "
                "not a memory requirement",
            ),
            (
                "step time",
                f"{r['step_time'] * 1e3:.1f} ms",
                f"{r['step_time'] / baseline - 1:+.1%} vs no recomputation",
            ),
        ]
        return metrics_table(rows, ("", "value", "note"))


def activation_memory_explorer(
    seq_len: int = 1024,
    micro_batch: int = 4,
    recompute: str = "none",
    *,
    num_layers: int = 12,
    hidden: int = 768,
    num_heads: int = 12,
    vocab_size: int = 50257,
    device_bytes: float = 80 * 2**30,
) -> ActivationMemoryExplorer:
    """Explorer: sequence length, micro-batch size, recomputation -> memory timeline, peak, Table 2 (cost05).

    The step is :func:`course_lib.memory.training_step_events` of a GPT-2-small-shaped model
    (12 layers, h = 768, 12 heads, V = 50257) by default. Controls: seq_len in
    :data:`SEQ_LEN_OPTIONS`, micro_batch 1-16, recompute none / selective / full. A dotted line
    marks ``device_bytes`` (80 GiB) once the axis reaches it.
    """
    from course_lib.memory import _count

    shape = {
        "num_layers": _count(num_layers, "num_layers"),
        "hidden": _count(hidden, "hidden"),
        "num_heads": _count(num_heads, "num_heads"),
        "vocab_size": _count(vocab_size, "vocab_size"),
    }
    if seq_len not in SEQ_LEN_OPTIONS:
        raise ValueError(f"seq_len must be one of {SEQ_LEN_OPTIONS}, got {seq_len!r}")
    if (
        isinstance(micro_batch, bool)
        or not isinstance(micro_batch, int)
        or not 1 <= micro_batch <= 16
    ):
        raise ValueError(f"micro_batch must be an integer in 1..16, got {micro_batch!r}")
    if recompute not in ("none", "selective", "full"):
        raise ValueError(f"recompute must be 'none', 'selective' or 'full', got {recompute!r}")
    if (
        isinstance(device_bytes, bool)
        or not isinstance(device_bytes, int | float)
        or not device_bytes > 0
    ):
        raise ValueError(f"device_bytes must be a number > 0, got {device_bytes!r}")
    wide = {"description_width": "initial"}
    controls = {
        "seq_len": widgets.SelectionSlider(
            options=list(SEQ_LEN_OPTIONS),
            value=seq_len,
            description="sequence length s",
            style=wide,
        ),
        "micro_batch": widgets.IntSlider(
            value=micro_batch, min=1, max=16, description="micro-batch b", style=wide
        ),
        "recompute": widgets.ToggleButtons(options=["none", "selective", "full"], value=recompute),
    }
    return ActivationMemoryExplorer(controls, shape=shape, device_bytes=device_bytes)
