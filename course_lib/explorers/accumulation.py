"""pipe06's explorer: step time against the number of microbatches for a fixed batch, from a
kernel-efficiency curve and the pipeline bubble."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import ipywidgets as widgets
import numpy as np

from course_lib.explorers.base import Explorer, metrics_table

BATCH_OPTIONS: tuple[int, ...] = (8, 16, 32, 64, 128, 256, 512, 1024)
"""Batch sizes (sequences per pipeline per step) the explorer offers: powers of two, so every
power-of-two microbatch size divides the batch."""

ALL_SIZES: tuple[int, ...] = tuple(2**k for k in range(11))
"""Microbatch sizes the explorer tabulates: 1, 2, 4, ..., 1024 (those up to B divide it)."""

MAX_SIMULATED_ACTIONS = 8192
"""The explorer simulates the best m (1F1B) when its schedule has at most this many actions."""


@functools.lru_cache(maxsize=256)
def _simulated_step(num_stages: int, num_microbatches: int, microbatch_time: float) -> float:
    """Makespan of simulate(one_f_one_b(p, m), t/3, 2t/3): the closed form's check."""
    from course_lib.pipeline import one_f_one_b, simulate

    schedule = one_f_one_b(num_stages, num_microbatches)
    return simulate(schedule, microbatch_time / 3, 2 * microbatch_time / 3).makespan


