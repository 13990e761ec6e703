"""Tests for course_lib.hardware: the accelerator table's conventions and sources, peak lookup
and the eligible (dense) peak for MFU (cost04)."""

from __future__ import annotations

import pytest

from course_lib.hardware import (
    ACCELERATORS,
    Accelerator,
    accelerator,
    accelerator_table,
    eligible_peak,
    peak,
)


def test_every_row_states_dtype_convention_and_source():
    """Each peak carries a known dtype, a dense/2:4-sparse convention and a datasheet source."""
    for a in ACCELERATORS:
        assert a.dtype in {"fp32", "tf32", "bf16", "fp16", "fp8"}
        assert a.sparsity in {"dense", "2:4 sparse"}
        assert a.source.strip()
        assert a.peak_flops > 0 and a.memory_bytes > 0 and a.memory_bandwidth > 0
    keys = [(a.name, a.dtype, a.sparsity) for a in ACCELERATORS]
    assert len(keys) == len(set(keys)), "one row per (accelerator, dtype, sparsity)"


def test_sparse_figures_are_twice_dense():
    """Vendors double the dense tensor-core rate for 2:4 sparsity (to datasheet rounding)."""
    pairs = 0
    for a in ACCELERATORS:
        if a.sparsity == "2:4 sparse":
            dense = accelerator(a.name, a.dtype, sparse=False)
            assert a.peak_flops / dense.peak_flops == pytest.approx(2.0, rel=2e-3)
            pairs += 1
    assert pairs >= 10


@pytest.mark.parametrize(
    "name, dtype, sparse, value",
    [
        ("A100 SXM 80GB", "bf16", False, 312e12),
        ("A100 SXM 80GB", "bf16", True, 624e12),
        ("A100 SXM 80GB", "fp16", False, 312e12),
        ("A100 SXM 80GB", "tf32", False, 156e12),
        ("A100 SXM 80GB", "fp32", False, 19.5e12),
        ("H100 SXM", "bf16", False, 989e12),
        ("H100 SXM", "bf16", True, 1979e12),
        ("H100 SXM", "tf32", True, 989e12),
        ("H100 SXM", "fp8", True, 3958e12),
        ("H100 SXM", "fp32", False, 67e12),
        ("H200 SXM", "bf16", False, 989e12),
        ("H200 SXM", "bf16", True, 1979e12),
        ("TPU v4", "bf16", False, 275e12),
    ],
)
def test_datasheet_values(name, dtype, sparse, value):
    """The figures printed in the vendor datasheets (and the syllabus)."""
    assert peak(name, dtype, sparse) == value


def test_h200_has_h100_compute_and_more_memory():
    """H200 SXM: the same peaks as H100 SXM for every dtype; 141 GiB at 4.8 TB/s vs 80 GiB, 3.35."""
    h100 = {(a.dtype, a.sparsity): a for a in ACCELERATORS if a.name == "H100 SXM"}
    h200 = {(a.dtype, a.sparsity): a for a in ACCELERATORS if a.name == "H200 SXM"}
    assert h100.keys() == h200.keys()
    for k in h100:
        assert h100[k].peak_flops == h200[k].peak_flops
    assert h200[("bf16", "dense")].memory_bytes == 141 * 2**30
    assert h200[("bf16", "dense")].memory_bandwidth == 4.8e12
    assert h100[("bf16", "dense")].memory_bytes == 80 * 2**30
    assert h100[("bf16", "dense")].memory_bandwidth == 3.35e12
    assert accelerator("A100 SXM 80GB", "bf16").memory_bandwidth == 2039e9


@pytest.mark.parametrize(
    "name, reported_mib",
    [("A100 SXM 80GB", 81920), ("H100 SXM", 81559), ("H200 SXM", 143771)],
)
def test_hbm_capacity_is_binary(name, reported_mib):
    """The datasheets' "80GB"/"141GB" are GiB: nvidia-smi's total (MiB) fits in the capacity
    and is within 1 % of it, while it would not fit in 80e9 or 141e9 bytes."""
    capacity = accelerator(name, "bf16").memory_bytes
    reported = reported_mib * 2**20
    assert reported <= capacity and reported / capacity > 0.99
    assert reported > capacity / 2**30 * 1e9


def test_lookup_is_case_insensitive_and_knows_dtype_aliases():
    """'h100 sxm' and 'bfloat16' find the H100 bf16 row."""
    assert peak("h100 sxm", "bfloat16") == peak("H100 SXM", "bf16")
    assert peak("A100 SXM 80GB", "float16") == 312e12


@pytest.mark.parametrize(
    "name, dtype, sparse, match",
    [
        ("B200", "bf16", False, "unknown accelerator"),
        ("H100 SXM", "int4", False, "unknown dtype"),
        ("H100 SXM", "fp32", True, "no 2:4 sparse fp32 peak"),
        ("A100 SXM 80GB", "fp8", False, "no dense fp8 peak"),
        ("TPU v4", "bf16", True, "no 2:4 sparse bf16"),
    ],
)
def test_unknown_combinations_raise(name, dtype, sparse, match):
    """Unknown accelerators, dtypes and combinations are ValueErrors listing what exists."""
    with pytest.raises(ValueError, match=match):
        peak(name, dtype, sparse)


def test_eligible_peak_refuses_sparse():
    """MFU uses the dense peak; asking for the sparse one is an error that names the dense."""
    assert eligible_peak("H100 SXM", "bf16") == 989e12
    with pytest.raises(ValueError, match=r"not eligible.*9\.89e\+14"):
        eligible_peak("H100 SXM", "bf16", sparse=True)


def test_accelerator_validates_and_table_renders():
    """Rows reject unknown conventions; the table has a row per peak with TFLOP/s added."""
    with pytest.raises(ValueError, match="sparsity"):
        Accelerator("X", 1e12, "bf16", "sparse", 1.0, 1.0, "src")  # type: ignore[arg-type]
    df = accelerator_table()
    assert len(df) == len(ACCELERATORS)
    row = df[(df["name"] == "H100 SXM") & (df["dtype"] == "bf16") & (df["sparsity"] == "dense")]
    assert float(row["peak_tflops"].iloc[0]) == 989.0
    assert float(row["memory_gib"].iloc[0]) == 80.0
