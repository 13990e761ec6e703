"""Plausible wrong answers to cost03_overlap, each of which must lose points (MUTANTS), and right
answers reached another way, each of which must keep full marks (RIGHT_ANSWERS)."""

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

_GPU_RATIO = """
rank_ratios = np.empty(len(traces))
for _rank, _events in traces.items():
    _gpu = _events[_events["stream"].notna()]
    _comm = _gpu["name"].str.match(r"^nccl.*Kernel")
    _memory = _gpu["name"].str.match(r"^(Memcpy|Memset|dma)")
    _sync = _gpu["name"].str.contains("Sync")
    _compute = {compute}
    rank_ratios[_rank] = overlap_ratio(intervals(_gpu[_comm]), intervals(_gpu[_compute]))
"""

_TRACE_CPU = """
rank_ratios = np.empty(len(traces))
for _rank, _events in traces.items():
    _x = _events[_events["ph"] == "X"]
    _nccl = _x["name"].str.startswith("nccl")
    rank_ratios[_rank] = overlap_ratio(intervals(_x[_nccl]), intervals(_x[~_nccl]))
"""

_TRACE_RANK0 = """
_k = traces[0][traces[0]["cat"] == "kernel"]
_nccl = _k["name"].str.startswith("nccl")
rank_ratios = np.full(4, overlap_ratio(intervals(_k[_nccl]), intervals(_k[~_nccl])))
"""

_TRACE_PER_STEP = """
rank_ratios = np.empty(len(traces))
for _rank, _events in traces.items():
    _per_step = []
    for _step in ("ProfilerStep#0", "ProfilerStep#1", "ProfilerStep#2"):
        _s = _events[_events["name"] == _step].iloc[0]
        _in = _events[(_events["ts"] >= _s["ts"]) & (_events["ts"] < _s["ts"] + _s["dur"])]
        _k = _in[_in["cat"] == "kernel"]
        _nccl = _k["name"].str.startswith("nccl")
        _per_step.append(overlap_ratio(intervals(_k[_nccl]), intervals(_k[~_nccl])))
    rank_ratios[_rank] = np.mean(_per_step)
"""

_TRACE_KERNELS_ONLY = """
rank_ratios = np.empty(len(traces))
for _rank, _events in traces.items():
    _k = _events[_events["cat"] == "kernel"]  # Memcpy, Memset and Stream Sync have other cats
    _nccl = _k["name"].str.startswith("nccl")
    rank_ratios[_rank] = overlap_ratio(intervals(_k[_nccl]), intervals(_k[~_nccl]))
"""

_PROFILES_RATIO = """
rank_ratios = np.empty(len(profiles))
for _rank, _events in profiles.items():
    _gpu = _events[_events["stream"].notna()]
    _comm = _gpu["name"].str.match(r"^nccl.*Kernel")
    _memory = _gpu["name"].str.match(r"^(Memcpy|Memset|dma)")
    _sync = _gpu["name"].str.contains("Sync")
    _compute = {compute}
    rank_ratios[_rank] = overlap_ratio(intervals(_gpu[_comm]), intervals(_gpu[_compute]))
"""

_TRACE_COMPUTE_STREAM = """
from course_lib.tracegen import COMPUTE_STREAM

rank_ratios = np.empty(len(traces))
for _rank, _events in traces.items():
    _k = _events[_events["cat"] == "kernel"]
    _nccl = _k["name"].str.match(r"^nccl.*Kernel")
    _compute = ~_nccl & (_k["stream"] == COMPUTE_STREAM)
    rank_ratios[_rank] = overlap_ratio(intervals(_k[_nccl]), intervals(_k[_compute]))
"""

