"""One run of the engine for one evaluation, with its journals."""

from __future__ import annotations

import time
from typing import Any

from capevolve._engine.contract import RowBatch
from capevolve._loop.guard import EvaluationGuard
from capevolve._store.journal import recover as journal
from capevolve._store.journal.dispatch import DispatchJournal
from capevolve._store.rollouts import arrowpool
from capevolve._store.rollouts.evalrows import eval_rows
from capevolve._store.rollouts.writer import PartWriter, RowTally, session_token
from capevolve._store.rundir import RunDir
from capevolve.errors import StoreError


class Session:
    """The journals, writer and tally of one evaluation's engine run."""

    def __init__(self, run: RunDir, eval_id: str, split: str, candidate_id: str) -> None:
        self.run, self.eval_id, self.token = run, eval_id, session_token()
        journal.live_sessions.add(self.token)
        self.ledger = DispatchJournal(
            run.layout.journal / f"{self.token}.dispatch",
            {"session": self.token, "eval_id": eval_id, "split": split,
             "candidate_id": candidate_id})
        # sync_s=0: each batch is fsynced as it is taken (batches arriving meanwhile share
        # the next fsync), so rows held back by the dispatcher's bound wait the least
        self.writer = PartWriter(run.layout, split, candidate_id, eval_id, session=self.token,
                                 on_part=run.record_part, sync_s=0.0)
        self.t0 = time.monotonic()

    @property
    def tally(self) -> RowTally:
        """What the rows stored so far report."""
        return self.writer.tally

    def sink(self, rows: list[dict] | RowBatch) -> int:
        """The engine's RowSink: queue rows for the writer; returns the rows not yet durable."""
        if isinstance(rows, RowBatch):
            return self.writer.add_columns(rows.columns, len(rows))
        return self.writer.add(rows)

    def end(self, guard: EvaluationGuard, record: dict[str, Any]) -> StoreError | None:
        """Write every delivered row, check what candidate code touched, record the spend once
        and remove the journals; returns a write failure (the row journal then stays)."""
        failure: StoreError | None = None
        try:
            self.writer.close()
        except StoreError as exc:
            failure = exc
        arrowpool.release_unused()  # what the writer's tables freed goes back to the OS
        self.ledger.close()
        tampered = guard.documents_changed()  # before anything else is recorded
        try:
            journal.settle(self.run, self.token, self.ledger.units, self.tally,
                           time.monotonic() - self.t0, reconciled=False)
            if failure is None:
                journal.remove_session(self.run.layout, self.token)
        except OSError:
            pass  # the journals stay: the next command settles them
        finally:
            journal.live_sessions.discard(self.token)
        guard.check(record, self.writer.parts, tampered)
        return failure

    def on_disk(self, n_units: int) -> str:
        """How many units have a finished rollout on disk, in words."""
        parts = eval_rows(self.run.layout, self.eval_id).done_units()
        pending = journal.journalled_units(self.run.layout, self.token, self.eval_id) - parts
        where = (f" ({len(pending)} in the row journal, kept by the next command)"
                 if pending else "")
        return (f"{len(parts | pending)} of {n_units} units of {self.eval_id} have a finished "
                f"rollout on disk{where}")
