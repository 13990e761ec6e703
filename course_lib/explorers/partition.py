"""pipe01's explorer: partition the lesson's GPT-like model into stages and watch stage times,
stage memory under 1F1B and the simulated step."""

from __future__ import annotations

import functools
import math
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.figure import Figure

from course_lib.explorers.base import Explorer, metrics_table

PARTITIONS = ("equal blocks", "min-max", "min-max within limit")
"""The explorer's partition choices: even_blocks, min_max_partition, and with memory_limit."""
MAX_STAGES = 8
GIB = 2.0**30


@functools.lru_cache(maxsize=1)
def _spec() -> Any:
    from course_lib.pipeline.partition import gpt_spec

    return gpt_spec()


class PartitionExplorer(Explorer):
    """Stages p, microbatches m, link bandwidth and a memory limit -> the chosen partition's stage
    times (forward, backward, transfer; the equal split's as ticks) and stage memory (model
    state, stashed activations × in-flight, the limit), with the simulated 1F1B step (pipe01).

    For speed the figure has fixed axes on an Agg canvas and persistent bars (MAX_STAGES per
    segment) whose geometry a change updates (blitting). The legends and frame are drawn once;
    the axes' ticks and grid once per axis layout — p, the y limits rounded up (:func:`_round_up`,
    so that most changes keep them) and the in-flight tick labels — whose background is kept
    for the last AXES_CACHE layouts; a change draws only the bars, lines and texts over one. The
    numbers of a setting are cached too (:func:`_setting`). ``last_metrics`` holds the numbers of
    the table: boundaries, stage_times, stage_memory, bottleneck, equal_bottleneck,
    simulated_step, feasible (False when no partition meets the limit; the unconstrained min-max
    is drawn then) and smallest_limit (bytes).
    """

    FIGSIZE = (10.0, 3.6)
    DPI = 72
    AXES_CACHE = 24

    def __init__(self, controls: Mapping[str, widgets.ValueWidget]) -> None:
        self.last_metrics: dict[str, Any] = {}
        self._canvas: Any = None
        self._layouts: OrderedDict[tuple, Any] = OrderedDict()  # axis layout -> its background
        self._layout: tuple | None = None  # the layout the axes are set to
        super().__init__(controls, self._draw_frame, figsize=self.FIGSIZE, dpi=self.DPI)
        first = [self.controls[k] for k in ("num_stages", "num_microbatches", "partition")]
        second = [self.controls[k] for k in ("link_gbs", "memory_limit_gib")]
        self.widget = widgets.VBox(
            [widgets.HBox(first), widgets.HBox(second), self.metrics, self.image]
        )

    def _build(self) -> None:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.patches import Patch

        from course_lib.figures.partition import LIMIT_COLOUR, MEMORY_COLOURS, TIME_COLOURS

        fig = self.figure = Figure(figsize=self.FIGSIZE, dpi=self.DPI)
        self._canvas = FigureCanvasAgg(fig)
        left = fig.add_axes((0.07, 0.2, 0.36, 0.62))
        right = fig.add_axes((0.56, 0.2, 0.36, 0.62))
        self.axes = np.array([left, right], dtype=object)
        x = np.arange(MAX_STAGES)
        zeros = np.zeros(MAX_STAGES)
        self._time_bars = {
            part: left.bar(x, zeros, 0.7, color=TIME_COLOURS[part], edgecolor="white", lw=0.5)
            for part in ("forward", "backward", "transfer")
        }
        (self._equal_ticks,) = left.plot([], [], "_", color="#333333", ms=28, mew=2)
        self._bottleneck = left.axhline(0.0, color="#333333", lw=1.2, ls="--")
        state_colour = MEMORY_COLOURS["optimizer"]
        self._memory_bars = {
            "state": right.bar(x, zeros, 0.7, color=state_colour, edgecolor="white", lw=0.5),
            "activations": right.bar(
                x, zeros, 0.7, color=MEMORY_COLOURS["activations"], edgecolor="white", lw=0.5
            ),
        }
        self._limit = right.axhline(0.0, color=LIMIT_COLOUR, lw=1.5, ls="--")
        self._limit_label = right.text(
            1.0, 0.0, "limit", transform=right.get_yaxis_transform(), ha="right", va="bottom",
            color=LIMIT_COLOUR, fontsize=8,
        )  # fmt: skip
        self._totals = [right.text(s, 0, "", ha="center", va="bottom", fontsize=8) for s in x]
        left.legend(
            [Patch(color=TIME_COLOURS[p]) for p in TIME_COLOURS]
            + [left.plot([], [], "_", color="#333333", ms=12, mew=2)[0]]
            + [left.plot([], [], color="#333333", lw=1.2, ls="--")[0]],
            ["forward", "backward", "transfer", "equal blocks", "slowest stage"],
            frameon=False, ncols=3, fontsize=8, loc="lower left", bbox_to_anchor=(0, 1.0),
        )  # fmt: skip
        right.legend(
            [Patch(color=state_colour), Patch(color=MEMORY_COLOURS["activations"])],
            ["weights + grads + optimizer", "activations × in-flight"],
            frameon=False, ncols=2, fontsize=8, loc="lower left", bbox_to_anchor=(0, 1.0),
        )  # fmt: skip
        left.set_ylabel("ms per microbatch")
        right.set_ylabel("GiB")
        left.set_xlabel("stage", fontsize=9)
        right.set_xlabel("stage, and microbatches in flight (1F1B)", fontsize=9)
        from matplotlib.ticker import MaxNLocator

        for ax in self.axes:
            ax.grid(axis="y", alpha=0.3)
            ax.yaxis.set_major_locator(MaxNLocator(nbins=6))
            for side in ("top", "right"):
                ax.spines[side].set_visible(False)
        # Blitting: the legends, spines and labels are drawn once into a background; the axes'
        # ticks and grid once per layout (cached); the bars, lines and texts on every frame.
        self._axis_artists = [ax.xaxis for ax in self.axes] + [ax.yaxis for ax in self.axes]
        self._dynamic = [r for bars in self._time_bars.values() for r in bars]
        self._dynamic += [r for bars in self._memory_bars.values() for r in bars]
        self._dynamic += [self._equal_ticks, self._bottleneck, self._limit, self._limit_label]
        self._dynamic += self._totals
        for artist in self._axis_artists + self._dynamic:
            artist.set_animated(True)
        self._canvas.draw()
        self._background = self._canvas.copy_from_bbox(fig.bbox)

    def _frame(self) -> str:
        return self._draw_frame(self.axes, **self.values)

    def model(
        self,
        num_stages: int,
        num_microbatches: int,
        link_gbs: float,
        memory_limit_gib: float,
        partition: str,
    ) -> dict[str, Any]:
        """The numbers of one setting (see the class docstring); its arrays are read-only."""
        return dict(_setting(num_stages, num_microbatches, link_gbs, memory_limit_gib, partition))

    def _set_layout(self, layout: tuple) -> None:
        """Put the axes in ``layout`` (p, left y top, right y top, in-flight labels) and restore
        its background, ticks and grid included; drawn and cached first if it is new."""
        left, right = self.axes
        if layout != self._layout:
            p, top_ms, top_gib, in_flight = layout
            for ax, top in ((left, top_ms), (right, top_gib)):
                ax.set_ylim(0, top)
                ax.set_xlim(-0.6, p - 0.4)
            left.set_xticks(np.arange(p), [f"s{s}" for s in range(p)])
            right.set_xticks(
                np.arange(p), [f"s{s}\n{n}" for s, n in enumerate(in_flight)], fontsize=8
            )
            self._layout = layout
        background = self._layouts.get(layout)
        if background is None:
            self._canvas.restore_region(self._background)
            for artist in self._axis_artists:
                self.figure.draw_artist(artist)
            background = self._layouts[layout] = self._canvas.copy_from_bbox(self.figure.bbox)
            while len(self._layouts) > self.AXES_CACHE:
                self._layouts.popitem(last=False)
        self._layouts.move_to_end(layout)
        self._canvas.restore_region(background)

    def _draw_frame(
        self,
        axes: Any,
        *,
        num_stages: int,
        num_microbatches: int,
        link_gbs: float,
        memory_limit_gib: float,
        partition: str,
    ) -> str:
        left, right = axes
        r = self.model(num_stages, num_microbatches, link_gbs, memory_limit_gib, partition)
        self.last_metrics = r
        p = num_stages
        bottom = np.zeros(MAX_STAGES)
        for part, bars in self._time_bars.items():
            values = np.zeros(MAX_STAGES)
            values[:p] = r[part] * 1e3
            for s, rect in enumerate(bars):
                rect.set_y(bottom[s])
                rect.set_height(values[s])
                rect.set_visible(s < p)
            bottom += values
        self._equal_ticks.set_data(np.arange(p), r["equal_times"] * 1e3)
        self._bottleneck.set_ydata([r["bottleneck"] * 1e3] * 2)
        bottom = np.zeros(MAX_STAGES)
        for part, bars in self._memory_bars.items():
            values = np.zeros(MAX_STAGES)
            values[:p] = r[part] / GIB
            for s, rect in enumerate(bars):
                rect.set_y(bottom[s])
                rect.set_height(values[s])
                rect.set_visible(s < p)
            bottom += values
        limit = r["limit"]
        for s, text in enumerate(self._totals):
            text.set_visible(s < p)
            if s < p:
                total = r["stage_memory"][s]
                text.set_position((s, total / GIB))
                text.set_text(f"{total / GIB:.1f}")
                text.set_color("#D55E00" if total > limit else "black")
        self._limit.set_ydata([limit / GIB] * 2)
        self._limit_label.set_y(limit / GIB)
        self._limit_label.set_text(f"limit {limit / GIB:g} GiB")
        high_t = max(r["stage_times"].max(), r["equal_times"].max()) * 1e3
        high_m = max(r["stage_memory"].max(), limit) / GIB
        in_flight = tuple(int(n) for n in r["in_flight"])
        self._set_layout((p, _round_up(high_t * 1.08), _round_up(high_m * 1.1), in_flight))
        for artist in self._dynamic:
            if artist.get_visible():
                self.figure.draw_artist(artist)
        return self._metrics_html(r, num_stages, num_microbatches)

    def _metrics_html(self, r: dict[str, Any], p: int, m: int) -> str:
        slowest = int(np.argmax(r["stage_times"]))
        fits = r["stage_memory"].max() <= r["limit"]
        counts = np.diff(r["boundaries"]).tolist()
        rows = [
            ("layers per stage", str(counts), "embedding on stage 0; output and loss on the last"),
            (
                "slowest stage",
                f"{r['bottleneck'] * 1e3:.2f} ms (stage {slowest})",
                f"equal blocks: {r['equal_bottleneck'] * 1e3:.2f} ms "
                f"({r['bottleneck'] / r['equal_bottleneck'] - 1:+.1%})",
            ),
            (
                "step, simulated 1F1B",
                f"{r['simulated_step'] * 1e3:.1f} ms",
                f"at least m × slowest = {m * r['bottleneck'] * 1e3:.1f} ms",
            ),
            (
                "largest stage memory",
                f"{r['stage_memory'].max() / GIB:.2f} GiB (stage {int(np.argmax(r['stage_memory']))})",
                f"fits the {r['limit'] / GIB:g} GiB limit"
                if fits
                else f"<b>over the {r['limit'] / GIB:g} GiB limit</b>",
            ),
        ]
        note = ""
        if not r["feasible"]:
            note = (
                f"<b>No partition into {p} stages fits {r['limit'] / GIB:g} GiB</b>: the smallest "
                f"feasible limit is {r['smallest_limit'] / GIB:.2f} GiB. Drawn: the min-max "
                "partition without a limit."
            )
        return metrics_table(rows, ("", "value", "compare")) + note


