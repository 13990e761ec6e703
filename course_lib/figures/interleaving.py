"""Interleaved-pipeline figures (pipe04): which rank holds which layers, interleaved schedule
grids on one time axis, the chain of hand-offs one microbatch makes between ranks and nodes, and
the step time against the number of chunks under a latency.

The models are :mod:`course_lib.pipeline.interleaving` and the simulator; schedule grids are
:func:`course_lib.figures.pipeline.schedule_grid` (pipe02), with later chunks hatched.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter

from course_lib.figures.pipeline import (
    IDLE_COLOUR,
    PIPELINE_LINE_COLOURS,
    SCHEDULE_COLOURS,
    schedule_grid,
)
from course_lib.figures.style import count_label, time_unit

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from course_lib.pipeline import Timeline

CHUNK_COLOURS = ("#0072B2", "#56B4E9", "#009E73", "#E69F00", "#CC79A7", "#D55E00", "#F0E442")
"""Okabe-Ito colours of a rank's local chunks 0, 1, 2, ... (chunk c of rank r is stage c·p + r)."""
NODE_HOP_COLOUR = "#D55E00"
"""A hand-off between nodes (vermillion); hand-offs inside a node are drawn in blue."""
RANK_HOP_COLOUR = "#0072B2"


def chunk_placement(
    num_layers: int, num_ranks: int, chunks_per_rank: int, ax: Axes | None = None
) -> Axes:
    """Which rank holds which layer: a row per rank, a cell per layer it holds, coloured by the
    rank's local chunk and labelled with the global stage (gids ``rank<r>:chunk<c>``) (pipe04)."""
    from course_lib.pipeline.interleaving import layer_ranks

    layer_ranks(num_layers, num_ranks, chunks_per_rank)  # validates L, p, v
    p, v = num_ranks, chunks_per_rank
    per_chunk = num_layers // (v * p)
    if ax is None:
        _, ax = plt.subplots(figsize=(10, 0.9 + 0.45 * p), layout="constrained")
    for rank in range(p):
        ax.broken_barh([(0, num_layers)], (rank - 0.4, 0.8), facecolors="#f4f4f4")
        for c in range(v):
            stage = c * p + rank
            first = stage * per_chunk
            boxes = ax.broken_barh(
                [(first, per_chunk)],
                (rank - 0.4, 0.8),
                facecolors=CHUNK_COLOURS[c % len(CHUNK_COLOURS)],
                edgecolors="white",
                linewidths=1.5,
            )
            boxes.set_gid(f"rank{rank}:chunk{c}")
            ax.text(first + per_chunk / 2, rank, f"stage {stage}", ha="center", va="center",
                    fontsize=8, color="white", fontweight="bold")  # fmt: skip
    ax.set_xlim(0, num_layers)
    ax.set_ylim(p - 0.5, -0.5)
    ax.set_yticks(range(p), [f"rank {r}" for r in range(p)])
    step = max(1, num_layers // 16)
    ax.set_xticks(np.arange(0, num_layers + 1, step))
    ax.set_xlabel("layer")
    ax.tick_params(axis="y", length=0)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    handles = [
        Patch(facecolor=CHUNK_COLOURS[c % len(CHUNK_COLOURS)], label=f"local chunk {c}")
        for c in range(v)
    ]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.set_title(
        f"{num_layers} layers in {v * p} chunks of {per_chunk}: stage k on rank k mod {p}",
        loc="left",
    )
    return ax


def interleaved_grids(runs: Mapping[str, Timeline], figsize: tuple[float, float] | None = None):
    """Schedule grids of several runs, one above the other on one time axis; actions of a rank's
    second and later chunks hatched (gid ``rank<r>:later-chunks``) (pipe04). Returns the Figure."""
    if not runs:
        raise ValueError("runs must name at least one timeline")
    rows = [run.schedule.num_ranks for run in runs.values()]
    if figsize is None:
        figsize = (10, 0.9 * len(rows) + 0.38 * sum(rows))
    fig, axes = plt.subplots(
        len(rows), 1, figsize=figsize, layout="constrained", sharex=True,
        gridspec_kw={"height_ratios": rows},
    )  # fmt: skip
    axes = np.atleast_1d(axes)
    span = max(run.makespan for run in runs.values())
    for ax, (name, run) in zip(axes, runs.items(), strict=True):
        schedule = run.schedule
        title = (
            f"{name}: overhead {run.overhead:.2%} of ideal compute, step "
            f"{run.makespan * time_unit(span)[0]:.3g} {time_unit(span)[1]}"
        )
        schedule_grid(run, ax=ax, title=title)
        for label in ax.texts:  # microbatch numbers inside the boxes: the layout can skip them
            label.set_in_layout(False)
        events = run.events
        later = events["stage"].to_numpy() >= schedule.num_ranks
        for rank in range(schedule.num_ranks):
            mine = later & (events["rank"].to_numpy() == rank)
            if not mine.any():
                continue
            starts = events["start"].to_numpy(dtype=float)[mine]
            widths = events["end"].to_numpy(dtype=float)[mine] - starts
            hatch = ax.broken_barh(np.column_stack([starts, widths]), (rank - 0.4, 0.8),
                                   facecolors="none", edgecolors="#00000055", hatch="///",
                                   linewidths=0)  # fmt: skip
            hatch.set_gid(f"rank{rank}:later-chunks")
        ax.axvline(run.makespan, color="black", lw=1, ls=":")
        if ax.get_legend() is not None:
            ax.get_legend().remove()
        if ax is not axes[-1]:
            ax.set_xlabel("")
    scale, unit = time_unit(span)
    for ax in axes:
        ax.set_xlim(0.0, span)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda t, _pos: f"{t * scale:g}"))
    axes[-1].set_xlabel(f"time ({unit})")
    handles = [
        Patch(facecolor=SCHEDULE_COLOURS["F"], label="forward (F)"),
        Patch(facecolor=SCHEDULE_COLOURS["B"], label="backward (B)"),
    ]
    if any((run.events["stage"] >= run.schedule.num_ranks).any() for run in runs.values()):
        handles.append(
            Patch(facecolor="white", edgecolor="#00000088", hatch="///", label="chunk ≥ 1")
        )
    handles.append(Patch(facecolor=IDLE_COLOUR, label="idle"))
    axes[0].legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return fig


