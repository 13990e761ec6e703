"""cost04's explorer: MFU and HFU of a GPT-3-style run under stated FLOP and time conventions."""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.figure import Figure

from course_lib.explorers.base import Explorer, metrics_table

# --- cost04: one run, many utilization numbers (FLOP count, time base, peak) ----------------

#: GPT-3 sizes (Brown et al. 2020, table 2.1): layers l, hidden size h, heads H, head dim Q (H·Q = h).
GPT3_CONFIGS: dict[str, tuple[int, int, int, int]] = {
    "GPT-3 760M": (24, 1536, 16, 96),
    "GPT-3 2.7B": (32, 2560, 32, 80),
    "GPT-3 6.7B": (32, 4096, 32, 128),
    "GPT-3 175B": (96, 12288, 96, 128),
}
_UTIL_VOCAB = 51200  # GPT-2 BPE vocabulary 50257 padded to a multiple of 1024, as Megatron-LM does
_UTIL_COUNTS = ("executed", "6N+12LHQT", "6N")
_UTIL_COUNT_NAMES = {
    "executed": "executed FLOPs (HFU)",
    "6N+12LHQT": "model FLOPs 6N + 12LHQT (MFU)",
    "6N": "model FLOPs, 6N only",
}
_UTIL_BASES = ("kernel", "step", "wall-clock")


def _utilization_rates(
    model: str,
    seq_len: int,
    recompute: str,
    *,
    kernel_efficiency: float,
    busy_fraction: float,
    outside_fraction: float,
    redone_fraction: float,
    peak_flops: float,
) -> dict[tuple[str, str], float]:
    """Counted FLOP/s per device for every (FLOP count, time base) of one modelled run (cost04).

    The hardware is held fixed: while kernels run the device executes ``kernel_efficiency`` ×
    ``peak_flops``; kernels run ``busy_fraction`` of each step; ``outside_fraction`` of the
    wall-clock lies outside steps (input stalls, evaluation, checkpoints, restart downtime) and
    ``redone_fraction`` steps per kept step are lost to failures and run again. Executed FLOPs per
    token are the model's (PaLM 6N + 12LHQT with N = 12·l·h² + V·h, V = 51200) times Megatron's
    executed/model ratio under full recomputation (96/72 form over the 72 form), or 1 without.
    """
    from course_lib.flops import megatron_flops_per_iteration, model_flops_per_token

    if model not in GPT3_CONFIGS:
        raise ValueError(f"unknown model {model!r}; known: {list(GPT3_CONFIGS)}")
    if recompute not in ("none", "full"):
        raise ValueError(f"recompute must be 'none' or 'full', got {recompute!r}")
    for name, v in (
        ("kernel_efficiency", kernel_efficiency),
        ("busy_fraction", busy_fraction),
    ):
        if not 0 < v <= 1:
            raise ValueError(f"{name} must be in (0, 1], got {v}")
    if not 0 <= outside_fraction < 1:
        raise ValueError(f"outside_fraction must be in [0, 1), got {outside_fraction}")
    if not redone_fraction >= 0:
        raise ValueError(f"redone_fraction must be >= 0, got {redone_fraction}")
    layers, hidden, heads, head_dim = GPT3_CONFIGS[model]
    num_params = 12 * layers * hidden**2 + _UTIL_VOCAB * hidden
    per_token = {
        "6N+12LHQT": model_flops_per_token(num_params, layers, heads, head_dim, seq_len),
        "6N": 6.0 * num_params,
    }
    ratio = megatron_flops_per_iteration(
        1, seq_len, layers, hidden, _UTIL_VOCAB, recompute=True
    ) / megatron_flops_per_iteration(1, seq_len, layers, hidden, _UTIL_VOCAB, recompute=False)
    per_token["executed"] = per_token["6N+12LHQT"] * (ratio if recompute == "full" else 1.0)
    # Tokens per second per device, on each time base, from the executed rate the hardware holds.
    kernel_rate = kernel_efficiency * peak_flops
    tokens = {"kernel": kernel_rate / per_token["executed"]}
    tokens["step"] = tokens["kernel"] * busy_fraction
    tokens["wall-clock"] = tokens["step"] * (1 - outside_fraction) / (1 + redone_fraction)
    return {(c, b): tokens[b] * per_token[c] for c in _UTIL_COUNTS for b in _UTIL_BASES}


