"""Tests for course_lib.explorers.verification (pipe10's explorer): mutations do what they say
and the panel shows verify's findings for the mutated lists."""

from __future__ import annotations

import pytest

from course_lib.explorers.verification import (
    GENERATORS,
    NUM_MICROBATCHES,
    NUM_RANKS,
    generator_lists,
    mutate,
    verification_explorer,
)
from course_lib.pipeline import gpipe, interleaved_1f1b, one_f_one_b, zero_bubble_h1
from course_lib.pipeline.verify import verify


@pytest.fixture(scope="module")
def explorer():
    return verification_explorer()


def test_generator_lists_are_the_generators():
    p, m = NUM_RANKS, NUM_MICROBATCHES
    made = {"GPipe": gpipe(p, m), "1F1B": one_f_one_b(p, m), "ZB-H1": zero_bubble_h1(p, m),
            "interleaved 1F1B (2 chunks)": interleaved_1f1b(p, m, 2)}  # fmt: skip
    for name in GENERATORS:
        lists = generator_lists(name)
        assert [[(a.kind, a.stage, a.microbatch) for a in r] for r in made[name].actions] == [
            list(r) for r in lists
        ]


@pytest.mark.parametrize("name", GENERATORS)
def test_each_mutation_breaks_the_rule_it_should(name):
    base = generator_lists(name)
    split = name == "ZB-H1"
    stages = 1 + max(a[1] for r in base for a in r)
    assert verify([list(r) for r in base], stages, NUM_MICROBATCHES, split_backward=split) == []
    entry = base[1][2]
    expect = {"drop": "missing", "duplicate": "duplicate", "microbatch out of range": "range",
              "unknown kind R": "kind"}  # fmt: skip
    for mutation, rule in expect.items():
        lists = mutate(base, mutation, 1, 2, NUM_MICROBATCHES)
        found = verify(lists, stages, NUM_MICROBATCHES, split_backward=split)
        assert rule in {v.rule for v in found}, (mutation, found)
    dropped = mutate(base, "drop", 1, 2, NUM_MICROBATCHES)
    assert len(dropped[1]) == len(base[1]) - 1 and entry not in dropped[1]
    swapped = mutate(base, "swap with next", 1, 2, NUM_MICROBATCHES)
    assert swapped[1][2:4] == [base[1][3], base[1][2]]
    last = len(base[1]) - 1
    assert mutate(base, "swap with next", 1, last, NUM_MICROBATCHES) == [list(r) for r in base]
    assert mutate(base, "none", 1, 2, NUM_MICROBATCHES) == [list(r) for r in base]


def test_mutate_rejects_bad_arguments():
    base = generator_lists("1F1B")
    with pytest.raises(ValueError, match="mutation must be one of"):
        mutate(base, "shuffle", 0, 0, NUM_MICROBATCHES)
    with pytest.raises(ValueError, match="rank 9 has no position 0"):
        mutate(base, "drop", 9, 0, NUM_MICROBATCHES)


def _set(explorer, **values):
    for name, value in values.items():
        explorer.controls[name].value = value


@pytest.mark.parametrize(
    "settings",
    [
        dict(schedule="1F1B", mutation="drop", rank=1, position=3, stash="keyed", max_in_flight=0),
        dict(schedule="ZB-H1", mutation="swap with next", rank=2, position=4, stash="fifo",
             max_in_flight=3),
        dict(schedule="GPipe", mutation="none", rank=0, position=0, stash="lifo", max_in_flight=4),
        dict(schedule="interleaved 1F1B (2 chunks)", mutation="unknown kind R", rank=3,
             position=20, stash="keyed", max_in_flight=0),
    ],
)  # fmt: skip
def test_metrics_are_verify_of_the_mutated_lists(explorer, settings):
    _set(explorer, **settings)
    base = generator_lists(settings["schedule"])
    stages = 1 + max(a[1] for r in base for a in r)
    lists = mutate(base, settings["mutation"], settings["rank"], settings["position"],
                   NUM_MICROBATCHES)  # fmt: skip
    want = verify(lists, stages, NUM_MICROBATCHES, split_backward=settings["schedule"] == "ZB-H1",
                  max_in_flight=settings["max_in_flight"] or None, numeric=True,
                  stash=settings["stash"])  # fmt: skip
    got = explorer.last_metrics["violations"]
    assert got == want
    counts = explorer.last_metrics["counts"]
    assert sum(counts.values()) == len(want)
    for v in want[:8]:
        assert (
            v.message.replace("'", "&#x27;")[:40] in explorer.metrics.value
            or v.message[:40] in explorer.metrics.value
        )
    boxes = explorer._boxes.get_paths()
    assert len(boxes) == sum(len(r) for r in lists)


def test_position_slider_follows_the_rank_and_schedule(explorer):
    _set(explorer, schedule="1F1B", rank=0, position=0)
    assert explorer.controls["position"].max == len(generator_lists("1F1B")[0]) - 1
    _set(explorer, schedule="interleaved 1F1B (2 chunks)")
    assert (
        explorer.controls["position"].max
        == len(generator_lists("interleaved 1F1B (2 chunks)")[0]) - 1
    )


def test_known_outcomes(explorer):
    _set(explorer, schedule="GPipe", mutation="none", stash="keyed", max_in_flight=4)
    assert explorer.last_metrics["counts"]["memory"] == NUM_RANKS  # GPipe keeps 6 > 4 everywhere
    _set(explorer, schedule="1F1B", max_in_flight=0, stash="lifo")
    assert explorer.last_metrics["counts"]["numeric"] == NUM_RANKS - 1  # last stage holds one
    _set(explorer, stash="fifo")
    assert explorer.last_metrics["violations"] == []


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="schedule must be one of"):
        verification_explorer(schedule="1f1b")
    with pytest.raises(ValueError, match="position must be an int in"):
        verification_explorer(position=99)
    with pytest.raises(ValueError, match="max_in_flight"):
        verification_explorer(max_in_flight=7)
    with pytest.raises(ValueError, match="mutation"):
        verification_explorer(mutation="x")
