"""Plausible wrong answers to cost05_activation_memory, each of which must lose points.

One list per exercise, each mistake named in the lesson's terms: the naive sum the lesson warns
about, the tie rule (frees first), units (bytes vs GiB, MB vs MiB), a boundary (< vs ≤), the
neighbouring quantity (requested vs allocated vs reserved, Table 2's replicated row vs the sharded
one, selective vs full), and every route to delegating to course_lib (the public routine, a
private helper, a reference taken before the grade cell runs, the explorer's own sweep, the step
generator).

RIGHT_ANSWERS holds other correct routes, and answers right on some parts only: those parts keep
their marks (one part's mistake never zeroes another).
"""

from __future__ import annotations

from tests.mutants import Mutant


def _peak_live(body: str) -> dict[str, str]:
    """The Exercise 1 solution cell with ``body`` as peak_live (and optional preamble)."""
    return {"peak_live_answer": body}


_ALLOC_BEFORE_FREE = '''
def peak_live(events):
    """Event by event, allocations first at equal times, max over every intermediate total."""
    rank = np.where(events["kind"].to_numpy() == "alloc", 0, 1)
    order = np.lexsort((rank, events["time"].to_numpy(dtype=float)))
    sign = np.where(events["kind"].to_numpy() == "alloc", 1.0, -1.0)[order]
    return float(np.cumsum(sign * events["bytes"].to_numpy(dtype=float)[order]).max())
'''

_SORTED_BY_KIND = '''
def peak_live(events):
    """Sorted by time, then kind: "alloc" < "free" alphabetically, so allocations come first."""
    ev = events.sort_values(["time", "kind"])
    sign = np.where(ev["kind"] == "alloc", 1.0, -1.0)
    return float(np.cumsum(sign * ev["bytes"].to_numpy(dtype=float)).max())
'''

_STABLE_SORT_ROW_TIES = '''
def peak_live(events):
    """Stable sort by time only: events at one time in row order, max after every event."""
    ev = events.sort_values("time", kind="stable")
    sign = np.where(ev["kind"] == "alloc", 1.0, -1.0)
    return float(np.cumsum(sign * ev["bytes"].to_numpy(dtype=float)).max())
'''

_SUM_OF_ALLOCATIONS = '''
def peak_live(events):
    """Adds every allocation, as a per-operator memory table would."""
    return float(events.loc[events["kind"] == "alloc", "bytes"].sum())
'''

_FREED_ONLY = '''
def peak_live(events):
    """Counts only tensors that have both an allocation and a free."""
    freed = set(events.loc[events["kind"] == "free", "tensor"])
    ev = events[events["tensor"].isin(freed)]
    sign = np.where(ev["kind"].to_numpy() == "alloc", 1.0, -1.0)
    delta = pd.Series(sign * ev["bytes"].to_numpy(dtype=float))
    return float(delta.groupby(ev["time"].to_numpy(dtype=float)).sum().sort_index().cumsum().max())
'''

_ROW_ORDER = '''
def peak_live(events):
    """Right signs, but summed in row order: the rows are not sorted by time."""
    sign = np.where(events["kind"].to_numpy() == "alloc", 1.0, -1.0)
    return float(np.cumsum(sign * events["bytes"].to_numpy(dtype=float)).max())
'''

_CLOSED_INTERVALS = '''
def peak_live(events):
    """Closed lifetimes [a, f]: a tensor freed at t still counted at t."""
    life = lifetimes(events)
    best = 0.0
    for t in sorted(set(life["alloc_time"])):
        live = (life["alloc_time"] <= t) & ~(life["free_time"] < t)
        best = max(best, float(life.loc[live, "bytes"].sum()))
    return best
'''

_VIA_PRIVATE_ORDERED = '''
from course_lib.memory import _ordered


def peak_live(events):
    """Lets course_lib's private _ordered do the sorting, then takes the cumulative sum."""
    ordered = _ordered(lifetimes(events))
    sign = np.where(ordered["kind"].to_numpy() == "alloc", 1.0, -1.0)
    delta = np.where(ordered["zero"].to_numpy(), 0.0, sign * ordered["bytes"].to_numpy())
    return float(pd.Series(delta).groupby(ordered["time"].to_numpy()).sum().cumsum().max())
'''

_REFERENCE_TAKEN_BEFORE = '''
import course_lib.memory

_sweep = course_lib.memory._levels  # taken now, before the grade cell's forbid


def peak_live(events):
    """Calls course_lib's private sweep through a reference taken before the check."""
    return float(_sweep(lifetimes(events))[1].max())
'''

