"""Unpack a shipped candidate (``{relative path: bytes}``) in a worker's scratch dir."""

from __future__ import annotations

import os
import shutil
from pathlib import Path, PurePosixPath

from capevolve.errors import EngineError


def unpack(files: dict[str, bytes], dest: Path) -> Path:
    """Write ``files`` under ``dest`` atomically, unless it exists; EngineError on an unsafe
    path."""
    if dest.is_dir():
        return dest
    tmp = dest.with_name(f"{dest.name}.{os.getpid()}.tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    for rel, data in files.items():
        parts = PurePosixPath(rel).parts
        if not parts or PurePosixPath(rel).is_absolute() or ".." in parts:
            shutil.rmtree(tmp, ignore_errors=True)
            raise EngineError(f"candidate file {rel!r}: not a relative path inside the candidate")
        target = tmp.joinpath(*parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    try:
        os.replace(tmp, dest)
    except OSError:  # another process won the race: theirs is identical
        shutil.rmtree(tmp, ignore_errors=True)
    return dest
