"""Update time of pipe04's explorer (course_lib.explorers.interleaved_explorer): model + redraw + PNG.

Run: .venv/bin/python benchmarks/bench_interleaved_explorer.py [--changes N] [--seed S]
Target (AUTHORING.md): < 100 ms per control change, and the brief's case p = 16, m = 64, v = 4.
Printed as median and 90th percentile of CPU ms (time.process_time() around the change; on a
shared, loaded machine the wall time, the explorer's own ``last_update_ms``, also counts waiting
for a core):

- the brief's case: at p = 16, m = 64, v = 4, the latency slider moved through 20 fresh values
  (each a new simulation; the schedule is cached), then v moved 1..8 and back (new schedules);
- random drags: every control moved to seeded random values one change at a time (mostly new
  settings: schedule and run caches mostly miss), including refused (p, m, v).
"""

from __future__ import annotations

import argparse

import matplotlib
import numpy as np

matplotlib.use("Agg")

from bench_fill_drain_explorer import change, summary  # noqa: E402  (same measurement)

from course_lib.explorers.interleaved import interleaved_explorer  # noqa: E402


def briefs_case() -> None:
    explorer = interleaved_explorer(num_ranks=16, num_microbatches=64, chunks_per_rank=4)
    latency = explorer.controls["latency_ms"]
    steps = [latency.min + k * latency.step for k in range(1, 21)]
    cpu, wall = zip(*(change(explorer, "latency_ms", value) for value in steps), strict=True)
    print("p = 16, m = 64, v = 4")
    print(f"  {'latency (new runs)':<22} {summary(list(cpu), list(wall))}")
    values = [1, 2, 3, 5, 6, 7, 8, 7, 6, 5, 3, 2, 1, 4]
    cpu, wall = zip(*(change(explorer, "chunks_per_rank", v) for v in values), strict=True)
    print(f"  {'chunks v 1..8..1':<22} {summary(list(cpu), list(wall))}")


def random_drags(changes: int, seed: int) -> None:
    """Each control in turn through ``changes`` seeded random values (unchanged ones skipped)."""
    explorer = interleaved_explorer()
    rng = np.random.default_rng(seed)
    every: tuple[list[float], list[float]] = ([], [])
    print(f"\nrandom drags (seed {seed}, {changes} changes per control)")
    for name, control in explorer.controls.items():
        if name == "latency_ms":
            plan = control.min + rng.integers(0, 41, changes + 3) * control.step
        else:
            plan = rng.integers(control.min, control.max + 1, changes + 3)
        timed = [change(explorer, name, value.item()) for value in plan if value != control.value]
        cpu, wall = (list(column[3:]) for column in zip(*timed, strict=True))  # warm-up dropped
        every[0].extend(cpu)
        every[1].extend(wall)
        print(f"  {name:<18} {summary(cpu, wall)}")
    print(f"  {'all controls':<18} {summary(*every)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=40, help="changes per control")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    briefs_case()
    random_drags(args.changes, args.seed)


if __name__ == "__main__":
    main()
