"""Scaling figures (cost08): strong- and weak-scaling efficiency of published runs, and the
throughput / time-to-target trade-off of a global batch."""

from __future__ import annotations

from typing import TYPE_CHECKING

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import FixedLocator, NullLocator

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes

# --- cost08 ----------------------------------------------------------------------------------

SCALING_COLOURS: dict[str, str] = {
    "PTD-P": "#0072B2",
    "ZeRO-3": "#D55E00",
    "ideal": "#999999",
    "throughput": "#009E73",
    "time": "#0072B2",
    "steps": "#E69F00",
}
"""Okabe-Ito colours of the scaling figures (schemes of Narayanan et al. 2021 Table 2, and the
throughput, steps and time curves of :func:`batch_tradeoff`)."""


def _log2_devices(ax: Axes, devices: np.ndarray) -> None:
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(sorted({float(d) for d in devices})))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([f"{int(d):,}" for d in sorted({float(d) for d in devices})])


def strong_scaling_efficiency(
    table2: pd.DataFrame, parameters_billion: float = 174.6, ax: Axes | None = None
) -> Axes:
    """Strong-scaling efficiency of each scheme of Narayanan et al. (2021) Table 2 at one model size (cost08).

    The batch is fixed within a scheme, so the time of the fixed work is ∝ 1/(N·X) with X the
    per-GPU teraFLOP/s, and E_s(N) = X(N)/X(N0), N0 the scheme's smallest GPU count. One line per
    scheme (gid ``efficiency:<scheme>``), the ideal E = 1 dashed (gid ``ideal``).
    """
    from course_lib.scaling import strong_efficiency

    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, 3.8), layout="constrained")
    rows = table2[table2["parameters_billion"] == parameters_billion]
    if rows.empty:
        raise ValueError(f"no Table 2 rows with parameters_billion = {parameters_billion}")
    for scheme, group in rows.groupby("scheme", sort=False):
        if group["batch_size"].nunique() != 1:
            raise ValueError(f"{scheme}: the batch changes between rows, so the work is not fixed")
        n = group["num_gpus"].to_numpy(dtype=float)
        time = 1.0 / (n * group["teraflops_per_gpu"].to_numpy(dtype=float))  # ∝ time of the work
        eff = strong_efficiency(n, time, n.min())
        colour = SCALING_COLOURS.get(str(scheme), "#000000")
        ax.plot(n, eff, "-o", color=colour, lw=2, label=str(scheme), gid=f"efficiency:{scheme}")
        for x, y in zip(n, eff, strict=True):
            ax.annotate(
                f"{y:.0%}",
                (x, y),
                textcoords="offset points",
                xytext=(6, 6),
                fontsize=9,
                color=colour,
            )
    n_all = rows["num_gpus"].to_numpy(dtype=float)
    ax.axhline(1.0, color=SCALING_COLOURS["ideal"], ls="--", lw=1.2, gid="ideal")
    _log2_devices(ax, n_all)
    ax.set_ylim(0, 1.15)
    ax.set_xlabel("GPUs (A100)")
    ax.set_ylabel("strong-scaling efficiency E_s")
    batch = int(rows["batch_size"].iloc[0])
    ax.set_title(
        f"{parameters_billion:g}B GPT, batch {batch:,} fixed: E_s vs the smallest GPU count",
        loc="left",
        fontsize=10,
    )
    ax.legend(frameon=False, loc="lower left")
    ax.grid(alpha=0.3)
    return ax