_TRACE_HTA_REGEX = """
import re

_COMPUTE_RE = re.compile(r"(^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)")  # HTA 0.5.0
rank_ratios = np.empty(len(traces))
for _rank, _events in traces.items():
    _gpu = _events[_events["stream"].notna()]
    _comm = _gpu["name"].str.match(r"^nccl.*Kernel")
    _compute = ~_gpu["name"].map(lambda n: bool(_COMPUTE_RE.match(n)))
    rank_ratios[_rank] = overlap_ratio(intervals(_gpu[_comm]), intervals(_gpu[_compute]))
"""

_STEP = """
_layers = [f"bwd L{{i}}" for i in range(4, -1, -1)]
_reduces = [f"all-reduce L{{i}}" for i in range(4, -1, -1)]
_durations = {{"host": 7 * ms, **{{op: 2 * ms for op in _layers}}, "optimizer": 1 * ms}}
_durations |= dict(zip(_reduces, np.array([1, 2.5, 3, 2, 1.5]) * ms, strict=True))
_deps = stream_order_edges({{"compute": [*_layers, "optimizer"], {comm_order}}})
_deps += [(f"bwd L{{i}}", f"all-reduce L{{i}}") for i in range(5)]
_deps += [{host}("all-reduce L0", "optimizer")]
_lanes = {{op: "comm stream" if op.startswith("all") else "compute stream" for op in _durations}}
_graph = step_graph(_durations, _deps, _lanes)
"""
_STEP_RIGHT = _STEP.format(comm_order='"comm": _reduces', host='("host", "bwd L2"), ')
_STEP_NO_QUEUE = _STEP.format(comm_order="", host='("host", "bwd L2"), ') + (
    '_deps += [(_r, "optimizer") for _r in _reduces]\n'
    "_graph = step_graph(_durations, _deps, _lanes)\n"
)
_STEP_NO_HOST = _STEP.format(comm_order='"comm": _reduces', host="")

_SCHEDULE = """
from course_lib.graph import schedule

_s = schedule(_graph)
_is_comm = _s["op"].str.startswith("all")
_comm_iv = _s.loc[_is_comm, ["start", "end"]].to_numpy()
_comp_iv = _s.loc[~_is_comm & (_s["op"] != "host"), ["start", "end"]].to_numpy()
"""

_BUCKET_SWEEP = """
def _run(cap, bandwidth=30e9, lat=150e-6, c=0.4, cc=0.2, first=FIRST_BUCKET):
    return bucketed_allreduce_timeline(
        layer_backward_times, layer_grad_bytes, cap, bandwidth, lat, c, optimizer_time,
        first_bucket_bytes=first, comm_contention=cc,
    )
"""


