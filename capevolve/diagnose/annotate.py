"""``diagnose annotate``: record a person's judgement on one cluster of a diagnosis file, after
checking the file, cluster, tag, and that blast-radius tasks pass.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from capevolve._store.documents import read_diagnosis
from capevolve._store.rundir import RunDir
from capevolve.diagnose.diagnosis import write_document
from capevolve.diagnose.kinds import JudgementTag
from capevolve.errors import ConfigError, RunDirError
from capevolve.kinds import EventKind


def parse_tag(text: str) -> JudgementTag:
    """A JudgementTag from its value, case-insensitively (``_`` accepted for ``-``)."""
    wanted = text.strip().upper().replace("_", "-")
    for tag in JudgementTag:
        if wanted == tag.value:
            return tag
    known = ", ".join(t.value for t in JudgementTag)
    raise ConfigError(f"--tag {text!r}: unknown judgement tag; use one of {known}")


def resolve_file(run: RunDir, file: Path) -> Path:
    """The diagnosis file (absolute, cwd-relative or run-relative), inside ``diagnoses/``."""
    candidates = [file] if file.is_absolute() else [Path.cwd() / file, run.root / file]
    found = next((p.resolve() for p in candidates if p.is_file()), None)
    if found is None:
        raise RunDirError(f"{file}: no such diagnosis file")
    if found.parent != run.layout.diagnoses.resolve():
        raise RunDirError(f"{found}: not a diagnosis of this run (expected a file in "
                          f"{run.layout.diagnoses})")
    return found


def _validate_radius(run: RunDir, doc: dict[str, Any], task_ids: list[str]) -> list[str]:
    in_split = set(run.splits.ids(doc["split"]))
    unknown = [t for t in task_ids if t not in in_split]
    if unknown:
        raise ConfigError(f"--blast-radius: {', '.join(unknown)} not in the "
                          f"{doc['split']} split")
    passing = set(doc.get("kept_good", []))
    failing = [t for t in task_ids if t not in passing]
    if failing:
        raise ConfigError(f"--blast-radius: {', '.join(failing)} do not currently pass "
                          "(a blast radius names passing tasks an edit could break)")
    return sorted(set(task_ids))


def annotate(run: RunDir, file: Path, signature: str, tag: str | None = None,
             blast_radius: list[str] | None = None) -> dict[str, Any]:
    """Record ``tag`` and/or ``blast_radius`` on the cluster ``signature``; returns it."""
    if tag is None and blast_radius is None:
        raise ConfigError("annotate: give --tag and/or --blast-radius")
    path = resolve_file(run, Path(file))
    with run.locked():  # read-modify-write of the diagnosis file holds the run lock
        doc = read_diagnosis(path).to_json()  # RunDirError naming the file if invalid
        clusters = doc["clusters"]
        cluster = next((c for c in clusters if c.get("signature") == signature), None)
        if cluster is None:
            known = "; ".join(c.get("signature", "?") for c in clusters[:10])
            raise ConfigError(f"--cluster {signature!r}: no such cluster in {path.name} "
                              f"(clusters: {known or 'none'})")
        if tag is not None:
            cluster["tag"] = str(parse_tag(tag))
        if blast_radius is not None:
            cluster["blast_radius"] = _validate_radius(run, doc, blast_radius)
        write_document(path, doc)
        run.record(EventKind.DIAGNOSIS_ANNOTATED, file=str(path), cluster=signature,
                   tag=cluster["tag"], blast_radius=cluster["blast_radius"])
        return cluster
