"""The bubblewrap sandbox every worker running candidate code starts in.

Read-only: system, Python environment, project, adapter package. Hidden: non-Python files not
declared read or in ``protected_paths``, scorer/gold-named files, ``.capevolve/``, run dir, key
dir, ``$HOME``. Own namespaces and ``/tmp``, no capabilities, dies with its parent, no network
unless ``engine.network: host``. No defence against kernel exploits or side channels.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from capevolve._engine.contract import SandboxSpec
from capevolve.config import SCORE_DATA_PATTERNS
from capevolve.errors import EngineError

BWRAP = "bwrap"
OPT_OUT = "engine.isolation: none"
SYSTEM_DIRS = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt")
SKIP_DIRS = frozenset({"__pycache__", "node_modules", ".git", ".hg", ".svn", ".mypy_cache",
                       ".pytest_cache", ".ruff_cache", ".tox", ".nox"})
MAX_HIDDEN = 4000
"""Most hidden entries (each a mount) allowed."""


@functools.cache
def unavailable() -> str | None:
    """:func:`check`, once per process."""
    return check()


def check() -> str | None:
    """Why no sandbox can be built here, or None."""
    if not sys.platform.startswith("linux"):
        return f"no OS sandbox on {sys.platform} (capevolve uses bubblewrap, Linux only)"
    exe = shutil.which(BWRAP)
    if exe is None:
        return "bubblewrap (bwrap) is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    try:
        done = subprocess.run([exe, "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
                               "--tmpfs", "/tmp", *_NAMESPACES, "--", "/bin/true"],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap could not run ({exc})"
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
        return f"bwrap cannot build a sandbox here ({why})"
    return None


def require() -> None:
    """Raise EngineError naming the opt-out when no sandbox can be built."""
    why = unavailable()
    if why is not None:
        raise EngineError(f"candidate code cannot be contained: {why}; to run it without a "
                          f"sandbox set `{OPT_OUT}` in capevolve.yaml (the run then says "
                          "candidate code was not contained)")


_NAMESPACES = ("--unshare-user-try", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
               "--unshare-cgroup-try", "--cap-drop", "ALL", "--new-session",
               "--die-with-parent")


@dataclass(frozen=True)
class Exposure:
    """What a project's sandbox shows and hides, as plain paths."""

    project_root: str
    user_trees: tuple[str, ...]
    """Read-only project, adapter and helper trees."""
    hidden_files: tuple[str, ...]
    hidden_dirs: tuple[str, ...]
    network: str = "none"
    env_trees: tuple[str, ...] = field(default_factory=tuple)
    """Read-only Python environment and capevolve."""
    user_files: tuple[str, ...] = ()
    """Read-only single-file helper modules."""


def python_trees() -> list[str]:
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
             os.path.dirname(os.path.realpath(sys.executable)),
             str(Path(__file__).resolve().parents[1])}  # capevolve itself
    paths |= {p for p in sys.path if os.path.isabs(p) and (_stdlib(p) or p.rstrip("/").endswith(
        ("site-packages", "dist-packages", ".zip", "lib-dynload")))}
    for name, module in list(sys.modules.items()):  # editable installs (setuptools finders)
        if name.startswith("__editable__") and isinstance(getattr(module, "MAPPING", None),
                                                          dict):
            paths |= {str(v) for v in module.MAPPING.values()}
    return sorted(os.path.realpath(p) for p in paths if p and os.path.exists(p))


def _stdlib(path: str) -> bool:
    import sysconfig

    return bool(path) and os.path.realpath(path) in {
        os.path.realpath(sysconfig.get_paths()[k]) for k in ("stdlib", "platstdlib")}