def _best_cap(**kwargs: object) -> str:
    """Solution source: the cap with the shortest step of _run with these keyword arguments."""
    args = "".join(f", {k}={v}" for k, v in kwargs.items())
    return (
        _BUCKET_SWEEP
        + f"_s = [_run(cap{args}).step_time for cap in CAP_CANDIDATES]\n"
        + "best_cap_bytes = float(CAP_CANDIDATES[np.argmin(_s)])\n"
    )


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
    # Exercise 2: per-rank ratios from a trace with copies, memsets and syncs
    Mutant(
        name="trace_memory_as_compute",
        why="counts Memcpy/Memset as computation (HTA counts them in neither set)",
        cells={"trace_ratio_answer": _GPU_RATIO.format(compute="~_comm & ~_sync")},
        grades=("trace_ratio_tests",),
    ),
    Mutant(
        name="trace_sync_as_compute",
        why="counts Stream Sync as computation (HTA 0.2.0's classes: it has a stream and is "
        "neither NCCL nor memory)",
        cells={"trace_ratio_answer": _GPU_RATIO.format(compute="~_comm & ~_memory")},
        grades=("trace_ratio_tests",),
    ),
    Mutant(
        name="trace_every_gpu_event_as_compute",
        why="counts every non-NCCL GPU event as computation",
        cells={"trace_ratio_answer": _GPU_RATIO.format(compute="~_comm")},
        grades=("trace_ratio_tests",),
    ),
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
        cells={
            "trace_ratio_answer": _GPU_RATIO.format(compute="~_comm & ~_memory & ~_sync")
            + "rank_ratios = 1 - rank_ratios\n"
        },
        grades=("trace_ratio_tests",),
    ),
    Mutant(
        name="trace_per_step_mean",
        why="averages the three steps' ratios instead of dividing over the whole trace",
        cells={"trace_ratio_answer": _TRACE_PER_STEP},
        grades=("trace_ratio_tests",),
    ),
    Mutant(
        name="trace_plain_profiles",
        why="applies HTA's classes to `profiles`, which has no prefetch, instead of `traces`",
        cells={"trace_ratio_answer": _PROFILES_RATIO.format(compute="~_comm & ~_memory & ~_sync")},
        grades=("trace_ratio_tests",),
    ),
    Mutant(
        name="trace_profiles_every_gpu_event",
        why="counts every non-NCCL GPU event of `profiles` as computation (the review's case: "
        "on the plain profile no copy overlaps a collective)",
        cells={"trace_ratio_answer": _PROFILES_RATIO.format(compute="~_comm")},
        grades=("trace_ratio_tests",),
    ),
    Mutant(
        name="trace_compute_stream_only",
        why="counts only the compute stream's kernels as computation (HTA merges every stream)",
        cells={"trace_ratio_answer": _TRACE_COMPUTE_STREAM},
        grades=("trace_ratio_tests",),
    ),
    # Exercise 3: communication on the critical path of a described step
    Mutant(
        name="exposed_non_overlapped",
        why="takes the non-overlapped communication (1 - ratio)|C| of the timeline, 5 ms",
        cells={
            "exposed_answer": _STEP_RIGHT
            + _SCHEDULE
            + "exposed_critical = exposed_communication(_comm_iv, _comp_iv)\n"
        },
        grades=("exposed_tests",),
    ),
    Mutant(
        name="exposed_last_bucket",
        why="counts only the last bucket's all-reduce, 1.5 ms",
        cells={"exposed_answer": "exposed_critical = 1.5 * ms\n"},
        grades=("exposed_tests",),
    ),
    Mutant(
        name="exposed_all_comm",
        why="counts all communication, including the all-reduces with slack, 10 ms",
        cells={"exposed_answer": "exposed_critical = (1 + 2.5 + 3 + 2 + 1.5) * ms\n"},
        grades=("exposed_tests",),
    ),
    Mutant(
        name="exposed_comm_not_queued",
        why="forgets that the all-reduces run one at a time on the comm stream",
        cells={
            "exposed_answer": _STEP_NO_QUEUE
            + "exposed_critical = exposed_on_critical_path(_graph)\n"
        },
        grades=("exposed_tests",),
    ),
    Mutant(
        name="exposed_no_host_wait",
        why="forgets that bwd L2 waits for the host",
        cells={
            "exposed_answer": _STEP_NO_HOST
            + "exposed_critical = exposed_on_critical_path(_graph)\n"
        },
        grades=("exposed_tests",),
    ),
    Mutant(
        name="exposed_in_ms",
        why="answers in milliseconds",
        cells={"exposed_answer": "exposed_critical = 6.5\n"},
        grades=("exposed_tests",),
    ),
    Mutant(
        name="exposed_removal_saving",
        why="takes what removing all communication saves, 16.5 - 14 = 2.5 ms, for E",
        cells={
            "exposed_answer": _STEP_RIGHT
            + "_no_comm = step_graph(\n"
            + "    {op: 0.0 if op.startswith('all') else d for op, d in _durations.items()},\n"
            + "    _deps,\n"
            + "    _lanes,\n"
            + ")\n"
            + "exposed_critical = critical_path(_graph).length - critical_path(_no_comm).length\n"
        },
        grades=("exposed_tests",),
    ),
    # Exercise 4: best bucket cap under contention (right: 100 MiB)
    Mutant(
        name="bucket_highest_ratio",
        why="picks the cap with the highest overlap ratio (1 MiB)",
        cells={
            "bucket_answer": _BUCKET_SWEEP
            + "_r = [_run(cap).overlap_ratio for cap in CAP_CANDIDATES]\n"
            + "best_cap_bytes = float(CAP_CANDIDATES[np.argmax(_r)])\n"
        },
        grades=("bucket_tests",),
    ),
    Mutant(
        name="bucket_ddp_default",
        why="keeps DDP's default 25 MiB without measuring",
        cells={"bucket_answer": "best_cap_bytes = 25 * MiB\n"},
        grades=("bucket_tests",),
    ),
    Mutant(
        name="bucket_megabytes",
        why="answers 100 MB instead of 100 MiB",
        cells={"bucket_answer": "best_cap_bytes = 100e6\n"},
        grades=("bucket_tests",),
    ),
    Mutant(
        name="bucket_one_bucket",
        why="one bucket: the fewest latencies (1600 MiB)",
        cells={"bucket_answer": "best_cap_bytes = 1600 * MiB\n"},
        grades=("bucket_tests",),
    ),
    Mutant(
        name="bucket_ignores_comm_contention",
        why="models the compute slowdown c but not the communication slowdown c' (25 MiB)",
        cells={"bucket_answer": _best_cap(cc=0.0)},
        grades=("bucket_tests",),
    ),
    Mutant(
        name="bucket_ignores_compute_contention",
        why="models the communication slowdown c' but not the compute slowdown c (1 MiB)",
        cells={"bucket_answer": _best_cap(c=0.0)},
        grades=("bucket_tests",),
    ),
    Mutant(
        name="bucket_ignores_contention",
        why="sweeps the caps without any contention (1 MiB)",
        cells={"bucket_answer": _best_cap(c=0.0, cc=0.0)},
        grades=("bucket_tests",),
    ),
    Mutant(
        name="bucket_swaps_contention",
        why="swaps c and c' (25 MiB)",
        cells={"bucket_answer": _best_cap(c=0.2, cc=0.4)},
        grades=("bucket_tests",),
    ),
    Mutant(
        name="bucket_ignores_latency",
        why="forgets the 150 µs per all-reduce (1 MiB)",
        cells={"bucket_answer": _best_cap(lat=0.0)},
        grades=("bucket_tests",),
    ),
    Mutant(
        name="bucket_lesson_latency",
        why="keeps the lesson's 50 µs latency instead of 150 µs (25 MiB)",
        cells={"bucket_answer": _best_cap(lat="latency")},
        grades=("bucket_tests",),
    ),
    Mutant(
        name="bucket_lesson_bandwidth",
        why="keeps the lesson's 12 GB/s instead of 30 GB/s (50 MiB)",
        cells={"bucket_answer": _best_cap(bandwidth=12e9)},
        grades=("bucket_tests",),
    ),
    Mutant(
        name="bucket_latency_in_ms",
        why="writes the latency in ms where the model takes seconds (0.15 s; 1600 MiB)",
        cells={"bucket_answer": _best_cap(lat=0.15)},
        grades=("bucket_tests",),
    ),
    Mutant(
        name="bucket_bandwidth_off_by_ten",
        why="types 300 GB/s (3e11) for 30 GB/s (200 MiB)",
        cells={"bucket_answer": _best_cap(bandwidth=3e11)},
        grades=("bucket_tests",),
    ),
    Mutant(
        name="bucket_bandwidth_tenth",
        why="types 3 GB/s (3e9) for 30 GB/s (50 MiB)",
        cells={"bucket_answer": _best_cap(bandwidth=3e9)},
        grades=("bucket_tests",),
    ),
    Mutant(
        name="bucket_slowdowns_as_factors",
        why="passes the slowdown factors 1 + c and 1 + c' as c and c' (1600 MiB)",
        cells={"bucket_answer": _best_cap(c=1.4, cc=1.2)},
        grades=("bucket_tests",),
    ),
    Mutant(
        name="bucket_no_first_bucket",
        why="forgets DDP's 1 MiB first bucket (50 MiB)",
        cells={"bucket_answer": _best_cap(first=None)},
        grades=("bucket_tests",),
    ),
    # Exercise 5: break-even communication slowdown
    Mutant(
        name="contention_break_even_is_c",
        why="takes c itself as the break-even c'",
        cells={"contention_answer": "max_comm_contention = 2.70 / 2.00 - 1\n"},
        grades=("contention_tests",),
    ),
    Mutant(
        name="contention_ratio_as_c",
        why="takes the slowdown ratio 1.35 as c, so 1/1.35",
        cells={"contention_answer": "max_comm_contention = 1 / (2.70 / 2.00)\n"},
        grades=("contention_tests",),
    ),
    Mutant(
        name="contention_one_minus_c",
        why="takes 1 - c as the break-even",
        cells={"contention_answer": "max_comm_contention = 1 - (2.70 / 2.00 - 1)\n"},
        grades=("contention_tests",),
    ),
    Mutant(
        name="contention_coarse_grid",
        why="searches a 0.1 grid, coarser than the two decimals asked",
        cells={
            "contention_answer": "max_comm_contention = max(\n"
            "    x for x in np.arange(0.0, 6.0, 0.1) if 0.35 * x <= 1\n"
            ")\n"
        },
        grades=("contention_tests",),
    ),
]

