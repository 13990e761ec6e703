"""cost01's explorer: change one op's duration and watch the critical path and step time move."""

from __future__ import annotations

import io
import math
from collections import OrderedDict
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


class _Sprites:
    """Text rendered once into RGBA arrays and pasted into the canvas buffer afterwards.

    Drawing a matplotlib Text costs about 2 ms (layout and glyph rendering, every time); pasting
    a cached bitmap costs microseconds. Used for the op names on the Gantt bars, which move on
    every slider change.
    """

    def __init__(self, dpi: float, capacity: int = 2048) -> None:
        self.dpi = dpi
        self.capacity = capacity
        self._cache: OrderedDict[tuple, tuple[np.ndarray, np.ndarray, int, int]] = OrderedDict()
        self._widths: dict[tuple[str, float, bool], float] = {}

    def get(self, text: str, size: float, colour: str, bold: bool):
        """(premultiplied RGB as float32, alpha as float32, width px, height px) of the text."""
        key = (text, size, colour, bold)
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            return hit
        from matplotlib.backends.backend_agg import RendererAgg
        from matplotlib.colors import to_rgb
        from matplotlib.font_manager import FontProperties

        prop = FontProperties(size=size, weight="bold" if bold else "normal")
        probe = RendererAgg(1, 1, self.dpi)
        w, h, descent = probe.get_text_width_height_descent(text, prop, ismath=False)
        width, height = math.ceil(w) + 2, math.ceil(h) + 2
        renderer = RendererAgg(width, height, self.dpi)
        gc = renderer.new_gc()
        gc.set_foreground(colour)
        renderer.draw_text(gc, 1, height - 1 - descent, text, prop, 0.0)
        rgba = np.asarray(renderer.buffer_rgba()).astype(np.float32) / 255.0
        alpha = rgba[..., 3:4]
        premultiplied = np.broadcast_to(np.array(to_rgb(colour), np.float32), rgba[..., :3].shape)
        value = (premultiplied * alpha * 255.0, alpha, width, height)
        self._cache[key] = value
        if len(self._cache) > self.capacity:
            self._cache.popitem(last=False)
        return value

    def width(self, text: str, size: float, bold: bool) -> float:
        """Width in pixels the text will have (measured once)."""
        key = (text, size, bold)
        if key not in self._widths:
            from matplotlib.backends.backend_agg import RendererAgg
            from matplotlib.font_manager import FontProperties

            prop = FontProperties(size=size, weight="bold" if bold else "normal")
            probe = RendererAgg(1, 1, self.dpi)
            self._widths[key] = probe.get_text_width_height_descent(text, prop, ismath=False)[0]
        return self._widths[key]

    @staticmethod
    def paste(buffer: np.ndarray, sprite, left: int, top: int, clip: tuple[int, int, int, int]):
        """Alpha-blend a sprite into an RGBA uint8 buffer at (left, top), within clip (x0, y0, x1, y1)."""
        rgb, alpha, width, height = sprite
        x0, y0 = max(left, clip[0]), max(top, clip[1])
        x1, y1 = min(left + width, clip[2]), min(top + height, clip[3])
        if x1 <= x0 or y1 <= y0:
            return
        region = buffer[y0:y1, x0:x1, :3]
        sx, sy = x0 - left, y0 - top
        a = alpha[sy : sy + y1 - y0, sx : sx + x1 - x0]
        blended = region * (1.0 - a) + rgb[sy : sy + y1 - y0, sx : sx + x1 - x0]
        region[...] = blended.astype(np.uint8)


