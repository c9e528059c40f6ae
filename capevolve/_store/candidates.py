"""Candidate capabilities: the files a snapshot holds, content hashes, atomic snapshots."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from capevolve._store import jsonfiles
from capevolve._store.durable import fsync_dir
from capevolve.errors import CandidateError

IGNORED_NAMES = {"__pycache__", ".DS_Store", ".git"}
MAX_FILES = 20_000
"""More files than this is not a capability directory."""
MAX_BYTES = 1 << 30
"""Nor is more than this many bytes."""
STAGING = ".staging"
"""Where snapshots are built inside ``candidates/`` before the rename."""


def _shown(path: Path | str) -> str:
    """A path for an error line, non-UTF-8 bytes escaped."""
    return os.fsencode(os.fspath(path)).decode("utf-8", "backslashreplace")


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _check_name(path: Path, name: str) -> None:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise CandidateError(f"candidate: {_shown(path)}: the file name is not UTF-8; "
                             "rename it") from None


def _follow(link: Path, root_real: str) -> str:
    """A symlink's real target; CandidateError when it dangles or leaves the candidate."""
    try:
        target = os.path.realpath(link, strict=True)
    except (OSError, RuntimeError):
        raise CandidateError(f"candidate: {_shown(link)}: a symlink that dangles (its "
                             "target does not exist or loops); remove it") from None
    if not _inside(target, root_real):
        raise CandidateError(f"candidate: {_shown(link)}: a symlink to {_shown(target)}, "
                             "outside the candidate; copy the file in instead")
    return target


def iter_files(root: Path) -> list[Path]:
    """Every file under ``root`` (relative, sorted), symlinks inside followed; CandidateError
    for a non-UTF-8 name, an escaping or looping symlink, a special file, or too much."""
    root = Path(root)
    _check_name(root, os.fspath(root))
    root_real = os.path.realpath(root)
    files: list[Path] = []
    total = 0
    # (real directory, its path relative to root, the real directories above it)
    stack: list[tuple[str, Path, tuple[str, ...]]] = [(root_real, Path(), (root_real,))]
    while stack:
        real_dir, rel_dir, chain = stack.pop()
        try:
            entries = sorted(os.scandir(real_dir), key=lambda e: e.name)
        except OSError as exc:
            raise CandidateError(f"candidate: {_shown(root / rel_dir)}: cannot list "
                                 f"({exc.strerror})") from None
        for entry in entries:
            rel, shown = rel_dir / entry.name, root / rel_dir / entry.name
            if entry.name in IGNORED_NAMES or entry.name.endswith(".pyc"):
                continue
            _check_name(shown, entry.name)
            real = _follow(shown, root_real) if entry.is_symlink() else entry.path
            try:
                info = os.stat(real)
            except OSError as exc:
                raise CandidateError(f"candidate: {_shown(shown)}: cannot read "
                                     f"({exc.strerror})") from None
            if stat.S_ISDIR(info.st_mode):
                if real in chain:
                    raise CandidateError(f"candidate: {_shown(shown)}: a symlink to a "
                                         "directory that holds it (a loop); remove it")
                stack.append((real, rel, (*chain, real)))
            elif stat.S_ISREG(info.st_mode):
                files.append(rel)
                total += info.st_size
            else:
                raise CandidateError(f"candidate: {_shown(shown)}: not a regular file (a "
                                     "FIFO, socket or device); remove it")
            if len(files) > MAX_FILES or total > MAX_BYTES:
                raise CandidateError(f"candidate: {_shown(root)}: more than {MAX_FILES} "
                                     f"files or {MAX_BYTES >> 20} MiB: not a capability "
                                     "directory")
    return sorted(files, key=lambda p: p.as_posix())


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise CandidateError(f"candidate: {_shown(path)}: cannot read "
                             f"({exc.strerror})") from None


def file_digests(root: Path) -> dict[str, str]:
    """sha256 of each file, by relative posix path."""
    return {rel.as_posix(): hashlib.sha256(_read(root / rel)).hexdigest()
            for rel in iter_files(root)}


def digests_hash(digests: dict[str, str]) -> str:
    """The content hash of a tree given its :func:`file_digests`."""
    digest = hashlib.sha256()
    for rel in sorted(digests):
        digest.update(rel.encode() + b"\0" + digests[rel].encode() + b"\n")
    return digest.hexdigest()


def content_hash(root: Path) -> str:
    """sha256 over every file's path and bytes: equal iff the trees are."""
    root = Path(root)
    if not root.is_dir():
        raise CandidateError(f"candidate: {root} is not a directory")
    return digests_hash(file_digests(root))


def copy_readonly(src: Path, dest: Path) -> None:
    """Copy :func:`iter_files` of ``src`` into the new ``dest``, each file read-only."""
    dest.mkdir(parents=True)
    for rel in iter_files(src):
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src / rel, target)
        target.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)


def _remove_tree(path: Path) -> None:
    """Remove a possibly read-only tree, if present."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)


def install_snapshot(src: Path, dest: Path, digest: str,
                     describe: Callable[[dict[str, str]], dict[str, Any]]) -> dict[str, str]:
    """Snapshot ``src`` atomically as ``dest`` (``files/``, ``candidate.json``); return digests."""
    dest = Path(dest)
    staging = dest.parent / STAGING / f"{dest.name}.{os.getpid()}"
    _remove_tree(dest.parent / STAGING)  # what a dead snapshot left
    if dest.exists() and not (dest / "candidate.json").is_file():
        _remove_tree(dest)
    try:
        staging.parent.mkdir(parents=True, exist_ok=True)
        copy_readonly(src, staging / "files")
        digests = file_digests(staging / "files")
        if digests_hash(digests) != digest:
            raise CandidateError(f"candidate: {_shown(src)} changed while it was being "
                                 "copied")
        jsonfiles.write_atomic(staging / "candidate.json", describe(digests))
        fsync_dir(staging)
        os.replace(staging, dest)
        fsync_dir(dest.parent)
    except OSError as exc:
        raise CandidateError(f"candidate: cannot snapshot {_shown(src)}: "
                             f"{_shown(exc.filename or dest)}: {exc.strerror}") from None
    finally:
        _remove_tree(dest.parent / STAGING)
    return digests


def pack(root: Path) -> dict[str, bytes]:
    """A candidate's files as ``{relative path: bytes}``."""
    return {rel.as_posix(): (root / rel).read_bytes() for rel in iter_files(root)}

