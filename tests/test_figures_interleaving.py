"""Tests for course_lib.figures.interleaving (pipe04's figures): each draws what its model says."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest

from course_lib.figures.interleaving import (
    chunk_placement,
    crossing_chain,
    interleaved_grids,
    step_time_curves,
)
from course_lib.pipeline import interleaved_1f1b, simulate
from course_lib.pipeline.interleaving import (
    best_chunks_per_rank,
    crossings_per_microbatch,
    rank_layers,
    step_times,
)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _by_gid(fig) -> dict:
    found = {}
    for ax in fig.axes:
        for artist in [*ax.collections, *ax.lines]:
            if artist.get_gid():
                found[artist.get_gid()] = artist
    return found


def test_chunk_placement_draws_each_rank_its_layers():
    """16 layers, 4 ranks, 2 chunks: rank r's boxes cover exactly rank_layers(16, 4, 2, r),
    chunk c of rank r starting at layer 2(c·4 + r)."""
    ax = chunk_placement(16, 4, 2)
    groups = _by_gid(ax.figure)
    for rank in range(4):
        covered = []
        for c in range(2):
            start = groups[f"rank{rank}:chunk{c}"].get_paths()[0].vertices[:, 0].min()
            assert start == 2 * (c * 4 + rank)
            covered += list(range(int(start), int(start) + 2))
        assert covered == rank_layers(16, 4, 2, rank).tolist()
    labels = sorted(t.get_text() for t in ax.texts)
    assert labels == sorted(f"stage {k}" for k in range(8))


def test_interleaved_grids_hatch_the_later_chunks_on_one_time_axis():
    """v = 1 and v = 2 on one axis: the v = 2 panel hatches one box per action of chunk >= 1 on
    each rank; both panels span the longer makespan."""
    runs = {f"v = {v}": simulate(interleaved_1f1b(4, 8, v), 1.0 / v, 2.0 / v) for v in (1, 2)}
    fig = interleaved_grids(runs)
    assert len(fig.axes) == 2
    span = max(run.makespan for run in runs.values())
    assert all(ax.get_xlim() == (0.0, span) for ax in fig.axes)
    bottom = fig.axes[1]
    hatched = {c.get_gid(): c for c in bottom.collections if "later" in (c.get_gid() or "")}
    events = runs["v = 2"].events
    for rank in range(4):
        mine = events[(events["rank"] == rank) & (events["stage"] >= 4)]
        assert len(hatched[f"rank{rank}:later-chunks"].get_paths()) == len(mine)
    assert not [c for c in fig.axes[0].collections if "later" in (c.get_gid() or "")]
    assert "18.75%" in bottom.get_title(loc="left")
    assert "37.50%" in fig.axes[0].get_title(loc="left")
    with pytest.raises(ValueError, match="runs"):
        interleaved_grids({})


@pytest.mark.parametrize("p, g", [(8, 4), (4, 4), (6, 2), (1, 1)])
def test_crossing_chain_draws_each_hand_off_once(p, g):
    """One segment per hand-off between ranks, split into node and rank colours as
    crossings_per_microbatch counts them, for v = 1 and v = 3."""
    fig = crossing_chain(p, (1, 3), g)
    groups = _by_gid(fig)
    for v in (1, 3):
        count = crossings_per_microbatch(p, v, g)
        node = groups.get(f"hops:v={v}:node")
        rank = groups.get(f"hops:v={v}:rank")
        n_node = len(node.get_segments()) if node is not None else 0
        n_rank = len(rank.get_segments()) if rank is not None else 0
        assert n_node == count.between_nodes
        assert n_node + n_rank == (v * p - 1)  # every hop drawn; with p = 1 all stay on rank 0
        assert len(groups[f"stages:v={v}"].get_offsets()) == v * p
    with pytest.raises(ValueError, match="ranks_per_node"):
        crossing_chain(8, (2,), 3)


def test_step_time_curves_plot_the_simulated_steps_and_the_best_v():
    """Each line is step_times(...) in ms; the star sits at best_chunks_per_rank; the closed-form
    crosses are NaN at v = 1 with latency (plain 1F1B) and where δ > t_f/v."""
    chunks = (1, 2, 4, 8)
    deltas = (0.0, 0.2e-3)
    ax = step_time_curves(8, 16, 1e-3, 2e-3, latencies=deltas, chunks=chunks)
    groups = _by_gid(ax.figure)
    for delta in deltas:
        times = step_times(8, 16, 1e-3, 2e-3, delta, chunks)
        line = groups[f"step:delta={delta:g}"]
        assert list(line.get_xdata()) == list(chunks)
        assert np.allclose(line.get_ydata(), [times[v] * 1e3 for v in chunks])
        best = best_chunks_per_rank(8, 16, 1e-3, 2e-3, delta, chunks)
        assert list(groups[f"best:delta={delta:g}"].get_xdata()) == [best]
    closed = groups["closed:delta=0.0002"].get_ydata()
    assert np.isnan(closed[0]) and np.isnan(closed[3])  # v = 1; v = 8 with t_f/v = 0.125 ms
    assert np.allclose(closed[1:3], [step_times(8, 16, 1e-3, 2e-3, 0.2e-3, (v,))[v] * 1e3
                                     for v in (2, 4)])  # fmt: skip
    assert np.allclose(groups["closed:delta=0"].get_ydata(), groups["step:delta=0"].get_ydata())
    with pytest.raises(ValueError, match="latencies"):
        step_time_curves(8, 16, 1e-3, 2e-3, latencies=())
