"""Median wall times of course_lib.pipeline: generators, simulate, metrics, and the explorers' budget.

Run: .venv/bin/python benchmarks/bench_pipeline.py [--repeat N]
Three parts, each a median of N fresh runs (time.perf_counter; a new Schedule each run, so the
simulator's per-schedule encoding is rebuilt every time):

1. Scale (issue #12): one_f_one_b(64, 512) (65,536 actions) and interleaved_1f1b(64, 512, 4)
   (262,144 actions) generated and simulated; goal: the interleaved case in <= 1 s together.
   zero_bubble_h1(64, 512) for comparison. (PyTorch 2.13 side by side: bench_pipeline_torch.py.)
2. Small and medium cases of every generator: simulate, then simulate + the metrics a lesson
   reads (idle fraction, overhead, peak in-flight).
3. Explorer budget (< 100 ms per change): the pipe02 explorer (course_lib.explorers.fill_drain)
   changing m at p = 16, m = 64 — model, redraw and PNG, CPU ms per change — and what an
   interleaved (pipe04) explorer must compute per change at p = 16, m = 64, v = 4: generate,
   simulate, metrics (its drawing is benchmarked with the explorer itself).
"""

from __future__ import annotations

import argparse
import statistics
import time

from course_lib.pipeline import (
    gpipe,
    interleaved_1f1b,
    one_f_one_b,
    simulate,
    zero_bubble_h1,
)


def median_ms(run, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def metrics(timeline) -> tuple:
    return timeline.idle_fraction, timeline.overhead, timeline.peak_in_flight


def scale(repeat: int) -> None:
    print("1. scale: generate, simulate (t_f = 1, t_b = 2 split over the chunks, latency 0.1)")
    print(f"   {'case':28} {'actions':>8} {'generate':>10} {'simulate':>10} {'together':>10}")
    cases = [
        ("one_f_one_b(64, 512)", lambda: one_f_one_b(64, 512), 1.0, 2.0, 0.0),
        ("zero_bubble_h1(64, 512)", lambda: zero_bubble_h1(64, 512), 1.0, 1.0, 1.0),
        ("interleaved_1f1b(64, 512, 4)", lambda: interleaved_1f1b(64, 512, 4), 0.25, 0.5, 0.0),
    ]
    for label, build, t_f, t_b, t_w in cases:
        size = sum(len(a) for a in build().actions)
        gen, sim, both = [], [], []
        for _ in range(repeat):
            start = time.perf_counter()
            schedule = build()
            built = time.perf_counter()
            simulate(schedule, t_f, t_b, t_w, p2p_latency=0.1)
            done = time.perf_counter()
            gen.append(built - start)
            sim.append(done - built)
            both.append(done - start)
        gen_ms, sim_ms, both_ms = (statistics.median(t) * 1e3 for t in (gen, sim, both))
        print(f"   {label:28} {size:>8,} {gen_ms:>7.1f} ms {sim_ms:>7.1f} ms {both_ms:>7.1f} ms")


def table(repeat: int) -> None:
    print("\n2. simulate and simulate + metrics (latency 0.1)")
    print(f"   {'schedule':18} {'p':>3} {'m':>4} {'v':>2} {'actions':>8} {'simulate':>10} "
          f"{'+ metrics':>10}")  # fmt: skip
    cases = [
        (gpipe, (4, 8)), (gpipe, (8, 32)), (gpipe, (32, 256)),
        (one_f_one_b, (4, 8)), (one_f_one_b, (8, 32)), (one_f_one_b, (32, 256)),
        (zero_bubble_h1, (4, 8)), (zero_bubble_h1, (32, 256)),
        (interleaved_1f1b, (4, 8, 2)), (interleaved_1f1b, (16, 64, 4)),
        (interleaved_1f1b, (32, 256, 4)),
    ]  # fmt: skip
    for generator, args in cases:
        schedule = generator(*args)
        size = sum(len(a) for a in schedule.actions)
        v = args[2] if len(args) == 3 else 1

        def run(args=args, generator=generator):
            return simulate(generator(*args), 1.0, 2.0, 0.5, p2p_latency=0.1)

        sim = median_ms(run, repeat)
        full = median_ms(lambda run=run: metrics(run()), repeat)
        print(f"   {schedule.name:18} {args[0]:>3} {args[1]:>4} {v:>2} {size:>8,} "
              f"{sim:>7.2f} ms {full:>7.2f} ms")  # fmt: skip


def explorers(repeat: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from course_lib.explorers.fill_drain import fill_drain_explorer

    print("\n3. explorer budget: < 100 ms per change")
    explorer = fill_drain_explorer()
    explorer.controls["num_stages"].value = 16
    for schedule in ("GPipe", "1F1B"):
        explorer.controls["schedule"].value = schedule
        for latency_ms in (0.0, 0.25):
            explorer.controls["latency_ms"].value = latency_ms
            cpu = []
            for m in list(range(57, 65)) * max(1, repeat // 4):
                if explorer.controls["num_microbatches"].value == m:
                    continue
                start = time.process_time()
                explorer.controls["num_microbatches"].value = m
                cpu.append((time.process_time() - start) * 1e3)
            print(f"   pipe02 explorer {schedule:5} p = 16, m = 57..64, latency {latency_ms} ms: "
                  f"CPU median {statistics.median(cpu[2:]):6.1f} ms per change")  # fmt: skip
    core = median_ms(
        lambda: metrics(simulate(interleaved_1f1b(16, 64, 4), 0.25, 0.5, p2p_latency=0.05)),
        repeat,
    )
    print(f"   interleaved p = 16, m = 64, v = 4: generate + simulate + metrics {core:6.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    scale(args.repeat)
    table(args.repeat)
    explorers(args.repeat)


if __name__ == "__main__":
    main()
