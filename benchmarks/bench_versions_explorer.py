"""Update time of pipe07's explorer (course_lib.explorers.versions.versions_explorer).

Run: .venv/bin/python benchmarks/bench_versions_explorer.py [--changes N] [--seed S]
Target (AUTHORING.md): < 100 ms per control change. Prints the median and 90th percentile of the
CPU time of a change and of the explorer's own wall-clock ``last_update_ms``, for pipe02's random
drags and for the heaviest corner (8 stages, 2BW with m = 8: 24 microbatches, 384 boxes) dragged
through every microbatch. Nothing is asserted.
"""

from __future__ import annotations

import argparse

import matplotlib

matplotlib.use("Agg")

from bench_fill_drain_explorer import change, random_drags, summary  # noqa: E402

from course_lib.explorers.versions import versions_explorer  # noqa: E402


def corner() -> None:
    explorer = versions_explorer(policy="2bw", num_stages=8, microbatches_per_batch=8)
    cpu, wall = [], []
    for j in [*range(24), *reversed(range(24))]:
        if j == explorer.controls["microbatch"].value:
            continue
        c, w = change(explorer, "microbatch", j)
        cpu.append(c)
        wall.append(w)
    print(f"  {'p = 8, 2BW, m = 8, every microbatch':<48} {summary(cpu[2:], wall[2:])}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=30, help="changes per control")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    random_drags(args.changes, args.seed, factory=versions_explorer)
    print("the heaviest corner")
    corner()


if __name__ == "__main__":
    main()
