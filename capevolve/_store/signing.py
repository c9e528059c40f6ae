"""Run keys: each event line's ``mac`` is an HMAC-SHA256 under a per-run key kept outside the run.

It catches hand edits and re-chained lines, not whoever can read the key file.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path
from typing import Any

from capevolve.errors import RunDirError

KEY_DIR_ENV = "CAPEVOLVE_KEY_DIR"
MAC_FIELD = "mac"


def state_dir() -> Path:
    """capevolve's per-user state directory."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "capevolve"


def key_dir() -> Path:
    """``$CAPEVOLVE_KEY_DIR``, else the state directory's ``keys``."""
    configured = os.environ.get(KEY_DIR_ENV)
    return Path(configured) if configured else state_dir() / "keys"


def key_path(key_id: str) -> Path:
    """The key file of ``key_id``."""
    if not key_id.isalnum():
        raise RunDirError(f"key id {key_id!r}: not a capevolve key id")
    return key_dir() / f"{key_id}.key"


def new_key() -> str:
    """Make a run key (0600, in a 0700 directory); return its id."""
    key_id = secrets.token_hex(16)
    path = key_path(key_id)
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, (secrets.token_hex(32) + "\n").encode("ascii"))
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise RunDirError(f"{path}: cannot create the run's signing key ({exc}); set "
                          f"{KEY_DIR_ENV} to a writable directory") from None
    return key_id


def load_key(key_id: str) -> bytes | None:
    """The key of ``key_id``; None when its file is absent."""
    path = key_path(key_id)
    try:
        text = path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise RunDirError(f"{path}: unreadable signing key ({exc})") from None
    try:
        return bytes.fromhex(text)
    except ValueError:
        raise RunDirError(f"{path}: not a capevolve signing key") from None


def canonical(data: dict[str, Any]) -> bytes:
    """Every field but ``mac`` as compact, sorted JSON."""
    body = {k: v for k, v in data.items() if k != MAC_FIELD}
    return json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                      allow_nan=False).encode()


def mac(key: bytes, data: dict[str, Any]) -> str:
    """Hex HMAC-SHA256 of ``data`` without its ``mac``."""
    return hmac.new(key, canonical(data), hashlib.sha256).hexdigest()


def valid(key: bytes, data: dict[str, Any]) -> bool:
    """True when ``data['mac']`` signs the rest of ``data``."""
    given = data.get(MAC_FIELD)
    return isinstance(given, str) and hmac.compare_digest(given, mac(key, data))


MOVABLE = ("project_dir",)
"""run.json fields the digest leaves out, so a moved project can be pointed at."""


def manifest_digest(data: dict[str, Any]) -> str:
    """sha256 of run.json in canonical JSON, :data:`MOVABLE` aside."""
    return hashlib.sha256(canonical({k: v for k, v in data.items()
                                     if k not in MOVABLE})).hexdigest()
