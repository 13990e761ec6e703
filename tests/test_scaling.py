"""Tests for course_lib.scaling (cost08): efficiencies, Amdahl/Gustafson against a simulated task
model, the serial-fraction fit against a brute-force search, McCandlish's trade-off, the best
accumulation against exhaustive search, the published Megatron-LM tables, and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course_lib.scaling import (
    amdahl_speedup,
    best_accumulation_steps,
    efficiency_from_throughput,
    examples_to_target,
    fit_serial_fraction,
    gustafson_speedup,
    load_megatron_table,
    measure_strong_scaling,
    steps_to_target,
    strong_efficiency,
    time_to_target,
    weak_efficiency,
)

DEVICES = st.lists(st.integers(1, 4096), min_size=1, max_size=8, unique=True)
TIMES = st.floats(1e-3, 1e4, allow_nan=False, allow_infinity=False)


# --- efficiencies -----------------------------------------------------------------------------


@given(DEVICES, st.data())
def test_strong_efficiency_matches_the_definition_entry_by_entry(devices, data):
    """E_s(N) = T(N0)·N0/(T(N)·N) for every entry, in the order given, for any listed baseline."""
    times = data.draw(st.lists(TIMES, min_size=len(devices), max_size=len(devices)))
    n0 = data.draw(st.sampled_from(devices))
    got = strong_efficiency(devices, times, n0)
    t0 = times[devices.index(n0)]
    for g, n, t in zip(got, devices, times, strict=True):
        assert g == pytest.approx(t0 * n0 / (t * n), rel=1e-12)


@given(DEVICES, st.data())
def test_ideal_times_give_efficiency_one(devices, data):
    """T(N) = T(N0)·N0/N (perfect strong scaling) gives E_s = 1; a constant step time E_w = 1."""
    n0 = data.draw(st.sampled_from(devices))
    n = np.array(devices, dtype=float)
    np.testing.assert_allclose(strong_efficiency(n, 7.0 * n0 / n, n0), 1.0, rtol=1e-12)
    np.testing.assert_allclose(weak_efficiency(n, np.full(len(n), 3.0), n0), 1.0)


@given(DEVICES, st.data())
def test_throughput_form_equals_both_time_forms(devices, data):
    """X(N)·N0/(X(N0)·N) is E_s when X = W/T (fixed total W) and E_w when X = N·w/T."""
    times = np.array(data.draw(st.lists(TIMES, min_size=len(devices), max_size=len(devices))))
    n0 = data.draw(st.sampled_from(devices))
    n = np.array(devices, dtype=float)
    np.testing.assert_allclose(
        efficiency_from_throughput(n, 1e6 / times, n0), strong_efficiency(n, times, n0), rtol=1e-9
    )
    np.testing.assert_allclose(
        efficiency_from_throughput(n, n * 5.0 / times, n0), weak_efficiency(n, times, n0), rtol=1e-9
    )


def test_table2_strong_efficiency_reproduces_the_lesson():
    """PTD-P keeps 97.4 % and 92.2 % of its per-GPU rate at 768 and 1,536 GPUs; ZeRO-3 61.1 %
    and 30.6 % (Narayanan et al. 2021, Table 2, 174.6B, batch 1,536)."""
    t2 = load_megatron_table(2)
    for scheme, expected in (("PTD-P", [1, 0.97386, 0.92157]), ("ZeRO-3", [1, 0.61111, 0.30556])):
        rows = t2[(t2.scheme == scheme) & (t2.parameters_billion == 174.6)]
        n = rows.num_gpus.to_numpy(float)
        e = strong_efficiency(n, 1 / (n * rows.teraflops_per_gpu.to_numpy(float)), 384)
        np.testing.assert_allclose(e, expected, atol=1e-5)


# --- Amdahl, Gustafson, serial fraction -------------------------------------------------------


def _makespan(serial_tasks: int, parallel_tasks: int, workers: int) -> int:
    """Unit tasks: serial ones one after another, then parallel ones dealt round-robin."""
    loads = [0] * workers
    for i in range(parallel_tasks):
        loads[i % workers] += 1
    return serial_tasks + max(loads)


@pytest.mark.parametrize("serial_tasks, parallel_tasks", [(0, 64), (16, 48), (32, 32), (64, 0)])
@pytest.mark.parametrize("workers", [1, 2, 4, 8, 16])
def test_amdahl_is_a_fixed_task_set_on_more_workers(serial_tasks, parallel_tasks, workers):
    """Amdahl's 1/(s + (1-s)/N) is the speed-up of a fixed set of unit tasks, a fraction s of
    them serial (parallel tasks divide evenly here)."""
    total = serial_tasks + parallel_tasks
    speedup = total / _makespan(serial_tasks, parallel_tasks, workers)
    assert amdahl_speedup(workers, serial_tasks / total)[0] == pytest.approx(speedup)


@pytest.mark.parametrize("serial_tasks, parallel_per_worker", [(0, 8), (2, 6), (4, 4), (8, 0)])
@pytest.mark.parametrize("workers", [1, 2, 4, 8, 16])
def test_gustafson_is_a_growing_task_set(serial_tasks, parallel_per_worker, workers):
    """Gustafson's N - s(N-1) is one worker's time for the work N workers do in one unit of
    time, s the serial share of the N-worker run."""
    parallel = parallel_per_worker * workers
    parallel_time = _makespan(serial_tasks, parallel, workers)
    one_worker = serial_tasks + parallel
    s = serial_tasks / parallel_time
    assert gustafson_speedup(workers, s)[0] == pytest.approx(one_worker / parallel_time)


@given(
    st.floats(0.0, 50.0),
    st.floats(1.0, 1000.0),
    st.lists(st.integers(1, 2048), min_size=2, max_size=7, unique=True),
    st.data(),
)
def test_fit_recovers_exact_amdahl_data(a, b, devices, data):
    """Times a + b/N exactly: the fit returns s = a/(a + b/N0) for any baseline."""
    n0 = data.draw(st.sampled_from(devices))
    n = np.array(devices, dtype=float)
    assert fit_serial_fraction(n, a + b / n, n0) == pytest.approx(a / (a + b / n0), abs=1e-9)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_fit_matches_a_brute_force_least_squares_search(seed):
    """Seeded noisy times: the fitted s equals the one of a dense search over the intercept a
    (b solved exactly for each a), the least-squares minimum found without lstsq."""
    rng = np.random.default_rng(seed)
    n = np.array([8, 16, 32, 64, 128, 256], dtype=float)
    t = (3.0 + 400.0 / n) * rng.lognormal(0.0, 0.05, len(n))
    x = 1.0 / n
    grid = np.linspace(0.0, 10.0, 200_001)
    b = ((t[None, :] - grid[:, None]) * x).sum(axis=1) / (x * x).sum()
    sse = ((t[None, :] - grid[:, None] - b[:, None] * x) ** 2).sum(axis=1)
    j = int(np.argmin(sse))
    brute = grid[j] / (grid[j] + b[j] / 8)
    assert fit_serial_fraction(n, t, 8) == pytest.approx(brute, abs=1e-4)


def test_fit_clips_a_negative_intercept_and_reproduces_table2():
    """T = -0.2 + 10.2/N has no visible serial part (s = 0); the Eq. 4 days of Table 2 give the
    lesson's s = 0.028 (PTD-P) and 0.737 (ZeRO-3)."""
    assert fit_serial_fraction([1, 2, 4], [10.0, 4.9, 2.35], 1) == 0.0
    t2 = load_megatron_table(2)
    for scheme, s in (("PTD-P", 0.027993), ("ZeRO-3", 0.736842)):
        rows = t2[(t2.scheme == scheme) & (t2.parameters_billion == 174.6)]
        n = rows.num_gpus.to_numpy(float)
        days = 8 * 300e9 * 174.6e9 / (n * rows.teraflops_per_gpu.to_numpy(float) * 1e12) / 86400
        assert fit_serial_fraction(n, days, 384) == pytest.approx(s, abs=1e-6)


