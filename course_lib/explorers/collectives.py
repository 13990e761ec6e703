"""cost07's explorer: ring vs binomial-tree all-reduce under the alpha-beta model; busbw vs size."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.figure import Figure

from course_lib.explorers.base import Explorer, metrics_table

RANK_OPTIONS = (2, 4, 8, 12, 16, 32, 64, 128, 256, 512, 1024)
"""Rank counts the explorer offers (12 is not a power of two: ⌈log₂ 12⌉ = 4)."""
ALPHA_US_OPTIONS = (0.5, 1, 2, 5, 10, 20, 50, 100)
"""Per-message latencies α (µs) the explorer offers."""
LINK_GBS_OPTIONS = (1, 5, 12.5, 25, 50, 100, 200, 400)
"""Link bandwidths 1/β (GB/s) the explorer offers (12.5 GB/s is a 100 Gb/s NIC)."""
SIZE_OPTIONS = tuple(int(2**k) for k in range(4, 33, 2))
"""Message sizes (bytes) the explorer offers: 16 B to 4 GiB in factors of 4."""
_GRID = np.geomspace(8, 2**32, 240)
_TIME_LIMITS_US = (0.1, 1e8)


class CollectivesExplorer(Explorer):
    """Ranks, α, link bandwidth and message size -> ring and tree time, busbw share (cost07).

    Left: all-reduce time against size for :func:`course_lib.collectives.ring_all_reduce_time`
    and :func:`course_lib.collectives.tree_all_reduce_time`, the crossover
    (:func:`course_lib.collectives.ring_tree_crossover`) and the chosen size marked. Right: the
    ring's bus bandwidth (nccl-tests: algbw × 2(n-1)/n) as a fraction of the link bandwidth —
    the share of the time spent moving bytes rather than paying α. Built for speed: fixed axes
    rendered once on an Agg canvas; a change redraws only the lines, markers and two texts.
    """

    FIGSIZE = (11.0, 3.9)
    DPI = 80
    LEFT_RECT = (0.08, 0.15, 0.50, 0.72)
    RIGHT_RECT = (0.67, 0.15, 0.31, 0.72)

    def __init__(self, controls: Mapping[str, widgets.ValueWidget]) -> None:
        self._canvas: Any = None
        self.last_model: dict[str, float] = {}
        super().__init__(controls, self._draw_frame, figsize=self.FIGSIZE, dpi=self.DPI)

    def model(
        self, num_ranks: int, alpha_us: float, link_gbs: float, size_bytes: int
    ) -> dict[str, Any]:
        """Curves and the chosen point for one control state (seconds, bytes)."""
        from course_lib.collectives import (
            bus_bandwidth,
            ring_all_reduce_time,
            ring_tree_crossover,
            tree_all_reduce_time,
        )

        a, b = alpha_us * 1e-6, 1.0 / (link_gbs * 1e9)
        ring = ring_all_reduce_time(_GRID, num_ranks, a, b)
        tree = tree_all_reduce_time(_GRID, num_ranks, a, b)
        share = bus_bandwidth(_GRID / ring, "all_reduce", num_ranks) * b
        ring_s = ring_all_reduce_time(size_bytes, num_ranks, a, b)
        tree_s = tree_all_reduce_time(size_bytes, num_ranks, a, b)
        algbw = size_bytes / ring_s
        return {
            "ring": ring,
            "tree": tree,
            "share": share,
            "ring_s": ring_s,
            "tree_s": tree_s,
            "crossover": ring_tree_crossover(num_ranks, a, b),
            "algbw": algbw,
            "busbw": bus_bandwidth(algbw, "all_reduce", num_ranks),
            "latency_part": 2 * (num_ranks - 1) * a / ring_s,
        }

    def _build(self) -> None:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.ticker import FuncFormatter, LogLocator

        from course_lib.figures.collectives import COLLECTIVE_COLOURS as C
        from course_lib.figures.collectives import size_label

        fig = self.figure = Figure(figsize=self.FIGSIZE, dpi=self.DPI)
        self._canvas = FigureCanvasAgg(fig)
        left, right = fig.add_axes(self.LEFT_RECT), fig.add_axes(self.RIGHT_RECT)
        self.axes = np.array([left, right], dtype=object)
        for ax in (left, right):
            ax.set_xscale("log", base=2)
            ax.set_xlim(_GRID[0], _GRID[-1])
            ax.xaxis.set_major_locator(LogLocator(base=2**5))
            ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _p: size_label(x)))
            ax.set_xlabel("message size")
            ax.grid(alpha=0.3)
            for side in ("top", "right"):
                ax.spines[side].set_visible(False)
        left.set_yscale("log")
        left.set_ylim(*_TIME_LIMITS_US)
        left.yaxis.set_major_locator(LogLocator(base=100))
        left.yaxis.set_major_formatter(
            FuncFormatter(
                lambda y, _p: (
                    f"{y:g} µs" if y < 1e3 else f"{y / 1e3:g} ms" if y < 1e6 else f"{y / 1e6:g} s"
                )
            )
        )
        left.set_title("all-reduce time (α-β model)", loc="left", fontsize=10)
        right.set_ylim(0, 1.05)
        right.set_title("ring busbw / link bandwidth", loc="left", fontsize=10)
        kw = {"animated": True}
        (self._ring,) = left.plot(_GRID, _GRID, color=C["ring"], lw=2, label="ring", **kw)
        (self._tree,) = left.plot(_GRID, _GRID, color=C["tree"], lw=2, label="binomial tree", **kw)
        self._cross = left.axvline(1.0, color=C["crossover"], ls=":", lw=1.5, **kw)
        self._size_l = left.axvline(1.0, color="#222222", lw=0.8, alpha=0.6, **kw)
        (self._pts,) = left.plot([], [], "o", ms=6, mfc="none", mec="#222222", mew=1.6, **kw)
        self._cross_text = left.text(
            1.0,
            0.03,
            "",
            transform=left.get_xaxis_transform(),
            fontsize=8.5,
            color="#444444",
            **kw,
        )
        (self._share,) = right.plot(_GRID, _GRID * 0, color=C["ring"], lw=2, **kw)
        self._size_r = right.axvline(1.0, color="#222222", lw=0.8, alpha=0.6, **kw)
        (self._share_pt,) = right.plot([], [], "o", ms=6, mfc="none", mec="#222222", **kw)
        left.legend(loc="upper left", fontsize=9, frameon=False)
        self._canvas.draw()
        self._background = self._canvas.copy_from_bbox(fig.bbox)

    def _draw_frame(
        self, axes: Any, *, num_ranks: int, alpha_us: float, link_gbs: float, size_bytes: int
    ) -> str:
        from course_lib.figures.collectives import size_label

        m = self.model(num_ranks, alpha_us, link_gbs, size_bytes)
        self.last_model = {k: v for k, v in m.items() if np.ndim(v) == 0}
        left, right = self.axes
        self._canvas.restore_region(self._background)
        self._ring.set_ydata(m["ring"] * 1e6)
        self._tree.set_ydata(m["tree"] * 1e6)
        cross = m["crossover"]
        shown = 0 < cross < np.inf and _GRID[0] <= cross <= _GRID[-1]
        self._cross.set_visible(shown)
        self._cross_text.set_visible(shown)
        if shown:
            self._cross.set_xdata([cross, cross])
            self._cross_text.set_position((cross * 1.15, 0.03))
            self._cross_text.set_text(f"crossover {size_label(cross)}")
        self._size_l.set_xdata([size_bytes] * 2)
        self._pts.set_data([size_bytes, size_bytes], [m["ring_s"] * 1e6, m["tree_s"] * 1e6])
        for artist in (self._ring, self._tree, self._cross, self._cross_text, self._size_l):
            left.draw_artist(artist)
        left.draw_artist(self._pts)
        share_now = m["busbw"] / (link_gbs * 1e9)
        self._share.set_ydata(m["share"])
        self._size_r.set_xdata([size_bytes] * 2)
        self._share_pt.set_data([size_bytes], [share_now])
        for artist in (self._share, self._size_r, self._share_pt):
            right.draw_artist(artist)

        faster = "ring" if m["ring_s"] <= m["tree_s"] else "binomial tree"
        if cross == 0.0:
            where = "none: with n ≤ 3 the ring is never slower"
        elif cross == np.inf:
            where = "none"
        else:
            where = f"{size_label(cross)}: tree below, ring above"
        rows = [
            (
                f"all-reduce of {size_label(size_bytes)} on {num_ranks} ranks",
                f"ring <b>{m['ring_s'] * 1e6:,.1f} µs</b>",
                f"tree {m['tree_s'] * 1e6:,.1f} µs → {faster} is faster",
            ),
            ("crossover size", where, ""),
            (
                "ring algbw / busbw",
                f"{m['algbw'] / 1e9:.3g} / {m['busbw'] / 1e9:.3g} GB/s",
                f"busbw = {share_now:.0%} of the {link_gbs:g} GB/s link; "
                f"α is {m['latency_part']:.0%} of the ring's time",
            ),
        ]
        return metrics_table(rows, ("", "", ""))

    def _frame(self) -> str:
        return self._draw_frame(self.axes, **self.values)


def collectives_explorer(
    num_ranks: int = 16, alpha_us: float = 5, link_gbs: float = 25, size_bytes: int = 2**20
) -> CollectivesExplorer:
    """Explorer: ranks, α (µs), link bandwidth 1/β (GB/s) and message size -> ring and
    binomial-tree all-reduce times, crossover and the ring's busbw share (cost07)."""
    for name, value, options in (
        ("num_ranks", num_ranks, RANK_OPTIONS),
        ("alpha_us", alpha_us, ALPHA_US_OPTIONS),
        ("link_gbs", link_gbs, LINK_GBS_OPTIONS),
        ("size_bytes", size_bytes, SIZE_OPTIONS),
    ):
        if value not in options:
            raise ValueError(f"{name} must be one of {options}, got {value!r}")
    from course_lib.figures.collectives import size_label

    wide = {"description_width": "initial"}
    controls = {
        "num_ranks": widgets.SelectionSlider(
            options=list(RANK_OPTIONS), value=num_ranks, description="ranks n", style=wide
        ),
        "alpha_us": widgets.SelectionSlider(
            options=list(ALPHA_US_OPTIONS), value=alpha_us, description="α (µs)", style=wide
        ),
        "link_gbs": widgets.SelectionSlider(
            options=list(LINK_GBS_OPTIONS), value=link_gbs, description="1/β (GB/s)", style=wide
        ),
        "size_bytes": widgets.SelectionSlider(
            options=[(size_label(s), s) for s in SIZE_OPTIONS],
            value=size_bytes,
            description="message size",
            style=wide,
        ),
    }
    return CollectivesExplorer(controls)
