"""Compaction: a complete evaluation's parts become one or a few, same rows in the same order.

Steps, each durable before the next: new parts under temporary names, intent, renames, signed
``parts_compacted`` event, old parts removed, intent removed. :func:`settle` ends a killed one.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import pyarrow as pa

from capevolve._store.compact_intent import Intent, intent_path, read_intents, write_intent
from capevolve._store.durable import fsync_dir
from capevolve._store.integrity import recorded_parts, relative, sha256_file
from capevolve._store.lazy import pc, pq
from capevolve._store.rollouts import arrowpool
from capevolve._store.rollouts.schema import ROLLOUT_SCHEMA
from capevolve._store.rollouts.writer import session_token
from capevolve._store.rundir import RunDir
from capevolve.errors import StoreError
from capevolve.kinds import EvalStatus, EventKind
from capevolve.records import CompactedPart, EvalFinished, EvalRecord, PartsCompacted

MAX_ROWS = 4_000_000
"""Rows per compacted file at most."""
ROW_GROUP_ROWS = 8_192
"""Rows per row group; one group is decoded at a time, bounding memory."""
READ_ROWS = 8_192
"""Rows read at a time."""
TMP_SUFFIX = ".compacting"
"""Suffix of a new part's temporary name ``.<name>``, which no reader takes for a part."""

_one_at_a_time = threading.Lock()  # one compaction per process (threads share a run lock)
running: set[str] = set()
"""Tokens of this process's running compactions."""


@dataclass(frozen=True)
class Compaction:
    """What one compaction did."""

    eval_id: str
    retired: int
    """Old parts replaced."""
    parts: list[Path]
    """The new parts."""
    rows: int


def _tmp(final: Path) -> Path:
    return final.with_name(f".{final.name}{TMP_SUFFIX}")


def _sources(run: RunDir, eval_id: str, split: str, candidate_id: str) -> list[Path] | None:
    """The evaluation's parts, sorted, when each is recorded and unchanged; else None."""
    directory = run.layout.partition(split, candidate_id)
    parts = sorted(p for p in directory.glob(f"{eval_id}-*.parquet") if p.is_file()) \
        if directory.is_dir() else []
    if len(parts) < 2:
        return parts
    recorded, _ = recorded_parts(run.events())
    records = [recorded.get(relative(run.root, part)) for part in parts]
    if all(isinstance(r, CompactedPart) for r in records):
        return []  # compacted already (an evaluation of more than MAX_ROWS rows)
    for part, record in zip(parts, records, strict=True):
        if record is None or part.stat().st_size != record.size \
                or sha256_file(part) != record.sha256:
            return None
    return parts


def _batches(part: Path, eval_id: str, candidate_id: str) -> Iterator[pa.Table]:
    """``part``'s rows that count for the evaluation, in order."""
    pool = arrowpool.POOL
    for batch in arrowpool.part_batches(part, READ_ROWS):
        keep = pc.and_(pc.equal(batch["eval_id"], eval_id, memory_pool=pool),
                       pc.equal(batch["candidate_id"], candidate_id, memory_pool=pool),
                       memory_pool=pool)
        if keep.null_count or not pc.all(keep, memory_pool=pool).as_py():
            batch = pc.filter(batch, keep, memory_pool=pool)
        rows = pa.Table.from_batches([batch]).cast(ROLLOUT_SCHEMA)
        if rows.num_rows:
            yield rows


class _Files:
    """New parts under temporary names, rolled over every MAX_ROWS rows."""

    def __init__(self, directory: Path, eval_id: str, token: str) -> None:
        self.directory, self.eval_id, self.token = directory, eval_id, token
        self.finals: list[Path] = []
        self.rows: list[int] = []
        self._writer: pq.ParquetWriter | None = None
        self._fh: BinaryIO | None = None

    def write(self, table: pa.Table) -> None:
        """Append ``table`` as a row group; a new file past MAX_ROWS."""
        if self._writer is None or self.rows[-1] + table.num_rows > MAX_ROWS:
            self.close()
            final = self.directory / f"{self.eval_id}-{self.token}-{len(self.finals):05d}.parquet"
            self.finals.append(final)
            self.rows.append(0)
            self._fh = open(_tmp(final), "wb")  # noqa: SIM115 - closed by close()
            self._writer = pq.ParquetWriter(self._fh, ROLLOUT_SCHEMA, compression="zstd")
        self._writer.write_table(table, row_group_size=ROW_GROUP_ROWS)
        self.rows[-1] += table.num_rows

    def close(self) -> None:
        if self._writer is not None and self._fh is not None:
            self._writer.close()
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()
        self._writer = self._fh = None

    def remove(self) -> None:
        self.close()
        for final in self.finals:
            _tmp(final).unlink(missing_ok=True)


