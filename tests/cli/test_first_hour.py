"""A new user's first hour through the real console script, on fresh projects: every init
kind checks, runs and takes an edit through evaluate and gate; the seed's files are never
protected by accident; a candidate copy is writable by a non-root user; and the small
commands around the loop say what happened in one line."""

from __future__ import annotations

import ast
import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from cli.cli_support import invoke, one_json, user_error

CLI = Path(sys.executable).with_name("capevolve")
USER = "capevolve-newuser"


def cli(*args: object, cwd: Path, env: dict[str, str] | None = None,
        as_user: str | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """``capevolve ARGS`` as a subprocess in ``cwd`` (as ``as_user`` through setpriv)."""
    base = {k: v for k, v in os.environ.items()
            if k not in ("CAPEVOLVE_RUN_DIR", "CAPEVOLVE_PROJECT", "CAPEVOLVE_ENGINE",
                         "RAY_ADDRESS")}
    cmd = [str(CLI), *map(str, args)]
    if as_user is not None:
        user = pwd.getpwnam(as_user)
        cmd = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}",
               "--clear-groups", *cmd]
        base["HOME"] = str(cwd)
    return subprocess.run(cmd, cwd=cwd, env={**base, **(env or {})}, capture_output=True,
                          text=True, timeout=timeout, check=False)


def ok_json(proc: subprocess.CompletedProcess) -> dict:
    """The one JSON object a successful ``--json`` command printed."""
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return json.loads(proc.stdout)


def _edit(kind: str, copy: Path, project: Path) -> None:
    """The edit a user makes: the prompt names every color / the notes hold every answer."""
    if kind == "adapter":
        (copy / "system_prompt.md").write_text(
            "Answer with one lowercase color word. The sky is blue, grass green, the sun "
            "yellow, coal black, snow white, a plum purple, a carrot orange, a cherry red.\n")
        return
    rows = [json.loads(line) for line in (project / "data.jsonl").read_text().splitlines()]
    with (copy / "knowledge.md").open("a", encoding="utf-8") as notes:
        notes.writelines(f"{r['question']} => {r['answer']}\n" for r in rows if r["answer"])


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["adapter", "dataset"])
def test_every_init_kind_checks_runs_and_takes_an_edit_through_the_gate(tmp_path, kind):
    """init KIND, then check (ok, no warning), run, checkout, edit, evaluate, gate: the
    edit is evaluated (never refused as touching a protected file) and the gate accepts it;
    every command reads the project from the current directory; the gate's confirmation
    on fresh trials shows its progress as an evaluation does."""
    project = tmp_path / "mine"
    ok_json(cli("init", project, "--kind", kind, "--json", cwd=tmp_path))
    check = ok_json(cli("check", "--json", cwd=project))
    assert check["ok"] and check["warnings"] == [] and check["problems"] == []
    engine = ("--engine", "local")  # the Ray default runs in the ray test below; the
    # gate takes it too: its confirmation runs fresh trials on the project's engine
    ok_json(cli("run", *engine, "--json", cwd=project))
    ok_json(cli("checkout", "cand", "--json", cwd=project))
    _edit(kind, project / "cand", project)
    record = ok_json(cli("evaluate", "--candidate", "cand", *engine, "--json", cwd=project))
    assert record["status"] == "complete" and record["n_errors"] == 0
    gated = cli("gate", "--candidate", record["candidate_id"], *engine, "--json", cwd=project)
    gate = ok_json(gated)
    assert gate["decision"] == "accept", gate
    confirmation = gate["confirmation"]  # the screen passed: both sides on fresh trials,
    said = [line.split(": ")[0] for line in gated.stderr.splitlines()  # said while they run
            if line.endswith(" units to run")]
    assert said == [confirmation["candidate_eval"], confirmation["best_eval"]], gated.stderr
    accepted = ok_json(cli("accept", "--candidate", record["candidate_id"], "--json",
                           cwd=project))
    assert accepted["best_id"] == record["candidate_id"]


