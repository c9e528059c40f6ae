"""The owned local Ray's state file is trusted only when it is this user's, unedited, and
names a daemon that still runs; the opt-out and the idle timeout parse strictly.

No Ray is started here: every check happens before anyone would join a cluster.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from capevolve._engine.ray import owned
from capevolve._engine.ray.owned_state import (
    OwnedRay,
    alive,
    connected_drivers,
    drivers_path,
    env_digest,
    read_state,
    state_path,
    write_state,
)
from capevolve.config import EngineConfig
from capevolve.errors import EngineError


def _state(path: Path, **changes) -> OwnedRay:
    fields = dict(address="127.0.0.1:6379", pid=os.getpid(), uid=os.getuid(), session="a" * 32,
                  ray_version="x", python=sys.executable, temp_dir="/nonexistent", num_cpus=1,
                  idle_timeout_s=60.0, started_at=0.0, state_file=str(path))
    return OwnedRay(**{**fields, **changes})


def test_signed_state_round_trips_and_a_hand_edit_is_refused(tmp_path):
    """What the daemon signed reads back equal; one changed byte is refused, naming the file."""
    path = state_path(tmp_path)
    signed = write_state(path, _state(path))
    assert read_state(path) == signed and oct(path.stat().st_mode & 0o777) == "0o600"
    path.write_text(signed.model_dump_json().replace("127.0.0.1:6379", "10.0.0.9:6379"))
    with pytest.raises(EngineError, match=f"^{path}: owned-Ray state does not match"):
        read_state(path)
    with pytest.raises(EngineError, match="does not match its signature"):
        owned.connect(tmp_path)  # never joined, never replaced silently


def test_state_signed_with_another_key_is_refused(tmp_path):
    """A file copied from another state dir (another key) does not verify here."""
    other = tmp_path / "other"
    other.mkdir()
    write_state(state_path(other), _state(state_path(other)))
    mine = tmp_path / "mine"
    mine.mkdir()
    state_path(mine).write_bytes(state_path(other).read_bytes())
    os.chmod(state_path(mine), 0o600)
    (mine / "key").write_bytes(os.urandom(32))
    with pytest.raises(EngineError, match="does not match its signature"):
        read_state(state_path(mine))


@pytest.mark.parametrize("text, where", [
    ("{", "file"), ('{"address": 5}', "address"),
    ('{"format_version": 2, "address": "a"}', "format_version"),
])
def test_malformed_state_is_refused_naming_the_field(tmp_path, text, where):
    """Malformed JSON, a wrong type or an unknown version: one line naming the field."""
    path = state_path(tmp_path)
    path.write_text(text)
    os.chmod(path, 0o600)
    with pytest.raises(EngineError, match=f"invalid owned-Ray state \\({where}"):
        read_state(path)


def test_state_of_another_user_or_writable_by_others_is_refused(tmp_path):
    """A state file owned by another uid, or group/world-writable, is never trusted."""
    path = state_path(tmp_path)
    write_state(path, _state(path))
    os.chmod(path, 0o666)
    with pytest.raises(EngineError, match="writable by others"):
        read_state(path)
    os.chmod(path, 0o600)
    if os.getuid() != 0:
        pytest.skip("changing a file's owner needs root")
    os.chown(path, 4321, 4321)
    with pytest.raises(EngineError, match="written by uid 4321, not you"):
        read_state(path)
    with pytest.raises(EngineError, match="written by uid 4321"):
        owned.down(tmp_path)  # not ours to remove either
    assert path.exists()


def test_dead_or_reused_pid_is_not_alive(tmp_path):
    """A dead pid, or a live process that is not the daemon of this session, is stale."""
    path = state_path(tmp_path)
    done = subprocess.Popen(["true"])
    done.wait()
    assert not alive(_state(path, pid=done.pid))
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        assert not alive(_state(path, pid=sleeper.pid))  # a pid now used by something else
        assert not alive(_state(path, pid=os.getpid()))  # this very process: not a daemon
    finally:
        sleeper.kill()
        sleeper.wait()
    fake = subprocess.Popen([sys.executable, "-c", "import time; print(1, flush=True); "
                             "time.sleep(30)", "capevolve._engine.ray.owned_daemon", "b" * 32],
                            stdout=subprocess.PIPE)
    try:
        assert fake.stdout is not None and fake.stdout.readline()  # running, past exec
        assert not alive(_state(path, pid=fake.pid))  # the daemon's module, another session
        assert alive(_state(path, pid=fake.pid, session="b" * 32))
    finally:
        fake.kill()
        fake.wait()


def test_down_removes_a_stale_state_and_says_nothing_ran(tmp_path):
    """`down` on a state whose daemon is gone removes it (and its token) and reports it."""
    path = state_path(tmp_path)
    done = subprocess.Popen(["true"])
    done.wait()
    write_state(path, _state(path, pid=done.pid))
    path.with_suffix(".token").write_text("t")
    result = owned.down(tmp_path)
    assert result["stopped"] is False and "stopped owned Ray" in result["message"]
    assert not path.exists() and not path.with_suffix(".token").exists()
    assert owned.down(tmp_path)["message"] == "no owned Ray is running"


def test_opt_out_and_idle_timeout_parse_strictly(monkeypatch):
    """CAPEVOLVE_RAY_REUSE=0 / engine.reuse_local_ray: false opt out; a bad idle is refused."""
    monkeypatch.delenv("CAPEVOLVE_RAY_REUSE", raising=False)
    assert owned.reuse_enabled() and not owned.reuse_enabled(False)
    assert EngineConfig().reuse_local_ray is True
    assert EngineConfig(reuse_local_ray=False).reuse_local_ray is False
    for off in ("0", "false", "No", " off "):
        monkeypatch.setenv("CAPEVOLVE_RAY_REUSE", off)
        assert not owned.reuse_enabled()
    monkeypatch.setenv("CAPEVOLVE_RAY_REUSE", "1")
    assert owned.reuse_enabled()
    monkeypatch.setenv("CAPEVOLVE_RAY_IDLE_S", "30")
    assert owned.idle_timeout() == 30.0
    for bad in ("soon", "0", "-5", "nan", "inf"):
        monkeypatch.setenv("CAPEVOLVE_RAY_IDLE_S", bad)
        with pytest.raises(EngineError, match="CAPEVOLVE_RAY_IDLE_S"):
            owned.idle_timeout()


def test_workers_get_every_variable_this_command_changed(monkeypatch, tmp_path):
    """Variables new or changed since the daemon started are passed to this job's workers;
    unchanged ones, Ray's own and shell bookkeeping are not."""
    monkeypatch.setenv("KEPT", "same")
    monkeypatch.setenv("CHANGED", "before")
    state = _state(state_path(tmp_path), env=env_digest(dict(os.environ)))
    monkeypatch.setenv("CHANGED", "after")
    monkeypatch.setenv("ADDED", "new")
    monkeypatch.setenv("RAY_SOMETHING", "ray's own")
    monkeypatch.setenv("PWD", "/elsewhere")
    assert owned.env_changes(state) == {"CHANGED": "after", "ADDED": "new"}


