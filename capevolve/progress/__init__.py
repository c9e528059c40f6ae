"""Live progress of long commands: the hook verbs call and the display protocol."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol


class Display(Protocol):
    """What a progress display receives (every method must be cheap and never raise)."""

    def begin(self, label: str, total: int) -> None: ...

    def dispatched(self, label: str, n: int) -> None: ...

    def rows(self, label: str, rows: list[dict[str, Any]]) -> None: ...

    def end(self, label: str) -> None: ...


_ACTIVE: ContextVar[Display | None] = ContextVar("capevolve_progress", default=None)


def active() -> Display | None:
    """The display of the running command, if any."""
    return _ACTIVE.get()


@contextmanager
def observing(display: Display | None) -> Iterator[Display | None]:
    """Make ``display`` (None: no display) the active one for the block."""
    token = _ACTIVE.set(display)
    try:
        yield display
    finally:
        _ACTIVE.reset(token)


class Watch:
    """One evaluation's connection to the active display (a no-op without one), for an
    evaluation of ``total`` units."""

    def __init__(self, label: str, total: int) -> None:
        self.label, self.display = label, active()
        if self.display is not None:
            self.display.begin(label, total)

    def sink(self, inner: Callable[[list[dict[str, Any]]], int | None]
             ) -> Callable[[list[dict[str, Any]]], int | None]:
        """``inner`` (the engine's row sink), also reporting each batch it took; its answer is
        returned unchanged."""
        if self.display is None:
            return inner

        def reporting(rows: list[dict[str, Any]]) -> int | None:
            backlog = inner(rows)
            self.rows(rows)
            return backlog

        return reporting

    def ledger(self, inner: Any) -> Any:
        """``inner`` (the dispatch ledger), reporting the units handed out."""
        if self.display is None or inner is None:
            return inner
        return _CountingLedger(inner, self.display, self.label)

    def rows(self, rows: list[dict[str, Any]]) -> None:
        """Rows the sink has taken charge of."""
        if self.display is not None and rows:
            self.display.rows(self.label, rows)

    def __enter__(self) -> Watch:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.display is not None:
            self.display.end(self.label)


class _CountingLedger:
    """Reports units dispatched after the inner ledger records them."""

    def __init__(self, inner: Any, display: Display, label: str) -> None:
        self._inner, self._display, self._label, self._sent = inner, display, label, 0

    async def dispatched(self, units: list[Any]) -> None:
        await self._inner.dispatched(units)
        self._sent += len(units)
        self._display.dispatched(self._label, self._sent)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
