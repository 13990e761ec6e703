"""Median wall time of course_lib.pipeline.simulate for GPipe and 1F1B at growing (p, m).

Run: .venv/bin/python benchmarks/bench_pipeline.py
Targets (brief): p=8, m=32 in a few ms; p=32, m=256 well under a second. Also times the derived
metrics a lesson reads right after simulating (idle fraction, overhead, peak in-flight).
"""

from __future__ import annotations

import statistics
import timeit

from course_lib.pipeline import gpipe, one_f_one_b, simulate

CASES = [(4, 8), (8, 32), (32, 256)]


def median_seconds(stmt, repeat: int = 15) -> float:
    """Median of ``repeat`` single runs (each timed separately)."""
    number = 1
    return statistics.median(t / number for t in timeit.repeat(stmt, number=number, repeat=repeat))


def main() -> None:
    print(f"{'schedule':8} {'p':>4} {'m':>5} {'actions':>8} {'simulate':>12} {'+ metrics':>12}")
    for generator in (gpipe, one_f_one_b):
        for p, m in CASES:
            schedule = generator(p, m)
            repeat = 15 if p * m <= 256 else 7

            def run(schedule=schedule):
                return simulate(schedule, 1.0, 2.0, p2p_latency=0.1)

            def run_with_metrics(schedule=schedule):
                timeline = simulate(schedule, 1.0, 2.0, p2p_latency=0.1)
                return timeline.idle_fraction, timeline.overhead, timeline.peak_in_flight

            t_sim = median_seconds(run, repeat)
            t_all = median_seconds(run_with_metrics, repeat)
            print(
                f"{schedule.name:8} {p:>4} {m:>5} {2 * p * m:>8} "
                f"{t_sim * 1e3:>9.2f} ms {t_all * 1e3:>9.2f} ms"
            )


if __name__ == "__main__":
    main()
