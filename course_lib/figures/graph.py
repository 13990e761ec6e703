"""Step dependency-graph figures (cost01): Gantt chart of a schedule, the graph itself, slack bars, what-if curve."""

from __future__ import annotations

from itertools import pairwise
from typing import TYPE_CHECKING

import matplotlib.pyplot as plt  # noqa: F401  (used by the plotting functions below)
import numpy as np
from matplotlib.lines import Line2D
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Patch
from matplotlib.path import Path
from matplotlib.ticker import FuncFormatter

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    import networkx as nx
    import pandas as pd
    from matplotlib.axes import Axes

from course_lib.figures.style import axes_px, count_label, text_px, time_unit

# --- cost01: Gantt chart of a step schedule (course_lib.graph.schedule) ---------------------

GANTT_CRITICAL_COLOUR = "#D55E00"
"""Okabe-Ito vermillion: bars of ops on the critical path."""
GANTT_CRITICAL_EDGE = "#4A1A00"
"""Dark edge of critical-path bars and colour of the arrows that trace the path."""
GANTT_OTHER_COLOUR = "#C9D3DD"
"""Muted grey-blue: bars of ops off the critical path (they have slack)."""
GANTT_OTHER_EDGE = "#8A99A8"
"""Edge of bars off the critical path."""


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
    scale, unit = time_unit(span)
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
            f"Step schedule: {count_label(len(ops), 'op')} on {count_label(len(lanes), 'lane')}, "
            f"{int(is_crit.sum())} on the critical path"
        )
    ax.set_title(title, loc="left", pad=16)

    # Op names: inside the bar where they fit, else beside its top (or bottom) edge, starting at
    # the bar's start, on a side no path arrow leaves from and not over an earlier label.
    fig = ax.figure
    px_per_s = axes_px(ax) / (x1 - x0)
    taken = {(i, side): -np.inf for i in range(len(lanes)) for side in (-1, 1)}  # right end, px
    for k in np.lexsort((ends, starts)):
        op, crit, i = ops[k], bool(is_crit[k]), int(row[k])
        for size in (8.5, 7.0):
            if text_px(op, size, crit, fig.dpi) + 6 <= widths[k] * px_per_s:
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
                taken[(i, side)] = left + text_px(op, 7.0, False, fig.dpi)
                break
    return ax


def _columns(g: nx.DiGraph, topo: Sequence[str], row: Mapping[str, int]) -> dict[str, int]:
    """Column of each op: its topological generation, moved right while another op of its lane
    already sits there (two ops of one lane without an order between them), so every edge still
    runs left to right and no two boxes overlap."""
    column: dict[str, int] = {}
    taken: set[tuple[int, int]] = set()
    for op in topo:
        c = max((column[u] + 1 for u in g.pred[op]), default=0)
        while (row[op], c) in taken:
            c += 1
        column[op] = c
        taken.add((row[op], c))
    return column


