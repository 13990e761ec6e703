"""Collective-communication figures (cost07): a message-size sweep with its alpha-beta fit, and the
ring and binomial-tree all-reduce models against message size."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from course_lib.collectives import AlphaBeta

COLLECTIVE_COLOURS: dict[str, str] = {
    "ring": "#0072B2",
    "tree": "#E69F00",
    "fit": "#222222",
    "crossover": "#777777",
    "series": ("#0072B2", "#D55E00", "#009E73", "#CC79A7"),  # type: ignore[dict-item]
}
"""Okabe-Ito colours: ring, tree, fitted line, crossover marker, then one per measured series."""


def size_label(size_bytes: float) -> str:
    """'8 B', '64 KiB', '25 MiB', '1 GiB' (binary prefixes, as bucket caps and buffers)."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size_bytes >= scale:
            return f"{size_bytes / scale:.3g} {unit}"
    return f"{size_bytes:.3g} B"


def _size_axis(ax: Axes) -> None:
    from matplotlib.ticker import FuncFormatter, LogLocator

    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(LogLocator(base=4))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _pos: size_label(x)))
    ax.set_xlabel("message size")
    ax.grid(alpha=0.3, which="major")


def sweep_plot(
    sweeps: Mapping[str, pd.DataFrame],
    fit: AlphaBeta | None = None,
    *,
    ax: Axes | None = None,
    title: str | None = None,
) -> Axes:
    """Measured one-way time against message size (log-log), p10-p90 bars, and the line
    α + β·S of ``fit`` (cost07).

    ``sweeps`` maps a label to a DataFrame with columns size_bytes, time, p10, p90 (seconds), as
    :func:`course_lib.collectives.pingpong_sweep` returns. Each series is drawn as an errorbar
    container whose line has gid ``"sweep:<label>"``; the fit's line has gid ``"fit"``.
    """
    if not sweeps:
        raise ValueError("sweep_plot: sweeps is empty")
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 4.2), layout="constrained")
    colours = COLLECTIVE_COLOURS["series"]
    lo, hi = np.inf, 0.0
    for i, (label, df) in enumerate(sweeps.items()):
        missing = {"size_bytes", "time", "p10", "p90"} - set(df.columns)
        if missing:
            raise ValueError(f"sweep_plot: series {label!r} lacks columns {sorted(missing)}")
        s = df["size_bytes"].to_numpy(float)
        t = df["time"].to_numpy(float) * 1e6
        err = np.vstack([t - df["p10"].to_numpy(float) * 1e6, df["p90"].to_numpy(float) * 1e6 - t])
        bars = ax.errorbar(
            s, t, yerr=err, fmt="o", ms=5, capsize=3, color=colours[i % len(colours)], label=label
        )
        bars.lines[0].set_gid(f"sweep:{label}")
        lo, hi = min(lo, s.min()), max(hi, s.max())
    if fit is not None:
        grid = np.geomspace(lo, hi, 200)
        (line,) = ax.plot(
            grid,
            (fit.alpha + fit.beta * grid) * 1e6,
            color=COLLECTIVE_COLOURS["fit"],
            lw=1.5,
            ls="--",
            label=f"fit: α = {fit.alpha * 1e6:.1f} µs, 1/β = {fit.bandwidth / 1e9:.2f} GB/s",
        )
        line.set_gid("fit")
    ax.set_yscale("log")
    _size_axis(ax)
    ax.set_ylabel("one-way time (µs)")
    ax.legend(loc="upper left", fontsize=9, frameon=False)
    if title:
        ax.set_title(title, loc="left", fontsize=11)
    return ax


def ring_vs_tree(
    num_ranks: int,
    alpha: float,
    beta: float,
    gamma: float = 0.0,
    *,
    sizes: np.ndarray | None = None,
    ax: Axes | None = None,
) -> Axes:
    """Ring and binomial-tree all-reduce time against message size (log-log), with the size
    where they cross marked (cost07).

    Models: :func:`course_lib.collectives.ring_all_reduce_time` (gid ``"ring"``) and
    :func:`course_lib.collectives.tree_all_reduce_time` (gid ``"tree"``); the crossover
    :func:`course_lib.collectives.ring_tree_crossover` is a vertical line (gid ``"crossover"``)
    when it is positive and finite. Times in µs, sizes from 8 B to 4 GiB unless given.
    """
    from course_lib.collectives import (
        ring_all_reduce_time,
        ring_tree_crossover,
        tree_all_reduce_time,
    )

    s = np.geomspace(8, 2**32, 300) if sizes is None else np.asarray(sizes, dtype=float)
    ring = ring_all_reduce_time(s, num_ranks, alpha, beta, gamma)
    tree = tree_all_reduce_time(s, num_ranks, alpha, beta, gamma)
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 4.2), layout="constrained")
    (r,) = ax.plot(s, np.asarray(ring) * 1e6, color=COLLECTIVE_COLOURS["ring"], lw=2, label="ring")
    (t,) = ax.plot(
        s, np.asarray(tree) * 1e6, color=COLLECTIVE_COLOURS["tree"], lw=2, label="binomial tree"
    )
    r.set_gid("ring")
    t.set_gid("tree")
    s_star = ring_tree_crossover(num_ranks, alpha, beta, gamma)
    if 0 < s_star < np.inf:
        line = ax.axvline(s_star, color=COLLECTIVE_COLOURS["crossover"], ls=":", lw=1.5)
        line.set_gid("crossover")
        ax.annotate(
            f"crossover {size_label(s_star)}",
            (s_star, 0.04),
            xycoords=("data", "axes fraction"),
            xytext=(5, 0),
            textcoords="offset points",
            fontsize=9,
            color="#444444",
        )
    ax.set_yscale("log")
    _size_axis(ax)
    ax.set_ylabel("all-reduce time (µs)")
    ax.set_title(
        f"n = {num_ranks} ranks, α = {alpha * 1e6:g} µs, 1/β = {1 / beta / 1e9:g} GB/s"
        if beta > 0
        else f"n = {num_ranks} ranks, α = {alpha * 1e6:g} µs",
        loc="left",
        fontsize=11,
    )
    ax.legend(loc="upper left", fontsize=9, frameon=False)
    return ax
