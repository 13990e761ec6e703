"""Update time of pipe02's explorer (course_lib.explorers.fill_drain_explorer): model + redraw + PNG.

Run: .venv/bin/python benchmarks/bench_fill_drain_explorer.py
Target (AUTHORING.md): < 100 ms per control change, up to p = 16, m = 64. Each row moves one
slider through fresh values (no schedule cache hits) and prints the median of the explorer's own
``last_update_ms`` (wall time) and the median CPU time of the same changes: on a shared machine the
wall time includes waiting for a core, the CPU time does not.
"""

from __future__ import annotations

import statistics
import time

import matplotlib

matplotlib.use("Agg")

from course_lib.explorers.fill_drain import fill_drain_explorer  # noqa: E402

CASES = [(4, 8), (8, 32), (16, 64)]


def main() -> None:
    explorer = fill_drain_explorer()
    print(f"{'schedule':8} {'p':>3} {'m':>3} {'latency':>8} {'wall ms':>8} {'cpu ms':>7}")
    for schedule in ("GPipe", "1F1B"):
        explorer.controls["schedule"].value = schedule
        for latency_ms in (0.0, 0.25):
            explorer.controls["latency_ms"].value = latency_ms
            for p, m in CASES:
                explorer.controls["num_stages"].value = p
                walls, cpus = [], []
                for value in range(m - 6, m + 1):  # seven fresh (p, m) settings
                    start = time.process_time()
                    explorer.controls["num_microbatches"].value = value
                    cpus.append((time.process_time() - start) * 1e3)
                    walls.append(explorer.last_update_ms)
                print(
                    f"{schedule:8} {p:3d} {m:3d} {latency_ms:6.2f}ms "
                    f"{statistics.median(walls):8.1f} {statistics.median(cpus):7.1f}"
                )


if __name__ == "__main__":
    main()
