"""Benchmark: load_trace + overlap_ratio vs a plain json.load + pandas.DataFrame, side by side.

Requirement (issue 11, Performance): ``load_trace`` + ``overlap_ratio`` over the kernels of a
1,000,000-event Kineto trace at least 3x faster than a plain ``json.load`` +
``pandas.DataFrame(traceEvents)`` of the same file, measured in one run; peak memory under 1.5 GB;
results identical. Usage:

    .venv/bin/python benchmarks/bench_trace.py [--runs 5] [--events 1000000] [--regenerate]
                                               [--no-gzip]

The trace is generated once with course_lib.tracegen (one rank, as many steps as needed, cut to
exactly --events events) and cached in /tmp as plain JSON and gzip. Every run is a fresh Python
process, and the two contenders alternate (plain, ours, plain, ours, ...) so that a change in the
machine's load hits both alike. Each child reports its wall time (perf_counter), its CPU time
(process_time: less sensitive to other processes on the 2 shared cores) and its peak RSS
(getrusage ru_maxrss: interpreter + imports + load + overlap). Times cover load + overlap, not the
imports. The plain contender does what a learner would write: ``json.load`` (gzip.open for .gz),
``pd.DataFrame(doc["traceEvents"])``, kernels by ``cat == "kernel"``, ts/dur from µs to s, and the
same overlap_ratio call. Identity: each child hashes, outside the timed part, every event's
name/cat/ph/pid/tid and ts/dur in seconds, and the kernels' intervals; the first run of each
also hashes every event's args dict (None where absent; ours decodes them from text on demand).
The parent compares the digests and the ratios. Prints figures and asserts nothing. Also prints
the load average before and after.
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

COMMON = r"""
import hashlib, json, resource, sys, time
import numpy as np
import pandas as pd
from course_lib.overlap import overlap_ratio

def kernel_ratio(cat, name, ts, dur):
    is_kernel = (cat == "kernel")
    start = ts[is_kernel]
    iv = np.column_stack([start, start + dur[is_kernel]])
    is_comm = np.char.startswith(name[is_kernel].astype(str), "nccl")
    return overlap_ratio(iv[is_comm], iv[~is_comm]), int(is_kernel.sum()), iv

def digest(*arrays):
    h = hashlib.sha256()
    for a in arrays:
        a = np.asarray(a)
        h.update(a.tobytes() if a.dtype.kind == "f" else "\x00".join(map(repr, a.tolist())).encode())
    return h.hexdigest()[:16]

def report(df_len, ratio, kernels, iv, cols, t_run, c_run, t_import, args=None):
    ts, dur = cols["ts"], cols["dur"]
    if args is not None and sys.argv[2:] == ["--args"]:  # every event's args dict (None if none)
        cols["args_digest"] = hashlib.sha256(
            repr([a if isinstance(a, dict) else None for a in args.tolist()]).encode()
        ).hexdigest()[:16]
    print(json.dumps({
        "digest_args": cols.get("args_digest"),
        "events": df_len, "kernels": kernels, "ratio": ratio,
        "import_s": t_import, "wall_s": t_run, "cpu_s": c_run,
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "digest_events": digest(cols["name"], cols["cat"], cols["ph"], cols["pid"], cols["tid"]),
        "digest_times": digest(ts, dur), "digest_kernels": digest(iv),
    }))
"""

CHILD_OURS = r"""
t0 = time.perf_counter()
from course_lib.trace import load_trace
t_import = time.perf_counter() - t0
t1, c1 = time.perf_counter(), time.process_time()
df = load_trace(sys.argv[1])
ratio, kernels, iv = kernel_ratio(df["cat"].to_numpy(dtype=object), df["name"].to_numpy(dtype=object),
                                  df["ts"].to_numpy(), df["dur"].to_numpy())
t_run, c_run = time.perf_counter() - t1, time.process_time() - c1
cols = {k: df[k].to_numpy(dtype=object if k in ("name", "cat", "ph", "pid", "tid") else None)
        for k in ("name", "cat", "ph", "pid", "tid", "ts", "dur")}
