"""Activation stashing and rematerialization figures (pipe05): the first backward on pipe03's
stash lifetimes, the gradient error of each way to recompute, stashed bytes per stage by policy, and the frontier of
recompute plans under a byte budget."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import matplotlib.pyplot as plt  # noqa: F401  (used by the plotting functions below)
import numpy as np
from matplotlib.ticker import FuncFormatter, NullFormatter

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from course_lib.pipeline import Timeline

POLICY_COLOURS: dict[str, str] = {"none": "#0072B2", "selective": "#E69F00", "full": "#009E73"}
"""Okabe-Ito colours of the recomputation policies (no recomputation, selective, full)."""

MODE_COLOURS: dict[str, str] = {"advance": "#D55E00", "reseed": "#CC79A7", "restore": "#009E73"}
"""Colours of the ways to get a recomputed forward's random state."""

MODE_LABELS: dict[str, str] = {
    "advance": "advance: the generator as it is now",
    "reseed": "reseed: default_rng(seed)",
    "restore": "restore: the saved state",
}

GIB = 2.0**30


def mark_first_backward(ax: Axes, timeline: Timeline, stage: int = 0) -> Axes:
    """On pipe03's :func:`course_lib.figures.one_f_one_b.lifetime_bars` panel of ``stage``: a
    dotted line where the stage's first backward starts (gid ``first_backward``), with which
    stash it takes — its own, the oldest — and which one a stack would hand it, the newest; the
    title says what the number after each bar is, how long that stash is held (pipe05).
    """
    events = timeline.events
    mine = events[(events["stage"] == stage) & (events["kind"] == "B")]
    if mine.empty:
        raise ValueError(f"stage {stage} runs no backward in this timeline")
    first = mine.sort_values("start").iloc[0]
    t0, j0 = float(first["start"]), int(first["microbatch"])
    forwards = events[(events["stage"] == stage) & (events["kind"] == "F")]
    held = sorted(int(j) for j in forwards.loc[forwards["start"] <= t0, "microbatch"])
    # lifetime_bars draws in seconds (its tick labels are scaled), so do we.
    ax.axvline(t0, color="black", ls=":", lw=1.2, gid="first_backward")
    ax.text(
        t0, -0.95, f" B{j0} starts, {len(held)} held: it takes mb {j0}'s, not the newest "
        f"(mb {held[-1]}'s)", ha="left", va="center", fontsize=9, gid="first_backward_label",
    )  # fmt: skip
    ax.set_title(f"{ax.get_title(loc='left')}; after each bar: how long it is held", loc="left")
    return ax


def recompute_errors(errors: Mapping[str, Sequence[float]], ax: Axes | None = None) -> Axes:
    """Relative gradient error of each recomputation mode, per microbatch, on a log axis (pipe05).

    ``errors[mode][j]`` = ‖g_recomputed − g_stored‖ / ‖g_stored‖. An exact zero cannot sit on a
    log axis: it is drawn as a marker on the floor labelled "0 (bit-identical)" (gid
    ``zeros:<mode>``); nonzero errors are bars (gid ``bars:<mode>``).
    """
    modes = list(errors)
    values = {k: np.asarray(v, dtype=float) for k, v in errors.items()}
    m = max(len(v) for v in values.values())
    positive = np.concatenate([v[v > 0] for v in values.values()] + [np.array([1.0])])
    floor = 10 ** np.floor(np.log10(positive.min()) - 1)
    if ax is None:
        _, ax = plt.subplots(figsize=(9, 3.4), layout="constrained")
    width = 0.8 / len(modes)
    for i, mode in enumerate(modes):
        v = values[mode]
        x = np.arange(len(v)) + (i - (len(modes) - 1) / 2) * width
        colour = MODE_COLOURS.get(mode, "grey")
        label = MODE_LABELS.get(mode, mode)
        nonzero = v > 0
        if nonzero.any():
            ax.bar(x[nonzero], v[nonzero] - floor, width=width, bottom=floor, color=colour, label=label,
                   gid=f"bars:{mode}")  # fmt: skip
        if (~nonzero).any():
            ax.scatter(x[~nonzero], np.full((~nonzero).sum(), floor * 1.6), marker="v", s=40,
                       color=colour, gid=f"zeros:{mode}",
                       label=None if nonzero.any() else f"{label}: 0")  # fmt: skip
    ax.set_yscale("log")
    ax.set_ylim(floor, positive.max() * 4)
    ax.set_xticks(range(m), [str(j) for j in range(m)])
    ax.set_xlabel("microbatch")
    ax.set_ylabel("‖g − g_stored‖ / ‖g_stored‖")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _p: f"{y:.0e}" if y < 0.01 else f"{y:g}"))
    ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=9)
    ax.set_title("Recomputed gradient against the stored one: ▼ = exactly 0", loc="left")
    return ax


