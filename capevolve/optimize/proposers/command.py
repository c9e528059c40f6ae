"""``command:TEMPLATE``: any program that edits a directory (a coding-agent CLI, a script).

It runs in the prepared directory in its own process group, killed at the timeout; a
non-zero exit or a timeout is a no_change. ``{"tokens", "cost_usd"}`` written to
``$CAPEVOLVE_SPEND_FILE`` is optimizer spend."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from capevolve.errors import ConfigError
from capevolve.optimize.proposers.base import Proposal, ProposalContext, ProposerConfig, Spend

PLACEHOLDERS = ("workdir", "instructions", "context", "root", "iteration", "parent")
TAIL_CHARS = 2000
"""Characters of a command's stdout / stderr tail kept."""


def _tail(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")[-TAIL_CHARS:]


def _spend(path: Path, wall_s: float) -> tuple[Spend, str | None]:
    if not path.is_file():
        return Spend(wall_s=wall_s), None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Spend.model_validate({**data, "wall_s": wall_s}), None
    except (ValueError, TypeError, ValidationError) as exc:
        return Spend(wall_s=wall_s), f"spend file not understood: {str(exc).splitlines()[0]}"


@dataclass
class CommandProposer:
    """Runs the command template once per proposal."""

    template: str
    timeout_s: float
    name: str = "command"
    wants_diagnosis: bool = True

    def propose(self, ctx: ProposalContext) -> Proposal:
        root = ctx.workdir.parent
        values = {"workdir": ctx.workdir, "instructions": root / "INSTRUCTIONS.md",
                  "context": root / "context", "root": root, "iteration": ctx.iteration,
                  "parent": ctx.parent_id}
        argv = [part.format(**{k: str(v) for k, v in values.items()})
                for part in shlex.split(self.template)]
        spend_file = root / "spend.json"
        env = {**os.environ, "CAPEVOLVE_WORKDIR": str(ctx.workdir),
               "CAPEVOLVE_INSTRUCTIONS": str(root / "INSTRUCTIONS.md"),
               "CAPEVOLVE_SPEND_FILE": str(spend_file)}
        t0 = time.monotonic()
        try:
            proc = subprocess.Popen(argv, cwd=root, env=env, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    start_new_session=True)
        except OSError as exc:
            return Proposal(False, f"command could not start: {exc}",
                            detail={"argv": argv, "exit_status": None})
        timed_out = False
        try:
            out, err = proc.communicate(timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
        wall = time.monotonic() - t0
        spend, note = _spend(spend_file, wall)
        detail: dict[str, Any] = {"argv": argv, "exit_status": proc.returncode,
                                  "timed_out": timed_out, "wall_s": round(wall, 3),
                                  "stdout_tail": _tail(out), "stderr_tail": _tail(err)}
        if note:
            detail["spend_note"] = note
        if timed_out:
            return Proposal(False, f"command timed out after {self.timeout_s:g} s", spend, detail)
        if proc.returncode != 0:
            return Proposal(False, f"command exited with status {proc.returncode}", spend, detail)
        return Proposal(True, None, spend, detail)


def build(options: str, config: ProposerConfig) -> CommandProposer:
    """``command:TEMPLATE``; ConfigError when the template is empty, does not split, has
    no ``{workdir}`` or names an unknown placeholder."""
    template = options.strip()
    if not template:
        raise ConfigError("--proposer command:TEMPLATE: the command template is missing")
    try:
        parts = shlex.split(template)
    except ValueError as exc:
        raise ConfigError(f"--proposer command:{template}: {exc}") from None
    if not any("{workdir}" in p for p in parts):
        raise ConfigError(f"--proposer command:{template}: the template has no {{workdir}} "
                          "(the directory the command must edit)")
    try:
        for part in parts:
            part.format(**dict.fromkeys(PLACEHOLDERS, ""))
    except (KeyError, IndexError, ValueError) as exc:
        raise ConfigError(f"--proposer command:{template}: unknown placeholder {exc} "
                          f"(known: {', '.join('{' + p + '}' for p in PLACEHOLDERS)})") from None
    return CommandProposer(template, config.timeout_s, name=f"command:{Path(parts[0]).name}")
