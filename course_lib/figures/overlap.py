"""Communication/computation overlap figures (cost03): compute, communication and their intersection over time."""

from __future__ import annotations

from typing import TYPE_CHECKING

import matplotlib.pyplot as plt  # noqa: F401  (used by the plotting functions below)
import numpy as np
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter

if TYPE_CHECKING:
    from matplotlib.axes import Axes

from course_lib.figures.style import time_unit

# --- cost03: compute and communication lanes, overlapped time shaded -------------------------

OVERLAP_COLOURS: dict[str, str] = {
    "compute": "#56B4E9",
    "comm": "#E69F00",
    "exposed": "#D55E00",
    "overlap": "#009E73",
    "optimizer": "#8A99A8",
}
"""Okabe-Ito colours of :func:`overlap_timeline`: computation, overlapped communication,
exposed communication (no computation running), the overlapped-time shade, the optimizer."""


def overlap_timeline(
    timeline: object,
    comm: object = None,
    *,
    ax: Axes | None = None,
    title: str | None = None,
    origin: float = 0.0,
) -> Axes:
    """Compute and communication lanes; overlapped time shaded, exposed communication marked (cost03).

    ``timeline`` is a :class:`course_lib.overlap.BucketTimeline` (its optimizer step and step
    time are drawn too), or an (N, 2) array of computation intervals [start, end) in seconds,
    with ``comm`` the (M, 2) communication intervals. ``origin`` (s) is subtracted from every
    time (e.g. the start of a profiler step). The shade spans the time both kinds run (the
    numerator of HTA's overlap ratio); vermillion marks communication with no computation.
    """
    from course_lib.overlap import BucketTimeline, intersection, overlap_ratio, subtract, union

    optimizer = None
    step = None
    if isinstance(timeline, BucketTimeline):
        if comm is not None:
            raise ValueError("overlap_timeline: pass either a BucketTimeline or two interval sets")
        compute_iv, comm_iv = timeline.compute, timeline.comm
        optimizer, step = timeline.optimizer, timeline.step_time
    else:
        if comm is None:
            raise ValueError(
                "overlap_timeline: comm intervals are missing (pass compute and comm, or a "
                "BucketTimeline)"
            )
        compute_iv, comm_iv = timeline, comm
    t0 = float(origin)
    compute_u = union(compute_iv) - t0
    comm_u = union(comm_iv) - t0
    if len(comm_u) == 0 and len(compute_u) == 0:
        raise ValueError("overlap_timeline: there are no intervals to draw")
    both = intersection(compute_u, comm_u)
    exposed = subtract(comm_u, compute_u)
    ends = [u[-1, 1] for u in (compute_u, comm_u) if len(u)]
    starts = [u[0, 0] for u in (compute_u, comm_u) if len(u)]
    lo = min([0.0, *starts])
    hi = max([*ends, *([optimizer[1] - t0] if optimizer else [])])
    span = hi - lo if hi > lo else 1.0
    scale, unit = time_unit(span)

    if ax is None:
        _, ax = plt.subplots(figsize=(11, 2.6), layout="constrained")
    height = 0.6
    rows = {"compute": 0, "comm": 1}

    def bars(iv: np.ndarray, row: int, colour: str, gid: str, **kw: object) -> None:
        if len(iv):
            coll = ax.broken_barh(
                np.column_stack([iv[:, 0], iv[:, 1] - iv[:, 0]]),
                (row - height / 2, height),
                facecolors=colour,
                **kw,
            )
            coll.set_gid(gid)

    if len(both):
        shade = ax.broken_barh(
            np.column_stack([both[:, 0], both[:, 1] - both[:, 0]]),
            (-0.5, 2.0),
            facecolors=OVERLAP_COLOURS["overlap"],
            alpha=0.18,
            zorder=0,
        )
        shade.set_gid("overlapped")
    # Individual kernels/layers on the compute lane (white edges where they have room).
    raw = np.asarray(compute_iv, dtype=float).reshape(-1, 2) - t0
    fig = ax.get_figure(root=True)  # positions are fractions of the root figure (subfigures too)
    px_per_s = ax.get_position().width * fig.get_figwidth() * fig.dpi / span
    widths = raw[:, 1] - raw[:, 0]
    edge = 0.5 if len(widths) and np.median(widths) * px_per_s >= 6 else 0.0
    bars(
        raw,
        rows["compute"],
        OVERLAP_COLOURS["compute"],
        "compute",
        edgecolors="white",
        linewidths=edge,
        zorder=2,
    )
    raw_comm = np.asarray(comm_iv, dtype=float).reshape(-1, 2) - t0
    bars(
        raw_comm,
        rows["comm"],
        OVERLAP_COLOURS["comm"],
        "comm",
        edgecolors="white",
        linewidths=0.8,
        zorder=2,
    )
    bars(exposed, rows["comm"], OVERLAP_COLOURS["exposed"], "exposed", zorder=3)
    # The collectives' outlines on top, so back-to-back exposed collectives stay distinguishable.
    bars(raw_comm, rows["comm"], "none", "comm edges", edgecolors="white", linewidths=0.8, zorder=4)
    if optimizer is not None:
        a, b = optimizer[0] - t0, optimizer[1] - t0
        bars(
            np.array([[a, b]]), rows["compute"], OVERLAP_COLOURS["optimizer"], "optimizer", zorder=2
        )
    if step is not None:
        ax.axvline(step - t0, color="#222222", ls="--", lw=1.2, zorder=4)
        ax.annotate(
            f"step {(step - t0) * scale:.4g} {unit}",
            xy=(step - t0, 1.0),
            xycoords=("data", "axes fraction"),
            xytext=(0, 3),
            textcoords="offset points",
            ha="center",
            va="bottom",
            fontsize=9,
        )

    ax.set_xlim(lo, lo + 1.02 * span)
    ax.set_ylim(1.6, -0.6)
    ax.set_yticks([0, 1], ["computation", "communication"])
    ax.tick_params(axis="y", length=0)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda t, _pos: f"{t * scale:g}"))
    ax.set_xlabel(f"time ({unit})")
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    handles = [
        Patch(facecolor=OVERLAP_COLOURS["compute"], label="computation"),
        Patch(facecolor=OVERLAP_COLOURS["comm"], label="communication,\noverlapped"),
        Patch(facecolor=OVERLAP_COLOURS["exposed"], label="communication,\nnothing else runs"),
        Patch(facecolor=OVERLAP_COLOURS["overlap"], alpha=0.18, label="both run"),
    ]
    if optimizer is not None:
        handles.append(Patch(facecolor=OVERLAP_COLOURS["optimizer"], label="optimizer"))
    ax.legend(
        handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=8
    )
    if title is None:
        comm_time = float(np.sum(comm_u[:, 1] - comm_u[:, 0])) if len(comm_u) else 0.0
        ratio = overlap_ratio(comm_u, compute_u) if comm_time > 0 else float("nan")
        exp_time = float(np.sum(exposed[:, 1] - exposed[:, 0])) if len(exposed) else 0.0
        title = (
            f"overlap ratio {ratio:.1%} of {comm_time * scale:.3g} {unit} communication — "
            f"{exp_time * scale:.3g} {unit} with no computation running"
        )
    ax.set_title(title, loc="left", pad=14)
    return ax
