"""Tests for course_lib.figures.memory_timeline (cost05): one band per category whose stacked top is
the live-bytes curve, the peak line at the first maximum, phases shaded, clear errors."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_hex

from course_lib.figures.memory import MEMORY_COLOURS, memory_timeline
from course_lib.memory import live_bytes, peak, training_step_events


def _bands(ax) -> dict[str, object]:
    return {c.get_gid(): c for c in ax.collections if (c.get_gid() or "").startswith("memory:")}


def _top(band) -> float:
    return max(path.vertices[:, 1].max() for path in band.get_paths())


@pytest.mark.parametrize("recompute", ["none", "full"])
def test_bands_stack_to_the_live_bytes_and_the_peak_is_marked(recompute):
    """A band per category in the step's colours; the highest band's top is the peak in GiB;
    the dashed peak line sits at the peak time, which the title and annotation report."""
    ev = training_step_events(num_layers=4, seq_len=512, micro_batch=2, recompute=recompute)
    ax = memory_timeline(ev)
    try:
        bands = _bands(ax)
        assert set(bands) == {f"memory:{c}" for c in set(ev["category"])}
        for gid, band in bands.items():
            assert to_hex(band.get_facecolor()[0]) == MEMORY_COLOURS[gid.split(":")[1]].lower()
        p = peak(ev)
        assert _top(bands["memory:workspace"]) == pytest.approx(p.bytes / 2**30)
        (line,) = [ln for ln in ax.lines if ln.get_gid() == "memory:peak"]
        assert line.get_xdata()[0] == pytest.approx(p.time)
        assert f"{p.bytes / 2**30:.3g} GiB" in ax.get_title(loc="left")
        texts = " ".join(t.get_text() for t in ax.texts)
        assert "log_softmax_bwd" in texts
        assert {"forward", "backward", "optimizer"} <= {t.get_text() for t in ax.texts}
        assert ax.get_xlabel() == "time (ms)" and ax.get_ylabel() == "live memory (GiB)"
        assert ax.get_legend() is not None
    finally:
        plt.close(ax.figure)


def test_small_events_on_a_given_axes_with_other_categories():
    """Plain events (no op/phase columns, unknown categories) draw on the Axes passed in, with
    a byte unit to fit, the peak at its first time and the outline equal to live_bytes."""
    df = pd.DataFrame(
        [
            (0.0, "a", 400, "alloc", "buffers"),
            (1.0, "b", 300, "alloc", "scratch"),
            (1.0, "a", 400, "free", "buffers"),
            (2.0, "c", 500, "alloc", "scratch"),
            (3.0, "c", 500, "free", "scratch"),
            (4.0, "d", 800, "alloc", "buffers"),
        ],
        columns=["time", "tensor", "bytes", "kind", "category"],
    )
    fig, ax = plt.subplots()
    try:
        assert memory_timeline(df, ax=ax, title="toy") is ax
        assert ax.get_title(loc="left") == "toy"
        assert ax.get_ylabel() == "live memory (KiB)" and ax.get_xlabel() == "time (s)"
        (line,) = [ln for ln in ax.lines if ln.get_gid() == "memory:peak"]
        assert line.get_xdata()[0] == 4.0
        times, level = live_bytes(df)
        outline = [ln for ln in ax.lines if ln.get_gid() is None and len(ln.get_xdata()) > 2][0]
        np.testing.assert_array_equal(outline.get_ydata()[:-1], level / 1024)
        np.testing.assert_array_equal(outline.get_xdata()[:-1], times)
    finally:
        plt.close(fig)


def test_bad_events_raise_the_memory_error():
    """Invalid events fail with memory.lifetimes' ValueError naming the event."""
    df = pd.DataFrame([(0.0, "a", -1, "alloc")], columns=["time", "tensor", "bytes", "kind"])
    with pytest.raises(ValueError, match="event 0: bytes"):
        memory_timeline(df)
