"""The project fingerprint: ``{path: sha256}`` of every file a run's scores depend on.

The adapter, the user modules it imports statically, its package and the project's data files.
"""

from __future__ import annotations

import ast
import fnmatch
import hashlib
import importlib.util
import os
import sys
from pathlib import Path

from capevolve._project.bytecode import FRAMEWORK, library_roots
from capevolve._project.loader import Project, load_adapter
from capevolve.config import SCORE_DATA_PATTERNS
from capevolve.errors import RunDirError

SKIP_DIRS = frozenset({".capevolve", "__pycache__", "node_modules", "venv", "site-packages"})


def _digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _under(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _module_file(name: str, user_code=None) -> Path | None:
    module = sys.modules.get(name)
    file = getattr(module, "__file__", None) if module is not None else None
    if file is None and module is None:
        parent = name.rpartition(".")[0]
        if parent and parent not in sys.modules:
            top = _module_file(name.partition(".")[0])
            if top is None or user_code is None or not user_code(top):
                return None
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError, AttributeError):
            return None
        file = spec.origin if spec is not None and spec.has_location else None
    return Path(file).resolve() if isinstance(file, str) and os.path.isfile(file) else None


def _imported_names(path: Path, package: str | None) -> list[str]:
    """Names the file imports (``from a import b``: ``a`` and ``a.b``)."""
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (SyntaxError, ValueError, OSError):
        return []
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = (package or "").split(".")
                keep = len(parts) - (node.level - 1)
                if not package or keep <= 0:
                    continue
                base = ".".join(parts[:keep] + ([base] if base else []))
            if base:
                names += [base] + [f"{base}.{alias.name}" for alias in node.names
                                   if alias.name != "*"]
    return names


def _import_closure(start: Path, start_name: str, own_package: Path | None) -> set[Path]:
    libraries = library_roots()

    def user_code(path: Path) -> bool:
        if own_package is not None and _under(path, own_package):
            return True
        return not (_under(path, FRAMEWORK) or any(_under(path, lib) for lib in libraries))

    seen: set[Path] = set()
    todo = [(start, start_name)]
    while todo:
        path, name = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        if path.suffix != ".py":
            continue
        package = name if path.name == "__init__.py" else name.rpartition(".")[0] or None
        for imported in _imported_names(path, package):
            file = _module_file(imported, user_code)
            if file is not None and file not in seen and user_code(file):
                todo.append((file, imported))
    return seen


def _class_package(adapter: object) -> Path | None:
    """The adapter class's package directory, if any (never capevolve's)."""
    module = sys.modules.get(type(adapter).__module__)
    package = getattr(module, "__package__", None)
    init = getattr(sys.modules.get(package or ""), "__file__", None)
    if not package or not isinstance(init, str) or not init.endswith("__init__.py"):
        return None
    directory = Path(init).resolve().parent
    return None if _under(FRAMEWORK, directory) or _under(directory, FRAMEWORK) else directory


def _tree_files(directory: Path) -> set[Path]:
    found = set()
    for dirpath, dirnames, filenames in os.walk(directory):
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS and not d.startswith(".")]
        found |= {Path(dirpath, f) for f in filenames if not f.endswith((".pyc", ".pyo"))}
    return found


def _is_run_dir(directory: Path) -> bool:
    return (directory / "run.json").is_file() and (directory / "events.jsonl").exists()


def _protected_data(root: Path, seed: Path) -> set[Path]:
    """Every data file of the project dir (a scorer may read any)."""
    seed_entries = {p.name for p in seed.iterdir()} if seed.is_dir() else set()
    found = set()
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        dirnames[:] = [
            d for d in dirnames
            if d not in SKIP_DIRS and not d.startswith(".") and (here / d) != seed
            and not (here / d / "pyvenv.cfg").exists() and not _is_run_dir(here / d)
            and not (seed_entries and seed_entries <= set(os.listdir(here / d)))
        ]
        found |= {here / name for name in filenames if not name.endswith((".py", ".pyc", ".pyo"))
                  and here / name != root / "capevolve.yaml"}
    return found