_VIA_CATEGORIES = '''
from course_lib.memory import live_bytes_by_category


def peak_live(events):
    """Delegates to course_lib's per-category sweep and adds the columns."""
    return float(live_bytes_by_category(events)[1].sum(axis=1).max())
'''

_VIA_STACKED_LEVELS = '''
from course_lib.memory import _stacked_levels


def peak_live(events):
    """Calls the private per-category sweep the explorer uses, with one category."""
    one = np.full(len(events), "all", dtype=object)
    _, levels = _stacked_levels(
        events["time"].to_numpy(dtype=float), events["bytes"].to_numpy(dtype=float),
        (events["kind"] == "alloc").to_numpy(), one, ["all"],
    )
    return float(levels.sum(axis=0).max())
'''

_VIA_EXPLORER_MODEL = '''
import course_lib.memory as _m
from course_lib.explorers.activation_memory import ActivationMemoryExplorer


def peak_live(events):
    """The review's route: the explorer's own peak, on these events (generator patched)."""
    ev = events.assign(category="activation", op="x", phase="forward")
    ev = ev.assign(tensor=ev["tensor"].astype(str))
    old = _m.training_step_events
    _m.training_step_events = lambda **kw: ev
    try:
        class _Self:
            pass

        me = _Self()
        me._cache, me.shape = {}, {}
        result = ActivationMemoryExplorer.model(me, 1, 1, "none")
    finally:
        _m.training_step_events = old
    return float(result["peak_bytes"])
'''

_VIA_ALLOCATOR_REPLAY = '''
from course_lib.memory import simulate_allocator


def peak_live(events):
    """Replays the events through the allocator model and reads its requested bytes."""
    return float(simulate_allocator(events)["requested"].max())
'''


def _workspaces(expression: str) -> dict[str, str]:
    """Exercise 2's answer cell from an expression over _ex_peak, _live, _life and _end."""
    return {
        "peak_workspaces_answer": "_ex_peak = peak(EX_STEP)\n_live = _ex_peak.live\n"
        "_life = lifetimes(EX_STEP)\n"
        '_end = EX_STEP.loc[EX_STEP["phase"] == "forward", "time"].max()\n'
        f"ex_peak_workspaces = {expression}\n"
    }


_RIGHT_WORKSPACES = 'set(_live.loc[_live["category"] == "workspace", "tensor"])'


def _gap(body: str) -> dict[str, str]:
    return {
        "allocator_answer": "def reserved_minus_allocated(nbytes):\n"
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
        block = size
    else:
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
        "result": "segment - block",
    }
    knobs.update(changes)
    return _gap(_ALLOCATOR_RULES.format(**knobs))


def _layer_bytes(full: str, selective: str, none: str) -> dict[str, str]:
    return {
        "act_bytes_answer": "def layer_activation_bytes(s, b, h, a, t, recompute):\n"
        '    """A reading of section 5\'s table."""\n'
        "    sbh = float(s * b * h)\n"
        f'    if recompute == "full":\n        return {full}\n'
        f'    if recompute == "selective":\n        return {selective}\n'
        f"    return {none}\n"
    }


_RIGHT_FULL, _RIGHT_SELECTIVE = "2 * sbh / t", "34 * sbh / t"
_RIGHT_NONE = "sbh / t * (34 + 5 * a * s / h)"
_NONE_CELL, _SELECTIVE_CELL, _FULL_CELL = (
    "act_bytes_none_tests",
    "act_bytes_selective_tests",
    "act_bytes_full_tests",
)

_VIA_GENERATOR = """
def layer_activation_bytes(s, b, h, a, t, recompute):
    \"\"\"Reads one layer's saved bytes off the step generator (section 5's cell), divided by t.\"\"\"
    ev = training_step_events(
        num_layers=1, seq_len=s, micro_batch=b, hidden=h, num_heads=a, vocab_size=8,
        recompute=recompute,
    )
    saved = ev[(ev.phase == "forward") & (ev.kind == "alloc") & (ev.category == "activation")]
    return float(saved.loc[saved.tensor.str.startswith("L0."), "bytes"].sum()) / t
"""

