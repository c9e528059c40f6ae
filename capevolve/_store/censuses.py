"""Checked censuses recorded as ``census/<name>.json``, never overwritten; buckets name targets."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from capevolve._store import jsonfiles
from capevolve.errors import ConfigError, RunDirError

_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")


def folder(run_root: Path) -> Path:
    return Path(run_root) / "census"


def bucket_problems(doc: dict[str, Any]) -> list[str]:
    """Why a census cannot be recorded: bucket names unique and non-empty, descriptions set."""
    problems, seen = [], set()
    for i, bucket in enumerate(doc.get("buckets", [])):
        name = bucket.get("name") if isinstance(bucket, dict) else None
        text = bucket.get("description") if isinstance(bucket, dict) else None
        if not isinstance(name, str) or not name.strip():
            problems.append(f"buckets[{i}].name: required (a non-empty string)")
        elif name in seen:
            problems.append(f"buckets[{i}].name: {name!r} repeats another bucket's name")
        else:
            seen.add(name)
        if not isinstance(text, str) or not text.strip():
            problems.append(f"buckets[{i}].description: required (a non-empty string)")
    if not doc.get("buckets"):
        problems.append("buckets: a recorded census needs at least one bucket")
    return problems


def record(run_root: Path, name: str, doc: dict[str, Any]) -> Path:
    """Store a checked ``doc`` as ``census/<name>.json``; never overwrites."""
    if not _NAME.match(name):
        raise ConfigError(f"census name {name!r}: letters, digits, '_', '.', '-' only")
    problems = bucket_problems(doc)
    if problems:
        raise ConfigError("census --record refused: " + "; ".join(problems))
    path = folder(run_root) / f"{name}.json"
    if path.exists():
        raise RunDirError(f"{path}: a census named {name!r} is already recorded")
    path.parent.mkdir(parents=True, exist_ok=True)
    jsonfiles.write_atomic(path, doc)
    return path


def bucket_tasks(run_root: Path) -> dict[str, list[str]]:
    """Bucket name -> its examples' task ids, over every census."""
    found: dict[str, set[str]] = {}
    where = folder(run_root)
    for path in sorted(where.glob("*.json")) if where.is_dir() else []:
        doc: Any = jsonfiles.read(path)
        for bucket in doc.get("buckets", []) if isinstance(doc, dict) else []:
            if isinstance(bucket, dict) and isinstance(bucket.get("name"), str):
                tasks = {str(e).split("#", 1)[0] for e in bucket.get("examples", [])}
                found.setdefault(bucket["name"], set()).update(tasks)
    return {name: sorted(tasks) for name, tasks in found.items()}
