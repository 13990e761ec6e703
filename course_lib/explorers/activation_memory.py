"""cost05's explorer: activation memory over a step with recomputation and sequence parallelism."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.figure import Figure

from course_lib.explorers.base import Explorer, metrics_table

# --- cost05: activation memory over one training step ---------------------------------------

SEQ_LEN_OPTIONS = (128, 256, 512, 1024, 2048)
"""Sequence lengths the activation-memory explorer offers."""
GIB = float(2**30)
"""Bytes per GiB (PyTorch's memory summaries and snapshots report binary units)."""
_NICE_STEPS = (1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0)


def _nice_ceiling(value: float) -> float:
    """The smallest 1-1.25-1.5-2-2.5-3-4-5-6-8 × 10^k at or above value (value > 0)."""
    power = 10.0 ** np.floor(np.log10(value))
    for step in (*_NICE_STEPS, 10.0):
        if step * power >= value * (1 - 1e-12):
            return float(step * power)
    return float(10.0 * power)  # pragma: no cover - the loop always returns


class ActivationMemoryExplorer(Explorer):
    """Sequence length, micro-batch and recomputation -> stacked memory timeline and its peak (cost05).

    The model is :func:`course_lib.memory.training_step_events`; the stacked levels are those of
    :func:`course_lib.memory.live_bytes_by_category`, by the same private sweep
    (``course_lib.memory._stacked_levels``) without the validation the generator's events do not
    need — so an exercise that disables that sweep disables this one too. The metrics compare the
    timeline with :func:`course_lib.memory.activation_bytes_per_layer`. Built for speed
    (< 100 ms per change, half of it where measured): a fixed layout without a layout engine, and
    blitting in two cached layers — the key, title and axis labels are rendered once, the ticks
    once per pair of axis limits (rounded up to 1-1.25-1.5-2-… steps); a change redraws the
    bands, the phases, the device line, the peak marker and its label. Both axes are shared by
    the three recomputation policies of a shape, so toggling them shows the stack shrink and the
    step grow, and reuses the rendered background.
    """

    FIGSIZE = (11.0, 4.2)
    DPI = 80
    AXES_RECT = (0.075, 0.13, 0.72, 0.74)

    def __init__(
        self,
        controls: Mapping[str, widgets.ValueWidget],
        *,
        shape: dict[str, int],
        device_bytes: float,
    ) -> None:
        self.shape = dict(shape)
        self.device_bytes = float(device_bytes)
        self._canvas: Any = None
        self._base: Any = None
        self._backgrounds: dict[tuple[float, float], Any] = {}
        self._cache: dict[tuple[int, int, str], dict[str, Any]] = {}
        self.last_metrics: dict[str, float] = {}
        super().__init__(controls, self._draw_frame, figsize=self.FIGSIZE, dpi=self.DPI)

    # -- model -----------------------------------------------------------------------------------

    def model(self, seq_len: int, micro_batch: int, recompute: str) -> dict[str, Any]:
        """Levels by category, the peak and the step's numbers for one setting (cached)."""
        from course_lib.memory import STEP_CATEGORIES, _stacked_levels, training_step_events

        key = (int(seq_len), int(micro_batch), str(recompute))
        if key in self._cache:
            return self._cache[key]
        ev = training_step_events(
            seq_len=key[0], micro_batch=key[1], recompute=key[2], **self.shape
        )
        is_alloc = ev["kind"].to_numpy() == "alloc"
        time_ = ev["time"].to_numpy(dtype=float)
        nbytes = ev["bytes"].to_numpy(dtype=float)
        category = ev["category"].to_numpy(dtype=object)
        phase = ev["phase"].to_numpy(dtype=object)
        # The sweep of course_lib.memory.live_bytes_by_category, without its validation.
        times, levels = _stacked_levels(time_, nbytes, is_alloc, category, STEP_CATEGORIES)
        total = levels.sum(axis=0)
        i = int(np.argmax(total))
        at_peak = np.flatnonzero((time_ == times[i]) & is_alloc)
        phases = {}
        for p in ("forward", "backward", "optimizer"):
            mine = time_[phase == p]
            phases[p] = (float(mine.min()), float(mine.max())) if len(mine) else (0.0, 0.0)
        layer0 = ev["tensor"].str.startswith("L0.").to_numpy(dtype=bool)
        saved = (phase == "forward") & is_alloc & (category == "activation") & layer0
        result = {
            "times": times,
            "levels": levels,
            "peak_index": i,
            "peak_time": float(times[i]),
            "peak_bytes": float(total[i]),
            "peak_op": str(ev["op"].iloc[at_peak[-1]]) if len(at_peak) else "",
            "peak_phase": str(phase[at_peak[-1]]) if len(at_peak) else "",
            "phases": phases,
            "layer_activation_bytes": float(nbytes[saved].sum()),
            "sum_of_allocations": float(nbytes[is_alloc].sum()),
            "step_time": float(times[-1]),
        }
        if len(self._cache) >= 256:
            self._cache.pop(next(iter(self._cache)))
        self._cache[key] = result
        return result

    # -- drawing ---------------------------------------------------------------------------------

    def _build(self) -> None:
        """Figure without a layout engine on an Agg canvas; animated (blitted) dynamic artists."""
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.collections import PolyCollection
        from matplotlib.lines import Line2D
        from matplotlib.patches import Rectangle
        from matplotlib.ticker import FuncFormatter, MaxNLocator

        from course_lib.figures.memory import MEMORY_COLOURS, PHASE_SHADES
        from course_lib.memory import STEP_CATEGORIES

        fig = self.figure = Figure(figsize=self.FIGSIZE, dpi=self.DPI)
        self._canvas = FigureCanvasAgg(fig)
        ax = fig.add_axes(self.AXES_RECT)
        self.axes = np.array([ax], dtype=object)
        self._phase_boxes = {
            p: ax.add_patch(
                Rectangle((0.0, 0.0), 0.0, 1.0, transform=ax.get_xaxis_transform(),
                          color=PHASE_SHADES[p], lw=0, zorder=0, animated=True)
            )
            for p in ("forward", "backward", "optimizer")
        }  # fmt: skip
        self._phase_labels = {
            p: ax.text(0.0, 0.98, p, transform=ax.get_xaxis_transform(), ha="center",
                       va="top", fontsize=9, color="#555555", animated=True)
            for p in self._phase_boxes
        }  # fmt: skip
        self._bands = PolyCollection(
            [], facecolors=[MEMORY_COLOURS[c] for c in STEP_CATEGORIES], lw=0, zorder=2,
            animated=True,
        )  # fmt: skip
        ax.add_collection(self._bands)
        (self._outline,) = ax.plot([], [], color="#222222", lw=0.8, zorder=3, animated=True)
        (self._peak_line,) = ax.plot(
            [], [], color="#222222", ls="--", lw=1.2, zorder=4, animated=True
        )
        (self._peak_dot,) = ax.plot([], [], "o", color="#222222", ms=5, zorder=5, animated=True)
        self._peak_text = ax.text(
            0.0, 0.0, "", fontsize=9, va="bottom", zorder=6, animated=True,
            bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": "none", "alpha": 0.85},
        )  # fmt: skip
        # Two cached layers: the base (key, title, axis labels, spines) is rendered once; the
        # ticks depend on the axis limits and are drawn onto the base once per pair of limits
        # (animated, so that the base render leaves them out). The device line is drawn with
        # each frame, over the phase shading; its label is a key entry.
        device_gib = self.device_bytes / GIB
        self._device_line = ax.axhline(
            device_gib, color="#D55E00", ls=":", lw=1.5, zorder=4, animated=True
        )
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v * 1e3:g}"))
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_locator(MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10]))
            axis.set_animated(True)
        x0, y0, width, height = self.AXES_RECT
        fig.text(x0 + width / 2, 0.015, "time (ms)", ha="center", va="bottom", fontsize=10)
        fig.text(0.012, y0 + height / 2, "live memory (GiB)", rotation=90, ha="left",
                 va="center", fontsize=10)  # fmt: skip
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        # The key: patches and texts in figure coordinates (a Legend costs more to draw).
        left = self.AXES_RECT[0] + self.AXES_RECT[2] + 0.025
        top = self.AXES_RECT[1] + self.AXES_RECT[3]
        for k, category in enumerate(reversed(STEP_CATEGORIES)):
            y = top - 0.065 * (k + 1)
            fig.patches.append(
                Rectangle((left, y), 0.022, 0.045, transform=fig.transFigure,
                          facecolor=MEMORY_COLOURS[category])
            )  # fmt: skip
            fig.text(left + 0.032, y + 0.022, category, va="center", fontsize=10)
        y = top - 0.065 * (len(STEP_CATEGORIES) + 1.5)
        fig.lines.append(
            Line2D([left, left + 0.022], [y + 0.022] * 2, transform=fig.transFigure,
                   color="#D55E00", ls=":", lw=1.5)
        )  # fmt: skip
        fig.text(
            left + 0.032, y + 0.022, f"device memory\n{device_gib:g} GiB = {device_gib * 1024:,.0f} MiB",
            va="center", fontsize=9, color="#D55E00",
        )  # fmt: skip
        # A static title (the controls show the setting, the metrics the peak): text is the
        # costliest thing a frame draws.
        fig.text(
            self.AXES_RECT[0], top + 0.03, "One training step: live memory by category",
            ha="left", fontsize=12,
        )  # fmt: skip

    def _background(self, x_max: float, y_max: float) -> Any:
        """Cached render of everything static for one pair of axis limits."""
        ax = self.axes[0]
        ax.set_xlim(0.0, x_max)
        ax.set_ylim(0.0, y_max)
        key = (x_max, y_max)
        if key not in self._backgrounds:
            if self._base is None:  # everything static but the ticks and the device line
                self._canvas.draw()
                self._base = self._canvas.copy_from_bbox(self.figure.bbox)
            if len(self._backgrounds) >= 64:
                self._backgrounds.pop(next(iter(self._backgrounds)))
            self._canvas.restore_region(self._base)
            ax.draw_artist(ax.xaxis)
            ax.draw_artist(ax.yaxis)
            self._backgrounds[key] = self._canvas.copy_from_bbox(self.figure.bbox)
        return self._backgrounds[key]

    def _frame(self) -> str:
        return self._draw_frame(self.axes, **self.values)

    def _draw_frame(self, axes: Any, *, seq_len: int, micro_batch: int, recompute: str) -> str:
        from course_lib.memory import STEP_CATEGORIES, activation_bytes_per_layer

        r = self.model(seq_len, micro_batch, recompute)
        # Both axes are shared by the three policies of a shape (the longest step is the one with
        # full recomputation), so a toggle reuses the cached background.
        ceiling = max(r["peak_bytes"], self.model(seq_len, micro_batch, "none")["peak_bytes"])
        longest = max(r["step_time"], self.model(seq_len, micro_batch, "full")["step_time"])
        times, levels = r["times"], r["levels"] / GIB
        x_max = 1e-3 * _nice_ceiling(1.02e3 * longest)
        y_max = _nice_ceiling(1.25 * ceiling / GIB)
        self._canvas.restore_region(self._background(x_max, y_max))
        ax = axes[0]

        xs = np.repeat(np.append(times, x_max), 2)[1:-1]
        cum = np.vstack([np.zeros(len(times)), np.cumsum(levels, axis=0)])
        polygons = []
        for k in range(len(STEP_CATEGORIES)):
            upper, lower = np.repeat(cum[k + 1], 2), np.repeat(cum[k], 2)
            polygons.append(np.column_stack([np.r_[xs, xs[::-1]], np.r_[upper, lower[::-1]]]))
        self._bands.set_verts(polygons)
        self._outline.set_data(xs, np.repeat(cum[-1], 2))
        for p, box in self._phase_boxes.items():
            lo, hi = r["phases"][p]
            box.set_x(lo)
            box.set_width(hi - lo)
            self._phase_labels[p].set_x((lo + hi) / 2)
            self._phase_labels[p].set_visible(hi > lo)
        t_peak, peak_gib = r["peak_time"], r["peak_bytes"] / GIB
        self._peak_line.set_data([t_peak, t_peak], [0.0, y_max])
        self._peak_dot.set_data([t_peak], [peak_gib])
        right = t_peak / x_max > 0.6
        self._peak_text.set_position((t_peak + (-0.01 if right else 0.01) * x_max, 1.01 * peak_gib))
        self._peak_text.set_horizontalalignment("right" if right else "left")
        # A short label (text is the costliest thing a frame draws): the time and the op at the
        # peak are the metrics table's first row.
        self._peak_text.set_text(f"peak {peak_gib:.2f} GiB")
        self._device_line.set_visible(self.device_bytes / GIB <= y_max)
        for artist in (
            *self._phase_boxes.values(),
            *self._phase_labels.values(),
            self._device_line,
            self._bands,
            self._outline,
            self._peak_line,
            self._peak_dot,
            self._peak_text,
        ):
            ax.draw_artist(artist)

        # Metrics: the peak and what is live then; Table 2 against the timeline.
        shape, L = self.shape, self.shape["num_layers"]
        formula = activation_bytes_per_layer(
            int(seq_len), int(micro_batch), shape["hidden"], shape["num_heads"],
            recompute=recompute,
        )  # fmt: skip
        at_peak = r["levels"][:, r["peak_index"]]
        baseline = self.model(seq_len, micro_batch, "none")["step_time"]
        self.last_metrics = {
            "peak_bytes": r["peak_bytes"],
            "peak_time": t_peak,
            **{f"peak_{c}_bytes": float(b) for c, b in zip(STEP_CATEGORIES, at_peak, strict=True)},
            "layer_activation_bytes": r["layer_activation_bytes"],
            "layer_activation_formula": formula,
            "sum_of_allocations": r["sum_of_allocations"],
            "step_time": r["step_time"],
        }
        names = {"none": "sbh(34 + 5as/h)", "selective": "34·sbh", "full": "2·sbh"}
        loss_gib = 12 * int(seq_len) * int(micro_batch) * shape["vocab_size"] / GIB
        same = abs(formula - r["layer_activation_bytes"]) <= 1e-9 * formula
        rows = [
            (
                "peak live memory",
                f"{peak_gib:.2f} GiB",
                f"at {t_peak * 1e3:.1f} ms, {r['peak_op']} ({r['peak_phase']})",
            ),
            (
                "live at the peak",
                " + ".join(f"{b / GIB:.2f}" for b in at_peak) + " GiB",
                " + ".join(STEP_CATEGORIES),
            ),
            (
                "saved activations per layer",
                f"{r['layer_activation_bytes'] / 2**20:.1f} MiB",
                f"Table 2: {names[recompute]} = {formula / 2**20:.1f} MiB "
                + ("(agree)" if same else "<b>(disagree: please report)</b>"),
            ),
            (
                "× layers",
                f"{L * r['layer_activation_bytes'] / GIB:.2f} GiB",
                f"{L} layers; the loss adds 12·s·b·V = {loss_gib:.2f} GiB at its backward "
                "(fp32 log-probs and two fp32 gradients)",
            ),
            (
                "sum of all allocations",
                f"{r['sum_of_allocations'] / GIB:.2f} GiB",
                f"{r['sum_of_allocations'] / r['peak_bytes']:.1f}× the peak: "
                "not a memory requirement",
            ),
            (
                "step time",
                f"{r['step_time'] * 1e3:.1f} ms",
                f"{r['step_time'] / baseline - 1:+.1%} vs no recomputation",
            ),
        ]
        return metrics_table(rows, ("", "value", "note"))