def _round_up(value: float) -> float:
    """``value`` rounded up to a multiple of half its power of ten (41 -> 45, 0.72 -> 0.75)."""
    step = 10.0 ** math.floor(math.log10(value)) / 2
    return math.ceil(value / step * (1 - 1e-12)) * step


@functools.lru_cache(maxsize=512)
def _setting(
    num_stages: int,
    num_microbatches: int,
    link_gbs: float,
    memory_limit_gib: float,
    partition: str,
) -> dict[str, Any]:
    """The explorer's numbers for one setting of its controls, cached: the controls move in
    steps, so settings repeat as a learner drags back and forth (arrays read-only)."""
    from course_lib.pipeline import one_f_one_b, simulate
    from course_lib.pipeline.partition import (
        even_blocks,
        min_max_partition,
        smallest_memory_limit,
        stage_costs,
        stage_memory,
        stage_sums,
        stage_times,
    )

    spec, p, m = _spec(), num_stages, num_microbatches
    beta, limit = link_gbs * 1e9, memory_limit_gib * GIB
    equal = even_blocks(spec, p)
    costs = stage_costs(spec, p, beta, m)
    feasible, smallest = True, None
    if partition == "equal blocks":
        bounds = equal
    elif partition == "min-max":
        bounds = min_max_partition(costs, p).boundaries
    else:
        try:
            bounds = min_max_partition(costs, p, memory_limit=limit).boundaries
        except ValueError:
            feasible = False
            bounds = min_max_partition(costs, p).boundaries
            smallest = smallest_memory_limit(costs, p)
    times = stage_times(spec, bounds, beta)
    forward = stage_sums(spec.forward_times, bounds)
    backward = stage_sums(spec.backward_times, bounds)
    transfer = times - forward - backward
    memory = stage_memory(spec, bounds, m)
    half = transfer / 2  # each action carries half of its stage's transfers
    step = simulate(one_f_one_b(p, m), forward + half, backward + half).makespan
    numbers = {
        "boundaries": bounds,
        "forward": forward,
        "backward": backward,
        "transfer": transfer,
        "stage_times": times,
        "equal_times": stage_times(spec, equal, beta),
        "stage_memory": memory["total"].to_numpy(),
        "state": (memory["weights"] + memory["gradients"] + memory["optimizer"]).to_numpy(),
        "activations": memory["activations"].to_numpy(),
        "in_flight": memory["in_flight"].to_numpy(),
        "bottleneck": float(times.max()),
        "equal_bottleneck": float(stage_times(spec, equal, beta).max()),
        "simulated_step": float(step),
        "feasible": feasible,
        "smallest_limit": smallest,
        "limit": limit,
    }
    for value in numbers.values():
        if isinstance(value, np.ndarray):
            value.setflags(write=False)
    return numbers


