"""Timings of explorers.critical_path (cost01): every change must answer in < 100 ms at p90.

Run: .venv/bin/python benchmarks/bench_critical_path_explorer.py   (prints figures; asserts nothing)

A slider move restores the op's cached T(d) picture and pastes the bars, the op names (cached
bitmaps), the step-time line and the current point over it; a change of op also draws that op's
T(d) curve the first time it is shown. Both include the model (what-if schedule, critical path)
and the PNG encoding. Changes are drawn at random (seeded), as a learner's drags and picks are.

CPU time (time.process_time) is the figure to compare on a shared machine: wall time includes
waiting for a core. Target: p90 <= 50 ms of CPU here, half the 100 ms budget.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from course_lib.explorers.critical_path import critical_path_explorer  # noqa: E402
from tests.test_graph import example_step  # noqa: E402


def summary(label: str, cpu: list[float], wall: list[float]) -> None:
    q = np.percentile(cpu, [50, 90])
    print(
        f"  {label:<22} CPU median {q[0]:5.1f} ms · p90 {q[1]:5.1f} ms · max {max(cpu):5.1f} ms"
        f"   (wall median {statistics.median(wall):5.1f} ms · p90 "
        f"{np.percentile(wall, 90):5.1f} ms, n={len(cpu)})"
    )


def change(explorer, control: str, value, cpu: list[float], wall: list[float]) -> None:
    start = time.process_time()
    explorer.controls[control].value = value
    cpu.append(1e3 * (time.process_time() - start))
    wall.append(explorer.last_update_ms)


def main(changes: int = 120, seed: int = 0) -> None:
    g = example_step()
    durations = {n: g.nodes[n]["duration"] for n in g}
    lanes = {n: g.nodes[n]["lane"] for n in g}
    start = time.process_time()
    explorer = critical_path_explorer(durations, list(g.edges), lanes, op="bwd_2")
    print(
        f"the lesson's step (15 ops): build + first draw {1e3 * (time.process_time() - start):.0f} ms CPU"
    )
    rng = np.random.default_rng(seed)
    ops = list(g.nodes)
    slider = explorer.controls["duration_ms"]

    # A fresh explorer: the first visit of each op draws its curve (the slow path).
    cpu, wall = [], []
    for op in rng.permutation(ops):
        if op != explorer.controls["op"].value:
            change(explorer, "op", str(op), cpu, wall)
    summary("first visit of an op", cpu, wall)

    all_cpu, all_wall = [], []
    for label, control in (("change of op", "op"), ("slider move", "duration_ms")):
        cpu, wall = [], []
        for _ in range(changes):
            if control == "op":
                value = str(rng.choice([o for o in ops if o != explorer.controls["op"].value]))
            else:
                value = float(slider.step * rng.integers(0, round(slider.max / slider.step) + 1))
                if value == slider.value:
                    continue
            change(explorer, control, value, cpu, wall)
        summary(label, cpu, wall)
        all_cpu += cpu
        all_wall += wall
    summary("all changes", all_cpu, all_wall)


if __name__ == "__main__":
    main()