# --- McCandlish et al. 2018 -------------------------------------------------------------------


@given(st.floats(1.0, 1e6), st.floats(1.0, 1e5), st.floats(1.0, 1e6))
def test_steps_and_examples_lie_on_the_tradeoff_curve(batch, min_steps, noise):
    """E = B·S with E_min = S_min·B_noise satisfies (S/S_min - 1)(E/E_min - 1) = 1."""
    s = steps_to_target(batch, min_steps, noise)[0]
    e = examples_to_target(batch, min_steps * noise, noise)[0]
    assert e == pytest.approx(batch * s, rel=1e-9)
    assert (s / min_steps - 1) * (e / (min_steps * noise) - 1) == pytest.approx(1.0, rel=1e-9)


def test_time_to_target_is_steps_times_step_time():
    b = np.array([512.0, 2048.0, 8192.0])
    step = np.array([0.85, 1.6, 4.6])
    np.testing.assert_allclose(
        time_to_target(b, step, 20_000, 4096), steps_to_target(b, 20_000, 4096) * step
    )


@settings(max_examples=60)
@given(
    st.sampled_from([1, 8, 64, 512]),
    st.sampled_from([1, 4, 16]),
    st.floats(1e-3, 1.0),
    st.floats(0.0, 2.0),
    st.floats(16.0, 65536.0),
)
def test_best_accumulation_is_the_exhaustive_minimum(n, b, t_micro, t_ar, noise):
    """best_accumulation_steps equals a Python loop over k = 1..512 (first minimum), and is the
    floor or ceiling of the continuous optimum sqrt(B_noise·t_ar/(N·b·t_micro)) when inside."""

    def cost(k):
        return (1 + noise / (n * b * k)) * (k * t_micro + t_ar)

    best_cost = min(cost(k) for k in range(1, 513))
    got = best_accumulation_steps(n, b, t_micro, t_ar, noise, max_accumulation=512)
    assert cost(got) == pytest.approx(best_cost, rel=1e-12)
    root = math.sqrt(noise * t_ar / (n * b * t_micro))
    if 1 <= root <= 511:
        assert got in (math.floor(root), math.ceil(root))


