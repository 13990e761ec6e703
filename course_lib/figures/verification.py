"""Schedule-verification figures (pipe10): per-rank program grids with the verifier's violations
marked, live activation stashes per stage against a bound, and two traces of "the same" step side
by side (one of them skipped work).

The grid draws program order, not time: box k of rank r is the k-th entry of rank r's list, so a
malformed entry (an unknown kind, an index out of range) has a place too. The geometry
(:func:`grid_boxes`) is shared with pipe10's explorer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.collections import PolyCollection
from matplotlib.patches import Patch

from course_lib.figures.pipeline import SCHEDULE_COLOURS, schedule_grid

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from course_lib.pipeline import Timeline
    from course_lib.pipeline.verify import Violation

VIOLATION_COLOUR = "#D55E00"
"""Outline of an entry the verifier flags (Okabe-Ito vermillion)."""
UNKNOWN_COLOUR = "#BBBBBB"
"""Fill of an entry whose kind is not F, B or W."""
BOX_WIDTH, BOX_HEIGHT = 0.86, 0.7


@dataclass(frozen=True)
class GridBox:
    """One entry of a rank's list in the grid: where it is, its fill colour, its label and the
    rules the verifier reports at it (empty when it is fine)."""

    rank: int
    position: int
    colour: str
    label: str
    rules: tuple[str, ...]


def _parts(entry: object) -> tuple[object, object, object]:
    if hasattr(entry, "kind"):
        return entry.kind, entry.stage, entry.microbatch  # type: ignore[attr-defined]
    try:
        kind, stage, microbatch = entry  # type: ignore[misc]
    except (TypeError, ValueError):
        return "?", "?", "?"
    return kind, stage, microbatch


def grid_boxes(
    actions: object, violations: Sequence[Violation] = (), *, show_stage: bool | None = None
) -> list[GridBox]:
    """A :class:`GridBox` per entry of ``actions`` (per-rank lists of Actions or (kind, stage,
    microbatch) tuples, or a Schedule), flagged with the rules of the violations at its (rank,
    position); labels are the microbatch, or "stage:microbatch" when ``show_stage`` (default:
    when some rank lists more than one stage) (pipe10)."""
    lists = actions.actions if hasattr(actions, "actions") else actions
    lists = [list(rank_actions) for rank_actions in lists]  # type: ignore[union-attr]
    at: dict[tuple[int, int], list[str]] = {}
    for v in violations:
        if v.rank is not None and v.position is not None:
            at.setdefault((v.rank, v.position), []).append(v.rule)
    if show_stage is None:
        show_stage = any(len({_parts(e)[1] for e in rank_actions}) > 1 for rank_actions in lists)
    boxes = []
    for rank, rank_actions in enumerate(lists):
        for position, entry in enumerate(rank_actions):
            kind, stage, microbatch = _parts(entry)
            colour = (
                SCHEDULE_COLOURS.get(kind, UNKNOWN_COLOUR)
                if isinstance(kind, str)
                else (UNKNOWN_COLOUR)
            )
            text = f"{stage}:{microbatch}" if show_stage else f"{microbatch}"
            if colour == UNKNOWN_COLOUR:
                text = f"{kind}{text}" if isinstance(kind, str) and len(kind) <= 2 else "?"
            rules = tuple(dict.fromkeys(at.get((rank, position), ())))
            boxes.append(GridBox(rank, position, colour, text, rules))
    return boxes


def off_grid(violations: Sequence[Violation], limit: int = 6) -> str:
    """The violations with no place in the grid (missing actions, stage-wide numeric or memory
    findings), one short line each, at most ``limit`` then a count of the rest (pipe10)."""
    lines = []
    for v in violations:
        if v.position is not None:
            continue
        lines.append(f"[{v.rule}] {v.action if v.rule == 'missing' else v.message}")
    if len(lines) > limit:
        lines = [*lines[:limit], f"... and {len(lines) - limit} more"]
    return "\n".join(lines)


def box_geometry(
    boxes: Sequence[GridBox],
) -> tuple[list[list[tuple[float, float]]], list[str], list[str], list[float]]:
    """Corners, fill, edge colour and edge width of each box (flagged ones outlined thick)."""
    verts, faces, edges, widths = [], [], [], []
    for box in boxes:
        x0, y0 = box.position - BOX_WIDTH / 2, box.rank - BOX_HEIGHT / 2
        x1, y1 = x0 + BOX_WIDTH, y0 + BOX_HEIGHT
        verts.append([(x0, y0), (x1, y0), (x1, y1), (x0, y1)])
        faces.append(box.colour)
        edges.append(VIOLATION_COLOUR if box.rules else "white")
        widths.append(2.6 if box.rules else 0.5)
    return verts, faces, edges, widths


def draw_boxes(ax: Axes, boxes: Sequence[GridBox], fontsize: float = 8.0) -> None:
    """The grid's boxes as one PolyCollection (gid "boxes") plus their labels."""
    verts, faces, edges, widths = box_geometry(boxes)
    collection = PolyCollection(verts, facecolors=faces, edgecolors=edges, linewidths=widths)
    collection.set_gid("boxes")
    ax.add_collection(collection)
    for box in boxes:
        ax.text(box.position, box.rank, box.label, ha="center", va="center", fontsize=fontsize)


def grid_frame(ax: Axes, num_ranks: int, width: int) -> None:
    """Limits, rank labels and the x label of a program grid ``width`` entries wide."""
    ax.set_xlim(-0.6, max(width, 1) - 0.4)
    ax.set_ylim(num_ranks - 0.5, -0.5)
    ax.set_yticks(range(num_ranks), [f"rank {r}" for r in range(num_ranks)])
    ax.set_xlabel("position in the rank's list (program order, not time)")
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)


