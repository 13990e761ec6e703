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
from matplotlib.lines import Line2D
from matplotlib.patches import FancyBboxPatch, Patch
from matplotlib.textpath import TextToPath
from matplotlib.ticker import FuncFormatter

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    import networkx as nx
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
    xlim: tuple[float, float] | None = None,
) -> Axes:
    """Gantt chart of a step schedule: a row per lane, critical-path ops highlighted, step time dashed (cost01).

    ``sched`` is the output of :func:`course_lib.graph.schedule` (columns op, lane, start, end and,
    unless ``critical`` names the ops to highlight, critical). Lanes are drawn top to bottom in
    order of first appearance; arrows trace the highlighted ops in time order. ``xlim`` fixes the
    time axis (seconds), e.g. to compare two schedules on one scale; names are fitted to it.
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
    x0, x1 = (t0, step + 0.02 * span) if xlim is None else (float(xlim[0]), float(xlim[1]))
    ax.set_xlim(x0, x1)
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
    px_per_s = _gantt_axes_px(ax) / (x1 - x0)
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
            left = (starts[k] - x0) * px_per_s + 2
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


# --- cost01: dependency graph, slack bars, step time vs one op's duration -------------------

EDGE_KIND_STYLES: dict[str, dict[str, object]] = {
    "stream order": {"color": "#8A99A8", "linestyle": "-", "lw": 1.1},
    "data": {"color": "#0072B2", "linestyle": "-", "lw": 1.5},
    "sync": {"color": "#CC79A7", "linestyle": "--", "lw": 1.5},
    "launch": {"color": "#009E73", "linestyle": "-.", "lw": 1.5},
}
"""Arrow style of each dependency kind in :func:`dependency_graph` (other kinds: black, dotted)."""
SLACK_COLOUR = "#0072B2"
"""Okabe-Ito blue: the hatched slack bars of :func:`slack_bars`."""


def _lane_rows(lanes: Iterable[str]) -> tuple[list[str], np.ndarray]:
    """Lanes in order of first appearance and the row index of each entry (as gantt draws them)."""
    names = [str(lane) for lane in lanes]
    order = list(dict.fromkeys(names))
    index = {lane: i for i, lane in enumerate(order)}
    return order, np.array([index[lane] for lane in names], dtype=int)


def dependency_graph(
    g: nx.DiGraph,
    ax: Axes | None = None,
    kinds: Mapping[tuple[str, str], str] | None = None,
    critical: Iterable[str] | None = None,
    title: str | None = None,
    lane_order: Sequence[str] | None = None,
) -> Axes:
    """Activity-on-node drawing of a step graph: a box per op (name, duration) in its lane's row, columns by dependency depth, arrows styled by dependency kind (cost01).

    ``kinds`` maps an edge (u, v) to a kind ("stream order", "data", "sync" or any label);
    unlabelled edges are "stream order" within a lane and "dependency" across lanes. Ops in
    ``critical`` are drawn in the Gantt chart's critical-path colour. Lanes run top to bottom in
    ``lane_order`` if given (it must name every lane), else in order of first appearance.
    """
    import networkx as nx

    if g.number_of_nodes() == 0:
        raise ValueError("dependency_graph: the step graph has no ops")
    kinds = dict(kinds or {})
    unknown = sorted(str(e) for e in kinds if not g.has_edge(*e))
    if unknown:
        raise ValueError(f"dependency_graph: kinds names edges not in the graph: {unknown}")
    highlight = set() if critical is None else {str(op) for op in critical}
    missing = sorted(highlight - set(g.nodes))
    if missing:
        raise ValueError(f"dependency_graph: critical names ops not in the graph: {missing}")
    topo = list(nx.topological_sort(g))
    lane_of = {op: str(g.nodes[op].get("lane", op)) for op in topo}
    lanes, rows = _lane_rows(lane_of[op] for op in topo)
    if lane_order is not None:
        order = [str(lane) for lane in lane_order]
        if sorted(order) != sorted(lanes):
            raise ValueError(
                f"dependency_graph: lane_order must name each lane once; lanes are {lanes}, "
                f"got {order}"
            )
        lanes = order
        rows = np.array([order.index(lane_of[op]) for op in topo], dtype=int)
    row = dict(zip(topo, rows.tolist(), strict=True))
    column = {op: i for i, layer in enumerate(nx.topological_generations(g)) for op in layer}
    num_columns = max(column.values()) + 1
    durations = np.array([float(g.nodes[op]["duration"]) for op in topo])
    scale, unit = _time_unit(float(durations.max()))

    if ax is None:
        _, ax = plt.subplots(
            figsize=(min(11.0, max(6.0, 0.8 * num_columns + 1.6)), 1.3 + 0.8 * len(lanes)),
            layout="constrained",
        )
    box_w, box_h = 0.86, 0.62
    # One font size for every box, small enough for the longest name to fit its box.
    fig = ax.figure
    box_px = ax.get_position().width * fig.get_figwidth() * fig.dpi / num_columns * box_w
    widest = max(_text_px(op, 7.5, True, fig.dpi) for op in topo)
    name_size = max(5.0, min(7.5, 7.5 * (box_px - 6) / widest))
    for op, d in zip(topo, durations, strict=True):
        crit = op in highlight
        face, edge = (
            (GANTT_CRITICAL_COLOUR, GANTT_CRITICAL_EDGE) if crit else ("white", GANTT_OTHER_EDGE)
        )
        x, y = column[op], row[op]
        box = FancyBboxPatch(
            (x - box_w / 2, y - box_h / 2),
            box_w,
            box_h,
            boxstyle="round,pad=0,rounding_size=0.08",
            fc=face,
            ec=edge,
            lw=1.4 if crit else 1.0,
            zorder=3,
            gid=f"op:{op}",
        )
        ax.add_patch(box)
        colour = "white" if crit else "#1F2A36"
        ax.text(
            x,
            y - 0.09,
            op,
            ha="center",
            va="center",
            fontsize=name_size,
            color=colour,
            fontweight="bold" if crit else "normal",
            zorder=4,
        )
        ax.text(
            x,
            y + 0.16,
            f"{d * scale:.3g} {unit}",
            ha="center",
            va="center",
            fontsize=6.5,
            color=colour,
            zorder=4,
        )

    used: dict[str, dict[str, object]] = {}
    for u, v in g.edges:
        kind = kinds.get((u, v)) or ("stream order" if lane_of[u] == lane_of[v] else "dependency")
        style = EDGE_KIND_STYLES.get(kind, {"color": "#222222", "linestyle": ":", "lw": 1.3})
        used.setdefault(kind, style)
        (xu, yu), (xv, yv) = (column[u], row[u]), (column[v], row[v])
        # Same row, columns apart: arc over the boxes in between; otherwise a straight arrow.
        rad = -0.25 if yu == yv and xv - xu > 1 else 0.0
        ax.annotate(
            "",
            xy=(xv - box_w / 2, yv),
            xytext=(xu + box_w / 2, yu),
            arrowprops={
                "arrowstyle": "-|>",
                "color": style["color"],
                "linestyle": style["linestyle"],
                "lw": style["lw"],
                "shrinkA": 1,
                "shrinkB": 1,
                "mutation_scale": 9,
                "connectionstyle": f"arc3,rad={rad}",
            },
            zorder=2,
            gid=f"edge:{u}->{v}:{kind}",
        )

    ax.set_xlim(-0.6, num_columns - 0.4)
    ax.set_ylim(len(lanes) - 0.5, -0.55)
    ax.set_yticks(range(len(lanes)), lanes)
    ax.set_xticks([])
    ax.tick_params(axis="y", length=0)
    for side in ("top", "right", "left", "bottom"):
        ax.spines[side].set_visible(False)
    for i in range(len(lanes)):
        ax.axhline(i, color="#F0F0F0", lw=6, zorder=0)
    handles = [
        Line2D([], [], color=s["color"], linestyle=s["linestyle"], lw=s["lw"], label=k)
        for k, s in used.items()
    ]
    if highlight:
        handles.append(
            Patch(fc=GANTT_CRITICAL_COLOUR, ec=GANTT_CRITICAL_EDGE, label="critical path")
        )
    ax.legend(
        handles=handles,
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        frameon=False,
        ncols=len(handles),
        fontsize=8.5,
        title="arrow u → v: v cannot start before u ends",
        title_fontsize=8.5,
    )
    if title is None:
        title = (
            f"Dependency graph: {_count(len(topo), 'op')}, {_count(g.number_of_edges(), 'edge')} "
            f"— columns by dependency depth, not time"
        )
    ax.set_title(title, loc="left")
    return ax


def slack_bars(sched: pd.DataFrame, ax: Axes) -> Axes:
    """Overlay on a gantt(sched) Axes each op's slack: a hatched bar from its end to its latest end (cost01)."""
    missing = [c for c in ("op", "lane", "end", "slack") if c not in sched.columns]
    if missing:
        raise ValueError(f"slack_bars needs the columns of graph.schedule(); missing {missing}")
    lanes, rows = _lane_rows(sched["lane"])
    ends = sched["end"].to_numpy(dtype=float)
    slack = sched["slack"].to_numpy(dtype=float)
    if not np.isfinite(slack).all() or (slack < 0).any():
        raise ValueError("slack_bars: slack must be finite and >= 0 for every op")
    span = float((ends + slack).max()) or 1.0
    scale, unit = _time_unit(span)
    has = slack > 0
    # A thin hatched bar just below the op's bar: how much later the op may end.
    bars = ax.barh(
        rows[has] + 0.40,
        slack[has],
        left=ends[has],
        height=0.10,
        facecolor="white",
        edgecolor=SLACK_COLOUR,
        hatch="////",
        lw=0.9,
        zorder=2.5,
    )
    for patch in bars.patches:
        patch.set_gid("slack")
    for r, e, s in zip(rows[has], ends[has], slack[has], strict=True):
        ax.text(
            e + s / 2,
            r + 0.47,
            f"+{s * scale:.3g} {unit}",
            ha="center",
            va="top",
            fontsize=7.5,
            color=SLACK_COLOUR,
            zorder=4,
        )
    bottom, top = ax.get_ylim()
    ax.set_ylim(max(bottom, float(rows.max()) + 0.72), top)
    legend = ax.get_legend()
    handles = list(legend.legend_handles) if legend is not None else []
    handles.append(
        Patch(fc="none", ec=SLACK_COLOUR, hatch="////", label="slack: how late it may end")
    )
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return ax


