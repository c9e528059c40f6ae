"""Start-up stays cheap: `--help` loads no Ray, DuckDB, Arrow, pandas or SciPy, `status`
no Ray and no SciPy, `down` no Ray (checked in ``sys.modules`` of a real process, never by
timing)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HEAVY = ("ray", "duckdb", "pyarrow", "pandas", "scipy")

PROBE = """
import json, sys
sys.argv = ["capevolve", *json.loads(sys.argv[1])]
from capevolve.cli.app import main
try:
    main()
except SystemExit:
    pass
sys.stderr.write("MODULES " + json.dumps(sorted({m.split('.')[0] for m in sys.modules})) + "\\n")
"""


def _loaded(*args: str, env: dict[str, str] | None = None) -> set[str]:
    proc = subprocess.run([sys.executable, "-c", PROBE, json.dumps(list(args))],
                          capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "CAPEVOLVE_PROGRESS": "off", **(env or {})})
    line = [ln for ln in proc.stderr.splitlines() if ln.startswith("MODULES ")]
    assert line, proc.stderr
    return set(json.loads(line[-1].removeprefix("MODULES ")))


@pytest.mark.parametrize("args", [("--help",), ("evaluate", "--help"), ("status", "--help"),
                                  ("--version",)])
def test_help_imports_nothing_heavy(args):
    """`capevolve --help` (and a command's --help, --version) imports none of HEAVY."""
    assert not _loaded(*args) & set(HEAVY)


def test_status_imports_no_ray_and_no_scipy(loop):
    """`capevolve status` of a finalized run with a gate and an accept reads the stored
    records (its figures need no quantile): no Ray, no SciPy; what it prints still holds."""
    assert not _loaded("status", "--run-dir", str(loop.path)) & {"ray", "scipy"}
    shown = subprocess.run([sys.executable, "-c", "from capevolve.cli.app import main; main()",
                            "status", "--run-dir", str(loop.path), "--json"],
                           capture_output=True, text=True, timeout=120, check=True)
    status = json.loads(shown.stdout)
    assert status["best_id"] == "cand_001" and status["gates"]["gates"] == 1
    assert [d["decision"] for d in status["decisions"]] == ["baseline", "accept"]


def test_down_imports_no_ray(tmp_path):
    """`capevolve down` with nothing running says so without importing Ray."""
    loaded = _loaded("down", env={"CAPEVOLVE_RAY_STATE_DIR": str(tmp_path)})
    assert "ray" not in loaded
