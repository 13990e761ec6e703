"""Fact check: course_lib.pipeline's interleaved_1f1b and zero_bubble_h1 against PyTorch 2.13.

Run with an interpreter that has torch 2.13 (a throwaway venv; the course never depends on torch):
    python3 -m venv /tmp/tv && /tmp/tv/bin/pip install torch==2.13.0
    PYTHONPATH=. /tmp/tv/bin/python scripts/check_interleaved_against_torch.py

For every (p, m, v) in a grid it builds PyTorch's compute-only per-rank order
(``ScheduleInterleaved1F1B._calculate_single_rank_operations``, the method the constructor calls
for each rank, torch/distributed/pipelining/schedules.py), drops the ``None`` padding slots
and compares (kind, stage, microbatch) action for action with ours. It also checks that torch
accepts exactly the (p, m) that ``check_interleaved_shape`` accepts (its constructor's rule), and
compares zero_bubble_h1(p, m) with ``ScheduleInterleavedZeroBubble`` at one stage per rank.
v = 1 is not compared: there the course returns one_f_one_b (Megatron's non-interleaved
schedule), while torch's interleaved class at v = 1 would warm up 2(p - rank - 1) forwards.
"""

from __future__ import annotations

import sys

import torch
from torch.distributed.pipelining import schedules as ts

from course_lib.pipeline.schedule import check_interleaved_shape, interleaved_1f1b, zero_bubble_h1

KIND = {
    ts._ComputationType.FORWARD: "F",
    ts._ComputationType.FULL_BACKWARD: "B",
    ts._ComputationType.BACKWARD_INPUT: "B",
    ts._ComputationType.BACKWARD_WEIGHT: "W",
}


def torch_order(cls, p: int, m: int, v: int) -> list[list[tuple[str, int, int]]] | None:
    """torch's per-rank compute order (None slots dropped), or None if torch rejects (p, m)."""
    rounds = max(1, m // p)  # the constructor's rule, verbatim in meaning
    if m % rounds:
        return None
    sched = object.__new__(cls)
    sched.pp_group_size, sched.n_local_stages, sched._n_microbatches = p, v, m
    sched.number_of_rounds, sched.microbatches_per_round = rounds, m // rounds
    out = []
    for rank in range(p):
        ops = sched._calculate_single_rank_operations(rank)
        out.append(
            [
                (KIND[a.computation_type], a.stage_index, a.microbatch_index)
                for a in ops
                if a is not None
            ]
        )
    return out


def ours(schedule) -> list[list[tuple[str, int, int]]]:
    return [[(a.kind, a.stage, a.microbatch) for a in acts] for acts in schedule.actions]


def main() -> int:
    print(f"torch {torch.__version__}")
    compared = rejected = 0
    for p in range(1, 9):
        for m in range(1, 4 * p + 3):
            for v in range(2, 5):
                expected = torch_order(ts.ScheduleInterleaved1F1B, p, m, v)
                try:
                    check_interleaved_shape(p, m, v)
                    accepted = True
                except ValueError:
                    accepted = False
                if accepted != (expected is not None):
                    print(f"MISMATCH acceptance p={p} m={m} v={v}: ours {accepted}")
                    return 1
                if expected is None:
                    rejected += 1
                    continue
                if ours(interleaved_1f1b(p, m, v)) != expected:
                    print(f"MISMATCH order p={p} m={m} v={v}")
                    return 1
                compared += 1
    print(
        f"interleaved_1f1b: {compared} (p, m, v) identical to ScheduleInterleaved1F1B, "
        f"{rejected} rejected by both"
    )
    zb = 0
    for p in range(1, 9):
        for m in range(1, 4 * p + 3):
            expected = torch_order(ts.ScheduleInterleavedZeroBubble, p, m, 1)
            if expected is None:
                continue
            if ours(zero_bubble_h1(p, m)) != expected:
                print(f"MISMATCH zero_bubble_h1 p={p} m={m}")
                return 1
            zb += 1
    print(f"zero_bubble_h1: {zb} (p, m) identical to ScheduleInterleavedZeroBubble at v = 1")
    return 0


if __name__ == "__main__":
    sys.exit(main())
