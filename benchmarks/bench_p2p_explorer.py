"""Update time of pipe09's explorer (course_lib.explorers.p2p.p2p_explorer): model + redraw + PNG.

Run: .venv/bin/python benchmarks/bench_p2p_explorer.py [--changes N] [--seed S]
Target (AUTHORING.md): < 100 ms per control change. Printed as median and 90th percentile of the
CPU time of a change (time.process_time, fair on a loaded machine) and of the explorer's own
wall-clock ``last_update_ms``:
- random drags: pipe02's benchmark loop (every control moved one change at a time, drop-downs and
  toggles to their next option);
- the heaviest corner: 8 ranks, "even ranks send both first" (a deadlock, a cycle, every arrow),
  dragged through every message size, as a learner drags (backgrounds cached per shape) and cold
  (that cache emptied before every change, so the whole figure is redrawn). Nothing is asserted.
"""

from __future__ import annotations

import argparse

import matplotlib

matplotlib.use("Agg")

# The same measurement as pipe02's benchmark (run from this folder, so it imports as a module).
from bench_fill_drain_explorer import change, random_drags, summary  # noqa: E402

from course_lib.explorers.p2p import SIZES, p2p_explorer  # noqa: E402


def corner(cold: bool) -> None:
    explorer = p2p_explorer(order="even_sends_first", num_ranks=8)
    cpu, wall = [], []
    for size in [*SIZES, *reversed(SIZES)] * 2:
        if size == explorer.controls["message"].value:
            continue
        if cold:
            explorer._backgrounds.clear()
        c, w = change(explorer, "message", size)
        cpu.append(c)
        wall.append(w)
    label = f"p = 8, 'even ranks send both first', {'cold' if cold else 'dragged'}"
    print(f"  {label:<48} {summary(cpu[2:], wall[2:])}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=30, help="changes per control")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    random_drags(args.changes, args.seed, factory=p2p_explorer)
    print("the heaviest corner")
    for cold in (False, True):
        corner(cold)


if __name__ == "__main__":
    main()
