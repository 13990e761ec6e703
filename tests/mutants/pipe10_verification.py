"""Plausible wrong answers to pipe10_verification's exercises; each must lose points when graded.

``RIGHT_ANSWERS`` are answers right by another route (a Counter of the entries, a per-stage event
walk, verify-free numpy comparisons); each must keep full marks on the grade cells it names.
"""

from __future__ import annotations

from tests.mutants import Mutant

IDENTITY = ("identity_duplicate_tests", "identity_kind_range_tests")


def _identity(
    kinds: str = '("F", "B", "W") if split_backward else ("F", "B")',
    bad_kind: str = "kind not in kinds",
    out_of_range: str = "not (0 <= stage < num_stages and 0 <= microbatch < num_microbatches)",
    seen_key: str = "(kind, stage, microbatch)",
    report: str = "(rank, position)",
    missing_kinds: str = "kinds",
    extra: str = "",
) -> dict[str, str]:
    """The reference identity_violations with one piece replaced."""
    return {
        "identity_answer": (
            "def identity_violations(actions, num_stages, num_microbatches, split_backward):\n"
            f"    kinds = {kinds}\n"
            '    out = {"kind": [], "range": [], "duplicate": [], "missing": []}\n'
            "    seen, every = set(), set()\n"
            "    first = {}\n"
            "    for rank, rank_actions in enumerate(actions):\n"
            "        for position, (kind, stage, microbatch) in enumerate(rank_actions):\n"
            f"            if {bad_kind}:\n"
            '                out["kind"].append((rank, position))\n'
            f"            elif {out_of_range}:\n"
            '                out["range"].append((rank, position))\n'
            f"            elif {seen_key} in seen:\n"
            f'                out["duplicate"].append({report})\n'
            "            else:\n"
            f"                seen.add({seen_key})\n"
            "                first[(kind, stage, microbatch)] = (rank, position)\n"
            "            every.add((kind, stage, microbatch))\n"
            f"    for kind in {missing_kinds}:\n"
            "        for stage in range(num_stages):\n"
            "            for microbatch in range(num_microbatches):\n"
            "                if (kind, stage, microbatch) not in seen:\n"
            '                    out["missing"].append((kind, stage, microbatch))\n'
            f"{extra}"
            "    return out\n"
        )
    }


def _unguarded_repeats(first: bool) -> dict[str, str]:
    """identity_violations whose repeat test also sees malformed entries: before the kind and
    range checks (``first``, skipping them for a repeat) or after them, independently."""
    validate = (
        "            if kind not in kinds:\n"
        '                out["kind"].append((rank, position))\n'
        "            elif not (0 <= stage < num_stages and 0 <= microbatch < num_microbatches):\n"
        '                out["range"].append((rank, position))\n'
    )
    repeat = (
        "            if tuple(entry) in seen:\n"
        '                out["duplicate"].append((rank, position))\n'
        + ("                continue\n" if first else "")
        + "            seen.add(tuple(entry))\n"
    )
    return {
        "identity_answer": (
            "def identity_violations(actions, num_stages, num_microbatches, split_backward):\n"
            '    kinds = ("F", "B", "W") if split_backward else ("F", "B")\n'
            '    out = {"kind": [], "range": [], "duplicate": [], "missing": []}\n'
            "    seen = set()\n"
            "    for rank, rank_actions in enumerate(actions):\n"
            "        for position, entry in enumerate(rank_actions):\n"
            "            kind, stage, microbatch = entry\n"
            + (repeat + validate if first else validate + repeat)
            + '    out["missing"] = [(k, s, j) for k in kinds for s in range(num_stages)\n'
            "                      for j in range(num_microbatches) if (k, s, j) not in seen]\n"
            "    return out\n"
        )
    }