def _write(sources: list[Path], files: _Files, eval_id: str, candidate_id: str) -> bool:
    """Stream ``sources``' rows into ``files``; False for a part of another schema."""
    if not all(pq.read_schema(part).equals(ROLLOUT_SCHEMA, check_metadata=False)
               for part in sources):
        return False
    buffered: list[pa.Table] = []
    pending = 0
    for part in sources:
        for rows in _batches(part, eval_id, candidate_id):
            buffered.append(rows)
            pending += rows.num_rows
            while pending >= ROW_GROUP_ROWS:
                table = pa.concat_tables(buffered)
                files.write(table.slice(0, ROW_GROUP_ROWS))
                rest = table.slice(ROW_GROUP_ROWS)
                buffered, pending = ([rest] if rest.num_rows else []), rest.num_rows
    if buffered or not files.finals:
        files.write(pa.concat_tables(buffered) if buffered
                    else ROLLOUT_SCHEMA.empty_table())
    files.close()
    return True


def compact_evaluation(run: RunDir, eval_id: str, split: str,
                       candidate_id: str) -> Compaction | None:
    """Compact one evaluation; None for fewer than two parts or one not as recorded.

    A failed write keeps the old parts and raises StoreError.
    """
    with run.locked(), _one_at_a_time:
        sources = _sources(run, eval_id, split, candidate_id)
        if sources is None or len(sources) < 2:
            return None
        token = session_token()
        files = _Files(run.layout.partition(split, candidate_id), eval_id, token)
        running.add(token)
        try:
            return _commit(run, eval_id, candidate_id, sources, files)
        except OSError as exc:
            files.remove()
            intent_path(run.layout, token).unlink(missing_ok=True)
            raise StoreError(f"{files.directory}: cannot compact {eval_id} "
                             f"({exc.strerror or exc})") from None
        finally:
            running.discard(token)
            arrowpool.release_unused()  # the batches' and the encoder's memory


def _commit(run: RunDir, eval_id: str, candidate_id: str, sources: list[Path],
            files: _Files) -> Compaction | None:
    if not _write(sources, files, eval_id, candidate_id):
        files.remove()
        return None
    targets = [CompactedPart(path=relative(run.root, f), sha256=sha256_file(_tmp(f)),
                             size=_tmp(f).stat().st_size, n_rows=n)
               for f, n in zip(files.finals, files.rows, strict=True)]
    retired = [relative(run.root, p) for p in sources]
    write_intent(run.layout, Intent(token=files.token, eval_id=eval_id, sources=retired,
                                    targets=targets))
    for final in files.finals:
        os.replace(_tmp(final), final)
    fsync_dir(files.directory)
    run.record(EventKind.PARTS_COMPACTED, eval_id=eval_id, retired=retired, parts=targets)
    _retire(run, retired)
    intent_path(run.layout, files.token).unlink(missing_ok=True)
    return Compaction(eval_id, len(sources), list(files.finals), sum(files.rows))


def _retire(run: RunDir, retired: list[str]) -> None:
    """Remove retired parts, last path first, durably."""
    directories = set()
    for rel in sorted(retired, reverse=True):
        path = run.root / rel
        path.unlink(missing_ok=True)
        directories.add(path.parent)
    for directory in directories:
        if directory.is_dir():
            fsync_dir(directory)


def compact_completed(run: RunDir, record: EvalRecord) -> Compaction | None:
    """Compact a just-finished evaluation if it is complete; a StoreError gives None."""
    if record.status != EvalStatus.COMPLETE or record.refused:
        return None
    try:
        return compact_evaluation(run, record.eval_id, str(record.split), record.candidate_id)
    except StoreError:
        return None


def settle(run: RunDir) -> list[str]:
    """Finish or undo compactions a dead process left, then compact every complete evaluation;
    returns their eval ids."""
    done: list[str] = []
    with run.locked(), _one_at_a_time:
        for path, intent in read_intents(run.layout):
            _settle_one(run, path, intent)
            done.append(intent.eval_id)
        if run.layout.rollouts.is_dir():  # killed before its intent was written
            for tmp in run.layout.rollouts.glob(f"split=*/candidate=*/.*{TMP_SUFFIX}"):
                tmp.unlink(missing_ok=True)
    # the last word on each evaluation, from the log (a record holds a mean per task)
    finished: dict[str, EvalFinished] = {}
    for event in run.events(EventKind.EVAL_FINISHED):
        if isinstance(event, EvalFinished):
            finished[event.eval_id] = event
    with run.locked():
        for eval_id, event in sorted(finished.items()):
            if event.status == EvalStatus.COMPLETE and compact_evaluation(
                    run, eval_id, str(event.split), event.candidate_id) is not None:
                done.append(eval_id)
    return done


def _settle_one(run: RunDir, path: Path, intent: Intent) -> None:
    committed = any(isinstance(e, PartsCompacted) and e.eval_id == intent.eval_id
                    and [p.path for p in e.parts] == [t.path for t in intent.targets]
                    for e in run.events(EventKind.PARTS_COMPACTED))
    recorded, retired = recorded_parts(run.events())
    if committed:  # killed while removing the old parts: remove the rest
        _retire(run, [s for s in intent.sources if s in retired and s not in recorded])
    else:  # killed before the record: the old parts stay, the new ones go
        for target in intent.targets:
            final = run.root / target.path
            _tmp(final).unlink(missing_ok=True)
            if target.path not in recorded:
                final.unlink(missing_ok=True)
    path.unlink(missing_ok=True)
    fsync_dir(path.parent)
