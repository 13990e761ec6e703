"""Pipeline schedule figures (pipe02 onward): schedule grids of F/B/W actions per rank over time,
the anatomy of a fill-drain step, its two bubbles against m, and activation stashes over time."""

from __future__ import annotations

from collections.abc import Mapping
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


# --- pipe02: the fill-drain step, its two bubbles, its stashes ----------------------------------

PIPELINE_LINE_COLOURS = ("#0072B2", "#D55E00", "#CC79A7", "#009E73")
"""Okabe-Ito colours, in turn, of the curves of several pipelines (by p, or by schedule)."""


def fill_drain_critical_path(num_stages: int, num_microbatches: int) -> list[tuple[str, int, int]]:
    """The critical path of a balanced fill-drain (GPipe) step as (kind, stage, microbatch) (pipe02).

    Microbatch 0's forward down to the last stage, the last stage's m forwards and m backwards,
    then the last microbatch's gradient back up: 2(m + p - 1) actions, none of which waits.
    """
    p, m = num_stages, num_microbatches
    return (
        [("F", s, 0) for s in range(p - 1)]
        + [("F", p - 1, j) for j in range(m)]
        + [("B", p - 1, j) for j in range(m)]
        + [("B", s, m - 1) for s in range(p - 2, -1, -1)]
    )


def fill_drain_anatomy(
    timeline: Timeline, ax: Axes | None = None, title: str | None = None
) -> Axes:
    """A fill-drain (GPipe) schedule grid with its critical path outlined and its idle named (pipe02).

    The boxes off the critical path (:func:`fill_drain_critical_path`) are faded; the path's are
    redrawn on top with a black edge (gids ``path:F`` and ``path:B``). The three idle triangles
    are labelled (gid ``idle-label``): "fill" on the last rank before its first forward, "drain
    F · fill B" on rank 0 between its last forward and first backward, "drain" on the last rank
    after its last backward. Two spans under the grid (gid ``span-label``) measure the path's
    forwards and backwards.
    """
    schedule = timeline.schedule
    p, m = schedule.num_stages, schedule.num_microbatches
    if schedule.num_ranks != p or schedule.has_weight_actions:
        raise ValueError("fill_drain_anatomy draws one stage per rank and F/B actions only")
    events = timeline.events.set_index(["kind", "stage", "microbatch"]).sort_index()
    chain = fill_drain_critical_path(p, m)
    try:
        on_path = events.loc[chain].reset_index()
    except KeyError as exc:
        raise ValueError(f"the timeline lacks an action of the fill-drain path: {exc}") from None
    if title is None:
        title = f"The critical path (outlined): {len(chain)} actions back to back"
    ax = schedule_grid(timeline, ax=ax, title=title)
    for boxes in ax.collections:  # fade every action; the idle background stays as it is
        if not boxes.get_gid().endswith("idle"):
            boxes.set_alpha(0.35)
    for (kind, stage), group in on_path.groupby(["kind", "stage"]):  # the path, on top
        path = ax.broken_barh(
            np.column_stack([group["start"], group["end"] - group["start"]]),
            (stage - 0.4, 0.8),
            zorder=2,
            facecolors=SCHEDULE_COLOURS[kind],
            edgecolors="black",
            linewidths=1.5,
        )
        path.set_gid(f"path:{kind}")

    def edge(kind: str, stage: int, column: str, pick: str) -> float:
        """The earliest ("min") or latest ("max") start or end of a kind's actions on a stage."""
        values = events.xs((kind, stage), level=("kind", "stage"))[column]
        return float(values.min() if pick == "min" else values.max())

    tag = dict(ha="center", va="center", fontweight="bold", bbox=dict(fc="white", ec="none"))
    span = timeline.makespan
    if p > 1:
        last = p - 1
        gaps = [
            (0.0, edge("F", last, "start", "min"), last, "fill"),
            (edge("F", 0, "end", "max"), edge("B", 0, "start", "min"), 0, "drain F · fill B"),
            (edge("B", last, "end", "max"), span, last, "drain"),
        ]
        for x0, x1, rank, text in gaps:
            if x1 > x0:
                ax.text((x0 + x1) / 2, rank, text, gid="idle-label", **tag)

    # Two spans under the last rank: the path's forwards, then its backwards.
    scale, unit = time_unit(span if span > 0 else 1.0)
    forwards_end = float(on_path.loc[on_path["kind"] == "F", "end"].max())
    ax.set_ylim(p + 0.3, -0.5)
    for x0, x1, what in [(0.0, forwards_end, "forwards"), (forwards_end, span, "backwards")]:
        ax.annotate("", xy=(x0, p - 0.05), xytext=(x1, p - 0.05), arrowprops=dict(arrowstyle="<->"))
        label = f"m + p − 1 = {m + p - 1} {what}: {(x1 - x0) * scale:.3g} {unit}"
        ax.text((x0 + x1) / 2, p, label, ha="center", va="center", gid="span-label",
                bbox=dict(fc="white", ec="none"))  # fmt: skip
    return ax


