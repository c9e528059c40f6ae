"""CLI habits: --version, -h, status listing decisions, report --html / --json data,
--project P meaning P's latest run, and a --help that loads no heavy module."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli.cli_support import copy_toy, describe, invoke, one_json, user_error

import capevolve

pytestmark = pytest.mark.slow

HEAVY = ("duckdb", "pyarrow", "ray", "scipy", "numpy", "pandas", "capevolve.records",
         "capevolve._store", "capevolve.diagnose", "capevolve.report")


def test_version_and_short_help():
    """--version prints the installed version; -h is --help on the app and a command."""
    result = invoke("--version")
    assert result.exit_code == 0 and result.stdout == f"capevolve {capevolve.__version__}\n"
    for args in (("-h",), ("status", "-h"), ("diagnose", "-h"), ("census", "export", "-h")):
        result = invoke(*args)
        assert result.exit_code == 0 and "Usage:" in result.stdout, describe(result)


def test_help_loads_no_heavy_module():
    """`capevolve --help` (and the CLI's import) loads no DuckDB, Arrow, Ray, SciPy, numpy,
    nor the records, store, diagnose or report layers: that is what keeps it fast."""
    code = ("import sys\nfrom capevolve.cli.app import app\n"
            "try:\n    app(['--help'])\nexcept SystemExit:\n    pass\n"
            f"print([m for m in sys.modules if m.split('.')[0] in {HEAVY!r} "
            f"or any(m == h or m.startswith(h + '.') for h in {HEAVY!r})])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_help_takes_under_half_a_second_of_cpu():
    """`capevolve --help` in a fresh process: the best of three uses < 0.5 s of CPU (CPU
    time, not wall time, so a busy machine does not make it flaky)."""
    import resource

    exe = Path(sys.executable).with_name("capevolve")
    if not exe.is_file():
        pytest.skip("the capevolve console script is not installed next to this python")
    costs = []
    for _ in range(3):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run([str(exe), "--help"], capture_output=True, timeout=60)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        assert done.returncode == 0 and b"Usage:" in done.stdout
        costs.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    assert min(costs) < 0.5, costs


def test_status_lists_each_candidate_decision_and_the_final_result(loop):
    """status: one line per candidate (parent, decision, gate, val) and the verdict."""
    payload = one_json(invoke("status", "--run-dir", loop.path, "--json"))
    rows = {r["candidate_id"]: r for r in payload["decisions"]}
    assert rows["seed"]["decision"] == "baseline"
    assert (rows["cand_001"]["decision"], rows["cand_001"]["gate"],
            rows["cand_001"]["parent"]) == ("accept", "accept", "seed")
    human = invoke("status", "--run-dir", loop.path)
    assert "cand_001 (parent seed): accept; gate said accept" in human.stdout
    assert "finalized: confirmed" in human.stdout


def test_report_html_and_json_data(loop, tmp_path):
    """report --html writes report.html next to report.md; --json carries the data."""
    run = tmp_path / "run"
    shutil.copytree(loop.path, run)
    payload = one_json(invoke("report", "--run-dir", run, "--html", "--json"))
    assert payload["html"] == str(run / "report.html")
    assert payload["report"] == str(run / "report.md")
    assert (run / "report.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    data = payload["data"]
    assert data["run"]["best_id"] == "cand_001"
    assert [s["decision"] for s in data["iterations"]] == ["baseline", "accept"]
    assert data["final"]["verdict"] == "confirmed"
    json.dumps(data, allow_nan=False)


def test_project_means_its_latest_run(tmp_path):
    """Without --run-dir, --project P means P's newest run (for reading and for evaluate,
    gate, accept, reject, finalize); a folder without run.json under .capevolve/ is not a
    run; no run at all, or neither option, is one error line (exit 2)."""
    project = copy_toy(tmp_path / "toy")
    user_error(invoke("status", "--project", project), "--project", "no run")
    first = capevolve.create_run(project)
    second = capevolve.create_run(project)
    (project / ".capevolve" / "run_99999999T999999999999Z").mkdir()  # sorts last, no run
    for args in (("status", "--json"), ("report", "--json"), ("query", "SELECT 1", "--json")):
        result = invoke(*args, "--project", project)
        assert result.exit_code == 0, describe(result)
    payload = one_json(invoke("status", "--project", project, "--json"))
    assert payload["run_id"] == second.run_id != first.run_id
    explicit = one_json(invoke("status", "--project", project, "--run-dir", first.root,
                               "--json"))
    assert explicit["run_id"] == first.run_id
    user_error(invoke("status"), "--run-dir")
    evaluated = one_json(invoke("evaluate", "--project", project, "--candidate", "seed",
                                "--engine", "local", "--json"))
    assert evaluated["eval_id"] == "val__seed__k3"
    assert (second.root / "evals" / "val__seed__k3.json").is_file()
    assert not (first.root / "evals" / "val__seed__k3.json").exists()
    for verb in (("evaluate", "--candidate", "seed"), ("accept", "--candidate", "seed"),
                 ("reject", "--candidate", "seed"), ("gate", "--candidate", "seed"),
                 ("finalize",)):
        user_error(invoke(*verb), "--run-dir")


@pytest.mark.parametrize("bad", ["{", "[]"])
def test_report_refuses_a_broken_diagnosis_with_one_line(loop, tmp_path, bad):
    """A hand-broken diagnosis file makes report --html exit 2 naming the file."""
    run = tmp_path / "run"
    shutil.copytree(loop.path, run)
    (run / "diagnoses").mkdir(exist_ok=True)
    (run / "diagnoses" / "val__cand_001.json").write_text(bad, encoding="utf-8")
    user_error(invoke("report", "--run-dir", run, "--html"), "val__cand_001.json")
    assert not (run / "report.html").exists()
    assert (run / "diagnoses" / "val__cand_001.json").read_text(encoding="utf-8") == bad
