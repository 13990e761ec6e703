"""pipe10's synthetic trace (course_lib/data/pipe10_trace.csv) is what its README entry says: a
1F1B step (4 ranks, 6 microbatches, t_f = 1 ms, t_b = 2 ms) on a runtime where rank 1 starts the
backwards of microbatches 4 and 5 without waiting for rank 2's gradient; everything else waits."""

from __future__ import annotations

from importlib.resources import files

import pandas as pd

from course_lib.pipeline import one_f_one_b, simulate

COLUMNS = ["rank", "kind", "stage", "microbatch", "start", "end"]


def no_wait_trace(num_stages, num_microbatches, forward_time, backward_time, rank, first):
    """Replay 1F1B rank by rank; B(rank, j) for j >= first skips its wait for B(rank + 1, j)."""
    lists = [list(r) for r in one_f_one_b(num_stages, num_microbatches).actions]
    end, free, pointer, rows = {}, [0.0] * num_stages, [0] * num_stages, []
    progress = True
    while progress:
        progress = False
        for r, actions in enumerate(lists):
            while pointer[r] < len(actions):
                a = actions[pointer[r]]
                if a.kind == "F":
                    deps = [("F", a.stage - 1, a.microbatch)] if a.stage else []
                else:
                    deps = [("F", a.stage, a.microbatch)]
                    skip = a.stage == rank and a.microbatch >= first
                    if a.stage < num_stages - 1 and not skip:
                        deps.append(("B", a.stage + 1, a.microbatch))
                if any(d not in end for d in deps):
                    break
                start = max([free[r]] + [end[d] for d in deps])
                stop = round(start + (forward_time if a.kind == "F" else backward_time), 9)
                end[(a.kind, a.stage, a.microbatch)] = free[r] = stop
                rows.append((r, a.kind, a.stage, a.microbatch, round(start, 9), stop))
                pointer[r] += 1
                progress = True
    frame = pd.DataFrame(rows, columns=COLUMNS)
    return frame.sort_values(["start", "rank"], kind="stable").reset_index(drop=True)


def test_shipped_trace_is_the_described_run():
    shipped = pd.read_csv(str(files("course_lib") / "data" / "pipe10_trace.csv"))
    expected = no_wait_trace(4, 6, 1e-3, 2e-3, rank=1, first=4)
    pd.testing.assert_frame_equal(shipped, expected, check_exact=False, rtol=0, atol=1e-12)


def test_replay_without_the_bug_is_the_simulator():
    """With no skipped wait the replay is simulate()'s 1F1B timeline, event for event."""
    replay = no_wait_trace(4, 6, 1e-3, 2e-3, rank=1, first=99)
    events = simulate(one_f_one_b(4, 6), 1e-3, 2e-3).events[COLUMNS]
    events = events.sort_values(["start", "rank"], kind="stable").reset_index(drop=True)
    pd.testing.assert_frame_equal(replay, events, check_dtype=False, atol=1e-12)


def test_the_trace_is_shorter_than_the_correct_step():
    shipped = no_wait_trace(4, 6, 1e-3, 2e-3, rank=1, first=4)
    assert shipped["end"].max() < simulate(one_f_one_b(4, 6), 1e-3, 2e-3).makespan - 1e-3
