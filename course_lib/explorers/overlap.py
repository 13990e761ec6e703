"""cost03's explorer: bucketed all-reduce overlapped with backward; exposed communication."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.figure import Figure

from course_lib.explorers.base import Explorer, fmt_pct, metrics_table

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
        first_bucket_bytes: float | None = MIB,
    ) -> None:
        self.layer_backward_times = layer_backward_times
        self.first_bucket_bytes = first_bucket_bytes
        self.layer_grad_bytes = layer_grad_bytes
        self.latency = latency
        self.optimizer_time = optimizer_time
        self._canvas: Any = None
        self._backgrounds: dict[float, Any] = {}
        self._sweeps: dict[tuple[float, float, float], list[Any]] = {}
        self._axis_regions: dict[tuple[float, float], Any] = {}
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
            first_bucket_bytes=self.first_bucket_bytes,
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

        from course_lib.figures.overlap import OVERLAP_COLOURS as C

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
        sw_ax.set_ylim(*self._sweep_limits(steps, serials))
        self._draw_sweep_axis()
        for artist in (self._serial_sweep, self._sweep_line, self._now):
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
                fmt_pct(tl.overlap_ratio) if comm_time > 0 else "—",
                f"O = {overlapped * ms:.2f} ms of {comm_time * ms:.2f} ms communication",
            ),
            (
                "non-overlapped comm, X",
                f"{tl.exposed_comm * ms:.2f} ms",
                "= (1 − ratio) × communication time",
            ),
            (
                "comm on the critical path, E",
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

    @staticmethod
    def _sweep_limits(steps: np.ndarray, serials: np.ndarray) -> tuple[float, float]:
        """y limits of the sweep panel: the data with a 6 % margin, snapped outwards to a grid of
        half a power of ten of the span, so that many control states share one y axis."""
        lo, hi = float(min(steps.min(), serials.min())), float(max(steps.max(), serials.max()))
        pad = 0.06 * (hi - lo) if hi > lo else 0.01 * hi
        lo, hi = lo - pad, hi + pad
        grid = 10.0 ** np.floor(np.log10(hi - lo)) / 2
        return float(np.floor(lo / grid) * grid), float(np.ceil(hi / grid) * grid)

    def _draw_sweep_axis(self) -> None:
        """Draw the sweep panel's y axis (ticks, labels, grid), from a cache of rendered regions
        keyed by its limits: text is the costliest thing to draw."""
        sw_ax = self.axes[1]
        key = sw_ax.get_ylim()
        region = self._axis_regions.get(key)
        if region is not None:
            self._canvas.restore_region(region)
            return
        sw_ax.draw_artist(sw_ax.yaxis)
        if len(self._axis_regions) >= 256:
            self._axis_regions.pop(next(iter(self._axis_regions)))
        self._axis_regions[key] = self._canvas.copy_from_bbox(self._sweep_bbox())

    def _sweep_bbox(self) -> Any:
        """Pixel box of the sweep panel and its y tick labels (right of the timeline's labels)."""
        from matplotlib.transforms import Bbox

        x0, y0, w, h = self.SWEEP_RECT
        fig_w, fig_h = self.FIGSIZE[0] * self.DPI, self.FIGSIZE[1] * self.DPI
        left = self.TIMELINE_RECT[0] + self.TIMELINE_RECT[2] + 0.02
        return Bbox.from_extents(
            left * fig_w, (y0 - 0.02) * fig_h, (x0 + w) * fig_w + 2, (y0 + h + 0.03) * fig_h
        )

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
    first_bucket_bytes: float | None = MIB,
) -> OverlapExplorer:
    """Explorer: bucket cap, bandwidth, contention c and c′ -> timeline, step time, overlap (cost03).

    Defaults: :func:`course_lib.overlap.transformer_grad_tensors` (24 layers, h = 1024, fp32
    gradients, 3.2 ms of backward per layer), 50 µs per all-reduce, and an optimizer step of
    7 passes over the gradient bytes at 1.5 TB/s (as course_lib.tracegen), and DDP's 1 MiB first
    bucket (``first_bucket_bytes``; None gives the first bucket the slider's cap). Sliders: bucket
    cap (MiB, DDP's rule), all-reduce algorithm bandwidth 4-50 GB/s, c and c′ in 0-1.5.
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
    first = (
        None
        if first_bucket_bytes is None
        else _scalar(first_bucket_bytes, "first_bucket_bytes", positive=True)
    )
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
        first_bucket_bytes=first,
    )
