"""Planted bytecode beside a project's sources is never run: user code compiles from source."""

from __future__ import annotations

import importlib._bootstrap_external as external
import subprocess
import sys
import textwrap
from pathlib import Path

from capevolve._project.bytecode import SourceOnlyLoader

REAL = "def score():\n    return 'real'\n"
FORGED = "def score():\n    return 'forged'\n"


def _plant(module: Path, forged_source: str) -> Path:
    """Write __pycache__/<module>.pyc holding ``forged_source``, with a header that
    matches the untouched source's mtime and size (what Python checks)."""
    st = module.stat()
    code = compile(forged_source, str(module), "exec")
    data = external._code_to_timestamp_pyc(code, int(st.st_mtime), st.st_size)
    pyc = Path(importlib_cache(module))
    pyc.parent.mkdir(exist_ok=True)
    pyc.write_bytes(bytes(data))
    return pyc


def importlib_cache(module: Path) -> str:
    return external.cache_from_source(str(module))


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "myscore.py").write_text(REAL)
    (root / "adapter.py").write_text(textwrap.dedent("""
        import myscore

        class A:
            def tasks(self): return []
            def run_target(self, *a, **k): return None
            def score(self, *a, **k): return myscore.score()
        """))
    return root


def test_plain_python_would_run_the_planted_bytecode(tmp_path):
    """The attack is real: without capevolve's loader the forged .pyc runs."""
    root = _project(tmp_path)
    _plant(root / "myscore.py", FORGED)
    out = subprocess.run([sys.executable, "-c", "import myscore; print(myscore.score())"],
                         cwd=root, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "forged"


def test_load_adapter_compiles_project_modules_from_source(tmp_path):
    """With a forged .pyc for both the adapter file and the scorer module it imports,
    capevolve's loader still runs the sources."""
    root = _project(tmp_path)
    _plant(root / "myscore.py", FORGED)
    _plant(root / "adapter.py", "class A:\n    def score(self, *a, **k): return 'forged'\n"
                                "    tasks = run_target = score\n")
    code = ("import sys; from pathlib import Path; from capevolve._project.loader import "
            f"load_adapter; print(load_adapter(Path({str(root)!r}), 'adapter.py:A').score())")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "real"


def test_the_source_only_loader_never_reads_bytecode(tmp_path):
    """SourceOnlyLoader refuses path_stats, so get_code compiles the source."""
    module = tmp_path / "m.py"
    module.write_text(REAL)
    _plant(module, FORGED)
    loader = SourceOnlyLoader("m", str(module))
    namespace: dict = {}
    exec(loader.get_code("m"), namespace)
    assert namespace["score"]() == "real"
