"""Timings of widgets.critical_path_explorer (cost01): every change must answer in < 100 ms.

Run: .venv/bin/python benchmarks/bench_critical_path_explorer.py   (prints figures; asserts nothing)

A slider move redraws the bars, names and current point over a cached background (blitting); a
change of op also redraws the T(d) panel. Both include the model (what-if schedule, critical path,
A and B) and the PNG encoding, as ``last_update_ms`` measures them.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from course_lib.explorers.critical_path import critical_path_explorer  # noqa: E402
from tests.test_graph import example_step  # noqa: E402


def summary(label: str, wall: list[float], cpu: list[float]) -> None:
    print(
        f"  {label:<16} median {statistics.median(wall):6.1f} ms wall, "
        f"{statistics.median(cpu):6.1f} ms CPU   (max {max(wall):6.1f} ms wall, n={len(wall)})"
    )


def main() -> None:
    g = example_step()
    durations = {n: g.nodes[n]["duration"] for n in g}
    lanes = {n: g.nodes[n]["lane"] for n in g}
    start = time.perf_counter()
    explorer = critical_path_explorer(durations, list(g.edges), lanes, op="bwd_2")
    print(f"example step (15 ops): first draw {1e3 * (time.perf_counter() - start):.0f} ms")

    slider = explorer.controls["duration_ms"]
    wall, cpu = [], []
    for i in range(60):
        c = time.process_time()
        slider.value = 0.25 * i  # 0 .. 14.75 ms, across the kink at 2 ms
        cpu.append(1e3 * (time.process_time() - c))
        wall.append(explorer.last_update_ms)
    summary("slider move", wall, cpu)

    wall, cpu = [], []
    for op in list(g.nodes) * 2:
        c = time.process_time()
        explorer.controls["op"].value = op
        cpu.append(1e3 * (time.process_time() - c))
        wall.append(explorer.last_update_ms)
    summary("change of op", wall, cpu)


if __name__ == "__main__":
    main()
