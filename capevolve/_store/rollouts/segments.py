"""Row journal segments: Arrow IPC streams of rollout rows, fsynced in batches. Reading keeps
every complete batch, so synced rows survive a torn tail.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa

from capevolve._store.durable import fsync_dir
from capevolve._store.rollouts.schema import ROLLOUT_SCHEMA
from capevolve.errors import StoreError

SUFFIX = ".rows"


def segment_path(journal_dir: Path, session: str, number: int) -> Path:
    """The path of a session's segment ``number``."""
    return Path(journal_dir) / f"{session}-{number:05d}{SUFFIX}"


class Segment:
    """One open segment, created exclusively with a durable directory entry."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "xb")  # noqa: SIM115 - closed by close()
            self._stream = pa.ipc.new_stream(self._file, ROLLOUT_SCHEMA)
            self._file.flush()
            fsync_dir(self.path.parent)
        except OSError as exc:
            raise StoreError(f"{self.path}: cannot write the row journal "
                             f"({exc.strerror or exc})") from None

    def append(self, table: pa.Table) -> None:
        """Write ``table``'s rows; durable only after :meth:`sync`."""
        try:
            self._stream.write_table(table)
        except OSError as exc:
            raise StoreError(f"{self.path}: cannot write the row journal "
                             f"({exc.strerror or exc})") from None

    def sync(self) -> None:
        """Make every appended row durable."""
        try:
            self._file.flush()
            os.fsync(self._file.fileno())
        except OSError as exc:
            raise StoreError(f"{self.path}: cannot write the row journal "
                             f"({exc.strerror or exc})") from None

    def close(self) -> None:
        """Close the file, ignoring errors; idempotent."""
        try:
            self._stream.close()
        except (OSError, ValueError):
            pass
        try:
            self._file.close()
        except OSError:
            pass

    def remove(self) -> None:
        """Close and delete the segment once its rows are in a recorded part."""
        self.close()
        self.path.unlink(missing_ok=True)


def read_segment(path: Path) -> pa.Table:
    """Every complete record batch of a segment."""
    batches: list[pa.RecordBatch] = []
    schema = ROLLOUT_SCHEMA
    try:
        with pa.OSFile(str(path)) as source:
            reader = pa.ipc.open_stream(source)
            schema = reader.schema
            while True:
                try:
                    batches.append(reader.read_next_batch())
                except StopIteration:
                    break
    except (OSError, pa.ArrowInvalid):
        pass  # a torn tail (or a header never synced): keep what is complete
    return pa.Table.from_batches(batches, schema=schema)
