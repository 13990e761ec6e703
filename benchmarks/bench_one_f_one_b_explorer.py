"""Update time of pipe03's explorer (course_lib.explorers.one_f_one_b_explorer): model + redraw + PNG.

Run: .venv/bin/python benchmarks/bench_one_f_one_b_explorer.py [--changes N] [--seed S]
Target (AUTHORING.md): < 100 ms per control change. Two measurements, printed as median and 90th
percentile (CPU ms from time.process_time(), and the explorer's own wall-clock last_update_ms):

- random drags (bench_fill_drain_explorer's): every control moved to seeded random values one
  change at a time, so most settings are new (the cache of simulated runs mostly misses);
- the corner cases: (p, m) = (4, 8), (8, 32), (16, 64), with and without latency, the stage
  slider swept over every stage and m over seven fresh values.
"""

from __future__ import annotations

import argparse
import statistics

import matplotlib
import numpy as np

matplotlib.use("Agg")

from bench_fill_drain_explorer import change, random_drags  # noqa: E402  (this folder)

from course_lib.explorers.one_f_one_b import one_f_one_b_explorer  # noqa: E402

CASES = [(4, 8), (8, 32), (16, 64)]


def corner_cases() -> None:
    explorer = one_f_one_b_explorer()
    print(f"\n{'p':>3} {'m':>3} {'latency':>8} {'control':>16} {'CPU median':>11} {'CPU p90':>8}")
    every = []
    for latency_ms in (0.0, 0.5):
        explorer.controls["latency_ms"].value = latency_ms
        for p, m in CASES:
            explorer.controls["num_stages"].value = p
            sweeps = {
                "num_microbatches": range(m - 6, m + 1),
                "stage": [s for s in range(p) if s != explorer.controls["stage"].value],
            }
            for name, values in sweeps.items():
                cpu = [change(explorer, name, v)[0] for v in values]
                every += cpu
                print(
                    f"{p:3d} {m:3d} {latency_ms:6.2f}ms {name:>16} "
                    f"{statistics.median(cpu):11.1f} {np.percentile(cpu, 90):8.1f}"
                )
    print(f"all corner cases: CPU median {statistics.median(every):.1f} ms, "
          f"p90 {np.percentile(every, 90):.1f} ms")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=60, help="changes per control")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    random_drags(args.changes, args.seed, one_f_one_b_explorer)
    corner_cases()


if __name__ == "__main__":
    main()
