"""course_lib.pipeline.partition: model specs, stage times and memory, and the min-max partition
checked against brute force over every set of cuts and against the simulator (pipe01)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course_lib.flops import megatron_flops_per_iteration
from course_lib.memory import activation_bytes_per_layer
from course_lib.pipeline import gpipe, one_f_one_b, simulate
from course_lib.pipeline.partition import (
    ADAM_MIXED_PRECISION,
    Layer,
    ModelSpec,
    check_boundaries,
    cut_traffic,
    even_blocks,
    gpt_spec,
    layer_memory,
    min_max_partition,
    stage_costs,
    stage_in_flight,
    stage_memory,
    stage_sums,
    stage_table,
    stage_times,
)
from tests.strategies import model_specs

BETA = 25e9


def all_boundaries(n: int, p: int):
    """Every partition of n layers into p non-empty contiguous stages, in lexicographic order."""
    for cuts in itertools.combinations(range(1, n), p - 1):
        yield (0, *cuts, n)


def brute_force(n: int, p: int, cost, fits=lambda b: True):
    """(least bottleneck, lexicographically first boundaries reaching it) over all partitions."""
    best, arg = np.inf, None
    for bounds in all_boundaries(n, p):
        if not fits(bounds):
            continue
        value = max(cost(bounds))
        if value < best:
            best, arg = value, bounds
    return best, arg


# --- the lesson's model ------------------------------------------------------------------


def test_gpt_spec_layers_follow_the_formulas():
    """Embedding, 24 blocks, output, loss; block FLOPs, parameters and stash from the formulas."""
    s, b, h, a, V = 2048, 1, 2048, 16, 51200
    spec = gpt_spec()
    assert spec.kinds == ("embedding",) + ("block",) * 24 + ("output", "loss")
    block = spec.layers[1]
    assert block.num_params == 12 * h * h + 13 * h
    assert block.activation_bytes == activation_bytes_per_layer(s, b, h, a)
    assert block.activation_bytes == s * b * h * (34 + 5 * a * s / h)  # Korthikanti eq. 1
    assert block.backward_time == 2 * block.forward_time
    assert block.forward_time == pytest.approx((24 * b * s * h * h + 4 * b * s * s * h) / 156e12)
    assert spec.layers[0].num_params == (V + s) * h
    assert spec.layers[0].activation_bytes == s * b * h  # dropout mask, §4.3
    assert spec.layers[-2].activation_bytes == 4 * s * b * h
    assert spec.layers[-1].activation_bytes == 4 * s * b * V  # fp32 logits, §4.3
    assert np.all(spec.cut_bytes[:-2] == 2 * s * b * h)
    assert spec.cut_bytes[-1] == 2 * s * b * V  # the logits, between output and loss
    # The embedding is nearly free, the output layer costs more than a block.
    assert spec.layer_times[0] < 0.01 * spec.layer_times[1]
    assert spec.layer_times[-2] > 1.7 * spec.layer_times[1]


@pytest.mark.parametrize(
    "blocks, hidden, heads, seq, micro, vocab",
    [(24, 2048, 16, 2048, 1, 51200), (4, 512, 8, 256, 3, 1000)],
)
def test_gpt_spec_matmul_flops_add_up_to_megatron_eq3(blocks, hidden, heads, seq, micro, vocab):
    """Blocks + output layer, forward + backward, at the assumed rate, are Megatron-LM's
    72·B·s·l·h²(1 + s/6h + V/12lh) matmul FLOPs per iteration of one microbatch."""
    rate = 1e14
    spec = gpt_spec(blocks, hidden, heads, seq, micro, vocab, flops_per_second=rate)
    matmul = [k in ("block", "output") for k in spec.kinds]
    flops = spec.layer_times[matmul].sum() * rate
    expected = megatron_flops_per_iteration(micro, seq, blocks, hidden, vocab, recompute=False)
    assert flops == pytest.approx(expected, rel=1e-12)


def test_even_blocks_gives_every_stage_the_same_blocks():
    spec = gpt_spec()
    assert even_blocks(spec, 4) == (0, 7, 13, 19, 27)
    assert even_blocks(spec, 5) == (0, 6, 11, 16, 21, 27)  # 24 = 5 + 5 + 5 + 5 + 4
    assert even_blocks(spec, 1) == (0, 27)
    with pytest.raises(ValueError, match="exceeds the 24 blocks"):
        even_blocks(spec, 25)


# --- stage times and traffic -------------------------------------------------------------


def test_stage_times_by_hand():
    """t_s = Σ(f + b) + 2(A_in + A_out)/β on a three-layer example."""
    spec = ModelSpec.from_arrays(
        [1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0, 0, 0], [0, 0, 0], [10.0, 20.0]
    )
    assert stage_times(spec, (0, 1, 3), 10.0).tolist() == [3 + 2 * 10 / 10, 15 + 2 * 10 / 10]
    assert stage_times(spec, (0, 2, 3), 10.0).tolist() == [9 + 4, 9 + 4]
    assert stage_times(spec, (0, 1, 2, 3), 10.0).tolist() == [5, 6 + 6, 9 + 4]
    assert stage_times(spec, (0, 3), 10.0).tolist() == [18]
    assert cut_traffic(spec, 10.0, num_microbatches=3).tolist() == [6.0, 12.0]


@given(model_specs(), st.data())
@settings(deadline=None, max_examples=60)
def test_stage_times_add_up_compute_and_twice_every_cut(spec, data):
    """Σ_s t_s = Σ(f + b) + 2·(2 Σ_cuts A/β): every cut is paid by the stages on both sides."""
    n = spec.num_layers
    p = data.draw(st.integers(1, n))
    bounds = data.draw(st.sampled_from(list(all_boundaries(n, p))))
    times = stage_times(spec, bounds, 2.0)
    cut_sum = sum(spec.cut_bytes[k - 1] for k in bounds[1:-1])
    assert times.sum() == pytest.approx(spec.layer_times.sum() + 2 * cut_sum, rel=1e-12, abs=1e-12)
    table = stage_table(spec, bounds, 2.0, 4)
    assert np.allclose(table["stage_time"], times)
    assert np.allclose(table["compute"] + table["transfer"], times)


def test_slowest_stage_sets_the_pace_under_the_simulator():
    """The lesson's equal split: its slowest stage is slowest forward and backward, so every
    extra microbatch adds exactly max_s t_s to the simulated 1F1B and GPipe steps, and GPipe's
    step is Σ t_s + (m - 1)·max t_s (transfers charged half to each action of the stage)."""
    spec = gpt_spec()
    bounds = even_blocks(spec, 4)
    t = stage_times(spec, bounds, BETA)
    f = stage_sums(spec.forward_times, bounds)
    b = stage_sums(spec.backward_times, bounds)
    x = (t - f - b) / 2
    for m in (4, 8, 16):
        step = simulate(gpipe(4, m), f + x, b + x).makespan
        assert step == pytest.approx(t.sum() + (m - 1) * t.max(), rel=1e-12)
        runs = [simulate(one_f_one_b(4, k), f + x, b + x).makespan for k in (m, m + 1)]
        assert runs[1] - runs[0] == pytest.approx(t.max(), rel=1e-9)


@given(model_specs(max_layers=6), st.integers(1, 12), st.data())
@settings(deadline=None, max_examples=60)
def test_no_schedule_beats_m_times_the_slowest_stage(spec, m, data):
    """The slowest stage works m·max_s t_s per step, so no simulated step is shorter."""
    n = spec.num_layers
    p = data.draw(st.integers(1, n))
    bounds = data.draw(st.sampled_from(list(all_boundaries(n, p))))
    t = stage_times(spec, bounds, 4.0)
    f = stage_sums(spec.forward_times, bounds)
    b = stage_sums(spec.backward_times, bounds)
    x = (t - f - b) / 2
    for generator in (gpipe, one_f_one_b):
        step = simulate(generator(p, m), f + x, b + x).makespan
        assert step >= m * t.max() - 1e-9


# --- memory ------------------------------------------------------------------------------


@pytest.mark.parametrize("p, m", [(4, 8), (4, 2), (6, 3), (1, 5), (3, 3)])
def test_in_flight_is_what_the_simulator_stashes(p, m):
    """min(m, p - s) under 1F1B and m under GPipe: the simulated peak stash per stage."""
    assert (
        stage_in_flight(p, m).tolist()
        == simulate(one_f_one_b(p, m), 1.0, 2.0).peak_in_flight.tolist()
    )
    assert (
        stage_in_flight(p, m, "GPipe").tolist()
        == simulate(gpipe(p, m), 1.0, 2.0).peak_in_flight.tolist()
    )
    assert stage_in_flight(p, m).tolist() == [min(m, p - s) for s in range(p)]


def test_stage_memory_of_the_lesson_split():
    """16 bytes per parameter plus min(m, p - s) stashes; the first stage stashes the most."""
    spec = gpt_spec()
    bounds = even_blocks(spec, 4)
    memory = stage_memory(spec, bounds, 8)
    params = stage_sums(spec.num_params, bounds)
    stash = stage_sums(spec.activation_bytes, bounds)
    assert sum(ADAM_MIXED_PRECISION.values()) == 16.0
    assert np.allclose(memory["total"], 16 * params + np.array([4, 3, 2, 1]) * stash)
    assert np.allclose(memory["optimizer"], 12 * params)
    assert memory["activations"].idxmax() == 0
    assert memory["total"].idxmax() == 0
    gpipe_memory = stage_memory(spec, bounds, 8, schedule="GPipe")
    assert np.allclose(gpipe_memory["activations"], 8 * stash)


@given(model_specs(), st.integers(1, 6), st.sampled_from(["1F1B", "GPipe"]), st.data())
@settings(deadline=None, max_examples=60)
def test_layer_memory_rows_add_up_to_stage_memory(spec, m, schedule, data):
    """Stage s's memory is the sum of its layers' entries in row s, for every partition; each entry
    is 16 bytes per parameter plus in_flight[s] stashes of that layer."""
    n = spec.num_layers
    p = data.draw(st.integers(1, n))
    grid = layer_memory(spec, p, m, schedule)
    assert grid.shape == (p, n) and not grid.flags.writeable
    in_flight = stage_in_flight(p, m, schedule)
    assert np.array_equal(
        grid, 16 * spec.num_params[None, :] + in_flight[:, None] * spec.activation_bytes[None, :]
    )
    for bounds in itertools.islice(all_boundaries(n, p), 50):
        stages = enumerate(zip(bounds[:-1], bounds[1:], strict=True))
        rows = [grid[s, a:b].sum() for s, (a, b) in stages]
        assert np.allclose(rows, stage_memory(spec, bounds, m, schedule)["total"], rtol=1e-12)


# --- the min-max partition against brute force ---------------------------------------------

GRID_COSTS = st.lists(st.integers(0, 12).map(float), min_size=1, max_size=9)


@given(GRID_COSTS, st.data())
@settings(deadline=None, max_examples=200)
def test_min_max_partition_of_plain_costs_equals_brute_force(costs, data):
    """The DP's bottleneck and boundaries equal the lexicographically first optimum over all
    C(n - 1, p - 1) sets of cuts."""
    n = len(costs)
    p = data.draw(st.integers(1, n))
    got = min_max_partition(costs, p)
    best, arg = brute_force(n, p, lambda b: stage_sums(costs, b))
    assert got.bottleneck == best
    assert got.boundaries == arg
    assert max(got.stage_costs) == got.bottleneck
    assert got.stage_costs == tuple(stage_sums(costs, arg))


@given(model_specs(), st.integers(1, 6), st.data())
@settings(deadline=None, max_examples=120)
def test_min_max_partition_with_transfers_and_memory_equals_brute_force(spec, m, data):
    """With stage_costs (transfers in the time, 1F1B memory) and any memory limit: the same
    optimum as brute force over every partition that fits; below the least feasible limit, a
    ValueError that states it."""
    n = spec.num_layers
    p = data.draw(st.integers(1, n))
    beta = 0.5
    costs = stage_costs(spec, p, beta, m)

    def memory(b):
        return stage_memory(spec, b, m)["total"].to_numpy()

    lowest, _ = brute_force(n, p, memory)
    limit = data.draw(
        st.one_of(st.none(), st.sampled_from([lowest, lowest + 8.0, 2 * lowest + 1, lowest - 1.0]))
    )
    if limit is not None and limit <= 0:
        limit = None
    fits = (lambda b: True) if limit is None else (lambda b: memory(b).max() <= limit)
    best, arg = brute_force(n, p, lambda b: stage_times(spec, b, beta), fits)
    if arg is None:
        with pytest.raises(ValueError, match="smallest feasible limit is") as err:
            min_max_partition(costs, p, memory_limit=limit)
        assert f"{lowest:.6g} B" in str(err.value)
        return
    got = min_max_partition(costs, p, memory_limit=limit)
    assert got.bottleneck == pytest.approx(best, rel=1e-12)
    assert max(stage_times(spec, got.boundaries, beta)) == pytest.approx(best, rel=1e-12)
    assert np.allclose(got.stage_memory, memory(got.boundaries))
    if limit is not None:
        assert max(got.stage_memory) <= limit


def test_lesson_partitions():
    """The lesson's numbers: min-max beats the equal split; a 16 GiB limit moves blocks off stage 0."""
    spec = gpt_spec()
    costs = stage_costs(spec, 4, BETA, 8)
    equal = stage_times(spec, even_blocks(spec, 4), BETA)
    best = min_max_partition(costs, 4)
    limited = min_max_partition(costs, 4, memory_limit=16 * 2**30)
    assert best.layer_counts == (8, 6, 6, 7)
    assert limited.layer_counts == (6, 7, 7, 7)
    assert best.bottleneck < limited.bottleneck < equal.max()
    assert max(stage_memory(spec, even_blocks(spec, 4), 8)["total"]) > 16 * 2**30
    assert max(limited.stage_memory) <= 16 * 2**30 < max(best.stage_memory)


