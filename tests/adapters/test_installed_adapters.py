"""The adapters install as ``capevolve_adapters``; projects that name them work anywhere.

Every test here runs the code the way a user's machine would: from a working directory
outside the repository, with a copy of the project, in a fresh process (or in Ray workers),
so a ``sys.path`` edit relative to the repository, or a package or data file missing from
the distribution, fails a test.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RETAIL_PROJECT = REPO / "benchmarks" / "retail"
BIN = Path(sys.executable).parent
# Variables that would let a process find the repository's folders or change the engine.
_DROPPED = ("PYTHONPATH", "CAPEVOLVE_PROJECT", "CAPEVOLVE_RUN_DIR", "CAPEVOLVE_ENGINE",
            "RAY_ADDRESS")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _DROPPED}
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    return env


def _run(args: list[str | Path], cwd: Path, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], cwd=cwd, env=_env(), capture_output=True,
                          text=True, timeout=timeout, check=False)


def _copy_project(tmp_path: Path) -> Path:
    dest = tmp_path / "elsewhere" / "retail"
    shutil.copytree(RETAIL_PROJECT, dest, ignore=shutil.ignore_patterns(
        ".capevolve", "__pycache__"))
    assert REPO not in dest.parents
    return dest


PROBE = textwrap.dedent("""
    import json, sys
    import capevolve_adapters
    from capevolve_adapters.retail import RetailAdapter
    from capevolve_adapters.openai_agent.adapter import OpenAIRetailAdapter
    print(json.dumps({"package": capevolve_adapters.__file__,
                      "tasks": len(RetailAdapter().tasks()),
                      "openai": OpenAIRetailAdapter.__module__,
                      "retail_on_path": any(p.endswith("adapters") for p in sys.path)}))
""")


def test_adapters_import_by_installed_name_from_any_directory(tmp_path):
    """In an isolated interpreter (no script dir, no PYTHONPATH) started outside the
    repository, both adapters import by their installed names and the retail data loads."""
    out = _run([sys.executable, "-I", "-c", PROBE], cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout)
    assert found["tasks"] == 120
    assert found["openai"] == "capevolve_adapters.openai_agent.adapter"
    assert not found["retail_on_path"]


def test_old_top_level_names_are_gone(tmp_path):
    """``retail`` and ``openai_agent`` are not importable top-level names: they would
    collide with any project's own module of that name."""
    code = ("import importlib.util as u; "
            "print(u.find_spec('retail'), u.find_spec('openai_agent'))")
    out = _run([sys.executable, "-I", "-c", code], cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["None", "None"]


@pytest.mark.slow
def test_copied_retail_project_checks_and_runs_outside_the_repository(tmp_path):
    """``cp -r benchmarks/retail /elsewhere && capevolve check/run --project /elsewhere``
    works: the baseline is complete, with every val task scored and no rollout errors."""
    project = _copy_project(tmp_path)
    check = _run([BIN / "capevolve", "check", "--project", project], cwd=tmp_path)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "120 tasks" in check.stdout
    run = _run([BIN / "capevolve", "run", "--project", project, "--run-dir",
                tmp_path / "run", "--engine", "local", "--json"], cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    baseline = json.loads(run.stdout)["baseline"]
    assert baseline["status"] == "complete"
    assert baseline["n_errors"] == 0 and baseline["n_scored"] == baseline["n_tasks"] == 30


def test_copied_openai_project_loads_its_adapter_outside_the_repository(tmp_path):
    """The real-model project (benchmarks/retail/openai) loads and builds its adapter when
    copied out of the repository (running it needs an endpoint, so only loading is shown)."""
    project = _copy_project(tmp_path) / "openai"
    code = textwrap.dedent(f"""
        from capevolve._project.loader import load_project
        adapter = load_project({str(project)!r}).adapter()
        print(type(adapter).__module__, type(adapter).__name__, len(adapter.tasks()))
    """)
    out = _run([sys.executable, "-I", "-c", code], cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["capevolve_adapters.openai_agent.adapter",
                                  "OpenAIRetailAdapter", "120"]


@pytest.mark.ray
@pytest.mark.slow
def test_copied_retail_project_runs_on_ray_workers(ray_session, tmp_path, monkeypatch):
    """On the Ray engine the workers (fresh processes) import the copied project's adapter
    and ``capevolve_adapters`` from the install: same baseline as the local engine."""
    from typer.testing import CliRunner

    from capevolve.cli.app import app

    for name in _DROPPED:
        monkeypatch.delenv(name, raising=False)
    project = _copy_project(tmp_path)
    runner = CliRunner()
    results = {}
    for engine in ("ray", "local"):
        res = runner.invoke(app, ["run", "--project", str(project), "--run-dir",
                                  str(tmp_path / engine), "--engine", engine, "--json"])
        assert res.exit_code == 0, res.output
        results[engine] = json.loads(res.stdout)["baseline"]
    assert results["ray"] == results["local"]
    assert results["ray"]["n_scored"] == 30 and results["ray"]["n_errors"] == 0


def _source_packages(root: Path) -> set[str]:
    """Dotted names of every folder of ``root`` that holds Python modules."""
    return {".".join(p.parent.relative_to(root.parent).parts)
            for p in root.rglob("*.py") if "__pycache__" not in p.parts}


@pytest.mark.slow
def test_wheel_ships_every_package_and_the_retail_data(tmp_path):
    """A normal (non-editable) wheel, built offline from a copy of the sources, holds every
    capevolve subpackage, ``capevolve_adapters`` with the retail data files, and runs the
    retail adapter from an unpacked copy with the repository out of reach."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(REPO / name, src / name)
    for name in ("capevolve", "adapters"):
        shutil.copytree(REPO / name, src / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    build = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                  "--no-index", "-q", "-w", tmp_path / "dist", src], cwd=tmp_path)
    assert build.returncode == 0, build.stdout + build.stderr
    (wheel,) = (tmp_path / "dist").glob("capevolve-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    in_wheel = {n.rpartition("/")[0].replace("/", ".") for n in names if n.endswith(".py")}
    expected = _source_packages(REPO / "capevolve") | {
        p.replace("adapters", "capevolve_adapters", 1)
        for p in _source_packages(REPO / "adapters")}
    assert expected <= in_wheel, f"missing from the wheel: {sorted(expected - in_wheel)}"
    assert {"capevolve_adapters/retail/data/db.json",
            "capevolve_adapters/retail/data/tasks.json", "capevolve/py.typed"} <= set(names)

    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = (f"import sys; sys.path.insert(0, {str(site)!r}); " + PROBE
            + "\nimport capevolve; print(capevolve.__file__)")
    out = _run([sys.executable, "-I", "-c", code], cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    probe_line, capevolve_file = out.stdout.strip().splitlines()
    found = json.loads(probe_line)
    assert found["package"].startswith(str(site)) and capevolve_file.startswith(str(site))
    assert found["tasks"] == 120
