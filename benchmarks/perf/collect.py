"""Running benchmark scripts for the collector (``table.py``): each in its own subprocess
with a timeout, its output passed through to stderr line by line, its ``BENCH_ROW`` lines
parsed (``bench_row.parse_line``).

Whatever happens to a script becomes rows, never a silent gap: a script that is not there
is a ``missing`` row (no verdict: a script another change adds), one that times out, dies of
a signal, exits non-zero with no missed target to explain it, or prints no row at all is a
failed row (``met`` false) with the reason in ``error``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench_row import CollectedRow, parse_line


@dataclass(frozen=True)
class Script:
    """One benchmark of ``make bench``: its name, path, and the timeouts (seconds) of a
    full run and of a ``--quick`` one."""

    name: str
    path: Path
    timeout_s: float
    quick_timeout_s: float = 300.0
    args: tuple[str, ...] = ()


@dataclass
class Outcome:
    """What one script did: its rows (its own and the collector's), exit code, seconds."""

    script: Script
    rows: list[CollectedRow] = field(default_factory=list)
    returncode: int | None = None
    seconds: float = 0.0
    status: str = "ok"
    """ok, missing, timeout, crashed, failed (non-zero exit), no-rows."""


def _fail(script: Script, what: str, error: str, note: str = "") -> CollectedRow:
    return CollectedRow(script=script.name, figure=f"{script.name}: {what}", met=False,
                        error=error, note=note)


def run_script(script: Script, quick: bool, echo=sys.stderr) -> Outcome:
    """Run ``script`` to its end or its timeout and turn what it did into rows."""
    outcome = Outcome(script)
    if not script.path.is_file():
        outcome.status = "missing"
        outcome.rows.append(CollectedRow(script=script.name, figure=f"{script.name}: missing",
                                         error=f"no script at {script.path}",
                                         note="listed in make bench, not in this tree"))
        return outcome
    timeout = script.quick_timeout_s if quick else script.timeout_s
    cmd = [sys.executable, str(script.path), *script.args, *(["--quick"] if quick else [])]
    lines: list[str] = []
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            errors="replace", start_new_session=True)

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            print(f"[{script.name}] {line}", end="", file=echo, flush=True)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        outcome.status = "timeout"
    reader.join(timeout=10)
    outcome.seconds = time.monotonic() - t0
    outcome.returncode = proc.returncode
    for line in list(lines):
        row = parse_line(script.name, line)
        if row is not None:
            outcome.rows.append(row)
    _judge(outcome, lines, timeout)
    return outcome


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the script's own process group (it was started in a new session)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def _judge(outcome: Outcome, lines: list[str], timeout: float) -> None:
    script, code = outcome.script, outcome.returncode
    tail = next((ln for ln in reversed(lines) if ln.strip()), "")[-200:]
    if outcome.status == "timeout":
        outcome.rows.append(_fail(script, f"timed out after {timeout:.0f} s",
                                  f"killed after {timeout:.0f} s", tail))
    elif code is not None and code < 0:
        outcome.status = "crashed"
        outcome.rows.append(_fail(script, f"killed by signal {-code}", "crashed", tail))
    elif code not in (0, None):
        explained = code == 1 and any(r.met is False and r.error is None for r in outcome.rows)
        if not explained:
            outcome.status = "crashed" if code != 1 else "failed"
            outcome.rows.append(_fail(script, f"exited with code {code}", "failed", tail))
    if not outcome.rows and outcome.status == "ok":
        outcome.status = "no-rows"
        outcome.rows.append(_fail(script, "printed no BENCH_ROW line", "no rows", tail))


def run_all(scripts: list[Script], quick: bool, echo=sys.stderr) -> list[Outcome]:
    """Every script in turn (never two at once: they measure time on a shared machine)."""
    outcomes = []
    for script in scripts:
        print(f"[bench] {script.name} ...", file=echo, flush=True)
        outcome = run_script(script, quick, echo)
        print(f"[bench] {script.name}: {outcome.status} in {outcome.seconds:.0f} s",
              file=echo, flush=True)
        outcomes.append(outcome)
    return outcomes
