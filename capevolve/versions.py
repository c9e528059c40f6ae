"""Versions of capevolve and the libraries that shape its numbers."""

from __future__ import annotations

import platform
from importlib import metadata

LIBRARIES = ("capevolve", "duckdb", "numpy", "pyarrow", "pydantic", "ray", "scipy")


def versions() -> dict[str, str]:
    """Installed versions; ``"not installed"`` for an absent library."""
    found = {"python": platform.python_version()}
    for name in LIBRARIES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found
