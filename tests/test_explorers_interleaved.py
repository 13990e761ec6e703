"""Tests for course_lib.explorers.interleaved_explorer (pipe04's explorer)."""

from __future__ import annotations

import io
import math

import numpy as np
import pytest
from matplotlib.colors import to_rgb
from PIL import Image

from course_lib.explorers.interleaved import InterleavedExplorer, interleaved_explorer
from course_lib.figures.pipeline import IDLE_COLOUR, SCHEDULE_COLOURS
from course_lib.pipeline import interleaved_1f1b, simulate
from course_lib.pipeline.interleaving import interleaved_makespan, peak_rank_stash

T_F, T_B = 1e-3, 2e-3
METRICS = (
    "step time",
    "overhead vs ideal compute",
    "forward crossings per microbatch",
    "peak stash on rank 0 (microbatches)",
)


@pytest.fixture(scope="module")
def explorer() -> InterleavedExplorer:
    return interleaved_explorer()


def _set(explorer: InterleavedExplorer, **values: object) -> None:
    for name, value in values.items():
        explorer.controls[name].value = value


@pytest.mark.parametrize("p, m, v", [(1, 1, 1), (1, 5, 3), (4, 8, 2), (4, 10, 2), (8, 16, 4),
                                     (16, 64, 4), (4, 8, 1)])  # fmt: skip
def test_metrics_at_zero_latency_equal_closed_forms_and_simulator(explorer, p, m, v):
    """At δ = 0 (m >= p): step max(vm + p - 1, m + vp - 1)(t_f + t_b)/v, overhead (p - 1)/(vm),
    vp - 1 crossings (0 on one rank), rank 0's peak stash — each equal to the simulator's."""
    _set(explorer, num_ranks=p, num_microbatches=m, chunks_per_rank=v, latency_ms=0.0)
    metrics = explorer.last_metrics
    assert list(metrics) == list(METRICS)
    run = simulate(interleaved_1f1b(p, m, v), T_F / v, T_B / v)
    assert metrics["step time"] == pytest.approx(
        (interleaved_makespan(p, m, v, T_F, T_B), run.makespan), rel=1e-12
    )
    assert metrics["overhead vs ideal compute"][0] == pytest.approx((p - 1) / (v * m))
    assert metrics["overhead vs ideal compute"][1] == pytest.approx(run.overhead, abs=1e-12)
    assert metrics["forward crossings per microbatch"] == ((v * p - 1) * (p > 1),) * 2
    assert metrics["peak stash on rank 0 (microbatches)"][0] == peak_rank_stash(p, m, v)
    assert metrics["peak stash on rank 0 (microbatches)"][1] == pytest.approx(
        peak_rank_stash(p, m, v)
    )
    assert "<b>no</b>" not in explorer.metrics.value
    assert explorer.refused == ""


def test_latency_that_hides_meets_the_closed_form(explorer):
    """p = 8, m = 16, v = 4, δ = 0.25 ms = t_f/v: step = zero-latency step + 2(vp - 1)δ."""
    _set(explorer, num_ranks=8, num_microbatches=16, chunks_per_rank=4, latency_ms=0.25)
    closed, simulated = explorer.last_metrics["step time"]
    assert closed == pytest.approx(interleaved_makespan(8, 16, 4, T_F, T_B) + 2 * 31 * 0.25e-3)
    assert simulated == pytest.approx(closed, rel=1e-12)
    assert "<b>no</b>" not in explorer.metrics.value


def test_latency_beyond_a_chunk_has_no_closed_form(explorer):
    """δ = 0.5 ms > t_f/v = 0.25 ms: the step row has no closed form and the note says why."""
    _set(explorer, num_ranks=8, num_microbatches=16, chunks_per_rank=4, latency_ms=0.5)
    closed, simulated = explorer.last_metrics["step time"]
    assert math.isnan(closed)
    run = simulate(interleaved_1f1b(8, 16, 4), T_F / 4, T_B / 4, p2p_latency=0.5e-3)
    assert simulated == run.makespan
    assert "no longer hides" in explorer.metrics.value


def test_fewer_microbatches_than_ranks_is_run_and_flagged(explorer):
    """p = 4, m = 3, v = 2 (PyTorch accepts): simulated overhead 2/3 against the formula's 1/2,
    and the note explains the loop the microbatches cannot fill."""
    _set(explorer, num_ranks=4, num_microbatches=3, chunks_per_rank=2, latency_ms=0.0)
    closed, simulated = explorer.last_metrics["overhead vs ideal compute"]
    assert closed == pytest.approx(0.5) and simulated == pytest.approx(2 / 3)
    assert "cannot fill" in explorer.metrics.value
    assert "please report" not in explorer.metrics.value


