"""Plausible wrong answers to cost03_overlap, each of which must lose points."""

from __future__ import annotations

from tests.mutants import Mutant

_NO_MERGE = '''
def hta_overlap_ratio(comm, compute):
    """Sums the overlap of every (comm, compute) pair over the sum of comm durations."""
    comm = np.asarray(comm, dtype=float).reshape(-1, 2)
    compute = np.asarray(compute, dtype=float).reshape(-1, 2)
    both = sum(max(0.0, min(a[1], b[1]) - max(a[0], b[0])) for a in comm for b in compute)
    return float(both / (comm[:, 1] - comm[:, 0]).sum())
'''

_MERGE_COMPUTE_ONLY = '''
def hta_overlap_ratio(comm, compute):
    """Merges the compute kernels but divides by the sum of comm durations (no comm merge)."""
    comm = np.asarray(comm, dtype=float).reshape(-1, 2)
    merged = []
    for a, b in sorted(map(tuple, np.asarray(compute, dtype=float).reshape(-1, 2))):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        elif b > a:
            merged.append([a, b])
    both = sum(max(0.0, min(a[1], b[1]) - max(a[0], b[0])) for a in comm for b in merged)
    return float(both / (comm[:, 1] - comm[:, 0]).sum())
'''

_DELEGATES = '''
def hta_overlap_ratio(comm, compute):
    """Calls course_lib's overlap_ratio, which the grade cell disables."""
    return OV.overlap_ratio(comm, compute)
'''

_EXPOSED_FRACTION = '''
def hta_overlap_ratio(comm, compute):
    """Returns 1 - ratio: the fraction of communication with no computation running."""
    comm = np.asarray(comm, dtype=float).reshape(-1, 2)
    comm_time = sum(b - a for a, b in OV_merge(comm))
    return 1.0 - sum(
        max(0.0, min(a[1], b[1]) - max(a[0], b[0]))
        for a in OV_merge(comm)
        for b in OV_merge(np.asarray(compute, dtype=float).reshape(-1, 2))
    ) / comm_time


def OV_merge(iv):
    out = []
    for a, b in sorted(map(tuple, iv)):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        elif b > a:
            out.append([a, b])
    return out
'''

_TRACE_CPU = """
rank_ratios = np.empty(len(profiles))
for _rank, _events in profiles.items():
    _x = _events[_events["ph"] == "X"]
    _nccl = _x["name"].str.startswith("nccl")
    rank_ratios[_rank] = overlap_ratio(intervals(_x[_nccl]), intervals(_x[~_nccl]))
"""

_TRACE_RANK0 = """
_k = profiles[0][profiles[0]["cat"] == "kernel"]
_nccl = _k["name"].str.startswith("nccl")
rank_ratios = np.full(4, overlap_ratio(intervals(_k[_nccl]), intervals(_k[~_nccl])))
"""

_TRACE_EXPOSED = """
rank_ratios = np.empty(len(profiles))
for _rank, _events in profiles.items():
    _k = _events[_events["cat"] == "kernel"]
    _nccl = _k["name"].str.startswith("nccl")
    rank_ratios[_rank] = 1 - overlap_ratio(intervals(_k[_nccl]), intervals(_k[~_nccl]))
"""

_SMALL = """
_w, _g = [2 * ms] * 4, [75e6, 75e6, 75e6, 25e6]
_small = bucketed_allreduce_timeline(_w, _g, 1.0, 25e9, optimizer_time=1 * ms)
"""

_BUCKET_RUNS = """
_runs = [
    bucketed_allreduce_timeline(
        layer_backward_times, layer_grad_bytes, cap, 20e9, 200e-6, 0.4, optimizer_time,
        comm_contention=0.3,
    )
    for cap in CAP_CANDIDATES
]
_steps = np.array([t.step_time for t in _runs])
_ratios = np.array([t.overlap_ratio for t in _runs])
slowdown_of_best_ratio = float(_steps[np.argmax(_ratios)] - _steps.min())
"""

_CONTENTION_RUN = """
_run = bucketed_allreduce_timeline(
    layer_backward_times, layer_grad_bytes, 25 * MiB, 12e9, latency, 0.19, optimizer_time,
    comm_contention=0.3,
)
"""

