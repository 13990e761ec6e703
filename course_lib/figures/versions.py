"""Weight-version figures (pipe07): schedule grids coloured by the weight version each action
runs on (flushed steps, PipeDream's weight stashing, PipeDream-2BW), and loss against iteration
for gradient descent with a delayed gradient on a quadratic.

The grids draw boxes from :func:`version_boxes` (a simulated timeline and its
:func:`~course_lib.pipeline.versions.weight_versions`) or :func:`flushed_steps` (several flushed
1F1B steps back to back); the loss curves run
:func:`~course_lib.pipeline.versions.delayed_gradient_descent`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.colors import to_rgba
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter

from course_lib.figures.pipeline import IDLE_COLOUR, PIPELINE_LINE_COLOURS
from course_lib.figures.style import time_unit

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from course_lib.pipeline import Timeline
    from course_lib.pipeline.versions import WeightVersions

VERSION_COLOURS = ("#56B4E9", "#E69F00", "#009E73", "#F0E442", "#0072B2", "#CC79A7")
"""Face colours of weight versions, cycled: version v gets ``VERSION_COLOURS[v % 6]`` (Okabe-Ito),
so consecutive versions always differ; the number on each box tells v and v + 6 apart."""
HIGHLIGHT_COLOUR = "#000000"
"""Edge of the highlighted microbatch's boxes (black: visible on every version colour)."""
LABEL_FONTSIZE = 6.0
"""Font size (pt) of the version numbers on the boxes."""
BOX_COLUMNS = ("stage", "kind", "microbatch", "start", "end", "version")


def version_boxes(timeline: Timeline, versions: WeightVersions) -> pd.DataFrame:
    """One row per action of ``timeline`` with the weight version it ran on (pipe07).

    Columns stage, kind, microbatch, start, end (s) and version = ``versions.forward[stage,
    microbatch]`` (a microbatch's backward runs on its forward's version under every policy).
    """
    events = timeline.events
    shape = (timeline.schedule.num_stages, timeline.schedule.num_microbatches)
    if versions.forward.shape != shape:
        raise ValueError(
            f"versions are for {versions.forward.shape} (stages, microbatches) but the timeline "
            f"has {shape}"
        )
    stage = events["stage"].to_numpy(dtype=np.int64)
    microbatch = events["microbatch"].to_numpy(dtype=np.int64)
    return pd.DataFrame(
        {
            "stage": stage,
            "kind": events["kind"].to_numpy(),
            "microbatch": microbatch,
            "start": events["start"].to_numpy(dtype=float),
            "end": events["end"].to_numpy(dtype=float),
            "version": versions.forward[stage, microbatch],
        }
    )


