"""1F1B figures (pipe03): the phases of a 1F1B schedule, stashes per stage, activation lifetimes.

Each draws a simulated :class:`course_lib.pipeline.Timeline`; the schedule grid and the stash
curves are :mod:`course_lib.figures.pipeline`'s (pipe02), reused here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Patch

from course_lib.figures.pipeline import SCHEDULE_COLOURS, schedule_grid, stash_curves
from course_lib.figures.style import time_unit

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from course_lib.pipeline import Timeline

PHASE_COLOURS: dict[str, str] = {"warm-up": "#0072B2", "steady": "#555555", "cool-down": "#D55E00"}
"""Colours of the strips that mark each rank's warm-up, steady state and cool-down."""
LIFETIME_COLOUR = "#CFE3F2"
"""The span of a stash between the end of its forward and the start of its backward."""


def phase_spans(timeline: Timeline) -> list[dict[str, tuple[float, float] | None]]:
    """Per rank, the (start, end) in seconds of its warm-up, steady state and cool-down (pipe03).

    The timeline must be of ``one_f_one_b(p, m)``: rank s runs w = min(m, p - s - 1) warm-up
    forwards, m - w forward/backward pairs, then w cool-down backwards (Narayanan et al. 2021,
    §2.2.1). A phase without actions is None.
    """
    from course_lib.pipeline import one_f_one_b

    schedule = timeline.schedule
    p, m = schedule.num_stages, schedule.num_microbatches
    if schedule.num_ranks != p or schedule.actions != one_f_one_b(p, m).actions:
        raise ValueError(
            "phase_spans needs the timeline of one_f_one_b(num_stages, num_microbatches)"
        )
    spans = []
    for rank, rank_events in timeline.events.groupby("rank", sort=True):
        starts = rank_events["start"].to_numpy(dtype=float)
        ends = rank_events["end"].to_numpy(dtype=float)
        w = min(m, p - int(rank) - 1)
        n = len(starts)
        cuts = {"warm-up": (0, w), "steady": (w, n - w), "cool-down": (n - w, n)}
        spans.append(
            {
                phase: (float(starts[lo]), float(ends[hi - 1])) if hi > lo else None
                for phase, (lo, hi) in cuts.items()
            }
        )
    return spans


def one_f_one_b_phases(
    timeline: Timeline, ax: Axes | None = None, title: str | None = None
) -> Axes:
    """A 1F1B schedule grid with a strip under each rank marking its three phases (pipe03).

    The strips (gid ``phase:<rank>:<phase>``) span :func:`phase_spans`; each rank's tick label
    names its warm-up count, "rank s · w = ...". Black edges (gid ``phase-edge``) mark where the
    warm-up ends and the cool-down begins.
    """
    spans = phase_spans(timeline)
    p, m = timeline.schedule.num_stages, timeline.schedule.num_microbatches
    if ax is None:
        _, ax = plt.subplots(figsize=(10, 1.2 + 0.55 * p), layout="constrained")
    schedule_grid(timeline, ax=ax, title=title)
    edges: list[tuple[float, int]] = []
    for rank, phases in enumerate(spans):
        for phase, span in phases.items():
            if span is None:
                continue
            (strip,) = ax.bar(
                span[0], 0.12, width=span[1] - span[0], bottom=rank + 0.41, align="edge",
                color=PHASE_COLOURS[phase], linewidth=0,
            )  # fmt: skip
            strip.set_gid(f"phase:{rank}:{phase}")
        if phases["warm-up"]:
            edges += [(phases["warm-up"][1], rank), (phases["cool-down"][0], rank)]
    if edges:
        xs, rows = np.array(edges).T
        ax.vlines(xs, rows - 0.45, rows + 0.53, colors="black", linewidth=1.6, gid="phase-edge")
    ax.set_ylim(p - 0.4, -0.5)
    labels = [f"rank {r} · w = {min(m, p - r - 1)}" for r in range(p)]
    ax.set_yticks(range(p), labels)
    handles = list(ax.get_legend().legend_handles) + [
        Patch(facecolor=colour, label=f"{phase} (strip)") for phase, colour in PHASE_COLOURS.items()
    ]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    if title is None:
        ax.set_title(
            f"1F1B, p = {p}, m = {m}: w = min(m, p − s − 1) forwards, m − w F/B pairs, w backwards",
            loc="left",
        )
    return ax