def _new_matters(path: Path, root: Path) -> bool:
    """Whether a new file matters: code, or score data by name."""
    if path.suffix == ".py" or not _under(path, root):
        return True
    rel = path.relative_to(root).as_posix()
    return any(fnmatch.fnmatch(rel, pattern) for pattern in SCORE_DATA_PATTERNS)


def _entry(root: Path, spec: str) -> tuple[Path, str] | None:
    """The file and module name a ``file.py:name`` or ``module:name`` spec starts from."""
    target = spec.rpartition(":")[0]
    if target.endswith(".py") or "/" in target:
        path = (root / target).resolve()
        return (path, path.stem) if path.is_file() else None
    file = _module_file(target)
    return (file, target) if file is not None else None


def _dataset_sources(project: Project) -> set[Path]:
    """A dataset project's extra sources: capevolve.yaml, its target's and python evaluators'
    import closures, the judge module."""
    config = project.config
    if config.dataset is None:
        return set()
    root = project.root.resolve()
    files = {root / "capevolve.yaml"} if (root / "capevolve.yaml").is_file() else set()
    specs = [str(config.target)] + [str(e.function) for e in config.evaluators if e.function]
    for spec in specs:
        entry = _entry(root, spec)
        if entry is not None:
            files |= _import_closure(entry[0], entry[1], None)
    if any(e.kind == "judge" for e in config.evaluators):
        judge = importlib.util.find_spec("capevolve.datasets.judge")
        if judge is not None and judge.origin:
            files.add(Path(judge.origin).resolve())
    return files


def sources(project: Project) -> dict[str, Path]:
    """Every fingerprinted file by key (root-relative when under the root)."""
    root = project.root.resolve()
    adapter = load_adapter(root, project.config.adapter)
    own = _class_package(adapter)
    files: set[Path] = set()
    entry = _entry(root, project.config.adapter)
    if entry is not None:
        files |= _import_closure(entry[0], entry[1], own)
    if own is not None:
        files |= _tree_files(own)
    files |= _protected_data(root, project.capability_dir)
    files |= _dataset_sources(project)
    return {(p.relative_to(root).as_posix() if _under(p, root) else p.as_posix()): p
            for p in sorted(files)}


def fingerprint(project: Project) -> dict[str, str]:
    """``{key: sha256}`` of every file in :func:`sources` (sorted by key)."""
    return {key: digest for key, path in sources(project).items()
            if (digest := _digest(path)) is not None}


def changes(project: Project, frozen: dict[str, str], new: bool = True) -> list[str]:
    """How the project differs from ``frozen``, one phrase per file (empty: unchanged)."""
    problems = []
    for key, digest in sorted(frozen.items()):
        path = Path(key) if Path(key).is_absolute() else project.root / key
        current = _digest(path)
        if current is None:
            problems.append(f"{path} was removed")
        elif current != digest:
            problems.append(f"{path} changed (sha256 {digest[:12]} -> {current[:12]})")
    for key, path in (sources(project) if new else {}).items():
        if key not in frozen and _new_matters(path, project.root.resolve()):
            problems.append(f"{path} is new (the adapter now depends on it)")
    return problems


def verify(project: Project, frozen: dict[str, str], when: str = "since the run started") -> None:
    """Raise RunDirError naming the first file that differs from ``frozen``; an empty
    ``frozen`` is refused (every run records its adapter)."""
    if not frozen:
        raise RunDirError(f"{project.root}: the run records no project fingerprint, so "
                          "changes to the adapter or scorer cannot be detected; start a new run")
    problems = changes(project, frozen)
    if problems:
        more = f"; {len(problems) - 1} more file(s) differ" if len(problems) > 1 else ""
        first, _, detail = problems[0].partition(" (")
        detail = f" ({detail}" if detail else ""
        raise RunDirError(f"{first} {when}{detail}{more}; scores measured before and after "
                          "would not be comparable")
