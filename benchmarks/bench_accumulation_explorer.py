"""Update time of pipe06's explorer (course_lib.explorers.accumulation_explorer): model + redraw + PNG.

Run: .venv/bin/python benchmarks/bench_accumulation_explorer.py [--changes N] [--seed S]
Target (AUTHORING.md): < 100 ms per control change. Printed as median and 90th percentile (CPU ms
from time.process_time(), and the explorer's own wall-clock last_update_ms):

- random drags: every control moved to seeded random values one change at a time (the stage
  count over 1-32, the batch over its options, the fixed cost over 0-5 ms in 0.1 ms steps), so
  most settings are new and the cache of simulated steps mostly misses;
- the corner cases: B = 8 and B = 1024 (1 and 11 bars), p = 1 and p = 32, t_0 = 0 and 5 ms.
"""

from __future__ import annotations

import argparse
import itertools
import statistics

import matplotlib
import numpy as np

matplotlib.use("Agg")

from bench_fill_drain_explorer import change, summary  # noqa: E402  (this folder)

from course_lib.explorers.accumulation import accumulation_explorer  # noqa: E402


def random_drags(changes: int, seed: int) -> None:
    explorer = accumulation_explorer()
    rng = np.random.default_rng(seed)
    draws = {
        "num_stages": lambda: int(rng.integers(1, 33)),
        "batch_size": lambda: int(rng.choice(explorer.controls["batch_size"].options)),
        "fixed_time_ms": lambda: round(float(rng.integers(0, 51)) * 0.1, 1),
    }
    every_cpu, every_wall = [], []
    print(f"random drags (seed {seed}, {changes} changes per control)")
    for name, draw in draws.items():
        cpu, wall = [], []
        while len(cpu) < changes + 3:
            value = draw()
            if value == explorer.controls[name].value:  # an unchanged value fires no observer
                continue
            c, w = change(explorer, name, value)
            cpu.append(c)
            wall.append(w)
        cpu, wall = cpu[3:], wall[3:]  # the first changes warm font and glyph caches
        every_cpu += cpu
        every_wall += wall
        print(f"  {name:<15} {summary(cpu, wall)}")
    print(f"  {'all controls':<15} {summary(every_cpu, every_wall)}")


def corner_cases() -> None:
    explorer = accumulation_explorer()
    print(f"\n{'B':>5} {'p':>3} {'t0 ms':>6} {'CPU ms':>7}")
    every = []
    for batch, p, t0 in itertools.product((8, 1024), (1, 32), (0.0, 5.0)):
        explorer.controls["fixed_time_ms"].value = 2.5  # move away, so each setting is a change
        explorer.controls["batch_size"].value = batch
        explorer.controls["num_stages"].value = p
        cpu, _ = change(explorer, "fixed_time_ms", t0)
        every.append(cpu)
        print(f"{batch:5d} {p:3d} {t0:6.1f} {cpu:7.1f}")
    print(f"corner cases: CPU median {statistics.median(every):.1f} ms, max {max(every):.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=40, help="changes per control")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    random_drags(args.changes, args.seed)
    corner_cases()


if __name__ == "__main__":
    main()
