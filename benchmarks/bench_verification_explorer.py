"""Update time of pipe10's explorer (course_lib.explorers.verification.verification_explorer):
verify (with numeric=True) + redraw + PNG.

Run: .venv/bin/python benchmarks/bench_verification_explorer.py [--changes N] [--seed S]
Target (AUTHORING.md): < 100 ms per control change. Printed as median and 90th percentile of the
CPU time of a change (time.process_time, fair on a loaded machine) and of the explorer's own
wall-clock ``last_update_ms``:
- random drags: pipe02's benchmark loop (every control moved one change at a time, drop-downs to
  their next option);
- the heaviest corner: interleaved 1F1B (96 entries, 24 per rank), every mutation at every
  position of rank 3. Nothing is asserted.
"""

from __future__ import annotations

import argparse

import matplotlib

matplotlib.use("Agg")

# The same measurement as pipe02's benchmark (run from this folder, so it imports as a module).
from bench_fill_drain_explorer import change, random_drags, summary  # noqa: E402

from course_lib.explorers.verification import MUTATIONS, verification_explorer  # noqa: E402


def corner() -> None:
    explorer = verification_explorer(schedule="interleaved 1F1B (2 chunks)", rank=3, position=0)
    cpu, wall = [], []
    for mutation in MUTATIONS:
        c, w = change(explorer, "mutation", mutation) if mutation != "drop" else (None, None)
        if c is not None:
            cpu.append(c)
            wall.append(w)
        for position in range(1, explorer.controls["position"].max + 1, 3):
            c, w = change(explorer, "position", position)
            cpu.append(c)
            wall.append(w)
    print(f"  {'interleaved, rank 3, every mutation':<40} {summary(cpu[2:], wall[2:])}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=30, help="changes per control")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    random_drags(args.changes, args.seed, factory=verification_explorer)
    print("the heaviest corner")
    corner()


if __name__ == "__main__":
    main()