def _peaks(
    release: str = '"W" if any(a[0] == "W" for rank in actions for a in rank) else "B"',
    index: str = "stage",
    size: str = "num_stages",
    after: str = "",
    ret: str = "peak",
) -> dict[str, str]:
    """The reference peak_stashes with one piece replaced."""
    return {
        "memory_answer": (
            "def peak_stashes(actions, num_stages):\n"
            f"    release = {release}\n"
            f"    live, peak = [0] * {size}, [0] * {size}\n"
            "    for rank, rank_actions in enumerate(actions):\n"
            "        for kind, stage, _ in rank_actions:\n"
            '            if kind == "F":\n'
            f"                live[{index}] += 1\n"
            f"                peak[{index}] = max(peak[{index}], live[{index}])\n"
            "            elif kind == release:\n"
            f"                live[{index}] -= 1\n"
            f"{after}"
            f"    return {ret}\n"
        )
    }


_ALL_DEPS = '[("F", s - 1, j)] if k == "F" else [("F", s, j), ("B", s + 1, j)]'


def _early_events(deps: str, compare: str, report: str = "e", stop: bool = False) -> str:
    """The reference Exercise 2 answer with the dependency list or the comparison replaced."""
    return (
        "_end = {(e.kind, e.stage, e.microbatch): e.end for e in trace.itertuples()}\n"
        "early_events = []\n"
        "for _e in trace.itertuples():\n"
        "    k, s, j = _e.kind, int(_e.stage), int(_e.microbatch)\n"
        "    e = (k, s, j)\n"
        f"    late = [d for d in {deps} if d in _end and _e.start {compare} _end[d]]\n"
        "    if late:\n"
        f"        early_events.append({report})\n" + ("        break\n" if stop else "")
    )


def _value(cell: str, name: str, value: str) -> dict[str, str]:
    return {cell: f"{name} = {value}\n"}


RIGHT_FAILS = {"A": "identity", "B": "progress", "C": "identity", "D": "none"}


def _fails(**changes: str) -> dict[str, str]:
    return {"fast_trace_answer": f"fails = { ({**RIGHT_FAILS, **changes})!r}\n"}


