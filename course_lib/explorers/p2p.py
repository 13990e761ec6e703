"""pipe09's explorer: a neighbour exchange's order, size and eager limit -> completes or deadlocks."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import ipywidgets as widgets
import numpy as np

from course_lib.explorers.base import Explorer, metrics_table

KiB, MiB = 2**10, 2**20
SIZES: dict[str, int] = {
    "1 KiB": KiB,
    "4 KiB": 4 * KiB,
    "16 KiB": 16 * KiB,
    "64 KiB": 64 * KiB,
    "256 KiB": 256 * KiB,
    "1 MiB": MiB,
    "4 MiB": 4 * MiB,
    "16 MiB": 16 * MiB,
}
"""Message sizes the explorer offers (bytes)."""
EAGER_LIMITS: dict[str, int] = {
    "0 B: synchronous (MPI_Ssend)": 0,
    "4 KiB": 4 * KiB,
    "64 KiB": 64 * KiB,
    "128 KiB (MPICH ch3 default)": 128 * KiB,
    "1 MiB": MiB,
}
"""Eager limits the explorer offers (bytes); MPICH's CH3 device (its default device before MPICH
3.4, which made ch4 the default) switches to rendezvous once a message and its eager-send header
exceed MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE, 131,072 bytes by default."""
ORDER_LABELS: dict[str, str] = {
    "send first (all ranks)": "send_first",
    "receive first (all ranks)": "recv_first",
    "isend + wait at once": "isend_wait",
    "even ranks send both first": "even_sends_first",
    "post all, then wait (batched)": "nonblocking",
}
"""Dropdown label -> course_lib.pipeline.p2p.exchange_programs order. Megatron-LM's "even_odd"
order is left out on purpose: writing an order that survives odd rings is Exercise 3."""


class P2PExplorer(Explorer):
    """Program grid and wait-for graph of a neighbour exchange (pipe09).

    Each rank sends a message to its next and previous rank and receives one from each, in the
    chosen order, on a ring (rank p - 1 wraps to rank 0) or a chain. ``simulate_p2p`` runs it at
    the chosen eager limit and at 0 (synchronous sends): a program that completes only thanks to
    eager sends is what the MPI standard calls unsafe. ``last_metrics`` holds both verdicts, the
    cycle and the protocol counts.

    Built for speed (< 100 ms per change; benchmarks/bench_p2p_explorer.py): the figure has fixed
    axes and one background per number of ranks (frames, rank labels, the key); a change restores
    it and draws pooled artists (boxes, labels, arrows) laid out by
    ``course_lib.figures.p2p.grid_geometry`` and ``graph_geometry``, the lesson's figures' own
    geometry.
    """

    GRID_RECT = (0.075, 0.2, 0.6, 0.64)
    GRAPH_RECT = (0.70, 0.04, 0.29, 0.82)
    MAX_OPS = 8
    MAX_RANKS = 8
    MAX_ARROWS = 4 * MAX_RANKS * 2

    def __init__(self, controls: Mapping[str, widgets.ValueWidget]) -> None:
        self.last_metrics: dict[str, Any] = {}
        super().__init__(controls, self._draw_frame, figsize=(10.5, 4.2), dpi=72)

    def _build(self) -> None:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.patches import FancyArrowPatch, Rectangle

        from course_lib.figures.p2p import LABEL_BOX, grid_legend

        fig = self.figure = Figure(figsize=self.figure.get_size_inches(), dpi=self.figure.dpi)
        self._canvas = FigureCanvasAgg(fig)
        grid = fig.add_axes(self.GRID_RECT)
        graph = fig.add_axes(self.GRAPH_RECT)
        self.axes = [grid, graph]
        grid.set_xlabel("position in the rank's program")
        grid.tick_params(length=0)
        for side in grid.spines.values():
            side.set_visible(False)
        grid_legend(grid, loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=6)
        graph.set_xlim(-1.45, 1.45)
        graph.set_ylim(-1.45, 1.45)
        graph.set_aspect("equal")
        graph.set_axis_off()
        graph.set_title("wait-for graph", fontsize=10)
        self._backgrounds: dict[int, Any] = {}
        self._boxes = [
            grid.add_patch(Rectangle((0, 0), 0.84, 0.6, visible=False))
            for _ in range(self.MAX_OPS * self.MAX_RANKS)
        ]
        self._labels = [
            grid.text(0, 0, "", ha="center", va="center", fontsize=8, visible=False)
            for _ in self._boxes
        ]
        self._arrows = [
            grid.add_patch(FancyArrowPatch((0, 0), (1, 1), arrowstyle="-|>", visible=False))
            for _ in range(self.MAX_ARROWS)
        ]
        self._edges = [
            graph.add_patch(FancyArrowPatch((0, 0), (1, 1), arrowstyle="-|>", visible=False))
            for _ in range(2 * self.MAX_RANKS)
        ]
        self._edge_labels = [
            graph.text(0, 0, "", fontsize=7, ha="center", va="center", bbox=LABEL_BOX)
            for _ in self._edges
        ]
        self._nodes = graph.scatter(
            [0.0] * self.MAX_RANKS, [0.0] * self.MAX_RANKS, s=420, edgecolors="black", zorder=3
        )
        self._node_labels = [
            graph.text(0, 0, "", ha="center", va="center", fontsize=10, zorder=4)
            for _ in range(self.MAX_RANKS)
        ]
        self._title = grid.text(0.0, 1.04, "", transform=grid.transAxes, fontsize=10)

    def _pooled(self) -> list[Any]:
        return [
            *self._boxes, *self._labels, *self._arrows, *self._edges, *self._edge_labels,
            *self._node_labels, self._nodes, self._title,
        ]  # fmt: skip

    def _background(self, num_ranks: int, width: int) -> Any:
        """The static figure with ``num_ranks`` rows and ``width`` columns, cached per shape; the
        grid's limits and ticks are set on every call, since the pooled artists draw in them."""
        key = (num_ranks, width)
        grid = self.axes[0]  # limits and ticks on every frame: a cached background is pixels only
        grid.set_xlim(-0.6, width - 0.4)
        grid.set_xticks(range(width))
        grid.set_ylim(num_ranks - 0.5, -0.5)
        grid.set_yticks(range(num_ranks), [f"rank {r}" for r in range(num_ranks)])
        if key not in self._backgrounds:
            for artist in self._pooled():
                artist.set_visible(False)
            self._canvas.draw()
            self._backgrounds[key] = self._canvas.copy_from_bbox(self.figure.bbox)
        return self._backgrounds[key]

    def _frame(self) -> str:
        return self._draw_frame(None, **self.values)

    def _draw_frame(
        self,
        _axes: Any,
        *,
        order: str,
        num_ranks: int,
        message: str,
        eager_limit: str,
        topology: str,
    ) -> str:
        from course_lib.figures.p2p import (
            STATUS_COLOURS,
            arrow_style,
            box_style,
            edge_ends,
            edge_style,
            graph_geometry,
            grid_geometry,
            verdict,
        )

        key, nbytes, limit = ORDER_LABELS[order], SIZES[message], EAGER_LIMITS[eager_limit]
        ring = topology == "ring"
        run = _cached_run(key, num_ranks, nbytes, limit, ring)
        strict = run if limit == 0 else _cached_run(key, num_ranks, nbytes, 0, ring)
        canvas, draw = self._canvas, self.figure.draw_artist
        width = max(len(program) for program in run.programs)
        canvas.restore_region(self._background(num_ranks, width))

        boxes, messages, waits = grid_geometry(run)
        for box, patch, label in zip(boxes, self._boxes, self._labels, strict=False):
            style, colour = box_style(box.state)
            patch.set(xy=(box.position - 0.42, box.rank - 0.3), visible=True, **style)
            label.set(x=box.position, y=box.rank, text=box.label, color=colour, visible=True)
            draw(patch)
            draw(label)
        for arrow, patch in zip(messages + waits, self._arrows, strict=False):
            patch.set_positions(arrow.tail, arrow.head)
            patch.set_connectionstyle(f"arc3,rad={arrow.rad}")
            patch.set(linestyle="-", alpha=1.0, visible=True)
            patch.set(**arrow_style(arrow.kind))
            draw(patch)
        self._title.set(text=verdict(run), visible=True)
        draw(self._title)

        xy, states, edges = graph_geometry(run)
        for edge, patch, label in zip(edges, self._edges, self._edge_labels, strict=False):
            style = edge_style(edge)
            patch.set_connectionstyle(style.pop("connectionstyle"))
            shrink = 0.0 if edge.u == edge.v else 1.0  # FancyArrowPatch's shrinks are attributes
            patch.shrinkA, patch.shrinkB = (
                shrink * style.pop("shrinkA"),
                shrink * style.pop("shrinkB"),
            )
            patch.set_positions(*edge_ends(edge, xy))
            patch.set(visible=True, **style)
            label.set(x=edge.label_at[0], y=edge.label_at[1], text=edge.op, visible=True)
            draw(patch)
            draw(label)
        on_cycle = set(run.cycle)
        self._nodes.set_offsets(xy)
        self._nodes.set_facecolors([STATUS_COLOURS[s] for s in states])
        self._nodes.set_linewidths([2.0 if r in on_cycle else 0.8 for r in range(num_ranks)])
        self._nodes.set_visible(True)
        draw(self._nodes)
        for r, (label, state) in enumerate(zip(self._node_labels, states, strict=False)):
            colour = "white" if state == "blocked" else "black"
            label.set(x=xy[r][0], y=xy[r][1], text=str(r), color=colour, visible=True)
            draw(label)

        protocols = [m.protocol for m in run.messages]
        self.last_metrics = {
            "completed": run.completed,
            "completed_synchronous": strict.completed,
            "cycle": run.cycle,
            "eager": protocols.count("eager"),
            "rendezvous": protocols.count("rendezvous"),
        }
        if run.completed and strict.completed:
            safety = "completes at every eager limit: safe in the MPI standard's sense"
        elif run.completed:
            safety = (
                "<b>completes only because the sends are eager</b>: with synchronous sends "
                "(eager limit 0) it deadlocks, so the MPI standard calls it unsafe"
            )
        else:
            safety = "deadlocks"
        cycle = " → ".join(map(str, run.cycle)) if run.cycle else "none"
        rows = [
            ("verdict", run.describe().splitlines()[0]),
            ("at eager limit 0 (synchronous)", "completes" if strict.completed else "deadlocks"),
            ("wait-for cycle", cycle),
            (
                "matched messages",
                f"{protocols.count('eager')} eager, {protocols.count('rendezvous')} rendezvous",
            ),
        ]
        head = (
            f"<b>{num_ranks} ranks on a {topology}, {message} messages, eager limit "
            f"{eager_limit}</b> · {safety}"
        )
        return head + metrics_table(rows, ("", ""))

    def png(self) -> bytes:
        """The Agg buffer as an RGB PNG (pipe02's fast encoder)."""
        from course_lib.explorers.fill_drain import _png_rgb

        return _png_rgb(np.asarray(self._canvas.buffer_rgba()))


