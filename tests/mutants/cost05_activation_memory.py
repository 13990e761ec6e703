"""Plausible wrong answers to cost05_activation_memory, each of which must lose points."""

from __future__ import annotations

from tests.mutants import Mutant

_ALLOC_BEFORE_FREE = '''
def peak_live(events):
    """Event by event, allocations first at equal times, max over every intermediate total."""
    rank = np.where(events["kind"].to_numpy() == "alloc", 0, 1)
    order = np.lexsort((rank, events["time"].to_numpy(dtype=float)))
    sign = np.where(events["kind"].to_numpy() == "alloc", 1.0, -1.0)[order]
    level = np.cumsum(sign * events["bytes"].to_numpy(dtype=float)[order])
    i = int(np.argmax(level))
    return float(events["time"].to_numpy(dtype=float)[order][i]), float(level[i])
'''

_SUM_OF_ALLOCATIONS = '''
def peak_live(events):
    """Adds every allocation, as a per-operator memory table would."""
    allocs = events[events["kind"] == "alloc"]
    return float(allocs["time"].max()), float(allocs["bytes"].sum())
'''

_LAST_MAXIMUM = '''
def peak_live(events):
    """Right levels, but the last time the maximum is reached."""
    sign = np.where(events["kind"].to_numpy() == "alloc", 1.0, -1.0)
    delta = pd.Series(sign * events["bytes"].to_numpy(dtype=float))
    level = delta.groupby(events["time"].to_numpy(dtype=float)).sum().sort_index().cumsum()
    i = len(level) - 1 - int(np.argmax(level.to_numpy()[::-1]))
    return float(level.index[i]), float(level.iloc[i])
'''

_FREED_ONLY = '''
def peak_live(events):
    """Counts only tensors that have both an allocation and a free."""
    freed = set(events.loc[events["kind"] == "free", "tensor"])
    ev = events[events["tensor"].isin(freed)]
    sign = np.where(ev["kind"].to_numpy() == "alloc", 1.0, -1.0)
    delta = pd.Series(sign * ev["bytes"].to_numpy(dtype=float))
    level = delta.groupby(ev["time"].to_numpy(dtype=float)).sum().sort_index().cumsum()
    i = int(np.argmax(level.to_numpy()))
    return float(level.index[i]), float(level.iloc[i])
'''

_WORKSPACES_ALLOCATED_AT_PEAK = """
_ex_peak = peak(EX_STEP)
_at = EX_STEP[(EX_STEP["time"] == _ex_peak.time) & (EX_STEP["kind"] == "alloc")]
ex_peak_workspaces = set(_at.loc[_at["category"] == "workspace", "tensor"])
ex_peak_activation_bytes = float(
    _ex_peak.live.loc[_ex_peak.live["category"] == "activation", "bytes"].sum()
)
"""

_FORMULA_ACTIVATIONS = """
_ex_peak = peak(EX_STEP)
ex_peak_workspaces = set(_ex_peak.live.loc[_ex_peak.live["category"] == "workspace", "tensor"])
ex_peak_activation_bytes = 8 * activation_bytes_per_layer(2048, 1, 1024, 16, recompute="selective")
"""

_END_OF_FORWARD = """
_ex_peak = peak(EX_STEP)
ex_peak_workspaces = set(_ex_peak.live.loc[_ex_peak.live["category"] == "workspace", "tensor"])
_end = EX_STEP.loc[EX_STEP["phase"] == "forward", "time"].max()
_life = lifetimes(EX_STEP)
_then = _life[(_life["alloc_time"] <= _end) & ~(_life["free_time"] <= _end)]
ex_peak_activation_bytes = float(_then.loc[_then["category"] == "activation", "bytes"].sum())
"""

_ALLOCATOR_SEQUENCE = """
_seq = CachingAllocator()
for _op, _name, _size in [
    ("malloc", "a", 6 * MiB), ("malloc", "b", 6 * MiB), ("malloc", "c", 6 * MiB),
    ("free", "a", 0), ("free", "c", 0), ("malloc", "d", 7 * MiB), ("malloc", "e", 7 * MiB),
    ("malloc", "f", 300 * KiB), ("free", "b", 0),
]:
    _seq.malloc(_name, _size) if _op == "malloc" else _seq.free(_name)
"""

_FIVE = "96 * activation_bytes_per_layer(2048, 1, 12288, 96, tensor_parallel=8, sequence_parallel={sp}, recompute={r!r})"

