"""cost10's explorer: simulated repeated runs before/after a change, the bootstrap interval of the
difference, the verdict it supports, and the probability of detecting the change against runs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.figure import Figure

from course_lib.explorers.base import Explorer, metrics_table

# --- cost10: repeated runs, bootstrap interval, runs to detect -------------------------------

BASE_STEP_TIME = 0.100
"""Mean step time before the change (s) of the simulated runs."""
MAX_RUNS = 60
"""Largest number of runs per side the explorer offers (and the power panel's x range)."""
NUM_RESAMPLES = 2000
"""Bootstrap resamples per update (the interval's own Monte Carlo error is ~1 % of its width)."""


class TriageExplorer(Explorer):
    """Noise (cv), true change and runs per side -> simulated runs, bootstrap CI, power (cost10).

    The runs are seeded normal draws: before ~ N(T, (cv·T)²), after ~ N(T(1 + δ), (cv·T)²) with
    T = :data:`BASE_STEP_TIME`. The middle panel is :func:`course_lib.stats.compare` on them (its
    bootstrap interval and verdict); the right panel is :func:`course_lib.stats.detection_power`
    against runs per side, with :func:`course_lib.stats.runs_to_detect` marked. A fixed layout on
    an Agg canvas; the static frame is rendered once and kept as a bitmap, an update moves the
    dynamic artists and draws only them over it (blitting).
    """

    FIGSIZE = (12.0, 3.6)
    DPI = 72

    def __init__(self, controls: Mapping[str, widgets.ValueWidget]) -> None:
        self._canvas: Any = None
        self.last_comparison: Any = None
        self.last_runs_to_detect = 0
        super().__init__(controls, self._draw_frame, figsize=self.FIGSIZE, dpi=self.DPI)

    def simulate(
        self, cv_percent: float, change_percent: float, runs: int, seed: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """The seeded (before, after) run times in seconds of one control state."""
        rng = np.random.default_rng(seed)
        sigma = cv_percent / 100 * BASE_STEP_TIME
        before = rng.normal(BASE_STEP_TIME, sigma, MAX_RUNS)[:runs]
        after = rng.normal(BASE_STEP_TIME * (1 + change_percent / 100), sigma, MAX_RUNS)[:runs]
        return before, after

    def _build(self) -> None:
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        fig = self.figure = Figure(figsize=self.FIGSIZE, dpi=self.DPI)
        self._canvas = FigureCanvasAgg(fig)
        runs_ax = fig.add_axes((0.06, 0.17, 0.25, 0.7))
        ci_ax = fig.add_axes((0.38, 0.17, 0.25, 0.7))
        pw_ax = fig.add_axes((0.71, 0.17, 0.27, 0.7))
        self.axes = np.array([runs_ax, ci_ax, pw_ax], dtype=object)
        self._before = runs_ax.scatter([], [], s=14, color="#56B4E9")
        self._after = runs_ax.scatter([], [], s=14, color="#E69F00")
        (self._mean_b,) = runs_ax.plot([], [], color="#222222", lw=2)
        (self._mean_a,) = runs_ax.plot([], [], color="#222222", lw=2)
        runs_ax.set_xticks([0, 1], ["before", "after"])
        runs_ax.set_xlim(-0.6, 1.6)
        runs_ax.set_ylim(70, 130)
        runs_ax.set_ylabel("run time (ms)")
        runs_ax.set_title("simulated runs; bar = mean", loc="left", fontsize=10)
        ci_ax.axvline(0.0, color="#222222", ls="--", lw=1)
        (self._true,) = ci_ax.plot([], [], "v", color="#CC79A7", ms=9, label="true change")
        (self._ci,) = ci_ax.plot([], [], color="#009E73", lw=6, solid_capstyle="butt")
        (self._point,) = ci_ax.plot([], [], "o", color="#222222", ms=6, label="measured")
        ci_ax.set_xlim(-12, 12)
        ci_ax.set_ylim(-1, 1)
        ci_ax.set_yticks([])
        ci_ax.set_xlabel("mean(after) − mean(before) (% of before)")
        ci_ax.legend(loc="upper left", frameon=False, fontsize=9)
        self._ci_title = ci_ax.set_title("", loc="left", fontsize=10)
        runs_axis = np.arange(2, MAX_RUNS + 1)
        self._runs_axis = runs_axis
        (self._power,) = pw_ax.plot(runs_axis, np.zeros_like(runs_axis, float), color="#0072B2")
        (self._here,) = pw_ax.plot([], [], "o", color="#222222")
        self._need = pw_ax.axvline(0.0, color="#D55E00", ls=":", lw=1.5)
        pw_ax.axhline(0.8, color="#888888", ls=":", lw=1)
        pw_ax.set_xlim(2, MAX_RUNS)
        pw_ax.set_ylim(0, 1.02)
        pw_ax.set_xlabel("runs per side")
        pw_ax.set_ylabel("P(detect the change)")
        self._pw_title = pw_ax.set_title("", loc="left", fontsize=10)
        self._dynamic = [
            self._before,
            self._after,
            self._mean_b,
            self._mean_a,
            self._ci,
            self._point,
            self._true,
            self._ci_title,
            self._power,
            self._here,
            self._need,
            self._pw_title,
        ]
        for artist in self._dynamic:
            artist.set_animated(True)
        self._canvas.draw()  # the static frame, once
        self._background = self._canvas.copy_from_bbox(fig.bbox)

    def _draw_frame(
        self, _axes: Any, cv_percent: float, change_percent: float, runs: int, seed: int
    ) -> str:
        from course_lib.stats import compare, detection_power, runs_to_detect

        before, after = self.simulate(cv_percent, change_percent, runs, seed)
        result = compare(before, after, num_resamples=NUM_RESAMPLES, seed=seed)
        self.last_comparison = result
        jitter = np.random.default_rng(99).uniform(-0.15, 0.15, (2, runs))
        ms_b, ms_a = before * 1e3, after * 1e3
        self._before.set_offsets(np.column_stack([jitter[0], ms_b]))
        self._after.set_offsets(np.column_stack([1 + jitter[1], ms_a]))
        self._mean_b.set_data([-0.25, 0.25], [ms_b.mean()] * 2)
        self._mean_a.set_data([0.75, 1.25], [ms_a.mean()] * 2)
        pct = 100 / result.mean_before
        self._ci.set_data([result.ci_low * pct, result.ci_high * pct], [0, 0])
        self._point.set_data([(result.mean_after - result.mean_before) * pct], [0])
        self._true.set_data([change_percent], [0.35])
        self._ci_title.set_text(f"95% bootstrap interval → {result.verdict}")
        if change_percent != 0:
            power = detection_power(self._runs_axis, change_percent / 100, cv_percent / 100)
            need = runs_to_detect(change_percent / 100, cv_percent / 100)
            here = float(detection_power(runs, change_percent / 100, cv_percent / 100))
        else:
            power = np.full(self._runs_axis.shape, 0.025)
            need, here = 0, 0.025
        self.last_runs_to_detect = need
        self._power.set_ydata(power)
        self._here.set_data([runs], [here])
        self._need.set_xdata([need, need] if need <= MAX_RUNS else [np.nan, np.nan])
        self._pw_title.set_text(
            f"{abs(change_percent):.1f} % change at cv {cv_percent:.1f} %: "
            + (f"{need} runs for 80 %" if need else "nothing to detect")
        )
        self._canvas.restore_region(self._background)
        for artist in self._dynamic:
            artist.axes.draw_artist(artist)
        rows = [
            ("relative change (measured)", f"{result.relative_change:+.2%}"),
            (
                "95% interval of the difference",
                f"[{result.ci_low * 1e3:+.2f}, {result.ci_high * 1e3:+.2f}] ms",
            ),
            ("effect size (Cohen's d)", f"{result.effect_size:+.2f}"),
            ("verdict", result.verdict),
            ("P(detect) at these runs", f"{here:.0%}"),
            ("runs per side for 80 %", str(need) if need else "—"),
        ]
        return metrics_table(rows, ("quantity", "value"))

    def _frame(self) -> str:
        return self._draw(self.axes, **self.values)


def triage_explorer() -> TriageExplorer:
    """The cost10 explorer: noise (cv %), true change (%), runs per side, seed."""
    style = {"description_width": "initial"}
    layout = widgets.Layout(width="260px")
    controls = {
        "cv_percent": widgets.FloatSlider(
            value=3.0,
            min=0.5,
            max=10.0,
            step=0.5,
            description="noise cv (%)",
            style=style,
            layout=layout,
        ),
        "change_percent": widgets.FloatSlider(
            value=2.0,
            min=-5.0,
            max=10.0,
            step=0.5,
            description="true change (%)",
            style=style,
            layout=layout,
        ),
        "runs": widgets.IntSlider(
            value=10,
            min=3,
            max=MAX_RUNS,
            description="runs per side",
            style=style,
            layout=layout,
        ),
        "seed": widgets.IntSlider(
            value=0,
            min=0,
            max=30,
            description="seed",
            style=style,
            layout=layout,
        ),
    }
    return TriageExplorer(controls)
