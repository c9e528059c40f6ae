"""Two cheap facts verification leans on: parts already verified, and who holds a lock."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from capevolve._store import jsonfiles, signing
from capevolve._store.lock import is_held


class PartCache:
    """Verified files by size, mtime, ctime, inode and sha256, beside the run keys."""

    def __init__(self, key_id: str | None) -> None:
        self.path = (signing.key_dir() / "verified" / f"{key_id}.json") if key_id else None
        self.entries: dict[str, list[Any]] = {}
        self.dirty = False
        if self.path is not None:
            try:
                data = jsonfiles.read(self.path)
                if isinstance(data, dict):
                    self.entries = data
            except (OSError, ValueError):
                pass

    def get(self, rel: str) -> list[Any] | None:
        return self.entries.get(rel)

    def put(self, rel: str, value: list[Any]) -> None:
        self.entries[rel] = value
        self.dirty = True

    def save(self) -> None:
        if self.path is None or not self.dirty:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            jsonfiles.write_atomic(self.path, self.entries)
        except OSError:
            pass  # a cache: the next verification hashes again


def other_process_holds(lock: Path) -> bool:
    """True when another process holds ``lock``'s flock, read from /proc/locks untouched."""
    if is_held(lock):
        return False
    try:
        inode = os.stat(lock).st_ino
        table = Path("/proc/locks").read_text()
    except OSError:
        return False
    for row in table.splitlines():
        fields = row.split()
        if len(fields) > 5 and fields[1] == "FLOCK" and fields[5].rsplit(":", 1)[-1] \
                == str(inode) and fields[4] != str(os.getpid()):
            return True
    return False
