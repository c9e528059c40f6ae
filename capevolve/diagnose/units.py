"""A failure's feedback as cause units: the preamble stripped, one unit per failing part.

A scorer often writes several findings into one feedback ("database: ...\\nmessages: ...",
or score parts ``{"db": 0, "messages": 1}``); each is a separate cause. The rules:

1. **Preamble**: the leading token run shared by a large majority (``signature.PREAMBLE_SHARE``) of
   the failures' feedback is stripped from every feedback that has it (one failure without
   it no longer turns stripping off). It is not stripped where it is the whole feedback;
   when the shared run reaches past a line break, only the whole lines are stripped (so a
   part label that every failure opens its next line with stays).
2. **Parts**: a line, or a ``;``-separated segment, that opens with a ``label:`` starts a
   part. A label counts only when it names a score part of that trial (equal, a prefix,
   or its letters in order: ``db`` names ``database``) or, without score parts, when it is
   one of the labels that open parts in at least two failures. Text before the first label
   and lines without one belong to the part before (``None`` when there is none).
3. **Units**: a part's text is split into sentences; each sentence is a unit.
4. **Dropped**: a unit whose part maps to a score part that scored full marks, and a unit
   whose normalised text (lowercase, digits and quoted literals removed) also occurs in a
   passing trial's feedback (a pass statement such as "the end state matches the
   reference"). When nothing is left the stripped feedback is one unit of part ``None``.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from capevolve.diagnose.jsontext import loads
from capevolve.diagnose.signature import preamble_cuts, raw_tokens

__all__ = ["Unit", "preamble_cuts", "units_of"]

TOLERANCE = 1e-9
_LABEL = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_ \-]{0,30}?)\s*:\s+")
_SEGMENTS = re.compile(r"\n+|;\s+(?=[A-Za-z][A-Za-z0-9_ \-]{0,30}?:\s)")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=\S)")
_NORMAL = re.compile(r'"[^"\n]*"|`[^`\n]*`|\d+(?:[.,]\d+)*|[^a-z_]+')


@dataclass(frozen=True)
class Unit:
    """One cause unit of a failure: the part it belongs to and its sentence."""

    part: str | None
    text: str


def normalise(text: str) -> str:
    """A unit's text with case, numbers, quoted literals and punctuation evened out."""
    return _NORMAL.sub(" ", text.lower()).strip()


def score_parts(text: str | None) -> dict[str, float]:
    """The numeric score parts of a trial (empty when absent or malformed)."""
    try:
        parts = loads(text) if text else None
    except ValueError:
        return {}
    if not isinstance(parts, dict):
        return {}
    return {str(k): float(v) for k, v in parts.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool)}


def _names(label: str, part: str) -> bool:
    a, b = label.lower().replace(" ", "_"), part.lower()
    if a == b or a.startswith(b) or b.startswith(a):
        return True
    letters = iter(a)
    return len(b) >= 2 and b[0] == a[0] and all(ch in letters for ch in b)


def score_part_of(label: str | None, parts: dict[str, float]) -> str | None:
    """The score part a feedback label names, if any."""
    if label is None:
        return None
    return next((p for p in sorted(parts) if _names(label, p)), None)


def _segments(text: str) -> list[str]:
    return [s for s in _SEGMENTS.split(text) if s.strip()]


def common_labels(feedbacks: list[str]) -> frozenset[str]:
    """Labels that open parts in at least two failures' feedback (lowercased)."""
    seen: Counter[str] = Counter()
    for feedback, n in Counter(feedbacks).items():  # each distinct text read once
        for label in {m.group(1).strip().lower() for s in _segments(feedback)
                      if (m := _LABEL.match(s))}:
            seen[label] += n
    return frozenset(label for label, n in seen.items() if n >= 2)


def split_parts(text: str, parts: dict[str, float],
                labels: frozenset[str]) -> list[tuple[str | None, str]]:
    """``(label, text)`` of each part of a feedback (rule 2 of the module docstring)."""
    out: list[tuple[str | None, str]] = []
    for segment in _segments(text):
        match = _LABEL.match(segment)
        label = match.group(1).strip().lower() if match else None
        known = label is not None and (score_part_of(label, parts) is not None if parts
                                       else label in labels)
        if known and match:
            out.append((label, segment[match.end():].strip()))
        elif out:
            out[-1] = (out[-1][0], f"{out[-1][1]} {segment.strip()}")
        else:
            out.append((None, segment.strip()))
    return out


def units_of(feedback: str, parts: dict[str, float], labels: frozenset[str],
             passing: frozenset[str]) -> list[Unit]:
    """The cause units of one (preamble-stripped) feedback (rules 2-4)."""
    units = []
    for label, text in split_parts(feedback, parts, labels):
        part = score_part_of(label, parts)
        if part is not None and parts[part] >= 1 - TOLERANCE:
            continue
        for sentence in _SENTENCE.split(text):
            sentence = sentence.strip()
            if sentence and raw_tokens(sentence) and normalise(sentence) not in passing:
                units.append(Unit(label, sentence))
    if not units and feedback.strip():
        units.append(Unit(None, feedback.strip()))
    return units


def passing_statements(feedbacks: list[str], labels: frozenset[str]) -> frozenset[str]:
    """Normalised sentences of passing trials' feedback (rule 4's pass statements)."""
    seen = set()
    for feedback in feedbacks:
        for _, text in split_parts(feedback, {}, labels):
            for sentence in _SENTENCE.split(text):
                if sentence.strip():
                    seen.add(normalise(sentence))
    seen.discard("")
    return frozenset(seen)
