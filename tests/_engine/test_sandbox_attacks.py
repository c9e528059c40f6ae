"""Candidate code as an attacker writes it: a few lines each, run by a real ``evaluate`` on
the local engine, in the sandbox every worker starts in. Each attack succeeds without the
sandbox (``engine.isolation: none``, the ``uncontained`` cases, which say what a user who
opts out is exposed to) and fails inside it."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from pathlib import Path

import pytest

import capevolve
from capevolve._engine import sandbox
from capevolve._loop.evaluate import evaluate
from capevolve._loop.run import create_run
from capevolve._store import signing
from capevolve._store.rollouts.query import RolloutStore
from capevolve._store.rundir import RunDir
from capevolve.errors import EngineError

pytestmark = pytest.mark.skipif(sandbox.unavailable() is not None,
                                reason=f"no sandbox here: {sandbox.unavailable()}")

ADAPTER = '''
from capevolve import Rollout, Score, Task


class A:
    def tasks(self):
        return [Task(id=f"t{i:02d}", input=i, target=f"gold-{i}") for i in range(8)]

    def run_target(self, candidate, task, *, trial, seed):
        space = {"task": task, "answer": "", "candidate": candidate}
        tool = candidate / "tool.py"  # the candidate's own code, as retail's tools.py is
        exec(compile(tool.read_text(), str(tool), "exec"), space)
        return Rollout(output=str(space["answer"]))

    def score(self, task, rollout):
        from answer_scorer import judge

        return Score(reward=judge(task, rollout))
'''


def _project(root: Path, isolation: str = "sandbox", engine: str = "") -> Path:
    (root / "seed").mkdir(parents=True, exist_ok=True)
    (root / "seed" / "tool.py").write_text("answer = 'no idea'\n")
    (root / "adapter.py").write_text(ADAPTER)
    (root / "answer_scorer.py").write_text(
        "def judge(task, rollout):\n    return float(rollout.output == task.target)\n")
    (root / "data").mkdir(exist_ok=True)
    (root / "data" / "tasks.json").write_text(json.dumps({f"t{i:02d}": f"gold-{i}"
                                                          for i in range(8)}))
    (root / "capevolve.yaml").write_text(
        "name: attacks\nadapter: adapter.py:A\ncapability_path: seed\nnum_trials: 1\n"
        "splits: {train: 0.5, val: 0.25, test: 0.25, seed: 0}\n"
        f"engine: {{kind: local, concurrency: 2, timeout_s: 20, retries: 0, "
        f"isolation: {isolation}{engine}}}\n")
    return root


def _attack(tmp_path: Path, code: str, isolation: str = "sandbox", engine: str = "",
            **fmt: str) -> tuple[RunDir, dict, list[str]]:
    """Evaluate a candidate whose tool.py is ``code`` on train (``engine``: more engine
    settings): the run, the record and every rollout's output."""
    project = _project(tmp_path / "p", isolation, engine)
    run = create_run(project, tmp_path / "run")
    cand = tmp_path / "cand"
    cand.mkdir()
    (cand / "tool.py").write_text(code.format(run=str(run.root), project=str(project), **fmt))
    record = evaluate(run, cand, "train")
    _, rows = RolloutStore(run.layout).query("SELECT output FROM rollouts")
    return run, record, [r[0] for r in rows]


MODES = ["sandbox", pytest.param("none", id="uncontained")]

READ_GOLD = '''
import json, pathlib, sys
here = next(pathlib.Path(m.__file__).parent for name, m in list(sys.modules.items())
            if name.startswith("capevolve_project_"))  # the project's adapter module
try:
    answer = json.loads((here / "data" / "tasks.json").read_text())[task.id]
except Exception as exc:
    answer = type(exc).__name__
'''


@pytest.mark.slow
@pytest.mark.parametrize("isolation", MODES)
def test_a_gold_file_found_from_the_adapter_module_reads_empty(tmp_path, isolation):
    """The gold file beside the adapter (not named like one): empty in the sandbox."""
    _, record, outputs = _attack(tmp_path, READ_GOLD, isolation)
    if isolation == "none":
        assert record["mean"] == 1.0
        return
    assert record["mean"] == 0.0 and set(outputs) == {"FileNotFoundError"}  # data/ hidden


@pytest.mark.slow
@pytest.mark.parametrize("isolation", MODES)
def test_the_task_target_never_reaches_run_target(tmp_path, isolation):
    """``answer = task.target``: the worker's tasks carry no target, with or without the
    sandbox (unless the adapter declares run_target_sees_target)."""
    _, record, outputs = _attack(tmp_path, "answer = task.target\n", isolation)
    assert record["mean"] == 0.0 and set(outputs) == {"None"}


SNOOP = '''
import os, pathlib
seen = []
for path in [{run!r} + "/splits.json", {run!r} + "/events.jsonl", {keys!r},
             {project!r} + "/answer_scorer.py", {project!r} + "/.capevolve"]:
    p = pathlib.Path(path)
    try:
        seen.append(str(sorted(os.listdir(p)) if p.is_dir() else len(p.read_bytes())))
    except OSError as exc:
        seen.append(type(exc).__name__)
answer = " ".join(seen)
'''