class UtilizationExplorer(Explorer):
    """Waterfall from the peak to the quoted number and the matrix of all quotable numbers (cost04).

    Built for speed: a fixed layout and a fixed TFLOP/s axis (room for the 2:4-sparse peak, so
    switching peaks moves only the 100% line, never the bars). Everything that never changes is
    drawn once and kept as a bitmap; so are the labels of each path and the matrix of each run
    and peak. An update restores those and draws only the changing artists (MAX_ROWS bar slots
    with their values, the title, the outline of the chosen cell) before encoding the PNG. Colours and meaning as :func:`course_lib.figures.utilization.utilization_waterfall`.
    """

    WATERFALL_RECT = (0.25, 0.13, 0.40, 0.76)
    MATRIX_RECT = (0.79, 0.20, 0.18, 0.52)
    MATRIX_STRIP_LEFT = (
        0.75  # figure fraction: the matrix, its labels and its title lie right of it
    )
    MAX_ROWS = 13  # 7 stops and 6 drops: sparse peak ... 6N · wall-clock
    X_MAX_TFLOPS = 2300.0  # the H100 bf16 2:4-sparse peak (1979) and its label fit

    def __init__(self, controls: Mapping[str, widgets.ValueWidget], **hardware: float) -> None:
        self.hardware = dict(hardware)
        self.last_rates: dict[tuple[str, str], float] = {}
        self.last_quote = float("nan")
        self.last_path: list[tuple[str, float]] = []
        self._built = False
        super().__init__(controls, self._draw_frame, figsize=(11.0, 4.8), dpi=80)
        run = [self.controls[k] for k in ("model", "seq_len", "recompute")]
        conventions = [self.controls[k] for k in ("flop_count", "time_base", "peak")]
        self.widget = widgets.VBox(
            [widgets.HBox(run), widgets.HBox(conventions), self.metrics, self.image]
        )

    def _build(self) -> None:
        """Replace the base class's axes by fixed axes holding persistent artists."""
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.patches import Rectangle
        from matplotlib.ticker import NullLocator
        from matplotlib.transforms import Bbox

        fig = self.figure = Figure(figsize=self.figure.get_size_inches(), dpi=self.figure.dpi)
        self._canvas = FigureCanvasAgg(fig)
        wf = fig.add_axes(self.WATERFALL_RECT)
        mx = fig.add_axes(self.MATRIX_RECT)
        self.axes = np.array([wf, mx], dtype=object)
        wf.set_ylim(self.MAX_ROWS - 0.4, -0.6)
        wf.set_xlim(0.0, self.X_MAX_TFLOPS)
        wf.set_xlabel("TFLOP/s per device")
        wf.yaxis.set_major_locator(NullLocator())
        for side in ("top", "right", "left"):
            wf.spines[side].set_visible(False)
        wf.grid(axis="x", color="#E6E6E6", lw=0.8)
        wf.set_axisbelow(True)
        self._bars, self._names, self._values = [], [], []
        for row in range(self.MAX_ROWS):
            height = 0.72 if row % 2 == 0 else 0.5
            self._bars.append(wf.add_patch(Rectangle((0.0, row - height / 2), 0.0, height)))
            self._names.append(
                wf.text(
                    -0.02,
                    row,
                    "",
                    transform=wf.get_yaxis_transform(),
                    ha="right",
                    va="center",
                    fontsize=10 if row % 2 == 0 else 8.5,
                    color="#111111" if row % 2 == 0 else "#7A3300",
                    fontstyle="normal" if row % 2 == 0 else "italic",
                )
            )
            self._values.append(wf.text(0.0, row, "", ha="left", va="center", fontsize=9))
        self._peak_line = wf.axvline(0.0, color="#333333", ls="--", lw=1.0, zorder=0)
        self._peak_text = wf.text(
            0.0, self.MAX_ROWS - 0.5, "", ha="left", va="bottom", fontsize=8, color="#333333"
        )
        self._title = wf.set_title("", loc="left")

        self._matrix = mx.imshow(
            np.zeros((len(_UTIL_COUNTS), len(_UTIL_BASES))),
            cmap="Blues",
            vmin=0.0,
            vmax=1.0,
            aspect="auto",
        )
        self._cells = [
            [mx.text(j, i, "", ha="center", va="center", fontsize=9) for j in range(3)]
            for i in range(3)
        ]
        self._choice = mx.add_patch(
            Rectangle((-0.5, -0.5), 1, 1, fill=False, edgecolor="#E69F00", lw=3.0, clip_on=False)
        )
        mx.set_xticks(range(3), ["kernel", "step", "wall"], fontsize=9)
        mx.set_yticks(range(3), ["executed", "6N+12LHQT", "6N only"], fontsize=9)
        mx.xaxis.tick_top()
        mx.tick_params(length=0)
        mx.set_xlabel("time base", fontsize=9)
        mx.set_ylabel("FLOP count", fontsize=9)
        self._matrix_title = mx.set_title("", fontsize=10, pad=22)
        # Drawn per path (they change only with the conventions) and cached as bitmaps:
        self._layout = [self._peak_line, self._peak_text, *self._names]
        self._layout_cache: dict[tuple[str, ...], Any] = {}
        self._layout_key: tuple[str, ...] = ()
        # The matrix and its title change only with the run and the peak: cached as bitmaps of
        # the figure's right-hand strip, which nothing of the waterfall reaches.
        self._matrix_artists = [
            self._matrix,
            *(cell for row in self._cells for cell in row),
            self._matrix_title,
        ]
        self._matrix_cache: dict[tuple[object, ...], Any] = {}
        self._matrix_key: tuple[object, ...] = ()
        width, height = fig.canvas.get_width_height()
        self._matrix_bbox = Bbox.from_extents(self.MATRIX_STRIP_LEFT * width, 0, width, height)
        # Drawn on every update:
        self._dynamic = [*self._bars, *self._values, self._title]
        for artist in self._layout + self._matrix_artists + self._dynamic + [self._choice]:
            artist.set_animated(True)
        self._canvas.draw()  # everything static, once
        self._background = self._canvas.copy_from_bbox(fig.bbox)
        self._built = True

    def _frame(self) -> str:
        return self._draw_frame(**self.values)

    def png(self) -> bytes:
        """The static bitmap, the cached labels of this path and the changing artists, as PNG bytes."""
        from PIL import Image

        canvas = self._canvas
        renderer = canvas.get_renderer()
        cached = self._layout_cache.get(self._layout_key)
        if cached is None:
            canvas.restore_region(self._background)
            for artist in self._layout:
                if artist.get_visible():
                    artist.draw(renderer)
            cached = self._layout_cache[self._layout_key] = canvas.copy_from_bbox(self.figure.bbox)
        canvas.restore_region(cached)
        matrix = self._matrix_cache.get(self._matrix_key)
        if matrix is None:
            for artist in self._matrix_artists:
                artist.draw(renderer)
            matrix = self._matrix_cache[self._matrix_key] = canvas.copy_from_bbox(self._matrix_bbox)
        else:
            canvas.restore_region(matrix)
        for artist in [*self._dynamic, self._choice]:
            if artist.get_visible():
                artist.draw(renderer)
        buffer = io.BytesIO()
        Image.fromarray(np.asarray(canvas.buffer_rgba())).save(
            buffer, format="png", compress_level=1
        )
        return buffer.getvalue()

    def _path(
        self, rates: dict[tuple[str, str], float], flop_count: str, time_base: str, peak: str
    ) -> tuple[list[tuple[str, float]], list[str]]:
        """Stops and drops from the peak to the quoted number, one convention at a time."""
        from course_lib.hardware import peak as table_peak

        stops: list[tuple[str, float]] = []
        drops: list[str] = []
        if peak == "2:4 sparse":
            stops.append(("H100 bf16 2:4-sparse peak", table_peak("H100 SXM", "bf16", True)))
            drops.append("sparsity credit (not eligible)")
        stops.append(("H100 bf16 dense peak", table_peak("H100 SXM", "bf16")))
        drops.append("kernels run below peak")
        stops.append(("executed · kernel time", rates[("executed", "kernel")]))
        base = "kernel"
        if time_base != "kernel":
            drops.append("device idle inside the step")
            stops.append(("executed · step time", rates[("executed", "step")]))
            base = "step"
        if flop_count != "executed":
            drops.append("recomputation (executed, not model)")
            stops.append((f"6N+12LHQT · {base} time", rates[("6N+12LHQT", base)]))
        if flop_count == "6N":
            drops.append("attention FLOPs 6N leaves out")
            stops.append((f"6N · {base} time", rates[("6N", base)]))
        if time_base == "wall-clock":
            drops.append("stalls, eval, checkpoints, restarts")
            stops.append((f"{flop_count} · wall-clock", rates[(flop_count, "wall-clock")]))
        return stops, drops

    def _draw_frame(
        self,
        *,
        model: str,
        seq_len: int,
        recompute: str,
        flop_count: str,
        time_base: str,
        peak: str,
    ) -> str:
        from course_lib.figures.utilization import UTILIZATION_COLOURS as colours
        from course_lib.hardware import peak as table_peak

        hw = self.hardware
        dense = table_peak("H100 SXM", "bf16")
        reference = table_peak("H100 SXM", "bf16", sparse=peak == "2:4 sparse")
        rates = _utilization_rates(model, seq_len, recompute, peak_flops=dense, **hw)
        stops, drops = self._path(rates, flop_count, time_base, peak)
        self.last_rates = rates
        self.last_path = stops
        self.last_quote = stops[-1][1] / reference
        num_peaks = 2 if peak == "2:4 sparse" else 1
        self._layout_key = (flop_count, time_base, peak)
        self._matrix_key = (model, seq_len, recompute, peak)

        wf, mx = self.axes
        span = reference / 1e12
        self._peak_line.set_xdata([span, span])
        self._peak_text.set_x(span + 15.0)
        self._peak_text.set_text(f"100% = {span:.0f} TFLOP/s")
        rows: list[tuple[str, float, float, str, str]] = []  # name, left, right, value, kind
        for i, (name, value) in enumerate(stops):
            kind = "peak" if i < num_peaks else "quote" if i == len(stops) - 1 else "stop"
            rows.append((name, 0.0, value, f"{value / reference:.1%}", kind))
            if i < len(drops):
                points = (value - stops[i + 1][1]) / reference * 100
                label = f"−{points:.1f} pts" if points >= 0.05 else "none"
                rows.append((drops[i], stops[i + 1][1], value, label, "drop"))
        for row in range(self.MAX_ROWS):
            bar, name, text = self._bars[row], self._names[row], self._values[row]
            if row >= len(rows):
                for artist in (bar, name, text):
                    artist.set_visible(False)
                continue
            label, left, right, value, kind = rows[row]
            for artist in (bar, name, text):
                artist.set_visible(True)
            bar.set_x(left / 1e12)
            bar.set_width((right - left) / 1e12)
            hatched = kind == "peak" and peak == "2:4 sparse" and row == 0
            bar.set_hatch("//" if hatched else None)
            bar.set_facecolor("white" if hatched else colours[kind])
            bar.set_edgecolor(colours["peak"] if hatched else "none")
            bar.set_alpha(0.45 if kind == "drop" else 1.0)
            name.set_text(label)
            text.set_text(value)
            text.set_x(right / 1e12 + 20.0)
            text.set_fontweight("bold" if kind == "quote" else "normal")
            text.set_color("#7A3300" if kind == "drop" else "#111111")
        self._title.set_text(f"From the peak to the quoted number: {self.last_quote:.1%}")

        grid = np.array([[rates[(c, b)] / reference for b in _UTIL_BASES] for c in _UTIL_COUNTS])
        self._matrix.set_data(grid)
        for i in range(3):
            for j in range(3):
                cell = self._cells[i][j]
                cell.set_text(f"{grid[i, j]:.1%}")
                cell.set_color("white" if grid[i, j] > 0.45 else "#111111")
        i, j = _UTIL_COUNTS.index(flop_count), _UTIL_BASES.index(time_base)
        self._choice.set_xy((j - 0.5, i - 0.5))
        ref_name = "2:4-sparse" if peak == "2:4 sparse" else "dense"
        self._matrix_title.set_text(
            f"the same run, 9 conventions:\n{grid.min():.1%} to {grid.max():.1%}\n"
            f"of the {ref_name} peak"
        )

        hfu_step = rates[("executed", "step")] / dense
        mfu_step = rates[("6N+12LHQT", "step")] / dense
        head = (
            f"<b>{model}</b>, s = {seq_len}, recomputation {recompute} · quoted: "
            f"<b>{self.last_quote:.1%}</b> = {_UTIL_COUNT_NAMES[flop_count]} per "
            f"{time_base} time / H100 bf16 {ref_name} peak ({span:.0f} TFLOP/s)"
        )
        table = [
            (
                "held fixed (the hardware)",
                f"kernels execute {hw['kernel_efficiency'] * dense / 1e12:.0f} TFLOP/s while "
                f"they run; busy {hw['busy_fraction']:.0%} of each step; "
                f"{hw['outside_fraction']:.0%} of wall-clock outside steps; "
                f"{hw['redone_fraction']:.0%} of steps redone",
            ),
            (
                "attention share of model FLOPs",
                f"{1 - rates[('6N', 'step')] / rates[('6N+12LHQT', 'step')]:.1%} "
                "(12LHQT / (6N + 12LHQT); grows with s/h)",
            ),
            (
                "HFU / MFU (step time, dense peak)",
                f"{hfu_step:.1%} / {mfu_step:.1%} = {hfu_step / mfu_step:.3f}",
            ),
        ]
        return head + metrics_table(table, ("", ""))