def test_best_accumulation_lesson_cases():
    """Section 4's cluster takes k = 4 (B = 2,048); a free all-reduce takes k = 1."""
    assert best_accumulation_steps(64, 8, 0.25, 0.6, 4096) == 4
    assert best_accumulation_steps(128, 16, 0.2, 0.0, 8192) == 1
    assert best_accumulation_steps(8, 4, 0.5, 0.096875, 1024) == 3  # root 2.49, not round()


# --- published data ---------------------------------------------------------------------------


def test_table1_is_self_consistent():
    """Narayanan et al. 2021 Table 1 as shipped: aggregate PF/s ≈ per-GPU TF/s × GPUs (both
    rounded), percent of peak = per-GPU / 312 TF/s (A100 16-bit peak), parameters from the
    paper's Eq. 2, 12·l·h²(1 + 13/(12h) + (V + s)/(12·l·h)), V = 51,200, s = 2,048."""
    t1 = load_megatron_table(1)
    assert len(t1) == 10
    assert t1.num_gpus.tolist() == [32, 64, 128, 256, 512, 1024, 1536, 1920, 2520, 3072]
    x, n = t1.teraflops_per_gpu.to_numpy(float), t1.num_gpus.to_numpy(float)
    assert np.all(np.abs(t1.aggregate_petaflops - x * n / 1e3) <= 0.5 * n / 1e3 + 0.05)
    assert np.all(np.abs(t1.percent_of_peak - 100 * x / 312) <= 0.5 + 50 / 312)
    h, layers = t1.hidden_size.to_numpy(float), t1.num_layers.to_numpy(float)
    params = 12 * layers * h**2 * (1 + 13 / (12 * h) + (51200 + 2048) / (12 * layers * h))
    np.testing.assert_allclose(np.round(params / 1e9, 1), t1.parameters_billion)
    assert (t1.tensor_parallel_size * t1.pipeline_parallel_size <= t1.num_gpus).all()


