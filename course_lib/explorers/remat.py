"""pipe05's explorer: what to recompute in a stage of transformer layers under a stash budget."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import ipywidgets as widgets
import numpy as np

from course_lib.explorers.base import Explorer, metrics_table

SEQ_LEN_OPTIONS: tuple[int, ...] = (1024, 2048, 4096, 8192, 16384)
"""Sequence lengths the explorer offers (the 5·a·s/h term grows with s)."""

GIB = 2.0**30


@functools.lru_cache(maxsize=64)
def _stage_plans(
    seq_len: int, num_layers: int, micro_batch: int, hidden: int, num_heads: int
) -> dict[str, Any]:
    """Every plan of a stage of identical layers as (n_none, n_selective, n_full) counts with its
    bytes per microbatch and extra-time fraction, and the frontier from the exact search."""
    from course_lib.pipeline.stash import layer_forward_times, layer_options, recompute_frontier

    t_f, t_core = layer_forward_times(seq_len, micro_batch, hidden, 1.0)  # the rate cancels
    options = layer_options(seq_len, micro_batch, hidden, num_heads, t_f, t_core)
    per_layer = np.array(options)  # rows none, selective, full: (bytes, seconds)
    step = num_layers * 3.0 * t_f  # the stage's forward + backward (t_b = 2 t_f) per microbatch
    counts = np.array(
        [
            (n0, n1, num_layers - n0 - n1)
            for n0 in range(num_layers + 1)
            for n1 in range(num_layers + 1 - n0)
        ]
    )
    cost = counts @ per_layer
    frontier = recompute_frontier([options] * num_layers)
    return {
        "options": options,
        "counts": counts,
        "bytes": cost[:, 0],
        "fraction": cost[:, 1] / step,
        "frontier": np.array([(b, t / step) for b, t, _ in frontier]),
        "frontier_plans": [plan for _, _, plan in frontier],
        "per_layer": per_layer,
        "step": step,
    }


class RematExplorer(Explorer):
    """Sequence length, microbatches in flight and a stash budget -> every recompute plan of an
    8-layer stage, the frontier, the best plan within budget (pipe05).

    ``last_plan`` is the chosen plan's (n_none, n_selective, n_full) counts, or None when no plan
    fits; ``last_metrics`` its stashed bytes and extra-time fraction.
    """

    def __init__(self, controls: Mapping[str, widgets.ValueWidget], shape: dict[str, int]) -> None:
        self.shape = shape
        self.last_plan: tuple[int, int, int] | None = None
        self.last_metrics: dict[str, float] = {}
        self._backgrounds: dict[tuple[int, int], Any] = {}
        super().__init__(controls, self._draw_frame, figsize=(9.0, 4.0), dpi=72)

    def _build(self) -> None:
        """A fixed-layout figure on its own Agg canvas, with the frontier plot's artists made once."""
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        from course_lib.figures.remat import frontier_plot

        fig = self.figure = Figure(figsize=self.figure.get_size_inches(), dpi=self.figure.dpi)
        self._canvas = FigureCanvasAgg(fig)
        ax = fig.add_axes((0.08, 0.13, 0.9, 0.78))
        self.axes = np.array([ax], dtype=object)
        model = self._model(**self.values)
        frontier_plot(model["points"], model["front"], model["budget"], model["chosen"],
                      labels=model["uniform"], ax=ax)  # fmt: skip

    def _frame(self) -> str:
        return self._draw_frame(self.axes, **self.values)

    def _model(self, *, seq_len: int, in_flight: int, budget_gib: float) -> dict[str, Any]:
        """Plans scaled to the stage (× in-flight microbatches), the chosen plan, the uniform ones."""
        from course_lib.figures.remat import plan_counts

        plans = _stage_plans(int(seq_len), **self.shape)
        k = int(in_flight)
        budget = float(budget_gib) * GIB
        points = np.column_stack([k * plans["bytes"], plans["fraction"]])
        front = plans["frontier"] * [k, 1.0]
        fits = np.flatnonzero(front[:, 0] <= budget)
        chosen, counts_of_plan = None, None
        if len(fits):
            i = int(fits[np.argmin(front[fits, 1])])
            chosen = (float(front[i, 0]), float(front[i, 1]))
            counts_of_plan = plan_counts(plans["frontier_plans"][i])
        counts = plans["counts"]
        layers = self.shape["num_layers"]
        uniform = {}
        for name, column in (("none", 0), ("selective", 1), ("full", 2)):
            row = int(np.flatnonzero(counts[:, column] == layers)[0])
            uniform[name] = (float(points[row, 0]), float(points[row, 1]))
        return {"points": points, "front": front, "budget": budget, "chosen": chosen,
                "plan": counts_of_plan, "uniform": uniform}  # fmt: skip

    def _draw_frame(self, axes: Any, *, seq_len: int, in_flight: int, budget_gib: float) -> str:
        from course_lib.figures.remat import update_choice, update_frontier

        r = self._model(seq_len=seq_len, in_flight=in_flight, budget_gib=budget_gib)
        ax = axes[0]
        s, h, a, k = int(seq_len), self.shape["hidden"], self.shape["num_heads"], int(in_flight)
        key = (s, k)
        if key not in self._backgrounds:  # the plans of (s, k), drawn once without budget or star
            update_frontier(ax, r["points"], r["front"], r["uniform"])
            ax.set_title(
                f"{self.shape['num_layers']} layers, s = {s}: 5·a·s/h = {5 * a * s / h:g} vs 34; "
                f"{k} microbatch{'es' * (k != 1)} in flight",
                loc="left",
            )
            for artist in update_choice(ax, r["budget"], r["chosen"]):
                artist.set_visible(False)
            self._canvas.draw()
            self._backgrounds[key] = self._canvas.copy_from_bbox(self.figure.bbox)
            if len(self._backgrounds) > 64:
                self._backgrounds.pop(next(iter(self._backgrounds)))
        else:  # the axes limits follow the plans: set them as that background had them
            update_frontier(ax, r["points"], r["front"], r["uniform"])
        self._canvas.restore_region(self._backgrounds[key])
        for artist in update_choice(ax, r["budget"], r["chosen"]):
            artist.set_visible(True)
            self.figure.draw_artist(artist)
        self.last_plan = r["plan"]
        uniform = r["uniform"]
        if r["chosen"] is None:
            self.last_metrics = {}
            smallest = float(r["front"][0, 0])
            return (
                f"<b>No plan fits {budget_gib:g} GiB</b>: even full recomputation on every layer "
                f"stashes {smallest / GIB:.3g} GiB (the layer inputs, 2·s·b·h each)."
            )
        n0, n1, n2 = self.last_plan
        chosen = r["chosen"]
        self.last_metrics = {"bytes": chosen[0], "extra_fraction": chosen[1]}
        rows = [
            ("best plan", f"{n0} keep all, {n1} selective, {n2} full"),
            ("stashed on the stage", f"{chosen[0] / GIB:.3g} GiB of {budget_gib:g} GiB"),
            ("extra time", f"{chosen[1]:.1%} of the step"),
            (
                "all selective / all full",
                f"{uniform['selective'][1]:.1%} / {uniform['full'][1]:.1%}",
            ),
        ]
        return metrics_table(rows, ("", "")) + (
            "<i>Times from matmul FLOPs with t_b = 2·t_f; softmax and dropout are memory-bound "
            "and make selective recomputation dearer than this on real hardware.</i>"
        )

    def png(self) -> bytes:
        """The Agg buffer as an RGB PNG (zlib level 1), as pipe02's explorer encodes it."""
        from course_lib.explorers.fill_drain import _png_rgb

        return _png_rgb(np.asarray(self._canvas.buffer_rgba()))


