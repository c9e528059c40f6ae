"""User code is compiled from its (fingerprinted) sources, never from cached bytecode.

Candidate code can plant ``__pycache__/<module>.pyc`` beside a project scorer;
:func:`source_only_user_code` installs, once per process and before any project code is
imported, a finder that loads every module outside the standard library, site-packages and
capevolve from source without reading or writing bytecode. It closes this route only: the
fingerprint catches edits of the project's files.
"""

from __future__ import annotations

import importlib.machinery
import sys
import sysconfig
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

_FRAMEWORK = Path(__file__).resolve().parents[1]


class SourceOnlyLoader(importlib.machinery.SourceFileLoader):
    """A source loader that never reads or writes bytecode (``path_stats`` fails, so
    ``get_code`` compiles the source and caches nothing)."""

    def path_stats(self, path: str) -> dict[str, int]:
        raise OSError("capevolve: user code is compiled from source")


def _library_roots() -> list[Path]:
    paths = sysconfig.get_paths()
    roots = {paths.get(key) for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    roots |= {p for p in sys.path if p.endswith("site-packages")}
    return [Path(r).resolve() for r in roots if r]


class _SourceOnlyFinder:
    """Finds user modules with :class:`SourceOnlyLoader` (see the module docstring)."""

    def __init__(self) -> None:
        self.trusted = [*_library_roots(), _FRAMEWORK]

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
    """Install the finder once per process (idempotent)."""
    if not any(isinstance(f, _SourceOnlyFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _SourceOnlyFinder())