# --- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bounds, message",
    [
        ((1, 3, 5), r"skip layers 0\.\.0"),
        ((0, 3, 4), r"skip layers 4\.\.4"),
        ((0, 3, 2, 5), r"repeat layers 2\.\.2"),
        ((0, 2, 2, 5), "stage 1 holds no layer"),
        ((0, 3, 6), "name layers up to 5 but the model has 5"),
        ((0,), "at least 2 entries"),
        ((-1, 5), "start at -1"),
    ],
)
def test_bad_boundaries_say_what_is_skipped_or_repeated(bounds, message):
    with pytest.raises(ValueError, match=message):
        check_boundaries(bounds, 5)


@pytest.mark.parametrize("bounds", [(0, 2.0, 5), (0, True, 5), "05", 5])
def test_boundaries_of_the_wrong_type(bounds):
    with pytest.raises(TypeError, match="boundaries"):
        check_boundaries(bounds, 5)


def test_min_max_partition_bad_input():
    with pytest.raises(ValueError, match="num_stages = 4 exceeds the 3 layers"):
        min_max_partition([1.0, 2.0, 3.0], 4)
    with pytest.raises(ValueError, match="num_stages must be >= 1"):
        min_max_partition([1.0, 2.0], 0)
    with pytest.raises(ValueError, match=r"costs\[1\] = -1"):
        min_max_partition([1.0, -1.0], 1)
    with pytest.raises(ValueError, match="memory_limit needs the stages' memory"):
        min_max_partition([1.0, 2.0], 1, memory_limit=10.0)
    spec = gpt_spec()
    with pytest.raises(ValueError, match="built for 4 stages but num_stages = 3"):
        min_max_partition(stage_costs(spec, 4, BETA, 8), 3)
    with pytest.raises(ValueError, match=r"smallest feasible limit is .* GiB"):
        min_max_partition(stage_costs(spec, 4, BETA, 8), 4, memory_limit=8 * 2**30)
    with pytest.raises(ValueError, match="memory_limit"):
        min_max_partition(stage_costs(spec, 4, BETA, 8), 4, memory_limit=-1.0)


