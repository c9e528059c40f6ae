"""Tests listed in known_failures.txt (one node id per line) are marked xfail, not strict:
they failed in a whole-suite run after every rollout moved into the sandbox and are not
yet triaged. A listed test that passes is reported XPASS; remove its line then."""
from __future__ import annotations

from pathlib import Path

import pytest

LISTED = {line.strip() for line in
          (Path(__file__).with_name("known_failures.txt")).read_text(encoding="utf-8").splitlines()
          if line.strip()}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.nodeid in LISTED:
            item.add_marker(pytest.mark.xfail(reason="known failure, not yet triaged",
                                              strict=False))
