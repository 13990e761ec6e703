"""Benchmark: load_trace + overlap_ratio over the kernels of a 1,000,000-event trace.

Requirement (cost02/cost03 data sizes): at most 10 s on the 2-core course machine (aim 3 s), peak
memory under 2 GB. Usage:

    .venv/bin/python benchmarks/bench_trace.py [--runs 3] [--events 1000000] [--regenerate]

The trace is generated once with course_lib.tracegen (one rank, as many steps as needed, cut to
exactly --events events) and cached in /tmp as plain JSON and gzip. Each run is a fresh Python
process, so the reported peak RSS (resource.getrusage ru_maxrss) is that of loading and analysing
one trace: interpreter + imports + load_trace + overlap_ratio. Prints medians over the runs: wall-clock
time and process CPU time (time.process_time; less sensitive to other processes on the 2 shared
cores) — report both. Also prints the machine's load average before the runs.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

CACHE = Path("/tmp/course_lib_bench_trace")

CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
import numpy as np
from course_lib.trace import load_trace
try:
    from course_lib.overlap import overlap_ratio
    source = "course_lib.overlap.overlap_ratio"
except ImportError:  # inline fallback: same HTA definition, numpy sort + cumulative max
    def _union_length(a):
        a = a[np.argsort(a[:, 0], kind="stable")]
        run_end = np.maximum.accumulate(a[:, 1])
        new = np.ones(len(a), bool)
        new[1:] = a[1:, 0] > run_end[:-1]
        group = np.flatnonzero(new)
        return float(np.sum(np.maximum.reduceat(a[:, 1], group) - a[group, 0]))
    def overlap_ratio(comm, compute):
        # |U comm ∩ U compute| = |U comm| + |U compute| - |U (comm + compute)|
        c, k = np.asarray(comm, float), np.asarray(compute, float)
        lc = _union_length(c)
        both = lc + _union_length(k) - _union_length(np.concatenate([c, k]))
        return both / lc
    source = "inline"
t_import = time.perf_counter() - t0
t1, c1 = time.perf_counter(), time.process_time()
df = load_trace(sys.argv[1])
t_load, c_load = time.perf_counter() - t1, time.process_time() - c1
t2, c2 = time.perf_counter(), time.process_time()
kernels = df[df["cat"] == "kernel"]
start = kernels["ts"].to_numpy()
iv = np.column_stack([start, start + kernels["dur"].to_numpy()])
is_comm = kernels["name"].str.startswith("nccl").to_numpy(dtype=bool)
ratio = overlap_ratio(iv[is_comm], iv[~is_comm])
t_overlap, c_overlap = time.perf_counter() - t2, time.process_time() - c2
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"events": len(df), "kernels": len(kernels), "ratio": ratio,
                  "import_s": t_import, "load_s": t_load, "overlap_s": t_overlap,
                  "load_cpu_s": c_load, "overlap_cpu_s": c_overlap,
                  "peak_rss_bytes": peak, "overlap_source": source}))
"""


def make_trace(num_events: int, regenerate: bool) -> tuple[Path, Path]:
    """Generate (or reuse) a one-rank synthetic trace of exactly ``num_events`` events."""
    from course_lib.trace import write_trace
    from course_lib.tracegen import generate_dp_profile

    CACHE.mkdir(parents=True, exist_ok=True)
    plain = CACHE / f"trace_{num_events}.json"
    gz = CACHE / f"trace_{num_events}.json.gz"
    if plain.exists() and gz.exists() and not regenerate:
        return plain, gz
    t = time.perf_counter()
    one = generate_dp_profile(num_ranks=1, num_steps=1, seed=0)[0]
    per_step = len(one) - 7  # minus the 7 metadata events
    steps = math.ceil((num_events - 7) / per_step) + 1
    df = generate_dp_profile(num_ranks=1, num_steps=steps, seed=0)[0].iloc[:num_events]
    t_gen = time.perf_counter() - t
    t = time.perf_counter()
    write_trace(df, plain)
    write_trace(df, gz)
    print(
        f"generated {len(df):,} events ({steps} steps) in {t_gen:.1f} s, wrote both files in "
        f"{time.perf_counter() - t:.1f} s: {plain.stat().st_size / 1e6:.0f} MB plain, "
        f"{gz.stat().st_size / 1e6:.0f} MB gzip"
    )
    return plain, gz


def run_child(path: Path) -> dict:
    env = dict(os.environ)
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(path)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--regenerate", action="store_true")
    args = ap.parse_args()
    plain, gz = make_trace(args.events, args.regenerate)
    print(f"load average before the runs: {os.getloadavg()[0]:.2f} (2 cores)")
    for label, path in (("plain JSON", plain), ("gzip", gz)):
        runs = [run_child(path) for _ in range(args.runs)]
        keys = ("load_s", "overlap_s", "load_cpu_s", "overlap_cpu_s", "peak_rss_bytes")
        med = {k: statistics.median(r[k] for r in runs) for k in keys}
        r0 = runs[0]
        print(
            f"{label:10s} {r0['events']:,} events, {r0['kernels']:,} kernels, overlap ratio "
            f"{r0['ratio']:.3f} ({r0['overlap_source']}); median of {args.runs}: "
            f"load_trace {med['load_s']:.2f} s wall / {med['load_cpu_s']:.2f} s CPU, "
            f"overlap_ratio {med['overlap_s']:.3f} s wall / {med['overlap_cpu_s']:.3f} s CPU, "
            f"total {med['load_s'] + med['overlap_s']:.2f} s wall, "
            f"peak RSS {med['peak_rss_bytes'] / 2**30:.2f} GiB "
            f"(load runs, wall: {', '.join(format(r['load_s'], '.2f') for r in runs)} s)"
        )


if __name__ == "__main__":
    main()
