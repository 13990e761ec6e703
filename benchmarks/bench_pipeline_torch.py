"""course_lib.pipeline against PyTorch 2.13's own schedule lowering and simulator, side by side.

Run (torch lives in a throwaway venv; the course never depends on it):
    python3 -m venv /tmp/tv && /tmp/tv/bin/pip install torch==2.13.0 pandas
    .venv/bin/python benchmarks/bench_pipeline_torch.py [--torch-python /tmp/tv/bin/python]
        [--ranks 32 --microbatches 256 --chunks 4] [--rounds 5]

What is timed, per round (wall time, time.perf_counter, fresh objects each round):
- ours: ``simulate(interleaved_1f1b(p, m, v), t_f / v, t_b / v, p2p_latency=δ)`` — generating
  the schedule and simulating it with per-chunk costs and a per-hop latency into a Timeline
  (events table of start/end times);
- torch: the compute-only per-rank order of ``ScheduleInterleaved1F1B`` (its
  ``_calculate_single_rank_operations`` for every rank, what the constructor runs), its lowering
  to send/recv actions (``_add_send_recv``, the step of ``_prepare_schedule_with_comms`` that
  ``_simulate_comms_compute`` can read; the FSDP unshard/reduce-grad passes are left out since
  that simulator rejects their actions) and ``_simulate_comms_compute``, the lock-step dry run
  that places every action in unit-time steps (no costs, no latency).
Rounds alternate ours and torch's (torch in one persistent subprocess, so its import is paid
once and outside the timing); the medians and their ratio are printed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from course_lib.pipeline import interleaved_1f1b, simulate  # noqa: E402

TORCH_SIDE = r"""
import json, sys, time
import torch
from torch.distributed.pipelining import schedules as ts

p, m, v = (int(x) for x in sys.argv[1:4])


def run():
    start = time.perf_counter()
    sched = object.__new__(ts.ScheduleInterleaved1F1B)
    rounds = max(1, m // p)
    if m % rounds:
        raise ValueError("torch rejects this (p, m)")
    sched.pp_group_size, sched.n_local_stages, sched._n_microbatches = p, v, m
    sched.number_of_rounds, sched.microbatches_per_round = rounds, m // rounds
    order = {rank: sched._calculate_single_rank_operations(rank) for rank in range(p)}
    computed = sum(a is not None for ops in order.values() for a in ops)
    comms = ts._add_send_recv(order, stage_to_rank=lambda s: s % p, num_stages=p * v)
    steps = ts._simulate_comms_compute(comms, stage_to_rank=lambda s: s % p, num_stages=p * v)
    seconds = time.perf_counter() - start
    return seconds, computed, max(len(s) for s in steps.values())


print(json.dumps({"torch": torch.__version__}), flush=True)
for line in sys.stdin:
    seconds, computed, steps = run()
    print(json.dumps({"seconds": seconds, "actions": computed, "steps": steps}), flush=True)
"""


def ours(p: int, m: int, v: int) -> tuple[float, int]:
    start = time.perf_counter()
    timeline = simulate(interleaved_1f1b(p, m, v), 1.0 / v, 2.0 / v, p2p_latency=0.01)
    return time.perf_counter() - start, len(timeline.events)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--torch-python", default="/tmp/tv/bin/python")
    parser.add_argument("--ranks", type=int, default=32)
    parser.add_argument("--microbatches", type=int, default=256)
    parser.add_argument("--chunks", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    p, m, v = args.ranks, args.microbatches, args.chunks

    torch_side = subprocess.Popen(
        [args.torch_python, "-c", TORCH_SIDE, str(p), str(m), str(v)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    version = json.loads(torch_side.stdout.readline())["torch"]
    ours(p, m, v)  # warm numpy / pandas code paths once, as torch's import warmed its side
    mine, theirs, steps = [], [], 0
    for _ in range(args.rounds):
        seconds, actions = ours(p, m, v)
        mine.append(seconds)
        torch_side.stdin.write("run\n")
        torch_side.stdin.flush()
        result = json.loads(torch_side.stdout.readline())
        theirs.append(result["seconds"])
        steps = result["steps"]
        if result["actions"] != actions:
            raise SystemExit(f"action counts differ: ours {actions}, torch {result['actions']}")
    torch_side.stdin.close()
    torch_side.wait()

    ours_median, torch_median = statistics.median(mine), statistics.median(theirs)
    print(f"interleaved 1F1B, p = {p}, m = {m}, v = {v}: {actions:,} compute actions")
    print(f"  ours  (generate + simulate, costs and latency)       median {ours_median:8.3f} s  "
          f"runs {', '.join(f'{t:.3f}' for t in mine)}")  # fmt: skip
    print(f"  torch {version} (order + _add_send_recv + _simulate_comms_compute, "
          f"{steps:,} lock-step steps)  median {torch_median:8.3f} s  "
          f"runs {', '.join(f'{t:.3f}' for t in theirs)}")  # fmt: skip
    print(f"  ratio torch / ours: {torch_median / ours_median:.1f}x")


if __name__ == "__main__":
    main()
