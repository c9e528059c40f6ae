"""capevolve's own local Ray: reused across commands, stopped by `down` or when idle, and
never confused with another cluster (a dead, forged or foreign state; a killed head).

Lifecycle tests start their own owned Ray under a state dir of their own (below the
session's RAY_STATE_ROOT, so the session's end stops any they leave) and talk to it only
through real subprocesses: the test process never imports ray for them.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import RAY_STATE_ROOT

from capevolve._engine.ray import owned
from capevolve._engine.ray.owned_state import (
    OwnedRay,
    alive,
    connected_drivers,
    read_state,
    state_path,
    write_state,
)
from capevolve.errors import EngineError

pytestmark = [pytest.mark.ray, pytest.mark.slow]

ADAPTER = """
import os

from capevolve import Rollout, Score, Task


class A:
    def tasks(self):
        return [Task(id=f"t{i}", input=i, target="x") for i in range(8)]

    def run_target(self, candidate, task, *, trial, seed):
        return Rollout(output=f"{os.getpid()} {os.environ.get('OWNED_MARK', '-')}")

    def score(self, task, rollout):
        return Score(reward=1.0)
"""


def _state_dir(name: str) -> Path:
    path = RAY_STATE_ROOT / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def _project(root: Path) -> Path:
    (root / "cap").mkdir(parents=True)
    (root / "cap" / "prompt.md").write_text("- be right\n", encoding="utf-8")
    (root / "adapter.py").write_text(textwrap.dedent(ADAPTER), encoding="utf-8")
    (root / "capevolve.yaml").write_text(
        "name: owned\nadapter: adapter.py:A\ncapability_path: cap\nnum_trials: 1\n"
        "splits: {train: 0.4, val: 0.4, test: 0.2, seed: 0}\n"
        "engine: {kind: ray, workers: 1, concurrency: 8, isolation: none}\n", encoding="utf-8")
    return root


def _env(state: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("CAPEVOLVE_RUN_DIR", "CAPEVOLVE_PROJECT", "CAPEVOLVE_ENGINE",
                        "RAY_ADDRESS", "CAPEVOLVE_RAY_REUSE")}
    return {**env, "CAPEVOLVE_RAY_STATE_DIR": str(state), "CAPEVOLVE_PROGRESS": "off",
            "RAY_USAGE_STATS_ENABLED": "0", **extra}


def _cli(env: dict[str, str], *args: object, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from capevolve.cli.app import main; main()",
                           *map(str, args)], env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)


def _rows(run: Path, candidate: str) -> list[tuple[str, str, str]]:
    import duckdb

    files = str(run / "rollouts" / "**" / "*.parquet")
    return duckdb.sql(f"SELECT output, worker_id, node_id FROM read_parquet('{files}', "
                      f"hive_partitioning=true) WHERE candidate = '{candidate}'").fetchall()


def _gone(pid: int, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not Path(f"/proc/{pid}").exists() or "zombie" in _status(pid):
            return True
        time.sleep(0.2)
    return False


def _status(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text().split("State:")[1].split("\n")[0].lower()
    except (OSError, IndexError):
        return "zombie"


def _ray_processes(temp_dir: str) -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if temp_dir in cmd:
                found.append(f"{proc.name}: {cmd[:120]}")
    return found


def test_two_cli_commands_share_one_owned_ray_and_down_stops_it(tmp_path, ray_session):
    """The first evaluate starts the owned Ray, the second joins the same cluster (its own
    workers, this command's environment), neither joins the Ray already running here;
    `down` stops it: daemon and Ray processes gone, state removed."""
    state = _state_dir("reuse")
    project = _project(tmp_path / "p")
    run = tmp_path / "run"
    first = _cli(_env(state, OWNED_MARK="one"), "run", "--project", project, "--run-dir", run,
                 "--json")
    assert first.returncode == 0, first.stderr
    recorded = read_state(state_path(state))
    assert recorded is not None and alive(recorded)
    assert recorded.address != ray_session.get_runtime_context().gcs_address
    cand = tmp_path / "cand"
    cand.mkdir()
    (cand / "prompt.md").write_text("- be right, twice\n", encoding="utf-8")
    second = _cli(_env(state, OWNED_MARK="two"), "evaluate", "--run-dir", run, "--candidate",
                  cand, "--split", "val", "--json")
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["status"] == "complete"
    assert read_state(state_path(state)) == recorded  # the same Ray, not a new one
    seed_rows, cand_rows = _rows(run, "seed"), _rows(run, "cand_001")
    assert {r[2] for r in seed_rows} == {r[2] for r in cand_rows}  # one node: one cluster
    assert {r[0].split()[1] for r in seed_rows} == {"one"}
    assert {r[0].split()[1] for r in cand_rows} == {"two"}  # this command's environment
    first_pids = {int(r[0].split()[0]) for r in seed_rows}
    assert first_pids.isdisjoint(int(r[0].split()[0]) for r in cand_rows)
    assert all(_gone(pid, 30) for pid in first_pids)  # rollout actors died with their driver

    stopped = _cli(_env(state), "down", "--json")
    assert stopped.returncode == 0, stopped.stderr
    assert json.loads(stopped.stdout)["stopped"] is True
    assert not state_path(state).exists()
    assert _gone(recorded.pid) and not _ray_processes(recorded.temp_dir)
    again = _cli(_env(state), "down")
    assert again.returncode == 0 and "no owned Ray" in again.stdout


def test_killed_head_is_replaced_and_an_idle_ray_stops_itself(tmp_path, monkeypatch):
    """A stale state (dead pid, an address someone else listens on) is not joined; a head
    killed with SIGKILL takes its Ray processes along and the next command starts a new
    one; `down` refuses while a driver is connected; with a short idle timeout the owned
    Ray really stops after its last driver (killed with SIGKILL) is gone."""
    import socket

    state = _state_dir("kill")
    monkeypatch.setenv("CAPEVOLVE_RAY_STATE_DIR", str(state))
    monkeypatch.setenv("CAPEVOLVE_RAY_IDLE_S", "600")
    dead = subprocess.Popen(["true"])
    dead.wait()
    foreign = socket.create_server(("127.0.0.1", 0))
    stale = OwnedRay(address=f"127.0.0.1:{foreign.getsockname()[1]}", pid=dead.pid,
                     uid=os.getuid(), session="f" * 32, ray_version="x", python=sys.executable,
                     temp_dir=str(tmp_path / "nope"), num_cpus=1, idle_timeout_s=60,
                     started_at=0.0, state_file=str(state_path(state)))
    write_state(state_path(state), stale)
    try:
        first = owned.connect(state)
    finally:
        foreign.close()
    assert first.session != stale.session and first.address != stale.address
    assert alive(first)

    os.kill(first.pid, signal.SIGKILL)
    assert _gone(first.pid)
    deadline = time.monotonic() + 60
    while _ray_processes(first.temp_dir) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _ray_processes(first.temp_dir), "Ray outlived its killed head"

    monkeypatch.setenv("CAPEVOLVE_RAY_IDLE_S", "20")  # the driver below joins well within it
    second = owned.connect(state)
    assert second.pid != first.pid and alive(second) and second.idle_timeout_s == 20
    driver = subprocess.Popen(
        [sys.executable, "-c", "from capevolve._engine.ray import owned; owned.join_owned(); "
         "import ray, time; print(ray.cluster_resources()['CPU'], flush=True); time.sleep(600)"],
        env=_env(state), stdout=subprocess.PIPE, text=True)
    try:
        assert driver.stdout is not None and float(driver.stdout.readline()) >= 1
        deadline = time.monotonic() + 60
        while driver.pid not in connected_drivers(state_path(state)):
            assert time.monotonic() < deadline, "the daemon never saw the driver"
            time.sleep(0.5)
        with pytest.raises(EngineError, match=f"in use by 1 command.*pid {driver.pid}"):
            owned.down(state)  # `down` refuses while a command is connected
        assert alive(second)
    finally:
        driver.kill()  # a driver killed with SIGKILL counts as gone
        driver.wait()
    assert _gone(second.pid, timeout=120), "the idle owned Ray did not stop"
    assert not state_path(state).exists() and not state_path(state).with_suffix(".token").exists()
    assert not _ray_processes(second.temp_dir)


def test_address_joins_exactly_that_cluster(tmp_path, ray_session):
    """With RAY_ADDRESS the command joins that cluster: no owned Ray is started or recorded."""
    from capevolve._engine.ray import pool

    pool.shutdown_pool()  # actors earlier tests left cached in this session hold its CPUs
    state = _state_dir("address")
    project = _project(tmp_path / "p")
    run = tmp_path / "run"
    address = ray_session.get_runtime_context().gcs_address
    done = _cli(_env(state, RAY_ADDRESS=address, RAY_AUTH_MODE="token"), "run", "--project",
                project, "--run-dir", run, "--json")
    assert done.returncode == 0, done.stderr
    assert not state_path(state).exists()
    assert {r[2] for r in _rows(run, "seed")} == {ray_session.get_runtime_context().get_node_id()}


def test_opt_out_starts_a_private_ray_and_records_nothing(tmp_path):
    """CAPEVOLVE_RAY_REUSE=0: the command starts a local Ray of its own (gone when it
    exits), and no owned Ray is started or recorded."""
    state = _state_dir("optout")
    project = _project(tmp_path / "p")
    done = _cli(_env(state, CAPEVOLVE_RAY_REUSE="0"), "run", "--project", project, "--run-dir",
                tmp_path / "run", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["baseline"]["status"] == "complete"
    assert not state_path(state).exists() and not (state / "daemon.log").exists()


def test_a_ray_start_cluster_of_this_machine_is_joined_instead(tmp_path, ray_session):
    """Ray's record of the cluster `ray start` left running here (``ray_current_cluster``
    in its temp dir) is followed, as ``ray.init()`` does: the command runs on that cluster
    and no owned Ray is started or recorded. A record whose address does not answer is not
    followed."""
    from capevolve._engine.ray import pool

    pool.shutdown_pool()
    ray_tmp = tmp_path / "ray-tmp"
    (ray_tmp / "ray").mkdir(parents=True)
    (ray_tmp / "ray" / "ray_current_cluster").write_text(
        ray_session.get_runtime_context().gcs_address, encoding="utf-8")
    state = _state_dir("ray-start")
    project = _project(tmp_path / "p")
    run = tmp_path / "run"
    done = _cli(_env(state, RAY_TMPDIR=str(ray_tmp), RAY_AUTH_MODE="token"), "run",
                "--project", project, "--run-dir", run, "--json")
    assert done.returncode == 0, done.stderr
    assert not state_path(state).exists()
    assert {r[2] for r in _rows(run, "seed")} == {ray_session.get_runtime_context().get_node_id()}


def test_a_ray_start_record_that_does_not_answer_is_not_followed(tmp_path, monkeypatch):
    import socket

    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path))
    (tmp_path / "ray").mkdir()
    assert owned.started_here() is None  # no record
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        address = f"127.0.0.1:{listening.getsockname()[1]}"
        (tmp_path / "ray" / "ray_current_cluster").write_text(address, encoding="utf-8")
        assert owned.started_here() == address
    assert owned.started_here() is None  # nothing answers there now