MUTANTS = [
    # Exercise 1: the sweep
    Mutant(
        name="peak_allocations_before_frees",
        why="processes allocations before frees at equal times and takes every intermediate max",
        cells=_peak_live(_ALLOC_BEFORE_FREE),
        grades=("peak_live_tests",),
    ),
    Mutant(
        name="peak_sorted_by_kind_alphabetically",
        why='sorts by (time, kind): "alloc" sorts before "free", so allocations come first',
        cells=_peak_live(_SORTED_BY_KIND),
        grades=("peak_live_tests",),
    ),
    Mutant(
        name="peak_stable_sort_row_order_ties",
        why="ties at one time in row order, max after every event (a zero-lifetime tensor counts)",
        cells=_peak_live(_STABLE_SORT_ROW_TIES),
        grades=("peak_live_tests",),
    ),
    Mutant(
        name="peak_sum_of_allocations",
        why="sums every allocation instead of sweeping (frees never subtracted)",
        cells=_peak_live(_SUM_OF_ALLOCATIONS),
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
        name="peak_closed_intervals",
        why="lifetimes as closed intervals [a, f]: a tensor freed at t counted at t",
        cells=_peak_live(_CLOSED_INTERVALS),
        grades=("peak_live_tests",),
    ),
    Mutant(
        name="peak_delegates_to_course_lib",
        why="calls course_lib.memory.peak, which the grade cell disables",
        cells=_peak_live("def peak_live(events):\n    return float(peak(events).bytes)\n"),
        grades=("peak_live_tests",),
    ),
    Mutant(
        name="peak_via_private_ordered",
        why="calls the private course_lib.memory._ordered",
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
        name="peak_via_stacked_levels",
        why="calls the private sweep that live_bytes_by_category and the explorer share",
        cells=_peak_live(_VIA_STACKED_LEVELS),
        grades=("peak_live_tests",),
    ),
    Mutant(
        name="peak_via_explorer_model",
        why="hands the events to ActivationMemoryExplorer.model (review finding 1)",
        cells=_peak_live(_VIA_EXPLORER_MODEL),
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
        cells=_workspaces(
            'set(EX_STEP.loc[(EX_STEP["time"] == _ex_peak.time) & (EX_STEP["kind"] == "alloc") '
            '& (EX_STEP["category"] == "workspace"), "tensor"])'
        ),
        grades=("peak_workspaces_tests",),
    ),
    Mutant(
        name="workspaces_closed_interval",
        why="counts a tensor freed at the peak time as live there ([a, f] instead of [a, f))",
        cells=_workspaces(
            '{r.tensor for r in _life.itertuples() if r.category == "workspace" '
            "and r.alloc_time <= _ex_peak.time and not r.free_time < _ex_peak.time}"
        ),
        grades=("peak_workspaces_tests",),
    ),
    Mutant(
        name="workspaces_at_end_of_forward",
        why="attributes at the end of the forward pass, where the activations top out",
        cells=_workspaces(
            '{r.tensor for r in _life.itertuples() if r.category == "workspace" '
            "and r.alloc_time <= _end and not r.free_time <= _end}"
        ),
        grades=("peak_workspaces_tests",),
    ),
    # Exercise 3: reserved minus allocated after one request to a fresh allocator
    Mutant(
        name="allocator_allocated_is_requested",
        why="allocated = the bytes asked for: no rounding and no unsplit remainder",
        cells=_rules(result="segment - nbytes"),
        grades=("allocator_tests",),
    ),
    Mutant(
        name="allocator_reserved_is_allocated",
        why="reserved = allocated, as if every tensor had its own exact cudaMalloc",
        cells=_rules(result="0"),
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
        name="allocator_large_blocks_never_split",
        why="splits only in the small pool: a large request is handed its whole segment",
        cells=_rules(split_cmp="> 100 *"),
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
        name="allocator_in_mib",
        why="the right gap, in MiB instead of bytes",
        cells=_rules(result="(segment - block) / MiB"),
        grades=("allocator_tests",),
    ),
    Mutant(
        name="allocator_replays_the_model",
        why="replays the request through CachingAllocator, which the grade cell disables",
        cells=_gap(
            "    model = CachingAllocator()\n    model.malloc('x', nbytes)\n"
            "    return model.reserved_bytes - model.allocated_bytes\n"
        ),
        grades=("allocator_tests",),
    ),
    Mutant(
        name="allocator_replays_simulate_allocator",
        why="replays a one-event profile through simulate_allocator",
        cells=_gap(
            "    from course_lib.memory import simulate_allocator\n"
            "    ev = pd.DataFrame([(0.0, 'x', nbytes, 'alloc')],\n"
            "                      columns=['time', 'tensor', 'bytes', 'kind'])\n"
            "    row = simulate_allocator(ev).iloc[-1]\n"
            "    return row['reserved'] - row['allocated']\n"
        ),
        grades=("allocator_tests",),
    ),
    # Exercise 4: activation bytes per layer per rank, one grade cell per policy
    Mutant(
        name="act_no_attention_term",
        why="34·sbh/t without recomputation: the 5as²b bytes of the attention matrices left out",
        cells=_layer_bytes(_RIGHT_FULL, _RIGHT_SELECTIVE, "34 * sbh / t"),
        grades=(_NONE_CELL,),
    ),
    Mutant(
        name="act_attention_matrices_replicated",
        why="the attention matrices not divided by t (only the 34·sbh part split)",
        cells=_layer_bytes(_RIGHT_FULL, _RIGHT_SELECTIVE, "34 * sbh / t + 5 * a * s * s * b"),
        grades=(_NONE_CELL,),
    ),
    Mutant(
        name="act_forgets_t",
        why="no division by the tensor-parallel degree t, under every policy",
        cells=_layer_bytes("2 * sbh", "34 * sbh", "sbh * (34 + 5 * a * s / h)"),
        grades=(_NONE_CELL, _SELECTIVE_CELL, _FULL_CELL),
    ),
    Mutant(
        name="act_tensor_parallel_without_sequence_parallel",
        why="Table 2's tensor-parallel rows: layer norms and dropouts replicated",
        cells=_layer_bytes(
            "2 * sbh", "sbh * (10 + 24 / t)", "sbh * (10 + 24 / t + 5 * a * s / (h * t))"
        ),
        grades=(_NONE_CELL, _SELECTIVE_CELL, _FULL_CELL),
    ),
    Mutant(
        name="act_selective_keeps_attention",
        why="selective recomputation read as no recomputation (the attention matrices kept)",
        cells=_layer_bytes(_RIGHT_FULL, _RIGHT_NONE, _RIGHT_NONE),
        grades=(_SELECTIVE_CELL,),
    ),
    Mutant(
        name="act_full_recompute_replicated",
        why="full recomputation as 2sbh: Table 2's row for a replicated input, not the s/t slice",
        cells=_layer_bytes("2 * sbh", _RIGHT_SELECTIVE, _RIGHT_NONE),
        grades=(_FULL_CELL,),
    ),
    Mutant(
        name="act_full_as_selective",
        why="full recomputation given selective's 34·sbh/t",
        cells=_layer_bytes(_RIGHT_SELECTIVE, _RIGHT_SELECTIVE, _RIGHT_NONE),
        grades=(_FULL_CELL,),
    ),
    Mutant(
        name="act_in_gib",
        why="the right formulas, in GiB",
        cells=_layer_bytes(
            _RIGHT_FULL + " / GiB", _RIGHT_SELECTIVE + " / GiB", f"{_RIGHT_NONE} / GiB"
        ),
        grades=(_NONE_CELL, _SELECTIVE_CELL, _FULL_CELL),
    ),
    Mutant(
        name="act_delegates_to_course_lib",
        why="calls activation_bytes_per_layer, which the grade cells disable",
        cells={
            "act_bytes_answer": "def layer_activation_bytes(s, b, h, a, t, recompute):\n"
            "    return activation_bytes_per_layer(\n"
            "        s, b, h, a, tensor_parallel=t, sequence_parallel=True, recompute=recompute\n"
            "    )\n"
        },
        grades=(_NONE_CELL, _SELECTIVE_CELL, _FULL_CELL),
    ),
    Mutant(
        name="act_reads_the_step_generator",
        why="reads one layer's saved bytes off training_step_events and divides by t",
        cells={"act_bytes_answer": _VIA_GENERATOR},
        grades=(_NONE_CELL, _SELECTIVE_CELL, _FULL_CELL),
    ),
]