def test_table2_days_follow_eq4_within_rounding():
    """Table 2's training days for 300B tokens are within 4 % of Eq. 4, 8TP/(nX)."""
    t2 = load_megatron_table(2)
    assert len(t2) == 12
    eq4 = 8 * 300e9 * t2.parameters_billion * 1e9 / (t2.num_gpus * t2.teraflops_per_gpu * 1e12)
    np.testing.assert_allclose(eq4 / 86400, t2.training_days_300b_tokens, rtol=0.04)
    for _, rows in t2[t2.parameters_billion == 174.6].groupby("scheme"):
        assert rows.batch_size.nunique() == 1  # the 175B rows are strong scaling


# --- a real measurement -----------------------------------------------------------------------


def test_measure_strong_scaling_on_a_tiny_work():
    """Two worker counts, medians between min and max, all positive."""
    df = measure_strong_scaling([1, 2], total_tasks=2, size=1000, repeats=2, trials=2)
    assert df.num_devices.tolist() == [1, 2]
    assert ((df.low <= df.time) & (df.time <= df.high) & (df.low > 0)).all()


def test_measure_strong_scaling_times_out_instead_of_hanging():
    with pytest.raises(RuntimeError, match="did not finish within"):
        measure_strong_scaling(
            [1], total_tasks=1, size=2_000_000, repeats=400, trials=1, timeout=0.05
        )


# --- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: strong_efficiency([1, 2], [1.0, np.nan], 1), r"times\[1\] = nan"),
        (lambda: strong_efficiency([1, 2], [1.0, -2.0], 1), r"times\[1\] = -2.0"),
        (lambda: strong_efficiency([8, 16], [1.0, 0.6], 1), "baseline_devices = 1 is not one of"),
        (lambda: weak_efficiency([8, 16], [1.0], 8), "differ in length"),
        (lambda: efficiency_from_throughput([8, 8], [1.0, 2.0], 8), "repeated device counts"),
        (lambda: strong_efficiency([], [], 1), "num_devices must be a non-empty"),
        (lambda: strong_efficiency([0, 2], [1.0, 1.0], 2), r"num_devices\[0\] = 0.0"),
        (lambda: fit_serial_fraction([8], [1.0], 8), "at least two device counts"),
        (lambda: fit_serial_fraction([1, 2], [1.0, 2.0], 1), "do not fall"),
        (lambda: amdahl_speedup(4, 1.5), "serial_fraction must be in"),
        (lambda: gustafson_speedup(4, float("nan")), "serial_fraction must be in"),
        (lambda: steps_to_target([0.0], 10, 10), r"batch_size\[0\] = 0.0"),
        (lambda: steps_to_target(8, 10, -1), "noise_scale must be"),
        (lambda: examples_to_target(8, 0, 1), "min_examples must be"),
        (lambda: time_to_target([8, 16], [1.0, np.nan], 10, 10), r"step_time\[1\]"),
        (lambda: best_accumulation_steps(8, 1, 0.1, -1.0, 10), "allreduce_time"),
        (lambda: best_accumulation_steps(8, 1, 0.0, 1.0, 10), "micro_time"),
        (lambda: load_megatron_table(3), "table must be 1 or 2"),
        (lambda: measure_strong_scaling([3], total_tasks=8), "does not divide"),
        (lambda: measure_strong_scaling([]), "worker_counts is empty"),
    ],
)
def test_bad_input_names_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()
