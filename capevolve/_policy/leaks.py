"""What a candidate must never carry: task ids, gold values, long spans of task inputs.

Pure: the caller gives the candidate's files and what to look for. Text is normalised
(case-folded, split into word tokens ``\\w+``) on both sides, so ``Gold-3``, ``'gold 3'`` and
``GOLD_3`` in a prompt all carry the value ``gold-3`` (but ``142`` does not carry ``42``).
A leak is a task id, a val or test gold value (shorter than ``min_chars`` or in ``ignore``:
too common to count), or ``span_chars`` consecutive characters of a task input; a hit names
file, line and kind, never the value.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

TOKEN = re.compile(r"\w+")
MAX_FINDINGS = 20
"""Findings reported per candidate (the first ones, by file and line)."""


@dataclass(frozen=True)
class Leak:
    """One place a candidate carries what it must not."""

    file: str
    line: int
    kind: str
    """``task id``, ``gold value of a val task``, ``gold value of a test task`` or
    ``span of a task input``."""

    def text(self) -> str:
        return f"{self.file}:{self.line}: {self.kind}"


def tokens(text: str) -> tuple[str, ...]:
    """The word tokens of ``text``, case-folded."""
    return tuple(TOKEN.findall(text.casefold()))


def leaves(value: Any) -> Iterable[str]:
    """Every string and number inside ``value`` (a target: text, number, list, mapping)."""
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
    """``text`` case-folded with every run of whitespace one space (for input spans)."""
    return " ".join(text.casefold().split())


class Needles:
    """What to look for, indexed by token-sequence length."""

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
    """Every leak in ``files`` (path -> bytes; binary files are skipped), at most
    :data:`MAX_FINDINGS`, one per (file, line, kind)."""
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
    """(file, line) where a window of ``span_chars`` characters of an input appears: the
    inputs' windows are taken every half window, so a copied span of 1.5 windows or more
    is always found."""
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