report(len(df), ratio, kernels, iv, cols, t_run, c_run, t_import, df["args"])
"""

CHILD_PLAIN = r"""
t0 = time.perf_counter()
import gzip
t_import = time.perf_counter() - t0
t1, c1 = time.perf_counter(), time.process_time()
path = sys.argv[1]
with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as fh:
    doc = json.load(fh)
df = pd.DataFrame(doc["traceEvents"])
ts = df["ts"].to_numpy(dtype=float) * 1e-6
dur = df["dur"].to_numpy(dtype=float) * 1e-6
ratio, kernels, iv = kernel_ratio(df["cat"].to_numpy(dtype=object), df["name"].to_numpy(dtype=object),
                                  ts, dur)
t_run, c_run = time.perf_counter() - t1, time.process_time() - c1
cols = {k: df[k].to_numpy(dtype=object) for k in ("name", "cat", "ph", "pid", "tid")}
cols["ts"], cols["dur"] = ts, dur
report(len(df), ratio, kernels, iv, cols, t_run, c_run, t_import, df["args"])
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


def run_child(code: str, path: Path, *, args: bool = False) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", COMMON + code, str(path), *(["--args"] if args else [])],
        check=True,
        capture_output=True,
        text=True,
        env=dict(os.environ),
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def summarize(label: str, runs: list[dict]) -> dict:
    med = {k: statistics.median(r[k] for r in runs) for k in ("wall_s", "cpu_s", "peak_rss_bytes")}
    print(
        f"  {label:28s} wall {med['wall_s']:6.2f} s   CPU {med['cpu_s']:6.2f} s   "
        f"peak RSS {med['peak_rss_bytes'] / 1e9:.2f} GB (max {max(r['peak_rss_bytes'] for r in runs) / 1e9:.2f})   "
        f"walls: {', '.join(format(r['wall_s'], '.2f') for r in runs)}"
    )
    return med


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--regenerate", action="store_true")
    ap.add_argument("--no-gzip", action="store_true", help="only the plain JSON file")
    args = ap.parse_args()
    plain, gz = make_trace(args.events, args.regenerate)
    files = [("plain JSON", plain)] + ([] if args.no_gzip else [("gzip", gz)])
    print(
        f"load average before the runs: {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
        f"(1/5/15 min; {os.cpu_count()} cores)"
    )
    for label, path in files:
        ours, base = [], []
        for run in range(args.runs):  # alternate, so both see the same machine
            base.append(run_child(CHILD_PLAIN, path, args=run == 0))
            ours.append(run_child(CHILD_OURS, path, args=run == 0))
        print(
            f"{label} ({path.stat().st_size / 1e6:.0f} MB), {args.runs} fresh processes each, "
            f"medians (load average now {os.getloadavg()[0]:.2f}):"
        )
        mb = summarize("json.load + pd.DataFrame", base)
        mo = summarize("load_trace + overlap_ratio", ours)
        print(
            f"  ratio plain/ours: wall {mb['wall_s'] / mo['wall_s']:.2f}x, "
            f"CPU {mb['cpu_s'] / mo['cpu_s']:.2f}x (target >= 3x); per-run wall ratios: "
            f"{', '.join(format(b['wall_s'] / o['wall_s'], '.2f') for b, o in zip(base, ours, strict=True))}"
        )
        keys = ("events", "kernels", "digest_events", "digest_times", "digest_kernels")
        same = all(r[k] == base[0][k] for r in base + ours for k in keys)
        ratios = {r["ratio"] for r in base + ours}
        same_args = base[0]["digest_args"] == ours[0]["digest_args"]
        print(
            f"  identical: events/fields/ts/dur/kernel intervals {'yes' if same else 'NO'}, "
            f"overlap ratio {'yes' if len(ratios) == 1 else 'NO'}, "
            f"args dicts (first run) {'yes' if same_args else 'NO'} "
            f"({ours[0]['events']:,} events, {ours[0]['kernels']:,} kernels, "
            f"ratio {ours[0]['ratio']!r})"
        )
        if not same:
            print(
                f"    plain: {[base[0][k] for k in keys]}\n    ours:  {[ours[0][k] for k in keys]}"
            )
    print(f"load average after the runs: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
