"""The chain head of each run, mirrored outside the run dir: ``<project>/.capevolve/heads/``.

The hash chain and the signatures of events.jsonl (capevolve._store.events) show an edited,
inserted or forged line, but not lines cut off the end: what is left is still a valid,
signed chain. So after every append the run writes ``<key_id>.json`` in its project's
``.capevolve/heads/``: the number of events and the sha256 of the last line, signed with
the run's key. Verification (capevolve._store.integrity) refuses a log that ends before the
mirrored head or holds another line there. A log one event longer is not a problem (a kill
between the append and the mirror write); lines past the head are signed anyway.

The mirror is named by the run's key id and the run dir's path, so a copy of a run dir at
another path (a fixture, a backup being inspected) is not judged by the original's head;
a copy restored over the original's path is (a rollback shows). The mirror is best effort:
a project dir that cannot be written leaves it absent, and verification then says it
could not check the end of the log.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from capevolve._store import jsonfiles, signing
from capevolve.errors import RunDirError

HEADS_DIR = Path(".capevolve") / "heads"


@dataclass(frozen=True)
class Head:
    """A mirrored chain head: the log held ``n_events`` events, the last line hashing to
    ``head``."""

    n_events: int
    head: str
    path: Path


def head_path(project_dir: Path | str, key_id: str, run_dir: Path) -> Path:
    """Where the head of the run with ``key_id`` at ``run_dir`` is mirrored."""
    signing.key_path(key_id)  # validates the id
    where = hashlib.sha256(str(Path(run_dir).resolve()).encode()).hexdigest()[:16]
    return Path(project_dir) / HEADS_DIR / f"{key_id}-{where}.json"


def write(project_dir: Path | str, key_id: str, key: bytes, run_dir: Path, n_events: int,
          head: str) -> None:
    """Mirror the chain head (atomic replace); an OS error leaves the old mirror."""
    data = {"run_dir": str(run_dir), "n_events": n_events, "head": head}
    data["mac"] = signing.mac(key, data)
    path = head_path(project_dir, key_id, run_dir)
    if not Path(project_dir).is_dir():
        return  # the project moved or is gone: never recreate its path
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        jsonfiles.write_atomic(path, data)
    except OSError:
        pass  # best effort (see the module docstring)


def read(project_dir: Path | str, key_id: str, key: bytes | None,
         run_dir: Path) -> Head | None:
    """The mirrored head (None when absent); RunDirError for one that was not written
    with the run's key or does not parse."""
    path = head_path(project_dir, key_id, run_dir)
    try:
        data = jsonfiles.read(path)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise RunDirError(f"{path}: unreadable chain head ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("n_events"), int) \
            or not isinstance(data.get("head"), str):
        raise RunDirError(f"{path}: not a chain head record")
    if key is not None and not signing.valid(key, data):
        raise RunDirError(f"{path}: forged: the chain head's signature does not match the "
                          "run's key")
    return Head(n_events=data["n_events"], head=data["head"], path=path)
