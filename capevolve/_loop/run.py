"""Agent mode: check -> splits -> snapshot the seed -> baseline on val -> handoff."""

from __future__ import annotations

import datetime as dt
import shlex
import socket
from pathlib import Path
from typing import Any

from capevolve._engine.contract import Engine
from capevolve._loop import models_pin
from capevolve._loop.evaluate import evaluate
from capevolve._loop.frozen_config import run_config
from capevolve._loop.locate import default_run_dir
from capevolve._policy.power_plan import planned_power
from capevolve._project import fingerprint as project_fingerprint
from capevolve._project.loader import check_project
from capevolve._project.tasks import task_ids
from capevolve._store.candidates import content_hash
from capevolve._store.rundir import RunDir
from capevolve._store.splits import make_splits
from capevolve.config import CONFIG_FILENAME, load_config
from capevolve.errors import AdapterError, CandidateError, ConfigError, RunDirError
from capevolve.kinds import SEED_ID, Split
from capevolve.models import Meter
from capevolve.versions import versions


def create_run(project_dir: Path | str, run_dir: Path | str | None = None) -> RunDir:
    """Check the project, freeze its splits and snapshot the seed; models are pinned before the
    check's probe spends."""
    config_file = Path(project_dir) / CONFIG_FILENAME
    pins = models_pin.pinned(load_config(Path(project_dir)), str(config_file))
    probe = Meter()  # the check's probe rollout is spend too (role check)
    project, problems = check_project(project_dir, probe)
    if project is None or problems:
        raise AdapterError("project check failed: " + "; ".join(problems))
    ids = task_ids(project.adapter())  # streamed: only the ids are kept
    splits = make_splits(ids, project.config.splits, project.root)
    root = Path(run_dir) if run_dir else default_run_dir(project.root)
    if (root / "run.json").exists():
        raise RunDirError(f"{root}: already holds a run; pass another --run-dir")
    try:  # the seed must be snapshottable before any run dir is made
        content_hash(project.capability_dir)
    except CandidateError as exc:
        raise ConfigError(f"{project.root / 'capevolve.yaml'}: capability_path: "
                          f"{exc}") from None
    manifest = {
        "run_id": root.name, "created_at": dt.datetime.now(dt.UTC).isoformat(),
        "project_dir": str(project.root), "config": project.config.model_dump(mode="json"),
        "versions": versions(), "seed": project.config.seed, "host": socket.gethostname(),
        "n_tasks": len(ids), "fingerprint": project_fingerprint.fingerprint(project),
        **pins, "models_check": probe.snapshot(),
    }
    return RunDir.create(root, manifest, splits, seed=project.capability_dir)


def next_commands(run: RunDir) -> list[str]:
    """The commands an editor runs next, in order."""
    r = shlex.quote(str(run.root))
    return [
        f"capevolve diagnose --run-dir {r} --split val --tag {run.best_id}",
        f"capevolve checkout --run-dir {r} ./cand_next   # a writable copy of the best; "
        "edit it",
        f"capevolve evaluate --run-dir {r} --candidate ./cand_next --split val --json",
        f"capevolve gate --run-dir {r} --candidate <candidate_id> --json",
        f"capevolve accept --run-dir {r} --candidate <candidate_id>   # or: capevolve reject",
        f"capevolve status --run-dir {r}",
        f"capevolve finalize --run-dir {r}   # once, at the end",
        f"capevolve report --run-dir {r}",
    ]


def start_run(project_dir: Path | str, run_dir: Path | str | None = None,
              engine: Engine | None = None) -> dict[str, Any]:
    """Create the run, score the seed on val (the baseline), return the handoff."""
    run = create_run(project_dir, run_dir)
    baseline = evaluate(run, SEED_ID, Split.VAL, engine=engine)
    config = run_config(run)
    scoreable = len(run.splits.val) - (baseline.get("excluded") or 0)
    return {
        "run_dir": str(run.root), "best_id": run.best_id,
        "baseline": {k: baseline[k] for k in ("eval_id", "mean", "stderr", "n_tasks",
                                              "n_scored", "n_errors", "status", "excluded",
                                              "excluded_reasons", "incomplete_reason")},
        "next": next_commands(run),
        "power": planned_power(config.gate, config.budget.max_iterations, scoreable,
                               config.num_trials),
    }