MUTANTS = [
    # Exercise 1: implement HTA's overlap ratio
    Mutant(
        name="overlap_no_merge",
        why="sums pairwise overlaps of unmerged kernels over the sum of comm durations",
        cells={"overlap_impl_answer": _NO_MERGE},
        grades=("overlap_impl_tests",),
    ),
    Mutant(
        name="overlap_comm_not_merged",
        why="merges the compute kernels but not the (overlapping) collectives",
        cells={"overlap_impl_answer": _MERGE_COMPUTE_ONLY},
        grades=("overlap_impl_tests",),
    ),
    Mutant(
        name="overlap_delegates",
        why="calls course_lib.overlap.overlap_ratio, which the grade cell forbids",
        cells={"overlap_impl_answer": _DELEGATES},
        grades=("overlap_impl_tests",),
    ),
    Mutant(
        name="overlap_exposed_fraction",
        why="returns 1 - ratio, the fraction of communication with nothing else running",
        cells={"overlap_impl_answer": _EXPOSED_FRACTION},
        grades=("overlap_impl_tests",),
    ),
    # Exercise 2: per-rank ratios from the trace
    Mutant(
        name="trace_cpu_events_as_compute",
        why="counts every complete event (CPU ops, launches) as computation",
        cells={"trace_ratio_answer": _TRACE_CPU},
        grades=("trace_ratio_tests",),
    ),
    Mutant(
        name="trace_rank0_everywhere",
        why="reports rank 0's ratio for every rank",
        cells={"trace_ratio_answer": _TRACE_RANK0},
        grades=("trace_ratio_tests",),
    ),
    Mutant(
        name="trace_exposed_fraction",
        why="reports 1 - ratio",
        cells={"trace_ratio_answer": _TRACE_EXPOSED},
        grades=("trace_ratio_tests",),
    ),
    # Exercise 3: exposed on the critical path
    Mutant(
        name="exposed_timeline_measure",
        why="takes (1 - ratio) x communication, the timeline's exposed time, for both answers",
        cells={
            "exposed_answer": _SMALL
            + "exposed_critical = _small.exposed_comm\n"
            + "saving_shorter_comm = 0.2 * _small.exposed_comm\n"
        },
        grades=("exposed_tests",),
    ),
    Mutant(
        name="exposed_last_bucket",
        why="counts only the last bucket's all-reduce as exposed",
        cells={
            "exposed_answer": "exposed_critical = 75e6 / 25e9  # the last all-reduce: 3 ms\n"
            "saving_shorter_comm = 0.2 * exposed_critical\n"
        },
        grades=("exposed_tests",),
    ),
    Mutant(
        name="exposed_all_comm",
        why="takes all communication as exposed, including the first all-reduce's slack",
        cells={
            "exposed_answer": _SMALL
            + "exposed_critical = float(_small.comm_durations.sum())\n"
            + "saving_shorter_comm = 0.2 * exposed_critical\n"
        },
        grades=("exposed_tests",),
    ),
    # Exercise 4: best bucket cap
    Mutant(
        name="bucket_highest_ratio",
        why="picks the cap with the highest overlap ratio",
        cells={
            "bucket_answer": _BUCKET_RUNS
            + "best_cap_bytes = float(CAP_CANDIDATES[np.argmax(_ratios)])\n"
        },
        grades=("bucket_tests",),
    ),
    Mutant(
        name="bucket_ddp_default",
        why="keeps DDP's default 25 MiB without measuring",
        cells={"bucket_answer": _BUCKET_RUNS + "best_cap_bytes = 25 * MiB\n"},
        grades=("bucket_tests",),
    ),
    Mutant(
        name="bucket_megabytes",
        why="answers 50 MB instead of 50 MiB",
        cells={"bucket_answer": _BUCKET_RUNS + "best_cap_bytes = 50e6\n"},
        grades=("bucket_tests",),
    ),
    Mutant(
        name="bucket_ratio_equals_best",
        why="right cap, but assumes the highest ratio is also the fastest (no slowdown)",
        cells={
            "bucket_answer": _BUCKET_RUNS
            + "best_cap_bytes = float(CAP_CANDIDATES[np.argmin(_steps)])\n"
            + "slowdown_of_best_ratio = 0.0\n"
        },
        grades=("bucket_tests",),
    ),
    # Exercise 5: overlap under contention
    Mutant(
        name="contention_saving_is_overlap",
        why="takes the overlapped time O as the saving, ignoring both slowdowns",
        cells={
            "contention_answer": _CONTENTION_RUN
            + "overlap_saving = total_length(_run.comm) - _run.exposed_comm\n"
            + "max_comm_contention = 1 / 0.9\n"
        },
        grades=("contention_tests",),
    ),
    Mutant(
        name="contention_ignores_comm_slowdown",
        why="models only the compute slowdown (c' = 0)",
        cells={
            "contention_answer": "_run = bucketed_allreduce_timeline(\n"
            "    layer_backward_times, layer_grad_bytes, 25 * MiB, 12e9, latency, 0.19,\n"
            "    optimizer_time,\n"
            ")\n"
            "overlap_saving = _run.serial_step_time - _run.step_time\n"
            "max_comm_contention = 1 / 0.9\n"
        },
        grades=("contention_tests",),
    ),
    Mutant(
        name="contention_break_even_is_c",
        why="right saving, but takes c itself as the break-even c'",
        cells={
            "contention_answer": _CONTENTION_RUN
            + "overlap_saving = _run.serial_step_time - _run.step_time\n"
            + "max_comm_contention = 0.9\n"
        },
        grades=("contention_tests",),
    ),
    # Exercise 6: a faster GPU, a worse ratio
    Mutant(
        name="faster_gpu_ratio_means_faster",
        why="assumes the run with the higher overlap ratio is also the faster one",
        cells={"faster_gpu_answer": 'faster_gpu = "A, A"'},
        grades=("faster_gpu_tests",),
    ),
    Mutant(
        name="faster_gpu_fast_gpu_hides_more",
        why="assumes the faster GPU also has the higher ratio",
        cells={"faster_gpu_answer": 'faster_gpu = "B, B"'},
        grades=("faster_gpu_tests",),
    ),
]
