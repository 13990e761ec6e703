"""Update time of pipe02's explorer (course_lib.explorers.fill_drain_explorer): model + redraw + PNG.

Run: .venv/bin/python benchmarks/bench_fill_drain_explorer.py [--changes N] [--seed S]
Target (AUTHORING.md): < 100 ms per control change at the 90th percentile on any machine, so aim
for 50 ms where you measure. Two measurements, both printed as median and 90th percentile:

- random drags: every control moved to seeded random values one change at a time (as
  benchmarks/bench_explorers.py does), so most settings are new (schedule and background caches
  mostly miss);
- the corner cases: GPipe and 1F1B, with and without latency, at (p, m) = (4, 8), (8, 32) and
  (16, 64), each slider moved through seven fresh values.

CPU ms is time.process_time() around the change: on a shared, loaded machine the wall time (the
explorer's own ``last_update_ms``) includes waiting for a core, the CPU time does not.
"""

from __future__ import annotations

import argparse
import statistics
import time

import matplotlib
import numpy as np

matplotlib.use("Agg")

from course_lib.explorers.fill_drain import fill_drain_explorer  # noqa: E402

CASES = [(4, 8), (8, 32), (16, 64)]


def change(explorer, name: str, value) -> tuple[float, float]:
    """(CPU ms, wall ms) of one control change."""
    start = time.process_time()
    explorer.controls[name].value = value
    return (time.process_time() - start) * 1e3, explorer.last_update_ms


def summary(cpu: list[float], wall: list[float]) -> str:
    c50, c90 = np.percentile(cpu, [50, 90])
    w50, w90 = np.percentile(wall, [50, 90])
    return (
        f"CPU median {c50:6.1f} ms · p90 {c90:6.1f} ms · max {max(cpu):6.1f} ms | "
        f"wall median {w50:6.1f} · p90 {w90:6.1f} · n={len(cpu)}"
    )


def random_drags(changes: int, seed: int, factory=fill_drain_explorer) -> None:
    """Every control of ``factory()``'s explorer moved to seeded random values, one at a time
    (toggles switched between their options); CPU and wall ms per control and over all."""
    explorer = factory()
    rng = np.random.default_rng(seed)
    every_cpu, every_wall = [], []
    print(f"random drags (seed {seed}, {changes} changes per control)")
    for name, control in explorer.controls.items():
        cpu, wall = [], []
        for _ in range(changes + 3):
            if hasattr(control, "options"):  # a toggle: the next option
                options = list(control.options)
                value = options[(options.index(control.value) + 1) % len(options)]
            elif name == "latency_ms":
                value = float(control.min + rng.integers(0, 41) * control.step)
            else:
                value = int(rng.integers(control.min, control.max + 1))
            if value == control.value:  # an unchanged value fires no observer
                continue
            c, w = change(explorer, name, value)
            cpu.append(c)
            wall.append(w)
        cpu, wall = cpu[3:], wall[3:]  # the first changes warm font and glyph caches
        every_cpu += cpu
        every_wall += wall
        print(f"  {name:<18} {summary(cpu, wall)}")
    print(f"  {'all controls':<18} {summary(every_cpu, every_wall)}")


def corner_cases() -> None:
    explorer = fill_drain_explorer()
    print(f"\n{'schedule':8} {'p':>3} {'m':>3} {'latency':>8} {'CPU median':>11} {'CPU p90':>8}")
    every = []
    for schedule in ("GPipe", "1F1B"):
        explorer.controls["schedule"].value = schedule
        for latency_ms in (0.0, 0.25):
            explorer.controls["latency_ms"].value = latency_ms
            for p, m in CASES:
                explorer.controls["num_stages"].value = p
                cpu = [change(explorer, "num_microbatches", v)[0] for v in range(m - 6, m + 1)]
                every += cpu
                print(
                    f"{schedule:8} {p:3d} {m:3d} {latency_ms:6.2f}ms "
                    f"{statistics.median(cpu):11.1f} {np.percentile(cpu, 90):8.1f}"
                )
    print(f"all corner cases: CPU median {statistics.median(every):.1f} ms, "
          f"p90 {np.percentile(every, 90):.1f} ms")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=60, help="changes per control")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    random_drags(args.changes, args.seed)
    corner_cases()


if __name__ == "__main__":
    main()
