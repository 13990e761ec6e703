"""pipe07's explorer: a weight-version policy, the pipeline depth and the batch size -> the
version each action runs on, the versions a microbatch sees on each stage, staleness and the
versions each stage holds."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import ipywidgets as widgets
import numpy as np

from course_lib.explorers.base import Explorer, metrics_table

POLICY_LABELS: dict[str, str] = {
    "flushed 1F1B (PipeDream-Flush, GPipe)": "flushed",
    "PipeDream: weight stashing": "stashing",
    "PipeDream-2BW: double-buffered": "2bw",
}
"""Drop-down label -> policy of course_lib.pipeline.versions.weight_versions."""
NUM_BATCHES = 3
"""Batches (flushed: steps) of m microbatches in the stream the explorer draws."""
MAX_STAGES = 8
MAX_BATCH = 8


@functools.lru_cache(maxsize=128)
def stream(policy: str, num_stages: int, microbatches_per_batch: int) -> dict[str, Any]:
    """The explorer's model for one setting: boxes to draw, versions used per (stage, microbatch)
    (an array), staleness, versions held per stage and the batch size actually used (pipe07).

    ``flushed``: NUM_BATCHES flushed 1F1B steps of m microbatches (figures.versions.flushed_steps,
    version = step). ``stashing`` and ``2bw``: one 1F1B stream of NUM_BATCHES·m microbatches
    without a flush, replayed by weight_versions; 2BW needs m >= p, so m is raised to p.
    """
    from course_lib.figures.versions import flushed_steps, version_boxes
    from course_lib.pipeline import one_f_one_b, simulate
    from course_lib.pipeline.versions import weight_versions

    p, m = num_stages, microbatches_per_batch
    if policy == "2bw":
        m = max(m, p)
    total = NUM_BATCHES * m
    if policy == "flushed":
        boxes = flushed_steps(p, m, NUM_BATCHES)
        used = np.broadcast_to(np.arange(total)[None, :] // m, (p, total))
        stale = np.zeros((p, total), dtype=np.int64)
        held = np.ones(p, dtype=np.int64)
    else:
        timeline = simulate(one_f_one_b(p, total), 1.0, 2.0)
        versions = weight_versions(timeline, policy, m if policy == "2bw" else None)
        boxes = version_boxes(timeline, versions)
        used, stale, held = versions.forward, versions.staleness, versions.held
    return {"boxes": boxes, "used": used, "stale": stale, "held": held, "m": m}


class VersionsExplorer(Explorer):
    """Policy, stages p, microbatches per batch m, highlighted microbatch j -> a stage × time grid
    coloured by weight version with j outlined, and per stage: j's version, its staleness and the
    versions held (pipe07). ``last_metrics`` holds those three lists and the m used.

    Built for speed (< 100 ms per change; benchmarks/bench_versions_explorer.py): the grid of a
    setting (policy, p, m) is drawn once on an Agg canvas and kept as a background; moving j
    restores it (backgrounds cached per setting, with their axis limits) and draws only j's outlines.
    """

    RECT = (0.09, 0.16, 0.89, 0.74)

    def __init__(self, controls: Mapping[str, widgets.ValueWidget]) -> None:
        self.last_metrics: dict[str, Any] = {}
        self._backgrounds: dict[tuple, tuple] = {}
        super().__init__(controls, self._draw_frame, figsize=(9.5, 3.6), dpi=72)

    def _build(self) -> None:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        fig = self.figure = Figure(figsize=(9.5, 3.6), dpi=self.figure.dpi)
        self._canvas = FigureCanvasAgg(fig)
        self.axes = np.array([fig.add_axes(self.RECT)], dtype=object)

    def _frame(self) -> str:
        return self._draw_frame(self.axes, **self.values)

    def _draw_frame(
        self,
        axes: Any,
        *,
        policy: str,
        num_stages: int,
        microbatches_per_batch: int,
        microbatch: int,
    ) -> str:

        from course_lib.figures.versions import HIGHLIGHT_COLOUR, version_grid

        ax = axes[0]
        name = POLICY_LABELS.get(policy, policy)
        p, m_asked = int(num_stages), int(microbatches_per_batch)
        model = stream(name, p, m_asked)
        m, total = model["m"], NUM_BATCHES * model["m"]
        j = min(int(microbatch), total - 1)
        boxes = model["boxes"]
        key = (name, p, m_asked)
        if key not in self._backgrounds:
            ax.clear()
            version_grid(boxes, ax=ax, labels=len(boxes) <= 200)
            ax.set_title(
                f"{policy}: p = {p}, {total} microbatches, m = {m} per batch",
                loc="left",
                fontsize=10,
            )
            self._canvas.draw()
            limits = (ax.get_xlim(), ax.get_ylim())
            self._backgrounds[key] = (self._canvas.copy_from_bbox(self.figure.bbox), limits)
        background, (xlim, ylim) = self._backgrounds[key]
        ax.set_xlim(xlim)  # the outlines below are placed in this setting's data coordinates
        ax.set_ylim(ylim)
        self._canvas.restore_region(background)
        mine = boxes[boxes["microbatch"] == j]
        for stage, group in mine.groupby("stage"):
            outline = ax.broken_barh(
                np.column_stack([group["start"], group["end"] - group["start"]]),
                (stage - 0.4, 0.8),
                facecolors="none",
                edgecolors=HIGHLIGHT_COLOUR,
                linewidths=2.2,
                animated=True,
            )
            ax.draw_artist(outline)
            outline.remove()
        used = [int(v) for v in model["used"][:, j]]
        stale = [int(v) for v in model["stale"][:, j]]
        held = [int(v) for v in model["held"]]
        self.last_metrics = {
            "used": used,
            "staleness": stale,
            "held": held,
            "m": m,
            "microbatch": j,
        }
        spread = max(used) - min(used)
        note = ""
        if name == "2bw" and m != m_asked:
            note = f"<i>2BW is defined for m ≥ p: m raised to {m}.</i><br>"
        if int(microbatch) != j:
            note += f"<i>the stream has {total} microbatches: showing microbatch {j}.</i><br>"
        rows = [
            (f"microbatch {j}'s version on stage 0..{p - 1} (outlined)", ", ".join(map(str, used))),
            ("its staleness (updates since) per stage", ", ".join(map(str, stale))),
            ("versions held per stage (peak)", ", ".join(map(str, held))),
            ("one consistent model for it?", "yes" if spread == 0 else f"no: spread {spread}"),
            ("stream", f"{total} microbatches: {NUM_BATCHES} batches of m = {m}"),
        ]
        return note + metrics_table(rows, ("", ""))


def versions_explorer(
    policy: str = "stashing",
    num_stages: int = 4,
    microbatches_per_batch: int = 4,
    microbatch: int = 5,
) -> VersionsExplorer:
    """Explorer: policy, stages p (2-8), microbatches per batch m (2-8; flushed: per step),
    highlighted microbatch -> weight versions on a 1F1B grid, staleness, versions held (pipe07)."""
    from course_lib.pipeline._validate import check_int
    from course_lib.pipeline.versions import check_policy

    check_policy(policy)
    p = check_int("num_stages", num_stages)
    m = check_int("microbatches_per_batch", microbatches_per_batch)
    j = check_int("microbatch", microbatch, minimum=0)
    if not 2 <= p <= MAX_STAGES:
        raise ValueError(f"num_stages must be in 2..{MAX_STAGES}, got {p}")
    if not 2 <= m <= MAX_BATCH:
        raise ValueError(f"microbatches_per_batch must be in 2..{MAX_BATCH}, got {m}")
    label = next(k for k, v in POLICY_LABELS.items() if v == policy)
    wide = {"description_width": "initial"}
    controls = {
        "policy": widgets.Dropdown(options=list(POLICY_LABELS), value=label, description="policy"),
        "num_stages": widgets.IntSlider(value=p, min=2, max=MAX_STAGES, description="stages p"),
        "microbatches_per_batch": widgets.IntSlider(
            value=m, min=2, max=MAX_BATCH, description="per batch m", style=wide
        ),
        "microbatch": widgets.IntSlider(
            value=j, min=0, max=NUM_BATCHES * MAX_STAGES - 1, description="microbatch j"
        ),
    }
    return VersionsExplorer(controls)
