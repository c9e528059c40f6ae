"""Edge cases of bad input that once crashed with a traceback; each is now a clean error.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from cli.cli_support import invoke, one_json, user_error, write_project

TASKS_NONE = """
class A:
    def tasks(self):
        return None

    def run_target(self, candidate, task, *, trial, seed):
        return Rollout(output=task.target)

    def score(self, task, rollout):
        return Score(reward=1.0)
"""

TWICE = """
from capevolve.cli.app import app
args = ["gate", "--current", "0.5", "--candidate", "0.6", "--current-stderr", "0.02",
        "--candidate-stderr", "0.02", "--json"]
for _ in range(2):
    try:
        app(args, standalone_mode=False)
    except SystemExit:
        pass
"""


def test_run_dir_is_a_file(toy_copy, tmp_path):
    """run --run-dir pointing at an existing file is a user error (exit 2), not a traceback."""
    target = tmp_path / "a_file"
    target.write_text("keep me\n", encoding="utf-8")
    user_error(invoke("run", "--project", toy_copy, "--run-dir", target, "--engine", "local"),
               str(target))
    assert target.read_text(encoding="utf-8") == "keep me\n"


def test_init_on_a_file(tmp_path):
    """init DIR where DIR is an existing file is a user error (exit 2), not a traceback."""
    target = tmp_path / "a_file"
    target.write_text("keep me\n", encoding="utf-8")
    user_error(invoke("init", target), str(target))


def test_check_tasks_returning_none(tmp_path):
    """check on an adapter whose tasks() returns None lists a problem and exits 1."""
    project = write_project(tmp_path / "p", TASKS_NONE)
    payload = one_json(invoke("check", "--project", project, "--json"), exit_code=1)
    assert payload["ok"] is False and "tasks()" in payload["problems"][0]


@pytest.mark.slow
def test_two_in_process_commands_both_print_json_on_stdout(tmp_path):
    """Two app() calls in one process each print their JSON object on stdout."""
    env = {k: v for k, v in os.environ.items() if k != "CAPEVOLVE_RUN_DIR"}
    proc = subprocess.run([sys.executable, "-c", TWICE], check=False, capture_output=True,
                          text=True, env=env, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stdout.splitlines()) == 2, (proc.stdout, proc.stderr)


def test_query_json_with_nan(base_run):
    """query --json on a result holding NaN prints one JSON object (or a one-line error)."""
    result = invoke("query", "--run-dir", base_run.path, "SELECT 'nan'::DOUBLE AS x", "--json")
    if result.exit_code == 2:
        user_error(result, "query")
    else:
        assert one_json(result)["columns"] == ["x"]
