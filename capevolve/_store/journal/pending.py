"""Units handed out whose spend is not recorded yet, read from the dispatch journal only.

A light module (no Arrow): ``capevolve status`` counts them without loading the row
segments that :mod:`capevolve._store.journal.recover` settles.
"""

from __future__ import annotations

from capevolve._store.journal.dispatch import SUFFIX, read_dispatch
from capevolve._store.layout import Layout
from capevolve.errors import StoreError


def unsettled(layout: Layout) -> int:
    """Units handed out by sessions whose spend is not recorded yet (read-only): a
    session running now, or one that died and is settled by the next evaluate."""
    if not layout.journal.is_dir():
        return 0
    total = 0
    for path in sorted(layout.journal.glob(f"*{SUFFIX}")):
        try:
            total += read_dispatch(path).units
        except (OSError, StoreError):
            continue
    return total