def partition_explorer(
    num_stages: int = 4,
    num_microbatches: int = 8,
    link_gbs: float = 25.0,
    memory_limit_gib: int = 16,
    partition: str = "equal blocks",
) -> PartitionExplorer:
    """Explorer: p, m, link GB/s, memory limit and a partition -> stage times, memory, step (pipe01).

    The model is the lesson's ``gpt_spec()`` (24 blocks, synthetic). Sliders: num_stages 2-8,
    num_microbatches 1-32, link bandwidth 1-400 GB/s (log), memory limit 4-40 GiB; partitions
    "equal blocks", "min-max" and "min-max within limit".
    """
    from course_lib.validate import number, whole_count

    p = whole_count(num_stages, "num_stages", minimum=2)
    m = whole_count(num_microbatches, "num_microbatches")
    if p > MAX_STAGES or m > 32:
        raise ValueError(
            f"the explorer covers num_stages 2..8 and num_microbatches 1..32, got {p}, {m}"
        )
    beta = number(link_gbs, "link_gbs", positive=True)
    if not 1.0 <= beta <= 400.0:
        raise ValueError(f"link_gbs must be in [1, 400] GB/s, got {beta}")
    limit = whole_count(memory_limit_gib, "memory_limit_gib", minimum=4)
    if limit > 40:
        raise ValueError(f"memory_limit_gib must be in [4, 40], got {limit}")
    if partition not in PARTITIONS:
        raise ValueError(f"partition must be one of {PARTITIONS}, got {partition!r}")
    wide = {"description_width": "initial"}
    controls = {
        "num_stages": widgets.IntSlider(value=p, min=2, max=MAX_STAGES, description="stages p",
                                        style=wide),
        "num_microbatches": widgets.IntSlider(value=m, min=1, max=32,
                                              description="microbatches m", style=wide),
        "partition": widgets.ToggleButtons(options=list(PARTITIONS), value=partition),
        "link_gbs": widgets.FloatLogSlider(value=beta, base=10, min=0, max=np.log10(400),
                                           step=0.05, description="link (GB/s)", style=wide),
        "memory_limit_gib": widgets.IntSlider(value=limit, min=4, max=40,
                                              description="memory limit (GiB)", style=wide),
    }  # fmt: skip
    return PartitionExplorer(controls)
