"""Figures the lessons draw: timelines (Gantt), schedule grids, memory curves, CDFs (matplotlib).

Every function takes an optional ``ax`` and returns the Axes it drew on, so lessons can compose
figures and explorers can redraw into an existing Axes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import matplotlib.pyplot as plt  # noqa: F401  (used by the plotting functions below)
import numpy as np
from matplotlib.font_manager import FontProperties
from matplotlib.layout_engine import ConstrainedLayoutEngine
from matplotlib.patches import Patch
from matplotlib.textpath import TextToPath
from matplotlib.ticker import FuncFormatter

if TYPE_CHECKING:
    from collections.abc import Iterable

    import pandas as pd
    from matplotlib.axes import Axes

    from course_lib.pipeline import Timeline


SCHEDULE_COLOURS: dict[str, str] = {"F": "#56B4E9", "B": "#E69F00", "W": "#009E73"}
"""Okabe-Ito colour-blind-safe colours of forward, backward and weight-gradient actions."""
IDLE_COLOUR = "#e3e3e3"
"""Background of a rank's row in a schedule grid: what stays visible is idle time."""
_KIND_LABELS = {"F": "forward (F)", "B": "backward (B)", "W": "weight grad (W)"}


def _count(n: int, singular: str, plural: str | None = None) -> str:
    """'1 stage', '4 stages'."""
    return f"{n} {singular if n == 1 else plural or singular + 's'}"


def _time_unit(span: float) -> tuple[float, str]:
    """Scale and unit for a time axis spanning ``span`` seconds: s, ms or µs."""
    if span >= 1.0 or span <= 0.0:
        return 1.0, "s"
    if span >= 1e-3:
        return 1e3, "ms"
    return 1e6, "µs"


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

    scale, unit = _time_unit(span)
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
        where = _count(schedule.num_stages, "stage") + (
            f" on {_count(num_ranks, 'rank')}" if num_ranks != schedule.num_stages else ""
        )
        title = (
            f"{schedule.name or 'schedule'}: {where}, "
            f"{_count(schedule.num_microbatches, 'microbatch', 'microbatches')} "
            f"— idle {timeline.idle_fraction:.1%} of rank-time"
        )
    ax.set_title(title, loc="left")
    return ax


# --- cost01: Gantt chart of a step schedule (course_lib.graph.schedule) ---------------------

GANTT_CRITICAL_COLOUR = "#D55E00"
"""Okabe-Ito vermillion: bars of ops on the critical path."""
GANTT_CRITICAL_EDGE = "#4A1A00"
"""Dark edge of critical-path bars and colour of the arrows that trace the path."""
GANTT_OTHER_COLOUR = "#C9D3DD"
"""Muted grey-blue: bars of ops off the critical path (they have slack)."""
GANTT_OTHER_EDGE = "#8A99A8"
"""Edge of bars off the critical path."""


def _text_px(text: str, fontsize: float, bold: bool, dpi: float) -> float:
    """Width in pixels of ``text`` set in the default font at ``fontsize`` points."""
    prop = FontProperties(size=fontsize, weight="bold" if bold else "normal")
    width_pt, _, _ = TextToPath().get_text_width_height_descent(text, prop, ismath=False)
    return width_pt * dpi / 72


def _gantt_axes_px(ax: Axes) -> float:
    """Width in pixels the Axes will have once the figure is laid out (to decide where labels fit).

    A lone Axes in a constrained-layout figure: figure width minus the y tick labels and the
    legend (running the layout engine would cost ~0.1 s); other figures: the layout as it is.
    """
    fig = ax.figure
    dpi = fig.dpi
    engine = fig.get_layout_engine()
    if isinstance(engine, ConstrainedLayoutEngine) and len(fig.axes) == 1:
        legend = ax.get_legend()
        legend_px = 0.0 if legend is None else legend.get_window_extent().width
        labels_px = max(
            (_text_px(t.get_text(), t.get_fontsize(), False, dpi) for t in ax.get_yticklabels()),
            default=0.0,
        )
        pads_px = (4 * 3 + plt.rcParams["ytick.major.pad"]) * dpi / 72
        return max(fig.get_figwidth() * dpi - labels_px - legend_px - pads_px, 1.0) / 1.01
    if engine is not None:
        engine.execute(fig)
    return max(ax.get_position().width * fig.get_figwidth() * dpi, 1.0)


