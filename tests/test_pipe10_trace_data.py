"""pipe10's synthetic trace (course_lib/data/pipe10_trace.csv) is what its README entry says: a
1F1B step (4 ranks, 6 microbatches, t_f = 1 ms, t_b = 2 ms, each event's duration jittered by up
to ±20 %, seed 10) on a runtime that skips three waits: F(s3,m5) for F(s2,m5), B(s1,m4) for
B(s2,m4), and B(s3,m2) for its own forward (rank 3 runs it first, then F(s3,m2)); everything else
waits, and each rank runs one event at a time."""

from __future__ import annotations

from importlib.resources import files

import numpy as np
import pandas as pd

from course_lib.pipeline import one_f_one_b, simulate

COLUMNS = ["rank", "kind", "stage", "microbatch", "start", "end"]
SKIPS = {("F", 3, 5): ("F", 2, 5), ("B", 1, 4): ("B", 2, 4), ("B", 3, 2): ("F", 3, 2)}


def measured_trace(num_stages, num_microbatches, forward_time, backward_time, jitter, seed, skips):
    """Replay 1F1B rank by rank with seeded durations cost * (1 + jitter * U(-1, 1)) (rounded to
    1 µs); an event in ``skips`` does not wait for the dependency named there (one on its own
    stage, so its own rank, is run ahead of it: the rank starts the event when it is free and the
    skipped dependency after the event ends). A rank runs one event at a time. Starts are the
    latest of the rank's previous end and the awaited dependencies' ends, so a start equal to a
    dependency's end is exact."""
    lists = [list(r) for r in one_f_one_b(num_stages, num_microbatches).actions]
    rng = np.random.default_rng(seed)
    duration = {}
    for actions in lists:
        for a in actions:
            cost = forward_time if a.kind == "F" else backward_time
            duration[a] = round(cost * (1 + jitter * rng.uniform(-1, 1)), 6)
    for (kind, stage, microbatch), skipped in skips.items():
        if skipped[1] == stage:  # same stage: the rank runs the event before the skipped one
            actions = next(r for r in lists if any(a.stage == stage for a in r))
            keys = [(a.kind, a.stage, a.microbatch) for a in actions]
            event = actions.pop(keys.index((kind, stage, microbatch)))
            actions.insert(keys.index(skipped), event)
    start, end, free, pointer, rows = {}, {}, [0.0] * num_stages, [0] * num_stages, []
    progress = True
    while progress:
        progress = False
        for r, actions in enumerate(lists):
            while pointer[r] < len(actions):
                a = actions[pointer[r]]
                key = (a.kind, a.stage, a.microbatch)
                if a.kind == "F":
                    deps = [("F", a.stage - 1, a.microbatch)] if a.stage else []
                else:
                    deps = [("F", a.stage, a.microbatch)]
                    if a.stage < num_stages - 1:
                        deps.append(("B", a.stage + 1, a.microbatch))
                skipped = skips.get(key)
                if any(d not in end for d in deps if d != skipped):
                    break
                start[key] = max([free[r]] + [end[d] for d in deps if d != skipped])
                end[key] = round(start[key] + duration[a], 6)
                free[r] = max(free[r], end[key])
                rows.append((r, *key, start[key], end[key]))
                pointer[r] += 1
                progress = True
    frame = pd.DataFrame(rows, columns=COLUMNS)
    return frame.sort_values(["start", "rank"], kind="stable").reset_index(drop=True)


def early_events(trace):
    """Brute force: every event that starts before one of its dependencies ends, with the gap."""
    end = {(e.kind, e.stage, e.microbatch): e.end for e in trace.itertuples()}
    out = {}
    for e in trace.itertuples():
        deps = [("F", e.stage - 1, e.microbatch)] if e.kind == "F" else []
        if e.kind == "B":
            deps = [("F", e.stage, e.microbatch), ("B", e.stage + 1, e.microbatch)]
        for d in deps:
            if d in end and e.start < end[d]:
                out[(e.kind, e.stage, e.microbatch)] = end[d] - e.start
    return out


def _shipped():
    return pd.read_csv(str(files("course_lib") / "data" / "pipe10_trace.csv"))


def test_shipped_trace_is_the_described_run():
    expected = measured_trace(4, 6, 1e-3, 2e-3, 0.2, 10, SKIPS)
    pd.testing.assert_frame_equal(_shipped(), expected, check_exact=True)


def test_exactly_the_skipped_waits_start_early_by_a_clear_margin():
    gaps = early_events(_shipped())
    assert set(gaps) == set(SKIPS)
    assert min(gaps.values()) > 4e-4  # each more than 0.4 ms before its dependency ends


def test_each_rank_runs_one_event_at_a_time():
    """No two events overlap on a rank, so a per-rank overlap check finds none of the skips."""
    for _, events in _shipped().groupby("rank"):
        events = events.sort_values("start")
        assert (events.start.to_numpy()[1:] >= events.end.to_numpy()[:-1]).all()


def test_the_trace_has_exact_ties_of_every_dependency_kind():
    """A start equal to a dependency's end is allowed: the trace holds such ties for F -> F,
    B -> B and F -> B, so a check with <= instead of < flags them."""
    trace = _shipped()
    end = {(e.kind, e.stage, e.microbatch): e.end for e in trace.itertuples()}
    ties = set()
    for e in trace.itertuples():
        if e.kind == "F" and e.start == end.get(("F", e.stage - 1, e.microbatch)):
            ties.add("F->F")
        if e.kind == "B" and e.start == end.get(("B", e.stage + 1, e.microbatch)):
            ties.add("B->B")
        if e.kind == "B" and e.start == end[("F", e.stage, e.microbatch)]:
            ties.add("F->B")
    assert ties == {"F->F", "B->B", "F->B"}


def test_starting_earlier_than_the_simulator_is_not_the_violation():
    """Jittered durations: many events legitimately start before the nominal simulator's start."""
    trace = _shipped()
    sim = simulate(one_f_one_b(4, 6), 1e-3, 2e-3).events
    merged = trace.merge(sim, on=["rank", "kind", "stage", "microbatch"], suffixes=("", "_sim"))
    earlier = merged[merged.start < merged.start_sim - 1e-12]
    assert len(earlier) > 10 and set(SKIPS) < set(
        zip(earlier.kind, earlier.stage, earlier.microbatch, strict=True)
    )


def test_replay_without_jitter_or_skips_is_the_simulator():
    """With no jitter and no skipped wait the replay is simulate()'s 1F1B timeline."""
    replay = measured_trace(4, 6, 1e-3, 2e-3, 0.0, 10, {})
    events = simulate(one_f_one_b(4, 6), 1e-3, 2e-3).events[COLUMNS]
    events = events.sort_values(["start", "rank"], kind="stable").reset_index(drop=True)
    pd.testing.assert_frame_equal(replay, events, check_dtype=False, atol=1e-12)


if __name__ == "__main__":  # regenerate the shipped file
    path = files("course_lib") / "data" / "pipe10_trace.csv"
    measured_trace(4, 6, 1e-3, 2e-3, 0.2, 10, SKIPS).to_csv(str(path), index=False)
