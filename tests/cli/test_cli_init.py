"""init scaffolds a project that checks out and runs."""

from __future__ import annotations

from cli.cli_support import invoke, one_json, user_error


def test_init_check_run(tmp_path):
    """init DIR, then check --project DIR passes and run --engine local scores the seed."""
    project = tmp_path / "colors"
    files = one_json(invoke("init", project, "--json"))["files"]
    assert sorted(files) == ["PROJECT.md", "adapter.py", "capevolve.yaml",
                             "seed_capability/system_prompt.md"]
    assert all((project / f).is_file() for f in files)
    check = one_json(invoke("check", "--project", project, "--json"))
    assert check["ok"] is True and check["problems"] == [] and check["n_tasks"] == 32
    handoff = one_json(invoke("run", "--project", project, "--run-dir", tmp_path / "run",
                              "--engine", "local", "--json"))
    baseline = handoff["baseline"]
    assert baseline["status"] == "complete" and baseline["n_errors"] == 0
    assert baseline["n_scored"] == baseline["n_tasks"] == 8
    assert 0 <= baseline["mean"] <= 1


def test_init_human_output(tmp_path):
    """init without --json lists the files and the next command to run."""
    result = invoke("init", tmp_path / "p")
    assert result.exit_code == 0, result.stderr
    assert f"next: capevolve check --project {tmp_path / 'p'}" in result.stdout


def test_init_refuses_existing_project(tmp_path):
    """init on an existing project exits 2 naming its capevolve.yaml and changes nothing."""
    project = tmp_path / "p"
    one_json(invoke("init", project, "--json"))
    (project / "capevolve.yaml").write_text("name: mine\n", encoding="utf-8")
    user_error(invoke("init", project, "--json"), str(project / "capevolve.yaml"),
               "already exists")
    assert (project / "capevolve.yaml").read_text(encoding="utf-8") == "name: mine\n"


def test_default_run_dir(tmp_path):
    """run without --run-dir creates the run under <project>/.capevolve/."""
    project = tmp_path / "p"
    one_json(invoke("init", project, "--json"))
    handoff = one_json(invoke("run", "--project", project, "--engine", "local", "--json"))
    run_dir = handoff["run_dir"]
    assert run_dir.startswith(str((project / ".capevolve").resolve()) + "/run_")
    assert one_json(invoke("status", "--run-dir", run_dir, "--json"))["best_id"] == "seed"
