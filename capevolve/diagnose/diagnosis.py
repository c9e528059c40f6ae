"""``diagnose``: one candidate's stored rollouts on a split -> reflective dataset, clusters,
task groups and sanity checks, written to ``diagnoses/<split>__<tag>.json``.

The result is a pure function of the stored rows, the adapter context and the options
(plus judgements carried over from an earlier file for clusters with the same signature),
with sorted keys and lists, so the file is byte-identical run to run. Errored trials are
missing data: counted in ``errored_trials``, never failures.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from capevolve._store import jsonfiles
from capevolve._store.documents import diagnosis_record
from capevolve._store.rundir import RunDir
from capevolve.diagnose.classify import group_tasks, is_failure, is_pass, task_outcomes
from capevolve.diagnose.cluster import sanity_checks
from capevolve.diagnose.context import AdapterContext, adapter_context
from capevolve.diagnose.gold import GoldGuard
from capevolve.diagnose.grouping import cluster_failures, cluster_records
from capevolve.diagnose.kinds import ClusterMode
from capevolve.diagnose.narrated import rollout_calls
from capevolve.diagnose.reflective import (
    Failure,
    analyse,
    entry,
    rollout_pointer,
    tool_names,
)
from capevolve.diagnose.source import Trial, load_trials, refuse_test
from capevolve.errors import ConfigError
from capevolve.records import FORMAT_VERSION

FORMAT = FORMAT_VERSION  # the diagnosis document is a versioned DiagnosisRecord


@dataclass(frozen=True)
class DiagnoseOptions:
    """What to diagnose and how."""

    split: str
    tag: str  # a candidate id
    mode: ClusterMode = ClusterMode.ROOT_CAUSE
    redact_gold: bool = False
    project: Path | None = None  # the project whose adapter gives targets / trajectories


def write_document(path: Path, doc: dict[str, Any]) -> None:
    """Validate ``doc`` as a DiagnosisRecord, then write canonical compact JSON (sorted
    keys) atomically: temp file, fsync, rename."""
    stored = diagnosis_record(doc).to_json()
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(jsonfiles.dumps(stored, indent=None) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def diagnosis_path(run: RunDir, split: str, tag: str) -> Path:
    """``diagnoses/<split>__<tag>.json`` of a run."""
    return run.layout.diagnoses / f"{split}__{tag}.json"


def build_diagnosis(trials: list[Trial], context: AdapterContext, options: DiagnoseOptions,
                    partition: str) -> dict[str, Any]:
    """The diagnosis document of ``trials`` (one evaluation of one candidate on a split)."""
    if options.redact_gold and context.targets is None:
        raise ConfigError("--redact-gold needs the tasks' targets, but the adapter could not "
                          f"be loaded ({context.unavailable}); pass --project")
    guard = None if context.targets is None else GoldGuard(context.targets)
    outcomes = task_outcomes(trials)
    groups = group_tasks(outcomes)
    kept_good = set(groups.kept_good)
    failures: list[Failure] = []
    passing_tools: dict[str, frozenset[str]] = {}
    for trial in trials:
        calls = rollout_calls(trial.tool_calls, trial.trace)
        if is_failure(trial):
            failures.append(analyse(trial, calls, guard, options.redact_gold))
        elif trial.task_id in kept_good and is_pass(trial.reward):
            known: frozenset[str] = passing_tools.get(trial.task_id, frozenset())
            passing_tools[trial.task_id] = known | tool_names(calls)
    clusters = cluster_failures(failures, ClusterMode(options.mode))
    where = {i: c.signature for c in clusters for i in c.members}
    entries = [entry(f, outcomes[f.trial.task_id],
                     context.trajectory or f.trial.trajectory
                     or rollout_pointer(partition, f.trial),
                     where[i]) for i, f in enumerate(failures)]
    n_failing_tasks = len(groups.flaky) + len(groups.always_failing)
    return {
        "format_version": FORMAT, "split": str(options.split), "tag": options.tag,
        "eval_id": trials[0].eval_id if trials else None, "mode": str(options.mode),
        "reflective_dataset": entries,
        "clusters": cluster_records(clusters, failures, passing_tools),
        "kept_good": groups.kept_good, "flaky": groups.flaky,
        "always_failing": groups.always_failing, "unscored": groups.unscored,
        "failing_total": len(failures), "failing_tasks": n_failing_tasks,
        "errored_trials": sum(1 for t in trials if t.errored),
        "sanity": sanity_checks(clusters, n_failing_tasks),
        "gold_check": {
            "available": guard is not None, "unavailable_reason": context.unavailable,
            "entries_with_gold": sum(1 for f in failures if f.gold_leak),
            "redacted": bool(options.redact_gold),
        },
    }


def carry_judgements(previous: dict[str, Any], current: dict[str, Any]) -> None:
    """Keep ``tag`` / ``blast_radius`` recorded earlier for clusters whose signature remains."""
    earlier = {c["signature"]: c for c in previous.get("clusters", [])}
    for cluster in current["clusters"]:
        old = earlier.get(cluster["signature"])
        if old and (old.get("tag") or old.get("blast_radius")):
            cluster["tag"], cluster["blast_radius"] = old.get("tag"), old.get("blast_radius")


def diagnose(run: RunDir, options: DiagnoseOptions,
             context: AdapterContext | None = None) -> dict[str, Any]:
    """Diagnose ``options.tag`` on ``options.split`` (test refused) and write the file."""
    split = refuse_test(options.split)
    trials = load_trials(run, split, options.tag)
    if context is None:
        context = adapter_context(run, split, options.project)
    result = build_diagnosis(trials, context, options,
                             str(run.layout.partition(split, options.tag)))
    path = diagnosis_path(run, split, options.tag)
    with run.locked():  # every write into the run dir holds the run lock
        if path.is_file():
            try:
                carry_judgements(jsonfiles.read(path), result)
            except (OSError, ValueError):
                pass  # an unreadable earlier file is simply replaced
        path.parent.mkdir(parents=True, exist_ok=True)
        write_document(path, result)
    return result
