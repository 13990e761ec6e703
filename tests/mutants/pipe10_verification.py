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


def _value(cell: str, name: str, value: str) -> dict[str, str]:
    return {cell: f"{name} = {value}\n"}


RIGHT_FAILS = {
    "A": "identity",
    "B": "dependency",
    "C": "memory",
    "D": "version",
    "E": "numeric",
    "F": "progress",
}


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
    # Exercise 2: the first event that started before a dependency ended.
    Mutant(
        name="start_at_dependency_end_flagged",
        why="<= instead of <: an event starting exactly when its input ends is flagged",
        cells=_value("dependency_answer", "first_violation", '("F", 1, 0)'),
        grades=("dependency_tests",),
    ),
    Mutant(
        name="backward_direction_reversed",
        why="B(k, j) taken to need B(k - 1, j)",
        cells=_value("dependency_answer", "first_violation", '("B", 3, 0)'),
        grades=("dependency_tests",),
    ),
    Mutant(
        name="forward_and_same_stage_only",
        why="checks F(k-1) -> F(k) and F -> B on a stage, never B(k+1) -> B(k): finds nothing",
        cells=_value("dependency_answer", "first_violation", "None"),
        grades=("dependency_tests",),
    ),
    Mutant(
        name="reports_the_dependency",
        why="names the event that ended late instead of the one that started early",
        cells=_value("dependency_answer", "first_violation", '("B", 2, 4)'),
        grades=("dependency_tests",),
    ),
    Mutant(
        name="last_violation",
        why="the last event that started early, not the first",
        cells=_value("dependency_answer", "first_violation", '("B", 1, 5)'),
        grades=("dependency_tests",),
    ),
    Mutant(
        name="row_index",
        why="the row index of the event instead of its (kind, stage, microbatch)",
        cells=_value("dependency_answer", "first_violation", "42"),
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
    Mutant(
        name="early_start_as_progress",
        why="a backward that did not wait taken for a deadlock",
        cells=_fails(B="progress"),
        grades=("fast_trace_tests",),
    ),
    Mutant(
        name="missing_backwards_as_numeric",
        why="missing backwards filed under wrong numbers",
        cells=_fails(A="numeric"),
        grades=("fast_trace_tests",),
    ),
    Mutant(
        name="unstashed_weights_as_numeric",
        why="dropped weight stashes filed under numerics",
        cells=_fails(D="numeric"),
        grades=("fast_trace_tests",),
    ),
    Mutant(
        name="dropped_weights_as_memory",
        why="dropped weight copies read as a memory problem",
        cells=_fails(D="memory"),
        grades=("fast_trace_tests",),
    ),
    Mutant(
        name="extra_forwards_as_dependency",
        why="forwards run early taken for a dependency violation",
        cells=_fails(C="dependency"),
        grades=("fast_trace_tests",),
    ),
    Mutant(
        name="hang_as_identity",
        why="a hung job's missing events filed under identity",
        cells=_fails(F="identity"),
        grades=("fast_trace_tests",),
    ),
    Mutant(
        name="stash_order_as_memory",
        why="a newest-first stash read as a memory problem",
        cells=_fails(E="memory"),
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
        why="looks up each dependency's end in a dict of rows, tuple answer with numpy ints",
        cells={
            "dependency_answer": (
                "_rows = {(r.kind, r.stage, r.microbatch): r for r in trace.itertuples()}\n"
                "first_violation = None\n"
                "for r in trace.itertuples():\n"
                '    deps = [("F", r.stage - 1, r.microbatch)] if r.kind == "F" else '
                '[("F", r.stage, r.microbatch), ("B", r.stage + 1, r.microbatch)]\n'
                "    if any(d in _rows and r.start < _rows[d].end for d in deps):\n"
                "        first_violation = (r.kind, r.stage, r.microbatch)\n"
                "        break\n"
            )
        },
        grades=("dependency_tests",),
    ),
]