class CriticalPathExplorer(Explorer):
    """Pick an op, drag its duration: the Gantt chart with the critical path, and T(d) with its kink (cost01).

    Built for speed (well under 100 ms per change): a fixed layout on an Agg canvas without a
    layout engine, and blitting. Everything that never changes — the Gantt axes on one time scale
    for every duration the slider allows, the T(d) axes on one scale for every op, the key — is
    rendered once. Each op's T(d) curve is drawn once and cached; a slider move then pastes the
    bars, the op names (cached bitmaps), the step-time line and the current point over it. The
    Gantt chart is the simplified form of ``course_lib.figures.graph.gantt``: no path arrows, an
    op's name inside its bar or beside it where free. Changing the op resets the slider to that
    op's measured duration, on a range of 0 to 3x it.
    """

    FIGSIZE = (12.0, 4.3)
    DPI = 80
    GANTT_RECT = (0.125, 0.13, 0.53, 0.68)
    CURVE_RECT = (0.73, 0.13, 0.25, 0.68)
    BAR_HEIGHT = 0.6
    CURVE_CACHE = 64

    def __init__(self, graph: Any, op: str) -> None:
        from course_lib import graph as G

        self.graph = graph
        self.base_step_time = G.step_time(graph)
        sched = G.schedule(graph)
        # Lanes top to bottom in order of first appearance in a topological order, as gantt does.
        self.lanes = list(dict.fromkeys(sched["lane"].astype(str)))
        self._row = {
            op_: self.lanes.index(str(lane))
            for op_, lane in zip(sched["op"], sched["lane"], strict=True)
        }
        self._bounds = {name: G.path_bounds(graph, name) for name in graph.nodes}
        self._canvas: Any = None
        self._curves: OrderedDict[str, Any] = OrderedDict()
        self._resetting = False
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
        """Figure without a layout engine on an Agg canvas; the static axes and key, rendered once."""
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.collections import PolyCollection
        from matplotlib.lines import Line2D
        from matplotlib.patches import Rectangle
        from matplotlib.ticker import FuncFormatter, MaxNLocator

        from course_lib.figures.graph import (
            GANTT_CRITICAL_COLOUR,
            GANTT_CRITICAL_EDGE,
            GANTT_OTHER_COLOUR,
            GANTT_OTHER_EDGE,
        )
        from course_lib.figures.style import text_px, time_unit

        fig = self.figure = Figure(figsize=self.FIGSIZE, dpi=self.DPI)
        self._canvas = FigureCanvasAgg(fig)
        self._sprites = _Sprites(self.DPI)
        gantt_ax, curve_ax = fig.add_axes(self.GANTT_RECT), fig.add_axes(self.CURVE_RECT)
        self.axes = np.array([gantt_ax, curve_ax], dtype=object)

        # One time axis for every op and duration the sliders allow: max over ops of T(3 d0),
        # and one T(d) frame for every op: d from 0 to the largest slider maximum.
        t_max, t_min, d_max = self.base_step_time, self.base_step_time, 0.0
        for name, (a, b) in self._bounds.items():
            top = 1e-3 * self.slider_range(name)[1]
            t_max = max(t_max, a, b + top)
            t_min = min(t_min, max(a, b))
            d_max = max(d_max, top)
        scale, unit = time_unit(t_max)
        self._time_scale, self._time_unit = scale, unit
        fmt = FuncFormatter(lambda t, _pos: f"{t * scale:g}")
        gantt_ax.set_xlim(0.0, 1.03 * t_max)
        gantt_ax.set_ylim(len(self.lanes) - 0.5, -0.5)
        gantt_ax.set_yticks(range(len(self.lanes)), self.lanes)
        gantt_ax.tick_params(axis="y", length=0)
        gantt_ax.xaxis.set_major_locator(MaxNLocator(nbins=8))
        gantt_ax.xaxis.set_major_formatter(fmt)
        gantt_ax.set_xlabel(f"time ({unit})")
        gantt_ax.grid(axis="x", color="#E6E6E6", lw=0.8)
        gantt_ax.set_axisbelow(True)
        for side in ("top", "right", "left"):
            gantt_ax.spines[side].set_visible(False)
        gantt_ax.axvline(self.base_step_time, color="#777777", ls=":", lw=1.3, zorder=1)

        pad = 0.06 * (t_max - t_min) if t_max > t_min else 0.05 * t_max
        curve_ax.set_xlim(0.0, 1.02 * d_max)
        curve_ax.set_ylim(t_min - pad, t_max + pad)
        for axis in (curve_ax.xaxis, curve_ax.yaxis):
            axis.set_major_locator(MaxNLocator(nbins=5))
            axis.set_major_formatter(fmt)
        curve_ax.set_ylabel(f"step time ({unit})")
        curve_ax.grid(color="#E6E6E6", lw=0.8)
        curve_ax.set_axisbelow(True)
        for side in ("top", "right"):
            curve_ax.spines[side].set_visible(False)

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

        # Per-op artists of the T(d) panel (drawn once per op into that op's background).
        self._curve_artists = {
            "flat": curve_ax.plot([], [], color=GANTT_OTHER_EDGE, lw=2.6, animated=True)[0],
            "slope": curve_ax.plot([], [], color=GANTT_CRITICAL_COLOUR, lw=2.6, animated=True)[0],
            "a_line": curve_ax.axhline(0.0, color="#999999", ls="--", lw=0.9, animated=True),
            "kink_line": curve_ax.axvline(0.0, color="#222222", ls=":", lw=1.0, animated=True),
            "kink": curve_ax.plot([], [], "o", color="#222222", ms=5, animated=True)[0],
            "measured": curve_ax.plot(
                [], [], "o", mfc="white", mec="#222222", mew=1.4, ms=7, animated=True
            )[0],
        }
        self._curve_texts = {
            "title": curve_ax.text(
                0.0, 1.03, "", transform=curve_ax.transAxes, fontsize=11, animated=True
            ),
            "xlabel": curve_ax.text(
                0.5,
                -0.13,
                "",
                transform=curve_ax.transAxes,
                ha="center",
                va="top",
                fontsize=10,
                animated=True,
            ),
            "kink": curve_ax.annotate(
                "",
                (0.0, 0.0),
                xytext=(5, -5),
                textcoords="offset points",
                fontsize=8.5,
                animated=True,
            ),
            "a": curve_ax.annotate(
                "",
                (1.0, 0.0),
                xycoords=curve_ax.get_yaxis_transform(),
                xytext=(-2, -3),
                textcoords="offset points",
                ha="right",
                va="top",
                fontsize=8,
                color="#555555",
                animated=True,
            ),
        }
        (self._now,) = curve_ax.plot(
            [], [], "o", color=SELECTED_COLOUR, ms=8, zorder=6, animated=True, gid="what_if:current"
        )

        # Dynamic Gantt artists: animated, so background renders leave them out.
        self._bars = PolyCollection([], animated=True, zorder=2)
        gantt_ax.add_collection(self._bars)
        self._selected = Rectangle(
            (0.0, 0.0), 0.0, 0.0, fill=False, ec=SELECTED_COLOUR, lw=2.4, zorder=6, animated=True
        )
        gantt_ax.add_patch(self._selected)
        self._step_line = gantt_ax.axvline(0.0, color="#222222", ls="--", lw=1.3, animated=True)
        self._canvas.draw()
        self._background = self._canvas.copy_from_bbox(fig.bbox)
        # Pixel geometry of the Gantt axes: where names go, and the box they are clipped to.
        height = self.FIGSIZE[1] * self.DPI
        x0, y0, w, h = self.GANTT_RECT
        self._gantt_clip = (
            round(x0 * width),
            round((1 - y0 - h) * height),
            round((x0 + w) * width),
            round((1 - y0) * height),
        )
        self._px_per_s = w * width / (1.03 * t_max)

    def curve_label(self) -> str:
        """The T(d) panel's axis label for the op shown."""
        return self._curve_texts["xlabel"].get_text()

    def _draw_curve(self, op: str) -> None:
        """Op's T(d) = max(A, B + d) over the static frame, drawn once and then restored from a cache."""
        ax = self.axes[1]
        a, b = self._bounds[op]
        d0 = float(self.graph.nodes[op]["duration"])
        d_hi = 1e-3 * self.slider_range(op)[1]
        kink = a - b
        bend = min(max(kink, 0.0), d_hi)
        scale, unit = self._time_scale, self._time_unit
        art, texts = self._curve_artists, self._curve_texts
        art["flat"].set_data(([0.0, bend], [a, a]) if bend > 0 else ([], []))
        art["slope"].set_data([bend, d_hi], [max(a, b + bend), max(a, b + d_hi)])
        art["a_line"].set_ydata([a, a])
        art["measured"].set_data([d0], [max(a, b + d0)])
        show_kink = 0.0 < kink < d_hi
        art["kink_line"].set_xdata([kink, kink])
        art["kink"].set_data([kink], [a])
        texts["title"].set_text(f"T(d) = max(A, B + d) for {op}")
        texts["xlabel"].set_text(f"duration of {op} ({unit})")
        texts["a"].xy = (1.0, a)
        texts["a"].set_text(f"A = {a * scale:.4g} {unit}")
        if show_kink:  # the label right of and below the kink, or left of and above it
            right = kink < 0.55 * ax.get_xlim()[1]
            texts["kink"].xy = (kink, a)
            texts["kink"].set_text(f"kink d* = A − B = {kink * scale:.3g} {unit}")
            texts["kink"].set(ha="left" if right else "right", va="top" if right else "bottom")
            texts["kink"].set_position((5, -5) if right else (-5, 5))
        if op in self._curves:  # the artists now describe op; its picture is cached
            self._curves.move_to_end(op)
            self._canvas.restore_region(self._curves[op])
            return
        self._canvas.restore_region(self._background)
        for name in ("a_line", "flat", "slope", "measured"):
            ax.draw_artist(art[name])
        if show_kink:
            ax.draw_artist(art["kink_line"])
            ax.draw_artist(art["kink"])
            ax.draw_artist(texts["kink"])
        for name in ("title", "xlabel", "a"):
            ax.draw_artist(texts[name])
        self._curves[op] = self._canvas.copy_from_bbox(self.figure.bbox)
        if len(self._curves) > self.CURVE_CACHE:
            self._curves.popitem(last=False)

    def _draw_gantt(self, starts, ends, names, crit, op: str, t: float) -> None:
        """Bars, the selected op's outline and the step-time line, then the op names pasted on top."""
        from course_lib.figures.graph import (
            GANTT_CRITICAL_COLOUR,
            GANTT_CRITICAL_EDGE,
            GANTT_OTHER_COLOUR,
            GANTT_OTHER_EDGE,
        )

        ax = self.axes[0]
        h = self.BAR_HEIGHT / 2
        rows = np.array([self._row[n] for n in names])
        verts = np.empty((len(names), 4, 2))
        verts[:, [0, 3], 0] = starts[:, None]
        verts[:, [1, 2], 0] = ends[:, None]
        verts[:, :2, 1] = (rows - h)[:, None]
        verts[:, 2:, 1] = (rows + h)[:, None]
        self._bars.set_verts(verts)
        self._bars.set_facecolors(np.where(crit, GANTT_CRITICAL_COLOUR, GANTT_OTHER_COLOUR))
        self._bars.set_edgecolors(np.where(crit, GANTT_CRITICAL_EDGE, GANTT_OTHER_EDGE))
        self._bars.set_linewidths(np.where(crit, 1.4, 0.8))
        ax.draw_artist(self._bars)

        k = names.index(op)
        self._selected.set_bounds(starts[k], rows[k] - h - 0.08, ends[k] - starts[k], 2 * h + 0.16)
        ax.draw_artist(self._selected)
        self._step_line.set_xdata([t, t])
        ax.draw_artist(self._step_line)

        # Names inside the bar where they fit, else beside its top (or bottom) edge if free.
        buffer = np.asarray(self._canvas.buffer_rgba())
        clip = self._gantt_clip
        px = self._px_per_s
        row_px = (clip[3] - clip[1]) / len(self.lanes)
        taken: dict[int, float] = {}  # gap between rows (row r's top edge = gap r) -> right end, px
        sprites = self._sprites
        for i in np.lexsort((ends, starts)):
            name = names[i]
            left_px = clip[0] + starts[i] * px
            width = (ends[i] - starts[i]) * px
            bold = bool(crit[i])
            centre_y = clip[1] + (rows[i] + 0.5) * row_px
            for size in (8.5, 7.0):
                if sprites.width(name, size, bold) + 6 <= width:
                    colour = "white" if bold else "#1F2A36"
                    sprite = sprites.get(name, size, colour, bold)
                    left = round(left_px + (width - sprite[2]) / 2)
                    sprites.paste(buffer, sprite, left, round(centre_y - sprite[3] / 2), clip)
                    break
            else:
                for gap, top_of in ((rows[i], True), (rows[i] + 1, False)):
                    if left_px + 2 < taken.get(gap, -np.inf) + 4:
                        continue
                    sprite = sprites.get(name, 7.0, "#1F2A36", False)
                    edge = centre_y + (-1 if top_of else 1) * h * row_px
                    top = edge - sprite[3] - 1 if top_of else edge + 1
                    sprites.paste(buffer, sprite, round(left_px + 2), round(top), clip)
                    taken[gap] = left_px + 2 + sprite[2]
                    break

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
        a, b = self._bounds[op]  # A and B do not depend on op's own duration
        names = sched["op"].tolist()
        starts = sched["start"].to_numpy(dtype=float)
        ends = sched["end"].to_numpy(dtype=float)
        crit = np.isin(names, path.ops)

        self._draw_curve(op)
        self._draw_gantt(starts, ends, names, crit, op, t)
        self._now.set_data([d], [t])
        self.axes[1].draw_artist(self._now)

        ms = 1e3
        slack = float(sched["slack"].to_numpy()[names.index(op)])
        margin = b + d - a
        if abs(margin) <= G.SLACK_RTOL * max(a, b + d):
            margin = 0.0
        useful = max(0.0, min(d, margin))  # the cut that still pays: T(d) - T(0)
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

    def png(self) -> bytes:
        """The canvas as an RGB PNG at zlib level 1 (no alpha channel: a quarter less to encode)."""
        from PIL import Image

        width, height = self._canvas.get_width_height()
        rgba = np.asarray(self._canvas.buffer_rgba())
        image = Image.frombuffer("RGB", (width, height), np.ascontiguousarray(rgba[..., :3]))
        buffer = io.BytesIO()
        image.save(buffer, format="png", compress_level=1)
        return buffer.getvalue()


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