def remat_explorer(
    seq_len: int = 2048,
    in_flight: int = 4,
    budget_gib: float = 6.0,
    num_layers: int = 8,
    hidden: int = 4096,
    num_heads: int = 32,
) -> RematExplorer:
    """Explorer: sequence length, microbatches in flight, stash budget -> recompute plans (pipe05).

    A stage of ``num_layers`` identical transformer layers (micro-batch 1, 16-bit, Korthikanti et
    al. 2022 Table 2 bytes); each layer keeps everything, recomputes selectively or fully. Every
    plan is a grey point (stashed bytes × in-flight microbatches, extra time as a fraction of the
    stage's forward + backward), the frontier comes from
    :func:`course_lib.pipeline.stash.recompute_frontier`, the star is the fastest plan within
    the budget.
    """
    from course_lib.pipeline._validate import check_int

    if seq_len not in SEQ_LEN_OPTIONS:
        raise ValueError(f"seq_len must be one of {SEQ_LEN_OPTIONS}, got {seq_len!r}")
    k = check_int("in_flight", in_flight)
    if k > 8:
        raise ValueError(f"in_flight must be in 1..8, got {k}")
    if isinstance(budget_gib, bool) or not isinstance(budget_gib, int | float):
        raise TypeError(f"budget_gib must be a number of GiB, got {budget_gib!r}")
    if not 0.0 <= budget_gib <= 80.0:
        raise ValueError(f"budget_gib must be in [0, 80], got {budget_gib}")
    shape = {
        "num_layers": check_int("num_layers", num_layers),
        "micro_batch": 1,
        "hidden": check_int("hidden", hidden),
        "num_heads": check_int("num_heads", num_heads),
    }
    if shape["num_layers"] > 16:
        raise ValueError(f"num_layers must be in 1..16, got {num_layers}")
    wide = {"description_width": "initial"}
    controls = {
        "seq_len": widgets.SelectionSlider(
            options=list(SEQ_LEN_OPTIONS), value=seq_len, description="sequence s", style=wide
        ),
        "in_flight": widgets.IntSlider(
            value=k, min=1, max=8, description="microbatches in flight", style=wide
        ),
        "budget_gib": widgets.FloatSlider(
            value=float(budget_gib),
            min=0.0,
            max=80.0,
            step=0.5,
            description="budget (GiB)",
            style=wide,
        ),  # fmt: skip
    }
    return RematExplorer(controls, shape)
