"""What a run's stored bytes must match: the recorded Parquet parts.

Every Parquet part under ``rollouts/`` is recorded when it is written
(:meth:`capevolve._store.rundir.RunDir.record_part`): a ``part_written`` event with its
path, size, sha256 and row count. This module computes those fields.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from capevolve.errors import RunDirError

_CHUNK = 1 << 20


def sha256_file(path: Path) -> str:
    """sha256 of a file's bytes, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def relative(root: Path, path: Path) -> str:
    """``path`` relative to the run dir ``root`` (POSIX); RunDirError when outside it."""
    try:
        return Path(path).resolve().relative_to(Path(root).resolve()).as_posix()
    except ValueError:
        raise RunDirError(f"{path}: not inside the run dir {root}") from None


def part_fields(root: Path, path: Path, n_rows: int) -> dict[str, Any]:
    """The fields of a ``part_written`` event for the part at ``path``.

    The row count in the Parquet footer must equal ``n_rows`` (what the writer wrote).
    """
    try:
        footer_rows = pq.ParquetFile(path).metadata.num_rows
        size = path.stat().st_size
        digest = sha256_file(path)
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise RunDirError(f"{path}: cannot record the part ({exc})") from None
    if footer_rows != n_rows:
        raise RunDirError(f"{path}: holds {footer_rows} rows, the writer wrote {n_rows}")
    return {"path": relative(root, path), "sha256": digest, "size": size, "n_rows": n_rows}