def test_refused_setting_shows_the_reason_and_no_grid(explorer):
    """p = 4, m = 9, v = 2: PyTorch 2.13's rule refuses it (rounds 2, 9 odd); the panel says so,
    names m = 8 and 10, and the grid region is left blank."""
    _set(explorer, num_ranks=4, num_microbatches=9, chunks_per_rank=2, latency_ms=0.0)
    assert explorer.last_metrics == {}
    assert "Refused" in explorer.metrics.value and "9 % 2 = 1" in explorer.metrics.value
    assert "m = 8 or 10" in explorer._message.get_text()
    image = np.asarray(Image.open(io.BytesIO(bytes(explorer.image.value))).convert("RGB"))
    left, right, top, bottom = explorer._grid_px
    region = image[top:bottom, left:right]
    idle = np.round(np.array(to_rgb(IDLE_COLOUR)) * 255)
    assert (region == idle).all(axis=2).mean() < 0.001  # no idle rank rows (text aside)
    _set(explorer, num_microbatches=10)  # and it recovers
    assert explorer.refused == "" and explorer.last_metrics


def test_later_chunks_are_darker_in_the_raster(explorer):
    """p = 2, m = 2, v = 3: rank 0 runs F(s0), F(s2), F(s4): chunk 0 in the forward colour, chunks
    1 and 2 darker (the lesson's figure hatches chunk >= 1); the palette keeps F, B, idle."""
    run = simulate(interleaved_1f1b(2, 2, 3), 1.0, 1.0)
    rows = InterleavedExplorer.ROWS_PER_RANK
    image = explorer.grid_raster(run, 1000)
    span = run.makespan
    events = run.events

    def colour_of(stage: int) -> tuple[float, ...]:
        box = events[(events["rank"] == 0) & (events["stage"] == stage) & (events["kind"] == "F")]
        mid = (box["start"].iloc[0] + box["end"].iloc[0]) / 2
        return tuple(image[rows // 2, int(mid / span * 1000)] / 255)

    forward = to_rgb(SCHEDULE_COLOURS["F"])
    assert colour_of(0) == pytest.approx(forward, abs=0.01)
    for stage in (2, 4):  # chunks 1 and 2
        assert colour_of(stage) == pytest.approx(tuple(0.62 * c for c in forward), abs=0.01)


@pytest.mark.parametrize("p, m, v", [(1, 1, 1), (4, 8, 2), (16, 64, 4)])
def test_grid_pixels_in_the_png_are_the_raster(explorer, p, m, v):
    """The PNG's grid region holds grid_raster's pixels for the current run (labels aside)."""
    _set(explorer, num_ranks=p, num_microbatches=m, chunks_per_rank=v, latency_ms=0.1)
    image = np.asarray(Image.open(io.BytesIO(bytes(explorer.image.value))).convert("RGB"))
    assert image.shape == (400, 800, 3)
    left, right, top, bottom = explorer._grid_px
    run = simulate(interleaved_1f1b(p, m, v), T_F / v, T_B / v, p2p_latency=0.1e-3)
    raster = explorer.grid_raster(run, right - left, bottom - top)
    same = (image[top:bottom, left:right] == raster).all(axis=2)
    assert same.mean() > (0.95 if explorer._labels else 0.999)


def test_title_names_ranks_chunks_and_overhead(explorer):
    """The title names p, v, m (singular for one) and the simulated overhead."""
    _set(explorer, num_ranks=4, num_microbatches=8, chunks_per_rank=2, latency_ms=0.0)
    assert explorer.title == (
        "interleaved 1F1B: 4 ranks × 2 chunks, 8 microbatches — overhead 18.75% of ideal compute"
    )
    _set(explorer, num_ranks=8, num_microbatches=16, chunks_per_rank=1)
    assert explorer.title.startswith("interleaved 1F1B: 8 ranks × 1 chunk, 16 microbatches")


@pytest.mark.parametrize(
    "p, m, v, formula, note",
    [
        (4, 8, 2, "p + (p−1)/v (p | m, m ≥ 2p)", False),
        (4, 4, 2, "min(v·m, w + 1)/v", True),  # m = p: 4, not 5.5
        (4, 10, 2, "min(v·m, w + 1)/v", False),  # PyTorch's groups of 5
        (4, 8, 1, "min(m, p), 1F1B", False),
    ],
)
def test_stash_row_names_the_rule_only_where_it_holds(explorer, p, m, v, formula, note):
    """The peak-stash row shows p + (p−1)/v only for p | m and m ≥ 2p; at m = p a note says the
    warm-up covers every forward and the peak is p; the closed form always equals the simulator."""
    _set(explorer, num_ranks=p, num_microbatches=m, chunks_per_rank=v, latency_ms=0.0)
    closed, simulated = explorer.last_metrics["peak stash on rank 0 (microbatches)"]
    assert closed == pytest.approx(simulated)
    assert formula in explorer.metrics.value
    assert ("not p + (p − 1)/v" in explorer.metrics.value) == note
    if note:
        assert closed == p


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"num_ranks": 17}, "num_ranks 1..16"),
        ({"num_ranks": 0}, "num_ranks"),
        ({"num_microbatches": 65}, "1..64"),
        ({"chunks_per_rank": 9}, "chunks_per_rank 1..8"),
        ({"chunks_per_rank": 0}, "chunks_per_rank"),
        ({"p2p_latency": 3e-3}, "p2p_latency"),
        ({"forward_time": 0.0}, "forward_time"),
    ],
)
def test_bad_arguments_raise_value_errors_naming_them(kwargs, message):
    """Out-of-range arguments are rejected with a ValueError naming the argument."""
    with pytest.raises(ValueError, match=message):
        interleaved_explorer(**kwargs)
