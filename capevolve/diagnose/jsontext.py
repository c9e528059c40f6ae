"""Parsing the stored JSON columns: the same values as :func:`json.loads`, faster."""

from __future__ import annotations

import json
from typing import Any

from pydantic_core import from_json

SURROGATES = "backslashreplace"
"""The encoding error handler of diagnose's JSON text: a lone surrogate becomes its ``\\udXXXX``
escape."""


def loads(text: str) -> Any:
    """``json.loads(text)``: the same value, or the same ``ValueError``."""
    try:
        return from_json(text, cache_strings="keys")  # object keys repeat; values rarely
    except (ValueError, TypeError):  # TypeError: a str holding a lone surrogate, which
        pass  # is not UTF-8 (json.loads reads it; a stored column never holds one)
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("JSON nested deeper than the parser can read") from None


def load_or_none(text: str | None) -> Any:
    """A JSON column's value; None when empty, missing or malformed."""
    if not text:
        return None
    try:
        return loads(text)
    except ValueError:
        return None


def is_json(text: str) -> bool:
    """Whether ``json.loads`` accepts ``text``."""
    try:
        loads(text)
    except ValueError:
        return False
    return True
