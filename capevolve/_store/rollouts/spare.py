"""An in-memory DuckDB database made ahead of the query that will use it.

Every query of the store opens a fresh in-memory DuckDB database (its confinement is
locked per database, :mod:`capevolve._store.rollouts.confine`), and making one takes
about 11 ms (catalog, built-in extensions, thread pool), with the GIL released. When the
caller knows a query comes next and has something to wait for first (an evaluation's
session end waits for its last part's fsyncs, then the summary reads the rows),
:func:`make_ahead` starts making one in a background thread, and the next
:meth:`~capevolve._store.rollouts.query.RolloutStore.connect` of the process takes it
(:func:`take`, which waits for it if it is still being made).

The database is plain ``duckdb.connect(":memory:")``, never used before it is taken:
``connect`` applies its view, settings and confinement exactly as to a new one. At most
one is made ahead at a time; a failure to make it leaves the next query to make its own.
The process's exit waits for a database being made (never a native abort at exit).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from capevolve._lazy import lazy_module

if TYPE_CHECKING:
    import duckdb
else:  # imported at first use (in the maker thread when made ahead)
    duckdb = lazy_module("duckdb")

_lock = threading.Lock()
_maker: threading.Thread | None = None
_made: list[duckdb.DuckDBPyConnection] = []


def make_ahead() -> None:
    """Start making one database for the next query (a no-op when one is made or being
    made)."""
    global _maker
    with _lock:
        if _maker is not None or _made:
            return
        # not a daemon: the interpreter's exit waits for it. A daemon thread still inside
        # duckdb.connect when the process exits is unwound by force through DuckDB's C++
        # frames, and the process aborts ("terminate called without an active exception")
        _maker = threading.Thread(target=_make, name="duckdb-ahead", daemon=False)
        _maker.start()


def _make() -> None:
    try:
        con = duckdb.connect(":memory:")
    except Exception:  # noqa: BLE001 - the next query makes its own (and reports why)
        return
    with _lock:
        _made.append(con)


def take() -> duckdb.DuckDBPyConnection | None:
    """The database made ahead (waiting for it while it is being made), or None."""
    global _maker
    with _lock:
        maker, _maker = _maker, None
    if maker is not None:
        maker.join()
    with _lock:
        return _made.pop() if _made else None
