"""Update time of cost02's explorer (course_lib.explorers.clock_alignment_explorer): model + redraw + PNG.

Run: .venv/bin/python benchmarks/bench_clock_alignment_explorer.py [--changes N] [--seed S]
Target (AUTHORING.md): < 100 ms per control change. Every slider is moved to N seeded random
values, one change at a time (as a learner's drag does); printed per slider: median, 90th percentile
and maximum of the explorer's own ``last_update_ms`` (wall time) and of the CPU time of the change
(time.process_time: on a shared, loaded machine wall time measures the load, CPU time the work). A change
that reaches a vertical zoom level for the first time renders the static background (axes, ticks,
key) once; those first visits are included. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import statistics
import time

import matplotlib
import numpy as np

matplotlib.use("Agg")

from bench_explorers import slider_values  # noqa: E402

from course_lib.explorers.clock_alignment import clock_alignment_explorer  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=60, help="changes per slider")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    explorer = clock_alignment_explorer()
    print(
        f"clock_alignment_explorer() built in {(time.perf_counter() - t0) * 1e3:.0f} ms, "
        f"first update {explorer.last_update_ms:.1f} ms"
    )
    everything, all_cpus = [], []
    for name, control in explorer.controls.items():
        walls, cpus = [], []
        start_value = control.value
        for value in slider_values(control, args.changes, rng):
            if value == control.value:
                continue
            c0 = time.process_time()
            control.value = value
            cpus.append((time.process_time() - c0) * 1e3)
            walls.append(explorer.last_update_ms)
        control.value = start_value
        everything += walls
        all_cpus += cpus
        q50, q90 = np.percentile(walls, [50, 90])
        c50, c90 = np.percentile(cpus, [50, 90])
        print(
            f"  {name:<14} wall median {q50:6.1f} ms · p90 {q90:6.1f} ms · max {max(walls):6.1f} ms"
            f" · cpu median {c50:6.1f} ms · p90 {c90:6.1f} ms · max {max(cpus):6.1f} ms"
            f" · n={len(walls)}"
        )
    c50, c90 = np.percentile(all_cpus, [50, 90])
    print(
        f"  {'all controls':<14} wall median {statistics.median(everything):6.1f} ms"
        f" · cpu median {c50:6.1f} ms · p90 {c90:6.1f} ms"
    )


if __name__ == "__main__":
    main()
