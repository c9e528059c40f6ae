"""A failure's feedback as cause units.

1. **Preamble**: the token run leading ``PREAMBLE_SHARE`` of the failures' feedback is stripped
   (whole lines if it spans lines), unless it is the whole feedback.
2. **Parts**: a segment opening with ``label:`` or ``[label]`` naming a score part, or, without
   score parts, a ``label:`` opening parts in two failures, starts a part; other text joins the
   part before it.
3. **Units**: each sentence of a part.
4. **Dropped**: units of a full-marks part or said in passing feedback; if none is left, the
   stripped feedback is one unit.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import NamedTuple

from capevolve.diagnose.classify import TOLERANCE
from capevolve.diagnose.jsontext import loads
from capevolve.diagnose.signature import even_digits, raw_tokens

_LABEL = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_ \-]{0,30}?)\s*:\s+")
_TAG = re.compile(r"^\s*(?:[-*+\u2022]\s+)?\[\s*([A-Za-z][A-Za-z0-9_ \-]{0,30}?)\s*\]\s*:?\s+")
_SEGMENTS = re.compile(r"\n+|;\s+(?=[A-Za-z][A-Za-z0-9_ \-]{0,30}?:\s)")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=\S)")
_NORMAL = re.compile(r'"[^"\n]*"|`[^`\n]*`|\d+(?:[.,]\d+)*|[^a-z_]+')
_DIGITS = re.compile(r"\d")


class Unit(NamedTuple):
    """A cause unit: its part and its sentence."""

    part: str | None
    text: str


def normalise(text: str) -> str:
    """A unit's text with case, numbers, quoted literals and punctuation evened out."""
    return _NORMAL.sub(" ", text.lower()).strip()


def score_parts(text: str | None) -> dict[str, float]:
    """A trial's numeric score parts (empty when absent or malformed)."""
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


Span = tuple[int, int]
PartSpans = tuple[str | None, tuple[Span, ...]]  # a part's label and the pieces it joins


def _stripped(text: str, start: int, end: int) -> Span:
    piece = text[start:end]
    left = len(piece) - len(piece.lstrip())
    return start + left, start + len(piece.rstrip()) if piece.strip() else start + left


def _segments(text: str) -> list[Span]:
    spans, start = [], 0
    for match in _SEGMENTS.finditer(text):
        spans.append((start, match.start()))
        start = match.end()
    spans.append((start, len(text)))
    return [(a, b) for a, b in spans if text[a:b].strip()]


def common_labels(feedbacks: list[str]) -> frozenset[str]:
    """Labels that open parts in at least two failures' feedback (lowercased)."""
    return common_labels_of(Counter(feedbacks))


def _opening_labels(feedback: str) -> set[str]:
    return {m.group(1).strip().lower() for a, b in _segments(feedback)
            if (m := _LABEL.match(feedback[a:b]))}


def common_labels_of(counts: Counter[str]) -> frozenset[str]:
    """:func:`common_labels` from the feedbacks' counts."""
    seen: Counter[str] = Counter()
    shared: dict[str, set[str]] = {}
    for feedback, n in counts.items():  # each distinct text read once
        template = even_digits(feedback)
        labels = shared.get(template)
        if labels is None:
            labels = shared[template] = _opening_labels(template)
        if any("0" in label for label in labels):
            labels = _opening_labels(feedback)
        for label in labels:
            seen[label] += n
    return frozenset(label for label, n in seen.items() if n >= 2)


def _part_spans(text: str, parts: dict[str, float], labels: frozenset[str]
                ) -> tuple[list[PartSpans], bool]:
    """Rule 2 as spans: each part's label and pieces, and whether every label read is digit-free."""
    out: list[tuple[str | None, list[Span]]] = []
    digit_free = True
    for a, b in _segments(text):
        match = _LABEL.match(text[a:b])  # sliced: ``^`` anchors at the segment's start
        if match is None and parts:  # a [tag] counts where it names a score part
            match = _TAG.match(text[a:b])
        label = match.group(1).strip().lower() if match else None
        if label is not None and _DIGITS.search(label):
            digit_free = False
        known = label is not None and (score_part_of(label, parts) is not None if parts
                                       else label in labels)
        if known and match:
            out.append((label, [_stripped(text, a + match.end(), b)]))
        elif out:
            out[-1][1].append(_stripped(text, a, b))
        else:
            out.append((None, [_stripped(text, a, b)]))
    return [(label, tuple(pieces)) for label, pieces in out], digit_free


def _joined(text: str, pieces: tuple[Span, ...]) -> str:
    return " ".join(text[a:b] for a, b in pieces)


def split_parts(text: str, parts: dict[str, float],
                labels: frozenset[str]) -> list[tuple[str | None, str]]:
    """``(label, text)`` of each part of a feedback (rule 2)."""
    return [(label, _joined(text, pieces)) for label, pieces in _part_spans(text, parts, labels)[0]]


UnitSpans = tuple[tuple[str | None, int, int, int], ...]  # (label, part, start, end) in a part


def _unit_spans(feedback: str, parts: dict[str, float], labels: frozenset[str],
                passing: frozenset[str]) -> tuple[list[PartSpans], UnitSpans | None, bool]:
    """Rules 2-4 as spans: the parts, the units (None when none is left) and the digit-free flag."""
    spans, digit_free = _part_spans(feedback, parts, labels)
    units = []
    for index, (label, pieces) in enumerate(spans):
        part = score_part_of(label, parts)
        if part is not None and parts[part] >= 1 - TOLERANCE:
            continue
        text = _joined(feedback, pieces)
        start = 0
        for match in [*_SENTENCE.finditer(text), None]:
            end = len(text) if match is None else match.start()
            a, b = _stripped(text, start, end)
            sentence = text[a:b]
            if sentence and raw_tokens(sentence) and normalise(sentence) not in passing:
                units.append((label, index, a, b))
            if match is not None:
                start = match.end()
    return spans, tuple(units) if units else None, digit_free


def _materialise(feedback: str, spans: list[PartSpans], units: UnitSpans | None) -> list[Unit]:
    if units is None:
        return [Unit(None, feedback.strip())] if feedback.strip() else []
    texts = [_joined(feedback, pieces) for _, pieces in spans]
    return [Unit(label, texts[index][a:b]) for label, index, a, b in units]


def units_of(feedback: str, parts: dict[str, float], labels: frozenset[str],
             passing: frozenset[str]) -> list[Unit]:
    """The cause units of one (preamble-stripped) feedback (rules 2-4)."""
    spans, units, _ = _unit_spans(feedback, parts, labels, passing)
    return _materialise(feedback, spans, units)


class UnitCache:
    """:func:`units_of`, cached per digit-evened feedback unless a label holds a digit."""

    def __init__(self, parts: dict[str, float], labels: frozenset[str],
                 passing: frozenset[str]) -> None:
        self.parts, self.labels, self.passing = parts, labels, passing
        self._known: dict[str, tuple[list[PartSpans], UnitSpans | None, bool]] = {}

    def units(self, feedback: str) -> list[Unit]:
        template = even_digits(feedback)
        found = self._known.get(template)
        if found is None:
            found = self._known[template] = _unit_spans(template, self.parts, self.labels,
                                                        self.passing)
        if not found[2]:
            return units_of(feedback, self.parts, self.labels, self.passing)
        return _materialise(feedback, found[0], found[1])


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
