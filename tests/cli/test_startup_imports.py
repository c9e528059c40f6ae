"""Start-up stays cheap: `--help`, `--version`, `status` (text, --json, --project), `check` and
`verify` load no Ray, DuckDB, Arrow, numpy, pandas or SciPy, `down` no Ray, `gate` no pandas
(checked in ``sys.modules`` of a real process, never by timing)."""

from __future__ import annotations

import json
import os
import shutil
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


@pytest.mark.slow
@pytest.mark.parametrize("args", [("--help",), ("evaluate", "--help"), ("status", "--help"),
                                  ("--version",)])
def test_help_imports_nothing_heavy(args):
    """`capevolve --help` (and a command's --help, --version) imports none of HEAVY."""
    assert not _loaded(*args) & set(HEAVY)


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


BEFORE_FIRST_ROLLOUT = ("duckdb", "pyarrow.compute", "pyarrow.parquet", "pandas", "rich")
"""What a new evaluation never loads before its engine starts the rollouts: the resume check
of an evaluation with no part answers without a query, the journals and the row writer
load Arrow's compute and Parquet modules when they first write, and the progress display
imports rich only on a terminal (Arrow itself and numpy are not here: Ray's serialisation
imports them in every driver)."""

ENGINE_PROBE = """
import json, sys
WATCHED = set(json.loads(sys.argv[2]))
sys.argv = ["capevolve", *json.loads(sys.argv[1])]
from capevolve._engine import local
seen = {}
run = local.LocalEngine.run
def probed(self, *args, **kwargs):
    seen.setdefault("at_run", sorted(m for m in sys.modules if m in WATCHED))
    return run(self, *args, **kwargs)
local.LocalEngine.run = probed
from capevolve.cli.app import main
code = 0
try:
    main()
except SystemExit as exc:
    code = exc.code or 0
seen["at_exit"] = sorted(m for m in sys.modules if m in WATCHED)
sys.stderr.write(f"EXIT {code}\\n")
sys.stderr.write("SEEN " + json.dumps(seen) + "\\n")
"""


@pytest.mark.slow
def test_a_new_evaluate_starts_its_engine_without_duckdb_arrow_compute_or_rich(fresh_run,
                                                                             seed_twin,
                                                                             tmp_path):
    """`capevolve evaluate` of a new candidate (output piped, as an agent runs it) reaches
    its engine's run with none of BEFORE_FIRST_ROLLOUT loaded; the same process has loaded
    DuckDB and the Parquet writer by its exit (the summary and the parts), so the probe
    sees the modules when they are loaded. The evaluation is complete and resumes nothing."""
    candidate = tmp_path / "cand"
    shutil.copytree(seed_twin, candidate)
    (candidate / "NOTE.md").write_text("a new candidate\n", encoding="utf-8")
    args = ["evaluate", "--run-dir", str(fresh_run), "--candidate", str(candidate),
            "--split", "val", "--n-trials", "1", "--engine", "local", "--json"]
    proc = subprocess.run([sys.executable, "-c", ENGINE_PROBE, json.dumps(args),
                           json.dumps(BEFORE_FIRST_ROLLOUT)], capture_output=True, text=True,
                          timeout=300, check=False,
                          env={**os.environ, "CAPEVOLVE_PROGRESS": "plain"})
    line = [ln for ln in proc.stderr.splitlines() if ln.startswith("SEEN ")]
    assert line and "EXIT 0" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    seen = json.loads(line[-1].removeprefix("SEEN "))
    assert seen["at_run"] == [], seen
    assert {"duckdb", "pyarrow.parquet"} <= set(seen["at_exit"]), seen
    record = json.loads(proc.stdout)
    assert record["status"] == "complete" and record["units_run"] == record["n_tasks"]


@pytest.mark.slow
def test_a_gate_reads_both_sides_without_pandas(fresh_run, worse_dir):
    """`capevolve gate` reads both sides' rows through DuckDB as Arrow columns and turns them
    into numpy from their buffers: it loads no pandas (pyarrow's ``to_numpy`` and
    ``pa.array`` import it, 0.3 s, wherever it is installed), while the same process did load
    DuckDB and SciPy, so the probe sees what the gate loaded; the gate is recorded."""
    pytest.importorskip("pandas")
    from cli.cli_support import invoke

    made = invoke("evaluate", "--run-dir", fresh_run, "--candidate", worse_dir,
                  "--engine", "local", "--json")
    assert made.exit_code == 0, made.output
    shown, loaded = _shown("gate", "--run-dir", str(fresh_run), "--candidate", "cand_001",
                           "--json")
    assert "pandas" not in loaded
    assert {"duckdb", "scipy"} <= loaded
    assert json.loads(shown)["decision"] == "reject"
