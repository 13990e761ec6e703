"""Pipeline schedules as data, their simulation and their closed forms (Module 2).

- schedule: the IR (Action, Schedule) and the generators gpipe, one_f_one_b (pipe02, pipe03),
  interleaved_1f1b and zero_bubble_h1 (pipe04);
- simulate: the event-driven simulator -> Timeline (makespan, idle fraction, overhead, stashes);
- formulas: closed forms for balanced stages, each checked against the simulator in the tests;
- partition: model specs, stage times and memory of a partition, the min-max partition (pipe01);
- interleaving: chunks on ranks, crossings per microbatch, the interleaved step and the best v
  under latency, Megatron-LM's and PyTorch's acceptance rules (pipe04; import it by name).
- accumulation: gradient accumulation over variable-length microbatches, the error of the mean of
  means, batch-dependent normalisation, step time against m (pipe06; import it by name).
- stash: a numpy MLP with dropout, a stash keyed by (stage, microbatch), recomputation with its
  random state and side effects, stash bytes and the best recompute plan (pipe05; import by name).
- p2p: per-rank send/recv/isend/irecv/wait/collective programs, a matching simulator with an
  eager limit, wait-for cycles, collective order, a real os.pipe exchange (pipe09; import by name).
- verify: verify(actions, ...) -> the Violations of identity, dependency, placement, memory,
  weight-version, progress and numeric rules, for any per-rank action lists (pipe10).
- versions: weight versions per (stage, microbatch) under flushed, stashing and 2BW policies,
  replayed from a timeline; versions held, staleness; delayed gradient descent (pipe07).
- imbalance: unequal stages (GPipe's exact step, the 1F1B lower bound), the critical path and the
  bottleneck stage of a timeline, the cost and break-even of moving layers, live stashes (pipe08).
"""

from .formulas import (
    boundary_crossings,
    fill_drain_idle_fraction,
    fill_drain_makespan,
    fill_drain_overhead,
    interleaved_overhead,
    one_f_one_b_warmup,
    peak_in_flight_gpipe,
    peak_in_flight_one_f_one_b,
    peak_in_flight_zero_bubble_h1,
    zero_bubble_h1_bubble,
)
from .imbalance import (
    bottleneck_stage,
    critical_path,
    gpipe_makespan,
    is_flush,
    live_stashes,
    makespan_lower_bound,
    repartition_cost,
)
from .partition import (
    Layer,
    ModelSpec,
    Partition,
    cut_traffic,
    even_blocks,
    gpt_spec,
    min_max_partition,
    stage_costs,
    stage_memory,
    stage_times,
)
from .schedule import (
    KINDS,
    Action,
    Schedule,
    gpipe,
    interleaved_1f1b,
    one_f_one_b,
    zero_bubble_h1,
)
from .simulate import ScheduleDeadlock, Timeline, simulate
from .verify import Violation, verify
from .versions import WeightVersions, weight_versions

__all__ = [
    "KINDS",
    "Action",
    "Layer",
    "ModelSpec",
    "Partition",
    "Schedule",
    "ScheduleDeadlock",
    "Timeline",
    "boundary_crossings",
    "fill_drain_idle_fraction",
    "fill_drain_makespan",
    "fill_drain_overhead",
    "gpipe",
    "interleaved_1f1b",
    "interleaved_overhead",
    "one_f_one_b",
    "one_f_one_b_warmup",
    "peak_in_flight_gpipe",
    "peak_in_flight_one_f_one_b",
    "peak_in_flight_zero_bubble_h1",
    "simulate",
    "zero_bubble_h1",
    "zero_bubble_h1_bubble",
    # pipe01: partitions
    "cut_traffic",
    "even_blocks",
    "gpt_spec",
    "min_max_partition",
    "stage_costs",
    "stage_memory",
    "stage_times",
    # pipe10: verification
    "Violation",
    "verify",
    # pipe07: weight versions
    "WeightVersions",
    "weight_versions",
    # pipe08: imbalance and repartitioning
    "bottleneck_stage",
    "critical_path",
    "gpipe_makespan",
    "is_flush",
    "live_stashes",
    "makespan_lower_bound",
    "repartition_cost",
]
