"""The journal of a compaction in progress (``journal/<token>.compact``), written durably once
the new parts are, removed last. Unsigned: only the ``parts_compacted`` event records parts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from capevolve._store import jsonfiles
from capevolve._store.durable import fsync_dir
from capevolve._store.layout import Layout
from capevolve.errors import StoreError
from capevolve.records import CompactedPart

SUFFIX = ".compact"


class Intent(BaseModel):
    """What a compaction is about to do."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    token: str
    eval_id: str
    sources: list[str]
    """The parts it replaces, run-relative, sorted."""
    targets: list[CompactedPart]
    """The new parts, as its ``parts_compacted`` event will record them."""

    def files(self) -> set[str]:
        """Every part it names, old and new."""
        return set(self.sources) | {t.path for t in self.targets}


def intent_path(layout: Layout, token: str) -> Path:
    return layout.journal / f"{token}{SUFFIX}"


def write_intent(layout: Layout, intent: Intent) -> Path:
    """Write the intent atomically and durably."""
    path = intent_path(layout, intent.token)
    layout.journal.mkdir(parents=True, exist_ok=True)
    jsonfiles.write_atomic(path, intent.model_dump())
    fsync_dir(layout.journal)
    return path


def _parse(data: Any, path: Path) -> Intent:
    try:
        intent = Intent.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        raise StoreError(f"{path}: not a compaction journal ({'.'.join(map(str, error['loc']))}: "
                         f"{error['msg']})") from None
    if f"{intent.token}{SUFFIX}" != path.name:
        raise StoreError(f"{path}: names compaction {intent.token!r}, not its file name")
    return intent


def read_intents(layout: Layout) -> list[tuple[Path, Intent]]:
    """Every compaction journal, in name order; StoreError naming a bad one."""
    if not layout.journal.is_dir():
        return []
    found = []
    for path in sorted(layout.journal.glob(f"*{SUFFIX}")):
        try:
            data = jsonfiles.read(path)
        except (OSError, ValueError) as exc:
            raise StoreError(f"{path}: unreadable compaction journal ({exc})") from None
        found.append((path, _parse(data, path)))
    return found


def pending_files(layout: Layout) -> set[str]:
    """Parts named by unfinished compactions (none if a journal is bad)."""
    try:
        return set().union(*(intent.files() for _, intent in read_intents(layout)))
    except StoreError:
        return set()