def bubble_curves(
    stage_counts: tuple[int, ...] = (4, 16),
    max_microbatches: int = 128,
    forward_time: float = 1e-3,
    backward_time: float = 2e-3,
    mark: tuple[int, int] | None = (4, 8),
    ax: Axes | None = None,
) -> Axes:
    """The two "bubbles" of balanced fill-drain against m, one colour per p (pipe02).

    Solid: the elapsed idle fraction (p - 1)/(m + p - 1); dashed: the overhead relative to ideal
    compute (p - 1)/m (gids ``idle:p=<p>`` and ``overhead:p=<p>``), the gap between them shaded.
    White circles at m = 2, 8, 32, 128 are ``simulate(gpipe(p, m), ...)``'s idle_fraction and
    overhead (gid ``simulated:p=<p>``). ``mark`` = (p, m) annotates both values of one pipeline.
    """
    from course_lib.pipeline import gpipe, simulate

    if ax is None:
        _, ax = plt.subplots(figsize=(10, 4), layout="constrained")
    m_values = np.arange(1, max_microbatches + 1)
    checked = [k for k in (2, 8, 32, 128) if k <= max_microbatches]
    for p, colour in zip(stage_counts, PIPELINE_LINE_COLOURS, strict=False):
        idle, over = (p - 1) / (m_values + p - 1), (p - 1) / m_values
        ax.fill_between(m_values, idle, np.minimum(over, 1.0), color=colour, alpha=0.12, lw=0)
        ax.plot(m_values, idle, color=colour, lw=2, gid=f"idle:p={p}", label=f"p = {p}: idle")
        ax.plot(m_values, over, color=colour, lw=2, ls="--", gid=f"overhead:p={p}",
                label=f"p = {p}: overhead")  # fmt: skip
        runs = [simulate(gpipe(p, k), forward_time, backward_time) for k in checked]
        ys = [r.idle_fraction for r in runs] + [r.overhead for r in runs]
        ax.plot(checked + checked, ys, "o", color=colour, mfc="white", gid=f"simulated:p={p}")
    ax.plot([], [], "o", color="grey", mfc="white", label="simulate()")
    if mark is not None:
        p, k = mark
        idle, over = (p - 1) / (k + p - 1), (p - 1) / k
        for value, what, xy_text in [(over, "overhead", (1.1, 0.4)), (idle, "idle", (1.1, 0.12))]:
            ax.annotate(f"p = {p}, m = {k}:\n{what} {value:.1%}", (k, value), xy_text,
                        arrowprops=dict(arrowstyle="->"), va="center")  # fmt: skip
    ax.set(xscale="log", xlim=(1, max_microbatches), ylim=(0, 1), xlabel="num_microbatches m")
    ticks = [t for t in (1, 2, 4, 8, 16, 32, 64, 128, 256) if t <= max_microbatches]
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.minorticks_off()
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _pos: f"{y:.0%}"))
    ax.grid(alpha=0.3)
    ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title(
        "Solid: elapsed idle fraction (p − 1)/(m + p − 1) · dashed: overhead vs ideal compute "
        "(p − 1)/m",
        loc="left",
    )
    return ax


def stash_curves(
    runs: Mapping[str, Timeline],
    stage: int = 0,
    bytes_per_microbatch: float | None = None,
    ax: Axes | None = None,
) -> Axes:
    """Live activation stashes on one stage over time, one step curve per named run (pipe02).

    Each curve (gid ``stash:<name>``) is ``Timeline.in_flight(stage)``; its legend entry gives the
    run's makespan and peak. With ``bytes_per_microbatch`` a right axis reads the count in GiB.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(9, 3.2), layout="constrained")
    span = max(run.makespan for run in runs.values())
    scale, unit = time_unit(span)
    peak_all = 0
    for (name, run), colour in zip(runs.items(), PIPELINE_LINE_COLOURS, strict=False):
        t, count = run.in_flight(stage)
        peak = int(count.max()) if len(count) else 0
        peak_all = max(peak_all, peak)
        label = f"{name}: step {run.makespan * scale:.3g} {unit}, peak {peak} microbatches"
        ax.step(t * scale, count, where="post", color=colour, lw=2.2, label=label,
                gid=f"stash:{name}")  # fmt: skip
    ax.set(xlabel=f"time ({unit})", ylabel="stashed microbatches", xlim=(0, span * scale),
           ylim=(0, peak_all * 1.4 + 1))  # fmt: skip
    if bytes_per_microbatch:
        gib = bytes_per_microbatch / 2**30
        right = ax.secondary_yaxis("right", functions=(lambda n: n * gib, lambda g: g / gib))
        right.set_ylabel(f"GiB at {gib:.4g} GiB each")
    ax.grid(alpha=0.3)
    ax.legend(frameon=False, loc="upper right")
    ax.set_title(f"Activations stashed on stage {stage}", loc="left")
    return ax
