"""What a candidate must never carry: task ids, gold values, spans of task inputs.

Matching is on case-folded word tokens: ``Gold 3`` carries ``gold-3``; ``142`` not ``42``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

TOKEN = re.compile(r"\w+")
MAX_FINDINGS = 20
"""Leaks reported per candidate."""


@dataclass(frozen=True)
class Leak:
    """Where a candidate carries what it must not (never the value)."""

    file: str
    line: int
    kind: str
    """Task id, gold value (val or test) or input span."""

    def text(self) -> str:
        return f"{self.file}:{self.line}: {self.kind}"


def tokens(text: str) -> tuple[str, ...]:
    """Case-folded word tokens."""
    return tuple(TOKEN.findall(text.casefold()))


def leaves(value: Any) -> Iterable[str]:
    """Every string and number inside ``value``."""
    if isinstance(value, Mapping):
        for item in value.values():
            yield from leaves(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from leaves(item)
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, (str, int, float)):
        yield str(value)


def squeeze(text: str) -> str:
    """Case-folded, whitespace runs as one space."""
    return " ".join(text.casefold().split())


class Needles:
    """What to look for (values under ``min_chars`` or in ``ignore`` skipped)."""

    def __init__(self, min_chars: int, ignore: Iterable[str]) -> None:
        self.min_chars = min_chars
        self.ignore = {tokens(v) for v in ignore}
        self.by_length: dict[int, dict[tuple[str, ...], str]] = {}

    def add(self, text: str, kind: str) -> None:
        found = tokens(text)
        if not found or len("".join(found)) < self.min_chars or found in self.ignore:
            return
        self.by_length.setdefault(len(found), {}).setdefault(found, kind)

    def hits(self, line: str) -> list[str]:
        words = tokens(line)
        kinds: list[str] = []
        for size, table in self.by_length.items():
            for i in range(len(words) - size + 1):
                kind = table.get(words[i:i + size])
                if kind is not None:
                    kinds.append(kind)
        return kinds


def scan(files: Mapping[str, bytes], needles: Needles, inputs: Iterable[str],
         span_chars: int) -> list[Leak]:
    """Leaks in ``files``, one per (file, line, kind), the first MAX_FINDINGS."""
    texts: dict[str, list[str]] = {}
    for path, data in sorted(files.items()):
        try:
            texts[path] = data.decode("utf-8").splitlines()
        except UnicodeDecodeError:
            continue
    found: dict[tuple[str, int, str], None] = {}
    for path, lines in texts.items():
        for number, line in enumerate(lines, 1):
            for kind in needles.hits(line):
                found[(path, number, kind)] = None
    if span_chars > 0:
        for path, number in _spans(texts, inputs, span_chars):
            found[(path, number, "span of a task input")] = None
    leaks = [Leak(p, n, k) for p, n, k in sorted(found)]
    return leaks[:MAX_FINDINGS]


def _spans(texts: Mapping[str, list[str]], inputs: Iterable[str],
           span_chars: int) -> list[tuple[str, int]]:
    """Per file, the first line holding a window of an input; windows start every half window,
    so any copied span of 1.5 windows is found."""
    step = max(1, span_chars // 2)
    windows: set[str] = set()
    for text in inputs:
        flat = squeeze(text)
        for start in range(0, len(flat) - span_chars + 1, step):
            windows.add(flat[start:start + span_chars])
    if not windows:
        return []
    hits: list[tuple[str, int]] = []
    for path, lines in texts.items():
        flat_lines = [squeeze(line) for line in lines]
        whole = " ".join(flat_lines)
        ends, at = [], 0
        for flat in flat_lines:
            at += len(flat) + 1
            ends.append(at)
        for start in range(0, max(0, len(whole) - span_chars + 1)):
            if whole[start:start + span_chars] in windows:
                line = next(i for i, end in enumerate(ends, 1) if start < end)
                hits.append((path, line))
                break  # one per file: the span's first line
    return hits
