"""Tests for course_lib.figures.p2p (pipe09): what is drawn is the run's numbers."""

from __future__ import annotations

import io
import math

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.patches import FancyArrowPatch, Rectangle

from course_lib.figures.p2p import (
    buffer_timeline,
    graph_geometry,
    grid_geometry,
    op_label,
    op_status,
    program_grid,
    program_grids,
    verdict,
    wait_for_graph,
    wait_for_graphs,
)
from course_lib.pipeline.p2p import (
    ORDERS,
    Collective,
    Compute,
    Irecv,
    Isend,
    Recv,
    Send,
    Wait,
    exchange_programs,
    simulate_p2p,
)

KiB, MiB = 2**10, 2**20


def _runs():
    """Completed, deadlocked (with and without a cycle), mismatched and self-waiting runs."""
    runs = [
        simulate_p2p(exchange_programs(p, 4 * MiB, order, ring=ring), limit)
        for order in ORDERS
        for p in (2, 3, 5)
        for ring in (True, False)
        for limit in (0, 64 * KiB)
    ]
    runs.append(simulate_p2p([[Collective("a")], [Collective("b")]]))
    runs.append(simulate_p2p([[Recv(1, 8)], [Compute(1e-3)]]))
    runs.append(simulate_p2p([[Send(0, MiB), Recv(0, MiB)]]))
    return runs


