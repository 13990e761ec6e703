"""Point-to-point figures (pipe09): programs with their matched messages and blocked operations,
the wait-for graph and its cycle, and a timeline of send buffers owned by transfers in flight.

Each draws a :class:`course_lib.pipeline.p2p.P2PRun` (the result of ``simulate_p2p``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.lines import Line2D
from matplotlib.patches import FancyArrowPatch, Patch, Rectangle

from course_lib.figures.pipeline import SCHEDULE_COLOURS
from course_lib.figures.style import time_unit

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from course_lib.pipeline.p2p import P2PRun

STATUS_COLOURS: dict[str, str] = {"done": "#CDEBC5", "blocked": "#D55E00", "not reached": "white"}
"""Fill of an operation's box: completed, blocked at the end of the run, never reached."""
PROTOCOL_COLOURS: dict[str, str] = {"eager": "#009E73", "rendezvous": "#0072B2"}
"""Arrows of matched messages: copied out at the send (eager) or at the match (rendezvous)."""
WAIT_COLOUR = "#D55E00"
"""Wait-for edges (and corrupted messages): who is stuck on whom."""
COMPUTE_COLOUR = SCHEDULE_COLOURS["F"]
IN_FLIGHT_COLOUR = "#F0E442"


def op_label(op: object, program: tuple = ()) -> str:
    """Short text of an operation for a box: S→1, R←0, iS→1, iR←0, W iS→1, a collective's or a
    compute's name (pipe09)."""
    from course_lib.pipeline.p2p import Collective, Compute, Irecv, Isend, Recv, Send, Wait

    if isinstance(op, Send):
        return f"S→{op.peer}"
    if isinstance(op, Recv):
        return f"R←{op.peer}"
    if isinstance(op, Isend):
        return f"iS→{op.peer}"
    if isinstance(op, Irecv):
        return f"iR←{op.peer}"
    if isinstance(op, Wait):
        for earlier in program:
            if isinstance(earlier, Isend | Irecv) and earlier.handle == op.handle:
                return "W " + op_label(earlier)
        return "W"
    if isinstance(op, Collective):
        return op.name
    if isinstance(op, Compute):
        return op.label or "compute"
    raise TypeError(f"not an operation: {op!r}")


def op_status(run: P2PRun) -> dict[tuple[int, int], str]:
    """(rank, position) -> "done", "blocked" or "not reached" for every operation (pipe09)."""
    status = {
        (r, k): "not reached" for r, program in enumerate(run.programs) for k in range(len(program))
    }
    events = run.events
    for r, k, end in zip(events["rank"], events["position"], events["end"], strict=True):
        status[(int(r), int(k))] = "blocked" if math.isnan(end) else "done"
    return status


@dataclass(frozen=True)
class Arrow:
    """An arrow of a figure in data coordinates: from ``tail`` to ``head``, of ``kind``
    ("eager", "rendezvous", "wait" or "cycle"), bent by ``rad`` (matplotlib's arc3)."""

    tail: tuple[float, float]
    head: tuple[float, float]
    kind: str
    rad: float = 0.0


@dataclass(frozen=True)
class Box:
    """One operation's box in a program grid: centred on (position, rank)."""

    rank: int
    position: int
    label: str
    state: str


def grid_geometry(run: P2PRun) -> tuple[list[Box], list[Arrow], list[Arrow]]:
    """What a program grid draws (pipe09): a box per operation at (position, rank) with its state;
    an arrow per matched message from the send's box to the receive's; an arrow from each blocked
    operation to the current box of each rank it waits for ("cycle" on the wait-for cycle)."""
    status = op_status(run)
    programs = run.programs
    boxes = [
        Box(r, k, op_label(programs[r][k], programs[r]), state) for (r, k), state in status.items()
    ]
    messages = []
    for m in run.messages:
        down = 1.0 if m.dst > m.src else -1.0
        if m.dst == m.src:  # to itself: an arc over the row
            ends = ((m.src_position, m.src - 0.3), (m.dst_position, m.dst - 0.3))
            messages.append(Arrow(*ends, m.protocol, rad=-0.5))
            continue
        tail = (float(m.src_position), m.src + 0.3 * down)
        messages.append(Arrow(tail, (float(m.dst_position), m.dst - 0.3 * down), m.protocol))
    current = {b.rank: b.position for b in run.blocked}
    on_cycle = set(zip(run.cycle, run.cycle[1:], strict=False))
    waits = []
    for b in run.blocked:
        for peer in b.waits_for:
            kind = "cycle" if (b.rank, peer) in on_cycle else "wait"
            x0, y0 = float(b.position), float(b.rank)
            x1, y1 = float(current.get(peer, len(programs[peer]) - 1)), float(peer)
            if y0 == y1:  # waiting for itself: a loop over the box
                waits.append(Arrow((x0 - 0.2, y0 - 0.3), (x0 + 0.2, y0 - 0.3), kind, rad=-1.2))
                continue
            down = 1.0 if y1 > y0 else -1.0  # down the right half of the boxes, up the left half
            tail, head = (x0 + 0.2 * down, y0 + 0.3 * down), (x1 + 0.2 * down, y1 - 0.3 * down)
            waits.append(Arrow(tail, head, kind))
    return boxes, messages, waits