def what_if_curve(
    g: nx.DiGraph,
    op: str,
    ax: Axes | None = None,
    max_duration: float | None = None,
    current: float | None = None,
) -> Axes:
    """Step time T(d) = max(A, B + d) against op's duration d, with the kink at d* = A - B marked (cost01).

    Flat where another path sets the step time (muted), slope 1 where op is critical (critical
    colour); a hollow dot at the measured duration, a filled dot at ``current`` (seconds) if given.
    The d axis runs from 0 to ``max_duration`` (default 3x the measured duration).
    """
    from course_lib import graph as G

    a, b = G.path_bounds(g, op)
    d0 = float(g.nodes[op]["duration"])
    dmax = 3.0 * d0 if max_duration is None else float(max_duration)
    if current is not None:
        dmax = max(dmax, float(current))
    if not dmax > 0:
        dmax = 1.5 * max(a - b, 1e-3)
    kink = a - b

    def t_of(d: float) -> float:
        return max(a, b + d)

    t_lo, t_hi = t_of(0.0), t_of(dmax)
    scale, unit = _time_unit(t_hi)
    if ax is None:
        _, ax = plt.subplots(figsize=(6.0, 3.6), layout="constrained")
    bend = min(max(kink, 0.0), dmax)
    if bend > 0:
        ax.plot(
            [0.0, bend],
            [a, a],
            color=GANTT_OTHER_EDGE,
            lw=2.6,
            gid="what_if:flat",
            label="flat: another path sets the step time",
        )
    if bend < dmax:
        ax.plot(
            [bend, dmax],
            [t_of(bend), t_hi],
            color=GANTT_CRITICAL_COLOUR,
            lw=2.6,
            gid="what_if:critical",
            label=f"slope 1: {op} is critical",
        )
    if 0.0 < kink < dmax:
        ax.axvline(kink, color="#222222", ls=":", lw=1.0, zorder=1)
        ax.plot([kink], [a], "o", color="#222222", ms=5, zorder=4, gid="what_if:kink")
        ax.annotate(
            f"kink d* = A − B = {kink * scale:.3g} {unit}",
            xy=(kink, a),
            xytext=(5, -5) if kink < 0.55 * dmax else (-5, 5),
            textcoords="offset points",
            ha="left" if kink < 0.55 * dmax else "right",
            va="top" if kink < 0.55 * dmax else "bottom",
            fontsize=8.5,
        )
    elif kink >= dmax:
        ax.annotate(
            f"kink at d* = {kink * scale:.3g} {unit}, beyond this range",
            xy=(0.98, 0.04),
            xycoords="axes fraction",
            ha="right",
            va="bottom",
            fontsize=8.5,
        )
    else:
        ax.annotate(
            "no kink: on every longest path at any duration",
            xy=(0.98, 0.04),
            xycoords="axes fraction",
            ha="right",
            va="bottom",
            fontsize=8.5,
        )
    ax.axhline(a, color="#999999", ls="--", lw=0.9, zorder=1)
    ax.annotate(
        f"A = {a * scale:.4g} {unit}",
        xy=(1.0, a),
        xycoords=("axes fraction", "data"),
        xytext=(-2, -3),
        textcoords="offset points",
        ha="right",
        va="top",
        fontsize=8,
        color="#555555",
    )
    ax.plot(
        [d0],
        [t_of(d0)],
        "o",
        mfc="white",
        mec="#222222",
        mew=1.4,
        ms=7,
        zorder=5,
        gid="what_if:measured",
        label=f"measured: {d0 * scale:.3g} {unit}",
    )
    if current is not None:
        c = float(current)
        ax.plot(
            [c],
            [t_of(c)],
            "o",
            color="#0072B2",
            ms=8,
            zorder=6,
            gid="what_if:current",
            label=f"now: {c * scale:.3g} {unit} → step {t_of(c) * scale:.4g} {unit}",
        )
    pad = 0.08 * (t_hi - t_lo) if t_hi > t_lo else 0.05 * t_hi
    ax.set_ylim(t_lo - 2 * pad, t_hi + 3 * pad)
    ax.set_xlim(0.0, dmax * 1.02)
    fmt = FuncFormatter(lambda t, _pos: f"{t * scale:g}")
    ax.xaxis.set_major_formatter(fmt)
    ax.yaxis.set_major_formatter(fmt)
    ax.set_xlabel(f"duration of {op} ({unit})")
    ax.set_ylabel(f"step time ({unit})")
    ax.grid(color="#E6E6E6", lw=0.8)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.legend(loc="upper left", fontsize=8, frameon=False)
    ax.set_title(f"T(d) = max(A, B + d) for {op}", loc="left")
    return ax


