"""cost01's explorer: change one op's duration and watch the critical path and step time move."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.figure import Figure

from course_lib.explorers.base import Explorer, metrics_table

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
    ``course_lib.figures.graph.gantt``: no path arrows, an op's name inside its bar or beside it where free.
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
        from course_lib.figures.graph import (
            GANTT_CRITICAL_COLOUR,
            GANTT_CRITICAL_EDGE,
            GANTT_OTHER_COLOUR,
            GANTT_OTHER_EDGE,
        )
        from course_lib.figures.style import text_px, time_unit

        fig = self.figure = Figure(figsize=self.FIGSIZE, dpi=self.DPI)
        self._canvas = FigureCanvasAgg(fig)
        gantt_ax, curve_ax = fig.add_axes(self.GANTT_RECT), fig.add_axes(self.CURVE_RECT)
        self.axes = np.array([gantt_ax, curve_ax], dtype=object)

        # One time axis for every op and duration the sliders allow: max over ops of T(3 d0).
        t_max = self.base_step_time
        for name in self.graph.nodes:
            a, b = G.path_bounds(self.graph, name)
            t_max = max(t_max, a, b + 1e-3 * self.slider_range(name)[1])
        scale, unit = time_unit(t_max)
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
            return x + (text_px(text, 9, False, self.DPI) + 22) / width

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

        from course_lib.figures.graph import what_if_curve

        curve_ax = self.axes[1]
        curve_ax.clear()
        what_if_curve(self.graph, op, ax=curve_ax, max_duration=1e-3 * self.slider_range(op)[1])
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
        from course_lib.figures.style import text_px

        key = (name, size, bold)
        if key not in self._text_width:
            self._text_width[key] = text_px(name, size, bold, self.DPI)
        return self._text_width[key]

    def _draw_gantt(self, sched: Any, path_ops: tuple[str, ...], op: str, t: float) -> None:
        """Bars, names, the selected op's outline and the step-time line, drawn over the background."""
        from course_lib.figures.graph import (
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
