"""final.json and diagnoses/*.json through their records; a bad file is a RunDirError naming it."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from capevolve._store import jsonfiles
from capevolve._store.layout import Layout
from capevolve.errors import RunDirError
from capevolve.records import DiagnosisRecord, FinalRecord, Record, parse_record

R = TypeVar("R", bound=Record)


def read_document(model: type[R], path: Path) -> R:
    """The document at ``path`` validated as ``model``."""
    try:
        data = jsonfiles.read(path)
    except (OSError, ValueError) as exc:
        raise RunDirError(f"{path}: unreadable ({exc})") from None
    return parse_record(model, data, str(path))


def read_final(layout: Layout) -> FinalRecord:
    """final.json; RunDirError when absent or invalid."""
    if not layout.final.is_file():
        raise RunDirError(f"{layout.final}: the run is not finalized")
    return read_document(FinalRecord, layout.final)


def read_diagnosis(path: Path) -> DiagnosisRecord:
    """A diagnosis file."""
    return read_document(DiagnosisRecord, path)


def diagnosis_record(doc: dict[str, Any]) -> DiagnosisRecord:
    """Validate a diagnosis about to be written."""
    return DiagnosisRecord.model_validate(doc)
