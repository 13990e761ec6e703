"""Write course_lib/data/clock_sync_1h.csv: one hour of clock-sync messages between two hosts.

SYNTHETIC data for cost02 (Exercise 4, drift-corrected alignment). Host B's clock is the
reference; host A's clock reads t_A = θ0 + (1 + ρ·1e-6)·t_B, with θ0 and ρ drawn once from
SEED (the lesson asks you to estimate them, so they are not printed here). Every PERIOD seconds,
starting at t_B = 0, the hosts exchange MESSAGES messages each way within BURST seconds
(course_lib.clocks.simulate_messages: one-way delay MIN_DELAY plus an exponential extra with mean
MEAN_EXTRA_DELAY_AB from A to B and MEAN_EXTRA_DELAY_BA from B to A: the two paths differ, so
averaging every message's bound is biased and only the fastest message each way bounds the
offset). Columns: window (0..WINDOWS-1), direction ("A->B" or "B->A"), send_ts and
recv_ts in seconds, each on the clock of the host that stamped it (A->B: send on A, receive on
B; B->A: send on B, receive on A), printed to the nanosecond. Same SEED, same bytes.

Run: .venv/bin/python scripts/make_clock_sync.py [OUT]   (default course_lib/data/clock_sync_1h.csv)
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from course_lib.clocks import simulate_messages

SEED = 2026
WINDOWS = 13
PERIOD = 300.0  # s between sync bursts
BURST = 0.01  # s a burst lasts
MESSAGES = 20  # per direction and burst
MIN_DELAY = 3e-6  # s
MEAN_EXTRA_DELAY_AB = 20e-6  # s, A -> B
MEAN_EXTRA_DELAY_BA = 60e-6  # s, B -> A


def sync_table(seed: int = SEED) -> pd.DataFrame:
    """The message table written to the CSV file."""
    rng = np.random.default_rng(seed)
    offset = float(rng.uniform(1e-3, 4e-3))
    drift = float(rng.uniform(8.0, 20.0) * rng.choice([-1.0, 1.0]))
    parts = []
    for w in range(WINDOWS):
        a_to_b, b_to_a = simulate_messages(
            MESSAGES,
            offset=offset,
            drift_ppm=drift,
            min_delay=MIN_DELAY,
            mean_extra_delay=MEAN_EXTRA_DELAY_AB,
            mean_extra_delay_ba=MEAN_EXTRA_DELAY_BA,
            span=BURST,
            start=PERIOD * w,
            seed=seed + 1 + w,
        )
        for direction, pairs in (("A->B", a_to_b), ("B->A", b_to_a)):
            parts.append(
                pd.DataFrame(
                    {
                        "window": w,
                        "direction": direction,
                        "send_ts": pairs[:, 0],
                        "recv_ts": pairs[:, 1],
                    }
                )
            )
    return pd.concat(parts, ignore_index=True)


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("course_lib/data/clock_sync_1h.csv")
    sync_table().to_csv(out, index=False, float_format="%.9f", lineterminator="\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
