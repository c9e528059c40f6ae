"""The diagnosis document's JSON text, with its reflective entries encoded from their
fields: exactly ``jsonfiles.dumps(doc, indent=None)`` (sorted keys, ``", "`` / ``": "``
separators, ``ensure_ascii=False``, ``allow_nan=False``), faster.

An entry is a dict of a fixed set of keys (``reflective.entry``) whose values repeat across
entries: a task's input, a final message, the trajectory path, kinds, patterns, cluster
names. Each distinct string is escaped once (json's own C ``encode_basestring``), and an
entry's text is its pre-sorted keys joined with its values' texts. A value of any other
type than the encoder expects (and any entry with other keys) goes through ``json.dumps``
itself, so a value ``json.dumps`` refuses (a NaN reward) raises the same ``ValueError``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from json.encoder import encode_basestring
from typing import Any

_ENTRY_KEYS = ("Feedback", "Generated Outputs", "Inputs", "Trajectory", "causes",
               "claimed_verbs", "claimed_without_matching_action", "cluster",
               "gold_in_feedback", "kind", "narrated_without_action", "pattern", "reward",
               "secondary_cluster", "task_id", "task_mean", "trial")
_KEY_SET = frozenset(_ENTRY_KEYS)
_CAUSE_KEYS = frozenset(("cluster", "part", "text"))
_HEADS = [encode_basestring(k) + ": " for k in _ENTRY_KEYS]


def dumps(value: Any) -> str:
    """``jsonfiles.dumps(value, indent=None)``: the canonical text of any value."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=False)


class _Strings:
    """JSON texts of scalars, each distinct string escaped once."""

    def __init__(self) -> None:
        self.known: dict[str, str] = {}

    def text(self, value: Any) -> str:
        if type(value) is str:
            found = self.known.get(value)
            if found is None:
                found = self.known[value] = encode_basestring(value)
            return found
        if value is None:
            return "null"
        if value is True:
            return "true"
        if value is False:
            return "false"
        if type(value) is int:
            return int.__repr__(value)
        if type(value) is float and math.isfinite(value):
            return float.__repr__(value)
        return dumps(value)

    def strings(self, values: Any) -> str:
        if type(values) is not list:
            return dumps(values)
        return "[" + ", ".join(map(self.text, values)) + "]"

    def causes(self, values: Any) -> str:
        if type(values) is not list:
            return dumps(values)
        text = self.text
        out = []
        for cause in values:
            if type(cause) is dict and cause.keys() == _CAUSE_KEYS:
                out.append(f'{{"cluster": {text(cause["cluster"])}, '
                           f'"part": {text(cause["part"])}, "text": {text(cause["text"])}}}')
            else:
                out.append(dumps(cause))
        return "[" + ", ".join(out) + "]"


def entries_json(entries: list[Any]) -> str:
    """The JSON text of a list of reflective entries (module docstring)."""
    strings = _Strings()
    text = strings.text
    encoders: list[Callable[[Any], str]] = [text] * len(_ENTRY_KEYS)
    encoders[_ENTRY_KEYS.index("causes")] = strings.causes
    encoders[_ENTRY_KEYS.index("claimed_verbs")] = strings.strings
    pairs = list(zip(_HEADS, _ENTRY_KEYS, encoders, strict=True))
    out = []
    for entry in entries:
        if type(entry) is dict and entry.keys() == _KEY_SET:
            out.append("{" + ", ".join([head + encode(entry[key])
                                        for head, key, encode in pairs]) + "}")
        else:
            out.append(dumps(entry))
    return "[" + ", ".join(out) + "]"


def document_json(doc: dict[str, Any], entries_key: str = "reflective_dataset") -> str:
    """``dumps(doc)`` with ``doc[entries_key]`` (a list of entries) encoded by
    :func:`entries_json` and the rest by ``json.dumps``; keys must be strings."""
    entries = doc[entries_key]
    if not isinstance(entries, list) or not all(type(k) is str for k in doc):
        return dumps(doc)
    before = dumps({k: v for k, v in doc.items() if k < entries_key})
    after = dumps({k: v for k, v in doc.items() if k > entries_key})
    middle = f"{encode_basestring(entries_key)}: {entries_json(entries)}"
    return "{" + ", ".join(p for p in (before[1:-1], middle, after[1:-1]) if p) + "}"