def gantt(
    sched: pd.DataFrame,
    ax: Axes | None = None,
    critical: Iterable[str] | None = None,
    title: str | None = None,
) -> Axes:
    """Gantt chart of a step schedule: a row per lane, critical-path ops highlighted, step time dashed (cost01).

    ``sched`` is the output of :func:`course_lib.graph.schedule` (columns op, lane, start, end and,
    unless ``critical`` names the ops to highlight, critical). Lanes are drawn top to bottom in
    order of first appearance; arrows trace the highlighted ops in time order.
    """
    need = ["op", "lane", "start", "end"] + ([] if critical is not None else ["critical"])
    missing = [c for c in need if c not in sched.columns]
    if missing:
        raise ValueError(f"gantt needs the columns of graph.schedule(); missing {missing}")
    if len(sched) == 0:
        raise ValueError("gantt: the schedule has no ops")
    ops = sched["op"].astype(str).to_numpy()
    if len(set(ops)) != len(ops):
        dup = sorted({o for o in ops if (ops == o).sum() > 1})
        raise ValueError(f"gantt: ops appear more than once in the schedule: {dup}")
    starts = sched["start"].to_numpy(dtype=float)
    ends = sched["end"].to_numpy(dtype=float)
    if not (np.isfinite(starts).all() and np.isfinite(ends).all()) or (ends < starts).any():
        raise ValueError("gantt: start and end must be finite with end >= start for every op")
    if critical is None:
        is_crit = sched["critical"].to_numpy(dtype=bool)
    else:
        wanted = [str(c) for c in critical]
        unknown = sorted(set(wanted) - set(ops))
        if unknown:
            raise ValueError(f"gantt: critical names ops not in the schedule: {unknown}")
        is_crit = np.isin(ops, wanted)
    lane_names = sched["lane"].astype(str).to_numpy()
    lanes = list(dict.fromkeys(lane_names))
    row = np.array([lanes.index(lane) for lane in lane_names])
    widths = ends - starts
    step = float(ends.max())
    t0 = min(0.0, float(starts.min()))
    span = step - t0 if step > t0 else 1.0
    scale, unit = _time_unit(span)
    height = 0.6

    if ax is None:
        _, ax = plt.subplots(figsize=(11, 1.5 + 0.7 * len(lanes)), layout="constrained")
    for i, lane in enumerate(lanes):
        for crit, face, edge, lw in (
            (False, GANTT_OTHER_COLOUR, GANTT_OTHER_EDGE, 0.8),
            (True, GANTT_CRITICAL_COLOUR, GANTT_CRITICAL_EDGE, 1.4),
        ):
            mine = (row == i) & (is_crit == crit)
            if mine.any():
                bars = ax.broken_barh(
                    np.column_stack([starts[mine], widths[mine]]),
                    (i - height / 2, height),
                    facecolors=face,
                    edgecolors=edge,
                    linewidths=lw,
                    zorder=2,
                )
                bars.set_gid(f"{lane}:{'critical' if crit else 'other'}")

    # Trace the highlighted ops in time order: an arrow wherever the path hops lanes or waits.
    path = np.flatnonzero(is_crit)
    path = path[np.lexsort((ends[path], starts[path]))]
    arrow_from: dict[int, set[int]] = {-1: set(), 1: set()}  # ops with an arrow leaving up / down
    for a, b in zip(path[:-1], path[1:], strict=True):
        if row[a] == row[b] and ends[a] == starts[b]:
            continue  # adjacent bars on one lane: their dark edges already show the hand-over
        edge = 0.0 if row[a] == row[b] else (height / 2 if row[b] > row[a] else -height / 2)
        if row[a] != row[b]:
            arrow_from[1 if row[b] > row[a] else -1].add(int(a))
        ax.annotate(
            "",
            xy=(starts[b], row[b] - edge),
            xytext=(ends[a], row[a] + edge),
            arrowprops={
                "arrowstyle": "-|>",
                "color": GANTT_CRITICAL_EDGE,
                "lw": 1.3,
                "shrinkA": 0,
                "shrinkB": 0,
                "mutation_scale": 10,
            },
            zorder=5,
        )

    ax.axvline(step, color="#222222", ls="--", lw=1.2, zorder=3)
    ax.annotate(
        f"step time {step * scale:.4g} {unit}",
        xy=(step, 1.0),
        xycoords=("data", "axes fraction"),
        xytext=(0, 3),
        textcoords="offset points",
        ha="center",
        va="bottom",
        fontsize=9,
    )
    ax.set_xlim(t0, step + 0.02 * span)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda t, _pos: f"{t * scale:g}"))
    ax.set_xlabel(f"time ({unit})")
    ax.set_ylim(len(lanes) - 0.5, -0.5)
    ax.set_yticks(range(len(lanes)), lanes)
    ax.tick_params(axis="y", length=0)
    ax.grid(axis="x", color="#E6E6E6", lw=0.8)
    ax.set_axisbelow(True)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    handles = [
        Patch(fc=GANTT_CRITICAL_COLOUR, ec=GANTT_CRITICAL_EDGE, label="critical path"),
        Patch(fc=GANTT_OTHER_COLOUR, ec=GANTT_OTHER_EDGE, label="off the critical path"),
    ]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    if title is None:
        title = (
            f"Step schedule: {_count(len(ops), 'op')} on {_count(len(lanes), 'lane')}, "
            f"{int(is_crit.sum())} on the critical path"
        )
    ax.set_title(title, loc="left", pad=16)

    # Op names: inside the bar where they fit, else beside its top (or bottom) edge, starting at
    # the bar's start, on a side no path arrow leaves from and not over an earlier label.
    fig = ax.figure
    px_per_s = _gantt_axes_px(ax) / (1.02 * span)
    taken = {(i, side): -np.inf for i in range(len(lanes)) for side in (-1, 1)}  # right end, px
    for k in np.lexsort((ends, starts)):
        op, crit, i = ops[k], bool(is_crit[k]), int(row[k])
        for size in (8.5, 7.0):
            if _text_px(op, size, crit, fig.dpi) + 6 <= widths[k] * px_per_s:
                colour, weight = ("white", "bold") if crit else ("#1F2A36", "normal")
                ax.text(
                    starts[k] + widths[k] / 2,
                    i,
                    op,
                    ha="center",
                    va="center",
                    fontsize=size,
                    color=colour,
                    fontweight=weight,
                    zorder=4,
                    clip_on=True,
                )
                break
        else:
            left = (starts[k] - t0) * px_per_s + 2
            for side in (-1, 1):  # -1: above the bar (rows grow downwards), 1: below it
                if k in arrow_from[side] or left < taken[(i, side)] + 4:
                    continue
                ax.annotate(
                    op,
                    xy=(starts[k], i + side * height / 2),
                    xytext=(2, -2 * side),
                    textcoords="offset points",
                    ha="left",
                    va="bottom" if side < 0 else "top",
                    fontsize=7.0,
                    color="#1F2A36",
                    bbox={"boxstyle": "square,pad=0.05", "fc": "white", "ec": "none", "alpha": 0.8},
                    zorder=4,
                    annotation_clip=True,
                )
                taken[(i, side)] = left + _text_px(op, 7.0, False, fig.dpi)
                break
    return ax
