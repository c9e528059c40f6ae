"""``scripted:DIR``: prepared edits, one per iteration in name order (offline demos).

An edit is a JSON file ``{"title", "why", "ops"}`` (an op: a ``file`` and ``append``,
``replace: [old, new]`` or ``copy_from``) or a digit-named directory copied over the
candidate. An edit that cannot apply is a no_change; past the last, the loop stops."""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from capevolve.errors import ConfigError
from capevolve.optimize.proposers.base import Proposal, ProposalContext, ProposerConfig, Spend


def edits_in(directory: Path) -> list[Path]:
    """The edits of a scripted directory, in application order."""
    return sorted((p for p in directory.iterdir()
                   if (p.is_file() and p.suffix == ".json")
                   or (p.is_dir() and p.name[:1].isdigit())), key=lambda p: p.name)


def apply_json_edit(edit: dict[str, Any], source: Path, candidate: Path) -> str:
    """Apply a JSON edit to ``candidate``; its title (ValueError, KeyError or OSError if
    an op cannot apply)."""
    for op in edit["ops"]:
        target = (candidate / op["file"]).resolve()
        if not target.is_relative_to(candidate.resolve()):
            raise ValueError(f"{op['file']!r} is outside the candidate")
        if "copy_from" in op:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source.parent / op["copy_from"], target)
            continue
        text = target.read_text(encoding="utf-8")
        if "append" in op:
            text = text + ("" if text.endswith("\n") else "\n") + op["append"]
        else:
            old, new = op["replace"]
            if text.count(old) != 1:
                raise ValueError(f"{op['file']}: the text to replace occurs "
                                 f"{text.count(old)} times, expected once")
            text = text.replace(old, new)
        target.write_text(text, encoding="utf-8")
    return str(edit.get("title") or source.stem)


@dataclass
class ScriptedProposer:
    """Applies each iteration's prepared edit."""

    directory: Path
    name: str = "scripted"
    wants_diagnosis: bool = False

    def propose(self, ctx: ProposalContext) -> Proposal:
        t0 = time.monotonic()
        edits = edits_in(self.directory)
        if ctx.iteration > len(edits):
            return Proposal(False, f"no scripted edit left ({len(edits)} in {self.directory})",
                            detail={"exhausted": True})
        source = edits[ctx.iteration - 1]
        try:
            if source.is_dir():
                shutil.copytree(source, ctx.workdir, dirs_exist_ok=True)
                title = source.name
            else:
                title = apply_json_edit(json.loads(source.read_text(encoding="utf-8")),
                                        source, ctx.workdir)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            return Proposal(False, f"scripted edit {source.name} does not apply: {exc}",
                            detail={"edit": source.name})
        return Proposal(True, spend=Spend(wall_s=time.monotonic() - t0),
                        detail={"edit": source.name, "title": title})


def build(options: str, config: ProposerConfig) -> ScriptedProposer:
    """``scripted:DIR`` (DIR relative to the working directory, else to the project)."""
    if not options.strip():
        raise ConfigError("--proposer scripted:DIR: the directory of edits is missing")
    path = Path(options.strip()).expanduser()
    if not path.is_absolute() and not path.is_dir():
        path = config.project_dir / path
    if not path.is_dir():
        raise ConfigError(f"--proposer scripted:{options}: no such directory")
    if not edits_in(path):
        raise ConfigError(f"--proposer scripted:{options}: no edits (*.json files or "
                          "digit-named directories) in it")
    return ScriptedProposer(path.resolve(), name=f"scripted:{path.name}")
