"""Start-up stays cheap: `--help`, `--version`, `status` (text, --json, --project), `check` and
`verify` load no Ray, DuckDB, Arrow, numpy, pandas or SciPy, `down` no Ray (checked in
``sys.modules`` of a real process, never by timing)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HEAVY = ("ray", "duckdb", "pyarrow", "numpy", "pandas", "scipy")

PROBE = """
import json, sys
sys.argv = ["capevolve", *json.loads(sys.argv[1])]
from capevolve.cli.app import main
code = 0
try:
    main()
except SystemExit as exc:
    code = exc.code or 0
sys.stderr.write(f"EXIT {code}\\n")
sys.stderr.write("MODULES " + json.dumps(sorted({m.split('.')[0] for m in sys.modules})) + "\\n")
"""


def _shown(*args: str, env: dict[str, str] | None = None) -> tuple[str, set[str]]:
    """What ``capevolve ARGS`` printed (exit 0, no traceback) and the top-level modules
    it loaded."""
    proc = subprocess.run([sys.executable, "-c", PROBE, json.dumps(list(args))],
                          capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "CAPEVOLVE_PROGRESS": "off", **(env or {})})
    line = [ln for ln in proc.stderr.splitlines() if ln.startswith("MODULES ")]
    assert line and "Traceback" not in proc.stderr and "EXIT 0" in proc.stderr, proc.stderr
    return proc.stdout, set(json.loads(line[-1].removeprefix("MODULES ")))


def _loaded(*args: str, env: dict[str, str] | None = None) -> set[str]:
    return _shown(*args, env=env)[1]


@pytest.mark.parametrize("args", [("--help",), ("evaluate", "--help"), ("status", "--help"),
                                  ("--version",)])
def test_help_imports_nothing_heavy(args):
    """`capevolve --help` (and a command's --help, --version) imports none of HEAVY."""
    assert not _loaded(*args) & set(HEAVY)


def test_status_imports_nothing_heavy(loop):
    """`capevolve status` of a finalized run with a gate and an accept reads the stored
    records only: neither the text nor the --json form loads any of HEAVY (the root API
    imports a verb's module when that verb runs, and status's helpers live in light
    modules); what each prints is still the run's, in the same process that was checked."""
    text, loaded = _shown("status", "--run-dir", str(loop.path))
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))
    assert "best cand_001 val" in text and "gates run 1 (0 exploratory)" in text
    assert "cand_001 (parent seed): accept; gate said accept" in text
    assert "finalized: " in text
    shown, loaded = _shown("status", "--run-dir", str(loop.path), "--json")
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))
    status = json.loads(shown)
    assert status["best_id"] == "cand_001" and status["gates"]["gates"] == 1
    assert [d["decision"] for d in status["decisions"]] == ["baseline", "accept"]
    assert status["finalized"] and status["final"]["verdict"] != "not_measured"
    assert {e["status"] for e in status["evaluations"]} == {"complete"}
    assert status["unsettled_units"] == 0 and status["best_val"]["n_scored"] > 0


def test_check_and_verify_import_nothing_heavy(loop):
    """`capevolve check` of the toy project (it imports nothing heavy itself) and
    `capevolve verify` of a run with Parquet parts (hashes, no Arrow) load none of HEAVY."""
    shown, loaded = _shown("check", "--project", str(loop.project), "--json")
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))
    assert json.loads(shown)["ok"] is True
    shown, loaded = _shown("verify", "--run-dir", str(loop.path), "--json")
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))
    assert json.loads(shown)["ok"] is True


def test_down_imports_no_ray(tmp_path):
    """`capevolve down` with nothing running says so without importing Ray."""
    loaded = _loaded("down", env={"CAPEVOLVE_RAY_STATE_DIR": str(tmp_path)})
    assert "ray" not in loaded


def test_status_of_a_project_imports_nothing_heavy(tmp_path):
    """`capevolve status --project P` (the run found under P/.capevolve/, as agent mode
    uses it) loads none of HEAVY either, and shows that run."""
    from cli.cli_support import copy_toy, invoke

    project = copy_toy(tmp_path / "toy")
    made = invoke("run", "--project", project, "--engine", "local", "--json")
    assert made.exit_code == 0, made.output
    run_dir = json.loads(made.stdout)["run_dir"]
    shown, loaded = _shown("status", "--project", str(project), "--json")
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))
    status = json.loads(shown)
    assert status["run_dir"] == run_dir and status["best_id"] == "seed"
