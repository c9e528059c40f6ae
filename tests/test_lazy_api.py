"""The root API's verbs load their modules on first use (capevolve._lazy), and that changes
nothing else: the type-checked imports and the lazy ones name the same modules (import-linter
sees neither, so the layer rule is checked here), a stand-in imports only when read, an
import error surfaces at the first read, and the functions status needs live in one place
each (the old names are the same objects)."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from capevolve._lazy import LazyModule, lazy_module

REPO = Path(__file__).resolve().parents[1]
API = REPO / "capevolve" / "_api.py"
HEAVY = ("ray", "duckdb", "pyarrow", "numpy", "pandas", "scipy")


def _bindings() -> tuple[dict[str, str], dict[str, str]]:
    """(name -> module) of _api.py's ``if TYPE_CHECKING:`` imports, and of its ``else:``
    branch's ``lazy_module("...")`` stand-ins."""
    tree = ast.parse(API.read_text())
    block = next(n for n in tree.body if isinstance(n, ast.If)
                 and isinstance(n.test, ast.Name) and n.test.id == "TYPE_CHECKING")
    typed: dict[str, str] = {}
    for node in block.body:
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                typed[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                typed[alias.asname or alias.name] = alias.name
    lazy: dict[str, str] = {}
    for node in block.orelse:
        assert isinstance(node, ast.Assign), ast.dump(node)
        call = node.value
        assert isinstance(call, ast.Call) and getattr(call.func, "id", "") == "lazy_module"
        lazy[node.targets[0].id] = call.args[0].value  # type: ignore[attr-defined]
    return typed, lazy


def test_the_checked_imports_and_the_lazy_ones_are_the_same_modules():
    """Every stand-in binds the module the checker was shown under the same name (a drift
    would type-check one module and run another)."""
    typed, lazy = _bindings()
    assert typed and typed == lazy


def test_the_lazy_modules_respect_the_root_apis_layer_rule():
    """The root API reaches the layers through _loop (and the rollout query from _store):
    a lazy import of _engine, _policy, _project or ray would evade import-linter."""
    _, lazy = _bindings()
    for name, module in lazy.items():
        assert module.startswith("capevolve._loop.") or module == \
            "capevolve._store.rollouts.query", (name, module)
        assert importlib.util.find_spec(module) is not None, module


def test_a_stand_in_imports_its_module_only_when_read(tmp_path, monkeypatch):
    """Binding imports nothing; the first attribute read runs the module once; later reads
    and dir() see the real module."""
    loads = tmp_path / "loads.txt"
    (tmp_path / "lazy_probe_ok.py").write_text(
        f"with open({str(loads)!r}, 'a') as fh:\n    fh.write('x')\nVALUE = 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "lazy_probe_ok", raising=False)
    stand_in = lazy_module("lazy_probe_ok")
    assert isinstance(stand_in, LazyModule) and "lazy_probe_ok" not in sys.modules
    assert not loads.exists()
    assert "lazy_probe_ok" in repr(stand_in)
    assert stand_in.VALUE == 42 and stand_in.VALUE == 42
    assert loads.read_text() == "x"
    assert "VALUE" in dir(stand_in)
    with pytest.raises(AttributeError):
        stand_in.MISSING  # noqa: B018
    monkeypatch.delitem(sys.modules, "lazy_probe_ok")


def test_an_import_error_surfaces_at_the_first_read(tmp_path, monkeypatch):
    """A module that fails to import raises its own error where it is first used (as the
    eager import would have), and again on the next read: nothing half-loaded is kept."""
    (tmp_path / "lazy_probe_bad.py").write_text("raise RuntimeError('broken module')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    stand_in = lazy_module("lazy_probe_bad")
    for _ in range(2):
        with pytest.raises(RuntimeError, match="broken module"):
            stand_in.anything  # noqa: B018
    assert "lazy_probe_bad" not in sys.modules
    with pytest.raises(ModuleNotFoundError):
        lazy_module("lazy_probe_absent").anything  # noqa: B018


def test_status_helpers_live_in_one_place():
    """The light modules hold the functions; the old names are re-exports, not copies."""
    from capevolve._loop import (
        decide,
        evaluate,
        false_accepts,
        finalize,
        frozen_config,
        status,
    )
    from capevolve._store.journal import pending, recover

    assert evaluate.run_config is frozen_config.run_config
    assert decide.false_accept_ledger is false_accepts.false_accept_ledger
    assert finalize.progress is status.finalize_progress
    assert recover.unsettled is pending.unsettled
    assert status.run_config is frozen_config.run_config


@pytest.mark.slow
def test_the_root_api_loads_a_verbs_module_when_it_runs(tmp_path):
    """In a fresh process, importing capevolve._api, opening a run and reading its status
    load none of HEAVY; the query verb then loads DuckDB and answers from the stored rows."""
    project = tmp_path / "toy"
    shutil.copytree(REPO / "benchmarks" / "toy", project,
                    ignore=shutil.ignore_patterns(".capevolve", "__pycache__"))
    code = (
        "import json\n"
        "from capevolve import _api\n"
        f"handoff = _api.start_run({str(project)!r}, {str(tmp_path / 'run')!r}, "
        "engine='local')\n"
        "print(json.dumps({'run_dir': handoff.run_dir}))\n")
    out = subprocess.run([sys.executable, "-c", code], text=True, capture_output=True,
                         timeout=300, check=False, env={**os.environ, "CAPEVOLVE_PROGRESS": "off"})
    assert out.returncode == 0, out.stderr
    run_dir = json.loads(out.stdout.splitlines()[-1])["run_dir"]
    code = (
        "import json, sys\n"
        f"heavy = {HEAVY!r}\n"
        "from capevolve import _api\n"
        "seen = [[m for m in heavy if m in sys.modules]]\n"
        f"status = _api.status({run_dir!r})\n"
        "seen.append([m for m in heavy if m in sys.modules])\n"
        f"columns, rows = _api.query({run_dir!r}, 'SELECT count(*) AS n FROM rollouts')\n"
        "seen.append([m for m in heavy if m in sys.modules])\n"
        "print(json.dumps({'seen': seen, 'best': status.best_id, 'n': rows[0][0],"
        " 'calls': status.spent.metric_calls}))\n")
    out = subprocess.run([sys.executable, "-c", code], text=True, capture_output=True,
                         timeout=300, check=False, env={**os.environ, "CAPEVOLVE_PROGRESS": "off"})
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.splitlines()[-1])
    assert result["seen"][0] == [] and result["seen"][1] == []
    assert "duckdb" in result["seen"][2]
    assert result["best"] == "seed" and result["n"] == result["calls"] > 0
