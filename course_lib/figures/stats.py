"""Regression-triage figures (cost10): repeated runs with a bootstrap interval, power against runs,
and a trace diff's growth in total and in self time."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import matplotlib.pyplot as plt
import numpy as np

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

STATS_COLOURS: dict[str, str] = {
    "before": "#56B4E9",
    "after": "#E69F00",
    "interval": "#009E73",
    "total": "#BBBBBB",
    "self": "#D55E00",
}
"""Okabe-Ito colours: before runs, after runs, the bootstrap interval, total (inclusive) growth,
self growth."""


def comparison_plot(
    before: Sequence[float],
    after: Sequence[float],
    *,
    confidence: float = 0.95,
    num_resamples: int = 10_000,
    seed: int = 0,
    unit: str = "ms",
) -> Figure:
    """Left: every run before and after (jittered); right: the bootstrap distribution of
    mean(after) − mean(before) with its percentile interval and zero marked (cost10).

    The interval drawn is :func:`course_lib.stats.bootstrap_diff_ci` with the same arguments.
    """
    from course_lib.stats import _resampled_means, bootstrap_diff_ci

    scale = {"s": 1.0, "ms": 1e3, "µs": 1e6}[unit]
    b = np.asarray(before, dtype=float)
    a = np.asarray(after, dtype=float)
    low, high = bootstrap_diff_ci(
        b, a, confidence=confidence, num_resamples=num_resamples, seed=seed
    )
    rng = np.random.default_rng(seed)
    diffs = _resampled_means(a, num_resamples, rng) - _resampled_means(b, num_resamples, rng)
    fig, (runs_ax, boot_ax) = plt.subplots(
        1, 2, figsize=(11, 3.6), layout="constrained", gridspec_kw={"width_ratios": (1, 1.4)}
    )
    jitter = np.random.default_rng(1)
    for x, (label, values) in enumerate((("before", b), ("after", a))):
        runs_ax.scatter(
            x + jitter.uniform(-0.12, 0.12, values.size),
            values * scale,
            s=18,
            color=STATS_COLOURS[label],
            alpha=0.8,
            label=label,
            gid=label,
        )
        runs_ax.hlines(values.mean() * scale, x - 0.25, x + 0.25, color="#222222", lw=2)
    runs_ax.set_xticks([0, 1], [f"before ({b.size} runs)", f"after ({a.size} runs)"])
    runs_ax.set_xlim(-0.6, 1.6)
    runs_ax.set_ylabel(f"run time ({unit})")
    runs_ax.set_title("each run; bar = mean", loc="left", fontsize=10)
    boot_ax.hist(diffs * scale, bins=60, color="#CCCCCC")
    boot_ax.axvspan(
        low * scale, high * scale, color=STATS_COLOURS["interval"], alpha=0.25, gid="interval"
    )
    boot_ax.axvline(0.0, color="#222222", ls="--", lw=1)
    boot_ax.set_xlabel(f"mean(after) − mean(before) ({unit})")
    boot_ax.set_yticks([])
    boot_ax.set_title(
        f"{confidence:.0%} bootstrap interval [{low * scale:.3g}, {high * scale:.3g}] {unit}",
        loc="left",
        fontsize=10,
    )
    fig.interval = (low, high)  # type: ignore[attr-defined]  # what is drawn, for tests
    return fig


def power_curves(
    relative_changes: Sequence[float], cv: float, *, max_runs: int = 60, alpha: float = 0.05
) -> Figure:
    """Probability of detecting each relative change against runs per side at noise ``cv``; the
    dot on each curve is :func:`course_lib.stats.runs_to_detect` (power 0.8) (cost10)."""
    from course_lib.stats import detection_power, runs_to_detect

    fig, ax = plt.subplots(figsize=(8, 3.6), layout="constrained")
    runs = np.arange(2, max_runs + 1)
    for i, delta in enumerate(relative_changes):
        colour = plt.cm.viridis(i / max(len(relative_changes) - 1, 1) * 0.85)
        ax.plot(
            runs,
            detection_power(runs, delta, cv, alpha=alpha),
            color=colour,
            lw=2,
            label=f"{delta:.0%} change",
        )
        n = runs_to_detect(delta, cv, alpha=alpha)
        if n <= max_runs:
            ax.plot([n], [detection_power(n, delta, cv, alpha=alpha)], "o", color=colour)
            ax.annotate(
                f"{n} runs",
                (n, 0.8),
                xytext=(4, -14),
                textcoords="offset points",
                fontsize=9,
                color=colour,
            )
    ax.axhline(0.8, color="#888888", ls=":", lw=1)
    ax.set_ylim(0, 1.02)
    ax.set_xlim(2, max_runs)
    ax.set_xlabel("runs per side")
    ax.set_ylabel("probability of detecting it")
    ax.set_title(f"run-to-run noise cv = {cv:.1%}, two-sided α = {alpha}", loc="left", fontsize=10)
    ax.legend(loc="lower right", frameon=False)
    return fig


def trace_diff_bars(
    diff: pd.DataFrame, *, top: int = 8, unit: str = "ms", show_self: bool = True
) -> Figure:
    """The ``top`` ops by growth in total (inclusive) time: grey bars total, red bars self time
    (if ``show_self``); ops that appeared are marked "+new" (cost10). Values are
    :func:`course_lib.stats.trace_diff`'s, summed over the whole trace."""
    scale = {"s": 1.0, "ms": 1e3, "µs": 1e6}[unit]
    rows = diff.sort_values("diff_duration", ascending=False, kind="stable").head(top)
    fig, ax = plt.subplots(figsize=(11, 0.42 * len(rows) + 1.2), layout="constrained")
    y = np.arange(len(rows))
    offset, height = (0.18, 0.36) if show_self else (0.0, 0.6)
    ax.barh(
        y - offset,
        rows["diff_duration"] * scale,
        height=height,
        color=STATS_COLOURS["total"],
        label="total (inclusive) time",
    )
    if show_self:
        ax.barh(
            y + offset,
            rows["diff_self_duration"] * scale,
            height=height,
            color=STATS_COLOURS["self"],
            label="self time (outside child ops)",
        )
    labels = [
        f"{name}  (+new)" if change == "added" else name
        for name, change in zip(rows.index, rows["change"], strict=True)
    ]
    ax.set_yticks(y, labels, fontsize=9)
    ax.invert_yaxis()
    ax.axvline(0.0, color="#222222", lw=0.8)
    ax.set_xlabel(f"growth after − before, summed over the trace ({unit})")
    ax.legend(loc="lower right", frameon=False)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return fig