def stash_by_stage(
    runs: Mapping[str, Timeline], bytes_per_microbatch: float | None = None
) -> Figure:
    """Live stashes over time on every stage, one panel per stage (stage 0 on top) (pipe03).

    Each panel is :func:`course_lib.figures.pipeline.stash_curves` for that stage, titled with the
    runs' peaks there (gid of the title text ``peaks:<stage>``).
    """
    first = next(iter(runs.values()))
    p = first.schedule.num_stages
    if any(run.schedule.num_stages != p for run in runs.values()):
        raise ValueError("stash_by_stage compares runs with the same number of stages")
    fig, axes = plt.subplots(
        p, 1, figsize=(9, 0.6 + 1.45 * p), sharex=True, squeeze=False, layout="constrained"
    )
    for stage, ax in enumerate(axes[:, 0]):
        stash_curves(runs, stage=stage, bytes_per_microbatch=bytes_per_microbatch, ax=ax)
        peaks = " · ".join(
            f"{name} peak {int(run.peak_in_flight[stage])}" for name, run in runs.items()
        )
        ax.set_title(f"stage {stage}: {peaks}", loc="left", fontsize=10, gid=f"peaks:{stage}")
        ax.set_ylabel("stashed")
        ax.get_legend().remove()
        if stage < p - 1:
            ax.set_xlabel("")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, [label.split(":")[0] for label in labels], loc="outside upper right",
               ncols=len(labels), frameon=False)  # fmt: skip
    return fig


def lifetime_bars(runs: Mapping[str, Timeline], stage: int) -> Figure:
    """Each microbatch's stash on ``stage``: a bar from its F's start to its B's end (pipe03).

    One panel per run, microbatch 0 on top; the forward and the backward are drawn in their
    colours at the ends of the bar, the stash waiting for its backward in between (gids
    ``lifetime:<run>``, ``F:<run>``, ``B:<run>``; one legend under the panels names the three), its
    length is written after it, and a dashed line marks the first moment of the peak, labelled
    (below the title) with how many stashes are live then (gid ``peak:<run>``). The panels share
    the time axis.
    """
    names = list(runs)
    m = max(run.schedule.num_microbatches for run in runs.values())
    fig, axes = plt.subplots(
        1, len(names), figsize=(5.2 * len(names), 0.9 + 0.34 * m), sharex=True, squeeze=False,
        layout="constrained",
    )  # fmt: skip
    span = max(run.makespan for run in runs.values())
    scale, unit = time_unit(span)
    for name, ax in zip(names, axes[0], strict=True):
        run = runs[name]
        events = run.events
        here = events[events["stage"] == stage]
        forwards = here[here["kind"] == "F"].set_index("microbatch").sort_index()
        backwards = here[here["kind"] == "B"].set_index("microbatch").sort_index()
        j = forwards.index.to_numpy()
        born = forwards["start"].to_numpy(dtype=float)
        freed = backwards.loc[j, "end"].to_numpy(dtype=float)
        ax.barh(
            j, freed - born, left=born, height=0.7, color=LIFETIME_COLOUR, gid=f"lifetime:{name}"
        )
        for kind, rows in (("F", forwards), ("B", backwards.loc[j])):
            start = rows["start"].to_numpy(dtype=float)
            ax.barh(j, rows["end"].to_numpy(dtype=float) - start, left=start, height=0.7,
                    color=SCHEDULE_COLOURS[kind], gid=f"{kind}:{name}")  # fmt: skip
        for jj, b, f in zip(j, born, freed, strict=True):
            ax.text(f + 0.01 * span, jj, f"{(f - b) * scale:.3g} {unit}", va="center", fontsize=8)
        times, counts = run.in_flight(stage)
        k = int(np.argmax(counts))
        ax.axvline(times[k], color="black", ls="--", lw=1, gid=f"peak:{name}")
        ax.text(times[k], -0.95, f" {int(counts[k])} live at {times[k] * scale:.3g} {unit}",
                ha="left", va="center", fontsize=9)  # fmt: skip
        ax.set_ylim(m - 0.5, -1.5)
        ax.set_yticks(range(m), [f"mb {i}" for i in range(m)])
        ax.set_xlim(0, span * 1.12)
        ax.xaxis.set_major_formatter(plt.FuncFormatter(lambda t, _pos: f"{t * scale:g}"))
        ax.set_xlabel(f"time ({unit})")
        ax.set_title(f"{name}, stage {stage}: stash lifetimes", loc="left")
        ax.grid(axis="x", alpha=0.3)
    handles = [
        Patch(facecolor=SCHEDULE_COLOURS["F"], label="forward (F): the stash is allocated"),
        Patch(facecolor=LIFETIME_COLOUR, label="stash waiting for its backward"),
        Patch(facecolor=SCHEDULE_COLOURS["B"], label="backward (B): frees it when it ends"),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncols=3, frameon=False)
    return fig
