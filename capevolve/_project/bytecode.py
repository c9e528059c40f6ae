"""User code is compiled from its sources, never from cached bytecode (candidate code could
plant ``__pycache__/<module>.pyc`` beside a project scorer).
"""

from __future__ import annotations

import importlib.machinery
import sys
import sysconfig
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

FRAMEWORK = Path(__file__).resolve().parents[1]
"""capevolve itself."""


class SourceOnlyLoader(importlib.machinery.SourceFileLoader):
    """A source loader that never reads or writes bytecode."""

    def path_stats(self, path: str) -> dict[str, int]:
        raise OSError("capevolve: user code is compiled from source")


def library_roots() -> list[Path]:
    """The interpreter's standard library and installed-package directories."""
    paths = sysconfig.get_paths()
    roots = {paths.get(key) for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    roots |= {p for p in sys.path if p.rstrip("/").endswith(("site-packages", "dist-packages"))}
    return [Path(r).resolve() for r in roots if r]


class _SourceOnlyFinder:
    def __init__(self) -> None:
        self.trusted = [*library_roots(), FRAMEWORK]

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or not isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            return spec
        origin = Path(str(spec.origin)).resolve()
        if any(origin == root or root in origin.parents for root in self.trusted):
            return spec
        spec.loader = SourceOnlyLoader(fullname, str(origin))
        return spec


def source_only_user_code() -> None:
    """Install the source-only finder before project code is imported (idempotent)."""
    if not any(isinstance(f, _SourceOnlyFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _SourceOnlyFinder())