# --- cost03: compute and communication lanes, overlapped time shaded -------------------------

OVERLAP_COLOURS: dict[str, str] = {
    "compute": "#56B4E9",
    "comm": "#E69F00",
    "exposed": "#D55E00",
    "overlap": "#009E73",
    "optimizer": "#8A99A8",
}
"""Okabe-Ito colours of :func:`overlap_timeline`: computation, overlapped communication,
exposed communication (no computation running), the overlapped-time shade, the optimizer."""


def overlap_timeline(
    timeline: object,
    comm: object = None,
    *,
    ax: Axes | None = None,
    title: str | None = None,
    origin: float = 0.0,
) -> Axes:
    """Compute and communication lanes; overlapped time shaded, exposed communication marked (cost03).

    ``timeline`` is a :class:`course_lib.overlap.BucketTimeline` (its optimizer step and step
    time are drawn too), or an (N, 2) array of computation intervals [start, end) in seconds,
    with ``comm`` the (M, 2) communication intervals. ``origin`` (s) is subtracted from every
    time (e.g. the start of a profiler step). The shade spans the time both kinds run (the
    numerator of HTA's overlap ratio); vermillion marks communication with no computation.
    """
    from course_lib.overlap import BucketTimeline, intersection, overlap_ratio, subtract, union

    optimizer = None
    step = None
    if isinstance(timeline, BucketTimeline):
        if comm is not None:
            raise ValueError("overlap_timeline: pass either a BucketTimeline or two interval sets")
        compute_iv, comm_iv = timeline.compute, timeline.comm
        optimizer, step = timeline.optimizer, timeline.step_time
    else:
        if comm is None:
            raise ValueError(
                "overlap_timeline: comm intervals are missing (pass compute and comm, or a "
                "BucketTimeline)"
            )
        compute_iv, comm_iv = timeline, comm
    t0 = float(origin)
    compute_u = union(compute_iv) - t0
    comm_u = union(comm_iv) - t0
    if len(comm_u) == 0 and len(compute_u) == 0:
        raise ValueError("overlap_timeline: there are no intervals to draw")
    both = intersection(compute_u, comm_u)
    exposed = subtract(comm_u, compute_u)
    ends = [u[-1, 1] for u in (compute_u, comm_u) if len(u)]
    starts = [u[0, 0] for u in (compute_u, comm_u) if len(u)]
    lo = min([0.0, *starts])
    hi = max([*ends, *([optimizer[1] - t0] if optimizer else [])])
    span = hi - lo if hi > lo else 1.0
    scale, unit = _time_unit(span)

    if ax is None:
        _, ax = plt.subplots(figsize=(11, 2.6), layout="constrained")
    height = 0.6
    rows = {"compute": 0, "comm": 1}

    def bars(iv: np.ndarray, row: int, colour: str, gid: str, **kw: object) -> None:
        if len(iv):
            coll = ax.broken_barh(
                np.column_stack([iv[:, 0], iv[:, 1] - iv[:, 0]]),
                (row - height / 2, height),
                facecolors=colour,
                **kw,
            )
            coll.set_gid(gid)

    if len(both):
        shade = ax.broken_barh(
            np.column_stack([both[:, 0], both[:, 1] - both[:, 0]]),
            (-0.5, 2.0),
            facecolors=OVERLAP_COLOURS["overlap"],
            alpha=0.18,
            zorder=0,
        )
        shade.set_gid("overlapped")
    # Individual kernels/layers on the compute lane (white edges where they have room).
    raw = np.asarray(compute_iv, dtype=float).reshape(-1, 2) - t0
    fig = ax.get_figure(root=True)  # positions are fractions of the root figure (subfigures too)
    px_per_s = ax.get_position().width * fig.get_figwidth() * fig.dpi / span
    widths = raw[:, 1] - raw[:, 0]
    edge = 0.5 if len(widths) and np.median(widths) * px_per_s >= 6 else 0.0
    bars(
        raw,
        rows["compute"],
        OVERLAP_COLOURS["compute"],
        "compute",
        edgecolors="white",
        linewidths=edge,
        zorder=2,
    )
    raw_comm = np.asarray(comm_iv, dtype=float).reshape(-1, 2) - t0
    bars(
        raw_comm,
        rows["comm"],
        OVERLAP_COLOURS["comm"],
        "comm",
        edgecolors="white",
        linewidths=0.8,
        zorder=2,
    )
    bars(exposed, rows["comm"], OVERLAP_COLOURS["exposed"], "exposed", zorder=3)
    # The collectives' outlines on top, so back-to-back exposed collectives stay distinguishable.
    bars(raw_comm, rows["comm"], "none", "comm edges", edgecolors="white", linewidths=0.8, zorder=4)
    if optimizer is not None:
        a, b = optimizer[0] - t0, optimizer[1] - t0
        bars(
            np.array([[a, b]]), rows["compute"], OVERLAP_COLOURS["optimizer"], "optimizer", zorder=2
        )
    if step is not None:
        ax.axvline(step - t0, color="#222222", ls="--", lw=1.2, zorder=4)
        ax.annotate(
            f"step {(step - t0) * scale:.4g} {unit}",
            xy=(step - t0, 1.0),
            xycoords=("data", "axes fraction"),
            xytext=(0, 3),
            textcoords="offset points",
            ha="center",
            va="bottom",
            fontsize=9,
        )

    ax.set_xlim(lo, lo + 1.02 * span)
    ax.set_ylim(1.6, -0.6)
    ax.set_yticks([0, 1], ["computation", "communication"])
    ax.tick_params(axis="y", length=0)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda t, _pos: f"{t * scale:g}"))
    ax.set_xlabel(f"time ({unit})")
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    handles = [
        Patch(facecolor=OVERLAP_COLOURS["compute"], label="computation"),
        Patch(facecolor=OVERLAP_COLOURS["comm"], label="communication,\noverlapped"),
        Patch(facecolor=OVERLAP_COLOURS["exposed"], label="communication,\nnothing else runs"),
        Patch(facecolor=OVERLAP_COLOURS["overlap"], alpha=0.18, label="both run"),
    ]
    if optimizer is not None:
        handles.append(Patch(facecolor=OVERLAP_COLOURS["optimizer"], label="optimizer"))
    ax.legend(
        handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=8
    )
    if title is None:
        comm_time = float(np.sum(comm_u[:, 1] - comm_u[:, 0])) if len(comm_u) else 0.0
        ratio = overlap_ratio(comm_u, compute_u) if comm_time > 0 else float("nan")
        exp_time = float(np.sum(exposed[:, 1] - exposed[:, 0])) if len(exposed) else 0.0
        title = (
            f"overlap ratio {ratio:.1%} of {comm_time * scale:.3g} {unit} communication — "
            f"{exp_time * scale:.3g} {unit} with no computation running"
        )
    ax.set_title(title, loc="left", pad=14)
    return ax


