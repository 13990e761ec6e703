"""pipe10's explorer: a generator's schedule, one mutation of one entry, and what the verifier
reports, drawn on the program grid."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import ipywidgets as widgets

from course_lib.explorers.base import Explorer, metrics_table

NUM_RANKS, NUM_MICROBATCHES = 4, 6
"""The explorer's pipeline: 4 ranks, 6 microbatches (interleaved: 2 stages per rank)."""
GENERATORS: tuple[str, ...] = ("GPipe", "1F1B", "interleaved 1F1B (2 chunks)", "ZB-H1")
MUTATIONS: tuple[str, ...] = (
    "none",
    "drop",
    "duplicate",
    "swap with next",
    "microbatch out of range",
    "unknown kind R",
)
"""What happens to the chosen entry: removed, listed twice, swapped with the entry after it, its
microbatch set to num_microbatches, its kind set to "R" (a recompute the verifier does not know)."""
STASHES: tuple[str, ...] = ("keyed", "fifo", "lifo")


@functools.lru_cache(maxsize=8)
def generator_lists(name: str) -> tuple[tuple[tuple[str, int, int], ...], ...]:
    """The named generator's schedule at the explorer's size as per-rank (kind, stage,
    microbatch) tuples (pipe10)."""
    from course_lib.pipeline import gpipe, interleaved_1f1b, one_f_one_b, zero_bubble_h1

    p, m = NUM_RANKS, NUM_MICROBATCHES
    schedule = {
        "GPipe": lambda: gpipe(p, m),
        "1F1B": lambda: one_f_one_b(p, m),
        "interleaved 1F1B (2 chunks)": lambda: interleaved_1f1b(p, m, 2),
        "ZB-H1": lambda: zero_bubble_h1(p, m),
    }[name]()
    return tuple(tuple((a.kind, a.stage, a.microbatch) for a in r) for r in schedule.actions)


def mutate(
    lists: tuple[tuple[tuple[str, int, int], ...], ...],
    mutation: str,
    rank: int,
    position: int,
    num_microbatches: int,
) -> list[list[tuple[str, int, int]]]:
    """Per-rank lists with entry ``position`` of ``rank`` mutated as :data:`MUTATIONS` says
    ("swap with next" at a rank's last entry does nothing) (pipe10)."""
    if mutation not in MUTATIONS:
        raise ValueError(f"mutation must be one of {MUTATIONS}, got {mutation!r}")
    out = [list(r) for r in lists]
    if not 0 <= rank < len(out) or not 0 <= position < len(out[rank]):
        raise ValueError(f"rank {rank} has no position {position}")
    row = out[rank]
    kind, stage, microbatch = row[position]
    if mutation == "drop":
        del row[position]
    elif mutation == "duplicate":
        row.insert(position + 1, row[position])
    elif mutation == "swap with next" and position + 1 < len(row):
        row[position], row[position + 1] = row[position + 1], row[position]
    elif mutation == "microbatch out of range":
        row[position] = (kind, stage, num_microbatches)
    elif mutation == "unknown kind R":
        row[position] = ("R", stage, microbatch)
    return out