# Other right answers (the round trip's solutions cover the reference ones), and answers right on
# some parts only: the parts they get right keep their marks.
_LOOP_SWEEP = '''
def peak_live(events):
    """A plain loop over lifetimes() (allowed): the level after every event at each time."""
    life = lifetimes(events)
    best = 0.0
    for t in sorted(set(life["alloc_time"])):
        live = (life["alloc_time"] <= t) & ~(life["free_time"] <= t)
        best = max(best, float(life.loc[live, "bytes"].sum()))
    return best
'''

_FREES_FIRST_EVERY_EVENT = '''
def peak_live(events):
    """Frees first at equal times, max after every event: equal to the level after each time."""
    rank = (events["kind"] == "alloc").to_numpy().astype(int)
    order = np.lexsort((rank, events["time"].to_numpy(dtype=float)))
    sign = np.where(events["kind"].to_numpy() == "alloc", 1.0, -1.0)[order]
    return np.cumsum(sign * events["bytes"].to_numpy(dtype=float)[order]).max()
'''

_AT_ALLOCATION_TIMES = '''
def peak_live(events):
    """The level at every allocation time, from the rows as they come (no sort)."""
    allocs, frees = events[events.kind == "alloc"], events[events.kind == "free"]
    best = 0.0
    for t in allocs["time"]:
        level = allocs.loc[allocs.time <= t, "bytes"].sum() - frees.loc[frees.time <= t, "bytes"].sum()
        best = max(best, float(level))
    return best
'''

