"""Modules imported when one of their names is first used."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class LazyModule:
    """Imports the module ``name`` on first attribute access."""

    __slots__ = ("_name", "_loaded")

    def __init__(self, name: str) -> None:
        self._name = name
        self._loaded: ModuleType | None = None

    def _module(self) -> ModuleType:
        """The module, imported once."""
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
    """A :class:`LazyModule` for ``name``, typed ``Any``: bind the real one under TYPE_CHECKING."""
    return LazyModule(name)