@functools.lru_cache(maxsize=256)
def _cached_run(order: str, num_ranks: int, nbytes: int, eager_limit: int, ring: bool) -> Any:
    from course_lib.pipeline.p2p import exchange_programs, simulate_p2p

    programs = exchange_programs(num_ranks, nbytes, order, ring=ring)
    return simulate_p2p(programs, eager_limit)


def p2p_explorer(
    order: str = "send_first",
    num_ranks: int = 4,
    message: str = "4 MiB",
    eager_limit: str = "64 KiB",
    topology: str = "ring",
) -> P2PExplorer:
    """Explorer: exchange order, ranks p (2-8), message size, eager limit, ring or chain ->
    program grid, wait-for graph and verdict, also at eager limit 0 (pipe09).

    ``order`` is one of ORDER_LABELS' exchange_programs orders ("send_first", "recv_first",
    "isend_wait", "even_sends_first", "nonblocking"); ``message`` one of SIZES' labels and
    ``eager_limit`` one of EAGER_LIMITS' labels.
    """
    labels = {v: k for k, v in ORDER_LABELS.items()}
    if order not in labels:
        raise ValueError(f"order must be one of {sorted(labels)}, got {order!r}")
    if type(num_ranks) is not int or not 2 <= num_ranks <= 8:
        raise ValueError(f"num_ranks must be an int from 2 to 8, got {num_ranks!r}")
    if message not in SIZES:
        raise ValueError(f"message must be one of {list(SIZES)}, got {message!r}")
    if eager_limit not in EAGER_LIMITS:
        raise ValueError(f"eager_limit must be one of {list(EAGER_LIMITS)}, got {eager_limit!r}")
    if topology not in ("ring", "chain"):
        raise ValueError(f"topology must be 'ring' or 'chain', got {topology!r}")
    wide = {"description_width": "initial"}
    controls = {
        "order": widgets.Dropdown(
            options=list(ORDER_LABELS), value=labels[order], description="order", style=wide
        ),
        "num_ranks": widgets.IntSlider(
            value=num_ranks, min=2, max=8, description="ranks p", style=wide
        ),
        "message": widgets.SelectionSlider(
            options=list(SIZES), value=message, description="message", style=wide
        ),
        "eager_limit": widgets.Dropdown(
            options=list(EAGER_LIMITS), value=eager_limit, description="eager limit", style=wide
        ),
        "topology": widgets.ToggleButtons(options=["ring", "chain"], value=topology),
    }
    return P2PExplorer(controls)
