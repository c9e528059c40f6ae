"""Candidate capabilities: content hashes, immutable snapshots, protected-path checks."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from pathlib import Path

from capevolve.errors import CandidateError

IGNORED_NAMES = {"__pycache__", ".DS_Store", ".git"}


def iter_files(root: Path) -> list[Path]:
    """Every regular file under ``root`` (relative paths, sorted), skipping caches."""
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in IGNORED_NAMES)
        for name in filenames:
            if name in IGNORED_NAMES or name.endswith(".pyc"):
                continue
            files.append((Path(dirpath) / name).relative_to(root))
    return sorted(files, key=lambda p: p.as_posix())


def file_digests(root: Path) -> dict[str, str]:
    """sha256 of each file under ``root`` keyed by its posix relative path."""
    return {
        rel.as_posix(): hashlib.sha256((root / rel).read_bytes()).hexdigest()
        for rel in iter_files(root)
    }


def digests_hash(digests: dict[str, str]) -> str:
    """The content hash of a tree given its :func:`file_digests`."""
    digest = hashlib.sha256()
    for rel in sorted(digests):
        digest.update(rel.encode() + b"\0" + digests[rel].encode() + b"\n")
    return digest.hexdigest()


def content_hash(root: Path) -> str:
    """A sha256 over every file's relative path and bytes: equal iff the trees are equal."""
    root = Path(root)
    if not root.is_dir():
        raise CandidateError(f"candidate: {root} is not a directory")
    return digests_hash(file_digests(root))


def copy_readonly(src: Path, dest: Path) -> None:
    """Copy the tree ``src`` to the new directory ``dest`` and make every file read-only."""
    tmp = dest.with_name(dest.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    for rel in iter_files(src):
        target = tmp / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src / rel, target)
        target.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    os.replace(tmp, dest)


def pack(root: Path) -> dict[str, bytes]:
    """The files of a candidate as ``{relative path: bytes}`` (to ship to remote workers)."""
    return {rel.as_posix(): (root / rel).read_bytes() for rel in iter_files(root)}


def unpack(files: dict[str, bytes], dest: Path) -> Path:
    """Materialise a packed candidate at ``dest`` (atomic; a no-op when already there)."""
    if dest.is_dir():
        return dest
    tmp = dest.with_name(f"{dest.name}.{os.getpid()}.tmp")
    for rel, data in files.items():
        target = tmp / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        os.replace(tmp, dest)
    except OSError:  # another process won the race: theirs is identical
        shutil.rmtree(tmp, ignore_errors=True)
    return dest

