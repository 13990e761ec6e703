"""Straggler figures (cost06): barrier waits per step, slow-step probability and the expected
maximum against the number of ranks, iid against host-correlated extrapolation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Patch

if TYPE_CHECKING:
    from matplotlib.axes import Axes

# --- cost06: barrier waits, slow steps, the expected maximum --------------------------------

STRAGGLER_COLOURS: dict[str, str] = {
    "work": "#56B4E9",
    "wait": "#E69F00",
    "barrier": "#222222",
    "iid": "#0072B2",
    "host": "#D55E00",
    "monte_carlo": "#009E73",
}
"""Okabe-Ito colours: a rank's work, its wait at the barrier, the barrier, the iid model, the
host-correlated model, Monte Carlo estimates."""


def _axes(ax: Axes | None, figsize: tuple[float, float]) -> Axes:
    if ax is None:
        _, ax = plt.subplots(figsize=figsize, layout="constrained")
    return ax


def barrier_waits(
    completion: object, steps: Sequence[int] = (0, 1, 2), *, ax: Axes | None = None
) -> Axes:
    """Consecutive steps on one time axis: each rank's work (blue) and its wait (orange, hatched)
    until the step's barrier, the row maximum (dashed line); the next step starts there (cost06).
    """
    from course_lib.straggler import _completion, barrier_times

    c = _completion(completion)
    chosen = [int(s) for s in steps]
    for s in chosen:
        if not 0 <= s < c.shape[0]:
            raise ValueError(f"steps: step {s} is not in [0, {c.shape[0]})")
    ax = _axes(ax, (10.0, 0.35 * c.shape[1] + 1.6))
    barrier = barrier_times(c)
    ranks = np.arange(c.shape[1])
    start = 0.0
    col = STRAGGLER_COLOURS
    for s in chosen:
        own = c[s] * 1e3
        ax.barh(
            ranks,
            own,
            left=start,
            height=0.7,
            color=col["work"],
            edgecolor="white",
            lw=0.5,
            gid="work",
        )
        ax.barh(
            ranks,
            barrier[s] * 1e3 - own,
            left=start + own,
            height=0.7,
            color="none",
            edgecolor=col["wait"],
            hatch="///",
            lw=0.0,
            gid="wait",
        )
        end = start + barrier[s] * 1e3
        ax.axvline(end, color=col["barrier"], ls="--", lw=1.2, gid="barrier")
        last = int(np.argmax(c[s]))
        ax.text(
            end,
            -0.9,
            f"step {s}: barrier {barrier[s] * 1e3:.1f} ms (rank {last} last)",
            ha="right",
            va="bottom",
            fontsize=8.5,
        )
        start = end
    ax.set_ylim(c.shape[1] - 0.4, -1.4)
    ax.set_yticks(ranks, [f"rank {r}" for r in ranks])
    ax.set_xlim(0, start * 1.01)
    ax.set_xlabel("time (ms)")
    ax.legend(
        handles=[
            Patch(color=col["work"], label="the rank's work"),
            Patch(
                facecolor="none", edgecolor=col["wait"], hatch="///", label="waiting at the barrier"
            ),
        ],
        loc="upper left",
        bbox_to_anchor=(0.0, -0.12),
        ncols=2,
        frameon=False,
    )
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return ax


def slow_step_curves(
    p_values: Sequence[float] = (0.001, 0.01), max_ranks: int = 4096, *, ax: Axes | None = None
) -> Axes:
    """P(at least one slow rank) = 1 − (1 − p)^n against n, one line per p (cost06); the circle
    is The Tail at Scale's example, p = 0.01 at n = 100."""
    from course_lib.straggler import prob_slow_step

    ax = _axes(ax, (7.0, 3.8))
    n = np.unique(np.geomspace(1, max_ranks, 200).round().astype(int))
    for p, colour in zip(p_values, ("#0072B2", "#D55E00", "#009E73", "#CC79A7"), strict=False):
        ax.plot(
            n,
            [prob_slow_step(p, int(k)) for k in n],
            color=colour,
            lw=2,
            label=f"p = {p:g}",
            gid=f"p={p:g}",
        )
    if 0.01 in p_values and max_ranks >= 100:
        y = prob_slow_step(0.01, 100)
        ax.plot([100], [y], "o", ms=8, mfc="none", mec="#222222", mew=1.8)
        ax.annotate(f"n = 100: {y:.3f}", (100, y), (8, -14), textcoords="offset points", fontsize=9)
    ax.set_xscale("log", base=2)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("number of ranks n")
    ax.set_ylabel("P(a step has a slow rank)")
    ax.grid(alpha=0.3)
    ax.legend(frameon=False, loc="upper left", title="per-rank probability")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return ax


