"""Unequal-stage figures (pipe08): a schedule grid with its critical path outlined, each stage's
busy time against its compute on the critical path, and the break-even of a repartition."""

from __future__ import annotations

from typing import TYPE_CHECKING

import matplotlib.pyplot as plt  # noqa: F401  (used by the plotting functions below)
import numpy as np
from matplotlib.patches import Patch

from course_lib.figures.pipeline import (
    IDLE_COLOUR,
    PIPELINE_LINE_COLOURS,
    SCHEDULE_COLOURS,
    schedule_grid,
)
from course_lib.figures.style import time_unit
from course_lib.validate import number

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from course_lib.pipeline import Timeline

PATH_EDGE = "black"
"""Outline of the actions on the critical path."""
BUSY_COLOUR = "#BBBBBB"
"""Bars of each stage's busy time (grey: not all of it sets the step)."""
PATH_COLOUR = PIPELINE_LINE_COLOURS[1]
"""Bars of each stage's compute on the critical path (vermillion)."""


def critical_path_grid(
    timeline: Timeline, ax: Axes | None = None, title: str | None = None
) -> Axes:
    """Schedule grid with the critical path outlined: its actions redrawn on top with a black
    edge (gids ``path:F``, ``path:B``), every other action faded (pipe08).

    The path is :func:`course_lib.pipeline.imbalance.critical_path` at zero latency; the default
    title names the bottleneck stage (most compute on the path) and the busiest stage.
    """
    from course_lib.pipeline.imbalance import bottleneck_stage, busiest_stage, critical_path

    path = critical_path(timeline)
    if title is None:
        schedule = timeline.schedule
        scale, unit = time_unit(timeline.makespan)
        title = (
            f"{schedule.name or 'schedule'}: step {timeline.makespan * scale:.3g} {unit}; "
            f"critical path outlined — bottleneck stage {bottleneck_stage(timeline)}, "
            f"busiest stage {busiest_stage(timeline)}"
        )
    ax = schedule_grid(timeline, ax=ax, title=title)
    for boxes in ax.collections:
        if not boxes.get_gid().endswith("idle"):
            boxes.set_alpha(0.3)
    for (kind, rank), group in path.groupby(["kind", "rank"]):
        boxes = ax.broken_barh(
            np.column_stack([group["start"], group["end"] - group["start"]]),
            (rank - 0.4, 0.8),
            zorder=2,
            facecolors=SCHEDULE_COLOURS[kind],
            edgecolors=PATH_EDGE,
            linewidths=1.4,
        )
        boxes.set_gid(f"path:{kind}")
    legend = ax.get_legend()
    handles = list(legend.legend_handles) if legend is not None else []
    handles += [
        Patch(facecolor="white", edgecolor=PATH_EDGE, linewidth=1.4, label="on the critical path"),
        Patch(facecolor=SCHEDULE_COLOURS["F"], alpha=0.3, label="off the path (faded)"),
    ]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return ax


