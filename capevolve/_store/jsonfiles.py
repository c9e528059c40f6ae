"""Persisting JSON documents: canonical form, atomic replace, append-only logs."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def dumps(obj: Any, indent: int | None = 2) -> str:
    """JSON with sorted keys: equal data, identical bytes."""
    return json.dumps(obj, indent=indent, sort_keys=True, ensure_ascii=False, allow_nan=False)


def write_atomic(path: Path, obj: Any, *, indent: int | None = 2,
                 sync: bool = True) -> None:
    """:func:`write_bytes_atomic` of ``obj`` as JSON."""
    write_bytes_atomic(Path(path), (dumps(obj, indent) + "\n").encode("utf-8"), sync=sync)


def write_bytes_atomic(path: Path, data: bytes, *, sync: bool = True) -> None:
    """Write via a temporary name, fsync unless ``sync=False``, rename; a failure keeps the old."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            if sync:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def read(path: Path) -> Any:
    """Read a JSON document."""
    return json.loads(Path(path).read_text(encoding="utf-8"))


def append_line(path: Path, obj: Any) -> None:
    """Append one JSON line in a single fsynced ``write``, after a newline if one is missing."""
    data = (json.dumps(obj, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n").encode()
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
