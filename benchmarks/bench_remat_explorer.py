"""Update time of pipe05's explorer (course_lib.explorers.remat_explorer): model + redraw + PNG.

Run: .venv/bin/python benchmarks/bench_remat_explorer.py [--changes N] [--seed S]
Target (AUTHORING.md): < 100 ms per control change. Every control is moved to seeded random
values one change at a time (as a learner's drag does); printed per control and overall: the
median and 90th percentile of the CPU time of a change (time.process_time, fair on a loaded
machine) and of the explorer's own wall-clock ``last_update_ms``. Twice: as a learner drags
(the explorer keeps a drawn background per (sequence length, microbatches in flight), so a
budget drag only moves two artists), and cold, with that cache emptied before every change
(each change then redraws the whole figure). Nothing is asserted.
"""

from __future__ import annotations

import argparse

import matplotlib
import numpy as np

matplotlib.use("Agg")

# The same measurement as pipe02's benchmark (run from this folder, so it imports as a module).
from bench_fill_drain_explorer import change, summary  # noqa: E402

from course_lib.explorers.remat import remat_explorer  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=40, help="changes per control")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    for cold in (False, True):
        print("cold: every change redraws the figure" if cold else "as a learner drags")
        explorer = remat_explorer()
        rng = np.random.default_rng(args.seed)
        every_cpu, every_wall = [], []
        for name, control in explorer.controls.items():
            cpu, wall = [], []
            for _ in range(args.changes + 3):
                if name == "seq_len":
                    value = int(rng.choice(control.options))
                elif name == "budget_gib":
                    value = float(rng.integers(0, 161) * 0.5)
                else:
                    value = int(rng.integers(control.min, control.max + 1))
                if value == control.value:  # an unchanged value fires no observer
                    continue
                if cold:
                    explorer._backgrounds.clear()
                c, w = change(explorer, name, value)
                cpu.append(c)
                wall.append(w)
            cpu, wall = cpu[3:], wall[3:]  # the first changes warm font and glyph caches
            every_cpu += cpu
            every_wall += wall
            print(f"  {name:<12} {summary(cpu, wall)}")
        print(f"  {'all':<12} {summary(every_cpu, every_wall)}")


if __name__ == "__main__":
    main()
