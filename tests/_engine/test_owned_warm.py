"""The owned Ray's warm pool: a warm actor serves exactly one command, dies with it (even when
the command is killed with SIGKILL), is replaced, never carries a candidate's module state
into a later command, and binds only with its claim token.

One owned Ray for the module (a state dir of its own below the session's RAY_STATE_ROOT,
``CAPEVOLVE_RAY_WARM=1``: one warm rollout actor and one warm scorer), driven only through
real CLI subprocesses; what the pool holds is read by a helper subprocess that joins the
owned Ray (the test process never imports ray for it).
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

pytestmark = [pytest.mark.ray, pytest.mark.slow]

ADAPTER = """
import importlib.util
import json
import os
import time
from pathlib import Path

from capevolve import Rollout, Score, Task


class A:
    def tasks(self):
        return [Task(id=f"t{i}", input=i, target="x") for i in range(10)]

    def run_target(self, candidate, task, *, trial, seed):
        tool = Path(candidate) / "tool.py"
        if tool.is_file():  # candidate code: it may leave module-level state behind
            spec = importlib.util.spec_from_file_location("cand_tool", tool)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        pause = Path(candidate) / "pause.txt"
        if pause.is_file():
            time.sleep(float(pause.read_text()))
        return Rollout(output=json.dumps({
            "pid": os.getpid(), "leak": getattr(json, "LEFT_BY", None),
            "env_leak": os.environ.get("LEFT_BY"), "mark": os.environ.get("OWNED_MARK")}))

    def score(self, task, rollout):
        return Score(reward=1.0)
"""

LEAKY_TOOL = """
import json
import os

json.LEFT_BY = "first command"          # module state in a module every process has
os.environ["LEFT_BY"] = "first command"  # and the process environment
"""

HELPER = """
import json, sys
import ray
from capevolve._engine.ray import owned, owned_warm
from capevolve._engine.ray.actor import Binding

owned.join_owned(log_to_driver=False)
stats = owned_warm.keeper_stats()
out = {"stats": stats, "pids": {}}
names = [*stats["free"]["rollout"], *stats["free"]["scorer"], *stats["claimed"]]
for name in names:
    try:
        actor = ray.get_actor(name, namespace=owned_warm.NAMESPACE)
        out["pids"][name] = ray.get(actor.pid.remote(), timeout=30)
    except Exception:
        pass
if sys.argv[1:] == ["forge"]:  # as code of another command would: bind a free warm actor
    name = stats["free"]["rollout"][0]
    actor = ray.get_actor(name, namespace=owned_warm.NAMESPACE)
    try:
        ray.get(actor.bind.remote(Binding("/nonexistent", "a.py:A", token="guess")))
        out["forge"] = "bound"
    except Exception as exc:
        out["forge"] = str(exc)
    out["forged"] = name
