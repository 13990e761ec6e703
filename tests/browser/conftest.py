"""Browser tests: skipped, with the reason in pytest's -ra summary, when Chromium is missing.

Set COURSE_REQUIRE_BROWSER=1 (.ci/run does) to make a missing browser an error instead of a skip.
"""

from __future__ import annotations

import os

import pytest

from tests.browser import harness


@pytest.fixture(scope="session", autouse=True)
def browser_available() -> None:
    """Skip (or, with COURSE_REQUIRE_BROWSER=1, fail) every browser test when Chromium is missing."""
    reason = harness.unavailable()
    if reason is None:
        return
    if os.environ.get("COURSE_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{reason}; COURSE_REQUIRE_BROWSER=1 requires them", pytrace=False)
    pytest.skip(reason)
