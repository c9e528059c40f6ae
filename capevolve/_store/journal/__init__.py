"""Journals of one evaluate session, so that a driver killed at any moment loses only what
was in flight and never spends what is not counted.

A *session* is one run of the engine for one evaluation (one ``evaluate`` invocation),
named by a random token. It keeps two journals under ``<run>/journal/``:

- ``<token>.dispatch`` (:mod:`.dispatch`): JSON lines, a header naming the evaluation,
  then one line per batch of units in the order they go out, fsynced (group-committed
  across workers) *before* the dispatcher hands the batch to a worker. A torn last line was
  never acknowledged, so its units were never dispatched.
- ``<token>-<n>.rows`` (:mod:`capevolve._store.rollouts.segments`): finished rows as Arrow
  IPC record batches, fsynced in small batches (group-committed: each batch as the part
  writer's thread takes it, rows queued meanwhile sharing the next fsync) by the
  part writer's thread (:class:`capevolve._store.rollouts.writer.PartWriter`) and
  compacted into a Parquet part of the session (``<eval_id>-<token>-<seq>.parquet``)
  every few thousand rows or seconds; a segment is removed once its rows are in a
  recorded part.

When the session ends, its spend is recorded once (a ``spend`` event naming the session)
and its journal files are removed. When it dies, the next command that takes the run lock
runs :func:`recover`: rows of the leftover segments that no part of the session holds
become one more part (recorded with its sha256), the spend is settled from the journals
(every dispatched unit counts as a metric call; the tokens and cost of the rows on disk;
units without a row have an unknown cost) and the files are removed. Settling twice
records nothing twice: the ``spend`` event names its session.

Modules: :mod:`.dispatch` (the dispatch journal), :mod:`.recover` (settling and
recovery); the row segments live with the rollouts
(:mod:`capevolve._store.rollouts.segments`).
"""
