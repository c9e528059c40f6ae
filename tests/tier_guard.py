"""Test tiers are marked honestly: Ray only in ``ray`` tests, slow tests named.

``make test-fast`` deselects ``ray``, ``slow``, ``cluster``, ``llm`` and ``browser``; it is
only fast if the marks are true, so (loaded by tests/conftest.py):

- a test that requests the ``ray_session`` fixture without ``@pytest.mark.ray`` (or
  ``cluster``) is a collection error;
- a test not so marked that leaves Ray initialised in this process fails;
- tests that took longer than ``SLOW_S`` without ``@pytest.mark.slow`` are listed at the
  end of the run (a warning: timings vary with the machine's load, marks must not).
"""

from __future__ import annotations

import sys

import pytest

SLOW_S = 5.0
RAY_MARKS = ("ray", "cluster")
_unmarked_slow: list[tuple[str, float]] = []


def _ray_marked(item: pytest.Item) -> bool:
    return any(item.get_closest_marker(name) for name in RAY_MARKS)


def _ray_up() -> bool:
    ray = sys.modules.get("ray")  # never import Ray just to ask
    return bool(ray is not None and ray.is_initialized())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Refuse a test that uses the session Ray without the ``ray`` mark."""
    unmarked = [item.nodeid for item in items
                if "ray_session" in getattr(item, "fixturenames", ()) and not _ray_marked(item)]
    if unmarked:
        raise pytest.UsageError("uses the ray_session fixture but is not marked "
                                f"@pytest.mark.ray: {', '.join(unmarked)}")


@pytest.fixture(autouse=True)
def ray_only_in_ray_tests(request: pytest.FixtureRequest):
    """Fail a test not marked ``ray`` / ``cluster`` that started Ray in this process."""
    if _ray_marked(request.node):
        yield
        return
    before = _ray_up()
    yield
    if not before and _ray_up():
        pytest.fail(f"{request.node.nodeid} started Ray but is not marked @pytest.mark.ray",
                    pytrace=False)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Remember unmarked tests whose call phase took longer than SLOW_S."""
    if report.when == "call" and report.duration > SLOW_S and "slow" not in report.keywords:
        _unmarked_slow.append((report.nodeid, report.duration))


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    """List the unmarked slow tests, slowest first."""
    if not _unmarked_slow:
        return
    terminalreporter.section(f"tests over {SLOW_S:g} s not marked slow")
    for nodeid, seconds in sorted(_unmarked_slow, key=lambda t: -t[1]):
        terminalreporter.line(f"{seconds:6.1f}s {nodeid}")