def test_other_bad_input_names_the_argument():
    spec = gpt_spec()
    with pytest.raises(ValueError, match="link_bandwidth"):
        stage_times(spec, even_blocks(spec, 2), 0.0)
    with pytest.raises(TypeError, match="spec must be a ModelSpec"):
        stage_times([1.0, 2.0], (0, 2), 1.0)
    with pytest.raises(ValueError, match="schedule must be one of"):
        stage_memory(spec, even_blocks(spec, 2), 4, schedule="zb")
    with pytest.raises(ValueError, match="num_microbatches must be >= 1"):
        stage_memory(spec, even_blocks(spec, 2), 0)
    with pytest.raises(ValueError, match="bytes_per_param must be a dict"):
        stage_memory(spec, even_blocks(spec, 2), 4, bytes_per_param={"weights": 2.0})
    with pytest.raises(ValueError, match="cut_bytes must have n - 1 = 2"):
        ModelSpec.from_arrays([1, 1, 1], [1, 1, 1], [0, 0, 0], [0, 0, 0], [1.0])
    with pytest.raises(ValueError, match="backward_times has 2 entries"):
        ModelSpec.from_arrays([1, 1, 1], [1, 1], [0, 0, 0], [0, 0, 0], [1.0, 1.0])
    with pytest.raises(ValueError, match="layer 'x': forward_time must be >= 0"):
        Layer("x", -1.0, 1.0, 0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="non-empty list of Layer"):
        ModelSpec(())
    with pytest.raises(ValueError, match="hidden must be an int"):
        gpt_spec(hidden=2048.0)


def test_spec_arrays_are_read_only():
    spec = gpt_spec()
    with pytest.raises(ValueError, match="read-only"):
        spec.layer_times[0] = 1.0
