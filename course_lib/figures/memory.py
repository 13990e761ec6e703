"""Memory figures (cost05): live bytes over a training step, stacked by category."""

from __future__ import annotations

from typing import TYPE_CHECKING

import matplotlib.pyplot as plt  # noqa: F401  (used by the plotting functions below)
import numpy as np
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes

from course_lib.figures.style import time_unit

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
    scale, unit = time_unit(span)
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
