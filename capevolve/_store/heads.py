"""Signed chain heads mirrored beside the run's key and in its project, so a cut log end shows.

Named by key id and run-dir path: a copy at another path is not judged by them.
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
    """The log held ``n_events`` events, the last line hashing to ``head``."""

    n_events: int
    head: str
    path: Path


def head_path(project_dir: Path | str, key_id: str, run_dir: Path) -> Path:
    """The project mirror's path."""
    signing.key_path(key_id)  # validates the id
    where = hashlib.sha256(str(Path(run_dir).resolve()).encode()).hexdigest()[:16]
    return Path(project_dir) / HEADS_DIR / f"{key_id}-{where}.json"


def key_head_path(key_id: str, run_dir: Path) -> Path:
    """The mirror's path beside the key."""
    return signing.key_dir() / "heads" / head_path(".", key_id, run_dir).name


def copied_from_elsewhere(key_id: str, run_dir: Path) -> bool:
    """True when the key's heads name only other run-dir paths (a copied run)."""
    folder = signing.key_dir() / "heads"
    return key_head_path(key_id, run_dir).name not in {
        p.name for p in folder.glob(f"{key_id}-*.json")} and any(
        folder.glob(f"{key_id}-*.json"))


def write(project_dir: Path | str, key_id: str, key: bytes, run_dir: Path, n_events: int,
          head: str) -> None:
    """Mirror the signed head beside the key and in the project; an OSError keeps the old one."""
    data = {"run_dir": str(run_dir), "n_events": n_events, "head": head}
    data["mac"] = signing.mac(key, data)
    mirrors = [(key_head_path(key_id, run_dir), 0o700)]
    if Path(project_dir).is_dir():  # the project moved or is gone: never recreate its path
        mirrors.append((head_path(project_dir, key_id, run_dir), 0o777))
    for path, mode in mirrors:
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=mode)
            jsonfiles.write_atomic(path, data)
        except OSError:
            pass  # best effort


def read(project_dir: Path | str | None, key_id: str, key: bytes | None,
         run_dir: Path) -> Head | None:
    """The head in ``project_dir`` (None: beside the key), None if absent; RunDirError if bad."""
    path = (key_head_path(key_id, run_dir) if project_dir is None
            else head_path(project_dir, key_id, run_dir))
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
