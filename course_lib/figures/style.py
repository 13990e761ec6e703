"""Shared figure helpers: axis units, label counts and text metrics used by several figure families."""

from __future__ import annotations

from typing import TYPE_CHECKING

import matplotlib.pyplot as plt  # noqa: F401  (used by the plotting functions below)
from matplotlib.font_manager import FontProperties
from matplotlib.layout_engine import ConstrainedLayoutEngine
from matplotlib.textpath import TextToPath

if TYPE_CHECKING:
    from matplotlib.axes import Axes


def count_label(n: int, singular: str, plural: str | None = None) -> str:
    """'1 stage', '4 stages'."""
    return f"{n} {singular if n == 1 else plural or singular + 's'}"


def time_unit(span: float) -> tuple[float, str]:
    """Scale and unit for a time axis spanning ``span`` seconds: s, ms or µs."""
    if span >= 1.0 or span <= 0.0:
        return 1.0, "s"
    if span >= 1e-3:
        return 1e3, "ms"
    return 1e6, "µs"


def text_px(text: str, fontsize: float, bold: bool, dpi: float) -> float:
    """Width in pixels of ``text`` set in the default font at ``fontsize`` points."""
    prop = FontProperties(size=fontsize, weight="bold" if bold else "normal")
    width_pt, _, _ = TextToPath().get_text_width_height_descent(text, prop, ismath=False)
    return width_pt * dpi / 72


def axes_px(ax: Axes) -> float:
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
            (text_px(t.get_text(), t.get_fontsize(), False, dpi) for t in ax.get_yticklabels()),
            default=0.0,
        )
        pads_px = (4 * 3 + plt.rcParams["ytick.major.pad"]) * dpi / 72
        return max(fig.get_figwidth() * dpi - labels_px - legend_px - pads_px, 1.0) / 1.01
    if engine is not None:
        engine.execute(fig)
    return max(ax.get_position().width * fig.get_figwidth() * dpi, 1.0)
