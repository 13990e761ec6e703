"""Tests for course_lib.explorers.versions_explorer (pipe07's explorer): its per-stage rows are
the replay's versions, staleness and versions held (and their closed forms), every control
redraws, and bad arguments are named."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from course_lib.explorers.versions import (  # noqa: E402
    NUM_BATCHES,
    POLICY_LABELS,
    VersionsExplorer,
    stream,
    versions_explorer,
)
from course_lib.pipeline import one_f_one_b  # noqa: E402
from course_lib.pipeline.versions import (  # noqa: E402
    stashing_version,
    stashing_versions_held,
    two_bw_version,
    weight_versions,
)

LABEL = {v: k for k, v in POLICY_LABELS.items()}


@pytest.fixture(scope="module")
def explorer() -> VersionsExplorer:
    return versions_explorer()


def _set(explorer, **values):
    for name, value in values.items():
        explorer.controls[name].value = LABEL[value] if name == "policy" else value


@pytest.mark.parametrize("p", [2, 4, 7])
def test_stashing_rows_are_the_closed_forms(explorer, p):
    _set(explorer, policy="stashing", num_stages=p, microbatches_per_batch=4)
    total = NUM_BATCHES * 4
    for j in (0, p - 1, total - 1):
        _set(explorer, microbatch=j)
        r = explorer.last_metrics
        assert r["used"] == [stashing_version(s, j, p, total) for s in range(p)]
        assert r["held"] == stashing_versions_held(p).tolist()
        replay = weight_versions(one_f_one_b(p, total), "stashing")
        assert r["staleness"] == replay.staleness[:, j].tolist()


def test_2bw_raises_m_to_p_and_uses_one_version_per_batch(explorer):
    _set(explorer, policy="2bw", num_stages=6, microbatches_per_batch=3, microbatch=13)
    r = explorer.last_metrics
    assert r["m"] == 6
    assert r["used"] == [two_bw_version(13, 6)] * 6 == [1] * 6
    assert r["held"] == [2] * 6
    assert "raised to 6" in explorer.metrics.value


def test_flushed_is_one_version_per_step_and_never_stale(explorer):
    _set(explorer, policy="flushed", num_stages=4, microbatches_per_batch=4, microbatch=9)
    r = explorer.last_metrics
    assert r["used"] == [2] * 4 and r["staleness"] == [0] * 4 and r["held"] == [1] * 4
    assert "yes" in explorer.metrics.value


def test_a_microbatch_past_the_stream_is_clamped(explorer):
    _set(explorer, policy="stashing", num_stages=2, microbatches_per_batch=2, microbatch=23)
    assert explorer.last_metrics["microbatch"] == NUM_BATCHES * 2 - 1
    assert "showing microbatch 5" in explorer.metrics.value


@pytest.mark.parametrize(
    "control, value",
    [("policy", "2bw"), ("num_stages", 5), ("microbatches_per_batch", 6), ("microbatch", 7)],
)
def test_every_control_changes_the_image_and_the_metrics(explorer, control, value):
    _set(explorer, policy="stashing", num_stages=4, microbatches_per_batch=4, microbatch=5)
    image, metrics = bytes(explorer.image.value), explorer.metrics.value
    assert image.startswith(b"\x89PNG")
    _set(explorer, **{control: value})
    assert bytes(explorer.image.value) != image
    assert explorer.metrics.value != metrics
    assert math.isfinite(explorer.last_update_ms) and explorer.last_update_ms > 0


def test_a_cached_background_redraws_the_same_pixels_as_a_fresh_explorer():
    """Back to a setting seen before: the image equals a fresh explorer's at that setting."""
    warm = versions_explorer(policy="stashing", num_stages=4, microbatches_per_batch=4)
    _set(warm, num_stages=8, microbatch=9)
    _set(warm, num_stages=4, microbatch=9)
    fresh = versions_explorer(
        policy="stashing", num_stages=4, microbatches_per_batch=4, microbatch=9
    )
    a = np.asarray(warm._canvas.buffer_rgba())
    b = np.asarray(fresh._canvas.buffer_rgba())
    np.testing.assert_array_equal(a, b)


def test_stream_model_matches_the_replay():
    model = stream("stashing", 3, 4)
    replay = weight_versions(one_f_one_b(3, 12), "stashing")
    np.testing.assert_array_equal(model["used"], replay.forward)
    np.testing.assert_array_equal(model["held"], replay.held)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="policy"):
        versions_explorer(policy="async")
    with pytest.raises(ValueError, match="num_stages"):
        versions_explorer(num_stages=9)
    with pytest.raises(ValueError, match="microbatches_per_batch"):
        versions_explorer(microbatches_per_batch=1)
