"""cost08's explorer: global batch on a fixed cluster -> throughput, steps and time to target."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.figure import Figure

from course_lib.explorers.base import Explorer, metrics_table

NOISE_SCALE_OPTIONS = tuple(2**p for p in range(8, 17))
"""Gradient noise scales B_noise (examples) the explorer offers: 256 to 65,536."""
DEVICE_OPTIONS = tuple(2**p for p in range(3, 11))
"""Device counts N the explorer offers: 8 to 1,024."""
MAX_ACCUMULATION = 256
"""Largest number k of microbatches per device per step the explorer sweeps."""


class BatchTradeoffExplorer(Explorer):
    """B_noise, all-reduce time and N -> throughput, steps and time to target against B (cost08).

    The global batch is B = N·b·k for k = 1..MAX_ACCUMULATION (gradient accumulation); step time
    k·t_micro + t_allreduce; steps S_min(1 + B_noise/B) (McCandlish et al. 2018); time to target
    = steps × step time. Lines and markers persist and only their data change, on a fixed layout
    without a layout engine (< 50 ms per change).
    """

    FIGSIZE = (11.0, 3.8)
    DPI = 72

    def __init__(
        self,
        controls: Mapping[str, widgets.ValueWidget],
        *,
        micro_batch: int,
        micro_time: float,
        min_steps: float,
    ) -> None:
        self.micro_batch = micro_batch
        self.micro_time = micro_time
        self.min_steps = min_steps
        self.last_model: dict[str, Any] = {}
        super().__init__(controls, self._draw_frame, figsize=self.FIGSIZE, dpi=self.DPI)

    def model(self, noise_scale: float, allreduce_time: float, num_devices: int) -> dict[str, Any]:
        """Arrays over k: batch, step time, throughput, steps, time; and the best k (1-based)."""
        from course_lib.scaling import best_accumulation_steps, steps_to_target

        k = np.arange(1, MAX_ACCUMULATION + 1, dtype=float)
        batch = num_devices * self.micro_batch * k
        step = k * self.micro_time + allreduce_time
        steps = steps_to_target(batch, self.min_steps, noise_scale)
        best = best_accumulation_steps(
            num_devices,
            self.micro_batch,
            self.micro_time,
            allreduce_time,
            noise_scale,
            MAX_ACCUMULATION,
        )
        return {
            "batch": batch,
            "step_time": step,
            "throughput": batch / step,
            "steps": steps,
            "time": steps * step,
            "best": best,
        }

    def _build(self) -> None:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.ticker import FixedLocator, NullFormatter

        from course_lib.figures.scaling import SCALING_COLOURS as C

        fig = self.figure = Figure(figsize=self.FIGSIZE, dpi=self.DPI)
        self._canvas = FigureCanvasAgg(fig)
        self._backgrounds: dict[int, Any] = {}
        left = fig.add_axes((0.06, 0.15, 0.38, 0.72))
        right = fig.add_axes((0.56, 0.15, 0.40, 0.72))
        self.axes = np.array([left, right], dtype=object)

        def line(ax: Any, *args: Any, **kw: Any) -> Any:
            (artist,) = ax.plot(*args, animated=True, **kw)
            return artist

        self._throughput = line(left, [], [], color=C["throughput"], lw=2)
        self._steps = line(left, [], [], color=C["steps"], lw=2)
        self._time = line(right, [], [], color=C["time"], lw=2)
        self._best = line(right, [], [], "o", ms=10, mfc="none", mec="#222222", mew=2)
        self._noise = right.axvline(1.0, color=C["ideal"], ls=":", lw=1.5, animated=True)
        self._noise_left = left.axvline(1.0, color=C["ideal"], ls=":", lw=1.5, animated=True)
        # The key as static lines outside the data range (drawn once, in the background).
        left.plot([], [], color=C["throughput"], lw=2, label="throughput ÷ its maximum")
        left.plot([], [], color=C["steps"], lw=2, label="steps to target ÷ steps at k = 1")
        for ax in (left, right):
            ax.set_xscale("log", base=2)
            ax.set_xlabel("global batch B (examples)")
            ax.grid(alpha=0.3)
        left.set_ylim(0.0, 1.05)
        left.legend(frameon=False, loc="center right", fontsize=9)
        left.set_title("throughput and steps vs B (dotted: B_noise)", loc="left", fontsize=10)
        right.set_yscale("log")
        right.set_ylim(0.95, 20.0)
        ticks = [1, 1.5, 2, 3, 5, 10, 20]
        right.yaxis.set_major_locator(FixedLocator(ticks))
        right.yaxis.set_minor_formatter(NullFormatter())
        right.set_yticks(ticks, [f"{t:g}×" for t in ticks])
        right.set_ylabel("time to target ÷ the fastest")
        right.set_title("time to target; circle: the fastest B", loc="left", fontsize=10)

    def _background(self, num_devices: int) -> Any:
        """The static figure (axes, ticks, key) for the x range of one device count, cached."""
        if num_devices not in self._backgrounds:
            lo = num_devices * self.micro_batch / 1.2
            hi = num_devices * self.micro_batch * MAX_ACCUMULATION * 1.2
            for ax in self.axes:
                ax.set_xlim(lo, hi)
            self._canvas.draw()
            self._backgrounds[num_devices] = self._canvas.copy_from_bbox(self.figure.bbox)
        return self._backgrounds[num_devices]

    def _frame(self) -> str:
        return self._draw_frame(self.axes, **self.values)  # no clearing: artists persist

    def _draw_frame(
        self, axes: Any, *, noise_scale: int, allreduce_time: float, num_devices: int
    ) -> str:
        del axes
        m = self.model(noise_scale, allreduce_time, num_devices)
        b, i = m["batch"], m["best"] - 1
        hours = m["time"] / 3600.0
        background = self._background(num_devices)
        lo = num_devices * self.micro_batch / 1.2
        for ax in self.axes:
            ax.set_xlim(lo, lo * 1.2 * MAX_ACCUMULATION * 1.2)
        self._canvas.restore_region(background)
        self._throughput.set_data(b, m["throughput"] / m["throughput"].max())
        self._steps.set_data(b, m["steps"] / m["steps"][0])
        self._time.set_data(b, m["time"] / m["time"][i])
        self._best.set_data([b[i]], [1.0])
        self._noise.set_xdata([noise_scale] * 2)
        self._noise_left.set_xdata([noise_scale] * 2)
        left, right = self.axes
        for artist in (self._noise_left, self._throughput, self._steps):
            left.draw_artist(artist)
        for artist in (self._noise, self._time, self._best):
            right.draw_artist(artist)
        j = len(b) - 1  # the largest batch: the highest throughput
        self.last_model = m
        optimum = np.sqrt(
            noise_scale * num_devices * self.micro_batch * allreduce_time / self.micro_time
        )
        rows = [
            (
                "fastest to target",
                f"<b>B = {int(b[i]):,}</b> (k = {i + 1})",
                f"{hours[i]:.1f} h",
                f"{m['throughput'][i]:,.0f}",
                f"{m['steps'][i]:,.0f}",
            ),
            (
                "highest throughput",
                f"B = {int(b[j]):,} (k = {j + 1})",
                f"{hours[j]:.1f} h",
                f"{m['throughput'][j]:,.0f}",
                f"{m['steps'][j]:,.0f}",
            ),
            (
                "continuous optimum B* = √(B_noise·N·b·t_ar / t_micro)",
                f"{optimum:,.0f}",
                "",
                "",
                "",
            ),
        ]
        header = ("", "global batch", "time to target", "examples/s", "steps")
        return metrics_table(rows, header)


def batch_tradeoff_explorer(
    noise_scale: int = 4096,
    allreduce_time: float = 0.6,
    num_devices: int = 64,
    micro_batch: int = 8,
    micro_time: float = 0.25,
    min_steps: float = 20_000,
) -> BatchTradeoffExplorer:
    """Explorer: B_noise, all-reduce time, N -> throughput, steps, time to target vs B (cost08).

    Sliders: the gradient noise scale B_noise (256-65,536 examples), the all-reduce time per step
    (0-2 s) and the device count N (8-1,024). Fixed: micro_batch b examples per microbatch,
    micro_time t_micro seconds per microbatch, min_steps S_min.
    """
    from course_lib.scaling import _positive

    if noise_scale not in NOISE_SCALE_OPTIONS:
        raise ValueError(f"noise_scale must be one of {NOISE_SCALE_OPTIONS}, got {noise_scale!r}")
    if num_devices not in DEVICE_OPTIONS:
        raise ValueError(f"num_devices must be one of {DEVICE_OPTIONS}, got {num_devices!r}")
    ar = float(allreduce_time)
    if not 0.0 <= ar <= 2.0:
        raise ValueError(f"allreduce_time must be in [0, 2] s, got {allreduce_time!r}")
    b = int(_positive(micro_batch, "micro_batch"))
    t = _positive(micro_time, "micro_time")
    s = _positive(min_steps, "min_steps")
    wide = {"description_width": "initial"}
    controls = {
        "noise_scale": widgets.SelectionSlider(
            options=list(NOISE_SCALE_OPTIONS),
            value=noise_scale,
            description="B_noise",
            style=wide,
        ),
        "allreduce_time": widgets.FloatSlider(
            value=ar, min=0.0, max=2.0, step=0.05, description="all-reduce (s)", style=wide
        ),
        "num_devices": widgets.SelectionSlider(
            options=list(DEVICE_OPTIONS), value=num_devices, description="devices N", style=wide
        ),
    }
    return BatchTradeoffExplorer(controls, micro_batch=b, micro_time=t, min_steps=s)
