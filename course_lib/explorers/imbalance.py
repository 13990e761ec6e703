"""pipe08's explorer: move the cuts between four stages -> step, critical path, bottleneck, and
what the move from the even split costs and when it pays back."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import ipywidgets as widgets
import numpy as np

from course_lib.explorers.base import Explorer, fmt_ms, metrics_table

NUM_BLOCKS = 14
"""Transformer blocks of the explorer's GPT-like model (gpt_spec; 17 layers with embedding,
output and loss)."""
NUM_STAGES = 4
LINK_BANDWIDTH = 25e9
"""Bytes/s between adjacent stages (activations and moved layers): a synthetic 200 Gb/s link."""
PAUSE = 5.0
"""Seconds to flush and restart around a repartition (an assumption, not a measurement)."""


@functools.lru_cache(maxsize=1)
def _spec() -> Any:
    from course_lib.pipeline.partition import gpt_spec

    return gpt_spec(num_blocks=NUM_BLOCKS)


class ImbalanceExplorer(Explorer):
    """Schedule grid with the critical path outlined, per-stage busy vs on-path bars, and a table
    of step estimates and the repartition's price (pipe08).

    The partition is ``(0, cut_1, cut_2, cut_3, num_layers)``; stage costs come from
    ``stage_forward_backward`` of the GPT-like spec. ``last_metrics`` holds the numbers of the
    table: the simulated step, the average-stage estimate, the slowest-stage shortcut, GPipe's
    formula, the lower bound, the bottleneck and busiest stage, and the move from the even split
    (bytes over the busiest link, cost, gain, break-even steps). Redrawn with fixed axes (no
    layout engine), well under 100 ms per change (benchmarks/bench_imbalance_explorer.py).
    """

    CUTS = ("cut_1", "cut_2", "cut_3")

    def __init__(self, controls: Mapping[str, widgets.ValueWidget]) -> None:
        self.last_metrics: dict[str, Any] = {}
        self._adjusting = False
        super().__init__(controls, self._draw_frame, figsize=(11.0, 3.6), ncols=2,
                         width_ratios=(2.2, 1.0), dpi=72)  # fmt: skip

    def _build(self) -> None:
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        self.figure.set_layout_engine("none")
        self._canvas = FigureCanvasAgg(self.figure)  # png() encodes its buffer: one draw
        grid, bars = self.axes
        grid.set_position((0.06, 0.16, 0.50, 0.70))
        bars.set_position((0.72, 0.16, 0.26, 0.70))

    def _on_change(self, change: Mapping[str, Any]) -> None:
        """Keep the cuts strictly increasing inside 1..n-1 (moving one pushes its neighbours),
        then redraw once."""
        if self._adjusting:
            return
        owner = change.get("owner")
        cuts = [self.controls[c] for c in self.CUTS]
        n = _spec().num_layers
        if owner in cuts:
            k = cuts.index(owner)
            values = [c.value for c in cuts]
            for i in range(k + 1, 3):
                values[i] = max(values[i], values[i - 1] + 1)
            for i in range(k - 1, -1, -1):
                values[i] = min(values[i], values[i + 1] - 1)
            values = [min(max(v, 1 + i), n - 3 + i) for i, v in enumerate(values)]
            self._adjusting = True
            try:
                for c, v in zip(cuts, values, strict=True):
                    c.value = v
            finally:
                self._adjusting = False
        self.update()

    def _frame(self) -> str:
        for ax in self.axes:  # remove the drawn artists but keep the axes and their tick objects
            for artist in [*ax.collections, *ax.patches, *ax.texts, *ax.lines]:
                artist.remove()
            ax.containers.clear()
        html = self._draw_frame(self.axes, **self.values)
        self._canvas.draw()
        return html

    def _draw_frame(
        self, axes: Any, *, schedule: str, num_microbatches: int, cut_1: int, cut_2: int,
        cut_3: int,
    ) -> str:  # fmt: skip
        from course_lib.figures.imbalance import critical_path_grid, stage_time_bars
        from course_lib.pipeline.imbalance import (
            break_even_steps,
            busiest_stage,
            critical_time,
            gpipe_makespan,
            makespan_lower_bound,
            repartition_cost,
            slowest_stage_makespan,
        )
        from course_lib.pipeline.partition import even_blocks

        spec = _spec()
        m = num_microbatches
        bounds = (0, cut_1, cut_2, cut_3, spec.num_layers)
        even = even_blocks(spec, NUM_STAGES)
        run, f, b = _cached_run(schedule, m, bounds)
        base_run, _, _ = _cached_run(schedule, m, tuple(even))
        grid, bars = axes
        on_path = critical_time(run)
        bottleneck, busiest = int(np.argmax(on_path)), busiest_stage(run)
        title = (
            f"{schedule}, m = {m}, layers per stage {np.diff(bounds).tolist()}: "
            f"bottleneck stage {bottleneck} (path outlined)"
        )
        critical_path_grid(run, ax=grid, title=title)
        grid.title.set_fontsize(10)
        grid.get_legend().remove()
        for label in list(grid.texts):  # microbatch numbers: ~40 ms of text per frame
            label.remove()
        stage_time_bars(run, ax=bars)
        bars.get_legend().remove()
        bars.set_title("busy (grey) · on the path", loc="left", fontsize=10)
        for text in list(bars.texts):  # the step and the average are in the table
            text.remove()
        cost = repartition_cost(spec, even, bounds, LINK_BANDWIDTH, pause=PAUSE)
        steps = break_even_steps(cost.total, base_run.makespan, run.makespan)
        average = (m + NUM_STAGES - 1) * float(np.mean(f + b))
        values = {
            "simulated step": run.makespan,
            "average-stage estimate": average,
            "slowest-stage shortcut": slowest_stage_makespan(f, b, m),
            "GPipe formula": gpipe_makespan(f, b, m),
            "lower bound": makespan_lower_bound(f, b, m),
        }
        self.last_metrics = {
            **values,
            "bottleneck stage": bottleneck,
            "busiest stage": busiest,
            "moved bytes (busiest link)": max(cost.link_bytes, default=0.0),
            "move cost": cost.total if cost.moved else 0.0,
            "gain per step": base_run.makespan - run.makespan,
            "break-even steps": steps if cost.moved else 0,
        }
        rows = [(name, fmt_ms(v)) for name, v in values.items()]
        rows.append(("bottleneck / busiest stage", f"{bottleneck} / {busiest}"))
        if cost.moved:
            gain = base_run.makespan - run.makespan
            be = "never (no gain)" if not np.isfinite(steps) else f"{steps:,} steps"
            rows.append((
                f"move from the even split {list(np.diff(even))}",
                f"{len(cost.moved)} layers, {max(cost.link_bytes) / 1e9:.2f} GB on the busiest "
                f"link, {cost.total:.2f} s with the {PAUSE:g} s pause; gain {gain * 1e3:.2f} ms "
                f"per step; break-even {be}",
            ))  # fmt: skip
        else:
            rows.append(("move from the even split", "none: this is the even split"))
        return metrics_table(rows, ("", ""))


@functools.lru_cache(maxsize=256)
def _cached_run(schedule: str, m: int, bounds: tuple[int, ...]) -> Any:
    """(timeline, forward costs, backward costs) of a partition under a schedule."""
    from course_lib.pipeline import gpipe, one_f_one_b, simulate
    from course_lib.pipeline.imbalance import stage_forward_backward

    f, b = stage_forward_backward(_spec(), bounds, LINK_BANDWIDTH)
    generator = {"GPipe": gpipe, "1F1B": one_f_one_b}[schedule]
    return simulate(generator(NUM_STAGES, m), f, b), np.asarray(f), np.asarray(b)


def imbalance_explorer(
    schedule: str = "1F1B", num_microbatches: int = 8, cuts: tuple[int, int, int] | None = None
) -> ImbalanceExplorer:
    """Explorer: schedule, m (1-32) and three cuts of a 17-layer GPT-like model into four stages
    -> step, critical path, bottleneck, and the move's cost and break-even (pipe08).

    ``cuts`` default to the even split of the blocks (``even_blocks``); they must increase
    strictly inside 1..16.
    """
    from course_lib.pipeline.partition import even_blocks

    if schedule not in ("1F1B", "GPipe"):
        raise ValueError(f"schedule must be '1F1B' or 'GPipe', got {schedule!r}")
    if type(num_microbatches) is not int or not 1 <= num_microbatches <= 32:
        raise ValueError(f"num_microbatches must be an int in 1..32, got {num_microbatches!r}")
    n = _spec().num_layers
    values = even_blocks(_spec(), NUM_STAGES)[1:-1] if cuts is None else tuple(cuts)
    if (
        len(values) != 3
        or any(type(c) is not int for c in values)
        or not 0 < values[0] < values[1] < values[2] < n
    ):
        raise ValueError(f"cuts must be three increasing ints in 1..{n - 1}, got {cuts!r}")
    style = {"description_width": "initial"}
    controls: dict[str, widgets.ValueWidget] = {
        "schedule": widgets.ToggleButtons(options=["1F1B", "GPipe"], value=schedule,
                                          description="schedule", style=style),
        "num_microbatches": widgets.IntSlider(value=num_microbatches, min=1, max=32,
                                              description="microbatches m", style=style),
    }  # fmt: skip
    for k, value in enumerate(values, start=1):
        controls[f"cut_{k}"] = widgets.IntSlider(
            value=value, min=1, max=n - 1, description=f"cut {k} (first layer of stage {k})",
            style=style,
        )  # fmt: skip
    return ImbalanceExplorer(controls)
