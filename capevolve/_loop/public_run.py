"""The public run directory: the store's RunDir whose primitives obey the gate's rules.

``capevolve.RunDir`` is this class. Its ``set_best`` is the accept verb (a passing,
non-exploratory full-val gate against the current best, the iteration budget, one decision
per candidate and best, an ``accept`` record and one iteration spent), so the Python API
has no way around the rules that the CLI has not. ``snapshot``, ``log_event``,
``update_spent`` and ``spent`` are the store's, which already refuse what they must.
"""

from __future__ import annotations

from typing import Any

from capevolve._store.rundir import RunDir as StoreRunDir
from capevolve.errors import RecordError


class RunDir(StoreRunDir):
    """A run directory (open with :meth:`open`); see the module docstring."""

    def set_best(self, candidate_id: str, **fields: Any) -> None:
        """Make ``candidate_id`` the best through :func:`capevolve.accept`; ``note`` (or
        ``reason``) is recorded as the accept's note. Refused exactly when accept is."""
        note = fields.pop("note", None) or fields.pop("reason", None)
        if fields:
            raise RecordError(f"set_best: unknown fields {sorted(fields)}; only note")
        from capevolve._loop.decide import accept  # on use: `import capevolve` stays cheap

        accept(self, candidate_id, note=note)


def public(run: StoreRunDir) -> RunDir:
    """``run`` as the public class (the same directory, opened read-only)."""
    return run if isinstance(run, RunDir) else RunDir.open(run.root)
