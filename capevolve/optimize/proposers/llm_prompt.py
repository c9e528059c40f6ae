"""What the ``llm`` proposer shows the model and how it reads the answer."""

from __future__ import annotations

import fnmatch
import json
import random
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from capevolve._policy.protect import protected_patterns
from capevolve.records._optimize import IterationRecord

OPEN, CLOSE = "<improved_file>", "</improved_file>"
SHOWN_OPEN, SHOWN_CLOSE = "<current_file>", "</current_file>"  # never the answer's tags
EXAMPLE_FIELDS = ("Inputs", "Generated Outputs", "Feedback")
FIELD_CHARS = 1500
DIAGNOSIS_SPLITS = frozenset({"train", "val"})

SYSTEM = (
    "You improve one file of an AI agent's capability (its instructions, policy or tool code)."
    " You are shown the file, examples of tasks the agent failed with the scorer's feedback,"
    " and earlier attempts that were rejected. Write a general improvement: never mention a"
    " task id, never copy an expected answer or gold value. Answer with the complete new"
    f" text of the file between a line {OPEN} and a line {CLOSE}, and nothing else between"
    " them. Where a JSON answer is required, give that complete text as the field"
    " improved_file instead.")
ANSWER_FORMAT = {"type": "json_schema", "json_schema": {
    "name": "improved_file", "strict": True, "schema": {
        "type": "object", "additionalProperties": False, "required": ["improved_file"],
        "properties": {"improved_file": {"type": "string", "minLength": 1}}}}}
"""Sent as ``response_format`` where the endpoint takes it."""


def inside(root: Path, rel: str) -> Path | None:
    """``root / rel`` when it stays inside ``root`` with no symlink on the way, else None: an
    untrusted link could reach gold data or leave the candidate."""
    path = root / rel
    parts = Path(rel).parts
    if Path(rel).is_absolute() or ".." in parts:
        return None
    probe = root
    for part in parts:
        probe = probe / part
        if probe.is_symlink():
            return None
    return path


def component_files(parent_dir: Path, files: Sequence[str], protected: Sequence[str],
                    max_chars: int) -> dict[str, str]:
    """{relative path: text} of the parent's unprotected UTF-8 text files of at most
    ``max_chars``."""
    patterns = protected_patterns(protected)
    chosen: dict[str, str] = {}
    for rel in sorted(files):
        if any(fnmatch.fnmatch(rel, p) for p in patterns):
            continue
        path = inside(parent_dir, rel)
        if path is None or not path.is_file():
            continue
        try:
            data = path.read_bytes()
            if b"\0" in data or len(data) > 4 * max_chars:
                continue
            text = data.decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if len(text) <= max_chars:
            chosen[rel] = text
    return chosen


def target_cluster(diagnosis: Mapping[str, Any] | None,
                   focus: str | None) -> Mapping[str, Any] | None:
    """The focused cluster, else the diagnosis' top one (None without clusters)."""
    clusters = list((diagnosis or {}).get("clusters") or [])
    if focus:
        for cluster in clusters:
            if cluster.get("signature") == focus:
                return cluster
    return clusters[0] if clusters else None


def choose_file(texts: Mapping[str, str], iteration: int, by_cluster: bool,
                cluster: Mapping[str, Any] | None) -> str:
    """The file to rewrite: the one the cluster's words hit most (``by_cluster``), else
    round-robin."""
    names = sorted(texts)
    if by_cluster and cluster is not None:
        words = {str(t).lower() for t in cluster.get("tools") or []} | set(
            re.findall(r"[a-z_][a-z0-9_]{3,}", str(cluster.get("signature", "")).lower()))
        hits = {n: sum(texts[n].lower().count(w) for w in words) for n in names}
        best = max(names, key=lambda n: (hits[n], -names.index(n)))
        if hits[best] > 0:
            return best
    return names[(iteration - 1) % len(names)]


def examples(diagnosis: Mapping[str, Any] | None, cluster: Mapping[str, Any] | None,
             size: int, seed: int) -> list[dict[str, str]]:
    """A seeded sample of a train or val diagnosis' reflective entries, trimmed for a model."""
    if not diagnosis or str(diagnosis.get("split")) not in DIAGNOSIS_SPLITS:
        return []
    entries = list(diagnosis.get("reflective_dataset") or [])
    if cluster is not None:
        inside = [e for e in entries if e.get("cluster") == cluster.get("signature")]
        entries = inside or entries
    picked = random.Random(seed).sample(entries, min(size, len(entries)))
    return [{k: _text(e.get(k))[:FIELD_CHARS] for k in EXAMPLE_FIELDS} for e in picked]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def rejected_attempts(ledger: Sequence[IterationRecord], path: str) -> list[str]:
    """One line per earlier iteration whose edit of ``path`` was not accepted."""
    lines = []
    for record in ledger:
        touched = (*record.diff.modified, *record.diff.added)
        if path in touched and str(record.outcome) != "accept":
            why = "; ".join(record.reasons) or str(record.outcome)
            lines.append(f"iteration {record.iteration}: {record.outcome} ({why})")
    return lines


def build_messages(path: str, text: str, batch: Sequence[Mapping[str, str]],
                   cluster: Mapping[str, Any] | None, rejected: Sequence[str],
                   instructions: str) -> list[dict[str, str]]:
    """The chat messages of one proposal."""
    parts = [f"## The file `{path}`\n\n{SHOWN_OPEN}\n{text}\n{SHOWN_CLOSE}"]
    if cluster is not None:
        parts.append(f"## The failure pattern to fix\n\n{cluster.get('signature')} "
                     f"(tasks affected: {len(cluster.get('tasks') or [])})")
    if batch:
        shown = "\n\n".join(
            f"### Example {i}\n" + "\n".join(f"**{k}**: {e[k]}" for k in EXAMPLE_FIELDS)
            for i, e in enumerate(batch, 1))
        parts.append(f"## Failed examples\n\n{shown}")
    if rejected:
        parts.append("## Earlier edits of this file that were not accepted\n\n"
                     + "\n".join(f"- {line}" for line in rejected))
    if instructions:
        parts.append(f"## Rules of this optimization\n\n{instructions[:4000]}")
    parts.append(f"Now write the improved `{path}` between {OPEN} and {CLOSE}.")
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": "\n\n".join(parts)}]


_OPEN_LINE = re.compile(r"^[ \t]*<improved_file>[ \t]*$", re.M)
_CLOSE_LINE = re.compile(r"^[ \t]*</improved_file>[ \t]*$", re.M)


def parse_answer(answer: str | None) -> str | None:
    """The text of exactly one ``<improved_file>`` block whose tags stand on lines of their
    own (an inline echo is no block); when the tags do not occur once each, of a JSON
    ``{"improved_file": text}`` answer; else None."""
    if not isinstance(answer, str):
        return None
    if answer.count(OPEN) != 1 or answer.count(CLOSE) != 1:
        return _structured(answer)
    opens, closes = list(_OPEN_LINE.finditer(answer)), list(_CLOSE_LINE.finditer(answer))
    if len(opens) != 1 or len(closes) != 1 or closes[0].start() < opens[0].end():
        return None
    body = answer[opens[0].end():closes[0].start()]
    body = body[1:] if body.startswith("\n") else body
    return body if body.strip() else None


def _structured(answer: str) -> str | None:
    try:
        data = json.loads(answer)
    except ValueError:
        return None
    if not isinstance(data, dict) or set(data) != {"improved_file"}:
        return None
    text = data["improved_file"]
    return text if isinstance(text, str) and text.strip() else None
