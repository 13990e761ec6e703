"""The observer's cost (cost09): measured slowdown per observer, the per-event model's hidden and
exposed tracing cost, and a capture schedule's steps."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from course_lib.profiling import ACTIONS, OBSERVERS, tracing_overhead

if TYPE_CHECKING:
    from matplotlib.axes import Axes

PROFILING_COLOURS: dict[str, str] = {
    "none": "#9AA5B1",
    "setprofile": "#D55E00",
    "cProfile": "#0072B2",
    "tracemalloc": "#009E73",
    "NONE": "#EEEEEE",
    "WARMUP": "#E69F00",
    "RECORD": "#56B4E9",
    "RECORD_AND_SAVE": "#0072B2",
}
"""Okabe-Ito colours: one per observer, one per torch.profiler action."""


def overhead_bars(summary: pd.DataFrame, ax: Axes | None = None) -> Axes:
    """Median time under each observer relative to no observer, per workload; whiskers span the
    repeats' min-max (cost09, section 1). ``summary`` is profiling.overhead_summary's table.

    Bars carry gid ``"<workload>|<observer>"``; their height is median / median of "none".
    """
    need = {"workload", "observer", "median", "min", "max"}
    if not need <= set(summary.columns):
        raise ValueError(f"overhead_bars: summary lacks {sorted(need - set(summary.columns))}")
    workloads = list(dict.fromkeys(summary["workload"]))
    observers = [o for o in OBSERVERS if o in set(summary["observer"])]
    if not workloads or "none" not in observers:
        raise ValueError("overhead_bars: summary needs 'none' rows to compare with")
    if ax is None:
        _, ax = plt.subplots(figsize=(8.0, 3.4), layout="constrained")
    width = 0.8 / len(observers)
    top = 1.0
    for i, wname in enumerate(workloads):
        rows = summary[summary["workload"] == wname].set_index("observer")
        if "none" not in rows.index:
            raise ValueError(f"overhead_bars: workload {wname!r} has no 'none' row")
        base = float(rows.loc["none", "median"])
        for j, oname in enumerate(observers):
            if oname not in rows.index:
                continue
            r = rows.loc[oname]
            ratio = float(r["median"]) / base
            x = i - 0.4 + width * (j + 0.5)
            (bar,) = ax.bar(
                x,
                ratio,
                width * 0.9,
                color=PROFILING_COLOURS[oname],
                label=oname if i == 0 else None,
            )
            bar.set_gid(f"{wname}|{oname}")
            lo, hi = float(r["min"]) / base, float(r["max"]) / base
            ax.plot([x, x], [lo, hi], color="#333333", lw=1.0)
            ax.text(x, hi * 1.04, f"{ratio:.2g}×", ha="center", va="bottom", fontsize=8)
            top = max(top, hi)
    ax.set_xticks(range(len(workloads)), workloads)
    ax.set_yscale("log")
    ax.set_ylim(0.5, top * 2.2)
    ax.axhline(1.0, color="#555555", lw=0.8, ls=":")
    ax.set_ylabel("time / time without observer")
    ax.legend(frameon=False, ncols=len(observers), loc="upper right", fontsize=8)
    ax.set_title("median of repeats; whiskers: min to max", loc="left", fontsize=9)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return ax


def hiding_curves(
    steps: Sequence[tuple[str, float, float]],
    per_event_cost: float,
    max_events: int,
    ax: Axes | None = None,
) -> Axes:
    """Tracing overhead (% of the uninstrumented step) against events per step, one line per
    (label, cpu_time, gpu_time) step, from profiling.tracing_overhead (cost09, section 2).

    Lines carry gid ``label``; their y data are tracing_overhead(...) × 100 at their x data.
    """
    steps = list(steps)
    if not steps:
        raise ValueError("hiding_curves: give at least one (label, cpu_time, gpu_time) step")
    if max_events < 1:
        raise ValueError(f"hiding_curves: max_events must be >= 1, got {max_events}")
    if ax is None:
        _, ax = plt.subplots(figsize=(7.0, 3.4), layout="constrained")
    events = np.unique(np.linspace(0, max_events, 201).astype(int))
    colours = ["#D55E00", "#0072B2", "#009E73", "#CC79A7"]
    for k, (label, cpu, gpu) in enumerate(steps):
        y = np.array([tracing_overhead(cpu, gpu, int(n), per_event_cost) for n in events])
        (line,) = ax.plot(events, 100 * y, lw=2, color=colours[k % len(colours)], label=label)
        line.set_gid(label)
        if gpu > cpu:  # the kink: the CPU becomes the bottleneck
            kink = (gpu - cpu) / per_event_cost
            if kink <= max_events:
                ax.axvline(kink, color=colours[k % len(colours)], lw=0.8, ls=":")
    ax.set_xlabel("events per step")
    ax.set_ylabel("step time added (%)")
    ax.set_xlim(0, max_events)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(frameon=False, fontsize=8, loc="upper left")
    ax.set_title(f"{per_event_cost * 1e6:g} µs per event", loc="left", fontsize=9)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return ax


def schedule_strip(actions: Sequence[str], ax: Axes | None = None) -> Axes:
    """One cell per step, coloured by its torch.profiler action (cost09, section 4).

    The image's data are the actions' indices in profiling.ACTIONS (0 NONE … 3 RECORD_AND_SAVE).
    """
    codes = np.array([ACTIONS.index(a) if a in ACTIONS else -1 for a in actions])
    if codes.size == 0:
        raise ValueError("schedule_strip: no steps to draw")
    if (codes < 0).any():
        bad = actions[int(np.argmax(codes < 0))]
        raise ValueError(f"schedule_strip: unknown action {bad!r}; known: {list(ACTIONS)}")
    if ax is None:
        _, ax = plt.subplots(figsize=(9.0, 1.5), layout="constrained")
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    cmap = ListedColormap([PROFILING_COLOURS[a] for a in ACTIONS])
    image = ax.imshow(
        codes[None, :],
        aspect="auto",
        cmap=cmap,
        vmin=-0.5,
        vmax=3.5,
        interpolation="nearest",
        extent=(-0.5, codes.size - 0.5, 0, 1),
    )
    image.set_gid("actions")
    ax.set_yticks([])
    ax.set_xlabel("step")
    handles = [Patch(color=PROFILING_COLOURS[a], label=a) for a in ACTIONS]
    ax.legend(
        handles=handles,
        ncols=4,
        frameon=False,
        fontsize=8,
        loc="lower left",
        bbox_to_anchor=(0, 1.0),
    )
    return ax