def arrow_style(kind: str) -> dict[str, object]:
    """FancyArrowPatch keywords of an arrow kind (pipe09)."""
    if kind in PROTOCOL_COLOURS:
        return {
            "color": PROTOCOL_COLOURS[kind],
            "linewidth": 1.0,
            "alpha": 0.8,
            "mutation_scale": 8,
        }
    cyclic = kind == "cycle"
    return {
        "color": WAIT_COLOUR,
        "linestyle": "--",
        "linewidth": 2.2 if cyclic else 1.0,
        "mutation_scale": 10,
    }


def box_style(state: str) -> tuple[dict[str, object], str]:
    """(Rectangle keywords, text colour) of a box state (pipe09)."""
    edge = "#999999" if state == "not reached" else "black"
    text = {"blocked": "white", "not reached": "#777777"}.get(state, "black")
    return {"facecolor": STATUS_COLOURS[state], "edgecolor": edge, "linewidth": 0.8}, text


def program_grid(
    run: P2PRun, ax: Axes | None = None, title: str | None = None, *, legend: bool = True
) -> Axes:
    """Each rank's program as a row of boxes (rank 0 on top; green done, orange-red blocked, white
    never reached), matched messages as arrows from send to receive (green eager, blue
    rendezvous), and red dashed arrows from each blocked operation to the rank it waits for, thick
    on the cycle (pipe09)."""
    p = run.num_ranks
    width = max((len(program) for program in run.programs), default=1) or 1
    if ax is None:
        _, ax = plt.subplots(figsize=(1.6 + 1.1 * width, 0.8 + 0.75 * p), layout="constrained")
    boxes, messages, waits = grid_geometry(run)
    for box in boxes:
        style, colour = box_style(box.state)
        ax.add_patch(
            Rectangle(
                (box.position - 0.42, box.rank - 0.3), 0.84, 0.6, **style,
                gid=f"op:{box.rank}:{box.position}:{box.state}",
            )
        )  # fmt: skip
        ax.text(
            box.position, box.rank, box.label, ha="center", va="center", fontsize=8, color=colour
        )
    for arrow in messages + waits:
        ax.add_patch(
            FancyArrowPatch(
                arrow.tail, arrow.head, arrowstyle="-|>", connectionstyle=f"arc3,rad={arrow.rad}",
                gid=f"arrow:{arrow.kind}", **arrow_style(arrow.kind),
            )
        )  # fmt: skip
    ax.set_xlim(-0.6, width - 0.4)
    ax.set_ylim(p - 0.5, -0.5)
    ax.set_yticks(range(p), [f"rank {r}" for r in range(p)])
    ax.set_xticks(range(width))
    ax.set_xlabel("position in the rank's program")
    ax.tick_params(length=0)
    for side in ("top", "right", "left", "bottom"):
        ax.spines[side].set_visible(False)
    if legend:
        grid_legend(ax)
    ax.set_title(title if title is not None else verdict(run), fontsize=10, loc="left")
    return ax


def grid_legend(ax: Axes, **where: object) -> None:
    """The key of a program grid: box states, message protocols, wait-for arrows (pipe09)."""
    handles = [
        Patch(facecolor=STATUS_COLOURS[s], edgecolor="black", label=s) for s in STATUS_COLOURS
    ]
    handles += [Line2D([], [], color=c, label=f"{k} message") for k, c in PROTOCOL_COLOURS.items()]
    handles.append(Line2D([], [], color=WAIT_COLOUR, linestyle="--", label="waits for"))
    where = where or {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0)}
    ax.legend(handles=handles, fontsize=8, frameon=False, **where)


def verdict(run: P2PRun) -> str:
    """A run's outcome in a few words, for titles (pipe09)."""
    if run.completed:
        return "completes"
    if run.cycle:
        return "deadlock: cycle " + " → ".join(map(str, run.cycle))
    if run.mismatch is not None:
        return f"hang: collective {run.mismatch.index} differs across ranks"
    return "hang: waits for a rank that has finished"


@dataclass(frozen=True)
class Edge:
    """A wait-for edge as drawn: from rank ``u`` to rank ``v``, the blocked ``op`` at ``label_at``."""

    u: int
    v: int
    op: str
    cyclic: bool
    label_at: tuple[float, float]


