"""Units handed out whose spend is not recorded yet, from dispatch journals only (no Arrow)."""

from __future__ import annotations

from capevolve._store.journal.dispatch import SUFFIX, read_dispatch
from capevolve._store.layout import Layout
from capevolve.errors import StoreError


def unsettled(layout: Layout) -> int:
    """Units of running or dead sessions whose spend is not recorded yet."""
    if not layout.journal.is_dir():
        return 0
    total = 0
    for path in sorted(layout.journal.glob(f"*{SUFFIX}")):
        try:
            total += read_dispatch(path).units
        except (OSError, StoreError):
            continue
    return total
