"""Partition figures (pipe01): a model's per-layer costs, and stage times and stage memory of
one or more partitions side by side."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import matplotlib.pyplot as plt  # noqa: F401  (used by the plotting functions below)
import numpy as np
from matplotlib.patches import Patch

from course_lib.figures.pipeline import SCHEDULE_COLOURS

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from course_lib.pipeline.partition import ModelSpec

#: Okabe-Ito colours of a stage time's parts: forward, backward, boundary transfer.
TIME_COLOURS: dict[str, str] = {
    "forward": SCHEDULE_COLOURS["F"],
    "backward": SCHEDULE_COLOURS["B"],
    "transfer": "#CC79A7",
}
#: Colours of a stage's memory: parameters' weights, gradients, optimizer state, activations.
MEMORY_COLOURS: dict[str, str] = {
    "weights": "#0072B2",
    "gradients": "#56B4E9",
    "optimizer": "#009E73",
    "activations": "#E69F00",
}
#: Colours of layer kinds in the model profile.
KIND_COLOURS: dict[str, str] = {
    "embedding": "#009E73",
    "block": "#0072B2",
    "output": "#D55E00",
    "loss": "#CC79A7",
    "layer": "#0072B2",
}
LIMIT_COLOUR = "#D55E00"
HATCHES = ("", "//", "..", "xx")
GIB = 2.0**30


def _short(name: str) -> str:
    return {"embedding": "emb", "output": "out"}.get(name, name.replace("block ", "b"))


def model_profile(spec: ModelSpec, axes: Sequence[Axes] | None = None) -> np.ndarray:
    """Per layer: forward + backward time, model state (16 B/param) and stash, bytes at each cut (pipe01).

    Three panels sharing the layer axis (returned as an array of Axes): compute time per
    microbatch (ms, bars gid ``compute``), GiB of weights + gradients + optimizer state and of
    the activations stashed per microbatch (gids ``state``, ``stash``), and the MiB crossing each
    cut (log scale, gid ``cuts``; cut k sits between layer k - 1 and layer k).
    """
    from course_lib.pipeline.partition import ADAM_MIXED_PRECISION

    if axes is None:
        fig, axes = plt.subplots(3, 1, figsize=(10, 6.2), sharex=True, layout="constrained")
    axes = np.asarray(axes, dtype=object)
    n = spec.num_layers
    x = np.arange(n)
    colours = [KIND_COLOURS.get(k, KIND_COLOURS["layer"]) for k in spec.kinds]
    top, mid, low = axes
    top.bar(x, spec.layer_times * 1e3, color=colours, gid="compute")
    top.set_ylabel("forward + backward\n(ms per microbatch)")
    top.set_ylim(0, spec.layer_times.max() * 1e3 * 1.3)
    for i in np.flatnonzero(spec.layer_times < 0.02 * spec.layer_times.max()):
        top.annotate(f"{spec.layer_times[i] * 1e3:.2g} ms", (i, spec.layer_times[i] * 1e3), (0, 3),
                     textcoords="offset points", ha="center", va="bottom", fontsize=8,
                     rotation=90)  # fmt: skip
    per_param = sum(ADAM_MIXED_PRECISION.values())
    mid.bar(x - 0.2, spec.num_params * per_param / GIB, width=0.4, color=colours, gid="state")
    mid.bar(x + 0.2, spec.activation_bytes / GIB, width=0.4, color=colours, alpha=0.45,
                    hatch="//", edgecolor="white", gid="stash")  # fmt: skip
    mid.set_ylabel("GiB")
    mid.set_ylim(
        0, max((spec.num_params * per_param).max(), spec.activation_bytes.max()) / GIB * 1.3
    )
    mid.legend(
        [Patch(facecolor="grey"), Patch(facecolor="grey", alpha=0.45, hatch="//", edgecolor="white")],
        ["weights + gradients + optimizer (16 B/param)", "stash per microbatch"],
        frameon=False, loc="upper center", ncols=2, fontsize=9,
    )  # fmt: skip
    cuts = spec.cut_bytes / 2**20
    low.plot(x[1:] - 0.5, cuts, "o-", color="#555555", ms=4, lw=1, gid="cuts")
    low.set_yscale("log")
    low.set_ylim(
        max(cuts.min(), 1e-3) / 3 if len(cuts) else 1, (cuts.max() if len(cuts) else 1) * 4
    )
    low.set_ylabel("bytes at the cut\n(MiB, per direction)")
    for k in {int(np.argmin(cuts)), int(np.argmax(cuts))} if len(cuts) else ():
        low.annotate(f"{cuts[k]:.3g} MiB", (k + 0.5, cuts[k]), (4, 6), textcoords="offset points",
                     fontsize=9)  # fmt: skip
    labels = [_short(name) if (kind != "block" or i % 4 == 1) else "" for i, (name, kind)
              in enumerate(zip(spec.names, spec.kinds, strict=True))]  # fmt: skip
    low.set_xticks(x, labels, fontsize=8)
    low.set_xlim(-0.7, n - 0.3)
    low.set_xlabel("layer")
    kinds = list(dict.fromkeys(spec.kinds))
    top.legend([Patch(facecolor=KIND_COLOURS.get(k, KIND_COLOURS["layer"])) for k in kinds], kinds,
               frameon=False, ncols=len(kinds), loc="upper center", fontsize=9)  # fmt: skip
    for ax in axes:
        ax.grid(axis="y", alpha=0.3)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    top.set_title(f"{spec.name}: cost per layer", loc="left")
    return axes


def _grouped(
    ax: Axes,
    parts: Mapping[str, np.ndarray],
    colours: Mapping[str, str],
    names: Sequence[str],
    scale: float,
) -> tuple[np.ndarray, float]:
    """Stacked bars of parts[part][partition, stage] grouped by stage; returns (bar x, width)."""
    num = len(names)
    stages = next(iter(parts.values())).shape[1]
    width = 0.8 / num
    xs = np.arange(stages)[None, :] + (np.arange(num)[:, None] - (num - 1) / 2) * width
    bottom = np.zeros((num, stages))
    for part, values in parts.items():
        for i, name in enumerate(names):
            ax.bar(xs[i], values[i] * scale, width * 0.92, bottom=bottom[i] * scale,
                          color=colours[part], hatch=HATCHES[i % len(HATCHES)],
                          edgecolor="white", linewidth=0.6, gid=f"{name}:{part}")  # fmt: skip
        bottom = bottom + values
    ax.set_xticks(np.arange(stages), [f"stage {s}" for s in range(stages)])
    handles = [Patch(facecolor=colours[p]) for p in parts]
    labels = list(parts)
    if num > 1:
        handles += [Patch(facecolor="white", edgecolor="#555555", hatch=HATCHES[i % len(HATCHES)])
                    for i in range(num)]  # fmt: skip
        labels += list(names)
    ax.legend(handles, labels, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(axis="y", alpha=0.3)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return xs, width


def stage_time_bars(
    spec: ModelSpec,
    partitions: Mapping[str, Sequence[int]],
    link_bandwidth: float,
    ax: Axes | None = None,
) -> Axes:
    """Stage times per microbatch (ms) of named partitions: forward, backward, transfer (pipe01).

    One group of bars per stage, one hatched bar per partition (gids ``<name>:forward`` etc.);
    a dashed line at each partition's slowest stage (gid ``bottleneck:<name>``), the time one
    microbatch takes to leave the pipeline in steady state.
    """
    from course_lib.pipeline.partition import stage_sums, stage_times

    if ax is None:
        _, ax = plt.subplots(figsize=(10, 3.8), layout="constrained")
    names = list(partitions)
    forward, backward, transfer, total = [], [], [], []
    for bounds in partitions.values():
        t = stage_times(spec, bounds, link_bandwidth)
        f = stage_sums(spec.forward_times, bounds)
        b = stage_sums(spec.backward_times, bounds)
        forward.append(f)
        backward.append(b)
        transfer.append(t - f - b)
        total.append(t)
    parts = {"forward": np.array(forward), "backward": np.array(backward),
             "transfer": np.array(transfer)}  # fmt: skip
    xs, width = _grouped(ax, parts, TIME_COLOURS, names, 1e3)
    styles = ("--", ":", "-.", (0, (5, 1)))
    for i, name in enumerate(names):
        worst = float(total[i].max())
        ax.axhline(worst * 1e3, color="#333333", lw=1.2, ls=styles[i % len(styles)],
                   gid=f"bottleneck:{name}")  # fmt: skip
        s = int(np.argmax(total[i]))
        ax.annotate(f"{name}: slowest {worst * 1e3:.1f} ms", (xs[i][s], worst * 1e3), (0, 4),
                    textcoords="offset points", ha="center", va="bottom", fontsize=9)  # fmt: skip
    ax.set_ylim(0, max(float(t.max()) for t in total) * 1e3 * 1.18)
    ax.set_ylabel("ms per microbatch")
    ax.set_title(f"Stage times at {link_bandwidth / 1e9:g} GB/s links", loc="left")
    return ax


def stage_memory_bars(
    spec: ModelSpec,
    partitions: Mapping[str, Sequence[int]],
    num_microbatches: int,
    memory_limit: float | None = None,
    schedule: str = "1F1B",
    ax: Axes | None = None,
) -> Axes:
    """Stage memory (GiB) of named partitions: weights, gradients, optimizer state, stashed
    activations × in-flight microbatches, and a memory limit (gid ``limit``) (pipe01).

    Bars over the limit are outlined in the limit's colour (their gids end in ``:over``).
    """
    from course_lib.pipeline.partition import stage_memory

    if ax is None:
        _, ax = plt.subplots(figsize=(10, 3.8), layout="constrained")
    names = list(partitions)
    frames = [stage_memory(spec, b, num_microbatches, schedule) for b in partitions.values()]
    parts = {k: np.array([f[k].to_numpy() for f in frames]) for k in MEMORY_COLOURS}
    xs, width = _grouped(ax, parts, MEMORY_COLOURS, names, 1 / GIB)
    totals = np.array([f["total"].to_numpy() for f in frames])
    in_flight = frames[0]["in_flight"].to_numpy()
    for i in range(len(names)):
        for s, total in enumerate(totals[i]):
            over = memory_limit is not None and total > memory_limit
            ax.annotate(f"{total / GIB:.1f}", (xs[i][s], total / GIB), (0, 2),
                        textcoords="offset points", ha="center", va="bottom", fontsize=8,
                        color=LIMIT_COLOUR if over else "black",
                        fontweight="bold" if over else "normal")  # fmt: skip
            if over:
                ax.bar(xs[i][s], total / GIB, width * 0.92, fill=False, edgecolor=LIMIT_COLOUR,
                       linewidth=1.8, gid=f"{names[i]}:stage{s}:over")  # fmt: skip
    high = totals.max() / GIB
    if memory_limit is not None:
        ax.axhline(memory_limit / GIB, color=LIMIT_COLOUR, lw=1.5, ls="--", gid="limit")
        ax.annotate(f"limit {memory_limit / GIB:g} GiB", (1.0, memory_limit / GIB), (-4, 3),
                    xycoords=("axes fraction", "data"), textcoords="offset points", ha="right",
                    color=LIMIT_COLOUR, fontsize=9)  # fmt: skip
        high = max(high, memory_limit / GIB)
    ax.set_ylim(0, high * 1.15)
    ax.set_xticks(np.arange(len(in_flight)),
                  [f"stage {s}\n{n} in flight" for s, n in enumerate(in_flight)])  # fmt: skip
    ax.set_ylabel("GiB")
    ax.set_title(f"Stage memory under {schedule}, m = {num_microbatches}", loc="left")
    return ax