@pytest.mark.slow
def test_splits_events_keys_and_the_scorer_are_out_of_sight(tmp_path):
    """The run's splits and events, the key dir, the scorer module and the project's
    .capevolve/: not found, empty, or an empty directory."""
    _, record, outputs = _attack(tmp_path, SNOOP, keys=str(signing.key_dir()))
    assert set(outputs) == {"FileNotFoundError FileNotFoundError FileNotFoundError 0 []"}, \
        outputs


WRITE_CODE = '''
import os, pathlib, site, capevolve
wrote = []
for folder in [*site.getsitepackages(), os.path.dirname(capevolve.__file__),
               os.path.dirname(os.__file__)]:
    try:
        (pathlib.Path(folder) / {name!r}).write_text("")
        wrote.append(folder)
    except OSError as exc:
        wrote.append(type(exc).__name__)
answer = " ".join(wrote)
'''


@pytest.mark.slow
def test_site_packages_capevolve_and_the_standard_library_are_read_only(tmp_path):
    """A .pth in site-packages or a module in capevolve's package would run in every later
    process: every such write fails with EROFS (OSError)."""
    import site

    name = f"capevolve_attack_{uuid.uuid4().hex[:8]}.pth"
    folders = [*site.getsitepackages(), os.path.dirname(capevolve.__file__),
               os.path.dirname(os.__file__)]
    try:
        _, _, outputs = _attack(tmp_path, WRITE_CODE, name=name)
    finally:
        for folder in folders:  # never leave a planted file behind, whatever happened
            Path(folder, name).unlink(missing_ok=True)
    assert set(outputs) == {" ".join(["OSError"] * len(folders))}, outputs


DAEMON = '''
import os, subprocess
if os.fork() == 0:  # double fork, new session: the classic daemon
    os.setsid()
    if os.fork() == 0:
        subprocess.Popen(["sleep", {marker!r}], start_new_session=True)
    os._exit(0)
answer = "forked"
'''