def graph_geometry(run: P2PRun) -> tuple[np.ndarray, list[str], list[Edge]]:
    """What a wait-for graph draws (pipe09): rank positions on the unit circle (rank 0 on top,
    clockwise), each rank's state ("blocked" or "done"), and one edge per (blocked rank, rank it
    waits for), flagged if it lies on the run's cycle."""
    p = run.num_ranks
    angles = np.pi / 2 - 2 * np.pi * np.arange(p) / p
    xy = np.column_stack([np.cos(angles), np.sin(angles)]) if p > 1 else np.zeros((1, 2))
    blocked = {b.rank for b in run.blocked}
    states = ["blocked" if r in blocked else "done" for r in range(p)]
    on_cycle = set(zip(run.cycle, run.cycle[1:], strict=False))
    edges = []
    for b in run.blocked:
        for v in b.waits_for:
            u = b.rank
            mid = (xy[u] + xy[v]) / 2
            normal = np.array([xy[v][1] - xy[u][1], xy[u][0] - xy[v][0]])
            norm = np.linalg.norm(normal)
            at = mid + 0.12 * normal / norm if norm else xy[u] + [0.0, 0.3]
            edges.append(Edge(u, v, b.op, (u, v) in on_cycle, (float(at[0]), float(at[1]))))
    return xy, states, edges


def edge_style(edge: Edge) -> dict[str, object]:
    """FancyArrowPatch keywords of a wait-for edge (pipe09)."""
    return {
        "color": WAIT_COLOUR if edge.cyclic else "#888888",
        "linewidth": 2.2 if edge.cyclic else 1.0,
        "mutation_scale": 12,
        "shrinkA": 14,
        "shrinkB": 14,
        "connectionstyle": "arc3,rad=0.18" if edge.u != edge.v else "arc3,rad=-1.6",
    }


def edge_ends(edge: Edge, xy: np.ndarray) -> tuple[tuple[float, float], tuple[float, float]]:
    """Tail and head of a drawn edge: node to node, or a small loop above a node (pipe09)."""
    if edge.u == edge.v:
        x, y = xy[edge.u]
        return (x - 0.08, y + 0.12), (x + 0.08, y + 0.12)
    return tuple(xy[edge.u]), tuple(xy[edge.v])


LABEL_BOX = {"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none", "alpha": 0.8}


def wait_for_graph(run: P2PRun, ax: Axes | None = None, title: str | None = None) -> Axes:
    """The wait-for graph: ranks on a circle (rank 0 on top, clockwise; orange-red blocked, green
    finished), an arrow from each blocked rank to each rank it waits for, labelled with the
    blocked operation; the cycle's arrows thick and red, its ranks outlined (pipe09)."""
    if ax is None:
        _, ax = plt.subplots(figsize=(3.6, 3.6), layout="constrained")
    xy, states, edges = graph_geometry(run)
    on_cycle = set(run.cycle)
    for edge in edges:
        style = edge_style(edge)
        if edge.u == edge.v:
            style = {**style, "shrinkA": 0, "shrinkB": 0}
        ax.add_patch(
            FancyArrowPatch(
                *edge_ends(edge, xy), arrowstyle="-|>", gid="wait:cycle" if edge.cyclic else "wait",
                **style,
            )
        )  # fmt: skip
        ax.text(*edge.label_at, edge.op, fontsize=7, ha="center", va="center", bbox=LABEL_BOX)
    ax.scatter(
        xy[:, 0], xy[:, 1], s=520, c=[STATUS_COLOURS[s] for s in states], edgecolors="black",
        linewidths=[2.0 if r in on_cycle else 0.8 for r in range(len(states))], zorder=3,
        gid="ranks",
    )  # fmt: skip
    for r, state in enumerate(states):
        colour = "white" if state == "blocked" else "black"
        ax.text(*xy[r], str(r), ha="center", va="center", fontsize=10, zorder=4, color=colour)
    ax.set_xlim(-1.45, 1.45)
    ax.set_ylim(-1.45, 1.45)
    ax.set_aspect("equal")
    ax.set_axis_off()
    ax.set_title(title if title is not None else verdict(run), fontsize=10)
    return ax


def wait_for_graphs(runs: Mapping[str, P2PRun]) -> Figure:
    """One wait-for graph per run, side by side, titled by the mapping's keys (pipe09)."""
    fig, axes = plt.subplots(1, len(runs), figsize=(3.8 * len(runs), 3.9), layout="constrained")
    for ax, (name, run) in zip(np.atleast_1d(axes), runs.items(), strict=True):
        wait_for_graph(run, ax=ax, title=f"{name}\n{verdict(run)}")
    return fig


