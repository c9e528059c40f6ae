"""Helpers for the CLI tests: invoke the Typer app, read its one JSON object, check errors.

The installed typer (0.29) vendors its own click (``typer._click``) and ships its own
``typer.testing.CliRunner``: like click >= 8.2 (8.5 is installed separately), it keeps
``result.stdout`` and ``result.stderr`` apart (``result.output`` interleaves both) and has
no ``mix_stderr``. Its in-memory stdout has no ``fileno()``, so capevolve's stdout
protection takes its "swap the Python object" path here; the descriptor-level path is
covered by a subprocess test. With ``catch_exceptions`` (the default) an escaped exception
becomes ``result.exception`` with exit code 1 and no printed traceback, so the error checks
look at ``result.exception`` as well as the text.
"""

from __future__ import annotations

import json
import shutil
import textwrap
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from capevolve.cli.app import app

REPO = Path(__file__).resolve().parents[2]
TOY = REPO / "benchmarks" / "toy"

# Environment variables that would silently change what a command does.
CLEAN_ENV: dict[str, str | None] = {
    "CAPEVOLVE_RUN_DIR": None, "CAPEVOLVE_PROJECT": None, "CAPEVOLVE_ENGINE": None,
    "RAY_ADDRESS": None,
}

_RUNNER = CliRunner()


def invoke(*args: Any, env: dict[str, str | None] | None = None):
    """Run ``capevolve ARGS`` in-process and return the click Result."""
    return _RUNNER.invoke(app, [str(a) for a in args], env={**CLEAN_ENV, **(env or {})})


def describe(result) -> str:
    """Everything about a Result, for assertion messages."""
    text = (f"exit code {result.exit_code}\n--- stdout:\n{result.stdout}\n"
            f"--- stderr:\n{result.stderr}")
    if result.exc_info and not isinstance(result.exception, SystemExit):
        text += "\n--- exception:\n" + "".join(traceback.format_exception(*result.exc_info))
    return text


def one_json(result, exit_code: int = 0) -> dict[str, Any]:
    """Assert the command printed exactly one JSON object on one stdout line; return it."""
    assert result.exit_code == exit_code, describe(result)
    lines = result.stdout.splitlines()
    assert len(lines) == 1, f"expected one stdout line, got {len(lines)}\n{describe(result)}"
    assert result.stdout == lines[0] + "\n", describe(result)
    payload = json.loads(lines[0])
    assert isinstance(payload, dict), describe(result)
    return payload


def no_traceback(result) -> None:
    """Assert nothing escaped as an exception and no traceback was printed."""
    assert result.exception is None or isinstance(result.exception, SystemExit), describe(result)
    for text in (result.stdout, result.stderr, result.output):
        assert "Traceback" not in text, describe(result)


def user_error(result, *needles: str) -> str:
    """Assert a user error: exit 2, nothing on stdout, one ``error:`` line naming every needle.

    The only other stderr lines allowed are the ``capevolve: ...`` progress lines a command
    prints before it starts working. Returns the error line.
    """
    assert result.exit_code == 2, describe(result)
    no_traceback(result)
    assert result.stdout == "", describe(result)
    lines = result.stderr.splitlines()
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1, describe(result)
    others = [line for line in lines if line not in errors]
    assert all(line.startswith("capevolve: ") for line in others), describe(result)
    for needle in needles:
        assert needle in errors[0], f"{needle!r} not in the error line\n{describe(result)}"
    return errors[0]


@dataclass(frozen=True)
class Stored:
    """What a run dir holds that must never be lost: events, rollout parts, snapshots."""

    n_events: int
    parts: frozenset[str]
    candidates: frozenset[str]


def stored(run_dir: Path) -> Stored:
    """The stored state of a run dir (line count of events.jsonl, parquet files, candidates)."""
    run_dir = Path(run_dir)
    events = run_dir / "events.jsonl"
    n_events = events.read_bytes().count(b"\n") if events.is_file() else 0
    parts = frozenset(p.relative_to(run_dir).as_posix()
                      for p in (run_dir / "rollouts").rglob("*.parquet"))
    candidates = frozenset(p.name for p in (run_dir / "candidates").glob("*") if p.is_dir())
    return Stored(n_events, parts, candidates)


def copy_toy(dest: Path) -> Path:
    """A writable copy of the toy project at ``dest``."""
    shutil.copytree(TOY, dest, ignore=shutil.ignore_patterns(".capevolve", "__pycache__"))
    return dest


def start_run(project: Path, run_dir: Path) -> dict[str, Any]:
    """``capevolve run --engine local --json``; asserts success and returns the handoff."""
    return one_json(invoke("run", "--project", project, "--run-dir", run_dir,
                           "--engine", "local", "--json"))


def write_project(root: Path, adapter_body: str, config: str = "") -> Path:
    """A minimal project: capevolve.yaml, adapter.py (class ``A``) and a one-file capability."""
    (root / "cap").mkdir(parents=True)
    (root / "cap" / "prompt.md").write_text("- be right\n", encoding="utf-8")
    (root / "adapter.py").write_text(
        "from capevolve import Rollout, Score, Task\n\n\n" + textwrap.dedent(adapter_body),
        encoding="utf-8")
    config = textwrap.dedent(config)
    defaults = [line for line in ("num_trials: 2", "engine: {kind: local}")  # a key once
                if not any(ln.startswith(line.split(":")[0] + ":")
                           for ln in config.splitlines())]
    (root / "capevolve.yaml").write_text(
        "name: mini\nadapter: adapter.py:A\ncapability_path: cap\n"
        + "".join(f"{line}\n" for line in defaults) + config, encoding="utf-8")
    return root


def worse_capability(dest: Path) -> Path:
    """The seed capability without its compare rule (clearly worse on val)."""
    text = (TOY / "seed_capability" / "system_prompt.md").read_text(encoding="utf-8")
    kept = text.split("- To compare")[0]
    assert "compare" not in kept.lower() and "carry" in kept
    dest.mkdir(parents=True)
    (dest / "system_prompt.md").write_text(kept, encoding="utf-8")
    return dest
