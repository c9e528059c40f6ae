"""Usage errors are one line where a program reads them: stdout not a terminal, or --json."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
from cli.cli_support import invoke
from fixtures.projects import clean_env

CAPEVOLVE = Path(sys.executable).with_name("capevolve")
USAGE = [
    (["status", "--frob"], "No such option: --frob"),
    (["evaluate", "--run-dir", "r"], "Missing option '--candidate'"),
    (["frobnicate"], "No such command 'frobnicate'"),
    (["evaluate", "-r", "r", "-c", "x", "--n-trials", "abc"], "--n-trials"),
    (["gate", "-r", "r", "-c", "x", "--mode", "coin"], "--mode"),
    (["diagnose", "annotate", "--bogus"], "No such option: --bogus"),
]


@pytest.mark.parametrize("args, needle", [
    pytest.param(*case, marks=() if i == 0 else (pytest.mark.slow,))
    for i, case in enumerate(USAGE)])
def test_a_usage_error_is_one_line_when_stdout_is_a_pipe(args, needle):
    """The console script with stdout a pipe: one `error:` line naming the command and
    the problem (it was a 5-6 line box), exit 2, nothing on stdout."""
    out = subprocess.run([str(CAPEVOLVE), *args], capture_output=True, text=True,
                         env=clean_env(), timeout=120)
    assert out.returncode == 2 and out.stdout == "", out
    lines = out.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: capevolve"), out.stderr
    assert needle in lines[0] and "--help" in lines[0], out.stderr


@pytest.mark.parametrize("args, needle", USAGE[:3])
def test_in_process_callers_get_the_same_line(args, needle):
    """Through the Typer app (CliRunner: not a terminal) the rule is the same."""
    result = invoke(*args)
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and needle in result.stderr


def _at_a_terminal(*args: str) -> tuple[int, str]:
    """Run the console script with stdout and stderr on a pseudo-terminal."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([str(CAPEVOLVE), *args], stdout=follower, stderr=follower,
                            stdin=subprocess.DEVNULL, env={**clean_env(), "COLUMNS": "80"})
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 4096)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    return proc.wait(timeout=120), b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.slow
def test_at_a_terminal_the_box_stays_and_json_makes_it_one_line():
    """A person at a terminal keeps the formatted box; --json makes it one line there too."""
    code, text = _at_a_terminal("status", "--frob")
    assert code == 2 and "No such option" in text and len(text.strip().splitlines()) > 2
    code, text = _at_a_terminal("status", "--frob", "--json")
    assert code == 2 and text.strip().splitlines() == [
        "error: capevolve status: No such option: --frob (see `capevolve status --help`)"]