def _png(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def test_op_labels():
    program = (Isend(2, 8, "h"), Irecv(1, 8, "g"), Wait("g"), Wait("h"))
    assert [op_label(op, program) for op in program] == ["iS→2", "iR←1", "W iR←1", "W iS→2"]
    assert op_label(Send(3, 8)) == "S→3" and op_label(Recv(0, 8)) == "R←0"
    assert op_label(Collective("all_reduce")) == "all_reduce"
    assert op_label(Compute(1.0, label="F2")) == "F2" and op_label(Compute(1.0)) == "compute"
    with pytest.raises(TypeError, match="not an operation"):
        op_label("send")


def test_grid_geometry_is_the_run():
    """Brute force on the run: a box per operation, done iff it ended, blocked iff the run says so;
    an arrow per matched message between its two boxes; a wait arrow per (blocked rank, rank it
    waits for), 'cycle' exactly on the cycle's edges."""
    for run in _runs():
        boxes, messages, waits = grid_geometry(run)
        assert len(boxes) == sum(map(len, run.programs))
        blocked = {(b.rank, b.position) for b in run.blocked}
        ended = {
            (int(r), int(k))
            for r, k, e in run.events[["rank", "position", "end"]].values
            if not math.isnan(e)
        }
        for box in boxes:
            key = (box.rank, box.position)
            expected = "blocked" if key in blocked else "done" if key in ended else "not reached"
            assert box.state == expected == op_status(run)[key]
        assert len(messages) == len(run.messages)
        for arrow, message in zip(messages, run.messages, strict=True):
            assert arrow.kind == message.protocol
            assert round(arrow.tail[0]) == message.src_position
            assert round(arrow.head[0]) == message.dst_position
        pairs = [(b.rank, q) for b in run.blocked for q in b.waits_for]
        assert len(waits) == len(pairs)
        on_cycle = set(zip(run.cycle, run.cycle[1:], strict=False))
        assert [w.kind for w in waits] == ["cycle" if p in on_cycle else "wait" for p in pairs]


def test_program_grid_draws_the_geometry():
    run = simulate_p2p(exchange_programs(5, 4 * MiB, "even_sends_first"), 64 * KiB)
    ax = program_grid(run)
    boxes = [
        p for p in ax.patches if isinstance(p, Rectangle) and (p.get_gid() or "").startswith("op:")
    ]
    assert len(boxes) == 20
    assert sum(p.get_gid().endswith(":blocked") for p in boxes) == len(run.blocked) == 5
    arrows = [p for p in ax.patches if isinstance(p, FancyArrowPatch)]
    assert sum(p.get_gid() == "arrow:cycle" for p in arrows) == 2  # 0 → 4 and 4 → 0
    assert sum(p.get_gid() == "arrow:rendezvous" for p in arrows) == len(run.messages)
    assert ax.get_title(loc="left") == verdict(run) == "deadlock: cycle 0 → 4 → 0"
    assert [t.get_text() for t in ax.get_yticklabels()] == [f"rank {r}" for r in range(5)]
    assert _png(ax.figure)
    plt.close(ax.figure)


def test_graph_geometry_is_the_wait_for_graph():
    for run in _runs():
        xy, states, edges = graph_geometry(run)
        assert xy.shape == (run.num_ranks, 2)
        if run.num_ranks > 1:
            assert np.allclose(np.hypot(xy[:, 0], xy[:, 1]), 1.0) and np.allclose(xy[0], [0, 1])
        assert states == ["blocked" if r in {b.rank for b in run.blocked} else "done"
                          for r in range(run.num_ranks)]  # fmt: skip
        assert sorted((e.u, e.v) for e in edges) == sorted(run.wait_for_graph().edges)
        on_cycle = set(zip(run.cycle, run.cycle[1:], strict=False))
        assert all(e.cyclic == ((e.u, e.v) in on_cycle) for e in edges)


def test_wait_for_graph_draws_edges_and_ranks():
    run = simulate_p2p(exchange_programs(4, 4 * MiB, "send_first"), 64 * KiB)
    ax = wait_for_graph(run)
    arrows = [p for p in ax.patches if isinstance(p, FancyArrowPatch)]
    assert [p.get_gid() for p in arrows] == ["wait:cycle"] * 4
    labels = sorted(t.get_text() for t in ax.texts)
    assert labels == sorted(["0", "1", "2", "3"] + [b.op for b in run.blocked])
    assert ax.get_title() == "deadlock: cycle 0 → 1 → 2 → 3 → 0"
    self_wait = wait_for_graph(simulate_p2p([[Send(0, MiB), Recv(0, MiB)]]))
    assert [p.get_gid() for p in self_wait.patches] == ["wait:cycle"]
    plt.close("all")


def test_multi_panel_figures():
    runs = {
        "a": simulate_p2p(exchange_programs(3, 8, "even_odd"), 0),
        "b": simulate_p2p(exchange_programs(4, MiB, "recv_first"), 0),
    }
    fig = wait_for_graphs(runs)
    assert [ax.get_title() for ax in fig.axes] == ["a\ncompletes", f"b\n{verdict(runs['b'])}"]
    fig = program_grids(runs)
    assert [ax.get_title(loc="left") for ax in fig.axes] == [
        "a: completes",
        f"b: {verdict(runs['b'])}",
    ]
    assert _png(fig)
    plt.close("all")


def _reused(m=5):
    r0 = []
    for j in range(m):
        r0.append(Compute(1e-3, buffer="buf", microbatch=j, label=f"F{j}"))
        if j:
            r0.append(Wait(f"s{j - 1}"))
        r0.append(Isend(1, 4 * MiB, f"s{j}", buffer="buf"))
    r0.append(Wait(f"s{m - 1}"))
    r1 = [op for j in range(m) for op in (Recv(0, 4 * MiB), Compute(1.5e-3, label=f"G{j}"))]
    return [r0, r1]


def test_buffer_timeline_marks_the_corrupted_messages():
    run = simulate_p2p(_reused(), 64 * KiB)
    assert run.corrupted
    ax = buffer_timeline(run)
    gids = [c.get_gid() for c in ax.collections] + [p.get_gid() for p in ax.patches]
    assert gids.count("compute:0") == 5 and gids.count("compute:1") == 5
    assert gids.count("message:corrupted") == len(run.corrupted)
    assert gids.count("message:ok") == len(run.messages) - len(run.corrupted)
    in_flight = [m for m in run.messages if m.read_at > m.posted]
    assert gids.count("in_flight:0:buf") == len(in_flight)
    texts = [t.get_text() for t in ax.texts]
    for m in run.corrupted:
        assert f"gets mb {m.delivered}, not {m.sent}" in texts
    assert (
        ax.get_title(loc="left")
        == f"{len(run.corrupted)} of 5 messages delivered another microbatch"
    )
    assert _png(ax.figure)
    eager = buffer_timeline(simulate_p2p(_reused(), 8 * MiB))
    assert not [p for p in eager.patches if p.get_gid() == "message:corrupted"]
    plt.close("all")
