"""The import contracts (pyproject's [tool.importlinter]) hold, and they have teeth.

``make check`` runs ``lint-imports`` in CI; these tests show that the contracts are kept by
the tree and that each one breaks when a layer reaches where DESIGN.md says it must not.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).parent / "lint-imports"

# (module to create or extend, the import planted in it, the contract that must break, text
# that must appear in that contract's violation report)
PLANTED = [
    ("capevolve/_loop/planted_ray.py", "import ray", "Only capevolve._engine.ray imports ray",
     "capevolve._loop.planted_ray -> ray"),
    ("capevolve/kinds.py", "from capevolve._store import layout",
     "The root vocabulary imports no internal layer", "capevolve.kinds -> capevolve._store"),
    ("capevolve/_policy/planted_io.py", "import duckdb",
     "_policy is pure: stats and the root vocabulary only, no I/O libraries",
     "capevolve._policy.planted_io -> duckdb"),
    ("capevolve/_engine/planted_store.py", "from capevolve._store import rundir",
     "_engine executes: adapter, _project and the root vocabulary only",
     "capevolve._engine.planted_store -> capevolve._store"),
    ("capevolve/_engine/contract.py", "from capevolve._engine import local",
     "The engine contract imports no engine implementation",
     "capevolve._engine.contract -> capevolve._engine.local"),
    ("capevolve/_store/planted_up.py", "from capevolve._policy import gate",
     "_store persists: records, config, kinds and errors only",
     "capevolve._store.planted_up -> capevolve._policy"),
    ("capevolve/_project/planted_up.py", "from capevolve._store import layout",
     "_project loads user code: adapter and the root vocabulary only",
     "capevolve._project.planted_up -> capevolve._store"),
    ("capevolve/_loop/planted_cli.py", "from capevolve.cli import output",
     "_loop is the application layer: below the root API, the CLI and the presenters",
     "capevolve._loop.planted_cli -> capevolve.cli"),
    ("capevolve/_api.py", "from capevolve._engine import plan",
     "The root API reaches the layers through _loop (RunDir and query from _store)",
     "capevolve._api -> capevolve._engine"),
    ("capevolve/cli/planted_internal.py", "from capevolve._store import rundir",
     "The CLI is a thin shell over the root API, diagnose and report",
     "capevolve.cli.planted_internal -> capevolve._store"),
    ("capevolve/models/planted_store.py", "from capevolve._store import layout",
     "capevolve.models calls endpoints: the root vocabulary only, no layer",
     "capevolve.models.planted_store -> capevolve._store"),
    # contract -> local closes a cycle (local imports contract): a cycle between siblings
    ("capevolve/_engine/contract.py", "", "No import cycles between sibling modules",
     "- .contract -> .local"),
]


def _lint(cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(LINT)], cwd=cwd, capture_output=True, text=True, timeout=300,
                          check=False)


def _verdicts(output: str) -> dict[str, str]:
    return {m.group(1).strip(): m.group(2)
            for m in re.finditer(r"^(.+?) (KEPT|BROKEN)$", output, re.M)}


def test_the_tree_keeps_every_contract():
    """lint-imports on the repository: every contract kept."""
    out = _lint(REPO)
    verdicts = _verdicts(out.stdout)
    assert verdicts and set(verdicts.values()) == {"KEPT"}, out.stdout[-3000:]
    assert out.returncode == 0


def test_each_contract_breaks_when_its_layer_reaches_too_far(tmp_path):
    """On a copy of the package with one forbidden import planted per contract (Ray outside
    the Ray engine, an I/O library in _policy, the store importing policy, the CLI importing
    the store, a sibling cycle, ...), every one of those contracts reports BROKEN."""
    shutil.copy2(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copytree(REPO / "capevolve", tmp_path / "capevolve",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for rel, line, _, _ in PLANTED:
        path = tmp_path / rel
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        if line:
            path.write_text(text + f"\n{line}  # planted\n", encoding="utf-8")
    out = _lint(tmp_path)
    verdicts = _verdicts(out.stdout)
    expected = {contract for _, _, contract, _ in PLANTED}
    assert expected == set(verdicts), f"contracts not planted for: {set(verdicts) - expected}"
    assert {name for name, v in verdicts.items() if v == "BROKEN"} == expected, out.stdout
    report = out.stdout.split("Broken contracts", 1)[1]
    for _, _, contract, evidence in PLANTED:
        section = report.split(contract, 1)[1]
        following = [c for c in expected if c != contract and c in section]
        if following:
            section = section[:min(section.index(c) for c in following)]
        assert evidence in section, f"{contract}: no {evidence!r} in\n{section}"
    assert out.returncode != 0
