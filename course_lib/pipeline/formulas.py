"""Closed forms for balanced pipeline stages (pipe02-pipe04); the tests check each against simulate().

p = num_stages (or num_ranks for interleaved schedules), m = num_microbatches, s = stage
(0-based), v = chunks_per_rank, t_f / t_b / t_w = forward / backward (input-gradient when split) /
weight-gradient time of one microbatch on one stage (the same on every stage), delta =
point-to-point latency per hop.
"""

from __future__ import annotations

from ._validate import check_duration, check_int, check_pipeline_shape, check_stage


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


def interleaved_overhead(num_ranks: int, num_microbatches: int, chunks_per_rank: int) -> float:
    """Overhead relative to ideal compute (p - 1)/(v·m) of interleaved 1F1B (pipe04).

    Narayanan et al. 2021 ("Efficient Large-Scale Language Model Training on GPU Clusters Using
    Megatron-LM", Sec. 2.2.2): with v chunks per rank, each costing t_f/v and t_b/v, the bubble
    shrinks to (p - 1)(t_f + t_b)/v while the ideal compute stays m(t_f + t_b). The simulator
    gives exactly this at zero latency for every (p, m, v) :func:`interleaved_1f1b` accepts with
    m >= p (tests). For m < p (PyTorch's relaxation, rounds of m < p microbatches) it gives more,
    (p - 1 + (v - 1)(p - m))/(v·m): each change of chunk leaves p - m slots empty — an
    empirical rule found with the simulator, not a published form.
    """
    p = check_int("num_ranks", num_ranks)
    m = check_int("num_microbatches", num_microbatches)
    v = check_int("chunks_per_rank", chunks_per_rank)
    return (p - 1) / (v * m)


def boundary_crossings(num_ranks: int, chunks_per_rank: int) -> int:
    """Point-to-point transfers one microbatch's forward makes under v chunks per rank: v·p - 1 (pipe04).

    The model is cut into v·p stages, so a forward crosses v·p - 1 stage boundaries (and its
    backward as many, the other way); with stage k on rank k % p every boundary links two
    different ranks when p > 1 — versus p - 1 without interleaving. With one rank (p = 1) no
    boundary crosses ranks: 0. The tests count the cross-rank dependencies of interleaved_1f1b.
    """
    p = check_int("num_ranks", num_ranks)
    v = check_int("chunks_per_rank", chunks_per_rank)
    return v * p - 1 if p > 1 else 0


def zero_bubble_h1_bubble(
    num_stages: int,
    num_microbatches: int,
    forward_time: float,
    backward_time: float,
    weight_time: float,
) -> float:
    """Per-stage idle time of ZB-H1: makespan - m(t_f + t_b + t_w) = (p - 1)(t_f + t_b - t_w) (pipe04).

    Qi et al. 2024 ("Zero Bubble Pipeline Parallelism", ICLR 2024, Sec. 2.1 and Table 2; Fig. 3
    top): 1F1B with the backward split idles (p - 1)(t_f + t_b + t_w) per stage, ZB-H1
    (p - 1)(t_f + t_b - t_w) — a third of it when t_f = t_b = t_w. Checked against the simulator
    at zero latency: exact whenever m >= p and t_w <= min(t_f, t_b); outside that range (a
    W longer than a forward or a backward, or fewer microbatches than stages) the deferred W no
    longer fit the bubbles and the form does not hold, so this raises ValueError there — simulate
    zero_bubble_h1 instead.
    """
    p, m = check_pipeline_shape(num_stages, num_microbatches)
    t_f = check_duration("forward_time", forward_time)
    t_b = check_duration("backward_time", backward_time)
    t_w = check_duration("weight_time", weight_time)
    if m < p:
        raise ValueError(
            f"the ZB-H1 bubble (p - 1)(t_f + t_b - t_w) needs num_microbatches >= num_stages, "
            f"got num_microbatches={m} < num_stages={p}; simulate zero_bubble_h1 instead"
        )
    if t_w > min(t_f, t_b):
        raise ValueError(
            f"the ZB-H1 bubble (p - 1)(t_f + t_b - t_w) needs weight_time <= min(forward_time, "
            f"backward_time), got weight_time={t_w} > {min(t_f, t_b)}; simulate zero_bubble_h1 "
            "instead"
        )
    return (p - 1) * (t_f + t_b - t_w)


def peak_in_flight_zero_bubble_h1(num_stages: int, num_microbatches: int, stage: int) -> int:
    """Peak stashed activations on stage s under ZB-H1, counted until W: min(m, p) on every stage (pipe04).

    Stage s holds its min(m, p - s) 1F1B stashes plus the s whose W it defers, so every stage
    peaks at min(m, p) — the peak of 1F1B's first stage, which Qi et al. 2024 (Sec. 2.1) keep as
    the memory bound ("the same number of in-flight microbatches" on all stages).
    """
    p, m = check_pipeline_shape(num_stages, num_microbatches)
    check_stage(stage, p)
    return min(m, p)