MUTANTS = [
    # Exercise 1: the identity checks.
    Mutant(
        name="delegates_to_verify",
        why="calls course_lib's verifier and converts its violations",
        cells={
            "identity_answer": (
                "def identity_violations(actions, num_stages, num_microbatches, split_backward):\n"
                "    found = verify(actions, num_stages, num_microbatches,"
                " split_backward=split_backward)\n"
                '    out = {"kind": [], "range": [], "duplicate": [], "missing": []}\n'
                "    for v in found:\n"
                '        if v.rule == "missing":\n'
                '            out["missing"].append((v.action.kind, v.action.stage,'
                " v.action.microbatch))\n"
                "        elif v.rule in out:\n"
                "            out[v.rule].append((v.rank, v.position))\n"
                "    return out\n"
            )
        },
        grades=IDENTITY,
    ),
    Mutant(
        name="builds_actions_to_check_kinds",
        why="lets Action() reject unknown kinds and negative indices (disabled)",
        cells=_identity(bad_kind="not Action(kind, max(stage, 0), max(microbatch, 0))"),
        grades=("identity_kind_range_tests",),
    ),
    Mutant(
        name="reports_first_occurrence",
        why="reports the first listing of a repeated action instead of the later ones",
        cells=_identity(report="first[(kind, stage, microbatch)]"),
        grades=("identity_duplicate_tests",),
    ),
    Mutant(
        name="duplicates_per_rank_only",
        why="looks for repeats within each rank's list only (a copy on another rank is missed)",
        cells={
            "identity_answer": _identity()["identity_answer"]
            .replace(
                "        for position, (kind",
                "        rank_seen = set()\n        for position, (kind",
            )
            .replace(
                "elif (kind, stage, microbatch) in seen:",
                "elif (kind, stage, microbatch) in rank_seen:",
            )
            .replace(
                "                seen.add((kind, stage, microbatch))\n",
                "                seen.add((kind, stage, microbatch))\n"
                "            if kind in kinds and (kind, stage, microbatch) in seen:\n"
                "                rank_seen.add((kind, stage, microbatch))\n",
            )
        },
        grades=("identity_duplicate_tests",),
    ),
    Mutant(
        name="w_never_required",
        why="requires only F and B, even when the backward is split",
        cells=_identity(missing_kinds='("F", "B")'),
        grades=("identity_duplicate_tests",),
    ),
    Mutant(
        name="w_always_required",
        why="requires a W for every action even in an unsplit schedule",
        cells=_identity(missing_kinds='("F", "B", "W")'),
        grades=("identity_duplicate_tests",),
    ),
    Mutant(
        name="duplicate_key_ignores_kind",
        why="keys a repeat on (stage, microbatch), so every B repeats its F",
        cells=_identity(seen_key="(stage, microbatch)"),
        grades=("identity_duplicate_tests",),
    ),
    Mutant(
        name="positions_from_one",
        why="numbers positions from 1",
        cells=_identity(report="(rank, position + 1)"),
        grades=("identity_duplicate_tests",),
    ),
    Mutant(
        name="missing_by_owner_rank",
        why="an action counts only on the rank that owns its stage (stage % number of ranks)",
        cells=_identity(
            extra=(
                "    for (kind, stage, microbatch), (rank, _) in first.items():\n"
                "        if rank != stage % len(actions):\n"
                '            out["missing"].append((kind, stage, microbatch))\n'
            )
        ),
        grades=("identity_duplicate_tests",),
    ),
    Mutant(
        name="w_always_valid_kind",
        why="accepts W whether or not the backward is split",
        cells=_identity(bad_kind='kind not in ("F", "B", "W")'),
        grades=("identity_kind_range_tests",),
    ),
    Mutant(
        name="stage_upper_bound_inclusive",
        why="accepts stage == num_stages (<= instead of <)",
        cells=_identity(
            out_of_range="not (0 <= stage <= num_stages and 0 <= microbatch < num_microbatches)"
        ),
        grades=("identity_kind_range_tests",),
    ),
    Mutant(
        name="negative_indices_accepted",
        why="checks only the upper end of the range",
        cells=_identity(out_of_range="not (stage < num_stages and microbatch < num_microbatches)"),
        grades=("identity_kind_range_tests",),
    ),
    Mutant(
        name="kind_case_insensitive",
        why="upper-cases the kind first, so 'f' passes",
        cells=_identity(bad_kind="kind.upper() not in kinds"),
        grades=("identity_kind_range_tests",),
    ),
    Mutant(
        name="microbatch_range_unchecked",
        why="checks the stage's range only",
        cells=_identity(out_of_range="not (0 <= stage < num_stages)"),
        grades=("identity_kind_range_tests",),
    ),
    Mutant(
        name="duplicates_among_invalid",
        why="runs the duplicate check on every entry, after (not instead of) the kind and range "
        "checks, so a repeated malformed entry is also a duplicate",
        cells=_unguarded_repeats(first=False),
        grades=("identity_duplicate_tests",),
    ),
    Mutant(
        name="dup_check_first",
        why="checks for a repeat before validating the entry, so a repeated malformed entry is "
        "reported as a duplicate instead of its kind or range",
        cells=_unguarded_repeats(first=True),
        grades=("identity_duplicate_tests",),
    ),
    # Exercise 2: every event that started before a dependency ended.
    *(
        Mutant(
            name=name,
            why=why,
            cells={"dependency_answer": _early_events(deps, compare)},
            grades=("dependency_tests",),
        )
        for name, why, deps, compare in (
            (
                "start_at_dependency_end_flagged",
                "<= instead of <: an event starting exactly when its input ends is flagged",
                _ALL_DEPS,
                "<=",
            ),
            (
                "ignores_forward_dependency",
                "checks only the backwards' dependencies",
                '[] if k == "F" else [("F", s, j), ("B", s + 1, j)]',
                "<",
            ),
            (
                "ignores_cross_stage_backward",
                "B(k, j) checked against F(k, j) only",
                '[("F", s - 1, j)] if k == "F" else [("F", s, j)]',
                "<",
            ),
            (
                "ignores_own_forward",
                "B(k, j) checked against B(k + 1, j) only",
                '[("F", s - 1, j)] if k == "F" else [("B", s + 1, j)]',
                "<",
            ),
            (
                "backward_direction_reversed",
                "B(k, j) taken to need B(k - 1, j)",
                '[("F", s - 1, j)] if k == "F" else [("F", s, j), ("B", s - 1, j)]',
                "<",
            ),
            (
                "forward_direction_reversed",
                "F(k, j) taken to need F(k + 1, j)",
                '[("F", s + 1, j)] if k == "F" else [("F", s, j), ("B", s + 1, j)]',
                "<",
            ),
        )
    ),  # fmt: skip
    Mutant(
        name="reports_the_dependency",
        why="names the events that ended late instead of the ones that started early",
        cells={
            "dependency_answer": _early_events(_ALL_DEPS, "<", report="d").replace(
                "early_events.append(d)", "early_events.extend(late)"
            )
        },
        grades=("dependency_tests",),
    ),
    Mutant(
        name="earlier_than_the_simulator",
        why="every event that starts before the nominal simulator's 1F1B says (1 ms, 2 ms)",
        cells={
            "dependency_answer": (
                "_sim = simulate(one_f_one_b(4, 6), t_f, t_b).events\n"
                '_m = trace.merge(_sim, on=["rank", "kind", "stage", "microbatch"],'
                ' suffixes=("", "_sim"))\n'
                "_r = _m[_m.start < _m.start_sim - 1e-12]\n"
                "early_events = list(zip(_r.kind, _r.stage, _r.microbatch))\n"
            )
        },
        grades=("dependency_tests",),
    ),
    Mutant(
        name="rank_overlap_instead_of_own_forward",
        why="forgets F(s, j) -> B(s, j): cross-stage dependencies plus 'no two events overlap on "
        "a rank' (B(s3,m2) runs ahead of its forward without overlapping it)",
        cells={
            "dependency_answer": _early_events(
                '[("F", s - 1, j)] if k == "F" else [("B", s + 1, j)]', "<"
            )
            + (
                "_free = {}\n"
                "for _e in trace.itertuples():\n"
                "    e = (_e.kind, int(_e.stage), int(_e.microbatch))\n"
                "    if _e.start < _free.get(_e.rank, 0) and e not in early_events:\n"
                "        early_events.append(e)\n"
                "    _free[_e.rank] = max(_free.get(_e.rank, 0), _e.end)\n"
            )
        },
        grades=("dependency_tests",),
    ),
    Mutant(
        name="first_event_only",
        why="stops at the first early event (the question asks for all of them)",
        cells={"dependency_answer": _early_events(_ALL_DEPS, "<", stop=True)},
        grades=("dependency_tests",),
    ),
    Mutant(
        name="row_indices",
        why="the row indices of the events instead of their (kind, stage, microbatch)",
        cells=_value("dependency_answer", "early_events", "[18, 39, 43]"),
        grades=("dependency_tests",),
    ),
    # Exercise 3: peak live stashes per stage.
    Mutant(
        name="released_at_b",
        why="frees the stash at B even when the schedule lists W",
        cells=_peaks(release='"B"'),
        grades=("memory_tests",),
    ),
    Mutant(
        name="per_rank",
        why="counts per rank, so a rank's two interleaved stages share one count",
        cells=_peaks(
            index="stage % len(actions)", ret="[peak[s % len(actions)] for s in range(num_stages)]"
        ),
        grades=("memory_tests",),
    ),
    Mutant(
        name="counts_forwards",
        why="the number of forwards on each stage, as if nothing were freed",
        cells=_peaks(release='"never"'),
        grades=("memory_tests",),
    ),
    Mutant(
        name="forwards_before_first_release",
        why="the forwards listed before the stage's first release (the warm-up, plus one)",
        cells={
            "memory_answer": (
                "def peak_stashes(actions, num_stages):\n"
                '    release = "W" if any(a[0] == "W" for r in actions for a in r) else "B"\n'
                "    out = [0] * num_stages\n"
                "    done = set()\n"
                "    for rank_actions in actions:\n"
                "        for kind, stage, _ in rank_actions:\n"
                "            if kind == release:\n"
                "                done.add(stage)\n"
                '            elif kind == "F" and stage not in done:\n'
                "                out[stage] += 1\n"
                "    return out\n"
            )
        },
        grades=("memory_tests",),
    ),
    Mutant(
        name="frees_at_b_and_w",
        why="frees one at B and another at W",
        cells={
            "memory_answer": _peaks()["memory_answer"].replace(
                "elif kind == release:", 'elif kind in ("B", "W"):'
            )
        },
        grades=("memory_tests",),
    ),
    Mutant(
        name="peak_before_the_forward",
        why="takes the maximum before adding the forward's stash (one short)",
        cells={
            "memory_answer": _peaks()["memory_answer"].replace(
                "                live[stage] += 1\n"
                "                peak[stage] = max(peak[stage], live[stage])\n",
                "                peak[stage] = max(peak[stage], live[stage])\n"
                "                live[stage] += 1\n",
            )
        },
        grades=("memory_tests",),
    ),
    Mutant(
        name="one_peak_for_all_stages",
        why="the largest stage's peak reported for every stage",
        cells=_peaks(ret="[max(peak)] * num_stages"),
        grades=("memory_tests",),
    ),
    Mutant(
        name="final_live_count",
        why="the stashes live at the end of the step instead of the peak",
        cells=_peaks(ret="live"),
        grades=("memory_tests",),
    ),
    Mutant(
        name="delegates_to_simulator",
        why="simulates the schedule and reads Timeline.peak_in_flight (disabled)",
        cells={
            "memory_answer": (
                "def peak_stashes(actions, num_stages):\n"
                "    m = 1 + max(a[2] for r in actions for a in r)\n"
                "    return [int(v) for v in simulate(as_schedule(actions, num_stages, m),"
                " 1e-3, 2e-3, 1e-3).peak_in_flight]\n"
            )
        },
        grades=("memory_tests",),
    ),
    # Exercise 4: the numerically wrong schedule.
    *(
        Mutant(
            name=f"numeric_{choice}",
            why=why,
            cells=_value("numeric_answer", "wrong_schedule", repr(choice)),
            grades=("numeric_tests",),
        )
        for choice, why in (
            ("A", "picks the reference schedule"),
            ("B", "takes reordered W's for reordered stashes"),
            ("D", "GPipe's many stashes taken for wrong ones"),
            ("none", "all pass the ordering rules, so all taken for right"),
        )
    ),
    # Exercise 5: which check each fast trace fails.
    *(
        Mutant(name=name, why=why, cells=_fails(**{key: value}), grades=(cell,))
        for name, why, key, value, cell in (
            (
                "missing_backward_hang_as_progress",
                "the hang taken for the defect, not its cause",
                "A",
                "progress",
                "fast_trace_tests",
            ),
            (
                "cross_rank_wait_as_dependency",
                "B(s0,m3) before B(s4,m3) on one rank read as a list-order violation, though "
                "B(s4,m3) is not a direct input of B(s0,m3)",
                "B",
                "dependency",
                "fast_trace_tests",
            ),
            (
                "recompute_as_memory",
                "a second forward per microbatch read as a memory change",
                "C",
                "memory",
                "fast_trace_tests",
            ),
            (
                "recompute_as_fine",
                "a recompute taken as legitimate without its own kind",
                "C",
                "none",
                "fast_trace_tests",
            ),
            (
                "tie_as_dependency",
                "a start exactly at a dependency's end read as too early",
                "D",
                "dependency",
                "fast_trace_tests",
            ),
        )
    ),  # fmt: skip
    Mutant(
        name="every_hang_is_progress",
        why="both hangs filed under progress",
        cells=_fails(A="progress", B="progress"),
        grades=("fast_trace_tests",),
    ),
]

