"""Pipeline schedule figures (pipe02 onward): a schedule grid of F/B/W actions per rank over time."""

from __future__ import annotations

from typing import TYPE_CHECKING

import matplotlib.pyplot as plt  # noqa: F401  (used by the plotting functions below)
import numpy as np
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from course_lib.pipeline import Timeline
from course_lib.figures.style import count_label, time_unit

SCHEDULE_COLOURS: dict[str, str] = {"F": "#56B4E9", "B": "#E69F00", "W": "#009E73"}
"""Okabe-Ito colour-blind-safe colours of forward, backward and weight-gradient actions."""
IDLE_COLOUR = "#e3e3e3"
"""Background of a rank's row in a schedule grid: what stays visible is idle time."""
_KIND_LABELS = {"F": "forward (F)", "B": "backward (B)", "W": "weight grad (W)"}


def schedule_grid(timeline: Timeline, ax: Axes | None = None, title: str | None = None) -> Axes:
    """Schedule grid: one row per rank (rank 0 on top), a box per action, idle time grey (pipe02)."""
    schedule = timeline.schedule
    num_ranks = schedule.num_ranks
    events = timeline.events
    span = timeline.makespan if timeline.makespan > 0 else 1.0
    if ax is None:
        _, ax = plt.subplots(figsize=(10, 1.0 + 0.42 * num_ranks), layout="constrained")
    height = 0.8
    ranks = events["rank"].to_numpy()
    kinds = events["kind"].to_numpy()
    starts = events["start"].to_numpy(dtype=float)
    widths = events["end"].to_numpy(dtype=float) - starts

    # Size of one second and of one label character on screen, to decide where labels fit.
    fig = ax.figure
    ax_px = ax.get_position().width * fig.get_figwidth() * fig.dpi
    px_per_s = ax_px / span
    fontsize = 8.0
    char_px = 0.62 * fontsize * fig.dpi / 72
    edge = 0.6 if len(widths) == 0 or np.median(widths) * px_per_s >= 4 else 0.0

    for rank in range(num_ranks):
        row = rank - height / 2
        background = ax.broken_barh([(0.0, span)], (row, height), facecolors=IDLE_COLOUR)
        background.set_gid(f"rank{rank}:idle")
        for kind, colour in SCHEDULE_COLOURS.items():
            mine = (ranks == rank) & (kinds == kind)
            if not mine.any():
                continue
            boxes = ax.broken_barh(
                np.column_stack([starts[mine], widths[mine]]),
                (row, height),
                facecolors=colour,
                edgecolors="white",
                linewidths=edge,
            )
            boxes.set_gid(f"rank{rank}:{kind}")
            # Label all boxes of this rank and kind with their microbatch, or none of them.
            digits = len(str(int(events["microbatch"].to_numpy()[mine].max())))
            if widths[mine].min() * px_per_s >= char_px * digits + 4:
                for x, w, j in zip(
                    starts[mine], widths[mine], events["microbatch"].to_numpy()[mine], strict=True
                ):
                    ax.text(x + w / 2, rank, str(j), ha="center", va="center", fontsize=fontsize)

    scale, unit = time_unit(span)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda t, _pos: f"{t * scale:g}"))
    ax.set_xlabel(f"time ({unit})")
    ax.set_xlim(0.0, span)
    ax.set_ylim(num_ranks - 0.5, -0.5)
    ax.set_yticks(range(num_ranks), [f"rank {r}" for r in range(num_ranks)])
    ax.tick_params(axis="y", length=0)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)

    present = [k for k in SCHEDULE_COLOURS if (kinds == k).any()]
    names = dict(_KIND_LABELS, B="input grad (B)") if "W" in present else _KIND_LABELS
    handles = [Patch(facecolor=SCHEDULE_COLOURS[k], label=names[k]) for k in present]
    handles.append(Patch(facecolor=IDLE_COLOUR, label="idle"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    if title is None:
        where = count_label(schedule.num_stages, "stage") + (
            f" on {count_label(num_ranks, 'rank')}" if num_ranks != schedule.num_stages else ""
        )
        title = (
            f"{schedule.name or 'schedule'}: {where}, "
            f"{count_label(schedule.num_microbatches, 'microbatch', 'microbatches')} "
            f"— idle {timeline.idle_fraction:.1%} of rank-time"
        )
    ax.set_title(title, loc="left")
    return ax
