"""Plausible wrong answers to pipe03_one_f_one_b's exercises; each must lose points when graded.

``RIGHT_ANSWERS`` are answers a learner could give that are right by another route (PyTorch's
backward-first reading of the order, a simulated timeline, numpy types); each must keep full
marks on the grade cells it names.
"""

from __future__ import annotations

from tests.mutants import Mutant

ORDER = ("order_tests", "order_short_tests")


def _order(body: str, prelude: str = "") -> dict[str, str]:
    """The Exercise 1 solution cell with ``body`` after p, m, s."""
    return {
        "order_answer": (
            f"{prelude}def one_f_one_b_order(num_stages, num_microbatches, stage):\n"
            "    p, m, s = num_stages, num_microbatches, stage\n"
            f"{body}\n"
        )
    }


def _alternating(warmup: str, cooldown: str = "range(m - w, m)", pair: str = "F, B") -> str:
    """A warm-up of ``warmup`` forwards, pairs in the order ``pair``, the cool-down ``cooldown``."""
    first, second = ("F", "B") if pair == "F, B" else ("B", "F")
    steady = {"F": 'Action("F", s, w + i)', "B": 'Action("B", s, i)'}
    return (
        f"    w = {warmup}\n"
        '    order = [Action("F", s, j) for j in range(w)]\n'
        "    for i in range(m - w):\n"
        f"        order += [{steady[first]}, {steady[second]}]\n"
        f'    return order + [Action("B", s, j) for j in {cooldown}]'
    )


def _warmups(body: str, prelude: str = "") -> dict[str, str]:
    """The Exercise 2 solution cell with ``body`` after p, m."""
    return {
        "warmup_answer": (
            f"{prelude}def warmup_forwards(num_stages, num_microbatches):\n"
            "    p, m = num_stages, num_microbatches\n"
            f"{body}\n"
        )
    }


def _peaks(body: str, prelude: str = "") -> dict[str, str]:
    """The Exercise 3 solution cell with ``body`` (``schedule`` in scope)."""
    return {"peak_answer": f"{prelude}def peak_stashes(schedule):\n{body}\n"}


def _lifetime(body: str, prelude: str = "") -> dict[str, str]:
    """The Exercise 4 solution cell with ``body`` after the rows of (stage, microbatch)."""
    return {
        "lifetime_answer": (
            f"{prelude}def stash_lifetime(events, stage, microbatch):\n"
            "    def row(kind, s, j):\n"
            '        mine = events[(events["kind"] == kind) & (events["stage"] == s)]\n'
            '        return mine[mine["microbatch"] == j].iloc[0]\n'
            f"{body}\n"
        )
    }


def _ratio(body: str, prelude: str = "") -> dict[str, str]:
    """The Exercise 5 solution cell with ``body`` after p, m, s, S and A."""
    return {
        "memory_ratio_answer": (
            f"{prelude}def memory_ratio(num_stages, num_microbatches, stage, state_bytes, "
            "stash_bytes):\n"
            "    p, m, s, S, A = num_stages, num_microbatches, stage, state_bytes, stash_bytes\n"
            f"{body}\n"
        )
    }


_PEAK_LOOP = (
    "    peaks = [0] * schedule.num_stages\n"
    "    for actions in schedule.actions:\n"
    "        live = 0\n"
    "        for a in actions:\n"
)

