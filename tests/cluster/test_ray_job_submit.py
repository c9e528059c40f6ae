"""The cluster path for real: a local head (job server) plus a second node started with the
`ray start` CLI, the toy demo submitted with `ray job submit`, checked against a local run.

Everything Ray here runs in separate processes on free ports with its own temp dirs and
its own token (RAY_AUTH_MODE=token, a fresh RAY_AUTH_TOKEN passed to every process, as a
user would export it), so it never touches the in-process session Ray of other tests or
~/.ray/auth_token. The nodes are stopped by process id in the fixture's teardown, whatever
happens (cluster/local_cluster.py down).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb
import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.cluster, pytest.mark.slow]
sys.path.insert(0, str(REPO / "cluster"))
import local_cluster  # noqa: E402 - found through the sys.path entry above

RAY = str(Path(sys.executable).parent / "ray")
CAPEVOLVE = str(Path(sys.executable).parent / "capevolve")


def _free_port() -> int:
    """A free TCP port outside Ray's worker port range (10002-19999)."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if not 10002 <= port <= 19999:
            return port


@pytest.fixture(scope="module")
def cluster():
    """A two-node local cluster (1 CPU each) with token auth; stopped in all cases."""
    root = Path(tempfile.mkdtemp(prefix="cev-", dir="/tmp"))  # short: socket path limit
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    env.pop("RAY_ADDRESS", None)
    env = local_cluster.auth_env(env)
    ports = [_free_port() for _ in range(5)]
    cmd = [sys.executable, str(REPO / "cluster" / "local_cluster.py"), "up", "--root",
           str(root), "--port", str(ports[0]), "--dashboard-port", str(ports[1]),
           "--agent-ports", str(ports[2]), str(ports[3]), "--client-port", str(ports[4])]
    try:
        up = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        assert up.returncode == 0, up.stdout + up.stderr
        yield {**json.loads(up.stdout.splitlines()[-1]), "env": env, "root": root}
    finally:
        local_cluster.down(root)
        assert local_cluster._processes(str(root), set()) == []
        shutil.rmtree(root, ignore_errors=True)


def _workdir(tmp: Path) -> Path:
    """What the job ships: the demo script and a copy of the toy project (no .venv)."""
    work = tmp / "wd"
    shutil.copytree(REPO / "benchmarks" / "toy", work / "projects" / "toy",
                    ignore=shutil.ignore_patterns(".capevolve", "__pycache__"))
    shutil.copy(REPO / "cluster" / "demo.sh", work / "demo.sh")
    # 8 rollouts in flight (4 slots per actor) instead of 64: the dispatcher queues up to
    # 3 x slots units per actor, so with 64 the first actor would take a whole 60-unit eval
    config = work / "projects" / "toy" / "capevolve.yaml"
    text = config.read_text()
    assert "concurrency: 64" in text
    config.write_text(text.replace("concurrency: 64", "concurrency: 8"))
    return work


def _rows(run_dir: Path) -> list[tuple]:
    glob = str(run_dir / "rollouts" / "**" / "*.parquet")
    return duckdb.connect().execute(
        f"SELECT split, candidate_id, task_id, trial, seed, reward, output, node_id "
        f"FROM read_parquet('{glob}', hive_partitioning=true, union_by_name=true) "
        "ORDER BY split, candidate_id, task_id, trial").fetchall()


def test_demo_via_ray_job_submit_matches_a_local_run(cluster, tmp_path):
    """Job SUCCEEDED, run dir complete, rollouts on both nodes, numbers equal a local run."""
    env, work = cluster["env"], _workdir(tmp_path)
    job_run, local_run = tmp_path / "job_run", tmp_path / "local_run"
    # the reference runs meanwhile, in-process engine, same project and seeds
    local_env = {**env, "CAPEVOLVE_ENGINE": "local"}
    reference = subprocess.Popen(["bash", "demo.sh", str(local_run), "projects/toy"],
                                 cwd=work, env=local_env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True)
    sid = "capevolve-test-" + secrets.token_hex(4)
    submit = subprocess.run(
        [RAY, "job", "submit", "--address", cluster["dashboard_url"], "--submission-id", sid,
         "--working-dir", str(work), "--", "bash", "demo.sh", str(job_run), "projects/toy"],
        env=env, capture_output=True, text=True, timeout=180)
    _, ref_err = reference.communicate(timeout=120)
    assert reference.returncode == 0, ref_err[-3000:]
    status = subprocess.run([RAY, "job", "status", "--address", cluster["dashboard_url"], sid],
                            env=env, capture_output=True, text=True, timeout=60)
    assert f"Job '{sid}' succeeded" in status.stdout, submit.stdout[-4000:] + submit.stderr
    assert submit.returncode == 0

    for name in ("run.json", "splits.json", "events.jsonl", "final.json", "seal.json",
                 "report.md"):
        assert (job_run / name).is_file(), name
    job_rows, local_rows = _rows(job_run), _rows(local_run)
    assert len(job_rows) == len(local_rows) > 0
    assert [r[:7] for r in job_rows] == [r[:7] for r in local_rows]  # every number equal
    nodes = {r[7] for r in job_rows}
    assert len(nodes) == 2  # both nodes ran rollouts (1 CPU each, one actor per node)
    job_final = json.loads((job_run / "final.json").read_text())
    local_final = json.loads((local_run / "final.json").read_text())
    for key in ("best_id", "delta", "ci95", "test", "test_baseline"):
        assert job_final[key] == local_final[key], key

    # capevolve doctor against the same cluster sees both nodes and no problem
    doctor = subprocess.run([sys.executable, "-m", "capevolve.cli.doctor_cmds", "--address",
                             cluster["gcs_address"], "--json"], env=env, capture_output=True,
                            text=True, timeout=90)
    assert doctor.returncode == 0, doctor.stderr[-3000:]
    report = json.loads(doctor.stdout)
    assert report["ok"] and {n["node_id"] for n in report["nodes"]} == nodes
