"""Update time of pipe08's explorer (course_lib.explorers.imbalance_explorer): model + redraw + PNG.

Run: .venv/bin/python benchmarks/bench_imbalance_explorer.py [--changes N] [--seed S]
Target (AUTHORING.md): < 100 ms per control change. Prints bench_fill_drain_explorer's random
drags (every control moved to seeded random values, one change at a time; CPU ms from
time.process_time() and the explorer's own wall-clock last_update_ms, median and p90), then the
worst case: 32 microbatches under GPipe and 1F1B with cut 2 swept over fresh values.
"""

from __future__ import annotations

import argparse
import statistics

import matplotlib
import numpy as np

matplotlib.use("Agg")

from bench_fill_drain_explorer import change, random_drags  # noqa: E402  (this folder)

from course_lib.explorers.imbalance import imbalance_explorer  # noqa: E402


def worst_case() -> None:
    explorer = imbalance_explorer()
    explorer.controls["num_microbatches"].value = 32
    every = []
    for schedule in ("GPipe", "1F1B"):
        explorer.controls["schedule"].value = schedule
        cpu = [change(explorer, "cut_2", v)[0] for v in (7, 8, 10, 11, 6, 9)]
        every += cpu
        print(f"m = 32, {schedule:5s}, cut 2 swept: CPU median {statistics.median(cpu):.1f} ms, "
              f"p90 {np.percentile(cpu, 90):.1f} ms")  # fmt: skip
    print(f"worst case: CPU median {statistics.median(every):.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=30, help="changes per control")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    random_drags(args.changes, args.seed, imbalance_explorer)
    worst_case()


if __name__ == "__main__":
    main()