class AccumulationExplorer(Explorer):
    """Stages p, batch B and the fixed cost per microbatch t_0 -> step time (m + p − 1)·t(B/m)
    for every power-of-two microbatch size, split into compute and bubble, and the kernel
    efficiency curve (pipe06).

    t(b) = t_0 + b·t_1 is one stage's forward + backward of a microbatch of b sequences, with
    t_1 = ``sample_time`` fixed. ``last_metrics`` holds the best m, its step time, the continuous
    optimum m* and the simulator's step at the best m (NaN when not simulated).
    """

    def __init__(self, controls: Mapping[str, widgets.ValueWidget], sample_time: float) -> None:
        self.sample_time = sample_time
        self.last_metrics: dict[str, float] = {}
        super().__init__(controls, self._draw_frame, figsize=(6.4, 3.8), dpi=72)

    def _build(self) -> None:
        """Two Agg canvases side by side: the step-time bars, redrawn in full (their axes follow
        B and p), and the efficiency panel over every size 1..1024, drawn once and blitted."""
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        from course_lib.figures.accumulation import efficiency_artists, step_time_artists

        dpi = self.figure.dpi
        fig = self.figure = Figure(figsize=(6.4, 3.8), dpi=dpi)
        self._canvas = FigureCanvasAgg(fig)
        ax = fig.add_axes((0.11, 0.15, 0.86, 0.75))
        self._bars = step_time_artists(ax)
        eff_fig = Figure(figsize=(3.6, 3.8), dpi=dpi)
        self._eff_canvas = FigureCanvasAgg(eff_fig)
        ax_eff = eff_fig.add_axes((0.2, 0.15, 0.75, 0.75))
        self._eff = efficiency_artists(ax_eff, ALL_SIZES)
        for artist in (self._eff["efficiency"], self._eff["best_size"]):
            artist.set_animated(True)
        self._eff_canvas.draw()
        self._eff_background = self._eff_canvas.copy_from_bbox(eff_fig.bbox)
        self.axes = np.array([ax, ax_eff], dtype=object)

    def _frame(self) -> str:
        return self._draw_frame(self.axes, **self.values)

    def _draw_frame(
        self, axes: Any, *, num_stages: int, batch_size: int, fixed_time_ms: float
    ) -> str:
        from course_lib.figures.accumulation import update_efficiency, update_step_time_bars
        from course_lib.pipeline.accumulation import (
            best_num_microbatches,
            continuous_best_num_microbatches,
            kernel_efficiency,
            microbatch_time,
        )

        p, big_b, t0, t1 = int(num_stages), int(batch_size), fixed_time_ms * 1e-3, self.sample_time
        table = {b: microbatch_time(b, t0, t1) for b in ALL_SIZES if b <= big_b}
        times = update_step_time_bars(self._bars, big_b, p, table)
        self._canvas.draw()
        best = best_num_microbatches(big_b, p, table)
        efficiency = [kernel_efficiency(b, t0, t1) for b in ALL_SIZES]
        self._eff_canvas.restore_region(self._eff_background)
        for artist in update_efficiency(self._eff, ALL_SIZES, efficiency, big_b // best):
            self._eff["ax"].draw_artist(artist)
        star = continuous_best_num_microbatches(big_b, p, t0, t1)
        simulated = float("nan")
        if 2 * p * best <= MAX_SIMULATED_ACTIONS:
            simulated = _simulated_step(p, best, table[big_b // best])
        self.last_metrics = {
            "best_m": float(best),
            "step_time": times[best],
            "continuous_m": star,
            "simulated": simulated,
            "max_m_step_time": times[big_b],
            "one_microbatch_step_time": times[1],
        }
        bubble = (p - 1) / (best + p - 1)
        check = (
            f"{simulated * 1e3:.2f} ms"
            if simulated == simulated
            else f"not run (over {MAX_SIMULATED_ACTIONS} actions)"
        )
        rows = [
            ("best m", f"{best} microbatch{'es' if best != 1 else ''} of {big_b // best} "
             f"sequence{'s' if big_b // best != 1 else ''}"),  # fmt: skip
            ("step time at the best m", f"{times[best] * 1e3:.2f} ms, bubble {bubble:.0%} of it"),
            ("1F1B simulated at the best m", check),
            ("m = B (size 1): smallest bubble", f"{times[big_b] * 1e3:.2f} ms"),
            ("m = 1 (whole batch): fastest kernels", f"{times[1] * 1e3:.2f} ms"),
            ("continuous optimum √(B(p − 1)t₁/t₀)", "∞ (no fixed cost)" if star == float("inf")
             else f"{star:.1f}"),
        ]  # fmt: skip
        return metrics_table(rows, ("", "")) + (
            f"<i>t(b) = t₀ + b·t₁ with t₁ = {t1 * 1e3:g} ms per sequence: a synthetic curve; "
            "measure yours (one stage, forward + backward, at each microbatch size).</i>"
        )

    def png(self) -> bytes:
        """Both canvases side by side as one RGB PNG (zlib level 1), encoded as pipe02's."""
        from course_lib.explorers.fill_drain import _png_rgb

        left = np.asarray(self._canvas.buffer_rgba())
        right = np.asarray(self._eff_canvas.buffer_rgba())
        return _png_rgb(np.concatenate([left, right], axis=1))


def accumulation_explorer(
    num_stages: int = 8,
    batch_size: int = 64,
    fixed_time: float = 1.5e-3,
    sample_time: float = 0.5e-3,
) -> AccumulationExplorer:
    """Explorer: stages p (1-32), batch B (8-1024 sequences), fixed cost t_0 per microbatch (0-5
    ms) -> step time against m with its bubble, and the kernel efficiency (pipe06).

    One stage's forward + backward of b sequences takes t_0 + b·``sample_time`` seconds.
    """
    from course_lib.pipeline._validate import check_duration, check_int

    p = check_int("num_stages", num_stages)
    if p > 32:
        raise ValueError(f"num_stages must be in 1..32, got {p}")
    if batch_size not in BATCH_OPTIONS:
        raise ValueError(f"batch_size must be one of {BATCH_OPTIONS}, got {batch_size!r}")
    t0 = check_duration("fixed_time", fixed_time)
    if t0 > 5e-3:
        raise ValueError(f"fixed_time must be at most 5 ms (5e-3 s), got {t0}")
    t1 = check_duration("sample_time", sample_time)
    if t1 == 0:
        raise ValueError("sample_time must be > 0 seconds")
    wide = {"description_width": "initial"}
    controls = {
        "num_stages": widgets.IntSlider(value=p, min=1, max=32, description="stages p", style=wide),
        "batch_size": widgets.SelectionSlider(
            options=list(BATCH_OPTIONS), value=batch_size, description="batch B", style=wide
        ),
        "fixed_time_ms": widgets.FloatSlider(
            value=t0 * 1e3,
            min=0.0,
            max=5.0,
            step=0.1,
            readout_format=".1f",
            description="fixed cost t₀ (ms)",
            style=wide,
        ),
    }
    return AccumulationExplorer(controls, t1)
