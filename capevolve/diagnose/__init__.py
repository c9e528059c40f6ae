"""Diagnose: a candidate's failures as actionable side information.

``diagnose`` turns stored rollouts into a reflective dataset, ranked root-cause clusters
(one cause per failing feedback part; mechanical ``narrated_without_action`` and
``claimed_without_matching_action`` clusters for claims no matching tool call backs), task
groups (kept-good / flaky / consistently partial / always-failing), the run's
tried-and-rejected fixes, trajectory files and sanity checks; ``annotate`` records a
person's judgement on a cluster; ``census`` exports failing datapoints for describer
agents and checks their synthesis. The modules: source (one DuckDB query), classify,
units (preamble, parts, sentences), signature, cluster, grouping, narrated, claimed,
history, rank, sanity, gold, reflective, trajectories, diagnosis, annotate, census. The
public verb is :func:`capevolve.diagnose_candidate`."""

from capevolve.diagnose.annotate import annotate
from capevolve.diagnose.diagnosis import DiagnoseOptions, build_diagnosis, diagnose, diagnosis_path
from capevolve.diagnose.kinds import ClusterMode, FailureKind, JudgementTag, TaskPattern

__all__ = [
    "ClusterMode",
    "DiagnoseOptions",
    "FailureKind",
    "JudgementTag",
    "TaskPattern",
    "annotate",
    "build_diagnosis",
    "diagnose",
    "diagnosis_path",
]
