"""Median wall time of course_lib.pipeline.verify on interleaved_1f1b(32, 256, 4) (65,536 actions).

Run: .venv/bin/python benchmarks/bench_verify.py [--repeat N]
Goal (issue #13): well under a second. Cases: the Schedule itself (its columns are read
directly), the same actions as plain (kind, stage, microbatch) tuples (read one by one), with
the memory and weight-version checks, and the numeric check on a smaller schedule.
"""

from __future__ import annotations

import argparse

from bench_pipeline import median_ms

from course_lib.pipeline import interleaved_1f1b, one_f_one_b, verify


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    repeat = parser.parse_args().repeat
    big = interleaved_1f1b(32, 256, 4)
    tuples = [[(a.kind, a.stage, a.microbatch) for a in rank] for rank in big.actions]
    small = one_f_one_b(8, 32)
    cases = [
        ("interleaved_1f1b(32, 256, 4), Schedule", lambda: verify(big)),
        ("  the same, as tuples", lambda: verify(tuples, 128, 256)),
        (
            "  Schedule + max_in_flight + versions",
            lambda: verify(big, max_in_flight=64, weight_updates="per_backward", max_versions=64),
        ),
        ("one_f_one_b(8, 32) + numeric (512 actions)", lambda: verify(small, numeric=True)),
    ]
    print(f"median of {repeat} runs (violations found)")
    for label, run in cases:
        found = len(run())
        print(f"  {label:46} {median_ms(run, repeat):8.1f} ms  ({found})")


if __name__ == "__main__":
    main()
