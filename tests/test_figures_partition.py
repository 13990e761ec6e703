"""Tests for course_lib.figures.partition (pipe01's figures): what each bar and line shows."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.colors import to_hex

from course_lib.figures.partition import (
    MEMORY_COLOURS,
    TIME_COLOURS,
    model_profile,
    stage_memory_bars,
    stage_time_bars,
)
from course_lib.pipeline.partition import (
    even_blocks,
    gpt_spec,
    min_max_partition,
    stage_costs,
    stage_memory,
    stage_sums,
    stage_times,
)

SPEC = gpt_spec()
BETA = 25e9
EQUAL = even_blocks(SPEC, 4)
BEST = min_max_partition(stage_costs(SPEC, 4, BETA, 8), 4).boundaries


def _patches(ax, gid: str):
    return [p for p in ax.patches if p.get_gid() == gid]


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def test_model_profile_bars_are_the_spec():
    """One compute bar per layer (ms), state at 16 B/param and stash (GiB), cuts in MiB."""
    top, mid, low = model_profile(SPEC)
    heights = [p.get_height() for p in _patches(top, "compute")]
    assert heights == pytest.approx(SPEC.layer_times * 1e3)
    state = [p.get_height() for p in _patches(mid, "state")]
    assert state == pytest.approx(16 * SPEC.num_params / 2**30)
    stash = [p.get_height() for p in _patches(mid, "stash")]
    assert stash == pytest.approx(SPEC.activation_bytes / 2**30)
    (line,) = [line for line in low.lines if line.get_gid() == "cuts"]
    assert line.get_ydata() == pytest.approx(SPEC.cut_bytes / 2**20)
    assert line.get_xdata() == pytest.approx(np.arange(1, SPEC.num_layers) - 0.5)
    assert low.get_yscale() == "log"


def test_stage_time_bars_stack_forward_backward_transfer():
    """Per partition and stage the three segments stack to stage_times; dashed lines at each
    partition's slowest stage."""
    ax = stage_time_bars(SPEC, {"equal": EQUAL, "best": BEST}, BETA)
    for name, bounds in (("equal", EQUAL), ("best", BEST)):
        forward = _patches(ax, f"{name}:forward")
        backward = _patches(ax, f"{name}:backward")
        transfer = _patches(ax, f"{name}:transfer")
        assert len(forward) == len(backward) == len(transfer) == 4
        f = stage_sums(SPEC.forward_times, bounds) * 1e3
        assert [p.get_height() for p in forward] == pytest.approx(f)
        tops = [p.get_y() + p.get_height() for p in transfer]
        assert tops == pytest.approx(stage_times(SPEC, bounds, BETA) * 1e3)
        assert to_hex(forward[0].get_facecolor()) == TIME_COLOURS["forward"].lower()
        assert to_hex(transfer[0].get_facecolor()) == TIME_COLOURS["transfer"].lower()
        (line,) = [ln for ln in ax.lines if ln.get_gid() == f"bottleneck:{name}"]
        assert line.get_ydata()[0] == pytest.approx(stage_times(SPEC, bounds, BETA).max() * 1e3)
    assert [t.get_text() for t in ax.get_xticklabels()] == [f"stage {s}" for s in range(4)]


@pytest.mark.parametrize("limit", [None, 16 * 2**30])
def test_stage_memory_bars_stack_to_the_total_and_flag_the_limit(limit):
    ax = stage_memory_bars(SPEC, {"equal": EQUAL, "best": BEST}, 8, memory_limit=limit)
    for name, bounds in (("equal", EQUAL), ("best", BEST)):
        memory = stage_memory(SPEC, bounds, 8)
        top = _patches(ax, f"{name}:activations")
        assert [p.get_y() + p.get_height() for p in top] == pytest.approx(memory["total"] / 2**30)
        assert to_hex(top[0].get_facecolor()) == MEMORY_COLOURS["activations"].lower()
        over = [s for s in range(4) if _patches(ax, f"{name}:stage{s}:over")]
        expected = [] if limit is None else [s for s in range(4) if memory["total"][s] > limit]
        assert over == expected
    limits = [ln for ln in ax.lines if ln.get_gid() == "limit"]
    assert len(limits) == (limit is not None)
    if limit is not None:
        assert limits[0].get_ydata()[0] == 16.0
        assert [s for s in range(4) if _patches(ax, f"equal:stage{s}:over")] == [0]
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == [f"stage {s}\n{4 - s} in flight" for s in range(4)]