def activation_memory_explorer(
    seq_len: int = 1024,
    micro_batch: int = 4,
    recompute: str = "none",
    *,
    num_layers: int = 12,
    hidden: int = 768,
    num_heads: int = 12,
    vocab_size: int = 50257,
    device_bytes: float = 80 * 2**30,
) -> ActivationMemoryExplorer:
    """Explorer: sequence length, micro-batch size, recomputation -> memory timeline, peak, Table 2 (cost05).

    The step is :func:`course_lib.memory.training_step_events` of a GPT-2-small-shaped model
    (12 layers, h = 768, 12 heads, V = 50257) by default. Controls: seq_len in
    :data:`SEQ_LEN_OPTIONS`, micro_batch 1-16, recompute none / selective / full. A dotted line
    marks ``device_bytes`` once the axis reaches it: by default 80 GiB, the 81,920 MiB that
    ``nvidia-smi`` reports for an A100 80GB (binary units, as PyTorch and ``nvidia-smi`` count;
    an "80 GB" datasheet figure is not 80·10⁹ bytes).
    """
    from course_lib.memory import _count

    shape = {
        "num_layers": _count(num_layers, "num_layers"),
        "hidden": _count(hidden, "hidden"),
        "num_heads": _count(num_heads, "num_heads"),
        "vocab_size": _count(vocab_size, "vocab_size"),
    }
    if seq_len not in SEQ_LEN_OPTIONS:
        raise ValueError(f"seq_len must be one of {SEQ_LEN_OPTIONS}, got {seq_len!r}")
    if (
        isinstance(micro_batch, bool)
        or not isinstance(micro_batch, int)
        or not 1 <= micro_batch <= 16
    ):
        raise ValueError(f"micro_batch must be an integer in 1..16, got {micro_batch!r}")
    if recompute not in ("none", "selective", "full"):
        raise ValueError(f"recompute must be 'none', 'selective' or 'full', got {recompute!r}")
    if (
        isinstance(device_bytes, bool)
        or not isinstance(device_bytes, int | float)
        or not device_bytes > 0
    ):
        raise ValueError(f"device_bytes must be a number > 0, got {device_bytes!r}")
    wide = {"description_width": "initial"}
    controls = {
        "seq_len": widgets.SelectionSlider(
            options=list(SEQ_LEN_OPTIONS),
            value=seq_len,
            description="sequence length s",
            style=wide,
        ),
        "micro_batch": widgets.IntSlider(
            value=micro_batch, min=1, max=16, description="micro-batch b", style=wide
        ),
        "recompute": widgets.ToggleButtons(options=["none", "selective", "full"], value=recompute),
    }
    return ActivationMemoryExplorer(controls, shape=shape, device_bytes=device_bytes)