def program_grids(runs: Mapping[str, P2PRun]) -> Figure:
    """One program grid per run, stacked, titled by the mapping's keys (pipe09)."""
    rows = [run.num_ranks for run in runs.values()]
    width = max(max(len(prog) for prog in run.programs) for run in runs.values())
    fig, axes = plt.subplots(
        len(runs), 1, figsize=(3.2 + 1.1 * width, 1.0 + 0.8 * sum(rows)),
        height_ratios=rows, layout="constrained", squeeze=False,
    )  # fmt: skip
    for ax, (name, run) in zip(axes[:, 0], runs.items(), strict=True):
        program_grid(run, ax=ax, title=f"{name}: {verdict(run)}")
    return fig


def buffer_timeline(run: P2PRun, ax: Axes | None = None, title: str | None = None) -> Axes:
    """A time axis per rank: compute boxes (blue, labelled), time spent blocked in a send,
    receive or wait (grey), each send buffer while a transfer owns it (yellow, from the isend to
    the moment its data is read), and messages as arrows from that moment to the receive: green
    if the receiver got the microbatch that was sent, red and labelled if a later write had
    replaced it (pipe09)."""
    p = run.num_ranks
    events = run.events
    span = max(run.makespan, 1e-12)
    scale, unit = time_unit(span)
    if ax is None:
        _, ax = plt.subplots(figsize=(10, 1.2 + 0.9 * p), layout="constrained")
    for row in events.itertuples():
        end = row.end if not math.isnan(row.end) else span
        if row.kind == "Compute":
            ax.broken_barh([(row.start, end - row.start)], (row.rank - 0.3, 0.5),
                           facecolors=COMPUTE_COLOUR, edgecolors="white", linewidths=0.8, gid=f"compute:{row.rank}")  # fmt: skip
            label = row.op.replace(" → ", "\n→")  # "F3\n→buf1" for a compute that writes a buffer
            ax.text(
                row.start + (end - row.start) / 2,
                row.rank - 0.05,
                label,
                ha="center",
                va="center",
                fontsize=8,
            )
        elif end > row.start:
            ax.broken_barh([(row.start, end - row.start)], (row.rank - 0.3, 0.5),
                           facecolors="#BBBBBB", hatch="///", edgecolors="white", gid=f"waiting:{row.rank}")  # fmt: skip
    bands = [sorted({getattr(op, "buffer", "") for op in prog} - {""}) for prog in run.programs]
    for r, names in enumerate(bands):
        for k, name in enumerate(names):
            ax.text(0, r + 0.275 + 0.14 * k, f"{name} ", ha="right", va="center", fontsize=9)
    for message in run.messages:
        op = run.programs[message.src][message.src_position]
        buffer = getattr(op, "buffer", "")
        if buffer and message.read_at > message.posted:
            y = message.src + 0.22 + 0.14 * bands[message.src].index(buffer)
            ax.broken_barh([(message.posted, message.read_at - message.posted)], (y, 0.11),
                           facecolors=IN_FLIGHT_COLOUR, edgecolors="white", linewidths=0.8,
                           gid=f"in_flight:{message.src}:{buffer}")  # fmt: skip
        colour = WAIT_COLOUR if message.corrupted else PROTOCOL_COLOURS["eager"]
        ax.add_patch(
            FancyArrowPatch(
                (message.read_at, message.src + 0.2), (message.received, message.dst - 0.3),
                arrowstyle="-|>", mutation_scale=9, color=colour, linewidth=1.6 if message.corrupted else 0.9,
                gid="message:corrupted" if message.corrupted else "message:ok",
            )
        )  # fmt: skip
        if message.corrupted:
            ax.text(message.received + 0.012 * span, message.dst - 0.4,
                    f"gets mb {message.delivered}, not {message.sent}", ha="left", va="center",
                    fontsize=8, color=WAIT_COLOUR, bbox=LABEL_BOX, zorder=5)  # beside the arrowhead  # fmt: skip
    ax.set_xlim(0, span * 1.04)
    ax.set_ylim(p - 0.5, -0.55)
    ax.set_yticks(range(p), [f"rank {r}" for r in range(p)])
    ax.xaxis.set_major_formatter(plt.FuncFormatter(lambda t, _pos: f"{t * scale:g}"))
    ax.set_xlabel(f"time ({unit})")
    ax.tick_params(axis="y", length=0)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    handles = [
        Patch(facecolor=COMPUTE_COLOUR, label="compute"),
        Patch(facecolor="#BBBBBB", hatch="///", label="blocked"),
        Patch(facecolor=IN_FLIGHT_COLOUR, label="buffer owned by a transfer"),
        Line2D([], [], color=PROTOCOL_COLOURS["eager"], label="delivered as sent"),
        Line2D([], [], color=WAIT_COLOUR, label="overwritten before it was read"),
    ]
    ax.legend(
        handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False
    )
    corrupted = len(run.corrupted)
    default = f"{corrupted} of {len(run.messages)} messages delivered another microbatch"
    ax.set_title(title if title is not None else default, fontsize=10, loc="left")
    return ax
