"""Microbatch semantics figures (pipe06): the weight each accumulation rule gives a microbatch's
tokens, mean loss against token count with the two averages, the gradient error of accumulating
normalised models over microbatch sizes, and step time against the number of microbatches with
the kernel efficiency behind it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import matplotlib.pyplot as plt  # noqa: F401  (used by the plotting functions below)
import numpy as np
from matplotlib.ticker import FixedLocator, LogLocator, NullLocator

from course_lib.figures.pipeline import SCHEDULE_COLOURS

if TYPE_CHECKING:
    from matplotlib.axes import Axes

RULE_COLOURS: dict[str, str] = {
    "tokens": "#000000",
    "mean_of_means": "#D55E00",
    "padded": "#0072B2",
    "samples": "#CC79A7",
}
"""Okabe-Ito colours of the accumulation rules drawn against each other."""

RULE_LABELS: dict[str, str] = {
    "tokens": "token-weighted: every token 1/N",
    "mean_of_means": "mean of means: 1/(m·n_k)",
    "padded": "weights by padded size: P_k/(ΣP·n_k)",
    "samples": "weights by sequences: s_k/(S·n_k)",
}

NORM_COLOURS: dict[str, str] = {"batch": "#D55E00", "layer": "#009E73", "none": "#0072B2"}
NORM_STYLES: dict[str, tuple[str, str]] = {
    "batch": ("o", "-"),
    "layer": ("s", "-"),
    "none": ("^", "--"),
}
NORM_LABELS: dict[str, str] = {
    "batch": "batch norm (statistics over the microbatch)",
    "layer": "layer norm (statistics per sample)",
    "none": "no normalisation",
}

COMPUTE_COLOUR = SCHEDULE_COLOURS["F"]
BUBBLE_COLOUR = "#bbbbbb"


def relative_token_weights(masks: Sequence[np.ndarray], rule: str) -> np.ndarray:
    """N × the weight each token of microbatch k gets in the accumulated objective, per
    microbatch: 1 for every token under ``"tokens"`` (pipe06)."""
    n = np.array([np.count_nonzero(m) for m in masks], dtype=float)
    padded = np.array([np.size(m) for m in masks], dtype=float)
    seqs = np.array([np.shape(m)[0] for m in masks], dtype=float)
    if (n == 0).any():
        raise ValueError(f"masks[{int(np.argmax(n == 0))}] has zero tokens")
    total, k = n.sum(), len(n)
    per_token = {
        "tokens": np.full(k, 1.0 / total),
        "mean_of_means": 1.0 / (k * n),
        "padded": padded / (padded.sum() * n),
        "samples": seqs / (seqs.sum() * n),
    }
    if rule not in per_token:
        raise ValueError(f"unknown rule {rule!r}; known: {', '.join(per_token)}")
    return total * per_token[rule]


def token_weights(
    masks: Sequence[np.ndarray],
    rules: Sequence[str] = ("mean_of_means", "padded"),
    ax: Axes | None = None,
) -> Axes:
    """Per microbatch, how much each of its tokens counts relative to the token mean (pipe06).

    One group of bars per microbatch (gid ``weights:<rule>``), heights N·w_i from
    :func:`relative_token_weights`; the dashed line at 1 is token-weighted accumulation (gid
    ``tokens``). Tick labels give each microbatch's real tokens n_k and padded size P_k.
    """
    n = [int(np.count_nonzero(m)) for m in masks]
    padded = [int(np.size(m)) for m in masks]
    if ax is None:
        _, ax = plt.subplots(figsize=(9, 3.4), layout="constrained")
    width = 0.8 / len(rules)
    x = np.arange(len(masks))
    for i, rule in enumerate(rules):
        heights = relative_token_weights(masks, rule)
        ax.bar(x + (i - (len(rules) - 1) / 2) * width, heights, width=width,
               color=RULE_COLOURS.get(rule, "grey"), label=RULE_LABELS.get(rule, rule),
               gid=f"weights:{rule}")  # fmt: skip
    ax.axhline(1.0, color=RULE_COLOURS["tokens"], ls="--", lw=1.2, gid="tokens",
               label=RULE_LABELS["tokens"])  # fmt: skip
    ax.set_xticks(x, [f"{k}\nn={n[k]}\nP={padded[k]}" for k in range(len(masks))], fontsize=8)
    ax.set_xlabel("microbatch k: real tokens n, with padding P")
    ax.set_ylabel("weight of each token × N")
    ax.legend(frameon=False, fontsize=9, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(axis="y", alpha=0.3)
    ax.set_title("A token's weight in the step: above 1 it counts more than it should", loc="left")
    return ax


def loss_by_microbatch(
    token_counts: Sequence[int], mean_losses: Sequence[float], ax: Axes | None = None
) -> Axes:
    """Each microbatch's mean loss against its token count, with the token mean and the mean of
    means as horizontal lines (gids ``microbatches``, ``token_mean``, ``mean_of_means``) (pipe06)."""
    n = np.asarray(token_counts, dtype=float)
    losses = np.asarray(mean_losses, dtype=float)
    if n.shape != losses.shape or n.ndim != 1 or len(n) == 0:
        raise ValueError("token_counts and mean_losses must be 1-D of one length >= 1")
    if (n <= 0).any():
        raise ValueError(f"token_counts[{int(np.argmax(n <= 0))}] has zero tokens")
    token_mean = float(np.average(losses, weights=n))
    mean_of_means = float(losses.mean())
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 3.4), layout="constrained")
    ax.scatter(n, losses, s=30, color="#555555", zorder=3, gid="microbatches",
               label="a microbatch: its mean loss L̄_k")  # fmt: skip
    ax.axhline(token_mean, color=RULE_COLOURS["tokens"], lw=1.4, gid="token_mean",
               label=f"token mean Σ n_k L̄_k / N = {token_mean:.4f}")  # fmt: skip
    ax.axhline(mean_of_means, color=RULE_COLOURS["mean_of_means"], lw=1.4, ls="--",
               gid="mean_of_means", label=f"mean of means Σ L̄_k / m = {mean_of_means:.4f}")  # fmt: skip
    ax.set_xlabel("real tokens in the microbatch, n_k")
    ax.set_ylabel("mean loss per token (nats)")
    ax.legend(frameon=False, fontsize=9, loc="upper right")
    ax.grid(alpha=0.3)
    ax.set_title(
        f"Mean of means − token mean = {mean_of_means - token_mean:+.4f} nats",
        loc="left",
    )
    return ax


def norm_gradient_curves(
    microbatch_sizes: Sequence[int],
    errors: Mapping[str, Sequence[float]],
    floor: float = 1e-16,
    ax: Axes | None = None,
) -> Axes:
    """‖g_accumulated − g_full‖ / ‖g_full‖ against microbatch size, one line per normalisation,
    log-log; errors below ``floor`` (float rounding, or exactly 0) sit on the floor (pipe06).

    Lines have gid ``errors:<norm>``; the floor is a dotted line (gid ``floor``).
    """
    sizes = np.asarray(microbatch_sizes, dtype=float)
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 3.4), layout="constrained")
    for norm, values in errors.items():
        v = np.maximum(np.asarray(values, dtype=float), floor)
        if v.shape != sizes.shape:
            raise ValueError(f"errors[{norm!r}] has {v.size} values for {sizes.size} sizes")
        marker, style = NORM_STYLES.get(norm, ("o", "-"))
        ax.plot(sizes, v, marker=marker, ls=style, color=NORM_COLOURS.get(norm, "grey"),
                markersize=7 if marker == "s" else 5, label=NORM_LABELS.get(norm, norm),
                gid=f"errors:{norm}")  # fmt: skip
    ax.axhline(floor, color="black", ls=":", lw=1, gid="floor")
    ax.text(sizes[0], floor * 3, "float rounding: the same gradient", fontsize=8, va="bottom")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(base=10.0, numticks=6))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_locator(FixedLocator(sizes))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([f"{int(s)}" for s in sizes])
    ax.set_xlabel("samples per microbatch (the batch is the same)")
    ax.set_ylabel("‖g_acc − g_full‖ / ‖g_full‖")
    ax.legend(frameon=False, fontsize=9, loc="center right")
    ax.grid(alpha=0.3)
    ax.set_title("Accumulating over microbatches: only batch norm changes the gradient", loc="left")
    return ax


MAX_STEP_BARS = 11
"""Bars :func:`step_time_panels` can show: m = 1, 2, 4, ..., 1024."""


def step_time_panels(
    batch_size: int,
    num_stages: int,
    microbatch_times: Mapping[int, float],
    peak_sample_time: float,
    axes: Sequence[Axes] | None = None,
) -> np.ndarray:
    """Left: step time (m + p − 1)·t(b) for each m = B/b, split into compute m·t(b) (no bubble;
    blue, gid ``compute``) and bubble (p − 1)·t(b) (grey, gid ``bubble``), the best m starred (gid
    ``best``). Right: kernel efficiency b·peak_sample_time/t(b) of each tabulated size (gid
    ``efficiency``), the best size starred (gid ``best_size``). Returns the two Axes (pipe06).

    At most :data:`MAX_STEP_BARS` microbatch sizes divide the batch in one figure. The artists
    are made once (:func:`step_time_artists`, :func:`efficiency_artists`) and set by
    :func:`update_step_time_bars` and :func:`update_efficiency`, which the explorer calls on
    every change.
    """
    from course_lib.pipeline.accumulation import best_num_microbatches

    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(10, 3.6), layout="constrained",
                               gridspec_kw={"width_ratios": (1.6, 1.0)})  # fmt: skip
    ax, ax_eff = axes
    update_step_time_bars(step_time_artists(ax), batch_size, num_stages, microbatch_times)
    best = best_num_microbatches(batch_size, num_stages, microbatch_times)
    sizes = sorted(microbatch_times)
    efficiency = [b * peak_sample_time / microbatch_times[b] for b in sizes]
    update_efficiency(efficiency_artists(ax_eff, sizes), sizes, efficiency, batch_size // best)
    return np.array([ax, ax_eff], dtype=object)


def step_time_artists(ax: Axes) -> dict:
    """The step-time bars of :func:`step_time_panels` on ``ax``, empty until updated (pipe06)."""
    slots = np.arange(MAX_STEP_BARS)
    compute = ax.bar(slots, np.zeros(MAX_STEP_BARS), color=COMPUTE_COLOUR, gid="compute",
                     label="compute m·t(b) (no bubble)")  # fmt: skip
    bubble = ax.bar(slots, np.zeros(MAX_STEP_BARS), color=BUBBLE_COLOUR, gid="bubble",
                    label="bubble (p − 1)·t(b)")  # fmt: skip
    best = ax.scatter([], [], marker="*", s=180, color="#D55E00", zorder=4, gid="best",
                      label="best m")  # fmt: skip
    ax.set_xlabel("microbatches m, of b = B/m sequences each")
    legend = ax.legend(frameon=False, fontsize=9, loc="upper center")
    ax.grid(axis="y", alpha=0.3)
    (best_label,) = [t for t in legend.get_texts() if t.get_text() == "best m"]
    return {"ax": ax, "best_label": best_label, "compute": compute, "bubble": bubble,
            "best": best}  # fmt: skip


def update_step_time_bars(
    artists: Mapping, batch_size: int, num_stages: int, microbatch_times: Mapping[int, float]
) -> dict[int, float]:
    """Set :func:`step_time_artists` to a batch, a pipeline and a table {b: t(b)}; returns the
    step time of every m (pipe06)."""
    from course_lib.pipeline.accumulation import best_num_microbatches, step_times

    times = step_times(batch_size, num_stages, microbatch_times)
    if len(times) > MAX_STEP_BARS:
        raise ValueError(f"at most {MAX_STEP_BARS} microbatch sizes per figure, got {len(times)}")
    best = best_num_microbatches(batch_size, num_stages, microbatch_times)
    ax = artists["ax"]
    ms = np.array(sorted(times))
    per = np.array([microbatch_times[batch_size // m] for m in ms], dtype=float)
    scale, unit = (1e3, "ms") if max(times.values()) < 1.0 else (1.0, "s")
    for k, (c, b) in enumerate(zip(artists["compute"], artists["bubble"], strict=True)):
        shown = k < len(ms)
        c.set_visible(shown)
        b.set_visible(shown)
        if shown:
            c.set_height(ms[k] * per[k] * scale)
            b.set_y(ms[k] * per[k] * scale)
            b.set_height((num_stages - 1) * per[k] * scale)
    i = int(np.flatnonzero(ms == best)[0])
    artists["best"].set_offsets([[i, times[best] * scale * 1.04]])
    artists["best_label"].set_text(f"best: m = {best}, b = {batch_size // best}")
    ax.set_xticks(np.arange(len(ms)), [str(m) for m in ms], fontsize=8)
    ax.set_xlim(-0.6, len(ms) - 0.4)
    ax.set_ylim(0, max(times.values()) * scale * 1.15)
    ax.set_ylabel(f"step time ({unit})")
    ax.set_title(
        f"B = {batch_size} sequences, p = {num_stages}: best m = {best} "
        f"({times[best] * scale:.3g} {unit})",
        loc="left",
    )
    return times


def efficiency_artists(ax_eff: Axes, sizes: Sequence[int]) -> dict:
    """The kernel-efficiency panel on ``ax_eff`` with an x axis over ``sizes`` (log2 positions),
    its line and star empty until :func:`update_efficiency` (pipe06)."""
    x = np.log2(np.asarray(sizes, dtype=float))  # a linear axis in log2(b): cheap to redraw
    (line,) = ax_eff.plot([], [], marker="o", color="black", gid="efficiency")
    star = ax_eff.scatter([], [], marker="*", s=180, color="#D55E00", zorder=4, gid="best_size")
    step = 1 if len(x) <= 6 else 2
    ax_eff.set_xticks(x[::step], [f"{int(b)}" for b in sizes][::step], fontsize=8)
    ax_eff.set_xlim(x[0] - 0.5, x[-1] + 0.5)
    ax_eff.set_ylim(0, 1.05)
    ax_eff.set_yticks([0.0, 0.25, 0.5, 0.75, 1.0])
    ax_eff.set_xlabel("microbatch size b (sequences)")
    ax_eff.set_ylabel("kernel efficiency")
    ax_eff.grid(alpha=0.3)
    ax_eff.set_title("Throughput / peak at size b", loc="left")
    return {"ax": ax_eff, "efficiency": line, "best_size": star}


def update_efficiency(
    artists: Mapping, sizes: Sequence[int], efficiency: Sequence[float], best_size: int
) -> list:
    """Move the efficiency line to (sizes, efficiency) and the star to ``best_size``; returns the
    two artists (to blit) (pipe06)."""
    x = np.log2(np.asarray(sizes, dtype=float))
    e = np.asarray(efficiency, dtype=float)
    artists["efficiency"].set_data(x, e)
    k = list(sizes).index(best_size)
    artists["best_size"].set_offsets([[x[k], e[k]]])
    return [artists["efficiency"], artists["best_size"]]
