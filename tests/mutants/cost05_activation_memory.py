"""Plausible wrong answers to cost05_activation_memory, each of which must lose points.

One list per exercise, each mistake named in the lesson's terms: the naive sum the lesson warns
about, units (bytes vs GiB, GB vs GiB), a boundary (< vs ≤), the neighbouring quantity
(requested vs allocated vs reserved, Table 2's replicated row vs the sharded one), and every
route to delegating to course_lib (the public routine, a private helper, a reference taken before
the grade cell runs).
"""

from __future__ import annotations

from tests.mutants import Mutant


def _peak_live(body: str) -> dict[str, str]:
    """The Exercise 1 solution cell with ``body`` as peak_live's body (and optional preamble)."""
    return {"peak_live_answer": body}


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

_ROW_ORDER = '''
def peak_live(events):
    """Right signs, but summed in row order: the rows are not sorted by time."""
    sign = np.where(events["kind"].to_numpy() == "alloc", 1.0, -1.0)
    level = np.cumsum(sign * events["bytes"].to_numpy(dtype=float))
    i = int(np.argmax(level))
    return float(events["time"].to_numpy(dtype=float)[i]), float(level[i])
'''

_VIA_PRIVATE_ORDERED = '''
from course_lib.memory import _ordered


def peak_live(events):
    """Lets course_lib's private _ordered do the sorting, then takes the cumulative sum."""
    ordered = _ordered(lifetimes(events))
    sign = np.where(ordered["kind"].to_numpy() == "alloc", 1.0, -1.0)
    delta = np.where(ordered["zero"].to_numpy(), 0.0, sign * ordered["bytes"].to_numpy())
    level = pd.Series(delta).groupby(ordered["time"].to_numpy()).sum().cumsum()
    i = int(np.argmax(level.to_numpy()))
    return float(level.index[i]), float(level.iloc[i])
'''

_REFERENCE_TAKEN_BEFORE = '''
import course_lib.memory

_sweep = course_lib.memory._levels  # taken now, before the grade cell's forbid


def peak_live(events):
    """Calls course_lib's private sweep through a reference taken before the check."""
    times, level = _sweep(lifetimes(events))
    i = int(np.argmax(level))
    return float(times[i]), float(level[i])
'''

_VIA_CATEGORIES = '''
from course_lib.memory import live_bytes_by_category


def peak_live(events):
    """Delegates to course_lib's per-category sweep and adds the columns."""
    times, levels = live_bytes_by_category(events)
    total = levels.sum(axis=1).to_numpy()
    i = int(np.argmax(total))
    return float(times[i]), float(total[i])
'''

_VIA_ALLOCATOR_REPLAY = '''
def peak_live(events):
    """Replays the events through the allocator model and reads its requested bytes."""
    replay = simulate_allocator(events)
    i = int(np.argmax(replay["requested"].to_numpy()))
    return float(replay["time"].iloc[i]), float(replay["requested"].iloc[i])
'''


def _attribution(workspaces: str, activation_bytes: str) -> dict[str, str]:
    """Exercise 2's answer cell from two expressions over _ex_peak, _live, _life and _end."""
    return {
        "peak_live_set_answer": "_ex_peak = peak(EX_STEP)\n_live = _ex_peak.live\n"
        "_life = lifetimes(EX_STEP)\n"
        '_end = EX_STEP.loc[EX_STEP["phase"] == "forward", "time"].max()\n'
        f"ex_peak_workspaces = {workspaces}\nex_peak_activation_bytes = {activation_bytes}\n"
    }


