"""Median wall time of course_lib.overlap's interval algebra on 10**6 random intervals (cost03).

Run: .venv/bin/python benchmarks/bench_overlap.py [--n 1000000] [--repeat 7] [--seed 0]
Prints one line per operation: median and min over the repeats, in milliseconds.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from course_lib.overlap import (
    exposed_communication,
    intersection,
    overlap_ratio,
    subtract,
    total_length,
    union,
)


def random_intervals(n: int, rng: np.random.Generator) -> np.ndarray:
    """n kernel-like intervals: starts uniform over n microseconds·10, durations exponential."""
    starts = rng.uniform(0.0, n * 1e-5, n)
    return np.column_stack((starts, starts + rng.exponential(5e-6, n)))


def bench(label: str, fn, repeat: int) -> None:
    fn()  # warm-up
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    print(
        f"{label:<38} median {1e3 * statistics.median(times):8.1f} ms   "
        f"min {1e3 * min(times):8.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    comm = random_intervals(args.n, rng)
    compute = random_intervals(args.n, rng)
    print(f"n = {args.n:,} intervals per set, {args.repeat} repeats, numpy {np.__version__}")
    bench("union(comm)", lambda: union(comm), args.repeat)
    bench("total_length(comm)", lambda: total_length(comm), args.repeat)
    bench("intersection(comm, compute)", lambda: intersection(comm, compute), args.repeat)
    bench("subtract(comm, compute)", lambda: subtract(comm, compute), args.repeat)
    bench("overlap_ratio(comm, compute)", lambda: overlap_ratio(comm, compute), args.repeat)
    bench(
        "exposed_communication(comm, compute)",
        lambda: exposed_communication(comm, compute),
        args.repeat,
    )
    print(f"overlap_ratio = {overlap_ratio(comm, compute):.4f}")


if __name__ == "__main__":
    main()