@pytest.mark.slow
def test_the_adapter_scaffold_fails_a_candidate_without_its_prompt(tmp_path):
    """A candidate that lost system_prompt.md is a failing candidate (scored 0), not
    missing data: the scaffold does not teach Rollout(error=...) for it."""
    project = tmp_path / "mine"
    ok_json(cli("init", project, "--json", cwd=tmp_path))
    ok_json(cli("run", "--engine", "local", "--json", cwd=project))
    ok_json(cli("checkout", "broken", "--json", cwd=project))
    (project / "broken" / "system_prompt.md").rename(project / "broken" / "notes.md")
    record = ok_json(cli("evaluate", "--candidate", "broken", "--engine", "local", "--json",
                         cwd=project))
    assert record["n_errors"] == 0 and record["n_scored"] == record["n_tasks"] > 0
    assert record["mean"] < 0.5


@pytest.mark.parametrize("kind", ["adapter", "dataset"])
def test_the_scaffold_imports_only_what_it_uses(tmp_path, kind):
    """Every module-level import of the scaffold's Python files is used."""
    project = tmp_path / "mine"
    one_json(invoke("init", project, "--kind", kind, "--json"))
    for path in project.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {(a.asname or a.name).split(".")[0] for node in tree.body
                    if isinstance(node, (ast.Import, ast.ImportFrom)) for a in node.names}
        used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        assert imported - used - {"annotations"} == set(), path


def test_check_warns_when_a_protected_pattern_covers_a_seed_file(tmp_path):
    """A seed file a default or project pattern protects is a warning naming the file and
    the pattern (no edit to it could ever be evaluated); the project still checks out."""
    project = tmp_path / "mine"
    one_json(invoke("init", project, "--json"))
    (project / "seed_capability" / "gold_examples.md").write_text("examples\n")
    check = one_json(invoke("check", "--project", project, "--json"))
    assert check["ok"] is True
    assert check["warnings"] == [
        "seed_capability/gold_examples.md: matches the protected pattern '*gold*', so no edit "
        "to it can ever be evaluated; rename the file (or drop the pattern from "
        "protected_paths)"]
    with (project / "capevolve.yaml").open("a", encoding="utf-8") as config:
        config.write("protected_paths: ['*prompt*']\n")
    human = invoke("check", "--project", project)
    assert human.exit_code == 0
    assert "warning: seed_capability/system_prompt.md: matches the protected pattern " \
           "'*prompt*'" in human.stdout


def _non_root_user() -> str:
    """A user without root to run commands as (created once with useradd)."""
    if os.geteuid() != 0:
        pytest.skip("creating a non-root user needs root (useradd)")
    if shutil.which("useradd") is None or shutil.which("setpriv") is None:
        pytest.skip("useradd and setpriv (util-linux) are needed to act as a non-root user")
    try:
        pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", USER],
                       check=True, capture_output=True)
    return USER