def flushed_steps(
    num_stages: int,
    microbatches_per_step: int,
    num_steps: int,
    forward_time: float = 1.0,
    backward_time: float = 2.0,
) -> pd.DataFrame:
    """Boxes of ``num_steps`` flushed 1F1B steps back to back: step k runs microbatches k·m ..
    k·m + m - 1 on version k and starts when step k - 1 ends (pipe07).

    Each step is ``simulate(one_f_one_b(p, m), forward_time, backward_time)`` shifted by k
    makespans; the flush between steps is the idle time before each step's first action.
    """
    from course_lib.pipeline import one_f_one_b, simulate
    from course_lib.pipeline._validate import check_int

    steps = check_int("num_steps", num_steps)
    timeline = simulate(one_f_one_b(num_stages, microbatches_per_step), forward_time, backward_time)
    events = timeline.events
    m, span = microbatches_per_step, timeline.makespan
    frames = []
    for k in range(steps):
        frames.append(
            pd.DataFrame(
                {
                    "stage": events["stage"].to_numpy(dtype=np.int64),
                    "kind": events["kind"].to_numpy(),
                    "microbatch": events["microbatch"].to_numpy(dtype=np.int64) + k * m,
                    "start": events["start"].to_numpy(dtype=float) + k * span,
                    "end": events["end"].to_numpy(dtype=float) + k * span,
                    "version": np.full(len(events), k, dtype=np.int64),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def _text_colour(rgba: np.ndarray) -> str:
    luminance = 0.2126 * rgba[0] + 0.7152 * rgba[1] + 0.0722 * rgba[2]
    return "black" if luminance > 0.5 else "white"


def version_colours(version: np.ndarray) -> np.ndarray:
    """RGBA face colour per version: ``VERSION_COLOURS`` cycled (version v -> entry v % 6)."""
    palette = np.array([to_rgba(c) for c in VERSION_COLOURS])
    return palette[np.asarray(version, dtype=np.int64) % len(VERSION_COLOURS)]


def label_boxes(ax: Axes, boxes: pd.DataFrame, span: float) -> int:
    """Write each box's version on it where the box is wide enough for the number (pipe07).

    A box gets its label when its width on the axes (points, from the axes' current position)
    holds the digits at ``LABEL_FONTSIZE`` (0.64 em per digit) plus 2 pt; narrower boxes stay
    unlabelled. The number sits on a patch of the box's colour, so a backward's hatch does not
    cross it. Returns the number of labels drawn."""
    fig = ax.figure
    pt_per_s = ax.get_position().width * fig.get_figwidth() * 72.0 / max(span, 1e-300)
    start = boxes["start"].to_numpy(dtype=float)
    width = boxes["end"].to_numpy(dtype=float) - start
    version = boxes["version"].to_numpy(dtype=np.int64)
    stage = boxes["stage"].to_numpy(dtype=np.int64)
    digits = np.array([len(str(v)) for v in version])
    fits = width * pt_per_s >= 0.64 * LABEL_FONTSIZE * digits + 2.0
    colours = version_colours(version)
    for i in np.flatnonzero(fits):
        ax.text(start[i] + width[i] / 2, stage[i], str(version[i]), ha="center", va="center",
                fontsize=LABEL_FONTSIZE, color=_text_colour(colours[i]), zorder=2, gid="version",
                bbox={"facecolor": colours[i], "edgecolor": "none", "pad": 0.8})  # fmt: skip
    return int(fits.sum())


def version_grid(
    boxes: pd.DataFrame,
    ax: Axes | None = None,
    highlight: int | None = None,
    title: str | None = None,
    labels: bool = True,
    span: float | None = None,
) -> Axes:
    """Stage rows (stage 0 on top), a box per action coloured by its weight version (pipe07).

    Forwards fill the row; backwards are hatched. With ``labels``, each box wide enough for the
    number carries its version (:func:`label_boxes`). The boxes of microbatch ``highlight`` get a
    thick black edge (gid ``highlight``). ``span`` (s) is the time axis' length (default: the
    last end). Box collections have gids ``stage<s>:<kind>``; their face colours are
    :func:`version_colours` of the versions.
    """
    missing = [c for c in BOX_COLUMNS if c not in boxes.columns]
    if missing:
        raise ValueError(f"boxes lack the columns {missing} (see version_boxes)")
    if ax is None:
        p = int(boxes["stage"].max()) + 1 if len(boxes) else 1
        _, ax = plt.subplots(figsize=(10, 0.9 + 0.42 * p), layout="constrained")
    stage = boxes["stage"].to_numpy(dtype=np.int64)
    kind = boxes["kind"].to_numpy()
    start = boxes["start"].to_numpy(dtype=float)
    width = boxes["end"].to_numpy(dtype=float) - start
    version = boxes["version"].to_numpy(dtype=np.int64)
    micro = boxes["microbatch"].to_numpy(dtype=np.int64)
    num_stages = int(stage.max()) + 1 if len(stage) else 1
    if span is None:
        span = float(boxes["end"].max()) if len(boxes) else 1.0
    colours = version_colours(version)
    height = 0.8
    for s in range(num_stages):
        ax.broken_barh([(0.0, span)], (s - height / 2, height), facecolors=IDLE_COLOUR, zorder=0)
        for letter, hatch in (("F", None), ("B", "///"), ("W", "...")):
            mine = (stage == s) & (kind == letter)
            if not mine.any():
                continue
            bars = ax.broken_barh(
                np.column_stack([start[mine], width[mine]]),
                (s - height / 2, height),
                facecolors=colours[mine],
                edgecolors="white",
                linewidths=0.6,
                hatch=hatch,
                zorder=1,
            )
            bars.set_gid(f"stage{s}:{letter}")
    if highlight is not None:
        mine = micro == highlight
        for s in np.unique(stage[mine]):  # one collection per stage row
            row = mine & (stage == s)
            part = ax.broken_barh(
                np.column_stack([start[row], width[row]]),
                (s - height / 2, height),
                facecolors="none",
                edgecolors=HIGHLIGHT_COLOUR,
                linewidths=2.2,
                zorder=3,
            )
            part.set_gid("highlight")
    if labels and len(width):
        label_boxes(ax, boxes, span)
    scale, unit = time_unit(span)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda t, _pos: f"{t * scale:g}"))
    ax.set_xlabel(f"time ({unit})" if unit != "s" else "time (forward = 1)")
    ax.set_xlim(0.0, span)
    ax.set_ylim(num_stages - 0.5, -0.5)
    ax.set_yticks(range(num_stages), [f"stage {s}" for s in range(num_stages)])
    ax.tick_params(axis="y", length=0)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    if title is not None:
        ax.set_title(title, loc="left", fontsize=10)
    return ax


def version_grids(
    panels: Mapping[str, pd.DataFrame], highlight: int | None = None, width: float = 10.0
) -> Figure:
    """One :func:`version_grid` per named panel, stacked, on a shared time axis, with a legend
    of forward/backward boxes and the highlight (pipe07).

    The layout is computed before the version numbers are placed, so :func:`label_boxes` sees
    each panel's final width."""
    if not panels:
        raise ValueError("panels is empty: give at least one name -> boxes")
    rows = [int(b["stage"].max()) + 1 for b in panels.values()]
    fig, axes = plt.subplots(
        len(panels),
        1,
        figsize=(width, 0.9 + sum(0.42 * r + 0.45 for r in rows)),
        layout="constrained",
        sharex=True,
        height_ratios=rows,
        squeeze=False,
    )
    span = max(float(b["end"].max()) for b in panels.values())
    for ax, (name, boxes) in zip(axes[:, 0], panels.items(), strict=True):
        version_grid(boxes, ax=ax, highlight=highlight, title=name, labels=False, span=span)
        ax.label_outer()
    handles = [
        Patch(facecolor="white", edgecolor="grey", label="forward"),
        Patch(facecolor="white", edgecolor="grey", hatch="///", label="backward"),
    ]
    if highlight is not None:
        handles.append(
            Patch(
                facecolor="none", edgecolor=HIGHLIGHT_COLOUR, lw=2, label=f"microbatch {highlight}"
            )
        )
    axes[0, 0].legend(handles=handles, loc="lower left", bbox_to_anchor=(0.0, 1.12), ncol=len(handles),
                      frameon=False, fontsize=8,
                      title="number (and colour) on a box: the weight version it reads",
                      title_fontsize=8, alignment="left")  # fmt: skip
    fig.get_layout_engine().execute(fig)
    for ax, boxes in zip(axes[:, 0], panels.values(), strict=True):
        label_boxes(ax, boxes, span)
    return fig


def delayed_loss_curves(
    hessian: np.ndarray,
    w0: np.ndarray,
    delays: Sequence[int],
    common_step: float,
    step_grid: Sequence[float],
    num_steps: int,
) -> Figure:
    """Loss f(w(t))/f(w(0)) against t for each delay, two panels (pipe07).

    Left: every delay at ``common_step`` (gid ``common:d=<d>``). Right: each delay at the step of
    ``step_grid`` with the lowest final loss (gid ``tuned:d=<d>``, the step in the legend in
    units of 1/λ_max). A diverging run is drawn until it leaves the axes.
    """
    from course_lib.pipeline.versions import delayed_gradient_descent, quadratic_loss

    lam_max = float(np.linalg.eigvalsh(np.asarray(hessian, dtype=float)).max())
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6), layout="constrained", sharey=True)
    t = np.arange(num_steps + 1)

    def ratio(step: float, d: int) -> np.ndarray:
        with np.errstate(over="ignore", invalid="ignore"):
            loss = quadratic_loss(
                hessian, delayed_gradient_descent(hessian, w0, step, d, num_steps)
            )
        return loss / loss[0]

    for d, colour in zip(delays, PIPELINE_LINE_COLOURS * 2, strict=False):
        curve = ratio(common_step, d)
        left.semilogy(t, curve, color=colour, lw=2, gid=f"common:d={d}", label=f"delay {d}")
        finals = [(r[-1] if np.isfinite(r[-1]) else np.inf, nu) for nu in step_grid
                  for r in [ratio(nu, d)]]  # fmt: skip
        best_final, best = min(finals)
        right.semilogy(t, ratio(best, d), color=colour, lw=2, gid=f"tuned:d={d}",
                       label=f"delay {d}: ν = {best * lam_max:.2f}/λ_max")  # fmt: skip
    for ax in (left, right):
        ax.set_ylim(1e-12, 1e3)
        ax.set_xlim(0, num_steps)
        ax.set_xlabel("iteration t")
        ax.grid(alpha=0.3)
        ax.legend(frameon=False, fontsize=8, loc="lower left")
    left.set_ylabel("loss f(w(t)) / f(w(0))")
    left.set_title(f"Same step ν = {common_step * lam_max:.2f}/λ_max", loc="left", fontsize=10)
    right.set_title("Each delay at its best step on the grid", loc="left", fontsize=10)
    return fig
