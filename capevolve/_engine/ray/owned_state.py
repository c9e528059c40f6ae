"""The signed state file of capevolve's own local Ray, one per installation, and the checks
before joining it: :func:`read_state` refuses a state of another user, writable by others,
malformed or badly signed; :func:`alive` tells a live daemon from a stale pid. No ray import.
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import json
import os
import secrets
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from capevolve.errors import EngineError

FORMAT_VERSION = 1
DAEMON_MODULE = "capevolve._engine.ray.owned_daemon"
"""The daemon's module, named on its command line."""
KV_NAMESPACE = "capevolve"
KV_KEY = b"owned_session"
"""KV key of the daemon's session id, checked on joining."""
WARM_NAMESPACE = "capevolve-warm"
WARM_KEEPER = "keeper"
"""The warm pool's namespace and keeper name."""
_UNTRACKED = frozenset({"PWD", "OLDPWD", "SHLVL", "_"})
"""Shell variables that never matter to an adapter."""


class OwnedRay(BaseModel):
    """An owned local Ray, as its daemon recorded it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format_version: int = Field(FORMAT_VERSION, ge=FORMAT_VERSION, le=FORMAT_VERSION)
    address: str
    """The GCS address drivers join."""
    pid: int = Field(gt=1)
    """The daemon; Ray's processes share its fate."""
    uid: int = Field(ge=0)
    """The only user who may join."""
    session: str = Field(min_length=16)
    """Random id on the daemon's command line and in the KV."""
    ray_version: str
    python: str
    """The daemon's (and workers') Python."""
    temp_dir: str
    """Ray's temp dir, removed when the daemon stops."""
    num_cpus: int = Field(ge=1)
    idle_timeout_s: float = Field(gt=0)
    started_at: float
    state_file: str
    """This record's path."""
    env: dict[str, str] = Field(default_factory=dict)
    """Name -> short sha256 of the daemon's environment."""
    mac: str = ""
    """HMAC-SHA256 of the other fields."""


def state_dir() -> Path:
    """``CAPEVOLVE_RAY_STATE_DIR``, else ``$XDG_RUNTIME_DIR/capevolve``, else
    ``~/.cache/capevolve/ray``."""
    explicit = os.environ.get("CAPEVOLVE_RAY_STATE_DIR")
    if explicit:
        return Path(explicit)
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and Path(runtime).is_dir():
        return Path(runtime) / "capevolve"
    return Path.home() / ".cache" / "capevolve" / "ray"


def state_path(directory: Path | None = None) -> Path:
    """The state file of this Python and Ray version (read without importing ray)."""
    try:
        ray = version("ray")
    except PackageNotFoundError:
        ray = "missing"
    key = hashlib.sha256(f"{sys.executable}\0{ray}".encode()).hexdigest()[:12]
    return (directory or state_dir()) / f"ray-{key}.json"


def token_path(state: Path) -> Path:
    return state.with_suffix(".token")


def drivers_path(state: Path) -> Path:
    return state.with_suffix(".drivers")


def connected_drivers(state: Path) -> list[int]:
    """Drivers at the daemon's last poll that still run."""
    try:
        pids = json.loads(drivers_path(state).read_text(encoding="utf-8")).get("pids", [])
    except (OSError, ValueError, AttributeError):
        return []
    return [p for p in pids if isinstance(p, int) and p > 1 and Path(f"/proc/{p}").exists()]


def ensure_dir(directory: Path) -> Path:
    """Create the state dir (0700); refuse one another user owns."""
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    info = directory.stat()
    if info.st_uid != os.getuid():
        raise EngineError(f"{directory}: owned-Ray state directory belongs to uid "
                          f"{info.st_uid}, not you (uid {os.getuid()}); set "
                          "CAPEVOLVE_RAY_STATE_DIR to a directory of yours")
    return directory


def env_digest(env: dict[str, str]) -> dict[str, str]:
    """Name -> short sha256 of each variable; values are not stored."""
    return {k: hashlib.sha256(v.encode(errors="replace")).hexdigest()[:16]
            for k, v in env.items() if not k.startswith("RAY_") and k not in _UNTRACKED}


def _secret(directory: Path) -> bytes:
    """The per-user signing key, made on first use."""
    path = directory / "key"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_bytes()
    with os.fdopen(fd, "wb") as handle:
        handle.write(secrets.token_bytes(32))
    return path.read_bytes()


def _mac(directory: Path, state: OwnedRay) -> str:
    body = json.dumps(state.model_dump(exclude={"mac"}), sort_keys=True).encode()
    return hmac.new(_secret(directory), body, hashlib.sha256).hexdigest()


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` (0600) atomically."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)


def write_state(path: Path, state: OwnedRay) -> OwnedRay:
    """Sign and write ``state``; return it signed."""
    signed = state.model_copy(update={"mac": _mac(path.parent, state)})
    write_private(path, signed.model_dump_json())
    return signed


def read_state(path: Path) -> OwnedRay | None:
    """The verified state, or None without a file; EngineError on a failed check."""
    try:
        info = path.stat()
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise EngineError(f"{path}: unreadable owned-Ray state ({exc})") from None
    if info.st_uid != os.getuid():
        raise EngineError(f"{path}: owned-Ray state written by uid {info.st_uid}, not you "
                          f"(uid {os.getuid()}); refusing to join it")
    if info.st_mode & 0o022:
        raise EngineError(f"{path}: owned-Ray state is writable by others; refusing to join it")
    try:
        state = OwnedRay.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "file"
        raise EngineError(f"{path}: invalid owned-Ray state ({where}: {first['msg']}); "
                          "refusing to join it (`capevolve down` removes it)") from None
    if not hmac.compare_digest(state.mac, _mac(path.parent, state)):
        raise EngineError(f"{path}: owned-Ray state does not match its signature (edited by "
                          "hand?); refusing to join it (`capevolve down` removes it)")
    return state


@contextmanager
def locked(directory: Path, wait: bool = True) -> Iterator[bool]:
    """Hold the state dir's lock; without ``wait``, yield False if it is taken."""
    fd = os.open(directory / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def _cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def alive(state: OwnedRay) -> bool:
    """True when ``state``'s daemon still runs (not a reused pid)."""
    try:
        if os.stat(f"/proc/{state.pid}").st_uid != state.uid:
            return False
    except OSError:
        return False
    argv = _cmdline(state.pid)
    return DAEMON_MODULE in argv and state.session in argv