def exposure_of(spec: SandboxSpec, project_root: str) -> Exposure:
    """What ``spec`` shows of the project at ``project_root``. Raises EngineError past
    :data:`MAX_HIDDEN`."""
    root = Path(project_root).resolve()
    env = python_trees()
    trees = [root]
    allowed_in: dict[Path, Sequence[str]] = {root: spec.reads}
    protected = spec.protected
    if spec.package and os.path.isdir(spec.package):
        package = Path(spec.package).resolve()
        if not _inside_any(package, [root]) and not _inside_any(
                package, [Path(__file__).resolve().parents[1]]):
            trees.append(package)
            allowed_in[package] = spec.package_reads
    shown: list[str] = []
    for source in map(Path, spec.sources):
        if source.is_dir() and not _inside_any(source, trees):
            trees.append(source)
        elif source.is_file() and _visible_file(source.name, source.name, (), ()):
            shown.append(str(source))
    files: list[str] = []
    dirs: list[str] = []
    for tree in trees:  # an environment dir inside it (a venv in the project) stays whole
        allowed = allowed_in.get(tree, ())
        skip = [Path(p) for p in env if not _inside_any(tree, [Path(p)])]
        _hide(tree, tree, allowed, protected, skip, files, dirs)
    dirs.append(str(root / ".capevolve"))
    for path in spec.hidden:
        resolved = Path(path).resolve()
        if _inside_any(resolved, trees) or any(_inside_any(resolved, [Path(e)]) for e in env):
            (dirs if resolved.is_dir() or not resolved.exists() else files).append(str(resolved))
    dirs = sorted(set(dirs))  # one hidden inside another needs no mount of its own
    dirs = [d for i, d in enumerate(dirs) if not any(
        d.startswith(o.rstrip(os.sep) + os.sep) for o in dirs[:i])]
    files = [f for f in files if not any(f.startswith(d.rstrip(os.sep) + os.sep)
                                         for d in dirs)]
    if len(files) + len(dirs) > MAX_HIDDEN:
        raise EngineError(f"{root}: {len(files) + len(dirs)} files to hide from candidate code "
                          f"(more than {MAX_HIDDEN}); put the data in a directory and name it "
                          "in protected_paths so it is hidden whole")
    return Exposure(str(root), tuple(str(t) for t in trees), tuple(sorted(set(files))),
                    tuple(sorted(set(dirs))), spec.network, tuple(env), tuple(shown))


def _inside_any(path: Path, roots: Sequence[Path]) -> bool:
    return any(path == r or r in path.parents for r in roots)


def _matches(rel: str, name: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatch(name, p) or fnmatch.fnmatch(rel, p) for p in patterns)


def _hide(tree: Path, top: Path, reads: Sequence[str], protected: Sequence[str],
          skip: Sequence[Path], files: list[str], dirs: list[str]) -> bool:
    """Collect what to hide under ``tree``; True when all of it is hidden."""
    try:
        entries = list(os.scandir(tree))
    except OSError:
        return False
    mine_f: list[str] = []
    mine_d: list[str] = []
    visible = 0
    for entry in entries:
        path = Path(entry.path)
        rel = path.relative_to(top).as_posix()
        if entry.is_symlink():  # its target is hidden or shown where it lies
            visible += 1
            continue
        if entry.is_dir():
            if entry.name in SKIP_DIRS or _inside_any(path.resolve(), skip):
                visible += 1
                continue
            if _matches(rel, entry.name, SCORE_DATA_PATTERNS) \
                    and not _matches(rel, entry.name, reads):
                mine_d.append(str(path))
            elif _hide(path, top, reads, protected, skip, files, dirs):
                mine_d.append(str(path))
            else:
                visible += 1
        elif _visible_file(rel, entry.name, reads, protected):
            visible += 1
        else:
            mine_f.append(str(path))
    if not visible and tree != top:
        # the caller hides the whole directory: drop what was listed beneath it
        prefix = str(tree) + os.sep
        files[:] = [f for f in files if not f.startswith(prefix)]
        dirs[:] = [d for d in dirs if not d.startswith(prefix)]
        return True
    files.extend(mine_f)
    dirs.extend(mine_d)
    return False


def _visible_file(rel: str, name: str, reads: Sequence[str], protected: Sequence[str]) -> bool:
    """Python source unless scorer/gold-named; capevolve.yaml; unprotected declared reads."""
    if name.endswith(".py"):
        return not _matches(rel, name, SCORE_DATA_PATTERNS) or _matches(rel, name, reads)
    if rel == "capevolve.yaml":
        return True
    return _matches(rel, name, reads) and not _matches(rel, name, protected)


def command(exposure: Exposure, argv: Sequence[str], binds: Sequence[str] = (),
            empty: str = "/dev/null") -> list[str]:
    """bwrap argv running ``argv`` in ``exposure``; ``binds`` shown read-only, hidden files
    as ``empty``."""
    exe = shutil.which(BWRAP) or BWRAP
    args = [exe, *_NAMESPACES]
    if exposure.network != "host":
        args.append("--unshare-net")
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    home = os.environ.get("HOME")
    if home and os.path.isdir(home) and not any(
            _inside_any(Path(home).resolve(), [Path(s)]) for s in SYSTEM_DIRS):
        args += ["--tmpfs", os.path.realpath(home)]
    for tree in (*exposure.user_trees, *exposure.env_trees):
        args += ["--ro-bind", tree, tree]
    for path in exposure.user_files:
        if os.path.isfile(path):
            args += ["--ro-bind", path, path]
    for folder in exposure.hidden_dirs:
        if os.path.isdir(folder):
            args += ["--tmpfs", folder, "--remount-ro", folder]
    for path in exposure.hidden_files:
        if os.path.lexists(path):
            args += ["--ro-bind", empty, path]
    for path in binds:
        real = os.path.realpath(path)
        args += ["--ro-bind", real, real]
    args += ["--setenv", "TMPDIR", "/tmp", "--chdir", "/tmp", "--", *argv]
    return args