def stage_time_bars(
    timeline: Timeline, lower_bound: float | None = None, ax: Axes | None = None
) -> Axes:
    """Per stage: busy time (grey, gid ``busy``) beside compute on the critical path (vermillion,
    gid ``on-path``), with the step and the average-stage estimate as lines (pipe08).

    The average estimate is (m + p − 1) × the mean of f_s + b_s, what balanced stages with the
    same total work would take (gid ``average``); the step (gid ``step``) is the makespan.
    ``lower_bound`` (s), if given, is drawn dotted (gid ``bound``), e.g.
    :func:`course_lib.pipeline.imbalance.makespan_lower_bound`.
    """
    from course_lib.pipeline.imbalance import critical_time, stage_busy

    busy = np.asarray(stage_busy(timeline))
    on_path = np.asarray(critical_time(timeline))
    schedule = timeline.schedule
    p, m = schedule.num_stages, schedule.num_microbatches
    average = (m + p - 1) * busy.mean() / m
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 3.4), layout="constrained")
    scale, unit = time_unit(timeline.makespan)
    x = np.arange(p)
    width = 0.38
    ax.bar(x - width / 2, busy * scale, width, color=BUSY_COLOUR, label="busy time", gid="busy")
    ax.bar(x + width / 2, on_path * scale, width, color=PATH_COLOUR, label="on the critical path",
           gid="on-path")  # fmt: skip
    ax.axhline(timeline.makespan * scale, color="black", lw=1.5, gid="step",
               label=f"step {timeline.makespan * scale:.4g} {unit}")  # fmt: skip
    if lower_bound is not None:
        bound = number(lower_bound, "lower_bound (s)")
        ax.axhline(bound * scale, color="black", lw=1.2, ls=":", gid="bound",
                   label=f"lower bound {bound * scale:.4g} {unit}")  # fmt: skip
    ax.axhline(average * scale, color="black", lw=1.2, ls="--", gid="average",
               label=f"average-stage estimate {average * scale:.4g} {unit}")  # fmt: skip
    ax.set_xticks(x, [f"stage {s}" for s in x])
    ax.set_xlim(-0.6, p - 0.4)
    ax.set_ylim(0, timeline.makespan * scale * 1.45)
    ax.set_ylabel(f"time ({unit})")
    handles, labels = ax.get_legend_handles_labels()
    order = [labels.index(x) for x in ("busy time", "on the critical path")]
    order += [i for i in range(len(labels)) if i not in order]  # then step, bound, average
    ax.legend([handles[i] for i in order], [labels[i] for i in order], frameon=False,
              loc="upper left", ncol=3, bbox_to_anchor=(0.0, 1.0), fontsize="small")  # fmt: skip
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.set_title("Where the step goes: each stage's busy time and its share of the critical path",
                 loc="left")  # fmt: skip
    return ax


def break_even_curve(
    cost: float,
    step_before: float,
    step_after: float,
    max_steps: int,
    ax: Axes | None = None,
) -> Axes:
    """Time saved by a repartition after n steps, n·(step_before − step_after) − cost (pipe08).

    The line (gid ``net``) starts at −cost (the transfer and the pause) and crosses zero at the
    break-even step ⌈cost / gain⌉ (marked, gid ``break-even``), as
    :func:`course_lib.pipeline.imbalance.break_even_steps` computes it.
    """
    from course_lib.pipeline.imbalance import break_even_steps

    gain = step_before - step_after
    n = np.arange(0, max_steps + 1)
    net = n * gain - cost
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 3.0), layout="constrained")
    ax.plot(n, net, color=PIPELINE_LINE_COLOURS[0], lw=2, gid="net")
    ax.axhline(0.0, color="black", lw=0.8)
    ax.fill_between(n, net, 0, where=net < 0, color=IDLE_COLOUR, step=None)
    steps = break_even_steps(cost, step_before, step_after)
    if np.isfinite(steps) and steps <= max_steps:
        ax.plot([steps], [steps * gain - cost], "o", color=PATH_COLOUR, gid="break-even")
        ax.annotate(
            f"break-even after {steps} steps\n= "
            rf"$\left\lceil \dfrac{{{cost:.3g}\,\mathrm{{s}}}}{{{gain * 1e3:.3g}\,\mathrm{{ms}}}}"
            r"\right\rceil$",
            (steps, steps * gain - cost),
            xytext=(18, -46),
            textcoords="offset points",
            arrowprops=dict(arrowstyle="->"),
        )
    ax.set_xlim(0, max_steps)
    ax.set_xlabel("steps after the repartition")
    ax.set_ylabel("time saved (s)")
    ax.legend(handles=[Patch(color=IDLE_COLOUR, label="not yet paid back")], frameon=False,
              loc="upper left")  # fmt: skip
    ax.set_title(f"A move costing {cost:.3g} s that saves {gain * 1e3:.3g} ms per step", loc="left")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return ax
