"""Paths a candidate may not add, edit or remove: score data, splits, config, ``protected_paths``.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping

from capevolve.config import SCORE_DATA_PATTERNS

DEFAULT_PROTECTED = (*SCORE_DATA_PATTERNS, "splits.json", "*/splits.json", "capevolve.yaml")


def protected_patterns(extra: Iterable[str]) -> list[str]:
    """The defaults plus ``extra``."""
    return [*DEFAULT_PROTECTED, *extra]


def protected_changes(seed_digests: Mapping[str, str], candidate_digests: Mapping[str, str],
                      patterns: Iterable[str]) -> list[str]:
    """Sorted protected paths that differ between seed and candidate."""
    patterns = list(patterns)
    return [rel for rel in sorted(set(seed_digests) | set(candidate_digests))
            if any(fnmatch.fnmatch(rel, pattern) for pattern in patterns)
            and seed_digests.get(rel) != candidate_digests.get(rel)]


def protected_collisions(rels: Iterable[str], patterns: Iterable[str]) -> list[tuple[str, str]]:
    """Sorted ``(path, pattern)`` of protected seed files."""
    patterns = list(patterns)
    return [(rel, next(p for p in patterns if fnmatch.fnmatch(rel, p))) for rel in sorted(rels)
            if any(fnmatch.fnmatch(rel, p) for p in patterns)]