@pytest.mark.slow
def test_checkout_gives_a_non_root_user_a_writable_copy():
    """A user without root `capevolve checkout`s the best of their run: files that
    user can edit, where `cp -r` of the snapshot gives read-only ones; a checkout into a
    directory holding anything is refused in one line."""
    user = pwd.getpwnam(_non_root_user())
    setpriv = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups"]
    shared = Path(tempfile.mkdtemp(prefix="capevolve-checkout-"))
    try:
        shared.chmod(0o755)
        home = shared / "home"
        home.mkdir()
        os.chown(home, user.pw_uid, user.pw_gid)
        env = {"CAPEVOLVE_KEY_DIR": str(home / "keys")}

        def as_user(*args: object) -> subprocess.CompletedProcess:
            return cli(*args, cwd=home, env=env, as_user=user.pw_name)

        # the project and its run made as that user's own (the workers' interpreter may
        # not be executable by other users here): made by root, then handed over
        ok_json(cli("init", "mine", "--json", cwd=home, env=env))
        ok_json(cli("run", "--project", "mine", "--engine", "local", "--json", cwd=home,
                    env=env))
        for path in [home, *home.rglob("*")]:
            os.chown(path, user.pw_uid, user.pw_gid, follow_symlinks=False)
        out = ok_json(as_user("checkout", "--project", "mine", "cand", "--json"))
        assert out["candidate_id"] == "seed" and out["files"] == ["system_prompt.md"]
        edit = [sys.executable, "-c", "import sys; open(sys.argv[1], 'a').write('more\\n')"]
        done = subprocess.run([*setpriv, *edit, str(home / "cand" / "system_prompt.md")],
                              capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        run_dir = next((home / "mine" / ".capevolve").glob("run_*"))
        subprocess.run([*setpriv, "cp", "-r", str(run_dir / "candidates" / "seed" / "files"),
                        str(home / "plain")], check=True)
        refused = subprocess.run([*setpriv, *edit, str(home / "plain" / "system_prompt.md")],
                                 capture_output=True, text=True, check=False)
        assert refused.returncode != 0 and "Permission denied" in refused.stderr
        again = as_user("checkout", "--project", "mine", "cand")
        assert again.returncode == 2 and again.stderr.strip().splitlines()[-1] == (
            "error: cand: exists and is not an empty directory; checkout writes a new copy "
            "(pick another path)")
    finally:
        shutil.rmtree(shared)


@pytest.mark.slow
@pytest.mark.parametrize("given", ["--address", "RAY_ADDRESS"])
def test_doctor_with_nothing_listening_fails_within_seconds_in_one_line(tmp_path, given):
    """doctor at a port nothing listens on (--address or RAY_ADDRESS) exits 2 within
    seconds with one capevolve error line and nothing else: no progress line before it,
    no Ray log lines, no minutes of retries."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    address = f"127.0.0.1:{port}"
    args, env = (("--address", address), None) if given == "--address" else \
        ((), {"RAY_ADDRESS": address})
    started = time.monotonic()
    proc = cli("doctor", *args, cwd=tmp_path, env=env, timeout=60)
    assert time.monotonic() - started < 20
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"error: Ray cluster {address}: nothing answers there")


@pytest.mark.slow
def test_commands_inside_a_project_dir_use_its_latest_run(tmp_path):
    """Inside a project dir, status, reject and export jsonl need no --run-dir (the
    project's latest run, as run defaults to --project .); elsewhere they say what to
    pass; export jsonl also takes --project. reject refuses a never-gated candidate and
    spends no iteration."""
    project = tmp_path / "mine"
    ok_json(cli("init", project, "--kind", "dataset", "--json", cwd=tmp_path))
    handoff = ok_json(cli("run", "--json", cwd=project))
    status = ok_json(cli("status", "--json", cwd=project))
    assert status["run_dir"] == handoff["run_dir"]
    lost = cli("status", cwd=tmp_path)
    assert lost.returncode == 2 and lost.stderr.strip() == (
        "error: --run-dir R or --project P is required (P's latest run; the current "
        "directory is used when it holds a capevolve.yaml)")
    ok_json(cli("checkout", "cand", "--json", cwd=project))
    _edit("dataset", project / "cand", project)
    ok_json(cli("evaluate", "--candidate", "cand", "--json", cwd=project))
    refused = cli("reject", "--candidate", "cand_001", cwd=project)
    assert refused.returncode == 2 and refused.stderr.strip() == (
        "error: reject refused: 'cand_001' was never gated; run `capevolve gate --candidate "
        "cand_001` first (nothing recorded, no iteration spent)")
    assert ok_json(cli("status", "--json", cwd=project))["spent"]["iterations"] == 0
    exported = ok_json(cli("export", "jsonl", "--project", project, "--eval",
                           handoff["baseline"]["eval_id"], "--json", cwd=tmp_path))
    assert exported["lines"] == handoff["baseline"]["n_tasks"]


def test_a_mistyped_split_is_named_as_no_split(base_run):
    """diagnose, compare and evaluate say the same about a split that does not exist."""
    for verb, extra in (("diagnose", ("--tag", "seed")), ("compare", ("seed", "seed")),
                        ("evaluate", ("--candidate", "seed"))):
        user_error(invoke(verb, *extra, "--run-dir", base_run.path, "--split", "validation"),
                   f"--split 'validation': no such split; {verb} takes train or val "
                   "(did you mean val?)")


@pytest.mark.ray
@pytest.mark.slow
def test_the_adapter_scaffold_runs_as_written_on_local_ray_and_says_so(tmp_path):
    """The adapter scaffold on its default engine (Ray): the first command says in one line
    that a local Ray is starting and how long it stays warm; the next joins it silently;
    an edit goes through evaluate and gate."""
    from conftest import RAY_STATE_ROOT

    env = {"CAPEVOLVE_RAY_STATE_DIR": str(RAY_STATE_ROOT / "first-hour")}
    project = tmp_path / "mine"
    ok_json(cli("init", project, "--json", cwd=tmp_path))
    try:
        first = cli("run", "--json", cwd=project, env=env)
        ok_json(first)
        said = [line for line in first.stderr.splitlines() if "starting a local Ray" in line]
        assert said == ["capevolve: starting a local Ray (10-30 s the first time); it stays "
                        "warm for later commands until 5 min without one "
                        "(CAPEVOLVE_RAY_IDLE_S sets it; `capevolve down` stops it now)"]
        ok_json(cli("checkout", "cand", "--json", cwd=project))
        _edit("adapter", project / "cand", project)
        second = cli("evaluate", "--candidate", "cand", "--json", cwd=project, env=env)
        assert ok_json(second)["n_errors"] == 0
        assert "starting a local Ray" not in second.stderr
        gate = cli("gate", "--candidate", "cand_001", "--json", cwd=project, env=env)
        assert ok_json(gate)["decision"] == "accept"  # confirmed on fresh trials, same Ray
        assert "starting a local Ray" not in gate.stderr
    finally:
        cli("down", cwd=project, env=env)


@pytest.mark.slow
def test_power_is_said_in_words_at_check_run_and_every_gate(tmp_path):
    """check and run state the smallest gain the gate can detect on the val split given
    its scoreable tasks and trials (the noisiest-rewards planning figure, recomputed here
    from Student t), and the gate's text states its own, from the spread it measured."""
    from scipy import stats

    project = tmp_path / "mine"
    ok_json(cli("init", project, "--json", cwd=tmp_path))
    power = ok_json(cli("check", "--json", cwd=project))["power"]
    n, k = power["n_tasks"], power["trials"]
    assert (n, k) == (8, 3)
    expected = (stats.t.ppf(0.95, n - 1) + stats.t.ppf(0.8, n - 1)) * (0.5 / (k * n)) ** 0.5
    assert power["mde"] == pytest.approx(expected, rel=1e-9)
    said = (f"power: 8 val tasks x 3 trials: the gate detects a true gain of about "
            f"+{expected:.2f} or more (80% of the time, for pass/fail rewards at 50%, the "
            "noisiest case); smaller gains mostly read as noise; gate.min_delta is 0.02: more "
            "val tasks or trials would detect gains that small")
    assert said in cli("check", cwd=project).stdout.splitlines()
    run = cli("run", "--engine", "local", cwd=project)
    assert run.returncode == 0 and said in run.stdout.splitlines()
    ok_json(cli("checkout", "cand", "--json", cwd=project))
    _edit("adapter", project / "cand", project)
    ok_json(cli("evaluate", "--candidate", "cand", "--engine", "local", "--json", cwd=project))
    local = ("--engine", "local")  # the gate's confirmation runs fresh trials
    gate = cli("gate", "--candidate", "cand_001", *local, cwd=project)
    recorded = ok_json(cli("gate", "--candidate", "cand_001", *local, "--json",
                           cwd=project))["power"]
    assert gate.returncode == 0 and gate.stdout.splitlines()[-1].startswith(
        f"power: this gate ({recorded['n_tasks']} tasks x 3 trials) detects a true gain of "
        f"about +{recorded['mde']:.3f} (80% of the time, from the spread it measured); a "
        "smaller one mostly reads as noise")


@pytest.mark.slow
def test_exclusions_and_a_complete_rerun_are_said_wherever_an_evaluation_is_shown(tmp_path):
    """Datapoints without an expected answer are `scored N / excluded M (reason)` in the
    handoff, the evaluate line, status, report.md and report.html; evaluating a complete
    evaluation again says "already complete, nothing ran" and runs 0 units."""
    project = tmp_path / "mine"
    ok_json(cli("init", project, "--kind", "dataset", "--json", cwd=tmp_path))
    with (project / "data.jsonl").open("a", encoding="utf-8") as data:
        data.writelines(json.dumps({"id": f"u{i:02d}", "question": f"Unknown {i}?",
                                    "answer": ""}) + "\n" for i in range(8))
    run = cli("run", cwd=project)
    assert run.returncode == 0, run.stderr
    record = ok_json(cli("status", "--json", cwd=project))["evaluations"][0]
    m = record["excluded"]
    assert m >= 1 and record["n_scored"] == record["n_tasks"]
    said = (f"scored {record['n_scored']}/{record['n_tasks']} / excluded {m} (no expected "
            "value ('answer') for evaluator(s) exact, overlap)")
    assert "baseline (seed on val): " in run.stdout and said in run.stdout
    ok_json(cli("checkout", "cand", "--json", cwd=project))
    _edit("dataset", project / "cand", project)
    first = cli("evaluate", "--candidate", "cand", cwd=project)
    assert said in first.stdout and "nothing ran" not in first.stdout
    again = cli("evaluate", "--candidate", "cand", cwd=project)
    assert again.stdout.startswith("val__cand_001__k1: already complete, nothing ran: ")
    assert said in again.stdout
    payload = ok_json(cli("evaluate", "--candidate", "cand", "--json", cwd=project))
    assert payload["units_run"] == 0 and payload["already_complete"] is True
    status = cli("status", cwd=project).stdout
    assert status.count(said) == 2  # the seed's and the candidate's evaluation
    report = cli("report", "--html", cwd=project)
    assert report.returncode == 0 and said in report.stdout
    run_dir = Path(ok_json(cli("status", "--json", cwd=project))["run_dir"])
    assert said in (run_dir / "report.md").read_text(encoding="utf-8")
    html = (run_dir / "report.html").read_text(encoding="utf-8")
    assert said.replace("'", "&#x27;") in html or said in html


@pytest.mark.slow
def test_optimize_says_each_gated_iterations_power(tmp_path):
    """`capevolve optimize` says each iteration as it ends (stderr) and in its final table
    (stdout); a gated child's line goes on with that gate's power sentence, from the MDE the
    gate recorded in the run's log."""
    project = tmp_path / "mine"
    ok_json(cli("init", project, "--json", cwd=tmp_path))
    (project / "edits").mkdir()
    (project / "edits" / "01_colors.json").write_text(json.dumps({
        "title": "name the colors", "why": "a test edit",
        "ops": [{"file": "system_prompt.md", "append": "The sun is yellow, coal black, snow "
                 "white, a plum purple, a carrot orange, a cherry red.\n"}]}))
    ok_json(cli("run", "--engine", "local", "--json", cwd=project))
    done = cli("optimize", "--algorithm", "hill-climb", "--proposer", "scripted:edits",
               "--engine", "local", cwd=project)
    assert done.returncode == 0, done.stderr
    run_dir = Path(ok_json(cli("status", "--json", cwd=project))["run_dir"])
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    (gate,) = [e for e in events if e["kind"] == "gate"]
    power = gate["power"]
    assert gate["decision"] == "accept" and power["mde"] > 0, gate
    said = (f"power: this gate ({power['n_tasks']} tasks x {power['trials']} trials) detects "
            f"a true gain of about +{power['mde']:.3f} (80% of the time, from the spread it "
            "measured); a smaller one mostly reads as noise")
    for out, first in ((done.stderr, "iteration 1: cand_001 (parent seed, scripted:edits)"),
                       (done.stdout, "   1      seed -> cand_001 accept")):
        lines = out.splitlines()
        row = next(i for i, line in enumerate(lines) if line.startswith(first))
        assert lines[row + 1].strip().startswith(said), out
    assert out.count("power: this gate") == 1  # the no_change iteration was not gated