MUTANTS = [
    # Exercise 1: the sweep
    Mutant(
        name="peak_allocations_before_frees",
        why="processes allocations before frees at equal times and takes every intermediate max",
        cells={"peak_live_answer": _ALLOC_BEFORE_FREE},
        grades=("peak_live_tests",),
    ),
    Mutant(
        name="peak_sum_of_allocations",
        why="sums every allocation instead of sweeping",
        cells={"peak_live_answer": _SUM_OF_ALLOCATIONS},
        grades=("peak_live_tests",),
    ),
    Mutant(
        name="peak_last_maximum",
        why="reports the last time the maximum is reached",
        cells={"peak_live_answer": _LAST_MAXIMUM},
        grades=("peak_live_tests",),
    ),
    Mutant(
        name="peak_freed_tensors_only",
        why="drops tensors that are never freed (weights, optimizer state)",
        cells={"peak_live_answer": _FREED_ONLY},
        grades=("peak_live_tests",),
    ),
    Mutant(
        name="peak_delegates_to_course_lib",
        why="calls course_lib.memory.peak, which the grade cell disables",
        cells={
            "peak_live_answer": "def peak_live(events):\n"
            "    p = peak(events)\n"
            "    return float(p.time), float(p.bytes)\n"
        },
        grades=("peak_live_tests",),
    ),
    # Exercise 2: attribution at the peak
    Mutant(
        name="workspaces_allocated_by_the_peak_op",
        why="takes only the workspaces allocated at the peak time, not all live then",
        cells={"peak_live_set_answer": _WORKSPACES_ALLOCATED_AT_PEAK},
        grades=("peak_workspaces_tests",),
    ),
    Mutant(
        name="activations_from_table_2",
        why="8 layers × 34·sbh: what is saved, not what is live at the moment",
        cells={"peak_live_set_answer": _FORMULA_ACTIVATIONS},
        grades=("peak_activation_tests",),
    ),
    Mutant(
        name="activations_at_end_of_forward",
        why="the activations at the end of the forward pass, not at the peak",
        cells={"peak_live_set_answer": _END_OF_FORWARD},
        grades=("peak_activation_tests",),
    ),
    # Exercise 3: sum of allocations vs peak
    Mutant(
        name="overstatement_upside_down",
        why="peak over sum instead of sum over peak",
        cells={
            "overstatement_answer": "ex_overstatement = float(peak(EX_STEP).bytes / "
            'EX_STEP.loc[EX_STEP["kind"] == "alloc", "bytes"].sum())'
        },
        grades=("overstatement_tests",),
    ),
    Mutant(
        name="overstatement_counts_frees",
        why="sums the bytes of every event, frees included",
        cells={
            "overstatement_answer": 'ex_overstatement = float(EX_STEP["bytes"].sum() / '
            "peak(EX_STEP).bytes)"
        },
        grades=("overstatement_tests",),
    ),
    # Exercise 4: allocated vs reserved
    Mutant(
        name="allocator_without_caching",
        why="reserved = allocated = requested, as if every tensor had its own cudaMalloc",
        cells={
            "allocator_answer": _ALLOCATOR_SEQUENCE
            + "seq_allocated = seq_reserved = _seq.requested_bytes\nseq_released = 0\n"
        },
        grades=("allocator_tests",),
    ),
    Mutant(
        name="allocator_releases_the_free_bytes",
        why="assumes empty_cache returns every free byte, reserved − allocated",
        cells={
            "allocator_answer": _ALLOCATOR_SEQUENCE
            + "seq_allocated = _seq.allocated_bytes\nseq_reserved = _seq.reserved_bytes\n"
            "seq_released = seq_reserved - seq_allocated\n"
        },
        grades=("allocator_tests",),
    ),
    # Exercise 5: Table 2
    Mutant(
        name="full_recompute_divided_by_t",
        why="2sbh/t for full recomputation",
        cells={
            "act_175b_answer": "act_175b = ("
            + _FIVE.format(sp=True, r="none")
            + ", "
            + _FIVE.format(sp=True, r="selective")
            + ", "
            + _FIVE.format(sp=True, r="full")
            + " / 8)"
        },
        grades=("act_175b_tests",),
    ),
    Mutant(
        name="no_sequence_parallelism",
        why="Table 2's tensor-parallel rows without sequence parallelism",
        cells={
            "act_175b_answer": "act_175b = tuple("
            + _FIVE.format(sp=False, r="none").replace("'none'", "r")
            + " for r in ('none', 'selective', 'full'))"
        },
        grades=("act_175b_tests",),
    ),
    # Exercise 6: which policy fits
    Mutant(
        name="fits_ignores_memory_outside_the_allocator",
        why="compares the allocator's bytes alone with the device",
        cells={"fits_policy_answer": 'fits_policy = "none"'},
        grades=("fits_policy_tests",),
    ),
]
