"""ipywidgets explorers built on the course's models.

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

    def update(self) -> float:
        """Recompute, redraw and re-render; returns (and stores) the time taken in ms."""
        start = time.perf_counter()
        for ax in self.axes:
            ax.clear()
        html = self._draw(self.axes, **self.values)
        buffer = io.BytesIO()
        self.figure.savefig(buffer, format="png")
        self.image.value = buffer.getvalue()
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
