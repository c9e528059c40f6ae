"""The pages' own-project examples, followed as written: the README's own-agent screen and
loop, the adapter page's complete example, the optimize page's scripted edit, and the census
template, each built into a fresh project and run through the real console script."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CLI = Path(sys.executable).with_name("capevolve")
FENCE = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```", re.M | re.S)


def blocks(page: str, heading: str) -> list[tuple[str, str, str]]:
    """(language, fence info, body) of every fenced block under ``heading`` of a page."""
    text = (REPO / page).read_text(encoding="utf-8")
    start = text.index(f"\n{heading}\n")
    end = text.find("\n## ", start + len(heading) + 2)
    return FENCE.findall(text[start:end if end != -1 else None])


def cli(*args: object, cwd: Path, env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess:
    """``capevolve ARGS`` in ``cwd``; a non-zero exit fails the test with its output."""
    base = {k: v for k, v in os.environ.items()
            if k not in ("CAPEVOLVE_RUN_DIR", "CAPEVOLVE_PROJECT", "CAPEVOLVE_ENGINE")}
    proc = subprocess.run([str(CLI), *map(str, args)], cwd=cwd, env={**base, **(env or {})},
                          capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode == 0, f"{args}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


@pytest.mark.slow
def test_the_readme_own_agent_screen_and_loop_run_as_written(tmp_path):
    """capevolve.yaml and adapter.py from the README's own-agent screen, its seed line, then
    every command of its loop screen in order ($EDITOR standing for an edit naming every
    thing): each exits 0; accept is run only when the gate said accept, as it says."""
    (yaml,), (python,) = ([b[2] for b in blocks("README.md", "## Your own agent")
                           if b[0] == lang] for lang in ("yaml", "python"))
    project = tmp_path / "my_project"
    (project / "seed_capability").mkdir(parents=True)
    (project / "capevolve.yaml").write_text(yaml, encoding="utf-8")
    (project / "adapter.py").write_text(python, encoding="utf-8")
    (project / "seed_capability" / "system_prompt.md").write_text("The sky is blue.\n")
    loop = [b[2] for b in blocks("README.md", "## The loop") if b[0] == "bash"][0]
    edit = "The sky is blue; grass, snow, coal, sun, plum, carrot and cherry too."
    gate = None
    for line in loop.splitlines():
        command = line.split("  #")[0].strip()
        command = command.replace("$EDITOR cand/system_prompt.md",
                                  f"echo {shlex.quote(edit)} > cand/system_prompt.md")
        if command.startswith("capevolve accept") and gate != "accept":
            continue
        for part in command.split("&&"):
            argv = shlex.split(part)
            if argv[0] != "capevolve":
                subprocess.run(part, shell=True, cwd=tmp_path, check=True)
            elif argv[1] == "gate":
                gate = json.loads(cli(*argv[1:], "--json", cwd=tmp_path).stdout)["decision"]
            else:
                cli(*argv[1:], cwd=tmp_path)
    assert gate == "accept"
    assert (next((project / ".capevolve").glob("run_*")) / "report.md").is_file()


@pytest.mark.slow
def test_the_adapter_page_complete_example_runs_and_its_edit_is_accepted(tmp_path):
    """The adapter page's complete example (its yaml, adapter.py and seed line) checks out,
    runs, and the edit it names goes through evaluate and gate to accept."""
    found = blocks("docs/adapter.md", "## A complete example")
    (yaml,) = [b[2] for b in found if b[0] == "yaml"]
    (python,) = [b[2] for b in found if b[0] == "python" and 'title="adapter.py"' in b[1]]
    project = tmp_path / "refunds"
    (project / "seed_capability").mkdir(parents=True)
    (project / "capevolve.yaml").write_text(yaml, encoding="utf-8")
    (project / "adapter.py").write_text(python, encoding="utf-8")
    (project / "seed_capability" / "policy.md").write_text(
        "Refund what the customer asks for.\n")
    check = json.loads(cli("check", "--json", cwd=project).stdout)
    assert check["ok"] and check["warnings"] == []
    cli("run", cwd=project)
    cli("checkout", "cand", cwd=project)
    with (project / "cand" / "policy.md").open("a", encoding="utf-8") as policy:
        policy.write("Always look the order up before refunding.\n")
    record = json.loads(cli("evaluate", "--candidate", "cand", "--json", cwd=project).stdout)
    assert record["n_errors"] == 0 and record["mean"] == 1.0
    gate = json.loads(cli("gate", "--candidate", "cand_001", "--json", cwd=project).stdout)
    assert gate["decision"] == "accept"


@pytest.mark.slow
def test_the_optimize_page_scripted_edit_and_census_template_work_as_written(tmp_path):
    """The optimize page's scripted edit, saved where it says in a `capevolve init` project,
    goes through evaluate and gate with its command (CAPEVOLVE_ENGINE=local standing for the
    default Ray); census template writes a census that census check accepts as it is."""
    found = blocks("docs/optimize.md", "## Scripted edits")
    (edit,) = [b[2] for b in found if b[0] == "json"]
    (command,) = re.findall(r"`(capevolve optimize --project \. [^`]+scripted:[^`]+)`",
                            (REPO / "docs" / "optimize.md").read_text(encoding="utf-8"))
    cli("init", "mine", cwd=tmp_path)
    project = tmp_path / "mine"
    (project / "edits").mkdir()
    (project / "edits" / "01_name_the_colors.json").write_text(edit, encoding="utf-8")
    local = {"CAPEVOLVE_ENGINE": "local"}
    cli("run", cwd=project, env=local)
    result = json.loads(cli(*shlex.split(command)[1:], "--json", cwd=project, env=local).stdout)
    run_dir = Path(json.loads(cli("status", "--json", cwd=project).stdout)["run_dir"])
    ledger = [json.loads(line) for line in
              (run_dir / "optimize" / "ledger.jsonl").read_text().splitlines()]
    assert ledger[0]["outcome"] in ("accept", "reject") and ledger[0]["gate"], result
    census = tmp_path / "census.json"
    cli("census", "template", "--project", "mine", "--tag", "seed", "--out", census,
        cwd=tmp_path)
    checked = json.loads(cli("census", "check", census, "--json", cwd=tmp_path).stdout)
    assert checked["ok"] and checked["coverage"] == \
        f"0 of {json.loads(census.read_text())['failing_total']} failures described"


@pytest.mark.slow
def test_the_optimize_page_command_proposer_runs_as_written(tmp_path):
    """The optimize page's propose.py, saved beside a `capevolve init` project's
    capevolve.yaml, runs through its optimize command line (a shell expands $PWD): the first
    proposal sees no earlier iteration and the parent's diagnosis, the second sees the
    first's outcome; each edit is gated, and the spend file it writes is read."""
    (script,) = [b[2] for b in blocks("docs/optimize.md", "## The workdir of a command proposer")
                 if b[0] == "python"]
    (command,) = re.findall(r"`(capevolve optimize --project \. [^`]+command:[^`]+)`",
                            (REPO / "docs" / "optimize.md").read_text(encoding="utf-8"))
    cli("init", "mine", cwd=tmp_path)
    project = tmp_path / "mine"
    (project / "propose.py").write_text(script, encoding="utf-8")
    local = {"CAPEVOLVE_ENGINE": "local"}
    cli("run", cwd=project, env=local)
    env = {k: v for k, v in os.environ.items()
           if k not in ("CAPEVOLVE_RUN_DIR", "CAPEVOLVE_PROJECT")}
    env.update(local, PATH=f"{CLI.parent}{os.pathsep}{env['PATH']}")  # capevolve, python3
    proc = subprocess.run(["bash", "-c", command], cwd=project, env=env, capture_output=True,
                          text=True, timeout=600, check=False)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    run_dir = Path(json.loads(cli("status", "--json", cwd=project).stdout)["run_dir"])
    ledger = [json.loads(line) for line in
              (run_dir / "optimize" / "ledger.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in ledger] == [1, 2]
    first, second = ledger
    assert all(r["gate"] and r["outcome"] in ("accept", "reject") for r in ledger), ledger
    assert all(r["detail"]["exit_status"] == 0 and "spend_note" not in r["detail"]
               and r["spend"]["cost_usd"] == 0 for r in ledger), ledger
    said = first["detail"]["stdout_tail"].splitlines()
    assert said[0].startswith("0 earlier iterations; the parent has ")
    assert int(said[0].split()[6]) >= 1  # the seed fails on train: its clusters are shown
    said = second["detail"]["stdout_tail"].splitlines()
    assert said[0].startswith("1 earlier iterations; the parent has ")
    assert said[1] == f"iteration 1: {first['child_id']} {first['outcome']}"
