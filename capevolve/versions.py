"""Versions of capevolve and the libraries that shape its numbers (recorded in run.json)."""

from __future__ import annotations

import platform
from importlib import metadata

LIBRARIES = ("capevolve", "duckdb", "numpy", "pyarrow", "pydantic", "ray", "scipy")


def versions() -> dict[str, str]:
    """Installed versions (``"not installed"`` where a library is absent)."""
    found = {"python": platform.python_version()}
    for name in LIBRARIES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found