def grid_legend(ax: Axes, **kwargs: object) -> None:
    handles = [Patch(facecolor=c, label=k) for k, c in SCHEDULE_COLOURS.items()]
    handles.append(Patch(facecolor=UNKNOWN_COLOUR, label="unknown kind"))
    handles.append(
        Patch(facecolor="white", edgecolor=VIOLATION_COLOUR, linewidth=2.2, label="flagged")
    )
    ax.legend(handles=handles, frameon=False, fontsize=9, **kwargs)  # type: ignore[arg-type]


def program_grid(
    actions: object,
    violations: Sequence[Violation] = (),
    ax: Axes | None = None,
    title: str | None = None,
) -> Axes:
    """Each rank's list as a row of boxes in program order, coloured by kind and labelled with
    the microbatch; the entries ``violations`` name outlined, the others listed below (pipe10)."""
    boxes = grid_boxes(actions, violations)
    num_ranks = 1 + max((b.rank for b in boxes), default=0)
    lists = actions.actions if hasattr(actions, "actions") else actions
    num_ranks = max(num_ranks, len(lists))  # type: ignore[arg-type]
    width = 1 + max((b.position for b in boxes), default=0)
    if ax is None:
        _, ax = plt.subplots(figsize=(10, 1.3 + 0.45 * num_ranks), layout="constrained")
    draw_boxes(ax, boxes)
    grid_frame(ax, num_ranks, width)
    grid_legend(ax, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    below = off_grid(violations)
    if below:
        ax.text(
            0.0, -0.32, below, transform=ax.transAxes, va="top", ha="left", fontsize=9,
            color=VIOLATION_COLOUR, family="monospace",
        )  # fmt: skip
    flagged = sum(1 for b in boxes if b.rules)
    ax.set_title(
        title
        or f"{len(violations)} violation{'s' * (len(violations) != 1)}, {flagged} in the lists",
        loc="left",
    )
    return ax


def in_flight_bars(
    peaks: Mapping[str, Sequence[int]],
    bound: Sequence[int],
    ax: Axes | None = None,
    title: str | None = None,
) -> Axes:
    """Peak live activation stashes per stage for each schedule (grouped bars), with the bound
    per stage as a black step; bars above it are outlined in vermillion (pipe10)."""
    names = list(peaks)
    bound = np.asarray(bound, dtype=float)
    num_stages = len(bound)
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3.2), layout="constrained")
    width = 0.8 / max(len(names), 1)
    colours = ("#0072B2", "#009E73", "#CC79A7", "#F0E442")
    for k, name in enumerate(names):
        values = np.asarray(peaks[name], dtype=float)
        if len(values) != num_stages:
            raise ValueError(f"peaks[{name!r}] has {len(values)} stages, bound has {num_stages}")
        x = np.arange(num_stages) - 0.4 + width * (k + 0.5)
        over = values > bound
        bars = ax.bar(
            x, values, width * 0.92, color=colours[k % len(colours)], label=name,
            edgecolor=[VIOLATION_COLOUR if o else "none" for o in over],
            linewidth=[2.4 if o else 0 for o in over],
        )  # fmt: skip
        for bar in bars:
            bar.set_gid(f"bars:{name}")
    edges = np.arange(num_stages + 1) - 0.5
    step = ax.stairs(bound, edges, color="black", linewidth=2.0, label="bound", baseline=None)
    ax.set_xticks(range(num_stages), [f"stage {s}" for s in range(num_stages)])
    ax.set_ylabel("peak live stashes\n(microbatches)")
    ax.set_ylim(0, max([*bound, *(max(v) for v in peaks.values())]) * 1.15 + 0.5)
    # one plain swatch per schedule (a bar's own handle would carry its outline), and the outline
    # explained once, when some bar has it
    handles = [Patch(color=colours[k % len(colours)], label=n) for k, n in enumerate(names)]
    handles.append(step)
    if any(np.any(np.asarray(peaks[n], dtype=float) > bound) for n in names):
        handles.append(
            Patch(facecolor="white", edgecolor=VIOLATION_COLOUR, linewidth=2.4, label="above the bound")
        )  # fmt: skip
    ax.legend(
        handles=handles, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=9
    )
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    if title:
        ax.set_title(title, loc="left")
    return ax


def faster_traces(timelines: Mapping[str, Timeline]) -> Figure:
    """Schedule grids of several timelines, one above the other on one time axis, each titled
    with its name, makespan and microbatches per second (pipe10)."""
    n = len(timelines)
    rows = [t.schedule.num_ranks for t in timelines.values()]
    fig, axes = plt.subplots(
        n, 1, figsize=(10, 0.9 * n + 0.42 * sum(rows)), layout="constrained", sharex=True,
        gridspec_kw={"height_ratios": rows},
    )  # fmt: skip
    axes = np.atleast_1d(axes)
    span = max(t.makespan for t in timelines.values())
    for ax, (name, timeline) in zip(axes, timelines.items(), strict=True):
        rate = timeline.schedule.num_microbatches / timeline.makespan
        schedule_grid(
            timeline,
            ax=ax,
            title=f"{name}: {timeline.makespan * 1e3:.1f} ms, {rate:.0f} microbatches/s",
        )
        ax.set_xlim(0.0, span)
    for ax in axes[:-1]:
        ax.set_xlabel("")
    return fig