_RIGHT_WORKSPACES = 'set(_live.loc[_live["category"] == "workspace", "tensor"])'
_RIGHT_ACTIVATIONS = 'float(_live.loc[_live["category"] == "activation", "bytes"].sum())'
_AT_PEAK_OP = (
    'set(EX_STEP.loc[(EX_STEP["time"] == _ex_peak.time) & (EX_STEP["kind"] == "alloc") '
    '& (EX_STEP["category"] == "workspace"), "tensor"])'
)
_CLOSED_INTERVAL = (
    '{r.tensor for r in _life.itertuples() if r.category == "workspace" '
    "and r.alloc_time <= _ex_peak.time and not r.free_time < _ex_peak.time}"
)
_END_OF_FORWARD = (
    'float(_life.loc[(_life["category"] == "activation") & (_life["alloc_time"] <= '
    '_end) & ~(_life["free_time"] <= _end), "bytes"].sum())'
)


def _fresh_malloc(body: str) -> dict[str, str]:
    return {
        "allocator_answer": "def fresh_malloc(nbytes):\n"
        '    """A wrong model of one request to an empty caching allocator."""\n' + body
    }


# The right rules, with one knob per plausible mistake.
_ALLOCATOR_RULES = """
    size = {rounded}
    small = size {small_cmp} {unit}
    if small:
        segment = 2 * {unit}
    elif size {large_cmp} 10 * {unit}:
        segment = {large_buffer}
    else:
        segment = -(-size // (2 * {unit})) * 2 * {unit}
    if small:
        return size, segment
    block = size if segment - size {split_cmp} {unit} else segment
    return {result}
"""


def _rules(**changes: str) -> dict[str, str]:
    knobs = {
        "rounded": "max(512, -(-nbytes // 512) * 512)",
        "small_cmp": "<=",
        "unit": "MiB",
        "large_cmp": "<",
        "large_buffer": "20 * MiB",
        "split_cmp": ">",
        "result": "block, segment",
    }
    knobs.update(changes)
    return _fresh_malloc(_ALLOCATOR_RULES.format(**knobs))


def _layer_bytes(full: str, selective: str, none: str) -> dict[str, str]:
    return {
        "act_bytes_answer": "def layer_activation_bytes(s, b, h, a, t, recompute):\n"
        '    """A wrong reading of section 5\'s table."""\n'
        "    sbh = float(s * b * h)\n"
        f'    if recompute == "full":\n        return {full}\n'
        f'    if recompute == "selective":\n        return {selective}\n'
        f"    return {none}\n"
    }


_RIGHT_FULL, _RIGHT_SELECTIVE = "2 * sbh / t", "34 * sbh / t"
_RIGHT_NONE = "sbh / t * (34 + 5 * a * s / h)"


def _fits(expression: str) -> dict[str, str]:
    return {"fits_answer": f"max_micro_batch = int({expression})\n"}