MUTANTS = [
    # Exercise 1: the per-stage 1F1B order.
    Mutant(
        name="gpipe_order",
        why="every forward, then every backward: fill-drain's order submitted as 1F1B",
        cells=_order(
            '    return [Action("F", s, j) for j in range(m)] + '
            '[Action("B", s, j) for j in range(m)]'
        ),
        grades=ORDER,
    ),
    Mutant(
        name="warmup_p_minus_s",
        why="min(m, p - s) warm-up forwards before F/B pairs: one forward too many",
        cells=_order(_alternating("min(m, p - s)")),
        grades=ORDER,
    ),
    Mutant(
        name="warmup_unclamped",
        why="p - s - 1 warm-up forwards without the clamp at m: wrong (or an error) for m < p",
        cells=_order(_alternating("p - s - 1", cooldown="range(max(0, m - w), m)")),
        grades=("order_short_tests",),
    ),
    Mutant(
        name="warmup_one_based_stage",
        why="the stage counted from 1: p - (s + 1) - 1 = p - s - 2 warm-up forwards",
        cells=_order(_alternating("max(0, min(m, p - s - 2))")),
        grades=ORDER,
    ),
    Mutant(
        name="backward_first_pairs",
        why="after p - s - 1 warm-ups, pairs B(i), F(w + i): the last stage starts with a backward",
        cells=_order(_alternating("min(m, p - s - 1)", pair="B, F")),
        grades=ORDER,
    ),
    Mutant(
        name="cooldown_reversed",
        why="the cool-down backwards newest first",
        cells=_order(_alternating("min(m, p - s - 1)", cooldown="reversed(range(m - w, m))")),
        grades=ORDER,
    ),
    Mutant(
        name="order_as_tuples",
        why="(kind, microbatch) tuples instead of Actions",
        cells=_order(
            "    w = min(m, p - s - 1)\n"
            '    order = [("F", j) for j in range(w)]\n'
            "    for i in range(m - w):\n"
            '        order += [("F", w + i), ("B", i)]\n'
            '    return order + [("B", j) for j in range(m - w, m)]'
        ),
        grades=ORDER,
    ),
    Mutant(
        name="order_delegates_to_generator",
        why="reads the order off course_lib's one_f_one_b",
        cells=_order("    return list(one_f_one_b(p, m).actions[s])"),
        grades=ORDER,
    ),
    Mutant(
        name="order_delegates_to_interleaved",
        why="interleaved_1f1b(p, m, 1) is 1F1B: the same order through another generator",
        cells=_order(
            "    return list(interleaved_1f1b(p, m, 1).actions[s])",
            prelude="from course_lib.pipeline import interleaved_1f1b\n\n\n",
        ),
        grades=ORDER,
    ),
    Mutant(
        name="order_from_explorer_cache",
        why="the 1F1B schedule of the pipe03 explorer's simulated run",
        cells=_order(
            '    return list(_cached_run("1F1B", p, m, 1e-3, 2e-3, 0.0).schedule.actions[s])',
            prelude="from course_lib.explorers.one_f_one_b import _cached_run\n\n\n",
        ),
        grades=ORDER,
    ),
    Mutant(
        name="order_precomputed_table",
        why="a table of course_lib's orders built when the cell runs, outside any forbid block, "
        "then looked up",
        cells=_order(
            "    return list(_TABLE[(p, m, s)])",
            prelude="from course_lib.pipeline import one_f_one_b as _generate\n\n"
            "_TABLE = {\n"
            "    (p, m, s): _generate(p, m).actions[s]\n"
            "    for p in range(1, 9) for m in range(1, 17) for s in range(p)\n"
            "}\n\n\n",
        ),
        grades=ORDER,
    ),
    Mutant(
        name="order_via_private_helper",
        why="course_lib's private _one_stage_per_rank with Megatron-LM's warm-ups",
        cells=_order(
            "    warmup = np.minimum(m, p - np.arange(p) - 1)\n"
            '    return list(_one_stage_per_rank(p, m, warmup, "mine").actions[s])',
            prelude="import numpy as np\n\n"
            "from course_lib.pipeline.schedule import _one_stage_per_rank\n\n\n",
        ),
        grades=ORDER,
    ),
    Mutant(
        name="order_via_zero_bubble",
        why="ZB-H1's order with its W actions dropped",
        cells=_order(
            '    return [a for a in zero_bubble_h1(p, m).actions[s] if a.kind != "W"]',
            prelude="from course_lib.pipeline import zero_bubble_h1\n\n\n",
        ),
        grades=ORDER,
    ),
    # Exercise 2: warm-up forwards per stage.
    Mutant(
        name="warmups_pytorch_count",
        why="min(m, p - s): PyTorch's warmup_chunks, which counts the first steady forward",
        cells=_warmups("    return [min(m, p - s) for s in range(p)]"),
        grades=("warmup_tests",),
    ),
    Mutant(
        name="warmups_unclamped",
        why="p - s - 1 without the clamp at m",
        cells=_warmups("    return [p - s - 1 for s in range(p)]"),
        grades=("warmup_tests",),
    ),
    Mutant(
        name="warmups_one_based",
        why="stages counted from 1: min(m, p - s - 2) for the 0-based stage",
        cells=_warmups("    return [max(0, min(m, p - s - 2)) for s in range(p)]"),
        grades=("warmup_tests",),
    ),
    Mutant(
        name="warmups_gpipe",
        why="m on every stage: GPipe runs every forward first",
        cells=_warmups("    return [m] * p"),
        grades=("warmup_tests",),
    ),
    Mutant(
        name="warmups_reversed",
        why="the list starts with the last stage",
        cells=_warmups("    return [min(m, s) for s in range(p)]"),
        grades=("warmup_tests",),
    ),
    Mutant(
        name="warmups_peak_minus_one",
        why="the 1F1B peak min(m, p - s) minus one: m - 1 where the warm-up is clamped",
        cells=_warmups("    return [min(m, p - s) - 1 for s in range(p)]"),
        grades=("warmup_tests",),
    ),
    Mutant(
        name="warmups_delegate",
        why="course_lib's one_f_one_b_warmup",
        cells=_warmups(
            "    return [one_f_one_b_warmup(p, m, s) for s in range(p)]",
            prelude="from course_lib.pipeline import one_f_one_b_warmup\n\n\n",
        ),
        grades=("warmup_tests",),
    ),
    Mutant(
        name="warmups_via_stashing_versions_held",
        why="pipe07's stashing_versions_held (p - s) minus one, clamped at m",
        cells=_warmups(
            "    return [min(m, int(h) - 1) for h in stashing_versions_held(p)]",
            prelude="from course_lib.pipeline.versions import stashing_versions_held\n\n\n",
        ),
        grades=("warmup_tests",),
    ),
    Mutant(
        name="warmups_via_stashing_version",
        why="pipe07's stashing_version j - min(M, p - s - 1) of a long stream, clamped at m",
        cells=_warmups(
            "    M = p + m\n"
            "    return [min(m, M - 1 - stashing_version(s, M - 1, p, M)) for s in range(p)]",
            prelude="from course_lib.pipeline.versions import stashing_version\n\n\n",
        ),
        grades=("warmup_tests",),
    ),
    Mutant(
        name="warmups_counted_from_generator",
        why="counts the forwards before each stage's first backward in one_f_one_b, minus one",
        cells=_warmups(
            "    out = []\n"
            "    for s, actions in enumerate(one_f_one_b(p, m).actions):\n"
            "        kinds = [a.kind for a in actions]\n"
            '        out.append(kinds.index("B") - (1 if m > p - s - 1 else 0))\n'
            "    return out"
        ),
        grades=("warmup_tests",),
    ),
    Mutant(
        name="warmups_precomputed_table",
        why="course_lib's one_f_one_b_warmup tabulated when the cell runs, outside forbid",
        cells=_warmups(
            "    return list(_TABLE[(p, m)])",
            prelude="from course_lib.pipeline import one_f_one_b_warmup as _w\n\n"
            "_TABLE = {\n"
            "    (p, m): [_w(p, m, s) for s in range(p)] for p in range(1, 17) for m in range(1, 65)\n"
            "}\n\n\n",
        ),
        grades=("warmup_tests",),
    ),
    # Exercise 3: peak stashes from any order.
    Mutant(
        name="peaks_1f1b_formula",
        why="min(m, p - s) whatever the order",
        cells=_peaks(
            "    p, m = schedule.num_stages, schedule.num_microbatches\n"
            "    return [min(m, p - s) for s in range(p)]"
        ),
        grades=("peak_tests",),
    ),
    Mutant(
        name="peaks_all_m",
        why="m on every stage: GPipe's peak whatever the order",
        cells=_peaks("    return [schedule.num_microbatches] * schedule.num_stages"),
        grades=("peak_tests",),
    ),
    Mutant(
        name="peaks_before_first_backward",
        why="the forwards before each stage's first backward: misses later bursts",
        cells=_peaks(
            "    out = []\n"
            "    for actions in schedule.actions:\n"
            "        kinds = [a.kind for a in actions]\n"
            '        out.append(kinds.index("B") if "B" in kinds else len(kinds))\n'
            "    return out"
        ),
        grades=("peak_tests",),
    ),
    Mutant(
        name="peaks_warmup_formula",
        why="min(m, p - s - 1): the warm-up, not the peak",
        cells=_peaks(
            "    p, m = schedule.num_stages, schedule.num_microbatches\n"
            "    return [min(m, p - s - 1) for s in range(p)]"
        ),
        grades=("peak_tests",),
    ),
    Mutant(
        name="peaks_read_after_backwards",
        why="the live count read only after each backward has freed its stash: one short",
        cells=_peaks(
            _PEAK_LOOP + '            if a.kind == "F":\n'
            "                live += 1\n"
            "            else:\n"
            "                live -= 1\n"
            "                peaks[a.stage] = max(peaks[a.stage], live)\n"
            "    return peaks"
        ),
        grades=("peak_tests",),
    ),
    Mutant(
        name="peaks_longest_forward_run",
        why="the longest run of consecutive forwards: misses stashes still live from before a "
        "backward",
        cells=_peaks(
            "    peaks = [0] * schedule.num_stages\n"
            "    for actions in schedule.actions:\n"
            "        run = 0\n"
            "        for a in actions:\n"
            '            run = run + 1 if a.kind == "F" else 0\n'
            "            peaks[a.stage] = max(peaks[a.stage], run)\n"
            "    return peaks"
        ),
        grades=("peak_tests",),
    ),
    Mutant(
        name="peaks_one_number",
        why="the largest peak of any stage, not one per stage",
        cells=_peaks(
            "    best = 0\n"
            "    for actions in schedule.actions:\n"
            "        live = 0\n"
            "        for a in actions:\n"
            '            live += 1 if a.kind == "F" else -1\n'
            "            best = max(best, live)\n"
            "    return best"
        ),
        grades=("peak_tests",),
    ),
    Mutant(
        name="peaks_via_timeline",
        why="simulate(...).peak_in_flight: course_lib's stash counts",
        cells=_peaks("    return simulate(schedule, 1.0, 2.0).peak_in_flight.tolist()"),
        grades=("peak_tests",),
    ),
    Mutant(
        name="peaks_via_verify",
        why="pipe10's verify with max_in_flight=1: its memory rule reports each stage's peak",
        cells=_peaks(
            "    out = [1 if len(a) else 0 for a in schedule.actions]\n"
            "    for v in verify(schedule, max_in_flight=1):\n"
            '        if v.rule == "memory":\n'
            '            s = int(re.search(r"on stage (\\d+)", v.message).group(1))\n'
            '            out[s] = int(re.search(r"peak (\\d+)", v.message).group(1))\n'
            "    return out",
            prelude="import re\n\nfrom course_lib.pipeline.verify import verify\n\n\n",
        ),
        grades=("peak_tests",),
    ),
    Mutant(
        name="peaks_via_live_stashes",
        why="pipe08's live_stashes counted per stage just after every simulated start",
        cells=_peaks(
            "    tl = simulate(schedule, 1.0, 2.0)\n"
            "    peaks = [0] * schedule.num_stages\n"
            "    for t in sorted(set(tl.events['start'])):\n"
            "        for s, c in live_stashes(tl, t + 1e-6).groupby('stage').size().items():\n"
            "            peaks[s] = max(peaks[s], int(c))\n"
            "    return peaks",
            prelude="from course_lib.pipeline.imbalance import live_stashes\n\n\n",
        ),
        grades=("peak_tests",),
    ),
    Mutant(
        name="peaks_via_live_bytes",
        why="cost05's live_bytes over alloc/free events at the simulated F starts and B ends",
        cells=_peaks(
            "    ev = simulate(schedule, 1.0, 2.0).events\n"
            "    out = []\n"
            "    for s in range(schedule.num_stages):\n"
            '        mine = ev[ev["stage"] == s]\n'
            "        rows = [(r.start if r.kind == 'F' else r.end, r.microbatch, r.kind) "
            "for r in mine.itertuples()]\n"
            "        frame = pd.DataFrame({'time': [t for t, _, _ in rows], "
            "'tensor': [j for _, j, _ in rows], 'bytes': 1.0, "
            "'kind': ['alloc' if k == 'F' else 'free' for _, _, k in rows]})\n"
            "        out.append(int(live_bytes(frame)[1].max()))\n"
            "    return out",
            prelude="import pandas as pd\n\nfrom course_lib.memory import live_bytes\n\n\n",
        ),
        grades=("peak_tests",),
    ),
    # Exercise 4: a stash's lifetime on a timeline.
    Mutant(
        name="lifetime_from_forward_end",
        why="(end of F, end of B): the stash counted from the forward's end",
        cells=_lifetime(
            '    return float(row("F", stage, microbatch)["end"]), '
            'float(row("B", stage, microbatch)["end"])'
        ),
        grades=("lifetime_tests",),
    ),
    Mutant(
        name="lifetime_to_backward_start",
        why="(start of F, start of B): the stash freed when the backward starts",
        cells=_lifetime(
            '    return float(row("F", stage, microbatch)["start"]), '
            'float(row("B", stage, microbatch)["start"])'
        ),
        grades=("lifetime_tests",),
    ),
    Mutant(
        name="lifetime_between_actions",
        why="(end of F, start of B): only the wait between the two actions",
        cells=_lifetime(
            '    return float(row("F", stage, microbatch)["end"]), '
            'float(row("B", stage, microbatch)["start"])'
        ),
        grades=("lifetime_tests",),
    ),
    Mutant(
        name="lifetime_one_based_stage",
        why="the stage taken as 1-based: reads stage - 1",
        cells=_lifetime(
            "    s = stage - 1 if stage > 0 else stage\n"
            '    return float(row("F", s, microbatch)["start"]), float(row("B", s, microbatch)["end"])'
        ),
        grades=("lifetime_tests",),
    ),
    Mutant(
        name="lifetime_gradient_arrival",
        why="ends when the next stage's backward ends (the gradient's arrival), not its own",
        cells=_lifetime(
            "    s = min(stage + 1, events['stage'].max())\n"
            '    return float(row("F", stage, microbatch)["start"]), '
            'float(row("B", s, microbatch)["end"])'
        ),
        grades=("lifetime_tests",),
    ),
    Mutant(
        name="lifetime_milliseconds",
        why="the right lifetime in ms",
        cells=_lifetime(
            '    return 1e3 * float(row("F", stage, microbatch)["start"]), '
            '1e3 * float(row("B", stage, microbatch)["end"])'
        ),
        grades=("lifetime_tests",),
    ),
    Mutant(
        name="lifetime_start_and_duration",
        why="(start, duration) instead of (start, end)",
        cells=_lifetime(
            '    start = float(row("F", stage, microbatch)["start"])\n'
            '    return start, float(row("B", stage, microbatch)["end"]) - start'
        ),
        grades=("lifetime_tests",),
    ),
    Mutant(
        name="lifetime_any_stage",
        why="the microbatch's first forward and last backward on any stage",
        cells=_lifetime(
            '    mine = events[events["microbatch"] == microbatch]\n'
            "    return float(mine['start'].min()), float(mine['end'].max())"
        ),
        grades=("lifetime_tests",),
    ),
    Mutant(
        name="lifetime_first_last_on_stage",
        why="the stage's first forward start and last backward end, whatever the microbatch",
        cells=_lifetime(
            '    mine = events[events["stage"] == stage]\n'
            "    return float(mine['start'].min()), float(mine['end'].max())"
        ),
        grades=("lifetime_tests",),
    ),
    Mutant(
        name="lifetime_next_microbatch",
        why="the microbatch off by one: reads microbatch + 1 where there is one",
        cells=_lifetime(
            "    j = min(microbatch + 1, int(events['microbatch'].max()))\n"
            '    return float(row("F", stage, j)["start"]), float(row("B", stage, j)["end"])'
        ),
        grades=("lifetime_tests",),
    ),
    Mutant(
        name="lifetime_via_timeline",
        why="rebuilds the schedule from the events and calls Timeline.lifetime",
        cells=_lifetime(
            "    p = int(events['stage'].max()) + 1\n"
            "    m = int(events['microbatch'].max()) + 1\n"
            "    acts = [[Action(r.kind, r.stage, r.microbatch) for r in "
            "events[events['rank'] == k].itertuples()] for k in range(p)]\n"
            "    return Timeline(Schedule(p, m, p, acts), events).lifetime(stage, microbatch)",
            prelude="from course_lib.pipeline import Timeline\n\n\n",
        ),
        grades=("lifetime_tests",),
    ),
    Mutant(
        name="lifetime_via_live_stashes",
        why="rebuilds the schedule from the events and reads born/freed off pipe08's live_stashes",
        cells=_lifetime(
            "    p = int(events['stage'].max()) + 1\n"
            "    m = int(events['microbatch'].max()) + 1\n"
            "    acts = [[Action(r.kind, r.stage, r.microbatch) for r in "
            "events[events['rank'] == k].sort_values('start').itertuples()] for k in range(p)]\n"
            "    tl = Timeline(Schedule(p, m, p, acts), events)\n"
            "    live = live_stashes(tl, float(row('F', stage, microbatch)['end']))\n"
            "    mine = live[(live['stage'] == stage) & (live['microbatch'] == microbatch)]\n"
            "    return float(mine['born'].iloc[0]), float(mine['freed'].iloc[0])",
            prelude="from course_lib.pipeline import Timeline\n"
            "from course_lib.pipeline.imbalance import live_stashes\n\n\n",
        ),
        grades=("lifetime_tests",),
    ),
    # Exercise 5: GPipe's peak memory over 1F1B's.
    Mutant(
        name="ratio_activations_only",
        why="m / min(m, p - s): forgets the state both schedules hold",
        cells=_ratio("    return m / min(m, p - s)"),
        grades=("memory_ratio_tests",),
    ),
    Mutant(
        name="ratio_warmup_not_peak",
        why="min(m, p - s - 1) stashes under 1F1B",
        cells=_ratio("    return (S + m * A) / (S + min(m, p - s - 1) * A)"),
        grades=("memory_ratio_tests",),
    ),
    Mutant(
        name="ratio_unclamped",
        why="p - s stashes under 1F1B even when m < p - s",
        cells=_ratio("    return (S + m * A) / (S + (p - s) * A)"),
        grades=("memory_ratio_tests",),
    ),
    Mutant(
        name="ratio_one_based_stage",
        why="min(m, p - s + 1): the stage counted from 1",
        cells=_ratio("    return (S + m * A) / (S + min(m, p - s + 1) * A)"),
        grades=("memory_ratio_tests",),
    ),
    Mutant(
        name="ratio_inverted",
        why="1F1B's peak over GPipe's",
        cells=_ratio("    return (S + min(m, p - s) * A) / (S + m * A)"),
        grades=("memory_ratio_tests",),
    ),
    Mutant(
        name="ratio_first_stage_everywhere",
        why="min(m, p) stashes on every stage",
        cells=_ratio("    return (S + m * A) / (S + min(m, p) * A)"),
        grades=("memory_ratio_tests",),
    ),
    Mutant(
        name="ratio_integer_division",
        why="// instead of /: the ratio floored",
        cells=_ratio("    return float((S + m * A) // (S + min(m, p - s) * A))"),
        grades=("memory_ratio_tests",),
    ),
    Mutant(
        name="ratio_gpipe_peak_p",
        why="GPipe's peak taken as p (the 1F1B bound) instead of m",
        cells=_ratio("    return (S + p * A) / (S + min(m, p - s) * A)"),
        grades=("memory_ratio_tests",),
    ),
    Mutant(
        name="ratio_precomputed_table",
        why="course_lib's peak_in_flight_one_f_one_b tabulated when the cell runs, outside forbid",
        cells=_ratio(
            "    return (S + m * A) / (S + _PEAK[(p, m, s)] * A)",
            prelude="from course_lib.pipeline import peak_in_flight_one_f_one_b as _peak\n\n"
            "_PEAK = {\n"
            "    (p, m, s): _peak(p, m, s)\n"
            "    for p in range(1, 17) for m in range(1, 65) for s in range(p)\n"
            "}\n\n\n",
        ),
        grades=("memory_ratio_tests",),
    ),
    Mutant(
        name="ratio_delegates_to_formula",
        why="course_lib's peak_in_flight_one_f_one_b",
        cells=_ratio(
            "    return (S + m * A) / (S + peak_in_flight_one_f_one_b(p, m, s) * A)",
            prelude="from course_lib.pipeline import peak_in_flight_one_f_one_b\n\n\n",
        ),
        grades=("memory_ratio_tests",),
    ),
    Mutant(
        name="ratio_via_verify",
        why="1F1B's peak from pipe10's verify (max_in_flight=1 reports each stage's peak)",
        cells=_ratio(
            "    peak = 1\n"
            "    for v in verify(one_f_one_b(p, m), max_in_flight=1):\n"
            '        if v.rule == "memory" and f"on stage {s}," in v.message:\n'
            '            peak = int(re.search(r"peak (\\d+)", v.message).group(1))\n'
            "    return (S + m * A) / (S + peak * A)",
            prelude="import re\n\nfrom course_lib.pipeline.verify import verify\n\n\n",
        ),
        grades=("memory_ratio_tests",),
    ),
    Mutant(
        name="ratio_via_live_stashes",
        why="1F1B's peak counted with pipe08's live_stashes just after every simulated start",
        cells=_ratio(
            "    tl = simulate(one_f_one_b(p, m), 1.0, 2.0)\n"
            "    peak = max(int((live_stashes(tl, t + 1e-6)['stage'] == s).sum()) "
            "for t in set(tl.events['start']))\n"
            "    return (S + m * A) / (S + peak * A)",
            prelude="from course_lib.pipeline.imbalance import live_stashes\n\n\n",
        ),
        grades=("memory_ratio_tests",),
    ),
    Mutant(
        name="ratio_via_stashing_versions_held",
        why="1F1B's peak as pipe07's stashing_versions_held (p - s), clamped at m",
        cells=_ratio(
            "    peak = min(m, int(stashing_versions_held(p)[s]))\n"
            "    return (S + m * A) / (S + peak * A)",
            prelude="from course_lib.pipeline.versions import stashing_versions_held\n\n\n",
        ),
        grades=("memory_ratio_tests",),
    ),
    Mutant(
        name="ratio_via_simulator",
        why="reads both peaks off simulated timelines (Timeline.peak_in_flight)",
        cells=_ratio(
            "    g = simulate(gpipe(p, m), 1.0, 2.0).peak_in_flight[s]\n"
            "    o = simulate(one_f_one_b(p, m), 1.0, 2.0).peak_in_flight[s]\n"
            "    return float((S + g * A) / (S + o * A))"
        ),
        grades=("memory_ratio_tests",),
    ),
]