def expected_max_curve(
    max_ranks: int = 4096,
    monte_carlo: dict[int, object] | None = None,
    *,
    ax: Axes | None = None,
) -> Axes:
    """E[max of n iid N(0, 1)] against n by the integral (line), with Monte Carlo estimates
    (points, ±2 standard errors) for the n in ``monte_carlo`` (n -> MonteCarloMax) (cost06)."""
    from course_lib.straggler import expected_max_normal

    ax = _axes(ax, (7.0, 3.8))
    n = np.unique(np.geomspace(1, max_ranks, 60).round().astype(int))
    ax.plot(
        n,
        [expected_max_normal(int(k)) for k in n],
        color=STRAGGLER_COLOURS["iid"],
        lw=2,
        label="E[max] by the integral",
        gid="integral",
    )
    for k in (8, 100, 1024):
        if k <= max_ranks:
            y = expected_max_normal(k)
            ax.plot([k], [y], "o", ms=6, color=STRAGGLER_COLOURS["iid"], gid=f"marked n={k}")
            ax.annotate(
                f"n = {k}: {y:.4f}", (k, y), (8, -12), textcoords="offset points", fontsize=9
            )
    if monte_carlo:
        ks = sorted(monte_carlo)
        means = [monte_carlo[k].mean for k in ks]  # type: ignore[attr-defined]
        errs = [2 * monte_carlo[k].std_error for k in ks]  # type: ignore[attr-defined]
        ax.errorbar(
            ks,
            means,
            yerr=errs,
            fmt="o",
            ms=5,
            color=STRAGGLER_COLOURS["monte_carlo"],
            label="Monte Carlo (±2 s.e.)",
            gid="monte_carlo",
        )
    ax.set_xscale("log", base=2)
    ax.set_xlabel("number of ranks n")
    ax.set_ylabel("E[max] in standard deviations")
    ax.grid(alpha=0.3)
    ax.legend(frameon=False, loc="upper left")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return ax


def extrapolation_curves(
    p_rank: float,
    p_host: float,
    ranks_per_host: int,
    max_ranks: int = 16384,
    *,
    measured_ranks: int | None = None,
    ax: Axes | None = None,
) -> Axes:
    """P(slow step) against n for the host-correlated model and for iid ranks with the same
    per-rank rate 1 − (1 − p_host)(1 − p_rank) (cost06); n runs over whole hosts."""
    from course_lib.straggler import prob_slow_step, prob_slow_step_hosts

    ax = _axes(ax, (7.0, 3.8))
    marginal = 1 - (1 - p_host) * (1 - p_rank)
    hosts = np.unique(np.geomspace(1, max_ranks // ranks_per_host, 120).round().astype(int))
    n = hosts * ranks_per_host
    ax.plot(
        n,
        [prob_slow_step(marginal, int(k)) for k in n],
        color=STRAGGLER_COLOURS["iid"],
        lw=2,
        label=f"iid ranks, p = {marginal:.2g}",
        gid="iid",
    )
    ax.plot(
        n,
        [prob_slow_step_hosts(p_rank, p_host, int(k), ranks_per_host) for k in n],
        color=STRAGGLER_COLOURS["host"],
        lw=2,
        label=f"hosts of {ranks_per_host}: p_host = {p_host:g}, p_rank = {p_rank:g}",
        gid="host",
    )
    if measured_ranks is not None:
        ax.axvline(measured_ranks, color="#777777", ls=":", lw=1.5)
        ax.text(measured_ranks, 0.5, " measured", fontsize=9, color="#555555", va="center")
    ax.set_xscale("log", base=2)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("number of ranks n")
    ax.set_ylabel("P(a step has a slow rank)")
    ax.grid(alpha=0.3)
    ax.legend(frameon=False, loc="upper left")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return ax