MUTANTS = [
    # Exercise 1: the sweep
    Mutant(
        name="peak_allocations_before_frees",
        why="processes allocations before frees at equal times and takes every intermediate max",
        cells=_peak_live(_ALLOC_BEFORE_FREE),
        grades=("peak_live_tests",),
    ),
    Mutant(
        name="peak_sum_of_allocations",
        why="sums every allocation instead of sweeping (frees never subtracted)",
        cells=_peak_live(_SUM_OF_ALLOCATIONS),
        grades=("peak_live_tests",),
    ),
    Mutant(
        name="peak_last_maximum",
        why="reports the last time the maximum is reached",
        cells=_peak_live(_LAST_MAXIMUM),
        grades=("peak_live_tests",),
    ),
    Mutant(
        name="peak_freed_tensors_only",
        why="drops tensors that are never freed (weights, optimizer state)",
        cells=_peak_live(_FREED_ONLY),
        grades=("peak_live_tests",),
    ),
    Mutant(
        name="peak_row_order",
        why="cumulative sum in row order: the events come in any order",
        cells=_peak_live(_ROW_ORDER),
        grades=("peak_live_tests",),
    ),
    Mutant(
        name="peak_delegates_to_course_lib",
        why="calls course_lib.memory.peak, which the grade cell disables",
        cells=_peak_live(
            "def peak_live(events):\n    p = peak(events)\n    return float(p.time), float(p.bytes)\n"
        ),
        grades=("peak_live_tests",),
    ),
    Mutant(
        name="peak_via_private_ordered",
        why="calls the private course_lib.memory._ordered, missing from the old forbid list",
        cells=_peak_live(_VIA_PRIVATE_ORDERED),
        grades=("peak_live_tests",),
    ),
    Mutant(
        name="peak_via_reference_taken_before",
        why="calls course_lib.memory._levels through a reference taken before the grade cell",
        cells=_peak_live(_REFERENCE_TAKEN_BEFORE),
        grades=("peak_live_tests",),
    ),
    Mutant(
        name="peak_via_live_bytes_by_category",
        why="delegates to the per-category sweep",
        cells=_peak_live(_VIA_CATEGORIES),
        grades=("peak_live_tests",),
    ),
    Mutant(
        name="peak_via_allocator_replay",
        why="replays the events through simulate_allocator and reads the requested bytes",
        cells=_peak_live(_VIA_ALLOCATOR_REPLAY),
        grades=("peak_live_tests",),
    ),
    # Exercise 2: attribution at the peak
    Mutant(
        name="workspaces_allocated_by_the_peak_op",
        why="takes only the workspaces allocated at the peak time, not all live then",
        cells=_attribution(_AT_PEAK_OP, _RIGHT_ACTIVATIONS),
        grades=("peak_workspaces_tests",),
    ),
    Mutant(
        name="workspaces_closed_interval",
        why="counts a tensor freed at the peak time as live there ([a, f] instead of [a, f))",
        cells=_attribution(_CLOSED_INTERVAL, _RIGHT_ACTIVATIONS),
        grades=("peak_workspaces_tests",),
    ),
    Mutant(
        name="activations_from_the_formula",
        why="8 layers × 34·sbh: what is saved, not what is live at the moment",
        cells=_attribution(
            _RIGHT_WORKSPACES,
            '8 * activation_bytes_per_layer(2048, 1, 1024, 16, recompute="selective")',
        ),
        grades=("peak_activation_tests",),
    ),
    Mutant(
        name="activations_at_end_of_forward",
        why="the activations at the end of the forward pass, not at the peak",
        cells=_attribution(_RIGHT_WORKSPACES, _END_OF_FORWARD),
        grades=("peak_activation_tests",),
    ),
    Mutant(
        name="activations_in_gib",
        why="the right activations, in GiB instead of bytes",
        cells=_attribution(_RIGHT_WORKSPACES, _RIGHT_ACTIVATIONS + " / GiB"),
        grades=("peak_activation_tests",),
    ),
    # Exercise 3: one request to a fresh allocator (allocated vs reserved)
    Mutant(
        name="allocator_allocated_is_requested",
        why="allocated = the bytes asked for: no rounding and no unsplit remainder",
        cells=_rules(result="nbytes, segment"),
        grades=("allocator_tests",),
    ),
    Mutant(
        name="allocator_reserved_is_allocated",
        why="reserved = allocated, as if every tensor had its own exact cudaMalloc",
        cells=_rules(result="block, block"),
        grades=("allocator_tests",),
    ),
    Mutant(
        name="allocator_no_512_rounding",
        why="forgets the rounding to 512 bytes",
        cells=_rules(rounded="nbytes"),
        grades=("allocator_tests",),
    ),
    Mutant(
        name="allocator_small_pool_below_1mib",
        why="small pool only for requests below 1 MiB (< instead of ≤)",
        cells=_rules(small_cmp="<"),
        grades=("allocator_tests",),
    ),
    Mutant(
        name="allocator_20mib_up_to_10mib",
        why="a 20 MiB segment up to and including 10 MiB (≤ instead of <)",
        cells=_rules(large_cmp="<="),
        grades=("allocator_tests",),
    ),
    Mutant(
        name="allocator_split_at_1mib",
        why="splits a remainder of exactly 1 MiB (≥ instead of >)",
        cells=_rules(split_cmp=">="),
        grades=("allocator_tests",),
    ),
    Mutant(
        name="allocator_no_20mib_buffer",
        why="every large request gets its own segment rounded to 2 MiB (no 20 MiB segments)",
        cells=_rules(large_buffer="-(-size // (2 * MiB)) * 2 * MiB"),
        grades=("allocator_tests",),
    ),
    Mutant(
        name="allocator_decimal_megabytes",
        why="MB read as 10**6 bytes in the pool and segment sizes",
        cells=_rules(unit="10**6", large_buffer="20 * 10**6"),
        grades=("allocator_tests",),
    ),
    Mutant(
        name="allocator_replays_the_model",
        why="replays the request through CachingAllocator, which the grade cell disables",
        cells=_fresh_malloc(
            "    model = CachingAllocator()\n    block = model.malloc('x', nbytes)\n"
            "    return block, model.reserved_bytes\n"
        ),
        grades=("allocator_tests",),
    ),
    Mutant(
        name="allocator_replays_simulate_allocator",
        why="replays a one-event profile through simulate_allocator",
        cells=_fresh_malloc(
            "    ev = pd.DataFrame([(0.0, 'x', nbytes, 'alloc')],\n"
            "                      columns=['time', 'tensor', 'bytes', 'kind'])\n"
            "    row = simulate_allocator(ev).iloc[-1]\n"
            "    return int(row['allocated']), int(row['reserved'])\n"
        ),
        grades=("allocator_tests",),
    ),
    # Exercise 4: activation bytes per layer per rank
    Mutant(
        name="act_no_attention_term",
        why="34·sbh/t without recomputation: the 5as²b bytes of the attention matrices left out",
        cells=_layer_bytes(_RIGHT_FULL, _RIGHT_SELECTIVE, "34 * sbh / t"),
        grades=("act_bytes_tests",),
    ),
    Mutant(
        name="act_forgets_t",
        why="no division by the tensor-parallel degree t",
        cells=_layer_bytes("2 * sbh", "34 * sbh", "sbh * (34 + 5 * a * s / h)"),
        grades=("act_bytes_tests",),
    ),
    Mutant(
        name="act_tensor_parallel_without_sequence_parallel",
        why="Table 2's tensor-parallel rows: layer norms and dropouts replicated",
        cells=_layer_bytes(
            "2 * sbh", "sbh * (10 + 24 / t)", "sbh * (10 + 24 / t + 5 * a * s / (h * t))"
        ),
        grades=("act_bytes_tests",),
    ),
    Mutant(
        name="act_full_recompute_replicated",
        why="full recomputation as 2sbh: Table 2's row for a replicated input, not the s/t slice",
        cells=_layer_bytes("2 * sbh", _RIGHT_SELECTIVE, _RIGHT_NONE),
        grades=("act_bytes_tests",),
    ),
    Mutant(
        name="act_in_gib",
        why="the right formulas, in GiB",
        cells=_layer_bytes(
            _RIGHT_FULL + " / GiB", _RIGHT_SELECTIVE + " / GiB", f"{_RIGHT_NONE} / GiB"
        ),
        grades=("act_bytes_tests",),
    ),
    Mutant(
        name="act_delegates_to_course_lib",
        why="calls activation_bytes_per_layer, which the grade cell disables",
        cells={
            "act_bytes_answer": "def layer_activation_bytes(s, b, h, a, t, recompute):\n"
            "    return activation_bytes_per_layer(\n"
            "        s, b, h, a, tensor_parallel=t, sequence_parallel=True, recompute=recompute\n"
            "    )\n"
        },
        grades=("act_bytes_tests",),
    ),
    # Exercise 5: how many sequences fit
    Mutant(
        name="fits_80e9_bytes",
        why="the device as 80 × 10⁹ bytes instead of nvidia-smi's 81,559 MiB",
        cells=_fits("(80e9 - (49.2 + 2 + 3) * GiB) // (5.28 * GiB)"),
        grades=("fits_tests",),
    ),
    Mutant(
        name="fits_ignores_memory_outside_the_allocator",
        why="leaves out the CUDA context and NCCL buffers",
        cells=_fits("(81559 * MiB - (49.2 + 2) * GiB) // (5.28 * GiB)"),
        grades=("fits_tests",),
    ),
    Mutant(
        name="fits_allocated_not_reserved",
        why="plans with memory_allocated(): the 2 GiB reserved beyond it left out",
        cells=_fits("(81559 * MiB - (49.2 + 3) * GiB) // (5.28 * GiB)"),
        grades=("fits_tests",),
    ),
    Mutant(
        name="fits_allocator_view",
        why="compares the allocator's allocated bytes alone with the device",
        cells=_fits("(81559 * MiB - 49.2 * GiB) // (5.28 * GiB)"),
        grades=("fits_tests",),
    ),
    Mutant(
        name="fits_transients_once",
        why="adds the transients once, not per sequence",
        cells=_fits("(81559 * MiB - (49.2 + 2 + 3 + 0.5) * GiB) // (4.78 * GiB)"),
        grades=("fits_tests",),
    ),
    Mutant(
        name="fits_rounds_up",
        why="rounds the number of sequences up",
        cells=_fits("-(-(81559 * MiB - (49.2 + 2 + 3) * GiB) // (5.28 * GiB))"),
        grades=("fits_tests",),
    ),
]