class _EdgeRouter:
    """Paths for the arrows of :func:`dependency_graph` that pass through no box but their own two.

    Boxes are centred on (column, row) in data coordinates. An arrow leaves the right side of u
    and enters the left side of v. The first clear route wins: a straight line; an L (along u's
    row, then up or down the gap before v's column; or up or down the gap after u's column, then
    along v's row); a gentle arc; and last a route along the empty gaps between columns and rows,
    which no box ever occupies. Arrows that share a gap are spread across it.
    """

    SAMPLES = 80

    def __init__(
        self, centres: Mapping[str, tuple[float, float]], box_w: float, box_h: float, rows: int
    ) -> None:
        self.centres = dict(centres)
        self.half_w, self.half_h = box_w / 2, box_h / 2
        self.rows = rows
        self.gap_w = 1.0 - box_w  # empty width between two columns
        self.gap_h = 1.0 - box_h  # empty height between two rows
        self._uses: dict[tuple[str, float], int] = {}

    def hits(self, points: np.ndarray, u: str, v: str) -> bool:
        """True if any point lies inside a box other than u's and v's (boxes grown by a hair)."""
        for op, (x, y) in self.centres.items():
            if op in (u, v):
                continue
            inside = (np.abs(points[:, 0] - x) < self.half_w + 0.01) & (
                np.abs(points[:, 1] - y) < self.half_h + 0.03
            )
            if inside.any():
                return True
        return False

    def _sample(self, corners: list[tuple[float, float]]) -> np.ndarray:
        t = np.linspace(0.0, 1.0, self.SAMPLES)[:, None]
        pts = [np.asarray(a) + t * (np.asarray(b) - np.asarray(a)) for a, b in pairwise(corners)]
        return np.concatenate(pts)

    def _shift(self, axis: str, at: float, width: float) -> float:
        """Where the next arrow in the gap at ``at`` runs: centre, then either side of it."""
        k = self._uses.get((axis, at), 0)
        self._uses[(axis, at)] = k + 1
        return at + [0.0, 0.5, -0.5, 0.25, -0.25, 0.75, -0.75][k % 7] * width / 2

    def _rounded(self, corners: list[tuple[float, float]]) -> Path:
        """The polyline through ``corners`` with its inner corners rounded."""
        rx, ry = 0.45 * self.gap_w / 2, 0.1
        verts: list[tuple[float, float]] = [corners[0]]
        codes = [Path.MOVETO]
        for prev, here, nxt in zip(corners, corners[1:], corners[2:], strict=False):
            into = np.subtract(here, prev)
            out = np.subtract(nxt, here)
            r_in = min(1.0, min(rx / max(abs(into[0]), 1e-9), ry / max(abs(into[1]), 1e-9)))
            r_out = min(1.0, min(rx / max(abs(out[0]), 1e-9), ry / max(abs(out[1]), 1e-9)))
            verts += [tuple(np.asarray(here) - into * min(r_in, 0.5))]
            codes += [Path.LINETO]
            verts += [here, tuple(np.asarray(here) + out * min(r_out, 0.5))]
            codes += [Path.CURVE3, Path.CURVE3]
        verts.append(corners[-1])
        codes.append(Path.LINETO)
        return Path(np.asarray(verts, dtype=float), codes)

    def route(self, u: str, v: str) -> Path:
        (xu, yu), (xv, yv) = self.centres[u], self.centres[v]
        p0 = (xu + self.half_w, yu)
        p3 = (xv - self.half_w, yv)
        if xv - xu <= 1 or not self.hits(self._sample([p0, p3]), u, v):
            return Path([p0, p3])  # to the next column only gaps lie in between
        if yu != yv:
            # A run along a row keeps off the row's centre line, where stream-order arrows run.
            lift = 0.14 if yv > yu else -0.14
            along_u = [(p0[0], yu + lift), (xv - 0.5, yu + lift), (xv - 0.5, yv), p3]
            along_v = [p0, (xu + 0.5, yu), (xu + 0.5, yv - lift), (p3[0], yv - lift)]
            for corners, bend in ((along_u, 1), (along_v, 1)):
                if not self.hits(self._sample(corners), u, v):
                    corners[bend] = (
                        self._shift("x", corners[bend][0], self.gap_w),
                        corners[bend][1],
                    )
                    corners[bend + 1] = (corners[bend][0], corners[bend + 1][1])
                    return self._rounded(corners)
        t = np.linspace(0.0, 1.0, self.SAMPLES)[:, None]
        mid = (np.asarray(p0) + np.asarray(p3)) / 2
        for bend in (-0.3, 0.3, -0.5, 0.5):  # negative: above (rows grow downwards)
            ctrl = mid + [0.0, bend]
            curve = (1 - t) ** 2 * np.asarray(p0) + 2 * (1 - t) * t * ctrl + t**2 * np.asarray(p3)
            in_view = ((curve[:, 1] > -0.5) & (curve[:, 1] < self.rows - 0.5)).all()
            if in_view and not self.hits(curve, u, v):
                return Path([p0, tuple(ctrl), p3], [Path.MOVETO, Path.CURVE3, Path.CURVE3])
        # Along the gaps: after u's column, between two rows (nearest u's), before v's column.
        gaps = [r + 0.5 for r in range(-1, self.rows) if -0.5 < r + 0.5 < self.rows - 0.5]
        lo, hi = sorted((yu, yv))
        between = [y for y in gaps if lo < y < hi] or gaps or [yu - 0.5]
        y_gap = self._shift("y", min(between, key=lambda y: (abs(y - yu), y > yu)), self.gap_h)
        x1 = self._shift("x", xu + 0.5, self.gap_w)
        x2 = self._shift("x", xv - 0.5, self.gap_w)
        return self._rounded([p0, (x1, yu), (x1, y_gap), (x2, y_gap), (x2, yv), p3])


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
    An op's column is its dependency depth, moved right if another op of its lane is there; no
    arrow passes through a box other than its own two ops' (see ``_EdgeRouter``).
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
    column = _columns(g, topo, row)
    num_columns = max(column.values()) + 1
    durations = np.array([float(g.nodes[op]["duration"]) for op in topo])
    scale, unit = time_unit(float(durations.max()))

    if ax is None:
        _, ax = plt.subplots(
            figsize=(min(11.0, max(6.0, 0.8 * num_columns + 1.6)), 1.3 + 0.8 * len(lanes)),
            layout="constrained",
        )
    box_w, box_h = 0.86, 0.62
    # One font size for every box, small enough for the longest name to fit its box.
    fig = ax.figure
    box_px = ax.get_position().width * fig.get_figwidth() * fig.dpi / num_columns * box_w
    widest = max(text_px(op, 7.5, True, fig.dpi) for op in topo)
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
    centres = {op: (float(column[op]), float(row[op])) for op in topo}
    router = _EdgeRouter(centres, box_w, box_h, len(lanes))
    for u, v in g.edges:
        kind = kinds.get((u, v)) or ("stream order" if lane_of[u] == lane_of[v] else "dependency")
        style = EDGE_KIND_STYLES.get(kind, {"color": "#222222", "linestyle": ":", "lw": 1.3})
        used.setdefault(kind, style)
        arrow = FancyArrowPatch(
            path=router.route(u, v),
            arrowstyle="-|>",
            mutation_scale=9,
            color=style["color"],
            linestyle=style["linestyle"],
            lw=style["lw"],
            zorder=2,
            gid=f"edge:{u}->{v}:{kind}",
        )
        ax.add_patch(arrow)

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
            f"Dependency graph: {count_label(len(topo), 'op')}, {count_label(g.number_of_edges(), 'edge')} "
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
    scale, unit = time_unit(span)
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
    scale, unit = time_unit(t_hi)
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
