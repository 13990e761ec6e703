"""cost06's explorer: probability of a slow step against the number of ranks, iid against
host-correlated slowdowns with the same per-rank rate."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.figure import Figure

from course_lib.explorers.base import Explorer, fmt_pct, metrics_table

# --- cost06: iid vs host-correlated extrapolation --------------------------------------------

P_SLOW_OPTIONS = (1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4, 1e-3, 2e-3, 5e-3, 1e-2, 2e-2, 5e-2)
"""Per-rank probabilities of a slow step the explorer offers (the rate a single rank's log shows)."""
RANKS_PER_HOST_OPTIONS = (1, 2, 4, 8, 16)
NUM_RANKS_OPTIONS = tuple(2**k for k in range(4, 15))  # 16 ... 16384
"""Rank counts of the marker; every one is a whole number of hosts of any offered size."""
MAX_RANKS = NUM_RANKS_OPTIONS[-1]
_IID_N = np.unique(np.geomspace(1, MAX_RANKS, 400).round()).astype(float)


def split_rate(p_slow: float, host_share: float) -> tuple[float, float]:
    """(p_rank, p_host) with host-wide slowdowns at p_host = host_share · p_slow and the rest
    per rank, so that each rank stays slow with probability p_slow:
    1 − p_slow = (1 − p_host)(1 − p_rank) (cost06)."""
    if not 0.0 <= p_slow < 1.0:
        raise ValueError(f"p_slow must be in [0, 1), got {p_slow!r}")
    if not 0.0 <= host_share <= 1.0:
        raise ValueError(f"host_share must be in [0, 1], got {host_share!r}")
    p_host = host_share * p_slow
    p_rank = 1.0 - (1.0 - p_slow) / (1.0 - p_host)
    return max(p_rank, 0.0), p_host


class StragglerExplorer(Explorer):
    """Per-rank rate, host share, host size and rank count -> P(slow step) curves (cost06).

    Built for speed: a fixed layout on an Agg canvas; the axes, grid and key are rendered once
    and restored on every change, which redraws only two curves, two markers and a label.
    """

    FIGSIZE = (10.0, 4.0)
    DPI = 80
    RECT = (0.08, 0.14, 0.62, 0.78)

    def __init__(self, controls: Mapping[str, widgets.ValueWidget]) -> None:
        self._canvas: Any = None
        self.last: dict[str, float] = {}
        super().__init__(controls, self._draw_frame, figsize=self.FIGSIZE, dpi=self.DPI)

    def model(
        self, p_slow: float, host_share: float, ranks_per_host: int, num_ranks: int
    ) -> dict[str, Any]:
        """Curves over whole hosts up to MAX_RANKS and the two probabilities at num_ranks."""
        from course_lib.straggler import prob_slow_step, prob_slow_step_hosts

        p_rank, p_host = split_rate(p_slow, host_share)
        n = np.arange(1, MAX_RANKS // ranks_per_host + 1) * ranks_per_host
        hosts = n / ranks_per_host
        n_iid = _IID_N  # iid ranks exist at every n, from 1 (the axis starts there)
        iid = -np.expm1(n_iid * np.log1p(-p_slow))
        host = -np.expm1(hosts * np.log1p(-p_host) + n * np.log1p(-p_rank))
        return {
            "n": n,
            "n_iid": n_iid,
            "iid": iid,
            "host": host,
            "p_rank": p_rank,
            "p_host": p_host,
            "iid_at": prob_slow_step(p_slow, num_ranks),
            "host_at": prob_slow_step_hosts(p_rank, p_host, num_ranks, ranks_per_host),
        }

    def _build(self) -> None:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.lines import Line2D

        from course_lib.figures.straggler import STRAGGLER_COLOURS as C

        fig = self.figure = Figure(figsize=self.FIGSIZE, dpi=self.DPI)
        self._canvas = FigureCanvasAgg(fig)
        ax = fig.add_axes(self.RECT)
        self.axes = np.array([ax], dtype=object)
        ax.set_xscale("log", base=2)
        ax.set_xlim(1, MAX_RANKS * 1.1)
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("number of ranks n")
        ax.set_ylabel("P(a step has a slow rank)")
        ax.grid(alpha=0.3)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        (self._iid,) = ax.plot([], [], color=C["iid"], lw=2, animated=True)
        (self._host,) = ax.plot([], [], color=C["host"], lw=2, animated=True)
        (self._iid_dot,) = ax.plot([], [], "o", ms=8, color=C["iid"], animated=True)
        (self._host_dot,) = ax.plot([], [], "o", ms=8, color=C["host"], animated=True)
        self._marker = ax.axvline(1, color="#777777", ls=":", lw=1.5, animated=True)
        fig.legend(
            handles=[
                Line2D([], [], color=C["iid"], lw=2, label="iid ranks, rate p"),
                Line2D([], [], color=C["host"], lw=2, label="host-correlated, same rate p"),
            ],
            loc="upper left",
            bbox_to_anchor=(0.72, 0.92),
            frameon=False,
        )
        self._note = fig.text(
            0.725, 0.62, "", va="top", fontsize=10, family="monospace", animated=True
        )
        self._canvas.draw()
        self._background = self._canvas.copy_from_bbox(fig.bbox)

    def _draw_frame(
        self,
        axes: Any,
        *,
        p_slow: float,
        host_share: float,
        ranks_per_host: int,
        num_ranks: int,
    ) -> str:
        del axes
        m = self.model(p_slow, host_share, ranks_per_host, num_ranks)
        self.last = {k: v for k, v in m.items() if not isinstance(v, np.ndarray)}
        self._canvas.restore_region(self._background)
        self._iid.set_data(m["n_iid"], m["iid"])
        self._host.set_data(m["n"], m["host"])
        self._iid_dot.set_data([num_ranks], [m["iid_at"]])
        self._host_dot.set_data([num_ranks], [m["host_at"]])
        self._marker.set_xdata([num_ranks, num_ranks])
        ratio = m["iid_at"] / m["host_at"] if m["host_at"] > 0 else float("inf")
        self._note.set_text(
            f"at n = {num_ranks}:\n"
            f"iid              {m['iid_at']:.3f}\n"
            f"host-correlated  {m['host_at']:.3f}\n"
            f"iid / host       {ratio:.2f}×"
        )
        ax = self.axes[0]
        for artist in (self._marker, self._iid, self._host, self._iid_dot, self._host_dot):
            ax.draw_artist(artist)
        self.figure.draw_artist(self._note)
        rows = [
            ("per-rank rate p", f"{p_slow:g}", "what one rank's log shows"),
            (
                "host-wide p_host / per-rank p_rank",
                f"{m['p_host']:.3g} / {m['p_rank']:.3g}",
                f"(1 − p) = (1 − p_host)(1 − p_rank); host share {host_share:.0%}",
            ),
            (
                f"P(slow step) at n = {num_ranks}, iid",
                fmt_pct(m["iid_at"]),
                "1 − (1 − p)^n",
            ),
            (
                f"P(slow step) at n = {num_ranks}, hosts of {ranks_per_host}",
                fmt_pct(m["host_at"]),
                "1 − (1 − p_host)^(n/g) (1 − p_rank)^n",
            ),
        ]
        return metrics_table(rows, ("", "", ""))

    def _frame(self) -> str:
        return self._draw_frame(self.axes, **self.values)


def straggler_explorer(
    p_slow: float = 1e-3, host_share: float = 0.8, ranks_per_host: int = 8, num_ranks: int = 1024
) -> StragglerExplorer:
    """Explorer: per-rank slow rate p, share of it that is host-wide, host size, n (cost06)."""
    if p_slow not in P_SLOW_OPTIONS:
        raise ValueError(f"p_slow must be one of {P_SLOW_OPTIONS}, got {p_slow!r}")
    if ranks_per_host not in RANKS_PER_HOST_OPTIONS:
        raise ValueError(
            f"ranks_per_host must be one of {RANKS_PER_HOST_OPTIONS}, got {ranks_per_host!r}"
        )
    if num_ranks not in NUM_RANKS_OPTIONS:
        raise ValueError(f"num_ranks must be one of {NUM_RANKS_OPTIONS}, got {num_ranks!r}")
    if not 0.0 <= host_share <= 1.0:
        raise ValueError(f"host_share must be in [0, 1], got {host_share!r}")
    wide = {"description_width": "initial"}
    controls = {
        "p_slow": widgets.SelectionSlider(
            options=list(P_SLOW_OPTIONS), value=p_slow, description="per-rank rate p", style=wide
        ),
        "host_share": widgets.FloatSlider(
            value=float(host_share),
            min=0.0,
            max=1.0,
            step=0.05,
            description="host-wide share",
            style=wide,
        ),
        "ranks_per_host": widgets.SelectionSlider(
            options=list(RANKS_PER_HOST_OPTIONS),
            value=ranks_per_host,
            description="ranks per host",
            style=wide,
        ),
        "num_ranks": widgets.SelectionSlider(
            options=list(NUM_RANKS_OPTIONS), value=num_ranks, description="ranks n", style=wide
        ),
    }
    return StragglerExplorer(controls)