# --- cost05: stacked memory timeline (course_lib.memory) ------------------------------------

MEMORY_COLOURS: dict[str, str] = {
    "weight": "#0072B2",
    "optimizer": "#56B4E9",
    "gradient": "#009E73",
    "activation": "#E69F00",
    "workspace": "#CC79A7",
}
"""Okabe-Ito colours of the memory categories of ``course_lib.memory.training_step_events``."""
MEMORY_OTHER_COLOURS = ("#F0E442", "#D55E00", "#999999", "#000000")
"""Colours, in turn, of any further categories."""
PHASE_SHADES: dict[str, str] = {"forward": "#F2F2F2", "backward": "#FFFFFF", "optimizer": "#F2F2F2"}
"""Background bands of the step's phases (alternating, so neighbouring phases stay apart)."""


def _bytes_unit(nbytes: float) -> tuple[float, str]:
    """Divisor and binary unit for a byte axis reaching ``nbytes``: B, KiB, MiB or GiB."""
    for power, unit in ((3, "GiB"), (2, "MiB"), (1, "KiB")):
        if nbytes >= 1024**power:
            return float(1024**power), unit
    return 1.0, "B"


def memory_timeline(
    events: pd.DataFrame,
    ax: Axes | None = None,
    title: str | None = None,
) -> Axes:
    """Stacked live bytes by category over time with the peak marked and the phases shaded (cost05).

    ``events`` as for :func:`course_lib.memory.live_bytes` (time, tensor, bytes, kind, optional
    category); an ``op`` column names the op at the peak, a ``phase`` column shades the phases.
    Each category is one step-shaped band (gid ``memory:<category>``); the dashed line (gid
    ``memory:peak``) is at the first time the total reaches its maximum.
    """
    from course_lib.memory import live_bytes_by_category

    times, levels = live_bytes_by_category(events)
    total = levels.sum(axis=1).to_numpy()
    i = int(np.argmax(total))
    t_peak, peak_bytes = float(times[i]), float(total[i])
    t0, t1 = float(times[0]), float(times[-1])
    span = t1 - t0 if t1 > t0 else 1.0
    end = t1 + 0.02 * span  # the last level holds on; show a sliver of it
    x = np.append(times, end)
    scale, unit = _time_unit(span)
    div, bunit = _bytes_unit(max(peak_bytes, 1.0))

    if ax is None:
        _, ax = plt.subplots(figsize=(11, 4.2), layout="constrained")
    if "phase" in events.columns:
        spans = events.groupby("phase", sort=False)["time"].agg(["min", "max"])
        for phase, (lo, hi) in spans.iterrows():
            if hi <= lo:
                continue
            ax.axvspan(lo, hi, color=PHASE_SHADES.get(str(phase), "#F7F7F7"), zorder=0, lw=0)
            ax.text(
                (lo + hi) / 2, 0.98, str(phase), transform=ax.get_xaxis_transform(),
                ha="center", va="top", fontsize=9, color="#555555",
            )  # fmt: skip

    bottom = np.zeros(len(x))
    others = iter(MEMORY_OTHER_COLOURS * (1 + len(levels.columns) // len(MEMORY_OTHER_COLOURS)))
    handles = []
    for category in levels.columns:
        level = np.append(levels[category].to_numpy(), levels[category].to_numpy()[-1]) / div
        colour = MEMORY_COLOURS.get(category) or next(others)
        band = ax.fill_between(x, bottom, bottom + level, step="post", color=colour, lw=0, zorder=2)
        band.set_gid(f"memory:{category}")
        handles.append(Patch(facecolor=colour, label=category))
        bottom = bottom + level
    ax.step(x, bottom, where="post", color="#222222", lw=0.8, zorder=3)

    ax.axvline(t_peak, color="#222222", ls="--", lw=1.2, zorder=4, gid="memory:peak")
    ax.plot([t_peak], [peak_bytes / div], "o", color="#222222", ms=5, zorder=5)
    label = f"peak {peak_bytes / div:.3g} {bunit} at {t_peak * scale:.4g} {unit}"
    if "op" in events.columns:
        at_peak = events.loc[(events["time"] == t_peak) & (events["kind"] == "alloc"), "op"]
        if len(at_peak):
            label += f"\n({at_peak.iloc[-1]})"
    right = (t_peak - t0) / (end - t0) > 0.6
    ax.annotate(
        label, xy=(t_peak, peak_bytes / div), xytext=(-6 if right else 6, 4),
        textcoords="offset points", ha="right" if right else "left", va="bottom", fontsize=9,
        bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": "none", "alpha": 0.85}, zorder=6,
    )  # fmt: skip

    ax.set_xlim(t0, end)
    ax.set_ylim(0, 1.25 * peak_bytes / div if peak_bytes > 0 else 1.0)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda t, _pos: f"{t * scale:g}"))
    ax.set_xlabel(f"time ({unit})")
    ax.set_ylabel(f"live memory ({bunit})")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.legend(handles=handles[::-1], loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    if title is None:
        title = f"Live memory by category: peak {peak_bytes / div:.3g} {bunit}"
    ax.set_title(title, loc="left")
    return ax


# --- cost02: launches joined to kernels; offset bounds from messages --------------------------

TRACE_COLOURS: dict[str, str] = {
    "user_annotation": "#CC79A7",
    "cpu_op": "#56B4E9",
    "launch": "#0072B2",
    "kernel": "#E69F00",
    "gpu_memcpy": "#F0E442",
    "gpu_memset": "#F0E442",
    "comm": "#009E73",
}
"""Okabe-Ito colours of a trace timeline: host annotations, ops, launches; device kernels, copies
and communication kernels (NCCL)."""


def _bars(ax: Axes, spans: np.ndarray, row: float, height: float, colour: str, gid: str) -> None:
    if len(spans):
        bars = ax.broken_barh(
            spans, (row - height / 2, height), facecolors=colour, edgecolors="#333333",
            linewidths=0.4, zorder=2,
        )  # fmt: skip
        bars.set_gid(gid)


def launch_timeline(
    df: pd.DataFrame,
    start: float,
    end: float,
    ax: Axes | None = None,
    title: str | None = None,
    max_links: int = 80,
) -> Axes:
    """Host lanes (annotations, ops, launches) over device streams, each launch joined to its GPU activity by correlation id (cost02).

    ``df`` is one process's trace as :func:`course_lib.trace.load_trace` returns it; events that
    overlap [start, end) (seconds, trace time) are drawn, on a time axis in ms from ``start``.
    A grey line goes from each launch's end to the start of the activity with the same
    correlation id (:func:`course_lib.trace.link_launches`, never matched by time); at most
    ``max_links`` of them, evenly chosen. ``ProfilerStep#k`` annotations shade the background.
    """
    from course_lib.trace import GPU_CATEGORIES, LAUNCH_CATEGORIES, link_launches

    if not (np.isfinite(start) and np.isfinite(end) and end > start):
        raise ValueError(f"launch_timeline: need finite start < end, got {start!r}, {end!r}")
    if max_links < 0:
        raise ValueError(f"launch_timeline: max_links must be >= 0, got {max_links}")
    ts = df["ts"].to_numpy(dtype=float)
    te = ts + np.nan_to_num(df["dur"].to_numpy(dtype=float))
    inside = (df["ph"] == "X").to_numpy(dtype=bool) & (te > start) & (ts < end)
    cat = df["cat"].astype(str).to_numpy()
    name = df["name"].astype(str).to_numpy()
    is_gpu = np.isin(cat, GPU_CATEGORIES) & inside
    streams = sorted({int(s) for s in df.loc[is_gpu, "tid"]})
    lanes = ["CPU annotations", "CPU ops", "CPU launches"] + [f"GPU stream {s}" for s in streams]
    height = 0.6
    scale = 1e3

    if ax is None:
        _, ax = plt.subplots(figsize=(11, 1.4 + 0.55 * len(lanes)), layout="constrained")
    step = (
        inside & (cat == "user_annotation") & np.char.startswith(name.astype(str), "ProfilerStep")
    )
    for i in np.flatnonzero(step):
        lo, hi = max(ts[i], start), min(te[i], end)
        ax.axvspan((lo - start) * scale, (hi - start) * scale, color="#F3F3F3", zorder=0, lw=0)
        ax.text(
            (lo - start) * scale, 1.0, f" {name[i]}", transform=ax.get_xaxis_transform(),
            ha="left", va="bottom", fontsize=8.5, color="#555555",
        )  # fmt: skip

    def spans(mask: np.ndarray) -> np.ndarray:
        return np.column_stack([(ts[mask] - start) * scale, (te[mask] - ts[mask]) * scale])

    annot = inside & (cat == "user_annotation") & ~step
    _bars(ax, spans(annot), 0, height, TRACE_COLOURS["user_annotation"], "trace:annotation")
    _bars(ax, spans(inside & (cat == "cpu_op")), 1, height, TRACE_COLOURS["cpu_op"], "trace:cpu_op")
    launch = inside & np.isin(cat, LAUNCH_CATEGORIES)
    _bars(ax, spans(launch), 2, height, TRACE_COLOURS["launch"], "trace:launch")
    tid = df["tid"].to_numpy()
    for k, s in enumerate(streams):
        on = is_gpu & (tid == s)
        comm = on & np.char.startswith(name.astype(str), "nccl")
        for kind in ("kernel", "gpu_memcpy", "gpu_memset"):
            mask = on & (cat == kind) & ~comm
            _bars(ax, spans(mask), 3 + k, height, TRACE_COLOURS[kind], f"trace:{kind}:{s}")
        _bars(ax, spans(comm), 3 + k, height, TRACE_COLOURS["comm"], f"trace:comm:{s}")

    # Names inside host bars where they fit; annotations that do not fit are named below their bar.
    px_per_ms = _gantt_axes_px(ax) / ((end - start) * scale)
    taken = -np.inf  # right end (ms) of the last name written below the annotation lane
    host_lanes = ((annot, 0), (inside & (cat == "cpu_op"), 1), (launch, 2))
    for mask, row in host_lanes:
        for i in np.flatnonzero(mask):
            lo, hi = max(ts[i], start), min(te[i], end)
            width_px = _text_px(name[i], 8.0, False, ax.figure.dpi) + 6
            colour = "white" if row == 2 else "#1F2A36"
            if width_px <= (hi - lo) * scale * px_per_ms:
                ax.text(
                    ((lo + hi) / 2 - start) * scale, row, name[i], ha="center", va="center",
                    fontsize=8.0, color=colour, zorder=4, clip_on=True,
                )  # fmt: skip
            elif row == 0 and ts[i] >= start and (lo - start) * scale >= taken:
                ax.annotate(
                    name[i], xy=((lo - start) * scale, row + height / 2), xytext=(1, -1),
                    textcoords="offset points", ha="left", va="top", fontsize=7.5,
                    color="#1F2A36", zorder=4, annotation_clip=True,
                )  # fmt: skip
                taken = (lo - start) * scale + width_px / px_per_ms

    links = link_launches(df)
    links = links[
        links["launch_end"].notna()
        & (links["launch_end"] >= start)
        & (links["launch_end"] < end)
        & (links["kernel_start"] >= start)
        & (links["kernel_start"] < end)
    ]
    if len(links) > max_links:
        keep = np.unique(np.linspace(0, len(links) - 1, max_links).round().astype(int))
        links = links.iloc[keep]
    row = {s: 3 + k for k, s in enumerate(streams)}
    segments = [
        [((le - start) * scale, 2 + height / 2), ((ks - start) * scale, row[int(s)] - height / 2)]
        for le, ks, s in zip(
            links["launch_end"], links["kernel_start"], links["stream"], strict=True
        )
    ]
    from matplotlib.collections import LineCollection

    ax.add_collection(
        LineCollection(
            segments, colors="#7F7F7F", linewidths=0.7, alpha=0.7, zorder=1.5, gid="trace:links"
        )
    )

    ax.set_xlim(0.0, (end - start) * scale)
    ax.set_ylim(len(lanes) - 0.5, -0.5)
    ax.set_yticks(range(len(lanes)), lanes)
    ax.tick_params(axis="y", length=0)
    ax.set_xlabel("time (ms)")
    ax.grid(axis="x", color="#E6E6E6", lw=0.8)
    ax.set_axisbelow(True)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    drawn = {str(c.get_gid()).split(":")[1] for c in ax.collections if c.get_gid()}
    keys = [
        ("annotation", "user_annotation", "annotation"),
        ("cpu_op", "cpu_op", "cpu_op"),
        ("launch", "launch", "launch (runtime call)"),
        ("kernel", "kernel", "kernel"),
        ("gpu_memcpy", "gpu_memcpy", "memcpy"),
        ("gpu_memset", "gpu_memset", "memset"),
        ("comm", "comm", "NCCL kernel"),
    ]
    handles = [Patch(fc=TRACE_COLOURS[c], label=label) for k, c, label in keys if k in drawn]
    if segments:
        handles.append(Line2D([], [], color="#7F7F7F", lw=1.0, label="same correlation id"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    if title is not None:
        ax.set_title(title, loc="left", pad=16)
    return ax


def offset_bounds_plot(
    a_to_b: np.ndarray,
    b_to_a: np.ndarray,
    ax: Axes | None = None,
    true_offset: float | None = None,
    title: str | None = None,
    window: float | None = None,
) -> Axes:
    """Each message's bound on θ (t_A = t_B + θ) against time, and the interval they leave (cost02).

    A -> B rows (S_A, R_B) give lower bounds S_A − R_B (▲ at R_B); B -> A rows (S_B, R_A) give upper
    bounds R_A − S_B (▼ at S_B); the shaded band is :func:`course_lib.clocks.offset_bounds`.
    The y axis is in µs and shows ``window`` µs on either side of the band (default: 15 times its
    width, at least 20 µs); bounds beyond it are drawn at the edge as hollow markers.
    ``true_offset`` (s), if known, is drawn dashed.
    """
    from course_lib.clocks import offset_bounds

    ab = np.asarray(a_to_b, dtype=float).reshape(-1, 2)
    ba = np.asarray(b_to_a, dtype=float).reshape(-1, 2)
    iv = offset_bounds(ab, ba)
    if not np.isfinite(iv.width):
        raise ValueError("offset_bounds_plot needs messages in both directions")
    us = 1e6
    lows, highs = (ab[:, 0] - ab[:, 1]) * us, (ba[:, 1] - ba[:, 0]) * us
    lo, hi = iv.lower * us, iv.upper * us
    half = window if window is not None else max(15.0 * (hi - lo), 20.0)
    y0, y1 = lo - half, hi + half

    if ax is None:
        _, ax = plt.subplots(figsize=(10, 4), layout="constrained")
    ax.axhspan(lo, hi, color="#BFBFBF", alpha=0.6, lw=0, zorder=1, gid="bounds:interval")
    for x, y, marker, colour, gid in (
        (ab[:, 1], lows, "^", "#0072B2", "bounds:lower"),
        (ba[:, 0], highs, "v", "#E69F00", "bounds:upper"),
    ):
        shown = (y >= y0) & (y <= y1)
        ax.plot(x[shown], y[shown], marker, color=colour, ms=7, ls="none", zorder=3, gid=gid)
        edge = np.clip(y[~shown], y0, y1)
        ax.plot(
            x[~shown], edge, marker, mfc="none", mec=colour, ms=7, ls="none", zorder=3,
            gid=f"{gid}:beyond", clip_on=False,
        )  # fmt: skip
    if true_offset is not None:
        ax.axhline(true_offset * us, color="#222222", ls="--", lw=1.2, zorder=2, gid="bounds:true")
    ax.set_ylim(y0, y1)
    ax.set_xlabel("time on clock B (s)")
    ax.set_ylabel("offset θ = t_A − t_B (µs)")
    ax.grid(color="#EBEBEB", lw=0.8)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    handles = [
        Line2D([], [], marker="^", color="#0072B2", ls="none", label="A→B: θ > S_A − R_B"),
        Line2D([], [], marker="v", color="#E69F00", ls="none", label="B→A: θ < R_A − S_B"),
        Line2D([], [], marker="^", mfc="none", mec="#777777", ls="none", label="bound beyond axis"),
        Patch(fc="#BFBFBF", label=f"interval, width {hi - lo:.3g} µs"),
    ]
    if true_offset is not None:
        handles.append(Line2D([], [], color="#222222", ls="--", label="true θ"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    if title is None:
        title = f"{lo:.1f} µs < θ < {hi:.1f} µs from {len(ab)} + {len(ba)} messages"
    ax.set_title(title, loc="left")
    return ax


# --- cost04: from the peak to the quoted utilization, stop by stop --------------------------

UTILIZATION_COLOURS: dict[str, str] = {
    "peak": "#9AA5B1",
    "stop": "#0072B2",
    "drop": "#D55E00",
    "quote": "#E69F00",
}
"""Okabe-Ito colours of :func:`utilization_waterfall`: peaks, rates reached, losses, the quoted rate."""


def utilization_waterfall(
    stops: Iterable[tuple[str, float]],
    drops: Iterable[str],
    peak: float,
    ax: Axes | None = None,
    *,
    peak_stops: int = 1,
    hatched: Iterable[int] = (),
    quote: bool = True,
    title: str | None = None,
) -> Axes:
    """Waterfall from a peak to a quoted FLOP/s: a bar per stop, a floating bar per drop, each stop as % of ``peak`` (cost04).

    ``stops`` are (label, FLOP/s per device) from the top down and must not increase; ``drops``
    names what is lost between consecutive stops (one fewer than stops). The first ``peak_stops``
    stops are peaks (grey; those in ``hatched`` are drawn hatched: peaks not eligible); with
    ``quote`` the last stop is the quoted number (orange). Every stop is labelled with its share
    of ``peak``, every drop with the percentage points it removes; the x axis is TFLOP/s.
    """
    stops, drops = list(stops), [str(d) for d in drops]
    labels = [str(s[0]) for s in stops]
    values = np.array([float(s[1]) for s in stops], dtype=float)
    if len(values) < 1:
        raise ValueError("utilization_waterfall needs at least one stop")
    if len(drops) != len(values) - 1:
        raise ValueError(
            f"utilization_waterfall: {len(values)} stops need {len(values) - 1} drops, "
            f"got {len(drops)}"
        )
    if not (np.isfinite(values).all() and (values >= 0).all()):
        raise ValueError("utilization_waterfall: every stop must be a finite FLOP/s >= 0")
    if (np.diff(values) > 1e-9 * values.max()).any():
        i = int(np.argmax(np.diff(values) > 1e-9 * values.max()))
        raise ValueError(
            f"utilization_waterfall: stops must not increase, but {labels[i + 1]!r} "
            f"({values[i + 1]:.4g}) is above {labels[i]!r} ({values[i]:.4g})"
        )
    if not (np.isfinite(peak) and peak > 0):
        raise ValueError(f"utilization_waterfall: peak must be a FLOP/s > 0, got {peak}")
    if not 0 <= peak_stops <= len(values):
        raise ValueError(f"utilization_waterfall: peak_stops must be in 0..{len(values)}")
    if ax is None:
        _, ax = plt.subplots(
            figsize=(8.0, 0.45 * (2 * len(values) - 1) + 1.2), layout="constrained"
        )

    hatch_rows = {int(i) for i in hatched}
    tera = values / 1e12
    span = max(tera.max(), peak / 1e12)
    rows, names, row = [], [], 0
    for i, (name, v) in enumerate(zip(labels, tera, strict=True)):
        is_peak = i < peak_stops
        is_quote = quote and i == len(values) - 1 and not is_peak
        colour = UTILIZATION_COLOURS["peak" if is_peak else "quote" if is_quote else "stop"]
        hatch = "//" if i in hatch_rows else None
        ax.barh(
            row,
            v,
            height=0.72,
            color=colour if hatch is None else "white",
            edgecolor=colour if hatch is None else UTILIZATION_COLOURS["peak"],
            hatch=hatch,
            lw=1.0,
            gid=f"stop{i}",
        )
        ax.text(
            v + 0.012 * span,
            row,
            f"{values[i] / peak:.1%}",
            va="center",
            ha="left",
            fontsize=9,
            fontweight="bold" if is_quote else "normal",
        )
        rows.append(row)
        names.append(name)
        row += 1
        if i < len(drops):
            lost = v - tera[i + 1]
            ax.barh(
                row,
                lost,
                left=tera[i + 1],
                height=0.5,
                color=UTILIZATION_COLOURS["drop"],
                alpha=0.45,
                lw=0,
                gid=f"drop{i}",
            )
            points = (values[i] - values[i + 1]) / peak * 100
            ax.text(
                v + 0.012 * span,
                row,
                f"−{points:.1f} pts" if points >= 0.05 else "none",
                va="center",
                ha="left",
                fontsize=8,
                color="#7A3300",
            )
            rows.append(row)
            names.append(str(drops[i]))
            row += 1
    ax.axvline(peak / 1e12, color="#333333", ls="--", lw=1.0, zorder=0)
    ax.set_yticks(rows, names)
    for k, tick in enumerate(ax.get_yticklabels()):
        if k % 2 == 1:
            tick.set_color("#7A3300")
            tick.set_fontstyle("italic")
            tick.set_fontsize(8.5)
    ax.set_ylim(row - 0.4, -0.6)
    ax.set_xlim(0.0, span * 1.16)
    ax.set_xlabel(f"TFLOP/s per device   (dashed line: 100% = {peak / 1e12:.4g} TFLOP/s)")
    ax.tick_params(axis="y", length=0)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.grid(axis="x", color="#E6E6E6", lw=0.8)
    ax.set_axisbelow(True)
    if title is not None:
        ax.set_title(title, loc="left")
    return ax