_BINCOUNT = '''
def peak_live(events):
    """np.unique over the times and a weighted bincount per time, then the cumulative sum."""
    sign = np.where(events["kind"].to_numpy() == "alloc", 1, -1)
    times, inverse = np.unique(events["time"].to_numpy(dtype=float), return_inverse=True)
    net = np.bincount(inverse, weights=sign * events["bytes"].to_numpy(dtype=float))
    return np.float64(np.cumsum(net).max())
'''

RIGHT_ANSWERS = [
    Mutant(
        name="peak_loop_over_lifetimes",
        why="a loop over allocation times with course_lib.memory.lifetimes, which is allowed",
        cells=_peak_live(_LOOP_SWEEP),
        grades=("peak_live_tests",),
    ),
    Mutant(
        name="peak_frees_first_max_after_every_event",
        why="frees sorted first, max over every intermediate total, a numpy float",
        cells=_peak_live(_FREES_FIRST_EVERY_EVENT),
        grades=("peak_live_tests",),
    ),
    Mutant(
        name="peak_levels_at_allocation_times",
        why="the level at each allocation time, rows unsorted (the peak is at an allocation)",
        cells=_peak_live(_AT_ALLOCATION_TIMES),
        grades=("peak_live_tests",),
    ),
    Mutant(
        name="peak_unique_bincount",
        why="np.unique + np.bincount per time, a numpy float",
        cells=_peak_live(_BINCOUNT),
        grades=("peak_live_tests",),
    ),
    Mutant(
        name="workspaces_as_frozenset_from_lifetimes",
        why="a frozenset, from lifetimes and the peak time with the half-open interval",
        cells=_workspaces(
            'frozenset(_life.loc[(_life["category"] == "workspace") & (_life["alloc_time"] <= '
            '_ex_peak.time) & ~(_life["free_time"] <= _ex_peak.time), "tensor"])'
        ),
        grades=("peak_workspaces_tests",),
    ),
    Mutant(
        name="allocator_numpy_ints",
        why="the right rules returning a numpy integer",
        cells=_rules(result="np.int64(segment - block)"),
        grades=("allocator_tests",),
    ),
    Mutant(
        name="allocator_float_bytes_math_ceil",
        why="the right rules with math.ceil on floats, returning a float number of bytes",
        cells=_gap(
            "    import math\n"
            "    size = max(512.0, math.ceil(nbytes / 512) * 512.0)\n"
            "    if size <= 2**20:\n        return 2.0**21 - size\n"
            "    if size < 10 * 2**20:\n        return 20.0 * 2**20 - size\n"
            "    segment = math.ceil(size / 2**21) * 2.0**21\n"
            "    return segment - size if segment - size > 2**20 else 0.0\n"
        ),
        grades=("allocator_tests",),
    ),
    Mutant(
        name="act_integer_arithmetic",
        why="the formulas in integer arithmetic (floor division by t), returning ints",
        cells=_layer_bytes(
            "2 * s * b * h // t", "34 * s * b * h // t", "(34 * s * b * h + 5 * a * s * s * b) // t"
        ),
        grades=(_NONE_CELL, _SELECTIVE_CELL, _FULL_CELL),
    ),
    Mutant(
        name="act_numpy_floats",
        why="the right formulas as numpy floats",
        cells=_layer_bytes(
            "np.float64(2) * sbh / t",
            "np.float64(34) * sbh / t",
            "np.float64(sbh) / t * (34 + 5 * a * s / h)",
        ),
        grades=(_NONE_CELL, _SELECTIVE_CELL, _FULL_CELL),
    ),
    Mutant(
        name="act_right_but_full_replicated",
        why="right on none and selective, 2sbh on full: none and selective keep their points",
        cells=_layer_bytes("2 * sbh", _RIGHT_SELECTIVE, _RIGHT_NONE),
        grades=(_NONE_CELL, _SELECTIVE_CELL),
    ),
    Mutant(
        name="act_right_but_selective_wrong",
        why="selective read as no recomputation: none and full keep their points",
        cells=_layer_bytes(_RIGHT_FULL, _RIGHT_NONE, _RIGHT_NONE),
        grades=(_NONE_CELL, _FULL_CELL),
    ),
    Mutant(
        name="act_only_full_right",
        why="right on full only (none and selective left raising): full keeps its point",
        cells=_layer_bytes(_RIGHT_FULL, "1 / 0", "1 / 0"),
        grades=(_FULL_CELL,),
    ),
]
