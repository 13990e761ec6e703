"""Utilization figures (cost04): the waterfall from peak FLOP/s down to model FLOPs utilization."""

from __future__ import annotations

from typing import TYPE_CHECKING

import matplotlib.pyplot as plt  # noqa: F401  (used by the plotting functions below)
import numpy as np

if TYPE_CHECKING:
    from collections.abc import Iterable

    from matplotlib.axes import Axes


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