@pytest.mark.slow
def test_cli_refuses_a_forged_state_in_one_line(tmp_path):
    """A command on the Ray engine with a hand-edited state file exits 2 with one line naming
    the file, and starts no Ray; `down` then removes the file."""
    path = state_path(tmp_path / "state")
    path.parent.mkdir()
    signed = write_state(path, _state(path))
    path.write_text(signed.model_dump_json().replace('"num_cpus":1', '"num_cpus":64'))
    project = tmp_path / "p"
    (project / "cap").mkdir(parents=True)
    (project / "cap" / "prompt.md").write_text("- x\n")
    (project / "adapter.py").write_text(textwrap.dedent("""
        from capevolve import Rollout, Score, Task
        class A:
            def tasks(self):
                return [Task(id=f"t{i}", input=i, target="x") for i in range(4)]
            def run_target(self, candidate, task, *, trial, seed):
                return Rollout(output="x")
            def score(self, task, rollout):
                return Score(reward=1.0)
    """))
    (project / "capevolve.yaml").write_text(
        "name: f\nadapter: adapter.py:A\ncapability_path: cap\nnum_trials: 1\n"
        "splits: {train: 0.4, val: 0.4, test: 0.2, seed: 0}\nengine: {kind: ray}\n")
    env = {**{k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "CAPEVOLVE_ENGINE")},
           "CAPEVOLVE_RAY_STATE_DIR": str(path.parent), "CAPEVOLVE_PROGRESS": "off"}
    cli = [sys.executable, "-c", "from capevolve.cli.app import main; main()"]
    proc = subprocess.run([*cli, "run", "--project", str(project), "--run-dir",
                           str(tmp_path / "run")], env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith(
        f"error: {path}: owned-Ray state does not match its signature")
    assert "Traceback" not in proc.stderr
    assert not (path.parent / "daemon.log").exists()  # nothing was started
    removed = subprocess.run([*cli, "down"], env=env, capture_output=True, text=True,
                             timeout=120, check=False)
    assert removed.returncode == 0 and "invalid state file" in removed.stdout
    assert not path.exists()


def test_down_refuses_while_a_command_is_connected_unless_forced(tmp_path):
    """With a live daemon whose last poll saw a running driver, `down` refuses naming the
    pid; a driver that has exited since does not count; --force signals the daemon."""
    path = state_path(tmp_path)
    daemon = subprocess.Popen([sys.executable, "-c", "import time; print(1, flush=True); "
                               "time.sleep(60)", "capevolve._engine.ray.owned_daemon",
                               "c" * 32], stdout=subprocess.PIPE)
    driver = subprocess.Popen(["sleep", "60"])
    gone = subprocess.Popen(["true"])
    gone.wait()
    try:
        assert daemon.stdout is not None and daemon.stdout.readline()
        write_state(path, _state(path, pid=daemon.pid, session="c" * 32))
        drivers_path(path).write_text(json.dumps({"pids": [gone.pid, driver.pid], "at": 0}))
        assert connected_drivers(path) == [driver.pid]
        with pytest.raises(EngineError, match=f"in use by 1 command\\(s\\) \\(pid {driver.pid}\\)"):
            owned.down(tmp_path)
        assert path.exists() and daemon.poll() is None  # nothing was touched
        result = owned.down(tmp_path, force=True)
        assert result["stopped"] is True and daemon.wait(timeout=30) == -signal.SIGTERM
        assert not path.exists() and not drivers_path(path).exists()
    finally:
        for proc in (daemon, driver):
            proc.kill()
            proc.wait()
