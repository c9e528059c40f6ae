"""A module that is imported when one of its names is first used, not when it is bound."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class LazyModule:
    """The stand-in for a module named ``name``: attribute access imports it first."""

    __slots__ = ("_name", "_loaded")

    def __init__(self, name: str) -> None:
        self._name = name
        self._loaded: ModuleType | None = None

    def _module(self) -> ModuleType:
        """The module itself (imported now if it is not yet; kept once imported, so a read
        in a hot loop costs one attribute lookup more than the eager import's)."""
        loaded = self._loaded
        if loaded is None:
            loaded = self._loaded = importlib.import_module(self._name)
        return loaded

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._module(), attr)

    def __dir__(self) -> list[str]:
        return dir(self._module())

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}>"


def lazy_module(name: str) -> Any:
    """A :class:`LazyModule` for the absolute module ``name`` (typed ``Any``: bind the real
    module under ``TYPE_CHECKING`` for the checker)."""
    return LazyModule(name)