def stage_stash_bars(
    per_stage: Mapping[str, Sequence[float]],
    capacity: float | None = None,
    ax: Axes | None = None,
) -> Axes:
    """Stashed bytes per stage (GiB) for each recomputation policy, grouped by stage (pipe05).

    ``per_stage[policy][s]`` in bytes; bars have gid ``stash:<policy>``; ``capacity`` (bytes), if
    given, is a dashed line (gid ``capacity``).
    """
    policies = list(per_stage)
    values = {k: np.asarray(v, dtype=float) / GIB for k, v in per_stage.items()}
    p = max(len(v) for v in values.values())
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 3.3), layout="constrained")
    width = 0.8 / len(policies)
    for i, policy in enumerate(policies):
        v = values[policy]
        x = np.arange(len(v)) + (i - (len(policies) - 1) / 2) * width
        bars = ax.bar(x, v, width=width, color=POLICY_COLOURS.get(policy, "grey"),
                      label=f"{policy}", gid=f"stash:{policy}")  # fmt: skip
        for rect, value in zip(bars, v, strict=True):
            ax.text(rect.get_x() + rect.get_width() / 2, value, f"{value:.3g}", ha="center",
                    va="bottom", fontsize=8)  # fmt: skip
    if capacity is not None:
        ax.axhline(capacity / GIB, color="black", ls="--", lw=1, gid="capacity",
                   label=f"budget {capacity / GIB:g} GiB")  # fmt: skip
    ax.set_xticks(range(p), [f"stage {s}" for s in range(p)])
    ax.set_ylabel("stashed activations (GiB)")
    ax.legend(title="recomputation", frameon=False, loc="center right")
    ax.grid(axis="y", alpha=0.3)
    ax.set_title("Peak stash per stage under 1F1B: min(m, p − stage) microbatches", loc="left")
    return ax


def plan_counts(plan: Sequence[int], num_options: int = 3) -> tuple[int, ...]:
    """How many layers a plan puts on each option: (none, selective, full) for transformer layers."""
    counts = np.bincount(np.asarray(plan, dtype=np.int64), minlength=num_options)
    return tuple(int(c) for c in counts)


def frontier_plot(
    points: np.ndarray,
    frontier: np.ndarray,
    budget: float,
    chosen: tuple[float, float] | None,
    labels: Mapping[str, tuple[float, float]] | None = None,
    ax: Axes | None = None,
) -> Axes:
    """Every plan's (stashed GiB, extra time %) in grey, the Pareto frontier as a staircase, the
    budget as a dashed line and the chosen plan as a star, on a log bytes axis (pipe05).

    ``points`` and ``frontier`` are (n, 2) arrays of (bytes, extra fraction of step time);
    ``labels`` names special plans (the uniform policies: "none", "selective", "full") at their
    (bytes, fraction). The artists have gids (plans, frontier, budget, chosen, policy:<name>);
    :func:`update_frontier` moves the plans and :func:`update_choice` the budget and the star,
    which is what the explorer does. The bytes axis spans the plans; a budget beyond it is
    clipped.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 4), layout="constrained")
    ax.scatter([], [], s=10, color="#bbbbbb", gid="plans", label="a plan (what each layer keeps)")
    ax.plot([], [], drawstyle="steps-post", color="black", lw=1.4, gid="frontier",
            label="frontier: least time for its bytes")  # fmt: skip
    ax.axvline(1.0, color="#D55E00", ls="--", lw=1.2, gid="budget", label="budget")
    ax.scatter([], [], marker="*", s=220, color="#D55E00", zorder=5, gid="chosen",
               label="best plan within the budget")  # fmt: skip
    for name in labels or {}:
        colour = POLICY_COLOURS.get(name, "black")
        ax.scatter([], [], s=50, color=colour, zorder=4, gid=f"policy:{name}")
        ax.annotate(f"all {name}", (1.0, 0.0), xytext=(10, 5), textcoords="offset points",
                    fontsize=9, color=colour, zorder=6, gid=f"label:{name}")  # fmt: skip
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _p: f"{x:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("stashed activations on the stage (GiB, log scale)")
    ax.set_ylabel("extra time (% of the step)")
    ax.grid(alpha=0.3)
    ax.legend(frameon=False, loc="upper right", fontsize=9)
    update_frontier(ax, points, frontier, labels)
    update_choice(ax, budget, chosen)
    return ax


def _artists(ax: Axes) -> dict[str, Any]:
    return {a.get_gid(): a for a in [*ax.collections, *ax.lines, *ax.texts] if a.get_gid()}


def update_frontier(
    ax: Axes,
    points: np.ndarray,
    frontier: np.ndarray,
    labels: Mapping[str, tuple[float, float]] | None = None,
) -> None:
    """Move the plans, the frontier and the labelled plans :func:`frontier_plot` drew; the bytes
    axis spans the plans."""
    artists = _artists(ax)
    pts = np.asarray(points, dtype=float) * [1 / GIB, 100]
    front = np.asarray(frontier, dtype=float) * [1 / GIB, 100]
    artists["plans"].set_offsets(pts)
    artists["frontier"].set_data(front[:, 0], front[:, 1])
    for name, (nbytes, fraction) in (labels or {}).items():
        xy = (nbytes / GIB, 100 * fraction)
        artists[f"policy:{name}"].set_offsets([xy])
        artists[f"label:{name}"].xy = xy
    ax.set_xlim(pts[:, 0].min() / 1.6, pts[:, 0].max() * 1.6)
    ax.set_ylim(-1.5, max(pts[:, 1].max() * 1.15, 1.0))


def update_choice(ax: Axes, budget: float, chosen: tuple[float, float] | None) -> list[Any]:
    """Move the budget line and the chosen plan's star; returns the two artists (to blit)."""
    artists = _artists(ax)
    b = budget / GIB
    artists["budget"].set_xdata([b, b])
    star = np.empty((0, 2)) if chosen is None else np.array([[chosen[0] / GIB, 100 * chosen[1]]])
    artists["chosen"].set_offsets(star)
    return [artists["budget"], artists["chosen"]]
