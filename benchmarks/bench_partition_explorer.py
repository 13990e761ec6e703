"""Update time of pipe01's explorer (course_lib.explorers.partition_explorer): model + redraw + PNG.

Run: .venv/bin/python benchmarks/bench_partition_explorer.py [--changes N] [--seed S]
Target (AUTHORING.md): < 100 ms per control change. Every control is moved to seeded random values
one change at a time, then the heaviest corner (p = 8, m = 32, "min-max within limit") is dragged
through m. Printed: median and 90th percentile of CPU ms (time.process_time() around the change,
which a loaded machine does not inflate) and of wall ms (the explorer's own last_update_ms).
The explorer caches each setting's numbers and each axis layout's background; the last line
repeats the random drags with both caches emptied before every change (the cold cost).
"""

from __future__ import annotations

import argparse
import time

import matplotlib
import numpy as np

matplotlib.use("Agg")

from course_lib.explorers import partition as module  # noqa: E402
from course_lib.explorers.partition import PARTITIONS, partition_explorer  # noqa: E402


def change(explorer, name: str, value, cold: bool = False) -> tuple[float, float]:
    """(CPU ms, wall ms) of one control change (``cold``: with the explorer's caches emptied)."""
    if cold:
        module._setting.cache_clear()
        explorer._layouts.clear()
    start = time.process_time()
    explorer.controls[name].value = value
    return (time.process_time() - start) * 1e3, explorer.last_update_ms


def summary(cpu: list[float], wall: list[float]) -> str:
    c50, c90 = np.percentile(cpu, [50, 90])
    w50, w90 = np.percentile(wall, [50, 90])
    return (
        f"CPU median {c50:6.1f} ms · p90 {c90:6.1f} ms | wall median {w50:6.1f} · p90 {w90:6.1f}"
        f" · n={len(cpu)}"
    )


def random_value(control, rng):
    if hasattr(control, "options"):
        return str(rng.choice([o for o in control.options if o != control.value]))
    if control.__class__.__name__ == "FloatLogSlider":
        return float(10 ** rng.uniform(control.min, control.max))
    return int(rng.integers(control.min, control.max + 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=40, help="changes per control")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    explorer = partition_explorer()
    rng = np.random.default_rng(args.seed)
    every_cpu, every_wall = [], []
    print(f"random drags (seed {args.seed}, {args.changes} changes per control)")
    for name, control in explorer.controls.items():
        cpu, wall = [], []
        for _ in range(args.changes + 3):
            value = random_value(control, rng)
            if value == control.value:
                continue
            c, w = change(explorer, name, value)
            cpu.append(c)
            wall.append(w)
        cpu, wall = cpu[3:], wall[3:]  # the first changes warm font and glyph caches
        every_cpu += cpu
        every_wall += wall
        print(f"  {name:<18} {summary(cpu, wall)}")
    print(f"  {'all controls':<18} {summary(every_cpu, every_wall)}")
    explorer.controls["num_stages"].value = 8
    explorer.controls["partition"].value = PARTITIONS[2]
    cpu, wall = [], []
    for m in list(range(20, 33)) + list(range(31, 19, -1)):
        c, w = change(explorer, "num_microbatches", m)
        cpu.append(c)
        wall.append(w)
    print(f"  p = 8, {PARTITIONS[2]!r}, m 20..32: {summary(cpu, wall)}")
    cpu, wall = [], []
    for name, control in explorer.controls.items():
        for _ in range(args.changes):
            value = random_value(control, rng)
            if value != control.value:
                c, w = change(explorer, name, value, cold=True)
                cpu.append(c)
                wall.append(w)
    print(f"  {'cold (no caches)':<18} {summary(cpu, wall)}")


if __name__ == "__main__":
    main()
