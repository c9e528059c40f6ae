"""Diagnose: a candidate's failures as actionable side information."""

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
