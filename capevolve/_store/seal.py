"""The test seal: the held-out split is scored once, by one process.

``seal.json`` is created with O_EXCL before any test rollout runs, so of two racing
finalize processes exactly one proceeds. A finalize that died before writing any test
rollout may be retried (the dead seal is renamed aside atomically); once a test rollout
is on disk, or the seal says complete, every later attempt raises TestSealError.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any


from capevolve._store import jsonfiles
from capevolve.errors import RunDirError, TestSealError
from capevolve.kinds import Split
from capevolve._store.layout import Layout
from capevolve._store.lock import hold, holder_alive, holder_identity
from capevolve._store.rundir import utc_now

STARTED, COMPLETE = "started", "complete"


def test_rollouts_exist(layout: Layout) -> bool:
    """True when any Parquet part exists in the test partition."""
    return any((layout.rollouts / f"split={Split.TEST}").rglob("*.parquet"))


def _read_seal(layout: Layout) -> dict[str, Any]:
    try:
        data = jsonfiles.read(layout.seal)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _create(layout: Layout, fields: dict[str, Any]) -> dict[str, Any]:
    seal = {"status": STARTED, **holder_identity(), "started_at": utc_now(), **fields}
    fd = os.open(layout.seal, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(seal, sort_keys=True, indent=2) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    return seal


def burn(layout: Layout, **fields: Any) -> dict[str, Any]:
    """Take the seal for this process, or raise TestSealError naming why not."""
    try:
        return _create(layout, fields)
    except FileExistsError:
        pass
    try:
        with hold(layout.root / "seal.lock"):  # one retry at a time judges the old seal
            return _retry(layout, fields)
    except TestSealError:
        raise
    except RunDirError:  # the seal.lock is held: another retry is judging the old seal
        raise TestSealError(f"{layout.seal}: another finalize is taking over the seal") from None


def _retry(layout: Layout, fields: dict[str, Any]) -> dict[str, Any]:
    existing = _read_seal(layout)
    if existing.get("status") == COMPLETE or test_rollouts_exist(layout):
        raise TestSealError(f"{layout.seal}: the test split was already scored "
                            f"(sealed at {existing.get('started_at', '?')}); it is scored once")
    if not existing:  # empty: being written this instant, or torn by a crash at creation
        time.sleep(0.2)
        existing = _read_seal(layout)
    if existing and holder_alive(existing):
        raise TestSealError(f"{layout.seal}: finalize is already running "
                            f"(pid {existing.get('pid')}); the test split is scored once")
    aside = layout.root / f"seal.aborted-{utc_now().replace(':', '')}.json"
    try:
        os.rename(layout.seal, aside)  # atomic: of two retries only one moves it
    except FileNotFoundError:
        raise TestSealError(f"{layout.seal}: another finalize took over the seal") from None
    try:
        return _create(layout, {**fields, "retry_of": aside.name})
    except FileExistsError:
        raise TestSealError(f"{layout.seal}: another finalize took over the seal") from None


def complete(layout: Layout, seal: dict[str, Any], **fields: Any) -> None:
    """Mark the seal complete (the test scores are final)."""
    os.chmod(layout.seal, 0o644)
    jsonfiles.write_atomic(layout.seal, {**seal, "status": COMPLETE, "finished_at": utc_now(),
                                         **fields})
    os.chmod(layout.seal, 0o444)
