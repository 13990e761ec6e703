"""Closed forms for balanced pipeline stages (pipe02, pipe03); the tests check each against simulate().

p = num_stages, m = num_microbatches, s = stage (0-based), t_f / t_b = forward / backward time of
one microbatch on one stage (the same on every stage), delta = point-to-point latency per hop.
"""

from __future__ import annotations

from ._validate import check_duration, check_pipeline_shape, check_stage


def fill_drain_makespan(
    num_stages: int,
    num_microbatches: int,
    forward_time: float,
    backward_time: float,
    p2p_latency: float = 0.0,
) -> float:
    """GPipe makespan (m + p - 1)(t_f + t_b) + 2(p - 1)·delta (Huang et al. 2019; pipe02).

    Derivation (balanced stages, one stage per rank, forwards then backwards on every stage):
    forward F(s, j) starts at s(t_f + delta) + j·t_f — it waits for F(s-1, j) plus one hop and
    for F(s, j-1), and both give the same time — so the last forward ends at
    (p - 1)(t_f + delta) + m·t_f. The last stage then runs its m backwards back to back; B(s, j)
    waits for B(s+1, j) plus one hop, so each earlier stage adds t_b + delta, and stage 0 ends
    (p - 1)(t_b + delta) + m·t_b later. Total: (m + p - 1)(t_f + t_b) + 2(p - 1)·delta — the
    latency is paid once per hop on the way in (fill) and once on the way out (drain); in the
    steady parts it overlaps with the compute of the next microbatch.
    """
    p, m = check_pipeline_shape(num_stages, num_microbatches)
    t_f = check_duration("forward_time", forward_time)
    t_b = check_duration("backward_time", backward_time)
    delta = check_duration("p2p_latency", p2p_latency)
    return (m + p - 1) * (t_f + t_b) + 2 * (p - 1) * delta


def fill_drain_idle_fraction(num_stages: int, num_microbatches: int) -> float:
    """Elapsed idle fraction (p - 1)/(m + p - 1) of a balanced fill-drain pipeline (pipe02).

    The share of the p·makespan device-time that is idle: 1 - p·m(t_f + t_b) / (p·makespan);
    Huang et al. 2019 (GPipe) state the bubble overhead as O((K - 1)/(M + K - 1)) with K stages and
    M microbatches.
    """
    p, m = check_pipeline_shape(num_stages, num_microbatches)
    return (p - 1) / (m + p - 1)


def fill_drain_overhead(num_stages: int, num_microbatches: int) -> float:
    """Overhead relative to ideal compute (p - 1)/m of a balanced fill-drain pipeline (pipe02).

    makespan / (m(t_f + t_b)) - 1; the quantity Narayanan et al. 2021 ("Efficient Large-Scale
    Language Model Training on GPU Clusters Using Megatron-LM", Sec. 2.2.1) call the bubble time
    fraction. It is not the idle fraction: for p = 4, m = 8 it is 3/8 = 0.375, the idle fraction
    3/11 ≈ 0.273.
    """
    p, m = check_pipeline_shape(num_stages, num_microbatches)
    return (p - 1) / m


def one_f_one_b_warmup(num_stages: int, num_microbatches: int, stage: int) -> int:
    """Warm-up forwards of stage s under 1F1B: min(m, p - s - 1) (pipe03)."""
    p, m = check_pipeline_shape(num_stages, num_microbatches)
    s = check_stage(stage, p)
    return min(m, p - s - 1)


def peak_in_flight_gpipe(num_stages: int, num_microbatches: int, stage: int | None = None) -> int:
    """Peak stashed activations on any stage under GPipe: m (all forwards run before any backward) (pipe02)."""
    p, m = check_pipeline_shape(num_stages, num_microbatches)
    if stage is not None:
        check_stage(stage, p)
    return m


def peak_in_flight_one_f_one_b(num_stages: int, num_microbatches: int, stage: int) -> int:
    """Peak stashed activations on stage s under 1F1B: min(m, p - s) (pipe03).

    The warm-up forwards plus the first steady-state forward are live before the first backward
    on that stage frees one.
    """
    p, m = check_pipeline_shape(num_stages, num_microbatches)
    s = check_stage(stage, p)
    return min(m, p - s)