# Right answers that must keep full marks on the grade cells they name (the round trip's
# solutions cover the reference answers; these are other correct routes, including the one the
# lesson used to reject: full recomputation under sequence parallelism as 2sbh/t).
_LOOP_SWEEP = '''
def peak_live(events):
    """A plain loop over lifetimes() (allowed): levels after every event at each time."""
    life = lifetimes(events)
    best_t, best = None, -1.0
    for t in sorted(set(life["alloc_time"])):
        live = (life["alloc_time"] <= t) & ~(life["free_time"] <= t)
        level = float(life.loc[live, "bytes"].sum())
        if level > best:
            best_t, best = float(t), level
    return best_t, best
'''

RIGHT_ANSWERS = [
    Mutant(
        name="peak_loop_over_lifetimes",
        why="a loop over allocation times with course_lib.memory.lifetimes, which is allowed",
        cells=_peak_live(_LOOP_SWEEP),
        grades=("peak_live_tests",),
    ),
    Mutant(
        name="attribution_as_frozenset_and_numpy_float",
        why="a frozenset of names and a numpy float of bytes",
        cells=_attribution(
            f"frozenset({_RIGHT_WORKSPACES})",
            '_live.loc[_live["category"] == "activation", "bytes"].sum()',
        ),
        grades=("peak_workspaces_tests", "peak_activation_tests"),
    ),
    Mutant(
        name="allocator_numpy_ints",
        why="the right rules returning numpy integers",
        cells=_rules(result="np.int64(block), np.int64(segment)"),
        grades=("allocator_tests",),
    ),
    Mutant(
        name="act_full_recompute_sharded_numpy",
        why="2sbh/t under sequence parallelism, computed with numpy and returned as numpy floats",
        cells=_layer_bytes(
            "np.float64(2) * sbh / t",
            "np.float64(34) * sbh / t",
            "np.float64(sbh) / t * (34 + 5 * a * s / h)",
        ),
        grades=("act_bytes_tests",),
    ),
    Mutant(
        name="fits_in_gib_by_search",
        why="counts up b in GiB until the next sequence no longer fits",
        cells={
            "fits_answer": "max_micro_batch = 0\n"
            "while 49.2 + 2 + 3 + (max_micro_batch + 1) * (4.78 + 0.5) <= 81559 / 1024:\n"
            "    max_micro_batch += 1\n"
        },
        grades=("fits_tests",),
    ),
]