RIGHT_ANSWERS = [
    Mutant(
        name="order_warmup_below_m",
        why="min(m - 1, p - s - 1) warm-ups: where every forward is warm-up, pairing the last "
        "forward with the first backward gives the same order",
        cells=_order(_alternating("min(m - 1, p - s - 1)")),
        grades=ORDER,
    ),
    Mutant(
        name="order_pytorch_style",
        why="PyTorch's reading: min(m, p - s) warm-ups, then B(i), F(w + i) pairs: the same order",
        cells=_order(
            "    w = min(m, p - s)\n"
            '    order = [Action("F", s, j) for j in range(w)]\n'
            "    for i in range(m - w):\n"
            '        order += [Action("B", s, i), Action("F", s, w + i)]\n'
            '    return order + [Action("B", s, j) for j in range(m - w, m)]'
        ),
        grades=ORDER,
    ),
    Mutant(
        name="order_as_tuple",
        why="a tuple of Actions, built by a greedy rule: a backward as soon as p - s stashes wait",
        cells=_order(
            "    order, f, b = [], 0, 0\n"
            "    while b < m:\n"
            "        if f < m and f - b < min(m, p - s):\n"
            '            order.append(Action("F", s, f))\n'
            "            f += 1\n"
            "        else:\n"
            '            order.append(Action("B", s, b))\n'
            "            b += 1\n"
            "    return tuple(order)"
        ),
        grades=ORDER,
    ),
    Mutant(
        name="warmups_numpy",
        why="numpy integers in a list",
        cells=_warmups(
            "    return list(np.minimum(m, p - np.arange(p) - 1))",
            prelude="import numpy as np\n\n\n",
        ),
        grades=("warmup_tests",),
    ),
    Mutant(
        name="peaks_numpy_cumsum",
        why="the running count as a numpy cumulative sum per rank",
        cells=_peaks(
            "    out = [0] * schedule.num_stages\n"
            "    for actions in schedule.actions:\n"
            "        steps = np.array([1 if a.kind == 'F' else -1 for a in actions])\n"
            "        out[actions[0].stage] = np.cumsum(steps).max()\n"
            "    return out",
            prelude="import numpy as np\n\n\n",
        ),
        grades=("peak_tests",),
    ),
    Mutant(
        name="peaks_by_simulated_sweep",
        why="simulates the schedule and sweeps its events itself (F start +1, B end -1)",
        cells=_peaks(
            "    ev = simulate(schedule, 1.0, 2.0).events\n"
            "    out = []\n"
            "    for s in range(schedule.num_stages):\n"
            '        mine = ev[ev["stage"] == s]\n'
            "        points = sorted([(t, 1) for t in mine[mine.kind == 'F'].start] + "
            "[(t, -1) for t in mine[mine.kind == 'B'].end], key=lambda x: (x[0], x[1]))\n"
            "        live = best = 0\n"
            "        for _, step in points:\n"
            "            live += step\n"
            "            best = max(best, live)\n"
            "        out.append(best)\n"
            "    return out"
        ),
        grades=("peak_tests",),
    ),
    Mutant(
        name="lifetime_by_query",
        why="DataFrame.query, numpy floats in a list",
        cells=_lifetime(
            "    f = events.query('kind == \"F\" and stage == @stage and microbatch == @microbatch')\n"
            "    b = events.query('kind == \"B\" and stage == @stage and microbatch == @microbatch')\n"
            "    return [f['start'].to_numpy()[0], b['end'].to_numpy()[0]]"
        ),
        grades=("lifetime_tests",),
    ),
    Mutant(
        name="ratio_numpy_scalar",
        why="the ratio as a numpy float64, the 1F1B peak from warm-up + 1 clamped at m",
        cells=_ratio(
            "    peak = min(m, min(m, p - s - 1) + 1)\n"
            "    return np.float64(S + m * A) / (S + peak * A)",
            prelude="import numpy as np\n\n\n",
        ),
        grades=("memory_ratio_tests",),
    ),
]