def _running(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.mark.slow
@pytest.mark.parametrize("isolation", MODES)
def test_a_setsid_daemon_ends_with_its_worker(tmp_path, isolation):
    """A double-forked, setsid daemon: gone once the evaluation returned."""
    marker = f"{1000 + uuid.uuid4().int % 1000}.{uuid.uuid4().int % 10**6}"
    try:
        _attack(tmp_path, DAEMON, isolation, marker=marker)
        deadline = time.monotonic() + 5
        while _running(marker) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = _running(marker)
        assert (left != []) == (isolation == "none"), left
    finally:
        for pid in _running(marker):
            os.kill(pid, 9)


FORGE = '''
import pathlib
try:
    with open({run!r} + "/events.jsonl", "ab") as fh:
        fh.write(b'{{"kind": "set_best", "candidate_id": "cand_001"}}\\n')
    answer = "appended"
except OSError as exc:
    answer = type(exc).__name__
'''


@pytest.mark.slow
def test_the_event_log_cannot_be_reached_to_forge_a_line(tmp_path):
    """No run dir in view: nothing to append to, and the evaluation is not voided."""
    run, record, outputs = _attack(tmp_path, FORGE)
    assert set(outputs) == {"FileNotFoundError"} and record["status"] == "complete"
    assert b"cand_001\"}" not in run.layout.events.read_bytes()
    assert RunDir.open(run.root).best_id == "seed"


SCRATCH = '''
import pathlib, tempfile
mine = pathlib.Path(tempfile.gettempdir()) / {name!r}
mine.write_text("left behind")
answer = str(candidate) + " " + str(mine)
'''


@pytest.mark.slow
def test_scratch_is_private_and_gone_and_the_candidate_is_read_only(tmp_path):
    """A file the candidate writes in its temp dir is not in the host's /tmp and the
    unpacked candidate is removed once the worker ended; the candidate cannot rewrite
    its own files for later rollouts."""
    name = f"capevolve-scratch-{uuid.uuid4().hex[:8]}"
    code = SCRATCH + "try:\n    open(candidate / 'tool.py', 'a')\nexcept OSError as exc:\n" \
                     "    answer += ' ' + type(exc).__name__\n"
    _, _, outputs = _attack(tmp_path, code, name=name)
    candidate_dir, written, refused = outputs[0].split(" ")
    assert refused == "OSError"
    assert not Path(written).exists() and not Path(candidate_dir).exists()


def _serve(port_box: list[int], stop: threading.Event) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.settimeout(0.2)
        port_box.append(server.getsockname()[1])
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            conn.sendall(b"hello")
            conn.close()


CONNECT = '''
import socket
try:
    with socket.create_connection(("127.0.0.1", {port}), timeout=3) as conn:
        answer = conn.recv(5).decode()
except OSError as exc:
    answer = type(exc).__name__
'''


@pytest.mark.slow
@pytest.mark.parametrize("network", ["none", "host"])
def test_the_network_is_the_projects_choice(tmp_path, network):
    """A server on the host's loopback: unreachable with ``network: none``, reachable
    with ``network: host`` (an agent that calls a model endpoint)."""
    port_box: list[int] = []
    stop = threading.Event()
    thread = threading.Thread(target=_serve, args=(port_box, stop), daemon=True)
    thread.start()
    while not port_box:
        time.sleep(0.01)
    try:
        _, _, outputs = _attack(tmp_path, CONNECT, engine=f", network: {network}",
                                port=str(port_box[0]))
    finally:
        stop.set()
    assert set(outputs) == ({"hello"} if network == "host" else {"ConnectionRefusedError"})


@pytest.mark.slow
def test_a_data_file_run_target_declares_it_reads_stays_readable(tmp_path):
    """``engine.sandbox_reads`` shows a data file the agent needs; the scorer, in the
    driver, still reads its gold; the undeclared gold stays empty."""
    code = ("import pathlib, sys\nhere = next(pathlib.Path(m.__file__).parent for n, m in "
            "list(sys.modules.items()) if n.startswith('capevolve_project_'))\n"
            "answer = (here / 'data' / 'menu.txt').read_text().strip() + "
            "str(len((here / 'data' / 'tasks.json').read_bytes()))\n")
    (tmp_path / "p" / "data").mkdir(parents=True)
    (tmp_path / "p" / "data" / "menu.txt").write_text("menu")
    _, record, outputs = _attack(tmp_path, code, engine=", sandbox_reads: [data/menu.txt]")
    assert set(outputs) == {"menu0"} and record["status"] == "complete"


def test_without_a_sandbox_the_evaluation_is_refused_naming_the_opt_out(tmp_path,
                                                                       monkeypatch):
    """No bwrap on PATH: refused in one line naming engine.isolation: none, before any
    evaluation is recorded."""
    run = create_run(_project(tmp_path / "p"), tmp_path / "run")
    before = run.layout.events.read_bytes()
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    sandbox.unavailable.cache_clear()
    try:
        with pytest.raises(EngineError, match=r"candidate code cannot be contained: "
                                              r"bubblewrap \(bwrap\) is not installed.*"
                                              r"`engine.isolation: none`") as caught:
            evaluate(run, "seed", "train")
    finally:
        sandbox.unavailable.cache_clear()
    assert "\n" not in str(caught.value)
    assert run.layout.events.read_bytes() == before



@pytest.mark.ray
@pytest.mark.slow
def test_the_ray_engine_runs_candidate_code_in_the_same_sandbox(tmp_path, ray_session):
    """The gold beside the adapter, the target, the run dir, the keys, the scorer and a
    write to capevolve's package, on a Ray rollout actor: as in the local engine's."""
    from capevolve._engine.ray.engine import RayEngine
    from capevolve.config import EngineConfig

    project = _project(tmp_path / "p")
    run = create_run(project, tmp_path / "run")
    cand = tmp_path / "cand"
    cand.mkdir()
    code = (READ_GOLD + "gold = answer\n" + SNOOP + WRITE_CODE
            + "answer = ' | '.join([gold, str(task.target), snooped, answer])\n")
    code = code.replace('answer = " ".join(seen)', 'snooped = " ".join(seen)')
    (cand / "tool.py").write_text(code.format(run=str(run.root), project=str(project),
                                              keys=str(signing.key_dir()),
                                              name=f"capevolve_attack_{uuid.uuid4().hex}"))
    engine = RayEngine(EngineConfig(kind="ray", concurrency=2, timeout_s=30, retries=0))
    record = evaluate(run, cand, "train", engine=engine)
    _, rows = RolloutStore(run.layout).query("SELECT DISTINCT output FROM rollouts")
    assert record["mean"] == 0.0
    gold, target, snooped, wrote = rows[0][0].split(" | ")
    assert (gold, target) == ("FileNotFoundError", "None")
    assert snooped == "FileNotFoundError FileNotFoundError FileNotFoundError 0 []"
    assert set(wrote.split(" ")) == {"OSError"}


@pytest.mark.slow
def test_a_run_dir_inside_the_projects_capevolve_dir_is_hidden_and_works(tmp_path):
    """The default layout (the run under <project>/.capevolve/): the sandbox is built (one
    hidden directory inside another needs no mount of its own) and the run is not in view."""
    project = _project(tmp_path / "p")
    run = create_run(project, project / ".capevolve" / "run_x")
    cand = tmp_path / "cand"
    cand.mkdir()
    (cand / "tool.py").write_text(SNOOP.format(run=str(run.root), project=str(project),
                                               keys=str(signing.key_dir())))
    record = evaluate(run, cand, "train")
    _, rows = RolloutStore(run.layout).query("SELECT DISTINCT output FROM rollouts")
    assert record["status"] == "complete"
    assert [r[0] for r in rows] == ["FileNotFoundError FileNotFoundError FileNotFoundError 0 []"]
