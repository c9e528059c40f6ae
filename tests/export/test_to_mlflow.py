"""export mlflow into a real MLflow tracking store (sqlite), read back with MLflow's client."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import capevolve

mlflow_tracking = pytest.importorskip("mlflow.tracking", reason="needs the mlflow extra")
pytestmark = pytest.mark.slow

CLI = str(Path(sys.executable).parent / "capevolve")


@pytest.fixture(scope="module")
def finalized(view_run, tmp_path_factory):
    """A copy of the view run with cand_001 accepted and the test split scored."""
    run_dir = tmp_path_factory.mktemp("mlrun") / "run"
    shutil.copytree(view_run.path, run_dir)
    capevolve.gate(run_dir, view_run.improved)
    capevolve.accept(run_dir, view_run.improved, note="adds the rules")
    capevolve.gate(run_dir, view_run.worse)
    capevolve.reject(run_dir, view_run.worse, note="drops the compare rule")
    capevolve.finalize(run_dir, engine="local", spend_test_ids=True)
    return run_dir


def export(run_dir: Path, uri: str) -> dict:
    done = subprocess.run([CLI, "export", "mlflow", "--run-dir", str(run_dir),
                           "--tracking-uri", uri, "--json"], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_runs_params_metrics_and_artifacts(finalized, tmp_path, view_run):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    result = export(finalized, uri)
    client = mlflow_tracking.MlflowClient(tracking_uri=uri)
    run = capevolve.open_run(finalized)
    parent = client.get_run(result["parent_run_id"])
    assert parent.data.params["config.num_trials"] == "3"
    assert parent.data.params["config.gate.alpha"] == str(run.manifest.config.gate.alpha)
    final = json.loads((finalized / "final.json").read_text())
    assert parent.data.metrics["test.delta"] == pytest.approx(final["delta"])
    assert parent.data.tags["verdict"] == final["verdict"]
    assert parent.data.tags["best_id"] == view_run.improved
    names = {f.path for f in client.list_artifacts(parent.info.run_id)}
    assert {"final.json", "run.json"} <= names
    assert (tmp_path / "mlartifacts").is_dir() and not (Path.cwd() / "mlruns").exists()
    assert set(result["runs"]) == {"seed", view_run.improved, view_run.worse}
    for cid, mlflow_id in result["runs"].items():
        child = client.get_run(mlflow_id)
        assert child.data.tags["mlflow.parentRunId"] == parent.info.run_id
        record = capevolve.open_run(finalized)
        val = json.loads((finalized / "evals" / f"val__{cid}__k3.json").read_text())
        assert child.data.metrics["val.k3.mean"] == pytest.approx(val["mean"])
        assert child.data.metrics["val.k3.stderr"] == pytest.approx(val["stderr"])
        assert child.data.params["hash"] == record.candidate(cid).hash
        files = {f.path for f in client.list_artifacts(mlflow_id, "capability")}
        assert "capability/system_prompt.md" in files
    improved = client.get_run(result["runs"][view_run.improved])
    assert improved.data.tags["decision"] == "accept"
    gate = [e for e in run.events("gate") if e.candidate_id == view_run.improved][-1]
    assert improved.data.metrics["gate.delta"] == pytest.approx(gate.delta)
    worse = client.get_run(result["runs"][view_run.worse])
    assert worse.data.tags["decision"] == "reject"
    assert worse.data.tags["note"] == "drops the compare rule"


def test_export_again_updates_the_same_runs(finalized, tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    first, second = export(finalized, uri), export(finalized, uri)
    assert first == second
    client = mlflow_tracking.MlflowClient(tracking_uri=uri)
    runs = client.search_runs([first["experiment_id"]])
    assert len(runs) == 1 + len(first["runs"])
    history = client.get_metric_history(first["parent_run_id"], "test.delta")
    assert len(history) == 1


def test_unreachable_store_is_one_line(finalized, tmp_path):
    bad = tmp_path / "file-not-dir"
    bad.write_text("x")
    done = subprocess.run([CLI, "export", "mlflow", "--run-dir", str(finalized),
                           "--tracking-uri", f"sqlite:///{bad}/nested/mlflow.db"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and done.stderr.count("error:") == 1
