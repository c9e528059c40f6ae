"""The shipped retail data: loading it, copying it per rollout, hashing and diffing states.

``data/db.json`` holds ``users``, ``orders``, ``products`` and ``transfers``;
``data/tasks.json`` holds the tasks (see ``generate.py``). Both are fixed files: every
rollout starts from a fresh deep copy of the same database, so a seed fully determines it.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent / "data"
DB_FILE = DATA_DIR / "db.json"
TASKS_FILE = DATA_DIR / "tasks.json"


@functools.lru_cache(maxsize=1)
def _pristine() -> str:
    return DB_FILE.read_text(encoding="utf-8")


def fresh_db() -> dict:
    """A new, private copy of the initial database."""
    return json.loads(_pristine())


@functools.lru_cache(maxsize=1)
def initial_db() -> dict:
    """The initial database, shared: never modify it (use :func:`fresh_db` to get a copy)."""
    return fresh_db()


@functools.lru_cache(maxsize=1)
def load_task_records() -> tuple:
    """The raw task records from ``tasks.json`` (a tuple of dicts, treat as read-only)."""
    return tuple(json.loads(TASKS_FILE.read_text(encoding="utf-8"))["tasks"])


def canonical(value: object) -> str:
    """Canonical JSON: sorted keys, no spaces, so equal states give equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def state_hash(db: dict) -> str:
    """sha256 of the state: the records changed from the (fixed) initial database.

    Products never change; two states are equal exactly when their changed records are.
    """
    return hashlib.sha256(canonical(changed_records(db)).encode()).hexdigest()


def changed_records(db: dict, base: dict | None = None) -> dict:
    """Records of ``db`` that differ from ``base`` (the initial db), keyed ``table/id``.

    ``transfers`` is one record (the whole list). A record deleted from ``db`` maps to None.
    """
    base = base if base is not None else initial_db()
    out: dict = {}
    for table in ("orders", "users"):
        for key in sorted(set(db[table]) | set(base[table])):
            if db[table].get(key) != base[table].get(key):
                out[f"{table}/{key}"] = copy.deepcopy(db[table].get(key))
    if db["transfers"] != base["transfers"]:
        out["transfers"] = copy.deepcopy(db["transfers"])
    return out


def field_diff(got: object, want: object, path: str = "") -> list[str]:
    """Dotted paths where ``got`` and ``want`` differ (leaves, recursively)."""
    if isinstance(got, dict) and isinstance(want, dict):
        diffs: list[str] = []
        for key in sorted(set(got) | set(want), key=str):
            diffs += field_diff(got.get(key), want.get(key), f"{path}.{key}" if path else key)
        return diffs
    if isinstance(got, list) and isinstance(want, list) and len(got) == len(want):
        diffs = []
        for i, (a, b) in enumerate(zip(got, want, strict=True)):
            diffs += field_diff(a, b, f"{path}[{i}]")
        return diffs
    return [] if got == want else [path]
