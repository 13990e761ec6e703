"""Clock figures (cost02): launch-to-kernel timelines, launch matching, offset bounds from message
exchanges and drift fits."""

from __future__ import annotations

from typing import TYPE_CHECKING

import matplotlib.pyplot as plt  # noqa: F401  (used by the plotting functions below)
import numpy as np
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes

    from course_lib.clocks import DriftFit

from course_lib.figures.style import axes_px, text_px

# --- cost02: launches joined to kernels; offset bounds from messages --------------------------

TRACE_COLOURS: dict[str, str] = {
    "user_annotation": "#CC79A7",
    "cpu_op": "#56B4E9",
    "launch": "#0072B2",
    "kernel": "#E69F00",
    "gpu_memcpy": "#F0E442",
    "gpu_memset": "#F0E442",
    "comm": "#009E73",
}
"""Okabe-Ito colours of a trace timeline: host annotations, ops, launches; device kernels, copies
and communication kernels (NCCL)."""


def _bars(ax: Axes, spans: np.ndarray, row: float, height: float, colour: str, gid: str) -> None:
    if len(spans):
        bars = ax.broken_barh(
            spans, (row - height / 2, height), facecolors=colour, edgecolors="#333333",
            linewidths=0.4, zorder=2,
        )  # fmt: skip
        bars.set_gid(gid)


