"""Tests for course_lib.explorers.utilization_explorer (cost04's explorer) and its waterfall figure."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import pytest

from course_lib.explorers.utilization import (
    GPT3_CONFIGS,
    UtilizationExplorer,
    utilization_explorer,
)
from course_lib.figures.utilization import UTILIZATION_COLOURS, utilization_waterfall
from course_lib.flops import hfu, megatron_flops_per_iteration, mfu, model_flops_per_token
from course_lib.hardware import eligible_peak, peak

HARDWARE = dict(
    kernel_efficiency=0.62, busy_fraction=0.86, outside_fraction=0.10, redone_fraction=0.03
)
DENSE = eligible_peak("H100 SXM", "bf16")
SPARSE = peak("H100 SXM", "bf16", sparse=True)
COUNTS = ("executed", "6N+12LHQT", "6N")
BASES = ("kernel", "step", "wall-clock")


@pytest.fixture(scope="module")
def explorer() -> UtilizationExplorer:
    return utilization_explorer()


def _set(explorer: UtilizationExplorer, **values: object) -> None:
    for name, value in values.items():
        explorer.controls[name].value = value


def _expected(model: str, seq_len: int, recompute: str) -> dict[tuple[str, str], float]:
    """The run of the explorer recomputed from course_lib.flops: per device, the executed rate is
    0.62 x dense peak while kernels run, x 0.86 per step, x 0.9 / 1.03 on the wall-clock; the
    counted rate of a FLOP count is the executed rate x (count per token / executed per token)."""
    layers, hidden, heads, head_dim = GPT3_CONFIGS[model]
    num_params = 12 * layers * hidden**2 + 51200 * hidden
    model_flops = model_flops_per_token(num_params, layers, heads, head_dim, seq_len)
    executed = megatron_flops_per_iteration(1, seq_len, layers, hidden, 51200, recompute == "full")
    executed /= seq_len  # per token (batch 1)
    if recompute == "none":
        assert executed == pytest.approx(model_flops, rel=1e-12)
    per_token = {"executed": executed, "6N+12LHQT": model_flops, "6N": 6.0 * num_params}
    time_factor = {"kernel": 1.0, "step": 0.86, "wall-clock": 0.86 * 0.9 / 1.03}
    return {
        (c, b): 0.62 * DENSE * time_factor[b] * per_token[c] / executed
        for c in COUNTS
        for b in BASES
    }


def test_controls_separate_the_run_from_the_conventions(explorer):
    """Run controls (model, s, recomputation) in one row, convention controls in another."""
    assert list(explorer.controls) == [
        "model",
        "seq_len",
        "recompute",
        "flop_count",
        "time_base",
        "peak",
    ]
    assert list(explorer.controls["model"].options) == list(GPT3_CONFIGS)
    assert list(explorer.controls["seq_len"].options) == [512, 1024, 2048, 4096, 8192, 16384, 32768]
    assert list(explorer.controls["flop_count"].options) == list(COUNTS)
    assert list(explorer.controls["time_base"].options) == list(BASES)
    assert list(explorer.controls["peak"].options) == ["dense", "2:4 sparse"]
    rows = explorer.widget.children[:2]
    assert [len(row.children) for row in rows] == [3, 3]


@pytest.mark.parametrize(
    "control, value",
    [
        ("model", "GPT-3 175B"),
        ("seq_len", 8192),
        ("recompute", "full"),
        ("flop_count", "6N"),
        ("time_base", "wall-clock"),
        ("peak", "2:4 sparse"),
    ],
)
def test_every_control_changes_the_image_and_the_metrics(explorer, control, value):
    """Moving one control re-renders a different PNG and a different metrics panel."""
    _set(
        explorer,
        model="GPT-3 6.7B",
        seq_len=2048,
        recompute="none",
        flop_count="6N+12LHQT",
        time_base="step",
        peak="dense",
    )
    image, metrics = bytes(explorer.image.value), explorer.metrics.value
    assert image.startswith(b"\x89PNG")
    _set(explorer, **{control: value})
    assert bytes(explorer.image.value).startswith(b"\x89PNG")
    assert bytes(explorer.image.value) != image
    assert explorer.metrics.value != metrics
    assert math.isfinite(explorer.last_update_ms) and explorer.last_update_ms > 0


@pytest.mark.parametrize("model", list(GPT3_CONFIGS))
@pytest.mark.parametrize("seq_len", [512, 2048, 32768])
@pytest.mark.parametrize("recompute", ["none", "full"])
def test_rates_match_course_lib_flops(explorer, model, seq_len, recompute):
    """All nine counted rates equal an independent computation from course_lib.flops."""
    _set(explorer, model=model, seq_len=seq_len, recompute=recompute)
    expected = _expected(model, seq_len, recompute)
    for key, rate in expected.items():
        assert explorer.last_rates[key] == pytest.approx(rate, rel=1e-12), key


def test_quote_is_mfu_or_hfu_of_the_chosen_conventions(explorer):
    """For each of the 18 conventions the quoted number is mfu() (model FLOPs) or hfu()
    (executed FLOPs) of the chosen rate against the chosen peak, and the panel prints it."""
    _set(explorer, model="GPT-3 2.7B", seq_len=4096, recompute="full")
    expected = _expected("GPT-3 2.7B", 4096, "full")
    for count in COUNTS:
        for base in BASES:
            for which, reference in (("dense", DENSE), ("2:4 sparse", SPARSE)):
                _set(explorer, flop_count=count, time_base=base, peak=which)
                util = hfu if count == "executed" else mfu
                assert explorer.last_quote == pytest.approx(
                    util(expected[(count, base)], reference), rel=1e-12
                )
                assert f"<b>{explorer.last_quote:.1%}</b>" in explorer.metrics.value


def test_orderings_the_lesson_teaches(explorer):
    """HFU >= MFU (equal without recomputation); 6N < 6N + 12LHQT; kernel > step > wall-clock; the
    sparse peak halves every number (to datasheet rounding, 1979 vs 2 x 989)."""
    for recompute in ("none", "full"):
        _set(explorer, model="GPT-3 760M", seq_len=4096, recompute=recompute)
        r = explorer.last_rates
        for base in BASES:
            if recompute == "none":
                assert r[("executed", base)] == pytest.approx(r[("6N+12LHQT", base)], rel=1e-12)
            else:
                assert r[("executed", base)] > 1.3 * r[("6N+12LHQT", base)]
            assert r[("6N", base)] < r[("6N+12LHQT", base)]
        for count in COUNTS:
            assert r[(count, "kernel")] > r[(count, "step")] > r[(count, "wall-clock")]
    _set(explorer, flop_count="6N+12LHQT", time_base="step", peak="dense")
    dense_quote = explorer.last_quote
    _set(explorer, peak="2:4 sparse")
    assert explorer.last_quote == pytest.approx(dense_quote * DENSE / SPARSE, rel=1e-12)
    assert explorer.last_quote == pytest.approx(dense_quote / 2, rel=2e-3)


def test_the_hardware_stays_fixed(explorer):
    """Whatever the run and the conventions, the device executes 0.62 x 989 TFLOP/s while kernels
    run: only the counting changes."""
    for model in GPT3_CONFIGS:
        for recompute in ("none", "full"):
            _set(explorer, model=model, seq_len=16384, recompute=recompute)
            assert explorer.last_rates[("executed", "kernel")] == pytest.approx(0.62 * DENSE)
            assert "kernels execute 613 TFLOP/s" in explorer.metrics.value


def test_waterfall_path_ends_at_the_quote(explorer):
    """The waterfall runs from the chosen peak down to the quoted rate, one convention per stop:
    the sparse peak adds a top stop; kernel time stops before the step; 6N adds its own stop."""
    _set(explorer, model="GPT-3 6.7B", seq_len=2048, recompute="full")
    _set(explorer, flop_count="executed", time_base="kernel", peak="dense")
    assert [name for name, _ in explorer.last_path] == [
        "H100 bf16 dense peak",
        "executed · kernel time",
    ]
    _set(explorer, flop_count="6N", time_base="wall-clock", peak="2:4 sparse")
    names = [name for name, _ in explorer.last_path]
    assert names == [
        "H100 bf16 2:4-sparse peak",
        "H100 bf16 dense peak",
        "executed · kernel time",
        "executed · step time",
        "6N+12LHQT · step time",
        "6N · step time",
        "6N · wall-clock",
    ]
    values = [v for _, v in explorer.last_path]
    assert values == sorted(values, reverse=True)
    assert values[-1] / SPARSE == pytest.approx(explorer.last_quote)
    visible = [bar for bar in explorer._bars if bar.get_visible()]
    assert len(visible) == 2 * len(values) - 1 == UtilizationExplorer.MAX_ROWS
    assert explorer._bars[0].get_hatch() == "//"  # the sparse peak: not eligible
    assert explorer._values[-1].get_text() == f"{explorer.last_quote:.1%}"


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"model": "GPT-4"}, "unknown model"),
        ({"seq_len": 3000}, "seq_len"),
        ({"recompute": "selective"}, "recompute"),
        ({"kernel_efficiency": 1.2}, "kernel_efficiency"),
        ({"busy_fraction": 0.0}, "busy_fraction"),
        ({"outside_fraction": 1.0}, "outside_fraction"),
        ({"redone_fraction": -0.1}, "redone_fraction"),
    ],
)
def test_bad_arguments_raise_value_errors_naming_them(kwargs, message):
    """Unknown models, sequence lengths or fractions out of range are ValueErrors naming them."""
    with pytest.raises(ValueError, match=message):
        utilization_explorer(**kwargs)


# --- viz.utilization_waterfall ---------------------------------------------------------------


def test_waterfall_draws_stops_drops_and_percentages():
    """One bar per stop and per drop (drops float between consecutive stops); stops are labelled
    with their share of the peak, drops with the points they remove; the quote is orange."""
    stops = [("peak", 1000e12), ("kernel", 600e12), ("step", 450e12)]
    ax = utilization_waterfall(stops, ["below peak", "idle"], 1000e12)
    bars = {p.get_gid(): p for p in ax.patches}
    assert set(bars) == {"stop0", "stop1", "stop2", "drop0", "drop1"}
    assert bars["stop1"].get_width() == pytest.approx(600.0)
    assert bars["drop0"].get_x() == pytest.approx(600.0)
    assert bars["drop0"].get_width() == pytest.approx(400.0)
    texts = [t.get_text() for t in ax.texts]
    assert texts == ["100.0%", "−40.0 pts", "60.0%", "−15.0 pts", "45.0%"]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == ["peak", "below peak", "kernel", "idle", "step"]
    assert bars["stop2"].get_facecolor()[:3] == pytest.approx(
        plt.matplotlib.colors.to_rgb(UTILIZATION_COLOURS["quote"])
    )
    plt.close(ax.figure)


def test_waterfall_against_a_sparse_peak_halves_the_labels():
    """With the 2:4-sparse peak as reference the same rates read half as large."""
    stops = [("sparse", SPARSE), ("dense", DENSE), ("achieved", 0.4 * DENSE)]
    ax = utilization_waterfall(stops, ["sparsity", "losses"], SPARSE, peak_stops=2, hatched=[0])
    assert ax.texts[-1].get_text() == f"{0.4 * DENSE / SPARSE:.1%}"
    assert next(p for p in ax.patches if p.get_gid() == "stop0").get_hatch() == "//"
    plt.close(ax.figure)


@pytest.mark.parametrize(
    "stops, drops, ref, message",
    [
        ([("a", 1.0), ("b", 2.0)], ["x"], 1.0, "must not increase"),
        ([("a", 2.0), ("b", 1.0)], [], 1.0, "need 1 drops"),
        ([("a", float("nan"))], [], 1.0, "finite"),
        ([("a", 1.0)], [], 0.0, "peak must be"),
        ([], [], 1.0, "at least one stop"),
    ],
)
def test_waterfall_rejects_bad_input(stops, drops, ref, message):
    """Increasing stops, a wrong number of drops, NaN or a zero peak are ValueErrors."""
    with pytest.raises(ValueError, match=message):
        utilization_waterfall(stops, drops, ref)
    plt.close("all")