print("HELPER " + json.dumps(out))
"""


def _env(state: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("CAPEVOLVE_RUN_DIR", "CAPEVOLVE_PROJECT", "CAPEVOLVE_ENGINE",
                        "RAY_ADDRESS", "CAPEVOLVE_RAY_REUSE", "PYTEST_CURRENT_TEST")}
    return {**env, "CAPEVOLVE_RAY_STATE_DIR": str(state), "CAPEVOLVE_PROGRESS": "off",
            "RAY_USAGE_STATS_ENABLED": "0", "CAPEVOLVE_RAY_WARM": "1", **extra}


CLI = [sys.executable, "-c", "from capevolve.cli.app import main; main()"]


def _cli(env: dict[str, str], *args: object) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *map(str, args)], env=env, capture_output=True, text=True,
                          timeout=600, check=False)


def _pool(env: dict[str, str], *args: str) -> dict:
    done = subprocess.run([sys.executable, "-c", HELPER, *args], env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    line = next((x for x in done.stdout.splitlines() if x.startswith("HELPER ")), None)
    assert line is not None, done.stderr[-2000:]
    return json.loads(line.removeprefix("HELPER "))


def _full(env: dict[str, str], timeout: float = 120.0) -> dict:
    """The pool once it holds its warm rollout actor and warm scorer, started."""
    deadline = time.monotonic() + timeout
    while True:
        pool = _pool(env)
        free = pool["stats"]["free"]
        if free["rollout"] and free["scorer"] and all(n in pool["pids"] for n in
                                                      free["rollout"] + free["scorer"]):
            return pool
        assert time.monotonic() < deadline, f"the warm pool never filled: {pool}"
        time.sleep(1.0)


def _gone(pid: int, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/status").read_text().split("State:")[1].split("\n")[0]
        except (OSError, IndexError):
            return True
        if "zombie" in state.lower():
            return True
        time.sleep(0.2)
    return False


def _rows(run: Path, candidate: str) -> list[dict]:
    import duckdb

    files = str(run / "rollouts" / "**" / "*.parquet")
    found = duckdb.sql(f"SELECT output FROM read_parquet('{files}', hive_partitioning=true) "
                       f"WHERE candidate = '{candidate}'").fetchall()
    return [json.loads(r[0]) for r in found]


def _candidate(root: Path, name: str, **files: str) -> Path:
    cand = root / name
    cand.mkdir(parents=True)
    (cand / "prompt.md").write_text(f"- {name}\n", encoding="utf-8")
    for file, text in files.items():
        (cand / file.replace("_", ".", 1)).write_text(text, encoding="utf-8")
    return cand


@pytest.fixture(scope="module")
def owned_pool(tmp_path_factory):
    """A project, two run dirs (baselines on the local engine) and an owned Ray with a warm
    pool of one rollout actor and one scorer; `capevolve down` at the end stops it all."""
    root = tmp_path_factory.mktemp("warm")
    project = root / "p"
    (project / "cap").mkdir(parents=True)
    (project / "cap" / "prompt.md").write_text("- be right\n", encoding="utf-8")
    (project / "adapter.py").write_text(textwrap.dedent(ADAPTER), encoding="utf-8")
    (project / "capevolve.yaml").write_text(
        "name: warm\nadapter: adapter.py:A\ncapability_path: cap\nnum_trials: 1\n"
        "splits: {train: 0.4, val: 0.4, test: 0.2, seed: 0}\n"
        "engine: {kind: ray, workers: 1, concurrency: 8, isolation: none}\n", encoding="utf-8")
    state = RAY_STATE_ROOT / "warm"
    state.mkdir(parents=True, exist_ok=True)
    env = _env(state)
    runs = []
    for name in ("run-a", "run-b"):
        made = _cli(env, "run", "--project", project, "--run-dir", root / name, "--engine",
                    "local", "--json")
        assert made.returncode == 0, made.stderr
        runs.append(root / name)
    first = _cli(env, "evaluate", "--run-dir", runs[0], "--candidate",
                 _candidate(root, "starter"), "--split", "val", "--json")  # starts the Ray
    assert first.returncode == 0, first.stderr
    yield {"root": root, "env": env, "runs": runs}
    last = _pool(env)
    stopped = _cli(env, "down", "--force", "--json")
    assert stopped.returncode == 0, stopped.stderr
    assert all(_gone(pid) for pid in last["pids"].values()), "warm actors outlived `down`"


def test_concurrent_commands_never_share_a_warm_actor_and_each_dies_with_its_command(owned_pool):
    """Two evaluates started at once: the one warm rollout actor serves exactly one of them
    (its pid in one command's rows only; the commands' processes are disjoint), it is dead
    once its command exited, and the keeper has replaced it with a new started actor."""
    env, root = owned_pool["env"], owned_pool["root"]
    before = _full(env)
    warm_name = before["stats"]["free"]["rollout"][0]
    warm_pid = before["pids"][warm_name]
    procs = [subprocess.Popen([*CLI, "evaluate", "--run-dir", str(run), "--candidate",
                               str(_candidate(root, f"both-{i}")), "--split", "val", "--json"],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i, run in enumerate(owned_pool["runs"])]
    outs = [p.communicate(timeout=600) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-1500:] for o in outs]
    ids = [json.loads(out)["candidate_id"] for out, _ in outs]
    pids = [{r["pid"] for r in _rows(run, cid)}
            for run, cid in zip(owned_pool["runs"], ids, strict=True)]
    assert pids[0] and pids[1] and pids[0].isdisjoint(pids[1])
    assert sum(warm_pid in p for p in pids) == 1, (warm_pid, pids)
    assert all(_gone(pid, 30) for pid in pids[0] | pids[1]), "a claimed actor outlived it"
    after = _full(env)
    assert warm_name not in after["stats"]["free"]["rollout"]
    assert after["stats"]["handed_out"] >= before["stats"]["handed_out"] + 1


def test_a_candidates_module_state_never_reaches_a_later_command(owned_pool):
    """A first command's candidate sets a module attribute and an environment variable in
    its process; a later command, served by a warm actor of the pool, sees neither."""
    env, root, run = owned_pool["env"], owned_pool["root"], owned_pool["runs"][0]
    first = _cli(env, "evaluate", "--run-dir", run, "--candidate",
                 _candidate(root, "leaky", tool_py=LEAKY_TOOL), "--split", "val", "--json")
    assert first.returncode == 0, first.stderr
    leaky = _rows(run, json.loads(first.stdout)["candidate_id"])
    assert {r["leak"] for r in leaky} == {"first command"}  # the candidate code did run
    pool = _full(env)
    warm_pid = pool["pids"][pool["stats"]["free"]["rollout"][0]]
    later = _cli(env, "evaluate", "--run-dir", run, "--candidate", _candidate(root, "clean"),
                 "--split", "val", "--json")
    assert later.returncode == 0, later.stderr
    clean = _rows(run, json.loads(later.stdout)["candidate_id"])
    assert {r["pid"] for r in clean} == {warm_pid}  # it ran in the warm actor
    assert {r["leak"] for r in clean} == {None} and {r["env_leak"] for r in clean} == {None}
    assert {r["pid"] for r in clean}.isdisjoint(r["pid"] for r in leaky)


def test_a_command_killed_with_sigkill_loses_its_warm_actor(owned_pool):
    """A command killed with SIGKILL while its rollouts run (no exit handler runs): the
    warm actor it claimed does not outlive it, and the pool is refilled. (With calls in
    flight Ray may end the actor itself; the next test kills a claimant between calls.)"""
    env, root, run = owned_pool["env"], owned_pool["root"], owned_pool["runs"][1]
    before = _full(env)
    warm_name = before["stats"]["free"]["rollout"][0]
    warm_pid = before["pids"][warm_name]
    proc = subprocess.Popen([*CLI, "evaluate", "--run-dir", str(run), "--candidate",
                             str(_candidate(root, "slow", pause_txt="5")), "--split", "val",
                             "--json"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while warm_name not in _pool(env)["stats"]["claimed"]:
            assert proc.poll() is None, "the command ended before it was killed"
            assert time.monotonic() < deadline, "the command never claimed the warm actor"
            time.sleep(0.5)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert _gone(warm_pid, 60), "the warm actor of a killed command kept running"
    assert warm_name not in _full(env)["stats"]["free"]["rollout"]


def test_a_free_warm_actor_refuses_a_bind_without_its_claim_token(owned_pool):
    """Code of another process that finds a free warm actor by name cannot load a project
    into it: the bind is refused, and the actor is still free and unbound for a claimant."""
    env = owned_pool["env"]
    _full(env)
    forged = _pool(env, "forge")
    assert "not claimed with that token" in forged["forge"]
    assert forged["forged"] in _pool(env)["stats"]["free"]["rollout"]


def test_an_evaluate_refused_before_its_rollouts_starts_no_ray(tmp_path):
    """The early join (Ray imported and joined while evaluate checks its inputs) only joins
    an owned Ray that runs: an evaluate refused before any rollout (a candidate that does
    not exist) starts none, and says why in one line."""
    state = RAY_STATE_ROOT / "refused"
    state.mkdir(parents=True, exist_ok=True)
    env = _env(state)
    project = tmp_path / "p"
    (project / "cap").mkdir(parents=True)
    (project / "cap" / "prompt.md").write_text("- be right\n", encoding="utf-8")
    (project / "adapter.py").write_text(textwrap.dedent(ADAPTER), encoding="utf-8")
    (project / "capevolve.yaml").write_text(
        "name: refused\nadapter: adapter.py:A\ncapability_path: cap\nnum_trials: 1\n"
        "splits: {train: 0.4, val: 0.4, test: 0.2, seed: 0}\n"
        "engine: {kind: ray, workers: 1, isolation: none}\n", encoding="utf-8")
    made = _cli(env, "run", "--project", project, "--run-dir", tmp_path / "run", "--engine",
                "local", "--json")
    assert made.returncode == 0, made.stderr
    refused = _cli(env, "evaluate", "--run-dir", tmp_path / "run", "--candidate",
                   tmp_path / "missing", "--split", "val")
    assert refused.returncode == 2, refused.stderr
    last = refused.stderr.strip().splitlines()[-1]
    assert last.startswith("error:") and "missing" in last and "Traceback" not in refused.stderr
    assert not list(state.glob("ray-*.json")) and not (state / "daemon.log").exists()


CLAIM_AND_DIE = """
import json, os, signal
import ray
from capevolve._engine.ray import owned, owned_warm

owned.join_owned(log_to_driver=False)
claimed = owned_warm.claim(owned_warm.ROLLOUT, 1, True)
actor, token = claimed[0]
print(json.dumps({"pid": ray.get(actor.pid.remote())}), flush=True)
os.kill(os.getpid(), signal.SIGKILL)  # no exit handler runs, no call is in flight
"""


def test_the_keeper_kills_the_warm_actor_of_a_claimant_killed_between_calls(owned_pool):
    """A driver that claimed a warm actor and is killed with SIGKILL while no call of it is
    in flight (so nothing in Ray ends the detached actor for it): the keeper kills it."""
    env = owned_pool["env"]
    _full(env)
    done = subprocess.run([sys.executable, "-c", CLAIM_AND_DIE], env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == -signal.SIGKILL, done.stderr[-1500:]
    pid = json.loads(done.stdout.strip().splitlines()[-1])["pid"]
    assert _gone(pid, 60), "the warm actor of a killed claimant kept running"