# Right answers reached another way: each must keep full marks on the grade cells it names.
RIGHT_ANSWERS = [
    Mutant(
        name="contention_grid_search",
        why="finds the break-even c' numerically with the model on a 0.01 grid (2.85)",
        cells={
            "contention_answer": "_grid = np.round(np.arange(0.0, 6.0, 0.01), 2)\n"
            "_pays = []\n"
            "for _cc in _grid:\n"
            "    _t = bucketed_allreduce_timeline(\n"
            "        layer_backward_times, layer_grad_bytes, 25 * MiB, 12e9, latency,\n"
            "        2.70 / 2.00 - 1, optimizer_time, FIRST_BUCKET, _cc,\n"
            "    )\n"
            "    _pays.append(_t.step_time <= _t.serial_step_time)\n"
            "max_comm_contention = float(_grid[np.flatnonzero(_pays).max()])\n"
        },
        grades=("contention_tests",),
    ),
    Mutant(
        name="contention_rounded",
        why="1/c rounded to two decimals (2.86)",
        cells={"contention_answer": "max_comm_contention = 2.86\n"},
        grades=("contention_tests",),
    ),
    Mutant(
        name="trace_hta_regex",
        why="HTA 0.5.0's own computation regular expression, applied with re.match",
        cells={"trace_ratio_answer": _TRACE_HTA_REGEX},
        grades=("trace_ratio_tests",),
    ),
    Mutant(
        name="bucket_min_by_key",
        why="min over the caps keyed by step time (a numpy float)",
        cells={
            "bucket_answer": _BUCKET_SWEEP
            + "best_cap_bytes = min(CAP_CANDIDATES, key=lambda cap: _run(cap).step_time)\n"
        },
        grades=("bucket_tests",),
    ),
    Mutant(
        name="trace_kernels_only",
        why="keeps the events of category kernel: copies, memsets and syncs have other categories",
        cells={"trace_ratio_answer": _TRACE_KERNELS_ONLY},
        grades=("trace_ratio_tests",),
    ),
    Mutant(
        name="exposed_by_hand",
        why="reads the critical path off a hand-drawn timeline: L2, L1, L0",
        cells={"exposed_answer": "exposed_critical = (3 + 2 + 1.5) * ms\n"},
        grades=("exposed_tests",),
    ),
    Mutant(
        name="exposed_with_lanes",
        why="builds the graph with lanes and calls exposed_on_critical_path on it",
        cells={
            "exposed_answer": _STEP_RIGHT + "exposed_critical = exposed_on_critical_path(_graph)\n"
        },
        grades=("exposed_tests",),
    ),
]
