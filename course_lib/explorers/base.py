"""The explorer base: controls -> model -> figure + metrics, redrawn into one Image widget per change.

Each explorer is a row of controls, a figure and a short metrics panel. A change of any control
recomputes the model and redraws the existing matplotlib figure into an Image widget (no new figure,
no notebook output churn), and records how long that took in ``last_update_ms`` so the
responsiveness target (< 100 ms per change) can be measured.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable, Mapping
from typing import Any

import ipywidgets as widgets
from matplotlib.figure import Figure


class Explorer:
    """Controls -> model -> figure + metrics; `update()` is what a slider change runs."""

    def __init__(
        self,
        controls: Mapping[str, widgets.ValueWidget],
        draw: Callable[..., str],
        *,
        figsize: tuple[float, float] = (10.0, 4.0),
        ncols: int = 1,
        width_ratios: tuple[float, ...] | None = None,
        dpi: int = 80,
    ) -> None:
        self.controls = dict(controls)
        self._draw = draw
        # A Figure not managed by pyplot: redrawing it never creates notebook output by itself.
        self.figure = Figure(figsize=figsize, dpi=dpi, layout="constrained")
        gridspec = {"width_ratios": width_ratios} if width_ratios else None
        self.axes = self.figure.subplots(1, ncols, gridspec_kw=gridspec, squeeze=False)[0]
        self.image = widgets.Image(format="png", layout=widgets.Layout(width="100%"))
        self.metrics = widgets.HTML()
        self.last_update_ms = float("nan")
        for control in self.controls.values():
            control.observe(self._on_change, names="value")
        self.widget = widgets.VBox(
            [widgets.HBox(list(self.controls.values())), self.metrics, self.image]
        )
        self.update()

    @property
    def values(self) -> dict[str, Any]:
        """The current value of every control, by name."""
        return {name: control.value for name, control in self.controls.items()}

    def _on_change(self, _change: Mapping[str, Any]) -> None:
        self.update()

    def _build(self) -> None:
        """Hook run once before the first frame: fixed layouts, persistent artists, backgrounds."""

    def _frame(self) -> str:
        """Hook: redraw for the current control values; returns the metrics HTML."""
        for ax in self.axes:
            ax.clear()
        return self._draw(self.axes, **self.values)

    def png(self) -> bytes:
        """The figure as PNG bytes, at zlib level 1 (the image is re-sent on every change).

        Explorers that blit keep an Agg canvas in ``self._canvas`` and are encoded from its
        buffer directly; the others are rendered with ``savefig``.
        """
        from PIL import Image

        buffer = io.BytesIO()
        canvas = getattr(self, "_canvas", None)
        if canvas is None:
            self.figure.savefig(buffer, format="png", pil_kwargs={"compress_level": 1})
        else:
            width, height = canvas.get_width_height()
            image = Image.frombuffer(
                "RGBA", (width, height), canvas.buffer_rgba(), "raw", "RGBA", 0, 1
            )
            image.save(buffer, format="png", compress_level=1)
        return buffer.getvalue()

    def update(self) -> float:
        """Recompute, redraw and re-render; returns (and stores) the time taken in ms."""
        start = time.perf_counter()
        if not getattr(self, "_built", False):
            self._build()
            self._built = True
        html = self._frame()
        self.image.value = self.png()
        self.metrics.value = html
        self.last_update_ms = (time.perf_counter() - start) * 1e3
        return self.last_update_ms

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)


def metrics_table(rows: list[tuple[str, ...]], header: tuple[str, ...]) -> str:
    """A small HTML table for an explorer's metrics panel."""
    head = "".join(f"<th style='padding:2px 10px;text-align:left'>{h}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td style='padding:2px 10px'>{c}</td>" for c in row) + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


# --- pipe02: fill-drain (GPipe) and 1F1B schedules, closed form vs simulator -----------------


def fmt_ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


def fmt_pct(fraction: float) -> str:
    return f"{fraction:.1%}"