RIGHT_ANSWERS = [
    Mutant(
        name="counter_of_entries",
        why="counts the valid entries with a Counter, then walks for the later repeats",
        cells={
            "identity_answer": (
                "from collections import Counter\n"
                "\n"
                "\n"
                "def identity_violations(actions, num_stages, num_microbatches, split_backward):\n"
                '    kinds = {"F", "B"} | ({"W"} if split_backward else set())\n'
                '    out = {"kind": [], "range": [], "duplicate": [], "missing": []}\n'
                "    counts = Counter()\n"
                "    for rank, rank_actions in enumerate(actions):\n"
                "        for position, entry in enumerate(rank_actions):\n"
                "            kind, stage, microbatch = entry\n"
                "            if kind not in kinds:\n"
                '                out["kind"].append((rank, position))\n'
                "                continue\n"
                "            if stage not in range(num_stages) or microbatch not in"
                " range(num_microbatches):\n"
                '                out["range"].append((rank, position))\n'
                "                continue\n"
                "            counts[tuple(entry)] += 1\n"
                "            if counts[tuple(entry)] > 1:\n"
                '                out["duplicate"].append((rank, position))\n'
                '    out["missing"] = [\n'
                "        (k, s, j) for k in sorted(kinds) for s in range(num_stages)\n"
                "        for j in range(num_microbatches) if not counts[(k, s, j)]\n"
                "    ]\n"
                "    return out\n"
            )
        },
        grades=IDENTITY,
    ),
    Mutant(
        name="numpy_peaks_per_stage",
        why="a per-stage cumulative sum of +1/-1 steps in numpy, returned as an int array",
        cells={
            "memory_answer": (
                "def peak_stashes(actions, num_stages):\n"
                "    flat = [a for r in actions for a in r]\n"
                '    release = "W" if any(a[0] == "W" for a in flat) else "B"\n'
                "    out = np.zeros(num_stages, dtype=np.int64)\n"
                "    for s in range(num_stages):\n"
                '        steps = [1 if k == "F" else -1 for k, st, _ in flat'
                ' if st == s and k in ("F", release)]\n'
                "        out[s] = np.cumsum(steps).max() if steps else 0\n"
                "    return out\n"
            )
        },
        grades=("memory_tests",),
    ),
    Mutant(
        name="trace_by_row_dict",
        why="looks up each dependency's end in a dict of rows; a set of tuples with numpy ints",
        cells={
            "dependency_answer": (
                "_rows = {(r.kind, r.stage, r.microbatch): r for r in trace.itertuples()}\n"
                "early_events = set()\n"
                "for r in trace.itertuples():\n"
                '    deps = [("F", r.stage - 1, r.microbatch)] if r.kind == "F" else '
                '[("F", r.stage, r.microbatch), ("B", r.stage + 1, r.microbatch)]\n'
                "    if any(d in _rows and r.start < _rows[d].end for d in deps):\n"
                "        early_events.add((r.kind, r.stage, r.microbatch))\n"
            )
        },
        grades=("dependency_tests",),
    ),
    Mutant(
        name="pandas_merge_of_dependencies",
        why="joins each event to its dependencies' rows with pandas merges",
        cells={
            "dependency_answer": (
                "_t = trace.assign(row=range(len(trace)))\n"
                "_ends = trace[['kind', 'stage', 'microbatch', 'end']]\n"
                "_deps = pd.concat([\n"
                "    _t[_t.kind == 'F'].assign(dk='F', ds=_t.stage - 1),\n"
                "    _t[_t.kind == 'B'].assign(dk='F', ds=_t.stage),\n"
                "    _t[_t.kind == 'B'].assign(dk='B', ds=_t.stage + 1),\n"
                "])\n"
                "_j = _deps.merge(_ends, left_on=['dk', 'ds', 'microbatch'],\n"
                "                 right_on=['kind', 'stage', 'microbatch'], suffixes=('', '_dep'))\n"
                "_bad = _j[_j.start < _j.end_dep].drop_duplicates('row').sort_values('row')\n"
                "early_events = list(zip(_bad.kind, _bad.stage, _bad.microbatch))\n"
            )
        },
        grades=("dependency_tests",),
    ),
]
