"""cost09's explorer: a torch.profiler capture schedule priced over a run, against a 5 % budget."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.figure import Figure

from course_lib.explorers.base import Explorer, metrics_table

NUM_STEPS = 1000
"""Steps of the explorer's run."""
STEP_TIME = 0.5
"""Uninstrumented step time of the explorer's run (s)."""
SKIP_FIRST = 10
"""torch.profiler.schedule's skip_first in the explorer (start-up steps never profiled)."""
BUDGET = 0.05
"""The overhead budget drawn and judged against (a fraction of the uninstrumented run)."""


class CaptureExplorer(Explorer):
    """wait / warmup / active / repeat, the observer's cost per step and the save time -> the
    schedule's steps and the run's cumulative overhead against the budget (cost09).

    The model is :func:`course_lib.profiling.capture_overhead` (and ``schedule_actions``). For
    speed the figure has fixed axes on an Agg canvas and persistent artists: a change updates an
    image's data, one line and two texts, then redraws.
    """

    FIGSIZE = (10.0, 3.8)
    DPI = 72

    def __init__(self, controls: Mapping[str, widgets.ValueWidget]) -> None:
        self._canvas: Any = None
        self.last_plan: Any = None
        super().__init__(controls, self._draw_frame, figsize=self.FIGSIZE, dpi=self.DPI)
        first = [self.controls[k] for k in ("wait", "warmup", "active", "repeat")]
        second = [self.controls[k] for k in ("overhead_pct", "save_time")]
        self.widget = widgets.VBox(
            [widgets.HBox(first), widgets.HBox(second), self.metrics, self.image]
        )

    def _build(self) -> None:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.colors import ListedColormap
        from matplotlib.patches import Patch

        from course_lib.figures.profiling import PROFILING_COLOURS as C
        from course_lib.profiling import ACTIONS

        fig = self.figure = Figure(figsize=self.FIGSIZE, dpi=self.DPI)
        self._canvas = FigureCanvasAgg(fig)
        strip = fig.add_axes((0.08, 0.72, 0.9, 0.12))
        cum = fig.add_axes((0.08, 0.13, 0.9, 0.47), sharex=strip)
        self.axes = np.array([strip, cum], dtype=object)
        cmap = ListedColormap([C[a] for a in ACTIONS])
        self._image = strip.imshow(
            np.zeros((1, NUM_STEPS)),
            aspect="auto",
            cmap=cmap,
            vmin=-0.5,
            vmax=3.5,
            interpolation="nearest",
            extent=(-0.5, NUM_STEPS - 0.5, 0, 1),
        )
        strip.set_yticks([])
        strip.tick_params(labelbottom=False)
        strip.legend(
            handles=[Patch(color=C[a], label=a) for a in ACTIONS],
            ncols=4,
            frameon=False,
            fontsize=9,
            loc="lower left",
            bbox_to_anchor=(0, 1.0),
        )
        steps = np.arange(1, NUM_STEPS + 1)
        (self._line,) = cum.plot(steps, steps * 0.0, color=C["setprofile"], lw=2)
        cum.axhline(100 * BUDGET, color="#333333", ls="--", lw=1)
        cum.text(NUM_STEPS, 100 * BUDGET, f"budget {BUDGET:.0%} ", ha="right", va="bottom")
        self._verdict = cum.text(0.01, 0.95, "", transform=cum.transAxes, va="top", fontsize=10)
        cum.set_xlim(-0.5, NUM_STEPS - 0.5)
        cum.set_ylim(0, 20)
        cum.set_xlabel("step")
        cum.set_ylabel("overhead so far (%)")
        cum.grid(alpha=0.3)
        for side in ("top", "right"):
            cum.spines[side].set_visible(False)

    def _draw_frame(
        self,
        axes: Any,
        *,
        wait: int,
        warmup: int,
        active: int,
        repeat: int,
        overhead_pct: float,
        save_time: float,
    ) -> str:
        from course_lib.profiling import ACTIONS, capture_overhead, schedule_actions

        del axes
        o = overhead_pct / 100
        kw = {"wait": wait, "warmup": warmup, "active": active, "repeat": repeat}
        actions = schedule_actions(NUM_STEPS, skip_first=SKIP_FIRST, **kw)
        plan = capture_overhead(NUM_STEPS, STEP_TIME, o, save_time, skip_first=SKIP_FIRST, **kw)
        self.last_plan = plan
        codes = np.select([actions == a for a in ACTIONS], list(range(len(ACTIONS))))
        self._image.set_data(codes[None, :].astype(float))
        # cumulative added time over the uninstrumented time elapsed so far
        extra = np.where(codes > 0, o * STEP_TIME, 0.0) + np.where(codes == 3, save_time, 0.0)
        if codes[-1] == 2:  # a window cut short by the end of the run is saved at stop
            extra[-1] += save_time
        steps = np.arange(1, NUM_STEPS + 1)
        cumulative = 100 * np.cumsum(extra) / (steps * STEP_TIME)
        self._line.set_ydata(cumulative)
        top = max(20.0, float(cumulative.max()) * 1.1)
        self.axes[1].set_ylim(0, top)
        ok = plan.overhead_fraction <= BUDGET
        self._verdict.set_text(
            f"whole run: {plan.overhead_fraction:.2%} — "
            + ("within budget" if ok else "over budget")
        )
        self._verdict.set_color("#006D4E" if ok else "#B23C00")
        self._canvas.draw()
        rows = [
            ("steps recorded (in saved traces)", f"<b>{plan.recorded_steps}</b>"),
            ("steps with the profiler on (warmup + active)", f"{plan.observed_steps}"),
            ("traces saved", f"{plan.saves}"),
            (
                "overhead of the run",
                f"<b>{plan.overhead_fraction:.2%}</b> = {plan.overhead_time:.1f} s of "
                f"{NUM_STEPS * STEP_TIME:.0f} s",
            ),
        ]
        return metrics_table(rows, ("", ""))

    def _frame(self) -> str:
        return self._draw_frame(self.axes, **self.values)


def capture_explorer(
    wait: int = 40,
    warmup: int = 2,
    active: int = 4,
    repeat: int = 0,
    overhead_pct: float = 40.0,
    save_time: float = 3.0,
) -> CaptureExplorer:
    """The cost09 explorer: a 1,000-step run of 0.5 s steps with skip_first = 10 (the sliders set
    the rest of torch.profiler.schedule, the cost per profiled step and per saved trace)."""
    style = {"description_width": "initial"}
    controls = {
        "wait": widgets.IntSlider(value=wait, min=0, max=200, step=5, description="wait"),
        "warmup": widgets.IntSlider(value=warmup, min=0, max=5, description="warmup"),
        "active": widgets.IntSlider(value=active, min=1, max=50, description="active"),
        "repeat": widgets.IntSlider(
            value=repeat, min=0, max=10, description="repeat (0 = forever)", style=style
        ),
        "overhead_pct": widgets.FloatSlider(
            value=overhead_pct,
            min=0.0,
            max=200.0,
            step=5.0,
            description="cost per profiled step (%)",
            style=style,
        ),
        "save_time": widgets.FloatSlider(
            value=save_time, min=0.0, max=20.0, step=0.5, description="save (s)", style=style
        ),
    }
    return CaptureExplorer(controls)