def weak_scaling_throughput(table1: pd.DataFrame, ax: Axes | None = None) -> Axes:
    """Per-GPU teraFLOP/s of Narayanan et al. (2021) Table 1 against GPUs, model size annotated (cost08).

    The line (gid ``per_gpu``) is the table's achieved teraFLOP/s per GPU; the right axis reads
    it as X(N)/X(N0) with N0 = 32, the table's smallest run; each point names its model size.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, 3.8), layout="constrained")
    n = table1["num_gpus"].to_numpy(dtype=float)
    x = table1["teraflops_per_gpu"].to_numpy(dtype=float)
    ax.plot(n, x, "-o", color=SCALING_COLOURS["PTD-P"], lw=2, gid="per_gpu")
    for i, (ni, xi, p) in enumerate(zip(n, x, table1["parameters_billion"], strict=True)):
        below = i == len(n) - 1 and len(n) > 1  # the last two points sit close together
        rising = i + 1 < len(n) and x[i + 1] > xi + 3  # a steep line to the right: label left
        ax.annotate(
            f"{p:g}B",
            (ni, xi),
            textcoords="offset points",
            xytext=(0, -13) if below else (-5, 4) if rising else (0, 7),
            ha="right" if rising and not below else "center",
            fontsize=8,
            color="#444444",
        )
    _log2_devices(ax, n[::3] if len(n) > 6 else n)
    ax.set_ylim(100, 180)
    ax.set_xlabel("GPUs (A100); the model grows with them")
    ax.set_ylabel("achieved teraFLOP/s per GPU")
    right = ax.secondary_yaxis("right", functions=(lambda v: v / x[0], lambda r: r * x[0]))
    right.set_ylabel(f"X(N)/X(N0), N0 = {int(n[0])}")
    ax.set_title(
        "Megatron-LM weak scaling (Narayanan et al. 2021, Table 1)", loc="left", fontsize=10
    )
    ax.grid(alpha=0.3)
    return ax


def batch_tradeoff(
    num_devices: int,
    micro_batch: int,
    micro_time: float,
    allreduce_time: float,
    noise_scale: float,
    min_steps: float,
    max_accumulation: int = 256,
    axes: tuple[Axes, Axes] | None = None,
) -> tuple[Axes, Axes]:
    """Throughput and time to target against the global batch on a fixed cluster (cost08).

    Global batch B = N·b·k for k = 1..max_accumulation microbatches per device; step time
    k·t_micro + t_allreduce; throughput B / step time (gid ``throughput``); steps to target
    S_min(1 + B_noise/B) (gid ``steps``); time to target = steps × step time (gid ``time``),
    its minimum circled (gid ``best``). Left panel: throughput and steps, each relative to its
    value at k = 1; right: time to target in hours.
    """
    from course_lib.scaling import best_accumulation_steps, steps_to_target

    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(11, 3.8), layout="constrained")
    left, right = axes
    k = np.arange(1, max_accumulation + 1, dtype=float)
    batch = num_devices * micro_batch * k
    step = k * micro_time + allreduce_time
    throughput = batch / step
    steps = steps_to_target(batch, min_steps, noise_scale)
    hours = steps * step / 3600.0
    best = best_accumulation_steps(
        num_devices, micro_batch, micro_time, allreduce_time, noise_scale, max_accumulation
    )
    left.plot(
        batch,
        throughput / throughput[0],
        color=SCALING_COLOURS["throughput"],
        lw=2,
        label="throughput (examples/s)",
        gid="throughput",
    )
    left.plot(
        batch,
        steps / steps[0],
        color=SCALING_COLOURS["steps"],
        lw=2,
        label="steps to target",
        gid="steps",
    )
    left.axvline(
        noise_scale, color=SCALING_COLOURS["ideal"], ls=":", lw=1.5, gid="noise_scale_left"
    )
    left.set_xscale("log", base=2)
    left.set_xlabel("global batch B (examples)")
    left.set_ylabel("relative to k = 1")
    left.legend(frameon=False)
    left.set_title("throughput keeps rising with B; steps stop falling", loc="left", fontsize=10)
    right.plot(batch, hours, color=SCALING_COLOURS["time"], lw=2, gid="time")
    right.plot(
        [batch[best - 1]],
        [hours[best - 1]],
        "o",
        ms=10,
        mfc="none",
        mec="#222222",
        mew=2,
        gid="best",
    )
    right.annotate(
        f"best B = {int(batch[best - 1]):,} (k = {best})",
        (batch[best - 1], hours[best - 1]),
        textcoords="offset points",
        xytext=(0, 14),
        ha="center",
        fontsize=9,
    )
    right.axvline(noise_scale, color=SCALING_COLOURS["ideal"], ls=":", lw=1.5, gid="noise_scale")
    right.set_xscale("log", base=2)
    right.set_xlabel("global batch B (examples)")
    right.set_ylabel("time to target (h)")
    right.set_title(
        f"time to target; dotted: B_noise = {noise_scale:,.0f}", loc="left", fontsize=10
    )
    for ax in axes:
        ax.grid(alpha=0.3)
    return left, right