def crossing_chain(
    num_ranks: int,
    chunks: Iterable[int] = (1, 4),
    ranks_per_node: int | None = None,
    figsize: tuple[float, float] | None = None,
) -> Figure:
    """The forward path of one microbatch through the v·p stages, one panel per v: a dot per stage
    at its rank, a segment per hand-off, vermillion between nodes (gid ``hops:v=<v>:node``),
    blue between ranks of a node (``hops:v=<v>:rank``); the title counts both (pipe04)."""
    from course_lib.pipeline.interleaving import crossings_per_microbatch, stage_ranks

    values = list(chunks)
    if not values:
        raise ValueError("chunks must name at least one chunks_per_rank value")
    p = num_ranks
    g = p if ranks_per_node is None else ranks_per_node
    counts = [crossings_per_microbatch(p, v, g) for v in values]  # validates p, v, g
    width = max(values) * p
    if figsize is None:
        figsize = (10, (0.8 + 0.26 * p) * len(values))
    fig, axes = plt.subplots(len(values), 1, figsize=figsize, layout="constrained", sharex=True)
    axes = np.atleast_1d(axes)
    for ax, v, count in zip(axes, values, counts, strict=True):
        ranks = stage_ranks(p, v)
        stages = np.arange(v * p)
        for node in range(0, p // g, 2):  # shade every other node
            ax.axhspan(node * g - 0.5, (node + 1) * g - 0.5, color="#f0f0f0", zorder=0)
        if v * p > 1:
            between = ranks[:-1] // g != ranks[1:] // g
            for kind, mask, colour, lw in [
                ("rank", ~between, RANK_HOP_COLOUR, 1.4),
                ("node", between, NODE_HOP_COLOUR, 2.6),
            ]:
                segments = [[(k, ranks[k]), (k + 1, ranks[k + 1])] for k in np.flatnonzero(mask)]
                if segments:
                    from matplotlib.collections import LineCollection

                    lines = LineCollection(segments, colors=colour, linewidths=lw, zorder=2)
                    lines.set_gid(f"hops:v={v}:{kind}")
                    ax.add_collection(lines)
        ax.scatter(stages, ranks, s=22, color="black", zorder=3, gid=f"stages:v={v}")
        ax.set_ylim(p - 0.5, -0.5)
        ax.set_xlim(-0.5, width - 0.5)
        ax.set_yticks(range(p), [f"rank {r}" for r in range(p)])
        ax.tick_params(axis="y", length=0)
        nodes = p // g
        where = f" on {count_label(nodes, 'node')} of {g}" if nodes > 1 else ""
        wraps = (
            f" ({count.wrap_arounds} wrap from rank {p - 1} to rank 0)"
            if count.wrap_arounds
            else ""
        )
        ax.set_title(
            f"v = {v}{where}: {count.between_ranks} hand-offs between ranks, "
            f"{count.between_nodes} between nodes{wraps}",
            loc="left",
        )
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    axes[-1].set_xlabel("global stage k (forward order; the backward retraces it)")
    axes[0].legend(
        handles=[
            Line2D([], [], color=RANK_HOP_COLOUR, lw=1.4, label="between ranks of a node"),
            Line2D([], [], color=NODE_HOP_COLOUR, lw=2.6, label="between nodes"),
        ],
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        frameon=False,
    )
    return fig


def step_time_curves(
    num_ranks: int,
    num_microbatches: int,
    forward_time: float,
    backward_time: float,
    latencies: Iterable[float] = (0.0, 0.1e-3, 0.2e-3),
    chunks: Iterable[int] = (1, 2, 3, 4, 6, 8),
    ax: Axes | None = None,
) -> Axes:
    """Simulated step time against v, one line per per-hop latency δ (gid ``step:delta=<δ>``),
    the best v of each starred (gid ``best:delta=<δ>``) and the closed form
    T(v) = m(t_f + t_b) + (p - 1)(t_f + t_b)/v + 2(v·p - 1)δ as crosses where it holds (gid
    ``closed:delta=<δ>``; NaN where interleaved_makespan refuses) (pipe04)."""
    from course_lib.pipeline.interleaving import (
        best_chunks_per_rank,
        interleaved_makespan,
        step_times,
    )

    values = list(chunks)
    deltas = list(latencies)
    if not deltas:
        raise ValueError("latencies must name at least one latency (seconds)")
    if ax is None:
        _, ax = plt.subplots(figsize=(9, 4), layout="constrained")
    times = {
        d: step_times(num_ranks, num_microbatches, forward_time, backward_time, d, values)
        for d in deltas
    }
    span = max(max(t.values()) for t in times.values())
    scale, unit = time_unit(span)
    for (delta, series), colour in zip(times.items(), PIPELINE_LINE_COLOURS, strict=False):
        xs = list(series)
        ys = [series[v] * scale for v in xs]
        label = f"δ = {delta * 1e3:g} ms" if delta else "no latency"
        ax.plot(xs, ys, "o-", color=colour, lw=2, label=label, gid=f"step:delta={delta:g}")
        closed = []
        for v in xs:
            try:
                closed.append(
                    interleaved_makespan(
                        num_ranks, num_microbatches, v, forward_time, backward_time, delta
                    ) * scale
                )  # fmt: skip
            except ValueError:  # outside the closed form's range: the simulator only
                closed.append(np.nan)
        ax.plot(xs, closed, "+", color="black", ms=9, mew=1.4, gid=f"closed:delta={delta:g}")
        best = best_chunks_per_rank(
            num_ranks, num_microbatches, forward_time, backward_time, delta, values
        )
        ax.plot([best], [series[best] * scale], "*", ms=16, color=colour, mec="black",
                gid=f"best:delta={delta:g}")  # fmt: skip
    ax.plot([], [], "+", color="black", ms=9, mew=1.4, label="closed form, where it holds")
    ax.plot([], [], "*", ms=12, color="grey", mec="black", label="best v")
    ax.set_xticks(values)
    ax.set(xlabel="chunks per rank v", ylabel=f"step time ({unit})")
    ax.grid(alpha=0.3)
    ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title(
        f"p = {num_ranks}, m = {num_microbatches}, t_f = {forward_time * 1e3:g} ms, "
        f"t_b = {backward_time * 1e3:g} ms per rank: the bubble falls as 1/v, crossings grow as v",
        loc="left",
    )
    return ax