def utilization_explorer(
    model: str = "GPT-3 6.7B",
    seq_len: int = 2048,
    recompute: str = "none",
    kernel_efficiency: float = 0.62,
    busy_fraction: float = 0.86,
    outside_fraction: float = 0.10,
    redone_fraction: float = 0.03,
) -> UtilizationExplorer:
    """Explorer: model, s, recomputation; FLOP count, time base, peak -> waterfall + matrix of quotes (cost04).

    The hardware's behaviour is fixed by the keyword arguments (see :func:`_utilization_rates`);
    only the run's shape and the conventions move, and with them the quoted utilization.
    """
    seq_options = [512, 1024, 2048, 4096, 8192, 16384, 32768]
    if seq_len not in seq_options:
        raise ValueError(f"seq_len must be one of {seq_options}, got {seq_len!r}")
    hardware = dict(
        kernel_efficiency=kernel_efficiency,
        busy_fraction=busy_fraction,
        outside_fraction=outside_fraction,
        redone_fraction=redone_fraction,
    )
    # Validates everything (model, recompute, fractions) before a widget exists.
    _utilization_rates(model, seq_len, recompute, peak_flops=1.0, **hardware)
    wide = {"description_width": "initial"}
    controls = {
        "model": widgets.Dropdown(
            options=list(GPT3_CONFIGS), value=model, description="model", style=wide
        ),
        "seq_len": widgets.SelectionSlider(
            options=seq_options, value=seq_len, description="sequence length s", style=wide
        ),
        "recompute": widgets.ToggleButtons(
            options=["none", "full"], value=recompute, description="recomputation", style=wide
        ),
        "flop_count": widgets.ToggleButtons(
            options=list(_UTIL_COUNTS), value="6N+12LHQT", description="FLOP count", style=wide
        ),
        "time_base": widgets.ToggleButtons(
            options=list(_UTIL_BASES), value="step", description="time base", style=wide
        ),
        "peak": widgets.ToggleButtons(
            options=["dense", "2:4 sparse"], value="dense", description="peak", style=wide
        ),
    }
    return UtilizationExplorer(controls, **hardware)
