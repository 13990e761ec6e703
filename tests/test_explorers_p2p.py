"""Tests for course_lib.explorers.p2p (pipe09's explorer): it shows simulate_p2p's verdicts."""

from __future__ import annotations

import io
import itertools

import numpy as np
import pytest
from PIL import Image

from course_lib.explorers.p2p import (
    EAGER_LIMITS,
    ORDER_LABELS,
    SIZES,
    P2PExplorer,
    p2p_explorer,
)
from course_lib.pipeline.p2p import ORDERS, exchange_programs, simulate_p2p


@pytest.fixture(scope="module")
def explorer() -> P2PExplorer:
    return p2p_explorer()


def _set(explorer, **values) -> None:
    for name, value in values.items():
        explorer.controls[name].value = value


def _pixels(explorer) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(explorer.png())).convert("RGB"))


def test_controls_and_options(explorer):
    c = explorer.controls
    assert list(c) == ["order", "num_ranks", "message", "eager_limit", "topology"]
    assert (c["num_ranks"].min, c["num_ranks"].max, c["num_ranks"].value) == (2, 8, 4)
    assert list(c["message"].options) == list(SIZES) and c["message"].value == "4 MiB"
    assert list(c["eager_limit"].options) == list(EAGER_LIMITS)
    assert set(ORDER_LABELS.values()) <= set(ORDERS)
    assert "even_odd" not in ORDER_LABELS.values()  # Exercise 3's answer stays out of the explorer
    assert EAGER_LIMITS["128 KiB (MPICH ch3 default)"] == 131072


def test_metrics_are_the_simulator_verdicts(explorer):
    """For a spread of settings the panel reports simulate_p2p's verdict at the chosen limit and
    at 0, its cycle and its protocol counts."""
    settings = itertools.product(
        ORDER_LABELS, (2, 3, 5, 8), ("4 KiB", "16 MiB"), ("0 B: synchronous (MPI_Ssend)", "64 KiB"), ("ring", "chain")
    )  # fmt: skip
    for k, (order, p, message, limit, topology) in enumerate(settings):
        if k % 4:
            continue
        _set(
            explorer,
            order=order,
            num_ranks=p,
            message=message,
            eager_limit=limit,
            topology=topology,
        )
        programs = exchange_programs(
            p, SIZES[message], ORDER_LABELS[order], ring=topology == "ring"
        )
        run = simulate_p2p(programs, EAGER_LIMITS[limit])
        strict = simulate_p2p(programs, 0)
        metrics = explorer.last_metrics
        assert metrics["completed"] == run.completed
        assert metrics["completed_synchronous"] == strict.completed
        assert metrics["cycle"] == run.cycle
        protocols = [m.protocol for m in run.messages]
        assert (metrics["eager"], metrics["rendezvous"]) == (
            protocols.count("eager"),
            protocols.count("rendezvous"),
        )
        html = explorer.metrics.value
        if run.completed and not strict.completed:
            assert "unsafe" in html
        assert f"{p} ranks on a {topology}" in html


def test_send_first_is_unsafe_below_the_limit(explorer):
    _set(
        explorer,
        order="send first (all ranks)",
        num_ranks=4,
        message="16 KiB",
        eager_limit="64 KiB",
        topology="ring",
    )
    assert explorer.last_metrics["completed"] and not explorer.last_metrics["completed_synchronous"]
    _set(explorer, message="4 MiB")
    assert explorer.last_metrics["cycle"] == (0, 1, 2, 3, 0)


def test_a_cached_background_carries_nothing_over():
    """A frame drawn after other shapes equals the same frame drawn by a fresh explorer."""
    fresh = p2p_explorer(order="even_sends_first", num_ranks=5)
    reference = _pixels(fresh)
    used = p2p_explorer(order="nonblocking", num_ranks=8)
    _set(used, num_ranks=3, order="even ranks send both first", topology="chain")
    _set(used, num_ranks=5, topology="ring")
    assert np.array_equal(_pixels(used), reference)
    assert used.last_update_ms > 0


def test_a_shape_visited_again_draws_in_its_own_rows():
    """4 -> 8 -> 5 -> 8 -> 5 ranks, then chain and back to ring: every frame, whether its
    background is new or cached, equals a fresh explorer's at that setting pixel for pixel (the
    grid's limits and ticks follow the shape, not the last background built)."""
    fresh = {
        (p, topology): _pixels(p2p_explorer(num_ranks=p, topology=topology))
        for p, topology in ((8, "ring"), (5, "ring"), (5, "chain"), (4, "chain"))
    }
    used = p2p_explorer(num_ranks=4)
    path = [(8, "ring"), (5, "ring"), (8, "ring"), (5, "ring"), (5, "chain"), (4, "chain")]
    path += [(8, "ring"), (5, "chain"), (5, "ring")]
    for p, topology in path:
        _set(used, num_ranks=p, topology=topology)
        assert np.array_equal(_pixels(used), fresh[p, topology]), (p, topology)


def test_frames_change_with_the_controls(explorer):
    _set(
        explorer, order="send first (all ranks)", num_ranks=4, message="4 MiB", eager_limit="64 KiB"
    )
    before = _pixels(explorer)
    _set(explorer, message="16 KiB")
    assert not np.array_equal(before, _pixels(explorer))


def test_bad_arguments():
    with pytest.raises(ValueError, match="order must be one of"):
        p2p_explorer(order="even_odd")
    with pytest.raises(ValueError, match="num_ranks must be an int from 2 to 8"):
        p2p_explorer(num_ranks=9)
    with pytest.raises(ValueError, match="message must be one of"):
        p2p_explorer(message="3 MiB")
    with pytest.raises(ValueError, match="eager_limit must be one of"):
        p2p_explorer(eager_limit="2 KiB")
    with pytest.raises(ValueError, match="topology must be 'ring' or 'chain'"):
        p2p_explorer(topology="star")