def launch_timeline(
    df: pd.DataFrame,
    start: float,
    end: float,
    ax: Axes | None = None,
    title: str | None = None,
    max_links: int = 80,
) -> Axes:
    """Host lanes (annotations, ops, launches) over device streams, each launch joined to its GPU activity by correlation id (cost02).

    ``df`` is one process's trace as :func:`course_lib.trace.load_trace` returns it; events that
    overlap [start, end) (seconds, trace time) are drawn, on a time axis in ms from ``start``.
    A grey line goes from each launch's end to the start of the activity with the same
    correlation id (:func:`course_lib.trace.link_launches`, never matched by time); at most
    ``max_links`` of them, evenly chosen. ``ProfilerStep#k`` annotations shade the background.
    """
    from course_lib.trace import GPU_CATEGORIES, LAUNCH_CATEGORIES, link_launches

    if not (np.isfinite(start) and np.isfinite(end) and end > start):
        raise ValueError(f"launch_timeline: need finite start < end, got {start!r}, {end!r}")
    if max_links < 0:
        raise ValueError(f"launch_timeline: max_links must be >= 0, got {max_links}")
    ts = df["ts"].to_numpy(dtype=float)
    te = ts + np.nan_to_num(df["dur"].to_numpy(dtype=float))
    inside = (df["ph"] == "X").to_numpy(dtype=bool) & (te > start) & (ts < end)
    cat = df["cat"].astype(str).to_numpy()
    name = df["name"].astype(str).to_numpy()
    is_gpu = np.isin(cat, GPU_CATEGORIES) & inside
    streams = sorted({int(s) for s in df.loc[is_gpu, "tid"]})
    lanes = ["CPU annotations", "CPU ops", "CPU launches"] + [f"GPU stream {s}" for s in streams]
    height = 0.6
    scale = 1e3

    if ax is None:
        _, ax = plt.subplots(figsize=(11, 1.4 + 0.55 * len(lanes)), layout="constrained")
    step = (
        inside & (cat == "user_annotation") & np.char.startswith(name.astype(str), "ProfilerStep")
    )
    for i in np.flatnonzero(step):
        lo, hi = max(ts[i], start), min(te[i], end)
        ax.axvspan((lo - start) * scale, (hi - start) * scale, color="#F3F3F3", zorder=0, lw=0)
        ax.text(
            (lo - start) * scale, 1.0, f" {name[i]}", transform=ax.get_xaxis_transform(),
            ha="left", va="bottom", fontsize=8.5, color="#555555",
        )  # fmt: skip

    def spans(mask: np.ndarray) -> np.ndarray:
        return np.column_stack([(ts[mask] - start) * scale, (te[mask] - ts[mask]) * scale])

    annot = inside & (cat == "user_annotation") & ~step
    _bars(ax, spans(annot), 0, height, TRACE_COLOURS["user_annotation"], "trace:annotation")
    _bars(ax, spans(inside & (cat == "cpu_op")), 1, height, TRACE_COLOURS["cpu_op"], "trace:cpu_op")
    launch = inside & np.isin(cat, LAUNCH_CATEGORIES)
    _bars(ax, spans(launch), 2, height, TRACE_COLOURS["launch"], "trace:launch")
    tid = df["tid"].to_numpy()
    for k, s in enumerate(streams):
        on = is_gpu & (tid == s)
        comm = on & np.char.startswith(name.astype(str), "nccl")
        for kind in ("kernel", "gpu_memcpy", "gpu_memset"):
            mask = on & (cat == kind) & ~comm
            _bars(ax, spans(mask), 3 + k, height, TRACE_COLOURS[kind], f"trace:{kind}:{s}")
        _bars(ax, spans(comm), 3 + k, height, TRACE_COLOURS["comm"], f"trace:comm:{s}")

    # Names inside host bars where they fit. An annotation that does not (even one cut by the
    # window's left edge) is named below its bar, on the first of two text lines left free.
    px_per_ms = axes_px(ax) / ((end - start) * scale)
    taken = [-np.inf, -np.inf]  # right end (ms) of the last name on each line below the lane
    host_lanes = ((annot, 0), (inside & (cat == "cpu_op"), 1), (launch, 2))
    for mask, row in host_lanes:
        for i in sorted(np.flatnonzero(mask), key=lambda k: ts[k]):
            lo, hi = max(ts[i], start), min(te[i], end)
            width_px = text_px(name[i], 8.0, False, ax.figure.dpi) + 6
            colour = "white" if row == 2 else "#1F2A36"
            if width_px <= (hi - lo) * scale * px_per_ms:
                ax.text(
                    ((lo + hi) / 2 - start) * scale, row, name[i], ha="center", va="center",
                    fontsize=8.0, color=colour, zorder=4, clip_on=True,
                )  # fmt: skip
                continue
            line = next((k for k in (0, 1) if (lo - start) * scale >= taken[k]), None)
            if row == 0 and line is not None:
                ax.annotate(
                    name[i], xy=((lo - start) * scale, row + height / 2),
                    xytext=(1, -1 - 8.5 * line), textcoords="offset points", ha="left",
                    va="top", fontsize=7.5, color="#1F2A36", zorder=4, annotation_clip=True,
                )  # fmt: skip
                taken[line] = (
                    (lo - start) * scale
                    + text_px(name[i], 7.5, False, ax.figure.dpi) / px_per_ms
                    + 4 / px_per_ms
                )

    links = link_launches(df)
    links = links[
        links["launch_end"].notna()
        & (links["launch_end"] >= start)
        & (links["launch_end"] < end)
        & (links["kernel_start"] >= start)
        & (links["kernel_start"] < end)
    ]
    if len(links) > max_links:
        keep = np.unique(np.linspace(0, len(links) - 1, max_links).round().astype(int))
        links = links.iloc[keep]
    row = {s: 3 + k for k, s in enumerate(streams)}
    segments = [
        [((le - start) * scale, 2 + height / 2), ((ks - start) * scale, row[int(s)] - height / 2)]
        for le, ks, s in zip(
            links["launch_end"], links["kernel_start"], links["stream"], strict=True
        )
    ]
    from matplotlib.collections import LineCollection

    ax.add_collection(
        LineCollection(
            segments, colors="#7F7F7F", linewidths=0.7, alpha=0.7, zorder=1.5, gid="trace:links"
        )
    )

    ax.set_xlim(0.0, (end - start) * scale)
    ax.set_ylim(len(lanes) - 0.5, -0.5)
    ax.set_yticks(range(len(lanes)), lanes)
    ax.tick_params(axis="y", length=0)
    ax.set_xlabel("time (ms)")
    ax.grid(axis="x", color="#E6E6E6", lw=0.8)
    ax.set_axisbelow(True)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    drawn = {str(c.get_gid()).split(":")[1] for c in ax.collections if c.get_gid()}
    keys = [
        ("annotation", "user_annotation", "annotation"),
        ("cpu_op", "cpu_op", "cpu_op"),
        ("launch", "launch", "launch (runtime call)"),
        ("kernel", "kernel", "kernel"),
        ("gpu_memcpy", "gpu_memcpy", "memcpy"),
        ("gpu_memset", "gpu_memset", "memset"),
        ("comm", "comm", "NCCL kernel"),
    ]
    handles = [Patch(fc=TRACE_COLOURS[c], label=label) for k, c, label in keys if k in drawn]
    if segments:
        handles.append(Line2D([], [], color="#7F7F7F", lw=1.0, label="same correlation id"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    if title is not None:
        ax.set_title(title, loc="left", pad=16)
    return ax


def offset_bounds_plot(
    a_to_b: np.ndarray,
    b_to_a: np.ndarray,
    ax: Axes | None = None,
    true_offset: float | None = None,
    title: str | None = None,
    window: float | None = None,
) -> Axes:
    """Each message's bound on θ (t_A = t_B + θ) against time, and the interval they leave (cost02).

    A -> B rows (S_A, R_B) give lower bounds S_A − R_B (▲ at R_B); B -> A rows (S_B, R_A) give upper
    bounds R_A − S_B (▼ at S_B); the shaded band is :func:`course_lib.clocks.offset_bounds`.
    The y axis is in µs and shows ``window`` µs on either side of the band (default: 15 times its
    width, at least 20 µs); bounds beyond it are drawn at the edge as hollow markers.
    ``true_offset`` (s), if known, is drawn dashed.
    """
    from course_lib.clocks import offset_bounds

    ab = np.asarray(a_to_b, dtype=float).reshape(-1, 2)
    ba = np.asarray(b_to_a, dtype=float).reshape(-1, 2)
    iv = offset_bounds(ab, ba)
    if not np.isfinite(iv.width):
        raise ValueError("offset_bounds_plot needs messages in both directions")
    us = 1e6
    lows, highs = (ab[:, 0] - ab[:, 1]) * us, (ba[:, 1] - ba[:, 0]) * us
    lo, hi = iv.lower * us, iv.upper * us
    half = window if window is not None else max(15.0 * (hi - lo), 20.0)
    y0, y1 = lo - half, hi + half

    if ax is None:
        _, ax = plt.subplots(figsize=(10, 4), layout="constrained")
    ax.axhspan(lo, hi, color="#BFBFBF", alpha=0.6, lw=0, zorder=1, gid="bounds:interval")
    for x, y, marker, colour, gid in (
        (ab[:, 1], lows, "^", "#0072B2", "bounds:lower"),
        (ba[:, 0], highs, "v", "#E69F00", "bounds:upper"),
    ):
        shown = (y >= y0) & (y <= y1)
        ax.plot(x[shown], y[shown], marker, color=colour, ms=7, ls="none", zorder=3, gid=gid)
        edge = np.clip(y[~shown], y0, y1)
        ax.plot(
            x[~shown], edge, marker, mfc="none", mec=colour, ms=7, ls="none", zorder=3,
            gid=f"{gid}:beyond", clip_on=False,
        )  # fmt: skip
    if true_offset is not None:
        ax.axhline(true_offset * us, color="#222222", ls="--", lw=1.2, zorder=2, gid="bounds:true")
    ax.set_ylim(y0, y1)
    ax.set_xlabel("time on clock B (s)")
    ax.set_ylabel("offset θ = t_A − t_B (µs)")
    ax.grid(color="#EBEBEB", lw=0.8)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    handles = [
        Line2D([], [], marker="^", color="#0072B2", ls="none", label="A→B: θ > S_A − R_B"),
        Line2D([], [], marker="v", color="#E69F00", ls="none", label="B→A: θ < R_A − S_B"),
        Line2D([], [], marker="^", mfc="none", mec="#777777", ls="none", label="bound beyond axis"),
        Patch(fc="#BFBFBF", label=f"interval, width {hi - lo:.3g} µs"),
    ]
    if true_offset is not None:
        handles.append(Line2D([], [], color="#222222", ls="--", label="true θ"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    if title is None:
        title = f"{lo:.1f} µs < θ < {hi:.1f} µs from {len(ab)} + {len(ba)} messages"
    ax.set_title(title, loc="left")
    return ax


def launch_match_plot(
    kernel_start: np.ndarray,
    by_correlation: np.ndarray,
    by_time: np.ndarray,
    origin: float = 0.0,
    ax: Axes | None = None,
    title: str | None = None,
) -> Axes:
    """For each GPU event, the end of the launch it is matched to, by correlation id (●) and by time (×) (cost02).

    All three arrays are in seconds on one clock, one entry per GPU event: its start, the end of
    the launch with the same correlation id, and the end of the launch a time-proximity join
    picked (e.g. the last call that ended before the event started). Both axes are in ms from
    ``origin``. A match is right where the cross sits on the dot.
    """
    start = np.asarray(kernel_start, dtype=float)
    right = np.asarray(by_correlation, dtype=float)
    guess = np.asarray(by_time, dtype=float)
    if not (start.shape == right.shape == guess.shape and start.ndim == 1):
        raise ValueError(
            "launch_match_plot: kernel_start, by_correlation and by_time must be 1-D of equal "
            f"length, got {start.shape}, {right.shape}, {guess.shape}"
        )
    if ax is None:
        _, ax = plt.subplots(figsize=(10, 3.8), layout="constrained")
    x = (start - origin) * 1e3
    ax.plot(x, (right - origin) * 1e3, "o", color="#0072B2", ms=5, gid="match:correlation",
            label="by correlation id: the launch that enqueued it")  # fmt: skip
    ax.plot(x, (guess - origin) * 1e3, "x", color="#D55E00", ms=6, gid="match:time",
            label="by time: the last call that ended before it started")  # fmt: skip
    ax.set_xlabel("GPU event start (ms)")
    ax.set_ylabel("end of the matched launch (ms)")
    ax.legend(loc="lower right", frameon=False)
    ax.grid(color="#EBEBEB")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    if title is not None:
        ax.set_title(title, loc="left")
    return ax


def drift_fit_plot(
    t_ref: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    fit: DriftFit,
    axes: tuple[Axes, Axes] | None = None,
    zoom_us: float = 25.0,
) -> tuple[Axes, Axes]:
    """Per-window offset intervals and the drift line fitted through them, in two panels (cost02).

    ``t_ref`` (s): each window's time on the reference clock B; ``lower``/``upper`` (s): its offset
    interval (t_A = t_B + θ); ``fit``: :func:`course_lib.clocks.fit_drift` of the midpoints. Left:
    θ in ms, the fitted θ(t) and, dashed, the first window's offset held constant. Right: each
    interval minus the fitted θ(t), in µs (±``zoom_us``): a window whose bar crosses zero holds
    the line.
    """
    t = np.asarray(t_ref, dtype=float)
    lo, hi = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
    if not (t.shape == lo.shape == hi.shape and t.ndim == 1 and len(t) >= 1):
        raise ValueError(
            f"drift_fit_plot: t_ref, lower, upper must be 1-D of equal length, got {t.shape}, "
            f"{lo.shape}, {hi.shape}"
        )
    if np.any(lo > hi):
        raise ValueError("drift_fit_plot: every window needs lower <= upper")
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(11, 3.9), layout="constrained")
    left, right = axes
    mid = 0.5 * (lo + hi)
    span = np.array([min(0.0, t.min()), t.max()])
    green, dark, orange = "#009E73", "#222222", "#D55E00"
    left.plot(t, mid * 1e3, "o", color=green, gid="drift:windows",
              label=f"each window's interval (≈{np.median(hi - lo) * 1e6:.0f} µs: a dot)")  # fmt: skip
    left.plot(span, (fit.to_local(span) - span) * 1e3, color=dark, lw=1.2, gid="drift:fit",
              label=f"fitted θ(t): {fit.drift_ppm:.2f} ppm")  # fmt: skip
    left.plot(span, [mid[0] * 1e3] * 2, "--", color=orange, gid="drift:constant",
              label="first window's offset, held constant")  # fmt: skip
    left.set(xlabel="time on clock B (s)", ylabel="offset θ = t_A − t_B (ms)")
    left.legend(loc="best", frameon=False, fontsize=9)
    line = fit.to_local(t) - t
    right.vlines(t, (lo - line) * 1e6, (hi - line) * 1e6, color=green, lw=6, gid="drift:residuals",
                 label="each window's interval − fitted θ(t)")  # fmt: skip
    right.axhline(0.0, color=dark, lw=1.2, label="fitted θ(t)")
    right.set_ylim(-zoom_us, zoom_us)
    right.set(xlabel="time on clock B (s)", ylabel="offset − fitted θ(t) (µs)")
    right.legend(loc="lower right", frameon=False, fontsize=9)
    inside = int(np.sum((lo <= line) & (line <= hi)))
    right.set_title(f"Zoomed: {inside} of {len(t)} intervals hold the line", loc="left")
    for axis in (left, right):
        axis.grid(color="#EBEBEB")
        for side in ("top", "right"):
            axis.spines[side].set_visible(False)
    return left, right