class VerificationExplorer(Explorer):
    """Program grid of a mutated schedule with the verifier's findings outlined (pipe10).

    ``verify`` runs with ``numeric=True`` (the chosen executor stash) and, when the bound is
    above 0, ``max_in_flight`` on every stage. ``last_metrics`` holds the violations and the
    number per rule. One fixed-layout figure on an Agg canvas, redrawn per change (< 100 ms;
    benchmarks/bench_verification_explorer.py).
    """

    def __init__(self, controls: Mapping[str, widgets.ValueWidget]) -> None:
        self.last_metrics: dict[str, Any] = {}
        self._adjusting = False
        super().__init__(controls, self._draw_frame, figsize=(10.5, 3.6), dpi=72)

    MAX_BOXES = 32
    """Most entries a rank lists at the explorer's size (interleaved: 2 · 2 · 6 = 24, + 1)."""

    def _build(self) -> None:
        """One fixed frame: the axes, legend, a PolyCollection of boxes and a pool of labels,
        updated in place per change (no axes clear, no new artists)."""
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.collections import PolyCollection
        from matplotlib.figure import Figure

        from course_lib.figures.verification import VIOLATION_COLOUR, grid_frame, grid_legend

        fig = self.figure = Figure(figsize=self.figure.get_size_inches(), dpi=self.figure.dpi)
        self._canvas = FigureCanvasAgg(fig)
        ax = fig.add_axes((0.08, 0.36, 0.78, 0.54))
        self.axes = [ax]
        grid_frame(ax, NUM_RANKS, self.MAX_BOXES)
        grid_legend(ax, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        self._boxes = PolyCollection([], linewidths=0.5)
        ax.add_collection(self._boxes)
        self._labels = [
            ax.text(0, 0, "", ha="center", va="center", fontsize=7.5, visible=False)
            for _ in range(NUM_RANKS * self.MAX_BOXES)
        ]
        (self._marker,) = ax.plot([0], [0], marker="v", color="black", markersize=7)
        self._title = ax.text(0.0, 1.06, "", transform=ax.transAxes, fontsize=10)
        self._below = ax.text(
            0.0, -0.3, "", transform=ax.transAxes, va="top", fontsize=8.5,
            color=VIOLATION_COLOUR, family="monospace",
        )  # fmt: skip
        self._backgrounds: dict[int, Any] = {}

    def _pooled(self) -> list[Any]:
        return [self._boxes, *self._labels, self._marker, self._title, self._below]

    def _background(self, width: int) -> Any:
        """The static frame (axes, ticks, legend) for lists ``width`` entries long, cached as
        pixels; limits and ticks are set on every call since the pooled artists draw in them."""
        ax = self.axes[0]
        ax.set_xlim(-0.6, width - 0.4)
        ax.set_xticks(range(0, width, 2))
        if width not in self._backgrounds:
            visible = [(a, a.get_visible()) for a in self._pooled()]
            for artist, _ in visible:
                artist.set_visible(False)
            self._canvas.draw()
            self._backgrounds[width] = self._canvas.copy_from_bbox(self.figure.bbox)
            for artist, was in visible:
                artist.set_visible(was)
        return self._backgrounds[width]

    def _on_change(self, change: Mapping[str, Any]) -> None:
        """Keep the position slider within the chosen rank's list, then redraw once."""
        if self._adjusting:
            return
        position = self.controls["position"]
        length = len(generator_lists(self.controls["schedule"].value)[self.controls["rank"].value])
        self._adjusting = True
        try:
            position.max = length - 1
        finally:
            self._adjusting = False
        self.update()

    def _frame(self) -> str:
        return self._draw_frame(self.axes, **self.values)

    def _draw_frame(
        self,
        axes: Any,
        *,
        schedule: str,
        mutation: str,
        rank: int,
        position: int,
        stash: str,
        max_in_flight: int,
    ) -> str:
        from course_lib.figures.verification import box_geometry, grid_boxes, off_grid
        from course_lib.pipeline.verify import RULES, verify

        base = generator_lists(schedule)
        position = min(position, len(base[rank]) - 1)
        lists = mutate(base, mutation, rank, position, NUM_MICROBATCHES)
        num_stages = 1 + max(entry[1] for rank_list in base for entry in rank_list)
        found = verify(
            lists,
            num_stages,
            NUM_MICROBATCHES,
            split_backward=schedule == "ZB-H1",
            max_in_flight=max_in_flight or None,
            numeric=True,
            stash=stash,
        )
        counts = {rule: sum(1 for v in found if v.rule == rule) for rule in RULES}
        self.last_metrics = {"violations": found, "counts": counts}
        boxes = grid_boxes(lists, found, show_stage=num_stages > NUM_RANKS)
        verts, faces, edges, widths = box_geometry(boxes)
        self._boxes.set_verts(verts)
        self._boxes.set(facecolor=faces, edgecolor=edges, linewidth=widths)
        for label, box in zip(self._labels, boxes, strict=False):
            label.set(x=box.position, y=box.rank, text=box.label, visible=True)
        for label in self._labels[len(boxes) :]:
            label.set_visible(False)
        self._canvas.restore_region(self._background(max(len(r) for r in lists)))
        self._marker.set_data([position], [rank - 0.52])
        self._title.set_text(
            f"{schedule}, {mutation} at rank {rank}, position {position}: "
            + (f"{len(found)} violation{'s' * (len(found) != 1)}" if found else "verifies clean")
        )
        self._below.set_text(off_grid(found, limit=3))
        self._title.set_visible(True)
        self._below.set_visible(True)
        self._marker.set_visible(True)
        self._boxes.set_visible(True)
        draw = self.figure.draw_artist
        for artist in (self._boxes, *self._labels[: len(boxes)], self._marker, self._title):
            draw(artist)
        draw(self._below)
        rows = [(v.rule, "" if v.rank is None else str(v.rank),
                 "" if v.position is None else str(v.position), v.message) for v in found[:8]]  # fmt: skip
        if len(found) > 8:
            rows.append(("...", "", "", f"{len(found) - 8} more"))
        summary = ", ".join(f"{rule} {n}" for rule, n in counts.items() if n) or "none"
        head = (
            f"<b>verify</b>(…, numeric=True, stash='{stash}'"
            + (f", max_in_flight={max_in_flight}" if max_in_flight else "")
            + f") · violations by rule: {summary}"
        )
        return head + (metrics_table(rows, ("rule", "rank", "position", "message")) if rows else "")


def verification_explorer(
    schedule: str = "1F1B",
    mutation: str = "drop",
    rank: int = 1,
    position: int = 3,
    stash: str = "keyed",
    max_in_flight: int = 0,
) -> VerificationExplorer:
    """Explorer: a generator (GPipe, 1F1B, interleaved 1F1B, ZB-H1 on 4 ranks, 6 microbatches),
    a mutation of one entry (rank, position), the executor's stash policy and a memory bound
    (0: none) -> the verifier's violations on the program grid (pipe10)."""
    if schedule not in GENERATORS:
        raise ValueError(f"schedule must be one of {GENERATORS}, got {schedule!r}")
    if mutation not in MUTATIONS:
        raise ValueError(f"mutation must be one of {MUTATIONS}, got {mutation!r}")
    if stash not in STASHES:
        raise ValueError(f"stash must be one of {STASHES}, got {stash!r}")
    if not isinstance(rank, int) or not 0 <= rank < NUM_RANKS:
        raise ValueError(f"rank must be an int in [0, {NUM_RANKS - 1}], got {rank!r}")
    length = len(generator_lists(schedule)[rank])
    if not isinstance(position, int) or not 0 <= position < length:
        raise ValueError(f"position must be an int in [0, {length - 1}] for rank {rank}")
    if not isinstance(max_in_flight, int) or not 0 <= max_in_flight <= NUM_MICROBATCHES:
        raise ValueError(f"max_in_flight must be an int in [0, {NUM_MICROBATCHES}] (0: no bound)")
    wide = {"description_width": "initial"}
    controls = {
        "schedule": widgets.Dropdown(options=GENERATORS, value=schedule, description="schedule"),
        "mutation": widgets.Dropdown(options=MUTATIONS, value=mutation, description="mutation"),
        "rank": widgets.IntSlider(value=rank, min=0, max=NUM_RANKS - 1, description="rank"),
        "position": widgets.IntSlider(value=position, min=0, max=length - 1, description="position"),
        "stash": widgets.Dropdown(options=STASHES, value=stash, description="executor stash", style=wide),
        "max_in_flight": widgets.IntSlider(
            value=max_in_flight, min=0, max=NUM_MICROBATCHES, description="bound (0: none)", style=wide
        ),
    }  # fmt: skip
    return VerificationExplorer(controls)
